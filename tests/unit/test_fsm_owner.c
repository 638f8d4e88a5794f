/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_owner — session ownership, SESSION_REVOKE and the request digest:
 * owners recorded at SESSION_OPEN, another user's commands refused at apply (also when they
 * were built before the session existed), the admin override, revoke as an expiry, a replayed
 * seq with a different command refused, version-2 headers, snapshot version 4 and its
 * canonical rule, and version-1 (unchecked) entries behaving as before.
 *
 * The fixture and helpers are in fsm_fixture.h; "changes nothing" is asserted by comparing
 * the snapshot bytes before and after.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

/* `c` as the checked command of `user` (admin or not). */
static struct fsm_reply as_user(struct fsm *f, struct fsm_cmd c, const char *user, bool admin)
{
    c.checked = true;
    c.user = S(user);
    c.admin = admin;
    return apply_cmd(f, &c);
}

static uint64_t open_as(struct fsm *f, const char *user, uint64_t delay)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = 1000, .lockdelay_ms = delay}};
    return token_of(as_user(f, c, user, false));
}

static struct fsm_cmd lock_cmd(const char *name, uint64_t sid, uint64_t wait)
{
    return (struct fsm_cmd){.op = FSM_OP_LOCK,
                            .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
}

static struct fsm_cmd unlock_cmd(const char *name, uint64_t sid)
{
    return (struct fsm_cmd){.op = FSM_OP_UNLOCK, .unlock = {.name = S(name), .sid = sid}};
}

static struct fsm_cmd end_cmd(uint8_t op, uint64_t sid)
{
    struct fsm_cmd c = {.op = op};
    c.session_close.sid = sid; /* CLOSE, EXPIRE and REVOKE share the payload */
    return c;
}

/* Refused: another user's session is answered as a missing one (NOSESSION, the same text);
   an admin acting as another user's session gets NOPERM (it may list sessions anyway). */
static int is_noperm(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_ERR &&
           (strncmp(r.err, "NOSESSION ", 10) == 0 || strncmp(r.err, "NOPERM ", 7) == 0);
}

static int owner_is(const struct fsm *f, uint64_t sid, const char *user)
{
    struct fsm_session_view v;
    return fsm_session_info(f, sid, &v) && v.owner.len == strlen(user) &&
           memcmp(v.owner.p, user, v.owner.len) == 0;
}

TEST_F(fsm_fx, session_open_records_the_acting_user_as_owner)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0);
    uint64_t n = open_session(f, 1000, 0); /* unchecked: no owner */
    CHECK(a && n);
    CHECK(owner_is(f, a, "alice"));
    CHECK(owner_is(f, n, ""));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, another_users_commands_are_refused_and_change_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0);
    CHECK(token_of(as_user(f, lock_cmd("L", a, 0), "alice", false)));
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    struct fsm_cmd put = {.op = FSM_OP_PUT,
                          .put = {.key = S("k"), .value = S("v"), .lease_sid = a}};
    struct fsm_cmd req = {.op = FSM_OP_PUT, .req_sid = a, .req_seq = 9, .put = {.key = S("j")}};
    struct fsm_cmd ck = {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = a}};
    struct fsm_cmd cw = {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = S("L"), .sid = a}};
    CHECK(is_noperm(as_user(f, lock_cmd("M", a, 0), "bob", false)));
    CHECK(is_noperm(as_user(f, unlock_cmd("L", a), "bob", false)));
    CHECK(is_noperm(as_user(f, end_cmd(FSM_OP_SESSION_CLOSE, a), "bob", false)));
    CHECK(is_noperm(as_user(f, end_cmd(FSM_OP_SESSION_REVOKE, a), "bob", false)));
    CHECK(is_noperm(as_user(f, put, "bob", false)));
    CHECK(is_noperm(as_user(f, req, "bob", false)));
    CHECK(is_noperm(as_user(f, ck, "bob", false)));
    CHECK(is_noperm(as_user(f, cw, "bob", false)));
    /* the empty user (a server without --acl-file) owns nothing of alice's either */
    CHECK(is_noperm(as_user(f, unlock_cmd("L", a), "", false)));
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before) && EV.n == 0);
    /* word for word the answer for a session that does not exist */
    {
        char missing[FSM_ERR_LEN];
        snprintf(missing, sizeof missing,
                 "NOSESSION session %llu does not exist (closed or expired)",
                 (unsigned long long)a);
        CHECK(strcmp(as_user(f, unlock_cmd("L", a), "bob", false).err, missing) == 0);
    }
    /* and the seq bob tried to spend is still alice's to use */
    req.put.lease_sid = 0;
    CHECK(token_of(as_user(f, req, "alice", false)));
    CHECK(invariants_hold(f));
}

