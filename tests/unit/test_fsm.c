/*
 * test_fsm — one test per rule of the fencelock state machine (src/fsm/fsm.h).
 *
 * Commands go through the real encoder and fsm_apply; "changes nothing" is asserted by
 * comparing the revision and the snapshot bytes before and after. Every test also ends with
 * fsm_check_invariants.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/fsm.h"
#include "test.h"

static struct fsm_events EV; /* events of the last apply */

static struct fsm_str S(const char *s) {
    return (struct fsm_str){s, (uint32_t)strlen(s)};
}

static struct fsm_reply
apply_cmd(struct fsm *f, const struct fsm_cmd *c)
{
    struct buf b;
    struct fsm_reply r;
    buf_init(&b);
    if (fsm_cmd_encode(c, &b))
        abort();
    fsm_events_reset(&EV);
    fsm_apply(f, (const uint8_t *)b.p, b.len, &r, &EV);
    buf_free(&b);
    return r;
}

static uint64_t open_s(struct fsm *f, uint64_t ttl, uint64_t delay)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = ttl, .lockdelay_ms = delay}};
    struct fsm_reply r = apply_cmd(f, &c);
    return r.kind == FSM_REPLY_INT ? r.value : 0;
}

static struct fsm_reply lock_(struct fsm *f, const char *name, uint64_t sid, uint64_t wait)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

/* UNLOCK or CANCEL_WAIT of (name, sid), or LOCKDELAY_END of name (sid unused). */
static struct fsm_reply named(struct fsm *f, uint8_t op, const char *name, uint64_t sid)
{
    struct fsm_cmd c;
    memset(&c, 0, sizeof(c));
    c.op = op;
    struct fsm_cmd_lock_ref ref = {S(name), sid};
    if (op == FSM_OP_LOCKDELAY_END)
        c.lockdelay_end.name = ref.name;
    else if (op == FSM_OP_UNLOCK)
        c.unlock = ref;
    else
        c.cancel_wait = ref;
    return apply_cmd(f, &c);
}

/* SESSION_CLOSE or SESSION_EXPIRE of sid. */
static struct fsm_reply sess_op(struct fsm *f, uint8_t op, uint64_t sid)
{
    struct fsm_cmd c = {.op = op, .session_close = {.sid = sid}};
    if (op == FSM_OP_SESSION_EXPIRE)
        c.session_expire.sid = sid;
    return apply_cmd(f, &c);
}

static struct fsm_reply put_(struct fsm *f, const char *key, const char *val, uint64_t lease)
{
    struct fsm_cmd c = {.op = FSM_OP_PUT,
                        .put = {.key = S(key), .value = S(val), .lease_sid = lease}};
    return apply_cmd(f, &c);
}

static struct fsm_reply del_(struct fsm *f, const char *key)
{
    struct fsm_cmd c = {.op = FSM_OP_DEL, .del = {.key = S(key)}};
    return apply_cmd(f, &c);
}

/* The token of an INT reply, 0 otherwise. */
static uint64_t tok(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_INT ? r.value : 0;
}

static void snap(const struct fsm *f, struct buf *b)
{
    buf_init(b);
    if (fsm_snapshot(f, b))
        abort();
}

/* 1 if f's snapshot equals `b` byte for byte. */
static int same_snap(const struct fsm *f, const struct buf *b)
{
    struct buf now;
    snap(f, &now);
    int eq = now.len == b->len && memcmp(now.p, b->p, b->len) == 0;
    buf_free(&now);
    return eq;
}

static int inv_ok(const struct fsm *f)
{
    char err[200];
    if (fsm_check_invariants(f, err, sizeof(err)) == 0)
        return 1;
    fprintf(stderr, "  invariant: %s\n", err);
    return 0;
}

/* 1 if a copy restored from f's snapshot passes the audit and snapshots to the same bytes. */
static int restores_identically(const struct fsm *f)
{
    struct fsm *g = fsm_new();
    struct buf b;
    char err[128];
    snap(f, &b);
    int ok = fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0 &&
             same_snap(g, &b) && inv_ok(g);
    buf_free(&b);
    fsm_free(g);
    return ok;
}

static uint64_t holder(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) ? v.holder_sid : 0;
}

static int has_event(uint8_t type, uint64_t sid)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == type && (sid == 0 || EV.ev[i].sid == sid))
            return 1;
    return 0;
}

/* ---- locks ---- */

TEST(tokens_strictly_increase_per_lock_and_are_unique_across_locks)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    uint64_t prev = 0, seen[40];
    size_t n = 0;
    for (int i = 0; i < 10; i++) {
        uint64_t t1 = tok(lock_(f, "x", i % 2 ? a : b, 0));
        uint64_t t2 = tok(lock_(f, "y", i % 2 ? b : a, 0));
        CHECK(t1 > prev && t2 > 0);
        prev = t1;
        seen[n++] = t1;
        seen[n++] = t2;
        CHECK(named(f, FSM_OP_UNLOCK, "x", i % 2 ? a : b).kind == FSM_REPLY_OK);
        CHECK(named(f, FSM_OP_UNLOCK, "y", i % 2 ? b : a).kind == FSM_REPLY_OK);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(seen[i] != seen[j]);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(unlock_by_a_queued_session_leaves_the_queue_and_is_never_granted)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    uint64_t ta = tok(lock_(f, "L", a, 0));
    CHECK(ta);
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(named(f, FSM_OP_UNLOCK, "L", b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK(fsm_revision(f) > rev);
    CHECK_EQ_U64(holder(f, "L"), a); /* the holder keeps its lock and token */
    CHECK(fsm_fence_check(f, "L", 1, ta) == 0);
    CHECK_STR_PREFIX(named(f, FSM_OP_UNLOCK, "L", b).err, "NOTHOLDER"); /* only once */
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder(f, "L"), c);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(closed_session_is_never_granted_even_while_queued)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder(f, "L"), c);
    CHECK(lock_(f, "M", b, 0).kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(lock_(f, "M", b, 0).err, "NOSESSION");
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(expired_session_is_never_granted_even_while_queued)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, b).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder(f, "L"), c);
    /* the only waiter expires: the next unlock frees the lock instead of granting it */
    uint64_t d = open_s(f, 1000, 0);
    CHECK(lock_(f, "L", d, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, d).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_UNLOCK, "L", c).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, 0));
    CHECK_EQ_U64(holder(f, "L"), 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(unlock_by_non_holder_fails_with_notholder_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    for (int i = 0; i < 2; i++) {
        struct fsm_reply r = named(f, FSM_OP_UNLOCK, "L", c);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "NOTHOLDER");
        CHECK(EV.n == 0);
    }
    CHECK_STR_PREFIX(named(f, FSM_OP_UNLOCK, "nolock", a).err, "NOTHOLDER");
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(expiry_of_the_holder_grants_the_next_waiter)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    uint64_t t1 = tok(lock_(f, "L", a, 0));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder(f, "L"), b);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.token > t1 && v.token == fsm_revision(f));
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(lockdelay_holds_grants_after_expiry_and_its_end_grants_the_head)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 300), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0) && !has_event(FSM_EV_GRANTED, 0));
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.lockdelay_ms == 300);
    CHECK(v.holder_sid == 0 && v.n_waiters == 1);
    /* during the delay: busy for everyone */
    CHECK(lock_(f, "L", c, 0).kind == FSM_REPLY_NIL);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(holder(f, "L"), 0);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_ENDED, 0) && has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(holder(f, "L"), b);
    CHECK(fsm_lock_info(f, "L", 1, &v) && !v.in_lockdelay && v.n_waiters == 1);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(lockdelay_without_waiters_ends_by_dropping_the_lock)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 300);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay);
    uint64_t rev = fsm_revision(f);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK(!fsm_lock_info(f, "L", 1, &v));
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(lockdelay_end_is_idempotent)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 300), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    struct buf before;
    snap(f, &before);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "nolock", 0).kind == FSM_REPLY_OK);
    CHECK(EV.n == 0 && same_snap(f, &before));
    buf_free(&before);
    fsm_free(f);
}

TEST(no_lockdelay_after_clean_unlock_or_close)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 300), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK(tok(lock_(f, "L", b, 0)));
    CHECK(named(f, FSM_OP_UNLOCK, "L", b).kind == FSM_REPLY_OK);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK_EQ_U64(holder(f, "L"), b);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.locks_in_delay, 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(expiry_with_lockdelay_zero_grants_immediately)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_LOCKDELAY_STARTED, 0) && has_event(FSM_EV_GRANTED, b));
    fsm_free(f);
}

TEST(lock_by_holder_returns_its_token_and_queued_session_keeps_its_place)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    uint64_t t = tok(lock_(f, "L", a, 0));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    struct buf before;
    snap(f, &before);
    CHECK_EQ_U64(tok(lock_(f, "L", a, 0)), t);
    CHECK_EQ_U64(tok(lock_(f, "L", a, 100)), t);
    CHECK(lock_(f, "L", b, 9999).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", b, 0).kind == FSM_REPLY_NIL);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder(f, "L"), b); /* b kept its place ahead of c */
    fsm_free(f);
}

TEST(try_lock_on_busy_lock_returns_nil_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    CHECK(lock_(f, "L", b, 0).kind == FSM_REPLY_NIL);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(EV.n == 0 && same_snap(f, &before));
    buf_free(&before);
    fsm_free(f);
}

