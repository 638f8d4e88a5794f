/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_reentrant — reentrant sessions (src/fsm/reent.c): the hold count of a lock held by
 * one, its limit, every way a grant ends, exactly-once retries, and the snapshot section.
 *
 * One test per rule; the fixture and helpers are in fsm_fixture.h. "Changes nothing" is the
 * revision and the snapshot bytes before and after; most tests end with the invariant audit.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/snap_sect.h"
#include "fsm_fixture.h"

/* SESSION_OPEN_REENTRANT with `max` holds; the new sid, or 0 if refused. */
static uint64_t open_reentrant(struct fsm *f, uint64_t delay, uint64_t max)
{
    struct fsm_cmd c = {
        .op = FSM_OP_SESSION_OPEN_REENTRANT,
        .session_open_reentrant = {.ttl_ms = 1000, .lockdelay_ms = delay, .max_count = max}};
    return token_of(apply_cmd(f, &c));
}

/* The exclusive holder's hold count of `name`, 0 if none; *reentrant as LOCK.INFO tells. */
static uint32_t count_of(const struct fsm *f, const char *name, bool *reentrant)
{
    struct fsm_lock_view v;
    if (!fsm_lock_info(f, name, strlen(name), &v))
        return 0;
    if (reentrant)
        *reentrant = v.reentrant;
    return v.count;
}

static struct fsm_reply as_admin(struct fsm *f, struct fsm_cmd c, const char *user, bool admin)
{
    c.checked = true;
    c.user = S(user);
    c.admin = admin;
    return apply_cmd(f, &c);
}

TEST_F(fsm_fx, relock_by_a_reentrant_holder_counts_up_with_the_same_token)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8);
    CHECK(s);
    uint64_t t = token_of(apply_lock(f, "L", s, 0));
    CHECK(t);
    bool re = false;
    CHECK_EQ_U64(count_of(f, "L", &re), 1);
    CHECK(re);
    for (uint32_t n = 2; n <= 3; n++) {
        uint64_t rev = fsm_revision(f);
        CHECK_EQ_U64(token_of(apply_lock(f, "L", s, 0)), t); /* the fence does not move */
        CHECK_EQ_U64(count_of(f, "L", NULL), n);
        CHECK_EQ_U64(fsm_revision(f), rev + 1); /* a state change: a revision, not a token */
        CHECK(EV.n == 0);                       /* no grant, no release */
    }
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, unlock_counts_down_and_releases_only_the_last_hold)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8), w = open_session(f, 1000, 0);
    uint64_t t = token_of(apply_lock(f, "L", s, 0));
    apply_lock(f, "L", s, 0);
    apply_lock(f, "L", s, 0);
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_OK);
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), s); /* two UNLOCKs after three LOCKs: still held */
    CHECK_EQ_U64(count_of(f, "L", NULL), 1);
    CHECK(!has_event(FSM_EV_RELEASED, 0) && !has_event(FSM_EV_GRANTED, 0));
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), w); /* the waiter only now, with a larger token */
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.token > t && !v.reentrant && v.count == 1);
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_ERR); /* nothing left to count down */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_non_reentrant_relock_answers_the_token_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    uint64_t t = token_of(apply_lock(f, "L", s, 0));
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    CHECK_EQ_U64(token_of(apply_lock(f, "L", s, 0)), t);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before));
    bool re = true;
    CHECK_EQ_U64(count_of(f, "L", &re), 1);
    CHECK(!re);
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_OK); /* one UNLOCK releases */
    CHECK_EQ_U64(holder_of(f, "L"), 0);
}

TEST_F(fsm_fx, a_lock_at_max_count_is_refused_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 3);
    uint64_t t = token_of(apply_lock(f, "L", s, 0));
    apply_lock(f, "L", s, 0);
    CHECK_EQ_U64(token_of(apply_lock(f, "L", s, 0)), t);
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_lock(f, "L", s, 0);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR ");
    CHECK(strstr(r.err, "MAXCOUNT") != NULL);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK_EQ_U64(count_of(f, "L", NULL), 3);
    /* max count 1: reentrancy off, every second LOCK refused */
    uint64_t one = open_reentrant(f, 0, 1);
    CHECK(token_of(apply_lock(f, "M", one, 0)));
    CHECK(apply_lock(f, "M", one, 0).kind == FSM_REPLY_ERR);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, open_with_a_bad_max_count_is_refused_and_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK_EQ_U64(open_reentrant(f, 0, 0), 0);
    CHECK_EQ_U64(open_reentrant(f, 0, FSM_MAX_HOLD_COUNT + 1ull), 0);
    CHECK_EQ_U64(fsm_revision(f), 0);
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN_REENTRANT,
                        .session_open_reentrant = {.ttl_ms = 0, .max_count = 4}};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_ERR); /* SESSION_OPEN's own rule too */
    CHECK_EQ_U64(fsm_revision(f), 0);
    uint64_t s = open_reentrant(f, 0, FSM_MAX_HOLD_COUNT);
    struct fsm_session_view v;
    CHECK(fsm_session_info(f, s, &v) && v.reentrant && v.max_count == FSM_MAX_HOLD_COUNT);
    CHECK(has_event(FSM_EV_SESSION_OPENED, s));
}