/* Session ids are revisions: bob can guess the next one and build a LOCK naming it before
 * alice's SESSION_OPEN is applied. Whichever order the log has, bob gets nothing. */
TEST_F(fsm_fx, a_command_built_before_the_victims_session_existed_is_refused_at_apply)
{
    struct fsm *f = fx->f;
    uint64_t guess = fsm_revision(f) + 1;
    struct fsm_reply early = as_user(f, lock_cmd("L", guess, 0), "bob", false);
    CHECK_STR_PREFIX(early.err, "NOSESSION"); /* ordered before: no such session yet */
    uint64_t a = open_as(f, "alice", 0);
    CHECK_EQ_U64(a, guess);
    snapshot_into(f, &fx->before);
    CHECK(is_noperm(as_user(f, lock_cmd("L", guess, 0), "bob", false))); /* ordered after */
    struct fsm_cmd req = lock_cmd("L", guess, 0);
    req.req_sid = guess;
    req.req_seq = INT64_MAX;
    CHECK(is_noperm(as_user(f, req, "bob", false)));
    CHECK(snapshot_equals(f, &fx->before));
    CHECK_EQ_U64(holder_of(f, "L"), 0);
}

TEST_F(fsm_fx, admin_may_close_revoke_and_unlock_but_not_act_as_the_session)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0), b = open_as(f, "alice", 0);
    CHECK(token_of(as_user(f, lock_cmd("L", a, 0), "alice", false)));
    snapshot_into(f, &fx->before);
    CHECK(is_noperm(as_user(f, lock_cmd("M", a, 0), "root", true)));
    struct fsm_cmd req = unlock_cmd("L", a);
    req.req_sid = a;
    req.req_seq = 1;
    CHECK(is_noperm(as_user(f, req, "root", true))); /* a seq is the owner's alone */
    struct fsm_cmd put = {.op = FSM_OP_PUT, .put = {.key = S("k"), .lease_sid = a}};
    CHECK(is_noperm(as_user(f, put, "root", true)));
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(as_user(f, unlock_cmd("L", a), "root", true).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(as_user(f, end_cmd(FSM_OP_SESSION_CLOSE, a), "root", true).kind == FSM_REPLY_OK);
    CHECK(as_user(f, end_cmd(FSM_OP_SESSION_REVOKE, b), "root", true).kind == FSM_REPLY_OK);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.sessions, 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, revoke_ends_the_session_as_an_expiry_with_lock_delay_and_says_revoked)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 500), w = open_as(f, "carol", 0);
    uint64_t t = token_of(as_user(f, lock_cmd("L", a, 0), "alice", false));
    CHECK(t);
    CHECK(as_user(f, lock_cmd("L", w, 5000), "carol", false).kind == FSM_REPLY_QUEUED);
    struct fsm_cmd put = {.op = FSM_OP_PUT, .put = {.key = S("k"), .lease_sid = a}};
    CHECK(token_of(as_user(f, put, "alice", false)));
    CHECK(as_user(f, end_cmd(FSM_OP_SESSION_REVOKE, a), "root", true).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.lockdelay_ms == 500);
    CHECK_EQ_U64(v.holder_sid, 0); /* the waiter waits out the lock-delay */
    int ended = 0, released = 0, delayed = 0, key = 0;
    for (size_t i = 0; i < EV.n; i++) {
        const struct fsm_event *e = &EV.ev[i];
        ended += e->type == FSM_EV_SESSION_ENDED && e->sid == a && e->expired && e->revoked;
        released += e->type == FSM_EV_RELEASED && e->token == t && e->expired && e->revoked;
        delayed += e->type == FSM_EV_LOCKDELAY_STARTED && e->ms == 500;
        key += e->type == FSM_EV_KEY_DELETED && e->sid == a && e->expired && e->revoked;
    }
    CHECK(ended == 1 && released == 1 && delayed == 1 && key == 1);
    /* an expiry is not a revoke */
    uint64_t b = open_as(f, "alice", 0);
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK);
    CHECK(EV.n && EV.ev[EV.n - 1].expired && !EV.ev[EV.n - 1].revoked);
    CHECK_STR_PREFIX(as_user(f, end_cmd(FSM_OP_SESSION_REVOKE, a), "root", true).err, "NOSESSION");
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_replayed_seq_with_a_different_command_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0);
    struct fsm_cmd p = {
        .op = FSM_OP_PUT, .req_sid = a, .req_seq = 5, .put = {.key = S("k"), .value = S("v")}};
    struct fsm_reply r1 = as_user(f, p, "alice", false);
    CHECK(token_of(r1));
    snapshot_into(f, &fx->before);
    struct fsm_cmd q = p;
    q.put.value = S("other");
    struct fsm_reply r2 = as_user(f, q, "alice", false);
    CHECK(r2.kind == FSM_REPLY_ERR);
    char want[128];
    snprintf(want, sizeof want, "ERR request seq 5 of session %llu was used by a different command",
             (unsigned long long)a);
    CHECK(strcmp(r2.err, want) == 0);
    struct fsm_cmd d = {.op = FSM_OP_DEL, .req_sid = a, .req_seq = 5, .del = {.key = S("k")}};
    CHECK(as_user(f, d, "alice", false).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->before) && EV.n == 0);
    struct fsm_reply r3 = as_user(f, p, "alice", false); /* the same command: the cached reply */
    CHECK(r3.kind == FSM_REPLY_INT && r3.value == r1.value);
}