TEST(unlock_of_a_lock_without_waiters_deletes_it)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    uint64_t rev = fsm_revision(f);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_lock_view v;
    CHECK(!fsm_lock_info(f, "L", 1, &v));
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.locks_held, 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(unlock_grants_only_the_head_with_the_unlock_revision)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1); /* the grant's token is the only allocation */
    size_t grants = 0;
    for (size_t i = 0; i < EV.n; i++)
        grants += EV.ev[i].type == FSM_EV_GRANTED;
    CHECK_EQ_U64(grants, 1);
    CHECK(has_event(FSM_EV_GRANTED, b));
    fsm_free(f);
}

TEST(fifo_order_of_grants_across_five_waiters)
{
    struct fsm *f = fsm_new();
    uint64_t h = open_s(f, 1000, 0), w[5];
    CHECK(tok(lock_(f, "L", h, 0)));
    for (int i = 0; i < 5; i++) {
        w[i] = open_s(f, 1000, 0);
        CHECK(lock_(f, "L", w[i], 5000).kind == FSM_REPLY_QUEUED);
    }
    uint64_t cur = h, prev_token = 0;
    for (int i = 0; i < 5; i++) {
        CHECK(named(f, FSM_OP_UNLOCK, "L", cur).kind == FSM_REPLY_OK);
        CHECK_EQ_U64(holder(f, "L"), w[i]);
        struct fsm_lock_view v;
        CHECK(fsm_lock_info(f, "L", 1, &v) && v.token > prev_token);
        CHECK_EQ_U64(v.n_waiters, (uint64_t)(4 - i));
        prev_token = v.token;
        cur = w[i];
    }
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(cancel_after_grant_returns_the_token)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = named(f, FSM_OP_CANCEL_WAIT, "L", b);
    CHECK(r.kind == FSM_REPLY_INT && r.value == v.token);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK_EQ_U64(holder(f, "L"), b);
    fsm_free(f);
}

TEST(cancel_of_a_queued_waiter_removes_it)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 5000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "L", b).kind == FSM_REPLY_NIL);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.n_waiters == 1);
    /* a second cancel finds nothing: NIL, no change */
    struct buf before;
    snap(f, &before);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "L", b).kind == FSM_REPLY_NIL);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "nolock", b).kind == FSM_REPLY_NIL);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder(f, "L"), c);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(cancel_of_the_last_waiter_during_lockdelay_keeps_the_delay)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 300), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "L", b).kind == FSM_REPLY_NIL);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v) && v.in_lockdelay && v.n_waiters == 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(cancel_by_a_dead_session_is_nosession)
{
    struct fsm *f = fsm_new();
    struct fsm_reply r = named(f, FSM_OP_CANCEL_WAIT, "L", 77);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "NOSESSION");
    fsm_free(f);
}

TEST(commands_naming_a_dead_session_fail_with_nosession)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    uint64_t rev = fsm_revision(f);
    CHECK_STR_PREFIX(lock_(f, "L", a, 0).err, "NOSESSION");
    CHECK_STR_PREFIX(named(f, FSM_OP_UNLOCK, "L", a).err, "NOSESSION");
    CHECK_STR_PREFIX(sess_op(f, FSM_OP_SESSION_CLOSE, a).err, "NOSESSION");
    CHECK_STR_PREFIX(sess_op(f, FSM_OP_SESSION_EXPIRE, a).err, "NOSESSION");
    CHECK_STR_PREFIX(put_(f, "k", "v", a).err, "NOSESSION");
    struct fsm_cmd c = {.op = FSM_OP_NOOP, .req_sid = a, .req_seq = 1};
    CHECK_STR_PREFIX(apply_cmd(f, &c).err, "NOSESSION");
    CHECK_EQ_U64(fsm_revision(f), rev);
    fsm_free(f);
}

/* ---- sessions ---- */

TEST(session_ids_are_unique_and_increasing)
{
    struct fsm *f = fsm_new();
    uint64_t prev = 0;
    for (int i = 0; i < 50; i++) {
        uint64_t sid = open_s(f, 1000, 0);
        CHECK(sid > prev);
        CHECK_EQ_U64(sid, fsm_revision(f));
        prev = sid;
        if (i % 3 == 0)
            CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, sid).kind == FSM_REPLY_OK);
    }
    fsm_free(f);
}

TEST(session_open_requires_a_ttl)
{
    struct fsm *f = fsm_new();
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 0}};
    struct fsm_reply r = apply_cmd(f, &c);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR");
    CHECK_EQ_U64(fsm_revision(f), 0);
    struct fsm_cmd d = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = 1, .lockdelay_ms = 7, .name = S("worker")}};
    uint64_t sid = tok(apply_cmd(f, &d));
    struct fsm_session_view v;
    CHECK(fsm_session_info(f, sid, &v));
    CHECK(v.ttl_ms == 1 && v.lockdelay_ms == 7 && v.name.len == 6 &&
          !memcmp(v.name.p, "worker", 6));
    CHECK(has_event(FSM_EV_SESSION_OPENED, sid) && EV.ev[0].ms == 1);
    fsm_free(f);
}

TEST(close_releases_everything_the_session_owns)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L1", a, 0)) && tok(lock_(f, "L2", a, 0)) && tok(lock_(f, "M", b, 0)));
    CHECK(lock_(f, "M", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(tok(put_(f, "k", "v", a)));
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(st.sessions == 1 && st.locks_held == 1 && st.waiters == 0 && st.keys == 0);
    struct fsm_session_view v;
    CHECK(!fsm_session_info(f, a, &v));
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(close_hands_on_locks_in_grant_order)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    const char *names[] = {"zz", "aa", "mm"};
    for (int i = 0; i < 3; i++) {
        CHECK(tok(lock_(f, names[i], a, 0)));
        CHECK(lock_(f, names[i], b, 5000).kind == FSM_REPLY_QUEUED);
    }
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    int k = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < EV.n; i++) {
        if (EV.ev[i].type != FSM_EV_GRANTED)
            continue;
        CHECK(EV.ev[i].name.len == 2 && !memcmp(EV.ev[i].name.p, names[k], 2));
        CHECK(EV.ev[i].token > prev);
        prev = EV.ev[i].token;
        k++;
    }
    CHECK_EQ_U64(k, 3);
    fsm_free(f);
}

TEST(keys_leased_to_a_session_vanish_when_it_expires)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    CHECK(tok(put_(f, "k1", "v", a)) && tok(put_(f, "k2", "v", a)) && tok(put_(f, "k3", "v", 0)));
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(!fsm_kv_get(f, "k1", 2, &m) && !fsm_kv_get(f, "k2", 2, &m) && fsm_kv_get(f, "k3", 2, &m));
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(keys_leased_to_a_session_vanish_when_it_closes)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(put_(f, "k1", "v", a)) && tok(put_(f, "k2", "v", b)));
    CHECK(tok(put_(f, "k2", "v2", a))); /* re-leased: moves from b to a */
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, b).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k2", 2, &m) && m.lease_sid == a);
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    CHECK(!fsm_kv_get(f, "k1", 2, &m) && !fsm_kv_get(f, "k2", 2, &m));
    CHECK(inv_ok(f));
    fsm_free(f);
}

/* ---- KV ---- */

TEST(put_sets_revisions_and_versions)
{
    struct fsm *f = fsm_new();
    uint64_t r1 = tok(put_(f, "k", "a", 0));
    CHECK_EQ_U64(r1, fsm_revision(f));
    uint64_t r2 = tok(put_(f, "k", "bb", 0));
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m));
    CHECK(m.create_rev == r1 && m.mod_rev == r2 && m.version == 2 && m.value_len == 2);
    CHECK(!memcmp(m.value, "bb", 2) && m.lease_sid == 0);
    CHECK(tok(put_(f, "e", "", 0)) && fsm_kv_get(f, "e", 1, &m) && m.value_len == 0);
    fsm_free(f);
}

TEST(put_without_lease_detaches_the_key_from_its_session)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    CHECK(tok(put_(f, "k", "v", a)));
    CHECK(tok(put_(f, "k", "v", 0)));
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, a).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m) && m.lease_sid == 0);
    fsm_free(f);
}

TEST(del_of_absent_key_returns_zero_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    CHECK(tok(put_(f, "k", "v", 0)));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = del_(f, "nokey");
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    r = del_(f, "k");
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    fsm_free(f);
}

static struct fsm_reply fenced_put(struct fsm *f, const char *key, const char *lock, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S(key),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(lock), .fence_token = token}}};
    return apply_cmd(f, &c);
}

TEST(fenced_write_with_a_stale_token_fails_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    uint64_t old = tok(lock_(f, "L", a, 0));
    CHECK(lock_(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK); /* b now holds it */
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = fenced_put(f, "k", "L", old);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "STALE");
    CHECK(EV.n == 1 && EV.ev[0].type == FSM_EV_FENCE_REJECTED && EV.ev[0].token == old);
    CHECK(EV.ev[0].name.len == 1 && EV.ev[0].name.p[0] == 'L');
    CHECK_STR_PREFIX(fenced_put(f, "k", "nolock", 1).err, "STALE");
    struct fsm_cmd d = {
        .op = FSM_OP_DEL,
        .del = {.key = S("k"),
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = old}}};
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "STALE");
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    CHECK(fsm_fence_check(f, "L", 1, old) == -1);
    buf_free(&before);
    fsm_free(f);
}

