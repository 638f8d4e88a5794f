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

/* The unkeyed FNV-1a lock names were hashed with before the keyed hash (offset basis one
 * digit short, as it was), folded to 32 bits: names whose low bits agree share a bucket. */
static uint32_t old_unkeyed_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 32;
    return (uint32_t)h;
}

#define FLOOD_NAMES 600
#define FLOOD_MASK 1023u /* 600 locks: 1024 buckets, so equal low 10 bits = one bucket */

/* A client picking names that all fell into one bucket of the old hash (chain 600, every
 * LOCK an O(600) walk on every replica) gets short chains under the keyed one. */
TEST_F(fsm_fx, names_that_collided_under_the_unkeyed_hash_spread_under_the_keyed_one)
{
    struct fsm *f = fx->f;
    uint8_t key[FSM_HASH_KEY_BYTES];
    for (int i = 0; i < FSM_HASH_KEY_BYTES; i++)
        key[i] = (uint8_t)(0x5a ^ (i * 29));
    CHECK(fsm_set_hash_key(f, key) == 0);
    uint64_t sid = open_session(f, 60000, 0);
    int found = 0;
    char name[32];
    for (uint32_t i = 0; found < FLOOD_NAMES && i < 4000000u; i++) {
        int n = snprintf(name, sizeof name, "flood-%u", i);
        if ((old_unkeyed_hash(name, (size_t)n) & FLOOD_MASK) != 0)
            continue;
        found++;
        CHECK(apply_lock(f, name, sid, 0).kind == FSM_REPLY_INT);
    }
    CHECK_EQ_U64(found, FLOOD_NAMES);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.locks, FLOOD_NAMES);
    /* 600 keys in >= 1024 buckets: a chain of 12 has a probability far below 1e-9 */
    CHECK(fsm_max_lock_chain(f) <= 12);
    CHECK(fsm_set_hash_key(f, key) == -1); /* not once locks exist */
    CHECK(invariants_hold(f));
}

/* Events of one apply, flattened for comparison (names included). */
static void events_text(const struct fsm_events *ev, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ev->n && k < n; i++) {
        const struct fsm_event *e = &ev->ev[i];
        k += (size_t)snprintf(out + k, n - k, "%u:%llu:%llu:%.*s;", e->type,
                              (unsigned long long)e->sid, (unsigned long long)e->token,
                              (int)e->name.len, e->name.p);
    }
}

/* The same command to f and g: equal replies and events, or 0. */
static int both(struct fsm *f, struct fsm *g, const struct fsm_cmd *c)
{
    static char a[1 << 16], b[1 << 16];
    struct fsm_reply rf = apply_cmd(f, c);
    events_text(&EV, a, sizeof a);
    struct fsm_reply rg = apply_cmd(g, c);
    events_text(&EV, b, sizeof b);
    return rf.kind == rg.kind && rf.value == rg.value && strcmp(rf.err, rg.err) == 0 &&
           strcmp(a, b) == 0;
}

struct walk_log {
    char text[1 << 15];
    size_t len;
};

static void log_waiter(void *arg, const char *name, size_t n, uint64_t sid, uint64_t ms)
{
    struct walk_log *w = arg;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "w%.*s:%llu:%llu;",
                               (int)n, name, (unsigned long long)sid, (unsigned long long)ms);
}

static void log_delay(void *arg, const char *name, size_t n, uint64_t ms)
{
    struct walk_log *w = arg;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "d%.*s:%llu;", (int)n,
                               name, (unsigned long long)ms);
}

static void log_session(void *arg, uint64_t sid, uint64_t ttl)
{
    struct walk_log *w = arg;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "s%llu:%llu;",
                               (unsigned long long)sid, (unsigned long long)ttl);
}

static void walks(const struct fsm *f, struct walk_log *w)
{
    w->len = 0;
    w->text[0] = '\0';
    fsm_foreach_session(f, log_session, w);
    fsm_foreach_waiter(f, log_waiter, w);
    fsm_foreach_lockdelay(f, log_delay, w);
}

#define TWIN_LOCKS 200
#define TWIN_SESSIONS 6

/* Two replicas whose lock tables hash names under different keys, fed one log: many locks,
 * queues, expiries with lock-delay (each hands on many locks in one apply) and closes. Every
 * reply and event, the takeover walks (fsm_foreach_*) and the snapshots are identical. */
TEST_F(fsm_fx, replicas_with_different_hash_keys_agree_byte_for_byte)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint8_t kf[FSM_HASH_KEY_BYTES], kg[FSM_HASH_KEY_BYTES];
    for (int i = 0; i < FSM_HASH_KEY_BYTES; i++) {
        kf[i] = (uint8_t)(i + 1);
        kg[i] = (uint8_t)(0xee - i * 3);
    }
    CHECK(fsm_set_hash_key(f, kf) == 0 && fsm_set_hash_key(g, kg) == 0);
    uint64_t sid[TWIN_SESSIONS];
    for (int i = 0; i < TWIN_SESSIONS; i++) {
        struct fsm_cmd c = {
            .op = FSM_OP_SESSION_OPEN,
            .session_open = {.ttl_ms = 1000 + (uint64_t)i, .lockdelay_ms = i % 2 ? 300 : 0}};
        CHECK(both(f, g, &c));
        sid[i] = fsm_revision(f);
    }
    char name[32];
    int ok = 1;
    for (int i = 0; i < TWIN_LOCKS; i++) {
        snprintf(name, sizeof name, "twin/%d", (i * 7919) % 1000);
        for (int k = 0; k < 3; k++) { /* a holder and two waiters, from different sessions */
            struct fsm_cmd c = {.op = FSM_OP_LOCK,
                                .lock = {.name = S(name),
                                         .sid = sid[(i + k) % TWIN_SESSIONS],
                                         .wait_ms = k ? 5000 : 0}};
            ok &= both(f, g, &c);
        }
    }
    CHECK(ok);
    struct walk_log *wf = malloc(2 * sizeof *wf), *wg = wf + 1;
    fx->mem = wf; /* freed by the teardown, also after a failed CHECK */
    CHECK(wf);
    walks(f, wf);
    walks(g, wg);
    CHECK(strcmp(wf->text, wg->text) == 0);
    for (int i = 0; i < TWIN_SESSIONS; i++) {
        struct fsm_cmd c = {.op = i % 3 ? FSM_OP_SESSION_EXPIRE : FSM_OP_SESSION_CLOSE};
        c.session_close.sid = sid[i]; /* CLOSE and EXPIRE share the payload */
        ok &= both(f, g, &c);
        walks(f, wf);
        walks(g, wg);
        ok &= strcmp(wf->text, wg->text) == 0;
    }
    CHECK(ok);
    snapshot_into(f, &fx->before);
    CHECK(snapshot_equals(g, &fx->before));
    CHECK(invariants_hold(f) && invariants_hold(g));
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
    RUN_F(fsm_fx, names_that_collided_under_the_unkeyed_hash_spread_under_the_keyed_one);
    RUN_F(fsm_fx, replicas_with_different_hash_keys_agree_byte_for_byte);
    TEST_MAIN_END();
}
