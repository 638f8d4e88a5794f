/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_rw — read-write locks: shared grants, FIFO across modes, upgrades, fencing with
 * shared holders, the end of a shared holder's session, and snapshots of shared state.
 *
 * One test per rule (src/fsm/lock.c, src/fsm/lock_shared.c); the fixture and helpers are in
 * fsm_fixture.h. Commands go through the real encoder and fsm_apply; every test ends with the
 * invariant audit, which also checks that no head waiter could be granted (no missed grant).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

/* Shared holders of `name` (0 if the lock does not exist). */
static size_t shared_of(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) ? v.n_shared : 0;
}

static uint64_t granted_token(uint64_t sid)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == FSM_EV_GRANTED && EV.ev[i].sid == sid)
            return EV.ev[i].token;
    return 0;
}

static int put_fenced(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("k"),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(name), .fence_token = token}}};
    return apply_cmd(f, &c).kind == FSM_REPLY_INT;
}

TEST_F(fsm_fx, shared_requests_on_a_free_lock_are_granted_at_once_each_with_its_own_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_lock_shared(f, "L", a, 0));
    uint64_t tb = token_of(apply_lock_shared(f, "L", b, 0));
    uint64_t tc = token_of(apply_lock_shared(f, "L", c, 5000));
    CHECK(ta && tb > ta && tc > tb);
    CHECK_EQ_U64(shared_of(f, "L"), 3);
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK_EQ_U64(token_of(apply_lock_shared(f, "L", b, 0)), tb); /* idempotent */
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.shared_holds, 3);
    CHECK_EQ_U64(st.locks_held, 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, exclusive_request_waits_until_every_shared_holder_left)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             w = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", w, 0).kind == FSM_REPLY_NIL);
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, 0));
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, w));
    CHECK_EQ_U64(holder_of(f, "L"), w);
    CHECK_EQ_U64(shared_of(f, "L"), 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_queued_exclusive_request_keeps_later_shared_requests_out)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), w = open_session(f, 1000, 0),
             b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_lock_shared(f, "L", b, 0).kind == FSM_REPLY_NIL); /* no overtaking */
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(apply_lock_shared(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(shared_of(f, "L"), 1);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), w); /* the writer first, then the reader */
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK(apply_unlock(f, "L", w).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(shared_of(f, "L"), 1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_run_of_shared_waiters_at_the_head_is_granted_together_up_to_an_exclusive_one)
{
    struct fsm *f = fx->f;
    uint64_t x = open_session(f, 1000, 0), r1 = open_session(f, 1000, 0),
             r2 = open_session(f, 1000, 0), w = open_session(f, 1000, 0),
             r3 = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", x, 0)));
    CHECK(apply_lock_shared(f, "L", r1, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", r2, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", r3, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", x).kind == FSM_REPLY_OK);
    uint64_t t1 = granted_token(r1), t2 = granted_token(r2);
    CHECK(t1 && t2 == t1 + 1); /* one entry, two grants, two tokens */
    CHECK(!has_event(FSM_EV_GRANTED, w) && !has_event(FSM_EV_GRANTED, r3));
    CHECK(fsm_fence_check(f, "L", 1, t1) == 0 && fsm_fence_check(f, "L", 1, t2) == 0);
    CHECK(apply_unlock(f, "L", r2).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, 0));
    CHECK(apply_close(f, r1).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, w));
    CHECK(apply_unlock(f, "L", w).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, r3));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, fenced_writes_accept_only_the_exclusive_token_fence_check_any_holders)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_lock_shared(f, "L", a, 0));
    uint64_t tb = token_of(apply_lock_shared(f, "L", b, 0));
    CHECK(fsm_fence_check(f, "L", 1, ta) == 0 && fsm_fence_check(f, "L", 1, tb) == 0);
    CHECK(!put_fenced(f, "L", ta)); /* a reader cannot write */
    CHECK(has_event(FSM_EV_FENCE_REJECTED, 0));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(fsm_fence_check(f, "L", 1, ta) == -1); /* a released shared token is stale */
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    uint64_t tx = token_of(apply_lock(f, "L", a, 0));
    CHECK(tx > tb && put_fenced(f, "L", tx));
    CHECK(fsm_fence_check(f, "L", 1, tb) == -1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, upgrade_by_the_only_shared_holder_is_granted_at_once_with_a_new_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    uint64_t ts = token_of(apply_lock_shared(f, "L", a, 0));
    uint64_t tx = token_of(apply_lock(f, "L", a, 0));
    CHECK(ts && tx > ts);
    CHECK(has_event(FSM_EV_RELEASED, a) && has_event(FSM_EV_GRANTED, a));
    CHECK_EQ_U64(holder_of(f, "L"), a);
    CHECK_EQ_U64(shared_of(f, "L"), 0);
    CHECK(fsm_fence_check(f, "L", 1, ts) == -1 && put_fenced(f, "L", tx));
    struct fsm_reply r = apply_lock_shared(f, "L", a, 0); /* one mode at a time */
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR session");
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, upgrade_waits_at_the_head_until_its_session_is_the_only_holder)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             w = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_lock_shared(f, "L", a, 0));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", a, 0).kind == FSM_REPLY_NIL);
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED); /* ahead of w */
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED); /* keeps its place */
    CHECK(fsm_fence_check(f, "L", 1, ta) == 0);                  /* still a reader meanwhile */
    CHECK(invariants_hold(f));
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    uint64_t tx = granted_token(a);
    CHECK(tx > ta);
    CHECK_EQ_U64(holder_of(f, "L"), a);
    CHECK(fsm_fence_check(f, "L", 1, ta) == -1);
    CHECK(!has_event(FSM_EV_GRANTED, w));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), w);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_second_upgrade_request_is_refused_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_lock(f, "L", b, 5000);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK(strstr(r.err, "deadlock") != NULL);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(apply_lock(f, "L", b, 0).kind == FSM_REPLY_NIL); /* a try is just busy */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_queued_session_asking_in_the_other_mode_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t x = open_session(f, 1000, 0), a = open_session(f, 1000, 0),
             b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", x, 0)));
    CHECK(apply_lock_shared(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK_STR_PREFIX(apply_lock(f, "L", a, 5000).err, "ERR");
    CHECK_STR_PREFIX(apply_lock_shared(f, "L", b, 5000).err, "ERR");
    CHECK(apply_lock_shared(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, expiry_of_a_shared_holder_starts_lockdelay_and_nothing_is_granted_during_it)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0),
             w = open_session(f, 1000, 0), c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_RELEASED, a) && has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.n_shared == 1);
    CHECK(invariants_hold(f));
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, 0)); /* the delay holds the writer off */
    CHECK(apply_lock_shared(f, "L", c, 0).kind == FSM_REPLY_NIL);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, w));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, close_of_a_shared_holder_waiting_to_upgrade_releases_both_and_grants_it_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             r = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", r, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, a));
    CHECK(has_event(FSM_EV_WAIT_ENDED, a) && has_event(FSM_EV_RELEASED, a));
    CHECK(has_event(FSM_EV_GRANTED, r)); /* the upgrade no longer holds the reader off */
    CHECK_EQ_U64(shared_of(f, "L"), 2);
    CHECK(invariants_hold(f));
    CHECK(restores_identically(f));
}