TEST(fenced_write_with_the_current_token_succeeds)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    uint64_t t = tok(lock_(f, "L", a, 0));
    CHECK(fsm_fence_check(f, "L", 1, t) == 0);
    struct fsm_reply r = fenced_put(f, "k", "L", t);
    CHECK(r.kind == FSM_REPLY_INT && r.value == fsm_revision(f));
    struct fsm_cmd d = {
        .op = FSM_OP_DEL,
        .del = {.key = S("k"),
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = t}}};
    r = apply_cmd(f, &d);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
    fsm_free(f);
}

static struct fsm_reply ifrev_put(struct fsm *f, const char *key, uint64_t ifrev)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S(key), .value = S("v"), .cond = {.has_ifrev = true, .ifrev = ifrev}}};
    return apply_cmd(f, &c);
}

TEST(ifrev_mismatch_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t r1 = tok(put_(f, "k", "v", 0));
    struct buf before;
    snap(f, &before);
    CHECK_STR_PREFIX(ifrev_put(f, "k", r1 + 5).err, "IFREV");
    CHECK_STR_PREFIX(ifrev_put(f, "absent", 3).err, "IFREV");
    struct fsm_cmd d = {.op = FSM_OP_DEL,
                        .del = {.key = S("k"), .cond = {.has_ifrev = true, .ifrev = r1 + 1}}};
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "IFREV");
    d.del.key = S("absent");
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "IFREV");
    CHECK(same_snap(f, &before));
    CHECK(tok(ifrev_put(f, "k", r1)) == fsm_revision(f));
    d.del.key = S("k");
    d.del.cond.ifrev = fsm_revision(f);
    CHECK(tok(apply_cmd(f, &d)) == 1);
    buf_free(&before);
    fsm_free(f);
}

TEST(ifrev_zero_is_create_only)
{
    struct fsm *f = fsm_new();
    CHECK(tok(ifrev_put(f, "k", 0)));
    uint64_t rev = fsm_revision(f);
    CHECK_STR_PREFIX(ifrev_put(f, "k", 0).err, "IFREV");
    CHECK_EQ_U64(fsm_revision(f), rev);
    struct fsm_cmd d = {.op = FSM_OP_DEL,
                        .del = {.key = S("absent"), .cond = {.has_ifrev = true, .ifrev = 0}}};
    struct fsm_reply r = apply_cmd(f, &d);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    fsm_free(f);
}

struct scan_acc {
    char keys[16][8];
    int n;
};

static int scan_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    struct scan_acc *a = arg;
    (void)m;
    if (a->n < 16 && keylen < 8) {
        memcpy(a->keys[a->n], key, keylen);
        a->keys[a->n][keylen] = '\0';
    }
    a->n++;
    return 0;
}

TEST(keys_scan_honours_prefix_limit_and_byte_order)
{
    struct fsm *f = fsm_new();
    const char *ks[] = {"b2", "a", "b10", "b", "c", "b1", "ba", "\x7f"};
    for (int i = 0; i < 8; i++)
        CHECK(tok(put_(f, ks[i], "v", 0)));
    struct scan_acc acc = {0};
    CHECK_EQ_U64(fsm_kv_scan(f, "b", 1, 0, scan_cb, &acc), 5);
    const char *want[] = {"b", "b1", "b10", "b2", "ba"};
    for (int i = 0; i < 5; i++)
        CHECK(strcmp(acc.keys[i], want[i]) == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "b", 1, 2, scan_cb, &acc), 2);
    CHECK(strcmp(acc.keys[1], "b1") == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "", 0, 0, scan_cb, &acc), 8);
    CHECK(strcmp(acc.keys[0], "a") == 0 && strcmp(acc.keys[7], "\x7f") == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "zz", 2, 0, scan_cb, &acc), 0);
    CHECK_EQ_U64(fsm_kv_scan(f, "b10x", 4, 0, scan_cb, &acc), 0);
    fsm_free(f);
}

static int stop_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    (void)key, (void)keylen, (void)m;
    return ++*(int *)arg >= 2;
}

TEST(keys_scan_stops_when_the_callback_asks)
{
    struct fsm *f = fsm_new();
    for (char k[2] = "a"; k[0] <= 'j'; k[0]++)
        CHECK(tok(put_(f, k, "v", 0)));
    int calls = 0;
    CHECK_EQ_U64(fsm_kv_scan(f, "", 0, 0, stop_cb, &calls), 2);
    fsm_free(f);
}

/* ---- exactly-once ---- */

static struct fsm_reply req(struct fsm *f, struct fsm_cmd c, uint64_t sid, uint64_t seq)
{
    c.req_sid = sid;
    c.req_seq = seq;
    return apply_cmd(f, &c);
}

TEST(repeated_req_returns_the_cached_reply_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .put = {.key = S("k"), .value = S("v")}};
    struct fsm_reply r1 = req(f, p, a, 5);
    CHECK(r1.kind == FSM_REPLY_INT);
    struct buf before;
    snap(f, &before);
    struct fsm_reply r2 = req(f, p, a, 5);
    CHECK(r2.kind == FSM_REPLY_INT && r2.value == r1.value);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m) && m.version == 1);
    CHECK(same_snap(f, &before) && EV.n == 0);
    buf_free(&before);
    fsm_free(f);
}

TEST(req_caches_error_replies_too)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    struct fsm_cmd u = {.op = FSM_OP_UNLOCK, .unlock = {.name = S("L"), .sid = a}};
    struct fsm_reply r1 = req(f, u, a, 1);
    CHECK(r1.kind == FSM_REPLY_ERR);
    CHECK(tok(lock_(f, "L", a, 0)));
    struct fsm_reply r2 = req(f, u, a, 1); /* replayed, not applied: a keeps the lock */
    CHECK(r2.kind == FSM_REPLY_ERR && strcmp(r1.err, r2.err) == 0);
    CHECK_EQ_U64(holder(f, "L"), a);
    fsm_free(f);
}

TEST(superseded_req_seq_is_rejected)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .put = {.key = S("k"), .value = S("v")}};
    CHECK(tok(req(f, p, a, 10)));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = req(f, p, a, 9);
    CHECK(r.kind == FSM_REPLY_ERR && strcmp(r.err, "ERR request seq already superseded") == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(tok(req(f, p, a, 12)) == rev + 1); /* seqs need not be contiguous */
    fsm_free(f);
}

TEST(lock_retry_with_cached_queued_answers_the_current_truth)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    struct fsm_cmd l = {.op = FSM_OP_LOCK, .lock = {.name = S("L"), .sid = b, .wait_ms = 5000}};
    CHECK(req(f, l, b, 1).kind == FSM_REPLY_QUEUED);
    CHECK(req(f, l, b, 1).kind == FSM_REPLY_QUEUED);
    CHECK(named(f, FSM_OP_UNLOCK, "L", a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v));
    struct fsm_reply r = req(f, l, b, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == v.token);
    /* and NIL once the wait ended without a grant */
    uint64_t c = open_s(f, 1000, 0);
    l.lock.sid = c;
    CHECK(req(f, l, c, 1).kind == FSM_REPLY_QUEUED);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "L", c).kind == FSM_REPLY_NIL);
    CHECK(req(f, l, c, 1).kind == FSM_REPLY_NIL);
    fsm_free(f);
}

TEST(req_with_only_one_of_sid_and_seq_is_a_bad_entry)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .req_sid = a, .put = {.key = S("k"), .value = S("v")}};
    struct fsm_reply r = apply_cmd(f, &p);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR bad entry");
    p.req_sid = 0;
    p.req_seq = 3;
    CHECK_STR_PREFIX(apply_cmd(f, &p).err, "ERR bad entry");
    fsm_free(f);
}

TEST(close_of_the_req_session_itself_records_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    struct fsm_cmd c = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = a}};
    CHECK(req(f, c, a, 1).kind == FSM_REPLY_OK);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.sessions, 0);
    CHECK_STR_PREFIX(req(f, c, a, 1).err, "NOSESSION");
    CHECK(inv_ok(f));
    fsm_free(f);
}

/* ---- codec ---- */

