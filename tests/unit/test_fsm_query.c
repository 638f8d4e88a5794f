/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_query — events, read-only queries and the data-byte accounting.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static int ev_is(size_t i, uint8_t type, uint64_t sid, const char *name)
{
    if (i >= EV.n || EV.ev[i].type != type || EV.ev[i].sid != sid)
        return 0;
    return !name ||
           (EV.ev[i].name.len == strlen(name) && !memcmp(EV.ev[i].name.p, name, strlen(name)));
}

TEST_F(fsm_fx, events_are_emitted_for_each_transition)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 40), b = open_session(f, 1000, 0);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_SESSION_OPENED, b, NULL) && EV.ev[0].ms == 1000);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_GRANTED, a, "L") && EV.ev[0].token == t);
    CHECK(apply_lock(f, "L", b, 77).kind == FSM_REPLY_QUEUED);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_WAIT_STARTED, b, "L") && EV.ev[0].ms == 77);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(EV.n == 3 && ev_is(0, FSM_EV_RELEASED, a, "L") && EV.ev[0].token == t);
    CHECK(ev_is(1, FSM_EV_LOCKDELAY_STARTED, 0, "L") && EV.ev[1].ms == 40);
    CHECK(ev_is(2, FSM_EV_SESSION_ENDED, a, NULL) && EV.ev[2].expired);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_LOCKDELAY_ENDED, 0, "L") &&
          ev_is(1, FSM_EV_GRANTED, b, "L"));
    uint64_t c = open_session(f, 1000, 0);
    CHECK(apply_lock(f, "L", c, 5).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, c).kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_WAIT_ENDED, c, "L"));
    CHECK(ev_is(1, FSM_EV_SESSION_ENDED, c, NULL) && !EV.ev[1].expired);
}

static int ev_value_is(size_t i, const char *v)
{
    return i < EV.n && EV.ev[i].value.len == strlen(v) && !memcmp(EV.ev[i].value.p, v, strlen(v));
}

TEST_F(fsm_fx, key_events_tell_put_del_and_lease_end)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_put(f, "k", "v1", 0)) == fsm_revision(f));
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_KEY_PUT, 0, "k") && ev_value_is(0, "v1"));
    CHECK(apply_put(f, "k", "", a).kind == FSM_REPLY_INT);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_KEY_PUT, a, "k") && ev_value_is(0, ""));
    CHECK(apply_del(f, "k").kind == FSM_REPLY_INT);
    CHECK(EV.n == 1 && ev_is(0, FSM_EV_KEY_DELETED, 0, "k"));
    CHECK(apply_del(f, "k").kind == FSM_REPLY_INT && EV.n == 0); /* absent: no change */
    CHECK(apply_put(f, "x", "1", a).kind == FSM_REPLY_INT);
    CHECK(apply_put(f, "y", "2", b).kind == FSM_REPLY_INT);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_KEY_DELETED, a, "x") && !EV.ev[0].expired);
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK);
    CHECK(EV.n == 2 && ev_is(0, FSM_EV_KEY_DELETED, b, "y") && EV.ev[0].expired);
    CHECK(ev_is(1, FSM_EV_SESSION_ENDED, b, NULL) && EV.ev[1].expired && !EV.lost);
}

TEST_F(fsm_fx, a_release_says_whether_its_holder_expired)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)) && token_of(apply_lock(f, "M", b, 0)));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(ev_is(0, FSM_EV_RELEASED, a, "L") && !EV.ev[0].expired);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK && !has_event(FSM_EV_RELEASED, a));
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK);
    CHECK(ev_is(0, FSM_EV_RELEASED, b, "M") && EV.ev[0].expired);
}

TEST_F(fsm_fx, event_names_stay_valid_when_the_caller_does_not_reset)
{
    struct fsm *f = fx->f;
    struct fsm_events *ev = &fx->ev;
    struct fsm_reply r;
    fsm_events_init(ev);
    uint64_t a = open_session(f, 1000, 0);
    char name[32];
    for (int i = 0; i < 300; i++) {
        struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.sid = a}};
        struct buf *b = &fx->scratch[0];
        buf_init(b);
        snprintf(name, sizeof(name), "lock-number-%04d", i);
        c.lock.name = S(name);
        CHECK(fsm_cmd_encode(&c, b) == 0);
        fsm_apply(f, (const uint8_t *)b->p, b->len, &r, ev);
        buf_free(b);
    }
    CHECK_EQ_U64(ev->n, 300);
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "lock-number-%04d", i);
        CHECK(ev->ev[i].name.len == strlen(name) && !memcmp(ev->ev[i].name.p, name, strlen(name)));
    }
    fsm_events_free(ev);
}

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