TEST_F(fsm_fx, a_lock_resent_with_the_wait_that_is_left_is_the_same_request)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0), b = open_as(f, "bob", 0);
    CHECK(token_of(as_user(f, lock_cmd("L", b, 0), "bob", false)));
    struct fsm_cmd l = lock_cmd("L", a, 5000);
    l.req_sid = a;
    l.req_seq = 1;
    CHECK(as_user(f, l, "alice", false).kind == FSM_REPLY_QUEUED);
    l.lock.wait_ms = 3100; /* the client's resend after a fail-over */
    CHECK(as_user(f, l, "alice", false).kind == FSM_REPLY_QUEUED);
    l.lock.name = S("M"); /* another lock is another command */
    CHECK_STR_PREFIX(as_user(f, l, "alice", false).err, "ERR request seq 1");
}

/* Version-1 entries (the leader's own, and every entry from before ownership) are unchecked:
 * no owner check, no digest, so an old log replays exactly as it did. */
TEST_F(fsm_fx, unchecked_entries_behave_as_before)
{
    struct fsm *f = fx->f;
    uint64_t a = open_as(f, "alice", 0);
    CHECK(token_of(as_user(f, lock_cmd("L", a, 1000), "alice", false)));
    CHECK(apply_cancel_wait(f, "L", a).kind == FSM_REPLY_INT); /* a leader's wait timer */
    uint64_t n = open_session(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .req_sid = n, .req_seq = 2, .put = {.key = S("k")}};
    struct fsm_reply r1 = apply_cmd(f, &p);
    p.put.key = S("other");
    struct fsm_reply r2 = apply_cmd(f, &p); /* no digest recorded: the cached reply */
    CHECK(r2.kind == FSM_REPLY_INT && r2.value == r1.value);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK); /* the leader's expiry of alice's session */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, version_2_headers_round_trip_and_bad_ones_are_refused)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_REVOKE,
                        .now_ms = 7,
                        .checked = true,
                        .user = S("root"),
                        .admin = true,
                        .session_revoke = {.sid = 42}};
    struct buf *b = &fx->scratch[0], *b2 = &fx->scratch[1];
    CHECK(fsm_cmd_encode(&c, b) == 0 && b->p[0] == FSM_CMD_VERSION_USER);
    struct fsm_cmd d;
    char err[96];
    CHECK(fsm_cmd_decode((const uint8_t *)b->p, b->len, &d, err, sizeof err) == 0);
    CHECK(d.checked && d.admin && d.user.len == 4 && memcmp(d.user.p, "root", 4) == 0);
    CHECK(d.op == FSM_OP_SESSION_REVOKE && d.session_revoke.sid == 42);
    CHECK(fsm_cmd_encode(&d, b2) == 0 && b2->len == b->len && memcmp(b->p, b2->p, b->len) == 0);
    /* the flags byte follows "root": unknown bits are refused */
    size_t flags_at = 2 + 1 + 1 + 1 + 1 + 4;
    b->p[flags_at] |= 2;
    CHECK(!decodes(b->p, b->len));
    /* an unchecked command without a user is version 1, as before */
    struct fsm_cmd u = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = 3}};
    buf_reset(b2);
    CHECK(fsm_cmd_encode(&u, b2) == 0 && b2->p[0] == FSM_CMD_VERSION);
    /* a checked one without a user is version 2 with an empty user */
    u.checked = true;
    buf_reset(b2);
    CHECK(fsm_cmd_encode(&u, b2) == 0 && b2->p[0] == FSM_CMD_VERSION_USER &&
          decodes(b2->p, b2->len));
    /* a user longer than FSM_MAX_USER cannot be encoded */
    char lng[FSM_MAX_USER + 2];
    memset(lng, 'u', sizeof lng - 1);
    lng[sizeof lng - 1] = 0;
    u.user = S(lng);
    CHECK(fsm_cmd_encode(&u, b2) == -1);
    /* ops 14..19 are not ops (yet) */
    buf_reset(b2);
    struct fsm_cmd nop = {.op = FSM_OP_NOOP};
    CHECK(fsm_cmd_encode(&nop, b2) == 0);
    for (uint8_t op = 14; op < FSM_OP_SESSION_REVOKE; op++) {
        b2->p[1] = (char)op;
        CHECK(!decodes(b2->p, b2->len));
    }
}