static int same_str(struct fsm_str a, struct fsm_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static int same_cond(const struct fsm_kv_cond *a, const struct fsm_kv_cond *b)
{
    return a->has_fence == b->has_fence && same_str(a->fence_name, b->fence_name) &&
           a->fence_token == b->fence_token && a->has_ifrev == b->has_ifrev && a->ifrev == b->ifrev;
}

static int same_lock_ref(const struct fsm_cmd_lock_ref *a, const struct fsm_cmd_lock_ref *b)
{
    return same_str(a->name, b->name) && a->sid == b->sid;
}

/* Every payload field of a's op equal in b (strings by content). */
static int same_payload(const struct fsm_cmd *a, const struct fsm_cmd *b)
{
    switch (a->op) {
    case FSM_OP_SESSION_OPEN:
        return a->session_open.ttl_ms == b->session_open.ttl_ms &&
               a->session_open.lockdelay_ms == b->session_open.lockdelay_ms &&
               same_str(a->session_open.name, b->session_open.name);
    case FSM_OP_SESSION_CLOSE:
        return a->session_close.sid == b->session_close.sid;
    case FSM_OP_SESSION_EXPIRE:
        return a->session_expire.sid == b->session_expire.sid;
    case FSM_OP_SESSION_CHECKPOINT:
        return a->session_checkpoint.sid == b->session_checkpoint.sid &&
               a->session_checkpoint.remaining_ms == b->session_checkpoint.remaining_ms;
    case FSM_OP_LOCK:
        return same_str(a->lock.name, b->lock.name) && a->lock.sid == b->lock.sid &&
               a->lock.wait_ms == b->lock.wait_ms;
    case FSM_OP_UNLOCK:
        return same_lock_ref(&a->unlock, &b->unlock);
    case FSM_OP_CANCEL_WAIT:
        return same_lock_ref(&a->cancel_wait, &b->cancel_wait);
    case FSM_OP_LOCKDELAY_END:
        return same_str(a->lockdelay_end.name, b->lockdelay_end.name);
    case FSM_OP_PUT:
        return same_str(a->put.key, b->put.key) && same_str(a->put.value, b->put.value) &&
               a->put.lease_sid == b->put.lease_sid && same_cond(&a->put.cond, &b->put.cond);
    case FSM_OP_DEL:
        return same_str(a->del.key, b->del.key) && same_cond(&a->del.cond, &b->del.cond);
    case FSM_OP_MEMBER_SET:
        return a->member_set.id == b->member_set.id &&
               same_str(a->member_set.client_addr, b->member_set.client_addr) &&
               same_str(a->member_set.raft_addr, b->member_set.raft_addr);
    case FSM_OP_MEMBER_DEL:
        return a->member_del.id == b->member_del.id;
    default:
        return 1;
    }
}

TEST(encode_decode_round_trips_every_op)
{
    struct fsm_cmd cs[] = {
        {.op = FSM_OP_NOOP, .now_ms = 1},
        {.op = FSM_OP_SESSION_OPEN,
         .session_open = {.ttl_ms = 10, .lockdelay_ms = 3, .name = S("n")}},
        {.op = FSM_OP_SESSION_CLOSE,
         .req_sid = 300,
         .req_seq = 1ull << 63,
         .session_close = {.sid = 300}},
        {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = 4}},
        {.op = FSM_OP_LOCK,
         .now_ms = UINT64_MAX,
         .lock = {.name = S("lk"), .sid = 5, .wait_ms = 100}},
        {.op = FSM_OP_UNLOCK, .unlock = {.name = S("lk"), .sid = 5}},
        {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = S("lk"), .sid = 5}},
        {.op = FSM_OP_LOCKDELAY_END, .lockdelay_end = {.name = S("lk")}},
        {.op = FSM_OP_PUT,
         .put = {.key = S("k"),
                 .value = S(""),
                 .lease_sid = 9,
                 .cond = {.has_fence = true,
                          .fence_name = S("lk"),
                          .fence_token = 7,
                          .has_ifrev = true,
                          .ifrev = 0}}},
        {.op = FSM_OP_DEL, .del = {.key = S("k"), .cond = {.has_ifrev = true, .ifrev = 12}}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 3,
                        .client_addr = S("10.0.0.3:7000"),
                        .raft_addr = S("10.0.0.3:7001")}},
        {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 1ull << 40}},
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        struct buf b, b2;
        struct fsm_cmd d;
        char err[64];
        buf_init(&b);
        buf_init(&b2);
        CHECK(fsm_cmd_encode(&cs[i], &b) == 0);
        CHECK(fsm_cmd_decode((const uint8_t *)b.p, b.len, &d, err, sizeof(err)) == 0);
        CHECK(d.op == cs[i].op && d.now_ms == cs[i].now_ms);
        CHECK(d.req_sid == cs[i].req_sid && d.req_seq == cs[i].req_seq);
        CHECK(same_payload(&d, &cs[i]));
        CHECK(fsm_cmd_encode(&d, &b2) == 0);
        CHECK(b.len == b2.len && memcmp(b.p, b2.p, b.len) == 0);
        buf_free(&b);
        buf_free(&b2);
    }
}

static int decodes(const void *p, size_t n)
{
    struct fsm_cmd c;
    char err[64];
    return fsm_cmd_decode(p, n, &c, err, sizeof(err)) == 0;
}

TEST(decode_rejects_truncated_unknown_and_trailing_entries)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("key"),
                .value = S("value"),
                .lease_sid = 300,
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = 1000}}};
    struct buf b;
    buf_init(&b);
    CHECK(fsm_cmd_encode(&c, &b) == 0);
    CHECK(decodes(b.p, b.len));
    for (size_t n = 0; n < b.len; n++)
        CHECK(!decodes(b.p, n));
    buf_put_u8(&b, 0);
    CHECK(!decodes(b.p, b.len)); /* trailing byte */
    b.len--;
    b.p[0] = 2;
    CHECK(!decodes(b.p, b.len)); /* unknown version */
    b.p[0] = FSM_CMD_VERSION;
    b.p[1] = FSM_OP__COUNT;
    CHECK(!decodes(b.p, b.len));                         /* unknown op */
    const uint8_t noncanon[] = {1, 0, 0x80, 0x00, 0, 0}; /* now_ms 0 in two bytes */
    CHECK(!decodes(noncanon, sizeof(noncanon)));
    const uint8_t badflags[] = {1, FSM_OP_DEL, 0, 0, 0, 1, 'k', 4};
    CHECK(!decodes(badflags, sizeof(badflags)));
    const uint8_t emptyname[] = {1, FSM_OP_LOCKDELAY_END, 0, 0, 0, 0};
    CHECK(!decodes(emptyname, sizeof(emptyname)));
    buf_free(&b);
}

TEST(decode_enforces_name_and_value_limits)
{
    char *big = malloc(FSM_MAX_NAME + 1);
    CHECK(big);
    memset(big, 'x', FSM_MAX_NAME + 1);
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.sid = 1, .name = {big, FSM_MAX_NAME}}};
    struct buf b;
    buf_init(&b);
    CHECK(fsm_cmd_encode(&c, &b) == 0 && decodes(b.p, b.len));
    buf_reset(&b);
    c.lock.name.len = FSM_MAX_NAME + 1;
    CHECK(fsm_cmd_encode(&c, &b) == 0 && !decodes(b.p, b.len));
    buf_free(&b);
    free(big);
}

TEST(apply_of_garbage_replies_bad_entry_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)));
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    const char *garbage[] = {
        "", "\x01", "\x01\x04", "\x02\x00\x00\x00\x00", "hello world", "\x01\x05\x00\x00\x00\x01L"};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        struct fsm_reply r;
        fsm_events_reset(&EV);
        fsm_apply(f, (const uint8_t *)garbage[i], strlen(garbage[i]), &r, &EV);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "ERR bad entry: ");
        CHECK(EV.n == 0);
    }
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    fsm_free(f);
}

TEST(noop_and_no_op_outcomes_do_not_bump_the_revision)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 0);
    uint64_t rev = fsm_revision(f);
    struct fsm_cmd n = {.op = FSM_OP_NOOP};
    CHECK(apply_cmd(f, &n).kind == FSM_REPLY_OK);
    CHECK(named(f, FSM_OP_CANCEL_WAIT, "L", a).kind == FSM_REPLY_NIL);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    CHECK(del_(f, "k").value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    fsm_free(f);
}

/* ---- snapshots ---- */

/* Sessions with names and request tables, held/queued/delayed locks, leased and plain keys. */
static void build_rich(struct fsm *f, uint64_t *sids)
{
    for (int i = 0; i < 6; i++)
        sids[i] = open_s(f, 1000 + (uint64_t)i, i % 2 ? 250 : 0);
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "lock/%d", (i * 7) % 12);
        lock_(f, name, sids[i % 6], 0);
        lock_(f, name, sids[(i + 1) % 6], 1000);
        lock_(f, name, sids[(i + 3) % 6], 2000);
    }
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "key/%02d", (i * 13) % 20);
        struct fsm_cmd c = {
            .op = FSM_OP_PUT,
            .put = {.key = S(name), .value = S(name), .lease_sid = i % 3 ? sids[i % 6] : 0}};
        apply_cmd(f, &c);
        if (i % 4 == 0)
            apply_cmd(f, &c);
    }
    struct fsm_cmd r = {.op = FSM_OP_UNLOCK,
                        .req_sid = sids[2],
                        .req_seq = 4,
                        .unlock = {.name = S("nope"), .sid = sids[2]}};
    apply_cmd(f, &r); /* cached ERR */
    struct fsm_cmd q = {.op = FSM_OP_LOCK,
                        .req_sid = sids[4],
                        .req_seq = 2,
                        .lock = {.name = S("lock/0"), .sid = sids[4], .wait_ms = 9}};
    apply_cmd(f, &q);                           /* cached QUEUED or INT */
    sess_op(f, FSM_OP_SESSION_EXPIRE, sids[1]); /* lock-delay on its locks */
}

TEST(snapshot_restore_snapshot_is_byte_identical)
{
    struct fsm *f = fsm_new(), *g = fsm_new();
    uint64_t sids[6];
    build_rich(f, sids);
    CHECK(inv_ok(f));
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(st.sessions == 5 && st.locks_held > 0 && st.waiters > 0 && st.locks_in_delay > 0);
    struct buf b;
    char err[128];
    snap(f, &b);
    CHECK(fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0);
    CHECK(inv_ok(g));
    CHECK(same_snap(g, &b));
    CHECK_EQ_U64(fsm_revision(g), fsm_revision(f));
    /* the copy behaves the same: close every session on both, compare replies and events */
    for (int i = 0; i < 6; i++) {
        struct fsm_reply r1 = sess_op(f, FSM_OP_SESSION_CLOSE, sids[i]);
        size_t n1 = EV.n;
        struct fsm_reply r2 = sess_op(g, FSM_OP_SESSION_CLOSE, sids[i]);
        CHECK(r1.kind == r2.kind && r1.value == r2.value && n1 == EV.n);
    }
    buf_free(&b);
    snap(f, &b);
    CHECK(same_snap(g, &b));
    buf_free(&b);
    fsm_free(f);
    fsm_free(g);
}

