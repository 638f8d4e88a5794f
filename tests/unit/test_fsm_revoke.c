/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_revoke — cooperative revocation (src/fsm/revoke.c): LOCK_REVOKE tells the holder and
 * records a pending revoke of its grant; REVOKE_END releases that grant, and only that grant,
 * as an expiry does (lock-delay, then a larger token for the next waiter); any release before
 * cancels it; a second revoke only brings the deadline forward and tells the holder the one that
 * stands; snapshots carry it.
 *
 * One test per rule; every test ends with the invariant audit.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply revoke(struct fsm *f, const char *name, uint64_t deadline_ms,
                               const char *reason)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK_REVOKE,
                        .lock_revoke = {.name = S(name),
                                        .deadline_ms = deadline_ms,
                                        .reason = S(reason),
                                        .by = S("ops@127.0.0.1:4000")}};
    return apply_cmd(f, &c);
}

static struct fsm_reply revoke_end(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {.op = FSM_OP_REVOKE_END, .revoke_end = {.name = S(name), .token = token}};
    return apply_cmd(f, &c);
}

static int fenced_put(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("k"),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(name), .fence_token = token}}};
    return apply_cmd(f, &c).kind == FSM_REPLY_INT;
}

static const struct fsm_event *event_of(uint8_t type)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == type)
            return &EV.ev[i];
    return NULL;
}

static int same(struct fsm_str a, const char *b)
{
    return a.len == strlen(b) && memcmp(a.p, b, a.len) == 0;
}

static uint64_t pending_deadline(const struct fsm *f, const char *name)
{
    struct fsm_revoke_view v;
    return fsm_lock_revoke_info(f, name, strlen(name), &v) ? v.deadline_ms : UINT64_MAX;
}

static int has_pending(const struct fsm *f, const char *name)
{
    struct fsm_revoke_view v;
    return fsm_lock_revoke_info(f, name, strlen(name), &v);
}

static uint8_t snapshot_version(const struct fsm *f)
{
    struct buf b;
    snapshot_into(f, &b);
    uint8_t v = (uint8_t)b.p[4];
    buf_free(&b);
    return v;
}