TEST_F(fsm_fx, expiry_ends_every_hold_at_once_with_lock_delay)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 300, 8), w = open_session(f, 1000, 0);
    apply_lock(f, "L", s, 0);
    apply_lock(f, "L", s, 0);
    apply_lock(f, "L", w, 5000);
    CHECK(apply_expire(f, s).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_RELEASED, s) && has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), w);
    CHECK_EQ_U64(count_of(f, "L", NULL), 1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, close_and_session_revoke_end_every_hold_at_once)
{
    struct fsm *f = fx->f;
    uint64_t a = open_reentrant(f, 0, 8), b = open_reentrant(f, 0, 8);
    apply_lock(f, "A", a, 0);
    apply_lock(f, "A", a, 0);
    apply_lock(f, "B", b, 0);
    apply_lock(f, "B", b, 0);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "A"), 0);
    struct fsm_cmd rv = {.op = FSM_OP_SESSION_REVOKE, .session_revoke = {.sid = b}};
    CHECK(apply_cmd(f, &rv).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "B"), 0);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(st.sessions == 0);
    CHECK(invariants_hold(f)); /* the reentrant session count went with them */
}

TEST_F(fsm_fx, a_revoke_deadline_ends_every_hold_at_once)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8);
    uint64_t t = token_of(apply_lock(f, "L", s, 0));
    apply_lock(f, "L", s, 0);
    apply_lock(f, "L", s, 0);
    struct fsm_cmd rq = {.op = FSM_OP_LOCK_REVOKE,
                         .lock_revoke = {.name = S("L"), .deadline_ms = 100}};
    CHECK_EQ_U64(token_of(apply_cmd(f, &rq)), t);
    struct fsm_cmd end = {.op = FSM_OP_REVOKE_END, .revoke_end = {.name = S("L"), .token = t}};
    CHECK(apply_cmd(f, &end).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(has_event(FSM_EV_RELEASED, s));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, an_admin_unlock_of_another_users_session_ends_every_hold)
{
    struct fsm *f = fx->f;
    struct fsm_cmd o = {.op = FSM_OP_SESSION_OPEN_REENTRANT,
                        .session_open_reentrant = {.ttl_ms = 1000, .max_count = 8}};
    uint64_t s = token_of(as_admin(f, o, "alice", false));
    struct fsm_cmd l = {.op = FSM_OP_LOCK, .lock = {.name = S("L"), .sid = s}};
    struct fsm_cmd u = {.op = FSM_OP_UNLOCK, .unlock = {.name = S("L"), .sid = s}};
    CHECK(token_of(as_admin(f, l, "alice", false)));
    CHECK(token_of(as_admin(f, l, "alice", false)));
    CHECK(token_of(as_admin(f, l, "alice", false)));
    /* the owner's own UNLOCK counts down, admin or not */
    CHECK(as_admin(f, u, "alice", true).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(count_of(f, "L", NULL), 2);
    /* another user's forced release takes the lock whatever the count */
    CHECK(as_admin(f, u, "root", true).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(has_event(FSM_EV_RELEASED, s));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_retried_lock_with_the_same_seq_does_not_count_twice)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8);
    struct fsm_cmd c = {
        .op = FSM_OP_LOCK, .req_sid = s, .req_seq = 1, .lock = {.name = S("L"), .sid = s}};
    uint64_t t = token_of(apply_cmd(f, &c));
    c.req_seq = 2;
    CHECK_EQ_U64(token_of(apply_cmd(f, &c)), t);
    CHECK_EQ_U64(count_of(f, "L", NULL), 2);
    uint64_t rev = fsm_revision(f);
    CHECK_EQ_U64(token_of(apply_cmd(f, &c)), t); /* the retry: answered from the table */
    CHECK_EQ_U64(count_of(f, "L", NULL), 2);
    CHECK_EQ_U64(fsm_revision(f), rev);
    struct fsm_cmd u = {
        .op = FSM_OP_UNLOCK, .req_sid = s, .req_seq = 3, .unlock = {.name = S("L"), .sid = s}};
    CHECK(apply_cmd(f, &u).kind == FSM_REPLY_OK);
    CHECK(apply_cmd(f, &u).kind == FSM_REPLY_OK); /* a retried UNLOCK counts down once */
    CHECK_EQ_U64(count_of(f, "L", NULL), 1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_queued_lock_granted_later_starts_at_one_and_its_retry_does_not_count)
{
    struct fsm *f = fx->f;
    uint64_t h = open_session(f, 1000, 0), s = open_reentrant(f, 0, 8);
    apply_lock(f, "L", h, 0);
    struct fsm_cmd c = {.op = FSM_OP_LOCK,
                        .req_sid = s,
                        .req_seq = 1,
                        .lock = {.name = S("L"), .sid = s, .wait_ms = 5000}};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    apply_unlock(f, "L", h);
    CHECK_EQ_U64(holder_of(f, "L"), s);
    uint64_t t = token_of(apply_cmd(f, &c)); /* the retry gets the truth: the grant */
    CHECK(t);
    CHECK_EQ_U64(count_of(f, "L", NULL), 1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, shared_holds_and_multi_locks_are_not_counted)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8);
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("R"), .sid = s}};
    uint64_t t = token_of(apply_cmd(f, &sh));
    CHECK(t);
    uint64_t rev = fsm_revision(f);
    CHECK_EQ_U64(token_of(apply_cmd(f, &sh)), t); /* its token, no count */
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(apply_unlock(f, "R", s).kind == FSM_REPLY_OK); /* one UNLOCK ends the shared hold */
    CHECK_EQ_U64(fsm_kind_of(f, "R", 1), (uint64_t)-1);
    /* LOCK_MULTI takes only names the session does not hold: each starts at one hold */
    struct buf *raw = &fx->scratch[0];
    buf_init(raw);
    CHECK(fsm_names_add(raw, "M1", 2, false) == 0 && fsm_names_add(raw, "M2", 2, false) == 0);
    struct fsm_cmd m = {.op = FSM_OP_LOCK_MULTI,
                        .lock_multi = {.sid = s, .names = {2, {raw->p, (uint32_t)raw->len}}}};
    CHECK(token_of(apply_cmd(f, &m)));
    CHECK_EQ_U64(count_of(f, "M1", NULL), 1);
    CHECK(token_of(apply_lock(f, "M1", s, 0)));
    CHECK_EQ_U64(count_of(f, "M1", NULL), 2);
    CHECK(apply_cmd(f, &m).kind == FSM_REPLY_ERR); /* holds M1: refused, as for any session */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, an_upgrade_by_a_reentrant_shared_holder_starts_at_one)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 8);
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("U"), .sid = s}};
    uint64_t t = token_of(apply_cmd(f, &sh));
    uint64_t x = token_of(apply_lock(f, "U", s, 0)); /* upgrade: a new grant, a new token */
    CHECK(x > t);
    CHECK_EQ_U64(count_of(f, "U", NULL), 1);
    CHECK_EQ_U64(token_of(apply_lock(f, "U", s, 0)), x);
    CHECK_EQ_U64(count_of(f, "U", NULL), 2);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, hold_counts_survive_snapshot_and_restore)
{
    struct fsm *f = fx->f;
    uint64_t a = open_reentrant(f, 0, 5), b = open_reentrant(f, 250, 9),
             c = open_session(f, 900, 0);
    apply_lock(f, "x", a, 0);
    apply_lock(f, "x", a, 0);
    apply_lock(f, "y", b, 0); /* count 1: not in the section's list */
    for (int i = 0; i < 4; i++)
        apply_lock(f, "z", b, 0);
    apply_lock(f, "w", c, 0);
    apply_lock(f, "w", c, 0);
    CHECK(restores_identically(f));
    struct buf *s = &fx->scratch[0];
    snapshot_into(f, s);
    CHECK(s->p[4] == 8); /* version 8: the section is present */
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)s->p, s->len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(count_of(fx->g, "x", NULL), 2);
    CHECK_EQ_U64(count_of(fx->g, "y", NULL), 1);
    CHECK_EQ_U64(count_of(fx->g, "z", NULL), 4);
    bool re = true;
    CHECK_EQ_U64(count_of(fx->g, "w", &re), 1);
    CHECK(!re);
    struct fsm_session_view v;
    CHECK(fsm_session_info(fx->g, b, &v) && v.reentrant && v.max_count == 9);
    /* the restored copy keeps counting where it stopped */
    CHECK(token_of(apply_lock(fx->g, "x", a, 0)));
    CHECK(token_of(apply_lock(fx->g, "x", a, 0)));
    CHECK_EQ_U64(count_of(fx->g, "x", NULL), 4);
    CHECK(token_of(apply_lock(fx->g, "x", a, 0)));             /* 5: its max count */
    CHECK(apply_lock(fx->g, "x", a, 0).kind == FSM_REPLY_ERR); /* a sixth: refused */
    CHECK(invariants_hold(fx->g));
}