TEST(restore_of_garbage_or_truncated_snapshot_fails_and_leaves_state_unchanged)
{
    struct fsm *f = fsm_new(), *g = fsm_new();
    uint64_t sids[6];
    build_rich(f, sids);
    open_s(g, 500, 0);
    struct buf b, gb;
    char err[128];
    snap(f, &b);
    snap(g, &gb);
    for (size_t n = 0; n < b.len; n++) {
        CHECK(fsm_restore(g, (const uint8_t *)b.p, n, err, sizeof(err)) == -1);
        CHECK(err[0] != '\0');
    }
    buf_put_u8(&b, 0);
    CHECK(fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == -1);
    b.len--;
    /* flip every byte: whatever is accepted must be self-consistent */
    for (size_t i = 0; i < b.len; i++) {
        b.p[i] ^= 0x5a;
        struct fsm *h = fsm_new();
        if (fsm_restore(h, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0) {
            CHECK(inv_ok(h));
            CHECK(same_snap(h, &b));
        }
        fsm_free(h);
        b.p[i] ^= 0x5a;
    }
    CHECK(fsm_restore(g, (const uint8_t *)"garbage!", 8, err, sizeof(err)) == -1);
    CHECK(same_snap(g, &gb));
    CHECK(inv_ok(g));
    buf_free(&b);
    buf_free(&gb);
    fsm_free(f);
    fsm_free(g);
}

/* Hand-made snapshots that parse but break a rule must be refused. */
static int restores(const uint8_t *p, size_t n)
{
    struct fsm *g = fsm_new();
    char err[128];
    int ok = fsm_restore(g, p, n, err, sizeof(err)) == 0;
    fsm_free(g);
    return ok;
}

TEST(restore_rejects_snapshots_that_break_a_rule)
{
    /* header, rev 5, one session sid 1 ttl 1 (lockdelay, checkpoint, name, req seq: 0) */
#define HDR 'F', 'L', 'S', 'M', 2, 5, 1, 1, 1, 0, 0, 0, 0
    const uint8_t ok[] = {HDR, 1, 1, 'L', 1, 2, 0, 0, 0, 0, 0};          /* L held by 1, token 2 */
    const uint8_t dead_holder[] = {HDR, 1, 1, 'L', 7, 2, 0, 0, 0, 0, 0}; /* held by sid 7 */
    const uint8_t free_lock[] = {HDR, 1, 1, 'L', 0, 0, 0, 0, 0};         /* stored free lock */
    const uint8_t big_token[] = {HDR, 1, 1, 'L', 1, 9, 0, 0, 0, 0, 0};   /* token > revision */
    const uint8_t dup_rev[] = {HDR, 1, 1, 'L', 1, 1, 0, 0, 0, 0, 0};     /* token == sid */
    const uint8_t self_wait[] = {HDR, 1, 1, 'L', 1, 2, 0, 0, 1, 1, 5, 3, 0, 0};
    const uint8_t dup_sess[] = {'F', 'L', 'S', 'M', 2, 5, 2, 1, 1, 0, 0, 0,
                                0,   1,   1,   0,   0, 0, 0, 0, 0, 0, 0};
    CHECK(restores(ok, sizeof(ok)));
    CHECK(!restores(dead_holder, sizeof(dead_holder)));
    CHECK(!restores(free_lock, sizeof(free_lock)));
    CHECK(!restores(big_token, sizeof(big_token)));
    CHECK(!restores(dup_rev, sizeof(dup_rev)));
    CHECK(!restores(self_wait, sizeof(self_wait)));
    CHECK(!restores(dup_sess, sizeof(dup_sess)));
#undef HDR
}

/* ---- member table ---- */

static struct fsm_reply mset(struct fsm *f, uint64_t id, const char *client, const char *raft)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_SET,
                        .member_set = {.id = id, .client_addr = S(client), .raft_addr = S(raft)}};
    return apply_cmd(f, &c);
}

static struct fsm_reply mdel(struct fsm *f, uint64_t id)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = id}};
    return apply_cmd(f, &c);
}

/* 1 if member `id` exists with exactly these addresses. */
static int member_is(const struct fsm *f, uint64_t id, const char *client, const char *raft)
{
    struct fsm_member_view v;
    if (!fsm_member_get(f, id, &v))
        return 0;
    return v.id == id && v.client_addr.len == strlen(client) &&
           memcmp(v.client_addr.p, client, v.client_addr.len) == 0 &&
           v.raft_addr.len == strlen(raft) && memcmp(v.raft_addr.p, raft, v.raft_addr.len) == 0;
}

struct mids {
    uint64_t id[FSM_MAX_MEMBERS + 1];
    size_t n;
};

static void mids_cb(void *arg, const struct fsm_member_view *v)
{
    struct mids *m = arg;
    if (m->n <= FSM_MAX_MEMBERS)
        m->id[m->n] = v->id;
    m->n++;
}

TEST(member_set_inserts_and_replaces_and_get_returns_the_entry)
{
    struct fsm *f = fsm_new();
    CHECK(mset(f, 3, "c3:1", "r3:2").kind == FSM_REPLY_OK);
    CHECK(mset(f, 1, "c1:1", "r1:2").kind == FSM_REPLY_OK);
    CHECK(mset(f, 2, "c2:1", "r2:2").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 3);
    CHECK(EV.n == 0);
    struct mids m = {.n = 0};
    fsm_foreach_member(f, mids_cb, &m);
    CHECK(m.n == 3 && m.id[0] == 1 && m.id[1] == 2 && m.id[2] == 3);
    CHECK(member_is(f, 2, "c2:1", "r2:2"));
    /* replacing one address takes exactly one revision and changes only that entry */
    CHECK(mset(f, 2, "c2:9", "r2:2").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 4);
    CHECK(member_is(f, 2, "c2:9", "r2:2"));
    CHECK(mset(f, 2, "c2:9", "r2:8").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 5);
    CHECK(member_is(f, 2, "c2:9", "r2:8"));
    CHECK(member_is(f, 1, "c1:1", "r1:2") && member_is(f, 3, "c3:1", "r3:2"));
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 4, &v) == 0 && fsm_member_get(f, 0, &v) == 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(member_reannounce_of_the_identical_entry_changes_nothing)
{
    struct fsm *f = fsm_new();
    CHECK(mset(f, 7, "host:6379", "host:7379").kind == FSM_REPLY_OK);
    CHECK(mset(f, 9, "other:6379", "other:7379").kind == FSM_REPLY_OK);
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    for (int i = 0; i < 3; i++) {
        CHECK(mset(f, 7, "host:6379", "host:7379").kind == FSM_REPLY_OK);
        CHECK(EV.n == 0);
    }
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(member_del_removes_a_present_member_and_ignores_an_absent_one)
{
    struct fsm *f = fsm_new();
    CHECK(mset(f, 1, "a", "b").kind == FSM_REPLY_OK);
    CHECK(mset(f, 2, "c", "d").kind == FSM_REPLY_OK);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = mdel(f, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 1, &v) == 0 && member_is(f, 2, "c", "d"));
    struct buf before;
    snap(f, &before);
    r = mdel(f, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    r = mdel(f, 99);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(member_table_full_rejects_a_new_id_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    char a[32];
    for (uint64_t i = 1; i <= FSM_MAX_MEMBERS; i++) {
        snprintf(a, sizeof(a), "n%llu:1", (unsigned long long)i);
        CHECK(mset(f, i * 10, a, a).kind == FSM_REPLY_OK);
    }
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = mset(f, 5, "new:1", "new:2"); /* would sort first */
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK(strcmp(r.err, "ERR member table full") == 0);
    r = mset(f, 10 * FSM_MAX_MEMBERS + 1, "new:1", "new:2"); /* would sort last */
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 5, &v) == 0);
    buf_free(&before);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(member_full_table_still_replaces_an_existing_id)
{
    struct fsm *f = fsm_new();
    for (uint64_t i = 1; i <= FSM_MAX_MEMBERS; i++)
        CHECK(mset(f, i, "x", "y").kind == FSM_REPLY_OK);
    CHECK(mset(f, 17, "moved:1", "moved:2").kind == FSM_REPLY_OK);
    CHECK(member_is(f, 17, "moved:1", "moved:2"));
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(decode_rejects_bad_member_entries)
{
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'h', sizeof(big));
    struct fsm_str max = {big, FSM_MAX_ADDR}, over = {big, FSM_MAX_ADDR + 1};
    struct fsm_cmd good = {.op = FSM_OP_MEMBER_SET,
                           .member_set = {.id = 1, .client_addr = max, .raft_addr = max}};
    struct fsm_cmd bad[] = {
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S(""), .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S("c"), .raft_addr = S("")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = over, .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S("c"), .raft_addr = over}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 0, .client_addr = S("c"), .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 0}},
    };
    struct buf b;
    buf_init(&b);
    CHECK(fsm_cmd_encode(&good, &b) == 0 && decodes(b.p, b.len));
    for (size_t n = 0; n < b.len; n++)
        CHECK(!decodes(b.p, n));
    buf_put_u8(&b, 0);
    CHECK(!decodes(b.p, b.len)); /* trailing byte */
    struct fsm *f = fsm_new();
    CHECK(mset(f, 4, "c", "r").kind == FSM_REPLY_OK);
    struct buf before;
    snap(f, &before);
    uint64_t rev = fsm_revision(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(&b);
        CHECK(fsm_cmd_encode(&bad[i], &b) == 0);
        CHECK(!decodes(b.p, b.len));
        struct fsm_reply r;
        fsm_events_reset(&EV);
        fsm_apply(f, (const uint8_t *)b.p, b.len, &r, &EV);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "ERR bad entry: ");
    }
    const uint8_t noncanon_id[] = {1, FSM_OP_MEMBER_DEL, 0, 0, 0, 0x81, 0x00}; /* id 1, 2 bytes */
    CHECK(!decodes(noncanon_id, sizeof(noncanon_id)));
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(same_snap(f, &before));
    buf_free(&before);
    buf_free(&b);
    fsm_free(f);
}

