/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_lock — locks: grants, tokens, FIFO queues, UNLOCK, CANCEL_WAIT and lock-delay.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

TEST_F(fsm_fx, tokens_strictly_increase_per_lock_and_are_unique_across_locks)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t prev = 0, seen[40];
    size_t n = 0;
    for (int i = 0; i < 10; i++) {
        uint64_t t1 = token_of(apply_lock(f, "x", i % 2 ? a : b, 0));
        uint64_t t2 = token_of(apply_lock(f, "y", i % 2 ? b : a, 0));
        CHECK(t1 > prev && t2 > 0);
        prev = t1;
        seen[n++] = t1;
        seen[n++] = t2;
        CHECK(apply_unlock(f, "x", i % 2 ? a : b).kind == FSM_REPLY_OK);
        CHECK(apply_unlock(f, "y", i % 2 ? b : a).kind == FSM_REPLY_OK);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(seen[i] != seen[j]);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, unlock_by_a_queued_session_leaves_the_queue_and_is_never_granted)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_lock(f, "L", a, 0));
    CHECK(ta);
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK(fsm_revision(f) > rev);
    CHECK_EQ_U64(holder_of(f, "L"), a); /* the holder keeps its lock and token */
    CHECK(fsm_fence_check(f, "L", 1, ta) == 0);
    CHECK_STR_PREFIX(apply_unlock(f, "L", b).err, "NOTHOLDER"); /* only once */
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder_of(f, "L"), c);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, closed_session_is_never_granted_even_while_queued)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder_of(f, "L"), c);
    CHECK(apply_lock(f, "M", b, 0).kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(apply_lock(f, "M", b, 0).err, "NOSESSION");
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, expired_session_is_never_granted_even_while_queued)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder_of(f, "L"), c);
    /* the only waiter expires: the next unlock frees the lock instead of granting it */
    uint64_t d = open_session(f, 1000, 0);
    CHECK(apply_lock(f, "L", d, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, d).kind == FSM_REPLY_OK);
    CHECK(apply_unlock(f, "L", c).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, 0));
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, unlock_by_non_holder_fails_with_notholder_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    for (int i = 0; i < 2; i++) {
        struct fsm_reply r = apply_unlock(f, "L", c);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "NOTHOLDER");
        CHECK(EV.n == 0);
    }
    CHECK_STR_PREFIX(apply_unlock(f, "nolock", a).err, "NOTHOLDER");
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, expiry_of_the_holder_grants_the_next_waiter)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), b);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.token > t1 && v.token == fsm_revision(f));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, lockdelay_holds_grants_after_expiry_and_its_end_grants_the_head)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0) && !has_event(FSM_EV_GRANTED, 0));
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.lockdelay_ms == 300);
    CHECK(v.holder_sid == 0 && v.n_waiters == 1);
    /* during the delay: busy for everyone */
    CHECK(apply_lock(f, "L", c, 0).kind == FSM_REPLY_NIL);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(holder_of(f, "L"), 0);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_ENDED, 0) && has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder_of(f, "L"), b);
    CHECK(fsm_lock_info(f, "L", 1, &v) && !v.in_lockdelay && v.n_waiters == 1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, lockdelay_without_waiters_ends_by_dropping_the_lock)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK(!fsm_lock_info(f, "L", 1, &v));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, lockdelay_end_is_idempotent)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK(apply_lockdelay_end(f, "nolock").kind == FSM_REPLY_OK);
    CHECK(EV.n == 0 && snapshot_equals(f, before));
    buf_free(before);
}

TEST_F(fsm_fx, no_lockdelay_after_clean_unlock_or_close)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK(token_of(apply_lock(f, "L", b, 0)));
    CHECK(apply_unlock(f, "L", b).kind == FSM_REPLY_OK);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK_EQ_U64(holder_of(f, "L"), b);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.locks_in_delay, 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, expiry_with_lockdelay_zero_grants_immediately)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0) && has_event(FSM_EV_GRANTED, b));
}

TEST_F(fsm_fx, lock_by_holder_returns_its_token_and_queued_session_keeps_its_place)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    CHECK_EQ_U64(token_of(apply_lock(f, "L", a, 0)), t);
    CHECK_EQ_U64(token_of(apply_lock(f, "L", a, 100)), t);
    CHECK(apply_lock(f, "L", b, 9999).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", b, 0).kind == FSM_REPLY_NIL);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), b); /* b kept its place ahead of c */
}

TEST_F(fsm_fx, try_lock_on_busy_lock_returns_nil_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_lock(f, "L", b, 0).kind == FSM_REPLY_NIL);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(EV.n == 0 && snapshot_equals(f, before));
    buf_free(before);
}

TEST_F(fsm_fx, unlock_of_a_lock_without_waiters_deletes_it)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    uint64_t rev = fsm_revision(f);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_lock_view v;
    CHECK(!fsm_lock_info(f, "L", 1, &v));
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.locks_held, 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, unlock_grants_only_the_head_with_the_unlock_revision)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1); /* the grant's token is the only allocation */
    size_t grants = 0;
    for (size_t i = 0; i < EV.n; i++)
        grants += EV.ev[i].type == FSM_EV_GRANTED;
    CHECK_EQ_U64(grants, 1);
    CHECK(has_event(FSM_EV_GRANTED, b));
}