TEST_F(fsm_fx, a_state_without_reentrant_sessions_snapshots_as_before)
{
    struct fsm *f = fx->f;
    uint64_t s = open_reentrant(f, 0, 4), c = open_session(f, 900, 0);
    apply_lock(f, "L", c, 0);
    struct buf *b = &fx->scratch[0];
    CHECK(apply_close(f, s).kind == FSM_REPLY_OK);
    snapshot_into(f, b);
    CHECK(b->p[4] < 8); /* no section while no reentrant session lives */
    CHECK(restores_identically(f));
}

/* The section of `f` as a framed version-8 tail: the snapshot with its section's payload
 * replaced by `payload` (the tail is the section: the base records come first). */
static int with_payload(const struct buf *snap, size_t payload_at, const uint8_t *p, size_t n,
                        struct buf *out)
{
    buf_init(out);
    return buf_append(out, snap->p, payload_at) || buf_put_varint(out, 1) ||
           buf_put_varint(out, 2) || buf_put_bytes(out, p, n);
}

/* Where the sections begin: the snapshot of the same state without them is that long (the
 * version byte aside, the base records are the same bytes). */
static size_t sections_at(struct fsm_fx *fx, const struct buf *snap)
{
    struct buf tail;
    buf_init(&tail);
    if (fsm_snap_sections_emit(fx->f, &tail))
        abort();
    size_t at = snap->len - tail.len;
    buf_free(&tail);
    return at;
}