TEST_F(fsm_fx, revoke_answers_the_grant_token_and_tells_its_holder_who_asked_and_why)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = revoke(f, "L", 3000, "maintenance");
    CHECK_EQ_U64(token_of(r), t);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    const struct fsm_event *e = event_of(FSM_EV_REVOKE_REQUESTED);
    CHECK(e != NULL);
    CHECK_EQ_U64(e->sid, a);
    CHECK_EQ_U64(e->token, t);
    CHECK_EQ_U64(e->ms, 3000);
    CHECK(same(e->name, "L") && same(e->value, "maintenance") && same(e->by, "ops@127.0.0.1:4000"));
    CHECK_EQ_U64(holder_of(f, "L"), a); /* asking takes nothing */
    CHECK(fenced_put(f, "L", t));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, revoke_of_a_free_or_shared_lock_is_notholder_and_of_a_semaphore_wrongtype)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    snapshot_into(f, &fx->before);
    CHECK_STR_PREFIX(revoke(f, "nobody", 100, "").err, "NOTHOLDER");
    CHECK(snapshot_equals(f, &fx->before));
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("R"), .sid = a}};
    CHECK(token_of(apply_cmd(f, &sh)));
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("S"), .sid = a, .limit = 2}};
    CHECK(token_of(apply_cmd(f, &sem)));
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK_STR_PREFIX(revoke(f, "R", 100, "").err, "NOTHOLDER");
    CHECK_STR_PREFIX(revoke(f, "S", 100, "").err, "WRONGTYPE");
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_deadline_releases_the_grant_as_an_expiry_lockdelay_then_a_larger_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 500), b = open_session(f, 10000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(revoke(f, "L", 2000, "")));
    CHECK(revoke_end(f, "L", t1).kind == FSM_REPLY_OK);
    const struct fsm_event *e = event_of(FSM_EV_RELEASED);
    CHECK(e && e->sid == a && e->token == t1 && e->expired);
    CHECK(e && e->deadline && !e->revoked); /* the cause rides on the event (the server logs it) */
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK_EQ_U64(holder_of(f, "L"), 0); /* lock-delay: nobody yet */
    CHECK(!fenced_put(f, "L", t1));     /* the old token is stale at once */
    CHECK(!has_pending(f, "L"));
    struct fsm_session_view v;
    CHECK(fsm_session_info(f, a, &v)); /* the holder's session lives on */
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), b);
    struct fsm_lock_view lv;
    CHECK(fsm_lock_info(f, "L", 1, &lv) && lv.token > t1);
    CHECK(fenced_put(f, "L", lv.token));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, without_lockdelay_the_deadline_grants_the_next_waiter_in_the_same_entry)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(revoke(f, "L", 2000, "")));
    CHECK(revoke_end(f, "L", t1).kind == FSM_REPLY_OK);
    const struct fsm_event *g = event_of(FSM_EV_GRANTED);
    CHECK(g && g->sid == b && g->token > t1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_deadline_releases_only_the_grant_it_was_asked_of)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(revoke(f, "L", 2000, "")));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK); /* hands on to b */
    CHECK_EQ_U64(holder_of(f, "L"), b);
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    CHECK(revoke_end(f, "L", t1).kind == FSM_REPLY_OK); /* the stale timer of a's grant */
    CHECK_EQ_U64(holder_of(f, "L"), b);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_release_before_the_deadline_cancels_the_revoke)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    CHECK(token_of(revoke(f, "L", 2000, "")));
    CHECK(has_pending(f, "L"));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_pending(f, "L"));
    uint64_t t2 = token_of(apply_lock(f, "L", a, 0)); /* the same session takes it again */
    CHECK(t2 > t1);
    CHECK(!has_pending(f, "L")); /* a new grant is not revoked */
    snapshot_into(f, &fx->before);
    CHECK(revoke_end(f, "L", t1).kind == FSM_REPLY_OK);
    CHECK(revoke_end(f, "L", t2).kind == FSM_REPLY_OK); /* no revoke of t2 was asked */
    CHECK(snapshot_equals(f, &fx->before));
    CHECK_EQ_U64(holder_of(f, "L"), a);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_end_of_the_holders_session_cancels_the_revoke)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(token_of(revoke(f, "L", 2000, "")));
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(!has_pending(f, "L"));
    const struct fsm_event *e = event_of(FSM_EV_RELEASED);
    CHECK(e && e->expired && !e->deadline); /* an expiry, not a revoke's deadline */
    CHECK(invariants_hold(f));
}

/* A second revoke stores the shorter length (the leader already took off what passed on its
 * clock: cmd_revoke.c), "ask only" keeps the pending one, and every REVOKE_REQUESTED tells the
 * holder the stored deadline, never merely the one asked (the leader's timer arms from it). */
TEST_F(fsm_fx, a_second_revoke_tells_the_holder_the_deadline_that_stands)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK_EQ_U64(token_of(revoke(f, "L", 1000, "first")), t);
    CHECK_EQ_U64(token_of(revoke(f, "L", 5000, "second")), t);
    CHECK_EQ_U64(pending_deadline(f, "L"), 1000);
    const struct fsm_event *e = event_of(FSM_EV_REVOKE_REQUESTED);
    CHECK(e && e->ms == 1000 && same(e->value, "second")); /* the one that stands */
    CHECK(token_of(revoke(f, "L", 200, "")));
    CHECK_EQ_U64(pending_deadline(f, "L"), 200);
    e = event_of(FSM_EV_REVOKE_REQUESTED);
    CHECK(e && e->ms == 200);
    CHECK(token_of(revoke(f, "L", 0, "ask only")));
    CHECK_EQ_U64(pending_deadline(f, "L"), 200);
    e = event_of(FSM_EV_REVOKE_REQUESTED);
    CHECK(e && e->ms == 200 && same(e->value, "ask only")); /* not "none" */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_revoke_without_deadline_is_never_forced)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK(token_of(revoke(f, "L", 0, "please")));
    CHECK_EQ_U64(pending_deadline(f, "L"), 0);
    CHECK(revoke_end(f, "L", t).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), a);
    CHECK(token_of(revoke(f, "L", 300, ""))); /* a later deadline does apply */
    CHECK_EQ_U64(pending_deadline(f, "L"), 300);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_snapshot_carries_the_pending_revoke_as_version_6_and_only_while_pending)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 250), b = open_session(f, 10000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    uint8_t before = snapshot_version(f);
    CHECK(before < 6);
    CHECK(token_of(revoke(f, "L", 700, "drain")));
    CHECK_EQ_U64(snapshot_version(f), 6);
    CHECK(restores_identically(f));
    struct buf b6;
    snapshot_into(f, &b6);
    char err[128];
    int rc = fsm_restore(fx->g, (const uint8_t *)b6.p, b6.len, err, sizeof(err));
    buf_free(&b6);
    CHECK(rc == 0);
    struct fsm_revoke_view v;
    CHECK(fsm_lock_revoke_info(fx->g, "L", 1, &v));
    CHECK(v.token == t && v.deadline_ms == 700 && same(v.reason, "drain") &&
          same(v.by, "ops@127.0.0.1:4000"));
    /* the restored copy fires as the original would: lock-delay, the old token stale */
    CHECK(revoke_end(fx->g, "L", t).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK(!fenced_put(fx->g, "L", t));
    CHECK_EQ_U64(snapshot_version(fx->g), before);
    CHECK(invariants_hold(fx->g));
}

TEST_F(fsm_fx, a_revoke_flag_in_an_older_snapshot_version_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 250);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(token_of(revoke(f, "L", 700, "")));
    snapshot_into(f, &fx->scratch[0]);
    /* an older version may not hold the revoke flag */
    struct buf *b = &fx->scratch[0];
    b->p[4] = 5;
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)b->p, b->len, err, sizeof(err)) != 0);
    CHECK(invariants_hold(f));
}