TEST(snapshot_restore_snapshot_with_members_is_byte_identical)
{
    struct fsm *f = fsm_new(), *g = fsm_new();
    uint64_t sids[6];
    build_rich(f, sids);
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'z', FSM_MAX_ADDR);
    big[FSM_MAX_ADDR] = '\0';
    CHECK(mset(f, 5, "10.0.0.5:6379", "10.0.0.5:7379").kind == FSM_REPLY_OK);
    CHECK(mset(f, 1ull << 50, big, "r").kind == FSM_REPLY_OK);
    CHECK(mset(f, 2, "c", big).kind == FSM_REPLY_OK);
    CHECK(mset(f, 9, "gone", "gone").kind == FSM_REPLY_OK);
    CHECK(mdel(f, 9).value == 1);
    CHECK(inv_ok(f));
    struct buf b;
    char err[128];
    snap(f, &b);
    CHECK(fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0);
    CHECK(inv_ok(g));
    CHECK(same_snap(g, &b));
    CHECK_EQ_U64(fsm_revision(g), fsm_revision(f));
    CHECK(member_is(g, 5, "10.0.0.5:6379", "10.0.0.5:7379"));
    CHECK(member_is(g, 1ull << 50, big, "r") && member_is(g, 2, "c", big));
    struct mids m = {.n = 0};
    fsm_foreach_member(g, mids_cb, &m);
    CHECK(m.n == 3 && m.id[0] == 2 && m.id[1] == 5 && m.id[2] == 1ull << 50);
    /* the copy behaves the same */
    CHECK(mset(g, 5, "10.0.0.5:6379", "10.0.0.5:7379").kind == FSM_REPLY_OK);
    CHECK(same_snap(g, &b));
    buf_free(&b);
    fsm_free(f);
    fsm_free(g);
}

TEST(restore_rejects_bad_member_tables)
{
    /* rev 0, no sessions, locks or keys, then the member table */
#define MHDR 'F', 'L', 'S', 'M', 2, 0, 0, 0, 0
    const uint8_t ok[] = {MHDR, 2, 1, 1, 'c', 1, 'r', 3, 1, 'c', 1, 'r'};
    const uint8_t v1[] = {'F', 'L', 'S', 'M', 1,   0, 0, 0,   0, 2,
                          1,   1,   'c', 1,   'r', 3, 1, 'c', 1, 'r'};
    const uint8_t unsorted[] = {MHDR, 2, 3, 1, 'c', 1, 'r', 1, 1, 'c', 1, 'r'};
    const uint8_t dup[] = {MHDR, 2, 1, 1, 'c', 1, 'r', 1, 1, 'c', 1, 'r'};
    const uint8_t id0[] = {MHDR, 1, 0, 1, 'c', 1, 'r'};
    const uint8_t empty_client[] = {MHDR, 1, 1, 0, 1, 'r'};
    const uint8_t empty_raft[] = {MHDR, 1, 1, 1, 'c', 0};
    CHECK(restores(ok, sizeof(ok)));
    CHECK(!restores(v1, sizeof(v1)));
    CHECK(!restores(unsorted, sizeof(unsorted)));
    CHECK(!restores(dup, sizeof(dup)));
    CHECK(!restores(id0, sizeof(id0)));
    CHECK(!restores(empty_client, sizeof(empty_client)));
    CHECK(!restores(empty_raft, sizeof(empty_raft)));
#undef MHDR
    /* an address over FSM_MAX_ADDR, and more than FSM_MAX_MEMBERS entries */
    struct buf b;
    buf_init(&b);
    buf_append(&b, "FLSM\x02\0\0\0\0", 9);
    buf_put_varint(&b, 1);
    buf_put_varint(&b, 1);
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'a', sizeof(big));
    buf_put_bytes(&b, big, FSM_MAX_ADDR);
    buf_put_bytes(&b, "r", 1);
    CHECK(restores((const uint8_t *)b.p, b.len));
    buf_reset(&b);
    buf_append(&b, "FLSM\x02\0\0\0\0", 9);
    buf_put_varint(&b, 1);
    buf_put_varint(&b, 1);
    buf_put_bytes(&b, big, FSM_MAX_ADDR + 1);
    buf_put_bytes(&b, "r", 1);
    CHECK(!restores((const uint8_t *)b.p, b.len));
    for (int full = 0; full < 2; full++) {
        uint64_t n = FSM_MAX_MEMBERS + (uint64_t)!full;
        buf_reset(&b);
        buf_append(&b, "FLSM\x02\0\0\0\0", 9);
        buf_put_varint(&b, n);
        for (uint64_t i = 1; i <= n; i++) {
            buf_put_varint(&b, i);
            buf_put_bytes(&b, "c", 1);
            buf_put_bytes(&b, "r", 1);
        }
        CHECK(restores((const uint8_t *)b.p, b.len) == full);
    }
    buf_free(&b);
}

TEST(revision_counter_never_wraps)
{
    /* a snapshot at revision 2^64-2 with no sessions, locks, keys or members */
    struct buf b;
    buf_init(&b);
    buf_append(&b, "FLSM\x02", 5);
    buf_put_varint(&b, UINT64_MAX - 1);
    buf_append(&b, "\0\0\0\0", 4);
    struct fsm *f = fsm_new();
    char err[128];
    CHECK(fsm_restore(f, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0);
    buf_free(&b);
    CHECK_EQ_U64(fsm_revision(f), UINT64_MAX - 1);
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 5}};
    struct fsm_reply r = apply_cmd(f, &c);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_EQ_U64(fsm_revision(f), UINT64_MAX - 1);
    CHECK(inv_ok(f));
    fsm_free(f);
}

/* ---- events ---- */

static int ev_is(size_t i, uint8_t type, uint64_t sid, const char *name)
{
    if (i >= EV.n || EV.ev[i].type != type || EV.ev[i].sid != sid)
        return 0;
    return !name ||
           (EV.ev[i].name.len == strlen(name) && !memcmp(EV.ev[i].name.p, name, strlen(name)));
}

TEST(events_are_emitted_for_each_transition)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 40), b = open_s(f, 1000, 0);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_SESSION_OPENED, b, NULL) && EV.ev[0].ms == 1000);
    uint64_t t = tok(lock_(f, "L", a, 0));
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_GRANTED, a, "L") && EV.ev[0].token == t);
    CHECK(lock_(f, "L", b, 77).kind == FSM_REPLY_QUEUED);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_WAIT_STARTED, b, "L") && EV.ev[0].ms == 77);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    CHECK(EV.n == 3 && ev_is(0, FSM_EV_RELEASED, a, "L") && EV.ev[0].token == t);
    CHECK(ev_is(1, FSM_EV_LOCKDELAY_STARTED, 0, "L") && EV.ev[1].ms == 40);
    CHECK(ev_is(2, FSM_EV_SESSION_ENDED, a, NULL) && EV.ev[2].expired);
    CHECK(named(f, FSM_OP_LOCKDELAY_END, "L", 0).kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_LOCKDELAY_ENDED, 0, "L") &&
          ev_is(1, FSM_EV_GRANTED, b, "L"));
    uint64_t c = open_s(f, 1000, 0);
    CHECK(lock_(f, "L", c, 5).kind == FSM_REPLY_QUEUED);
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, c).kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_WAIT_ENDED, c, "L"));
    CHECK(ev_is(1, FSM_EV_SESSION_ENDED, c, NULL) && !EV.ev[1].expired);
    fsm_free(f);
}

TEST(event_names_stay_valid_when_the_caller_does_not_reset)
{
    struct fsm *f = fsm_new();
    struct fsm_events ev;
    struct fsm_reply r;
    fsm_events_init(&ev);
    uint64_t a = open_s(f, 1000, 0);
    char name[32];
    for (int i = 0; i < 300; i++) {
        struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.sid = a}};
        struct buf b;
        buf_init(&b);
        snprintf(name, sizeof(name), "lock-number-%04d", i);
        c.lock.name = S(name);
        CHECK(fsm_cmd_encode(&c, &b) == 0);
        fsm_apply(f, (const uint8_t *)b.p, b.len, &r, &ev);
        buf_free(&b);
    }
    CHECK_EQ_U64(ev.n, 300);
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "lock-number-%04d", i);
        CHECK(ev.ev[i].name.len == strlen(name) && !memcmp(ev.ev[i].name.p, name, strlen(name)));
    }
    fsm_events_free(&ev);
    fsm_free(f);
}