TEST_F(fsm_fx, a_non_canonical_section_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_reentrant(f, 0, 5), c = open_session(f, 900, 0);
    apply_lock(f, "x", a, 0);
    apply_lock(f, "x", a, 0);
    apply_lock(f, "w", c, 0);
    struct buf *s = &fx->scratch[0];
    snapshot_into(f, s);
    size_t at = sections_at(fx, s);
    uint8_t good[] = {1, (uint8_t)a, 5, 1, 1, 'x', 2};
    struct buf *t = &fx->scratch[1];
    CHECK(with_payload(s, at, good, sizeof(good), t) == 0);
    CHECK(t->len == s->len && memcmp(t->p, s->p, s->len) == 0); /* the format as documented */
    buf_free(t);
    const struct {
        uint8_t b[8];
        size_t n;
    } bad[] = {
        {{0, 0}, 2},                               /* no session: an empty section */
        {{1, 99, 5, 0}, 4},                        /* a session that does not exist */
        {{1, (uint8_t)a, 0, 0}, 4},                /* max count 0 */
        {{1, (uint8_t)a, 5, 1, 1, 'x', 1}, 7},     /* a count of 1 is not listed */
        {{1, (uint8_t)a, 5, 1, 1, 'x', 6}, 7},     /* over the max count */
        {{1, (uint8_t)a, 5, 1, 1, 'w', 2}, 7},     /* held by a session that is not reentrant */
        {{1, (uint8_t)a, 5, 1, 1, 'q', 2}, 7},     /* no such lock */
        {{1, (uint8_t)a, 5, 1, 1, 'x'}, 6},        /* truncated */
        {{2, (uint8_t)a, 5, (uint8_t)a, 5, 0}, 6}, /* a session twice */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(with_payload(s, at, bad[i].b, bad[i].n, t) == 0);
        CHECK(!restores((const uint8_t *)t->p, t->len));
        buf_free(t);
    }
}

int main(void)
{
    RUN_F(fsm_fx, relock_by_a_reentrant_holder_counts_up_with_the_same_token);
    RUN_F(fsm_fx, unlock_counts_down_and_releases_only_the_last_hold);
    RUN_F(fsm_fx, a_non_reentrant_relock_answers_the_token_and_changes_nothing);
    RUN_F(fsm_fx, a_lock_at_max_count_is_refused_and_changes_nothing);
    RUN_F(fsm_fx, open_with_a_bad_max_count_is_refused_and_changes_nothing);
    RUN_F(fsm_fx, expiry_ends_every_hold_at_once_with_lock_delay);
    RUN_F(fsm_fx, close_and_session_revoke_end_every_hold_at_once);
    RUN_F(fsm_fx, a_revoke_deadline_ends_every_hold_at_once);
    RUN_F(fsm_fx, an_admin_unlock_of_another_users_session_ends_every_hold);
    RUN_F(fsm_fx, a_retried_lock_with_the_same_seq_does_not_count_twice);
    RUN_F(fsm_fx, a_queued_lock_granted_later_starts_at_one_and_its_retry_does_not_count);
    RUN_F(fsm_fx, shared_holds_and_multi_locks_are_not_counted);
    RUN_F(fsm_fx, an_upgrade_by_a_reentrant_shared_holder_starts_at_one);
    RUN_F(fsm_fx, hold_counts_survive_snapshot_and_restore);
    RUN_F(fsm_fx, a_state_without_reentrant_sessions_snapshots_as_before);
    RUN_F(fsm_fx, a_non_canonical_section_is_refused);
    TEST_MAIN_END();
}