TEST_F(fsm_fx, snapshot_is_version_4_only_with_owners_or_digests_and_round_trips)
{
    struct fsm *f = fx->f;
    struct buf *b = &fx->scratch[0];
    uint64_t n = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", n, 0)));
    snapshot_into(f, b);
    CHECK(b->p[4] == 2); /* no owner, no digest */
    /* a checked REQ without --acl-file: no owner, but a digest */
    struct fsm_cmd p = {.op = FSM_OP_PUT,
                        .checked = true,
                        .req_sid = n,
                        .req_seq = 3,
                        .put = {.key = S("k"), .value = S("v")}};
    CHECK(token_of(apply_cmd(f, &p)));
    buf_free(b);
    snapshot_into(f, b);
    CHECK(b->p[4] == 4);
    CHECK(restores_identically(f));
    uint64_t a = open_as(f, "alice", 100);
    CHECK(token_of(as_user(f, lock_cmd("M", a, 0), "alice", false)));
    CHECK(restores_identically(f));
    /* the restored copy keeps owners and digests */
    buf_free(b);
    snapshot_into(f, b);
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)b->p, b->len, err, sizeof err) == 0);
    CHECK(owner_is(fx->g, a, "alice"));
    CHECK(is_noperm(as_user(fx->g, unlock_cmd("M", a), "bob", false)));
    p.put.value = S("w");
    CHECK_STR_PREFIX(apply_cmd(fx->g, &p).err, "ERR request seq 3");
    /* an owned session gone: back to version 2 */
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK && apply_close(f, n).kind == FSM_REPLY_OK);
    buf_free(b);
    snapshot_into(f, b);
    CHECK(b->p[4] == 2);
}

TEST_F(fsm_fx, a_version_4_snapshot_of_a_state_version_2_holds_is_refused)
{
    struct fsm *f = fx->f;
    struct buf *b = &fx->scratch[0];
    CHECK(token_of(apply_put(f, "k", "v", 0)));
    snapshot_into(f, b);
    CHECK(b->p[4] == 2);
    b->p[4] = 4; /* no sessions: the bytes are otherwise the same */
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)b->p, b->len, err, sizeof err) == -1);
    CHECK(strstr(err, "oldest") != NULL);
    b->p[4] = 5;
    CHECK(fsm_restore(fx->g, (const uint8_t *)b->p, b->len, err, sizeof err) == -1);
}

int main(void)
{
    RUN_F(fsm_fx, session_open_records_the_acting_user_as_owner);
    RUN_F(fsm_fx, another_users_commands_are_refused_and_change_nothing);
    RUN_F(fsm_fx, a_command_built_before_the_victims_session_existed_is_refused_at_apply);
    RUN_F(fsm_fx, admin_may_close_revoke_and_unlock_but_not_act_as_the_session);
    RUN_F(fsm_fx, revoke_ends_the_session_as_an_expiry_with_lock_delay_and_says_revoked);
    RUN_F(fsm_fx, a_replayed_seq_with_a_different_command_is_refused);
    RUN_F(fsm_fx, a_lock_resent_with_the_wait_that_is_left_is_the_same_request);
    RUN_F(fsm_fx, unchecked_entries_behave_as_before);
    RUN_F(fsm_fx, version_2_headers_round_trip_and_bad_ones_are_refused);
    RUN_F(fsm_fx, snapshot_is_version_4_only_with_owners_or_digests_and_round_trips);
    RUN_F(fsm_fx, a_version_4_snapshot_of_a_state_version_2_holds_is_refused);
    TEST_MAIN_END();
}