/* ---- queries ---- */

static void count_cb(void *arg, uint64_t sid, uint64_t ms)
{
    (void)sid, (void)ms;
    ++*(int *)arg;
}

static void waiter_cb(void *arg, const char *name, size_t namelen, uint64_t sid, uint64_t ms)
{
    (void)name, (void)namelen, (void)sid;
    *(uint64_t *)arg += ms;
}

static void delay_cb(void *arg, const char *name, size_t namelen, uint64_t ms)
{
    (void)name, (void)namelen;
    *(uint64_t *)arg += ms;
}

TEST(queries_report_sessions_waiters_and_delays)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 30), b = open_s(f, 1000, 0), c = open_s(f, 1000, 0);
    CHECK(tok(lock_(f, "L", a, 0)) && tok(lock_(f, "M", a, 0)));
    CHECK(lock_(f, "L", b, 10).kind == FSM_REPLY_QUEUED);
    CHECK(lock_(f, "L", c, 20).kind == FSM_REPLY_QUEUED);
    int n = 0;
    fsm_foreach_session(f, count_cb, &n);
    CHECK_EQ_U64(n, 3);
    uint64_t sum = 0;
    fsm_foreach_waiter(f, waiter_cb, &sum);
    CHECK_EQ_U64(sum, 30);
    n = 0;
    fsm_lock_waiters(f, "L", 1, count_cb, &n);
    CHECK_EQ_U64(n, 2);
    struct fsm_session_view v;
    CHECK(fsm_session_info(f, a, &v) && v.n_locks == 2 && v.n_waits == 0);
    CHECK(fsm_session_info(f, b, &v) && v.n_waits == 1);
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    sum = 0;
    fsm_foreach_lockdelay(f, delay_cb, &sum);
    CHECK_EQ_U64(sum, 60);
    fsm_free(f);
}

/* LOCKS: existing locks under a prefix, in name byte order, bounded, with their state. */
TEST(locks_list_honours_prefix_limit_order_and_reports_state)
{
    struct fsm *f = fsm_new();
    uint64_t a = open_s(f, 1000, 50), b = open_s(f, 1000, 0);
    const char *names[] = {"job/c", "job/a", "other", "job/b", "jobx", "job/aa"};
    uint64_t tk[6];
    for (int i = 0; i < 6; i++)
        CHECK((tk[i] = tok(lock_(f, names[i], a, 0))) != 0);
    CHECK(lock_(f, "job/b", b, 100).kind == FSM_REPLY_QUEUED);
    struct fsm_lock_item it[8];
    size_t n = fsm_locks_list(f, "job/", 4, 8, it);
    CHECK_EQ_U64(n, 4);
    const char *want[] = {"job/a", "job/aa", "job/b", "job/c"};
    for (size_t i = 0; i < n && i < 4; i++)
        CHECK(it[i].name.len == strlen(want[i]) && !memcmp(it[i].name.p, want[i], it[i].name.len));
    CHECK(it[2].holder_sid == a && it[2].token == tk[3] && it[2].n_waiters == 1);
    CHECK(it[0].n_waiters == 0 && !it[0].in_lockdelay);
    CHECK_EQ_U64(fsm_locks_list(f, "job/", 4, 2, it), 2); /* the first two by name */
    CHECK(it[0].name.len == 5 && it[1].name.len == 6);
    CHECK_EQ_U64(fsm_locks_list(f, "", 0, 8, it), 6);
    CHECK_EQ_U64(fsm_locks_list(f, "nothing", 7, 8, it), 0);
    CHECK_EQ_U64(fsm_locks_list(f, "", 0, 0, it), 0);
    /* a expires with a lock-delay: its locks stay, held by nobody, in lock-delay */
    CHECK(sess_op(f, FSM_OP_SESSION_EXPIRE, a).kind == FSM_REPLY_OK);
    n = fsm_locks_list(f, "job/", 4, 8, it);
    CHECK_EQ_U64(n, 4);
    CHECK(it[0].holder_sid == 0 && it[0].token == 0 && it[0].in_lockdelay);
    fsm_free(f);
}

/* ---- lease checkpoints ---- */

static struct fsm_reply checkpoint_(struct fsm *f, uint64_t sid, uint64_t remaining)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_CHECKPOINT,
                        .session_checkpoint = {.sid = sid, .remaining_ms = remaining}};
    return apply_cmd(f, &c);
}

static uint64_t checkpoint_of(const struct fsm *f, uint64_t sid)
{
    struct fsm_session_view v;
    return fsm_session_info(f, sid, &v) ? v.checkpoint_ms : UINT64_MAX;
}

TEST(checkpoint_records_the_remaining_lease_without_a_revision)
{
    struct fsm *f = fsm_new();
    uint64_t sid = open_s(f, 10000, 0);
    uint64_t rev = fsm_revision(f);
    CHECK(checkpoint_(f, sid, 4000).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 4000);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(checkpoint_(f, sid, 0).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(checkpoint_at_or_above_the_ttl_means_a_full_ttl)
{
    struct fsm *f = fsm_new();
    uint64_t sid = open_s(f, 1000, 0);
    CHECK(checkpoint_(f, sid, 300).kind == FSM_REPLY_OK);
    CHECK(checkpoint_(f, sid, 1000).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 0);
    CHECK(inv_ok(f));
    fsm_free(f);
}

TEST(checkpoint_of_a_dead_session_is_nosession_and_changes_nothing)
{
    struct fsm *f = fsm_new();
    uint64_t sid = open_s(f, 1000, 0);
    sess_op(f, FSM_OP_SESSION_CLOSE, sid);
    struct buf before;
    snap(f, &before);
    struct fsm_reply r = checkpoint_(f, sid, 10);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "NOSESSION");
    CHECK(same_snap(f, &before));
    buf_free(&before);
    fsm_free(f);
}

TEST(checkpoint_survives_snapshot_and_restore)
{
    struct fsm *f = fsm_new(), *g = fsm_new();
    uint64_t sid = open_s(f, 5000, 0);
    checkpoint_(f, sid, 1234);
    struct buf b;
    char err[160];
    snap(f, &b);
    CHECK(fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(checkpoint_of(g, sid), 1234);
    CHECK(same_snap(g, &b));
    buf_free(&b);
    fsm_free(f);
    fsm_free(g);
}

/* Names built to hit every case of the snapshot's radix sort on 8-byte chunks: long shared
 * prefixes (runs recursing past bytes 8, 16, 24), names ending inside or exactly at a chunk,
 * NUL and 0xff bytes (padding ties), runs below and above the insertion-sort cut-off. Restore
 * accepts only names in strictly increasing byte order, so a mis-sorted snapshot fails it. */
TEST(snapshot_orders_adversarial_lock_names)
{
    struct fsm *f = fsm_new();
    uint64_t sid = open_s(f, 1000, 0);
    static const char alphabet[4] = {'\0', 'a', 'b', '\xff'};
    unsigned seed = 7;
    char name[48];
    size_t made = 0;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 8) % 40;
        size_t shared = (seed >> 16) % 4 * 8; /* 0, 8, 16 or 24 bytes of "/shared/" */
        for (size_t k = 0; k < len; k++) {
            seed = seed * 1103515245u + 12345u;
            name[k] = k < shared ? "/shared/"[k % 8] : alphabet[(seed >> 16) % 4];
        }
        struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = {name, (uint32_t)len}, .sid = sid}};
        struct fsm_reply r = apply_cmd(f, &c);
        made += r.kind == FSM_REPLY_INT;
    }
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(made >= 2000 && st.locks_held > 1500); /* many distinct names, some repeated */
    CHECK(restores_identically(f));
    fsm_free(f);
}

/* Locks are also kept in a tree ordered by name and sessions in a list ordered by sid, so that
 * LOCKS and snapshots need no sort. Thousands of creates and drops in random order: the
 * invariants (which walk both structures) hold throughout, LOCKS under several prefixes
 * returns exactly the live names with the prefix in byte order, and a restored copy's snapshot
 * matches byte for byte. */
static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