TEST_F(fsm_fx, cancel_of_an_upgrade_keeps_the_shared_hold_and_lets_readers_behind_it_in)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             r = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_lock_shared(f, "L", a, 0));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", r, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "L", a).kind == FSM_REPLY_NIL);
    CHECK(has_event(FSM_EV_WAIT_ENDED, a) && has_event(FSM_EV_GRANTED, r));
    CHECK(fsm_fence_check(f, "L", 1, ta) == 0);
    CHECK_EQ_U64(shared_of(f, "L"), 3);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_writer_that_leaves_the_queue_lets_the_readers_behind_it_in)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), w = open_session(f, 1000, 0),
             r = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", r, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "L", w).kind == FSM_REPLY_NIL);
    CHECK(has_event(FSM_EV_GRANTED, r));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "L", open_session(f, 1000, 0), 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", w).kind == FSM_REPLY_OK); /* leaving by UNLOCK: the same */
    CHECK(has_event(FSM_EV_GRANTED, 0));
    CHECK_EQ_U64(shared_of(f, "L"), 3);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_after_a_shared_grant_returns_the_shared_token)
{
    struct fsm *f = fx->f;
    uint64_t x = open_session(f, 1000, 0), r = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", x, 0)));
    CHECK(apply_lock_shared(f, "L", r, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", x).kind == FSM_REPLY_OK);
    uint64_t t = granted_token(r);
    CHECK(t);
    CHECK_EQ_U64(token_of(apply_cancel_wait(f, "L", r)), t);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, unlock_by_a_shared_holder_waiting_to_upgrade_leaves_the_lock_entirely)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "L", a, 0)));
    CHECK(token_of(apply_lock_shared(f, "L", b, 0)));
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, a) && has_event(FSM_EV_RELEASED, a));
    CHECK(!has_event(FSM_EV_GRANTED, a));
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.n_shared == 1 && v.n_waiters == 0);
    CHECK_STR_PREFIX(apply_unlock(f, "L", a).err, "NOTHOLDER");
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    CHECK(!fsm_lock_info(f, "L", 1, &v)); /* the last holder drops the record */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_retried_shared_lock_after_queued_answers_the_current_truth)
{
    struct fsm *f = fx->f;
    uint64_t x = open_session(f, 1000, 0), r = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", x, 0)));
    struct fsm_cmd c = {.op = FSM_OP_LOCK_SHARED,
                        .req_sid = r,
                        .req_seq = 1,
                        .lock_shared = {.name = S("L"), .sid = r, .wait_ms = 5000}};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", x).kind == FSM_REPLY_OK);
    uint64_t t = granted_token(r);
    CHECK(t);
    CHECK_EQ_U64(token_of(apply_cmd(f, &c)), t);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_end_of_a_session_releases_its_shared_holds_in_token_order)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), w = open_session(f, 1000, 0);
    uint64_t tm = token_of(apply_lock_shared(f, "M", a, 0));
    uint64_t tl = token_of(apply_lock_shared(f, "L", a, 0));
    CHECK(token_of(apply_lock(f, "X", a, 0)));
    CHECK(apply_lock(f, "L", w, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "M", w, 5000).kind == FSM_REPLY_QUEUED);
    struct fsm_session_view sv;
    CHECK(fsm_session_info(f, a, &sv) && sv.n_shared == 2 && sv.n_locks == 1);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    uint64_t seen[3];
    size_t n = 0;
    for (size_t i = 0; i < EV.n && n < 3; i++)
        if (EV.ev[i].type == FSM_EV_RELEASED)
            seen[n++] = EV.ev[i].token;
    CHECK_EQ_U64(n, 3);
    CHECK(seen[1] == tm && seen[2] == tl); /* exclusive first, then M (the older token), L */
    CHECK(holder_of(f, "L") == w && holder_of(f, "M") == w);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_state_without_shared_locks_snapshots_as_version_2_and_with_them_as_3)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK_EQ_U64((uint8_t)fx->scratch[0].p[4], 2);
    CHECK(apply_lock_shared(f, "L", b, 5000).kind == FSM_REPLY_QUEUED); /* a shared waiter */
    snapshot_into(f, &fx->scratch[1]);
    CHECK_EQ_U64((uint8_t)fx->scratch[1].p[4], 3);
    CHECK(restores_identically(f));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK); /* b holds it shared now */
    CHECK(apply_lock(f, "L", a, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t c = open_session(f, 1000, 0);
    CHECK(apply_lock_shared(f, "N", a, 0).kind == FSM_REPLY_INT);
    CHECK(apply_lock_shared(f, "N", c, 0).kind == FSM_REPLY_INT);
    CHECK(apply_lock(f, "N", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "N", a, 5000).kind == FSM_REPLY_QUEUED); /* upgrade at the head */
    CHECK(restores_identically(f));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_version_3_snapshot_of_a_version_2_state_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    snapshot_into(f, &fx->scratch[0]);
    struct buf *b = &fx->scratch[0];
    /* v2 lock: name, holder, token, held_since, flags; v3 adds n_shared = 0 after held_since.
     * The lock record here is: 01 'L' <sid> <token> <since> 00 00 (flags, n_waiters). */
    CHECK(b->len > 8 && (uint8_t)b->p[4] == 2);
    const uint8_t tail[] = {0x01, 'L'};
    char *at = memmem(b->p, b->len, tail, sizeof(tail));
    CHECK(at != NULL);
    size_t off = (size_t)(at - b->p) + sizeof(tail) + 3; /* sid, token, since: one byte each */
    struct buf v3;
    buf_init(&v3);
    CHECK(buf_append(&v3, b->p, off) == 0 && buf_put_u8(&v3, 0) == 0 &&
          buf_append(&v3, b->p + off, b->len - off) == 0);
    v3.p[4] = 3;
    int ok = restores((const uint8_t *)v3.p, v3.len);
    buf_free(&v3);
    CHECK(!ok);
    CHECK(restores((const uint8_t *)b->p, b->len));
}

/* ---- random sequences: every step keeps the invariants (which include "no missed grant") ---- */

#define RW_SEEDS 20
#define RW_STEPS 3000
#define RW_SESS 6
#define RW_LOCKS 3
#define RW_TWIN_EVERY 100 /* steps between restore checks */

static uint64_t rw_rng;
static uint64_t rw_rnd(uint64_t n)
{
    rw_rng ^= rw_rng >> 12;
    rw_rng ^= rw_rng << 25;
    rw_rng ^= rw_rng >> 27;
    return (rw_rng * 2685821657736338717ull) % n;
}

/* One random command over a few sessions and locks: both modes, upgrades, unlocks, cancels,
 * closes, expiries (with lock-delay) and lock-delay ends; dead sessions are reopened. */
static void rw_step(struct fsm *f, uint64_t *sids)
{
    static const char *const names[RW_LOCKS] = {"a", "b", "c"};
    int i = (int)rw_rnd(RW_SESS);
    const char *n = names[rw_rnd(RW_LOCKS)];
    uint64_t wait = rw_rnd(3) ? 1000 : 0;
    struct fsm_session_view v;
    if (!fsm_session_info(f, sids[i], &v)) {
        sids[i] = open_session(f, 1000, rw_rnd(2) ? 50 : 0);
        return;
    }
    switch (rw_rnd(10)) {
    case 0:
    case 1:
        apply_lock(f, n, sids[i], wait);
        break;
    case 2:
    case 3:
    case 4:
        apply_lock_shared(f, n, sids[i], wait);
        break;
    case 5:
    case 6:
        apply_unlock(f, n, sids[i]);
        break;
    case 7:
        apply_cancel_wait(f, n, sids[i]);
        break;
    case 8:
        apply_lockdelay_end(f, n);
        break;
    default:
        if (rw_rnd(2))
            apply_expire(f, sids[i]);
        else
            apply_close(f, sids[i]);
        break;
    }
}

TEST_F(fsm_fx, random_sequences_of_both_modes_keep_every_invariant_and_restore_identically)
{
    for (uint64_t seed = 1; seed <= RW_SEEDS; seed++) {
        struct fsm *f = fsm_new();
        uint64_t sids[RW_SESS] = {0};
        rw_rng = seed * 0x9e3779b97f4a7c15ull;
        int ok = f != NULL;
        for (int step = 0; ok && step < RW_STEPS; step++) {
            rw_step(f, sids);
            ok = invariants_hold(f) && (step % RW_TWIN_EVERY || restores_identically(f));
            if (!ok)
                fprintf(stderr, "  seed %llu step %d\n", (unsigned long long)seed, step);
        }
        fsm_free(f);
        CHECK(ok);
    }
}

int main(void)
{
    RUN_F(fsm_fx, shared_requests_on_a_free_lock_are_granted_at_once_each_with_its_own_token);
    RUN_F(fsm_fx, exclusive_request_waits_until_every_shared_holder_left);
    RUN_F(fsm_fx, a_queued_exclusive_request_keeps_later_shared_requests_out);
    RUN_F(fsm_fx, a_run_of_shared_waiters_at_the_head_is_granted_together_up_to_an_exclusive_one);
    RUN_F(fsm_fx, fenced_writes_accept_only_the_exclusive_token_fence_check_any_holders);
    RUN_F(fsm_fx, upgrade_by_the_only_shared_holder_is_granted_at_once_with_a_new_token);
    RUN_F(fsm_fx, upgrade_waits_at_the_head_until_its_session_is_the_only_holder);
    RUN_F(fsm_fx, a_second_upgrade_request_is_refused_and_changes_nothing);
    RUN_F(fsm_fx, a_queued_session_asking_in_the_other_mode_is_refused);
    RUN_F(fsm_fx, expiry_of_a_shared_holder_starts_lockdelay_and_nothing_is_granted_during_it);
    RUN_F(fsm_fx, close_of_a_shared_holder_waiting_to_upgrade_releases_both_and_grants_it_nothing);
    RUN_F(fsm_fx, cancel_of_an_upgrade_keeps_the_shared_hold_and_lets_readers_behind_it_in);
    RUN_F(fsm_fx, a_writer_that_leaves_the_queue_lets_the_readers_behind_it_in);
    RUN_F(fsm_fx, cancel_after_a_shared_grant_returns_the_shared_token);
    RUN_F(fsm_fx, unlock_by_a_shared_holder_waiting_to_upgrade_leaves_the_lock_entirely);
    RUN_F(fsm_fx, a_retried_shared_lock_after_queued_answers_the_current_truth);
    RUN_F(fsm_fx, the_end_of_a_session_releases_its_shared_holds_in_token_order);
    RUN_F(fsm_fx, a_state_without_shared_locks_snapshots_as_version_2_and_with_them_as_3);
    RUN_F(fsm_fx, a_version_3_snapshot_of_a_version_2_state_is_refused);
    RUN_F(fsm_fx, random_sequences_of_both_modes_keep_every_invariant_and_restore_identically);
    TEST_MAIN_END();
}