static struct fsm_reply lock_notify(struct fsm *f, const char *name, uint64_t sid, uint64_t wait)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK_NOTIFY,
                        .lock_notify = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

TEST_F(fsm_fx, notify_tells_the_holder_once_per_waiter_and_nobody_behind_a_lockdelay)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 300), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_notify(f, "L", a, 5000)); /* free: granted, nobody told */
    CHECK(t && !has_event(FSM_EV_WAIT_NOTIFY, 0));
    CHECK(lock_notify(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    const struct fsm_event *e = event_of(FSM_EV_WAIT_NOTIFY);
    CHECK(e && e->sid == b && e->token == t && e->ms == 5000 && same(e->name, "L"));
    CHECK(lock_notify(f, "L", b, 5000).kind == FSM_REPLY_QUEUED); /* a retry: told once */
    CHECK(!has_event(FSM_EV_WAIT_NOTIFY, 0));
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED); /* plain LOCK: nobody told */
    CHECK(!has_event(FSM_EV_WAIT_NOTIFY, 0));
    CHECK(lock_notify(f, "L", a, 0).kind == FSM_REPLY_INT); /* the holder: its token */
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);         /* lock-delay: no holder */
    uint64_t d = open_session(f, 10000, 0);
    CHECK(lock_notify(f, "L", d, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(!has_event(FSM_EV_WAIT_NOTIFY, 0));
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, revoke_answers_the_grant_token_and_tells_its_holder_who_asked_and_why);
    RUN_F(fsm_fx, revoke_of_a_free_or_shared_lock_is_notholder_and_of_a_semaphore_wrongtype);
    RUN_F(fsm_fx, the_deadline_releases_the_grant_as_an_expiry_lockdelay_then_a_larger_token);
    RUN_F(fsm_fx, without_lockdelay_the_deadline_grants_the_next_waiter_in_the_same_entry);
    RUN_F(fsm_fx, a_deadline_releases_only_the_grant_it_was_asked_of);
    RUN_F(fsm_fx, a_release_before_the_deadline_cancels_the_revoke);
    RUN_F(fsm_fx, the_end_of_the_holders_session_cancels_the_revoke);
    RUN_F(fsm_fx, a_second_revoke_tells_the_holder_the_deadline_that_stands);
    RUN_F(fsm_fx, a_revoke_without_deadline_is_never_forced);
    RUN_F(fsm_fx, the_snapshot_carries_the_pending_revoke_as_version_6_and_only_while_pending);
    RUN_F(fsm_fx, a_revoke_flag_in_an_older_snapshot_version_is_refused);
    RUN_F(fsm_fx, notify_tells_the_holder_once_per_waiter_and_nobody_behind_a_lockdelay);
    TEST_MAIN_END();
}