TEST(lock_name_tree_and_session_list_follow_creates_and_drops)
{
    enum { NS = 40, NL = 600 };
    struct fsm *f = fsm_new();
    uint64_t sid[NS];
    static char names[NL][16];
    int owner[NL]; /* index into sid[] of the holder, or -1 */
    unsigned seed = 11;
    for (int i = 0; i < NS; i++)
        sid[i] = open_s(f, 1000, 0);
    for (int i = 0; i < NL; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(names[i], sizeof(names[i]), "%c/%u", "abc"[(seed >> 16) % 3], (seed >> 8) % 9973);
        owner[i] = -1;
    }
    for (int step = 0; step < 6000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % NL), k = (int)((seed >> 20) % NS);
        if ((seed >> 4) % 50 == 0) { /* a session ends; a new one (newest sid) takes its slot */
            CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, sid[k]).kind == FSM_REPLY_OK);
            for (int j = 0; j < NL; j++)
                if (owner[j] == k)
                    owner[j] = -1;
            sid[k] = open_s(f, 1000, 0);
        } else if (owner[i] < 0) {
            struct fsm_reply r = lock_(f, names[i], sid[k], 0);
            if (r.kind == FSM_REPLY_INT) /* names repeat: it may be held under another index */
                owner[i] = k;
            for (int j = 0; j < NL && r.kind == FSM_REPLY_INT; j++)
                if (j != i && strcmp(names[j], names[i]) == 0)
                    owner[j] = k;
        } else {
            CHECK(named(f, FSM_OP_UNLOCK, names[i], sid[owner[i]]).kind == FSM_REPLY_OK);
            for (int j = 0; j < NL; j++)
                if (strcmp(names[j], names[i]) == 0)
                    owner[j] = -1;
        }
        if (step % 500 == 0)
            CHECK(inv_ok(f));
    }
    CHECK(inv_ok(f));
    const char *held[NL];
    static struct fsm_lock_item it[NL];
    const char *prefixes[] = {"", "a", "b/", "c/1", "c/99", "zz"};
    for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
        size_t want = 0, plen = strlen(prefixes[p]);
        for (int i = 0; i < NL; i++) {
            bool dup = false;
            for (size_t j = 0; j < want; j++)
                dup |= strcmp(held[j], names[i]) == 0;
            if (owner[i] >= 0 && !dup && strncmp(names[i], prefixes[p], plen) == 0)
                held[want++] = names[i];
        }
        qsort(held, want, sizeof(held[0]), cmp_cstr);
        size_t n = fsm_locks_list(f, prefixes[p], plen, NL, it);
        CHECK_EQ_U64(n, want);
        for (size_t j = 0; j < n && j < want; j++)
            CHECK(it[j].name.len == strlen(held[j]) &&
                  !memcmp(it[j].name.p, held[j], it[j].name.len));
        if (want > 3) /* a limit cuts the same run */
            CHECK(fsm_locks_list(f, prefixes[p], plen, 3, it) == 3 &&
                  it[2].name.len == strlen(held[2]) &&
                  !memcmp(it[2].name.p, held[2], it[2].name.len));
    }
    CHECK(restores_identically(f));
    fsm_free(f);
}

/* ---- data bytes (--max-data-bytes) ---- */

static uint64_t data_bytes(const struct fsm *f)
{
    struct fsm_stats st;
    fsm_stats(f, &st);
    return st.data_bytes;
}

TEST(data_bytes_count_keys_values_names_and_records_and_survive_restore)
{
    struct fsm *f = fsm_new();
    const uint64_t R = FSM_RECORD_BYTES;
    CHECK_EQ_U64(data_bytes(f), 0);
    uint64_t a = open_s(f, 1000, 0), b = open_s(f, 1000, 0);
    CHECK_EQ_U64(data_bytes(f), 2 * R);
    CHECK(tok(put_(f, "key", "12345", 0)));
    CHECK_EQ_U64(data_bytes(f), 3 * R + 8);
    CHECK(tok(put_(f, "key", "1", 0))); /* an overwrite counts the new value only */
    CHECK_EQ_U64(data_bytes(f), 3 * R + 4);
    CHECK(tok(lock_(f, "lk", a, 0)));
    CHECK_EQ_U64(data_bytes(f), 4 * R + 4 + 2);
    CHECK(lock_(f, "lk", b, 1000).kind == FSM_REPLY_QUEUED); /* a waiter is a record */
    CHECK_EQ_U64(data_bytes(f), 5 * R + 6);
    CHECK(tok(put_(f, "leased", "xy", b)));
    CHECK_EQ_U64(data_bytes(f), 6 * R + 6 + 8);
    CHECK(restores_identically(f));
    struct fsm *g = fsm_new();
    struct buf sb;
    char err[128];
    snap(f, &sb);
    CHECK(fsm_restore(g, (const uint8_t *)sb.p, sb.len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(data_bytes(g), data_bytes(f));
    buf_free(&sb);
    fsm_free(g);
    /* closing b drops its wait and its leased key; a's unlock drops the lock */
    CHECK(sess_op(f, FSM_OP_SESSION_CLOSE, b).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(data_bytes(f), 3 * R + 4 + 2);
    CHECK(named(f, FSM_OP_UNLOCK, "lk", a).kind == FSM_REPLY_OK);
    CHECK(tok(del_(f, "key")) == 1);
    CHECK_EQ_U64(data_bytes(f), R);
    CHECK(inv_ok(f));
    fsm_free(f);
}

int main(void)
{
    fsm_events_init(&EV);
    RUN(tokens_strictly_increase_per_lock_and_are_unique_across_locks);
    RUN(data_bytes_count_keys_values_names_and_records_and_survive_restore);
    RUN(snapshot_orders_adversarial_lock_names);
    RUN(lock_name_tree_and_session_list_follow_creates_and_drops);
    RUN(closed_session_is_never_granted_even_while_queued);
    RUN(expired_session_is_never_granted_even_while_queued);
    RUN(unlock_by_non_holder_fails_with_notholder_and_changes_nothing);
    RUN(unlock_by_a_queued_session_leaves_the_queue_and_is_never_granted);
    RUN(expiry_of_the_holder_grants_the_next_waiter);
    RUN(lockdelay_holds_grants_after_expiry_and_its_end_grants_the_head);
    RUN(lockdelay_without_waiters_ends_by_dropping_the_lock);
    RUN(lockdelay_end_is_idempotent);
    RUN(no_lockdelay_after_clean_unlock_or_close);
    RUN(expiry_with_lockdelay_zero_grants_immediately);
    RUN(lock_by_holder_returns_its_token_and_queued_session_keeps_its_place);
    RUN(try_lock_on_busy_lock_returns_nil_and_changes_nothing);
    RUN(unlock_of_a_lock_without_waiters_deletes_it);
    RUN(unlock_grants_only_the_head_with_the_unlock_revision);
    RUN(fifo_order_of_grants_across_five_waiters);
    RUN(cancel_after_grant_returns_the_token);
    RUN(cancel_of_a_queued_waiter_removes_it);
    RUN(cancel_of_the_last_waiter_during_lockdelay_keeps_the_delay);
    RUN(cancel_by_a_dead_session_is_nosession);
    RUN(commands_naming_a_dead_session_fail_with_nosession);
    RUN(session_ids_are_unique_and_increasing);
    RUN(session_open_requires_a_ttl);
    RUN(close_releases_everything_the_session_owns);
    RUN(close_hands_on_locks_in_grant_order);
    RUN(keys_leased_to_a_session_vanish_when_it_expires);
    RUN(keys_leased_to_a_session_vanish_when_it_closes);
    RUN(put_sets_revisions_and_versions);
    RUN(put_without_lease_detaches_the_key_from_its_session);
    RUN(del_of_absent_key_returns_zero_and_changes_nothing);
    RUN(fenced_write_with_a_stale_token_fails_and_changes_nothing);
    RUN(fenced_write_with_the_current_token_succeeds);
    RUN(ifrev_mismatch_changes_nothing);
    RUN(ifrev_zero_is_create_only);
    RUN(keys_scan_honours_prefix_limit_and_byte_order);
    RUN(keys_scan_stops_when_the_callback_asks);
    RUN(repeated_req_returns_the_cached_reply_and_changes_nothing);
    RUN(req_caches_error_replies_too);
    RUN(superseded_req_seq_is_rejected);
    RUN(lock_retry_with_cached_queued_answers_the_current_truth);
    RUN(req_with_only_one_of_sid_and_seq_is_a_bad_entry);
    RUN(close_of_the_req_session_itself_records_nothing);
    RUN(encode_decode_round_trips_every_op);
    RUN(decode_rejects_truncated_unknown_and_trailing_entries);
    RUN(decode_enforces_name_and_value_limits);
    RUN(apply_of_garbage_replies_bad_entry_and_changes_nothing);
    RUN(noop_and_no_op_outcomes_do_not_bump_the_revision);
    RUN(snapshot_restore_snapshot_is_byte_identical);
    RUN(restore_of_garbage_or_truncated_snapshot_fails_and_leaves_state_unchanged);
    RUN(restore_rejects_snapshots_that_break_a_rule);
    RUN(member_set_inserts_and_replaces_and_get_returns_the_entry);
    RUN(member_reannounce_of_the_identical_entry_changes_nothing);
    RUN(member_del_removes_a_present_member_and_ignores_an_absent_one);
    RUN(member_table_full_rejects_a_new_id_and_changes_nothing);
    RUN(member_full_table_still_replaces_an_existing_id);
    RUN(decode_rejects_bad_member_entries);
    RUN(snapshot_restore_snapshot_with_members_is_byte_identical);
    RUN(restore_rejects_bad_member_tables);
    RUN(revision_counter_never_wraps);
    RUN(events_are_emitted_for_each_transition);
    RUN(event_names_stay_valid_when_the_caller_does_not_reset);
    RUN(queries_report_sessions_waiters_and_delays);
    RUN(locks_list_honours_prefix_limit_order_and_reports_state);
    RUN(checkpoint_records_the_remaining_lease_without_a_revision);
    RUN(checkpoint_at_or_above_the_ttl_means_a_full_ttl);
    RUN(checkpoint_of_a_dead_session_is_nosession_and_changes_nothing);
    RUN(checkpoint_survives_snapshot_and_restore);
    fsm_events_free(&EV);
    TEST_MAIN_END();
}