TEST_F(fsm_fx, queries_report_sessions_waiters_and_delays)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 30), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)) && token_of(apply_lock(f, "M", a, 0)));
    CHECK(apply_lock(f, "L", b, 10).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 20).kind == FSM_REPLY_QUEUED);
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
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    sum = 0;
    fsm_foreach_lockdelay(f, delay_cb, &sum);
    CHECK_EQ_U64(sum, 60);
}

/* LOCKS: existing locks under a prefix, in name byte order, bounded, with their state. */
TEST_F(fsm_fx, locks_list_honours_prefix_limit_order_and_reports_state)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 50), b = open_session(f, 1000, 0);
    const char *names[] = {"job/c", "job/a", "other", "job/b", "jobx", "job/aa"};
    uint64_t tk[6];
    for (int i = 0; i < 6; i++)
        CHECK((tk[i] = token_of(apply_lock(f, names[i], a, 0))) != 0);
    CHECK(apply_lock(f, "job/b", b, 100).kind == FSM_REPLY_QUEUED);
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
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    n = fsm_locks_list(f, "job/", 4, 8, it);
    CHECK_EQ_U64(n, 4);
    CHECK(it[0].holder_sid == 0 && it[0].token == 0 && it[0].in_lockdelay);
}

static uint64_t data_bytes(const struct fsm *f)
{
    struct fsm_stats st;
    fsm_stats(f, &st);
    return st.data_bytes;
}

TEST_F(fsm_fx, data_bytes_count_keys_values_names_and_records_and_survive_restore)
{
    struct fsm *f = fx->f;
    const uint64_t R = FSM_RECORD_BYTES;
    CHECK_EQ_U64(data_bytes(f), 0);
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK_EQ_U64(data_bytes(f), 2 * R);
    CHECK(token_of(apply_put(f, "key", "12345", 0)));
    CHECK_EQ_U64(data_bytes(f), 3 * R + 8);
    CHECK(token_of(apply_put(f, "key", "1", 0))); /* an overwrite counts the new value only */
    CHECK_EQ_U64(data_bytes(f), 3 * R + 4);
    CHECK(token_of(apply_lock(f, "lk", a, 0)));
    CHECK_EQ_U64(data_bytes(f), 4 * R + 4 + 2);
    CHECK(apply_lock(f, "lk", b, 1000).kind == FSM_REPLY_QUEUED); /* a waiter is a record */
    CHECK_EQ_U64(data_bytes(f), 5 * R + 6);
    CHECK(token_of(apply_put(f, "leased", "xy", b)));
    CHECK_EQ_U64(data_bytes(f), 6 * R + 6 + 8);
    CHECK(restores_identically(f));
    struct fsm *g = fx->g;
    struct buf *sb = &fx->scratch[2];
    char err[128];
    snapshot_into(f, sb);
    CHECK(fsm_restore(g, (const uint8_t *)sb->p, sb->len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(data_bytes(g), data_bytes(f));
    buf_free(sb);
    /* closing b drops its wait and its leased key; a's unlock drops the lock */
    CHECK(apply_close(f, b).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(data_bytes(f), 3 * R + 4 + 2);
    CHECK(apply_unlock(f, "lk", a).kind == FSM_REPLY_OK);
    CHECK(token_of(apply_del(f, "key")) == 1);
    CHECK_EQ_U64(data_bytes(f), R);
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, data_bytes_count_keys_values_names_and_records_and_survive_restore);
    RUN_F(fsm_fx, events_are_emitted_for_each_transition);
    RUN_F(fsm_fx, key_events_tell_put_del_and_lease_end);
    RUN_F(fsm_fx, a_release_says_whether_its_holder_expired);
    RUN_F(fsm_fx, event_names_stay_valid_when_the_caller_does_not_reset);
    RUN_F(fsm_fx, queries_report_sessions_waiters_and_delays);
    RUN_F(fsm_fx, locks_list_honours_prefix_limit_order_and_reports_state);
    TEST_MAIN_END();
}