TEST_F(fsm_fx, fifo_order_of_grants_across_five_waiters)
{
    struct fsm *f = fx->f;
    uint64_t h = open_session(f, 1000, 0), w[5];
    CHECK(token_of(apply_lock(f, "L", h, 0)));
    for (int i = 0; i < 5; i++) {
        w[i] = open_session(f, 1000, 0);
        CHECK(apply_lock(f, "L", w[i], 5000).kind == FSM_REPLY_QUEUED);
    }
    uint64_t cur = h, prev_token = 0;
    for (int i = 0; i < 5; i++) {
        CHECK(apply_unlock(f, "L", cur).kind == FSM_REPLY_OK);
        CHECK_EQ_U64(holder_of(f, "L"), w[i]);
        struct fsm_lock_view v;
        CHECK(fsm_lock_info(f, "L", 1, &v) && v.token > prev_token);
        CHECK_EQ_U64(v.n_waiters, (uint64_t)(4 - i));
        prev_token = v.token;
        cur = w[i];
    }
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_after_grant_returns_the_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_cancel_wait(f, "L", b);
    CHECK(r.kind == FSM_REPLY_INT && r.value == v.token);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK_EQ_U64(holder_of(f, "L"), b);
}

TEST_F(fsm_fx, cancel_of_a_queued_waiter_removes_it)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_cancel_wait(f, "L", b).kind == FSM_REPLY_NIL);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.n_waiters == 1);
    /* a second cancel finds nothing: NIL, no change */
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    CHECK(apply_cancel_wait(f, "L", b).kind == FSM_REPLY_NIL);
    CHECK(apply_cancel_wait(f, "nolock", b).kind == FSM_REPLY_NIL);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), c);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_of_the_last_waiter_during_lockdelay_keeps_the_delay)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(apply_cancel_wait(f, "L", b).kind == FSM_REPLY_NIL);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.n_waiters == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_by_a_dead_session_is_nosession)
{
    struct fsm *f = fx->f;
    struct fsm_reply r = apply_cancel_wait(f, "L", 77);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "NOSESSION");
}

TEST_F(fsm_fx, commands_naming_a_dead_session_fail_with_nosession)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    uint64_t rev = fsm_revision(f);
    CHECK_STR_PREFIX(apply_lock(f, "L", a, 0).err, "NOSESSION");
    CHECK_STR_PREFIX(apply_unlock(f, "L", a).err, "NOSESSION");
    CHECK_STR_PREFIX(apply_close(f, a).err, "NOSESSION");
    CHECK_STR_PREFIX(apply_expire(f, a).err, "NOSESSION");
    CHECK_STR_PREFIX(apply_put(f, "k", "v", a).err, "NOSESSION");
    struct fsm_cmd c = {.op = FSM_OP_NOOP, .req_sid = a, .req_seq = 1};
    CHECK_STR_PREFIX(apply_cmd(f, &c).err, "NOSESSION");
    CHECK_EQ_U64(fsm_revision(f), rev);
}

int main(void)
{
    RUN_F(fsm_fx, tokens_strictly_increase_per_lock_and_are_unique_across_locks);
    RUN_F(fsm_fx, closed_session_is_never_granted_even_while_queued);
    RUN_F(fsm_fx, expired_session_is_never_granted_even_while_queued);
    RUN_F(fsm_fx, unlock_by_non_holder_fails_with_notholder_and_changes_nothing);
    RUN_F(fsm_fx, unlock_by_a_queued_session_leaves_the_queue_and_is_never_granted);
    RUN_F(fsm_fx, expiry_of_the_holder_grants_the_next_waiter);
    RUN_F(fsm_fx, lockdelay_holds_grants_after_expiry_and_its_end_grants_the_head);
    RUN_F(fsm_fx, lockdelay_without_waiters_ends_by_dropping_the_lock);
    RUN_F(fsm_fx, lockdelay_end_is_idempotent);
    RUN_F(fsm_fx, no_lockdelay_after_clean_unlock_or_close);
    RUN_F(fsm_fx, expiry_with_lockdelay_zero_grants_immediately);
    RUN_F(fsm_fx, lock_by_holder_returns_its_token_and_queued_session_keeps_its_place);
    RUN_F(fsm_fx, try_lock_on_busy_lock_returns_nil_and_changes_nothing);
    RUN_F(fsm_fx, unlock_of_a_lock_without_waiters_deletes_it);
    RUN_F(fsm_fx, unlock_grants_only_the_head_with_the_unlock_revision);
    RUN_F(fsm_fx, fifo_order_of_grants_across_five_waiters);
    RUN_F(fsm_fx, cancel_after_grant_returns_the_token);
    RUN_F(fsm_fx, cancel_of_a_queued_waiter_removes_it);
    RUN_F(fsm_fx, cancel_of_the_last_waiter_during_lockdelay_keeps_the_delay);
    RUN_F(fsm_fx, cancel_by_a_dead_session_is_nosession);
    RUN_F(fsm_fx, commands_naming_a_dead_session_fail_with_nosession);
    TEST_MAIN_END();
}
