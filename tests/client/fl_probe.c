/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_probe: a small program on libfencelock that the integration tests drive
 * (tests/integration/test_client.py, test_watch_clients.py). Each mode prints one line per
 * event, flushed at once, so the test can follow it; "FAIL ..." lines are checks the probe
 * itself made that failed.
 *
 * fl_probe api EP
 *     the API against a live cluster (lock values and max holds too: fl_lock_with,
 *     fl_lock_meta); "tests: N passed, N failed"
 * fl_probe prims EP
 *     semaphores and elections (fl_sem_*, fl_campaign, fl_proclaim, fl_resign, fl_leader,
 *     fl_observe, FL_EWRONGTYPE), a wait that closes a cycle (FL_EDEADLOCK, fl_lock_waits), and
 *     latches and barriers (fl_latch_*, fl_barrier_*, FL_EBROKEN) against a live cluster;
 *     "tests: N passed, N failed"
 * fl_probe lock EP NAME WAIT_MS TTL  (and `shared`, the same with fl_lock_shared)
 *     open a session, take the lock, print the outcome; on a stdin line unlock and close
 * fl_probe sem EP NAME LIMIT WAIT_MS TTL, fl_probe campaign EP NAME VALUE WAIT_MS TTL
 *     the same with fl_sem_acquire / fl_sem_release, fl_campaign / fl_resign
 * fl_probe watch EP PREFIX FROM|- stop|continue
 *     fl_watch: "event ID TYPE NAME" per event, "compacted OLDEST", "resumed LAST WHY"; a
 *     stdin line (or EOF) stops it: "end ERR LAST_ID MSG" (stop: end at -COMPACTED); the line
 *     "ends" instead waits (up to 10 s) for the watcher to end by itself, then joins it
 * fl_probe safe EP TTL PORT...
 *     watch fl_session_safe_until() against the leader's own SESSION.INFO remaining_ms until
 *     the session is lost
 * fl_probe sign EP NAME
 *     fl_lock_signed on NAME: "signed TOKEN SIG" (SIG "-" when the servers have no key: then
 *     "nokey ERR"); fl_sign of a stale token must be FL_ESTALE, fl_verify of the signature 1
 *     and of another token 0: "verified"; "tests: N passed, N failed"
 * FL_PROBE_TLS_CA, FL_PROBE_TLS_CERT, FL_PROBE_TLS_KEY in the environment: connect with TLS.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fencelock.h"

static int passed, failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                                 \
        }                                                                                          \
    } while (0)

#define CHECK_ERR(call, want)                                                                      \
    do {                                                                                           \
        fl_err e_ = (call);                                                                        \
        if (e_ == (want)) {                                                                        \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL %s:%d: %s = %s, want %s (%s)\n", __FILE__, __LINE__, #call,               \
                   fl_strerror(e_), fl_strerror(want), fl_client_errmsg(c));                       \
        }                                                                                          \
    } while (0)

static fl_client *client(const char *endpoints, int margin0)
{
    struct fl_options o;
    fl_options_init(&o);
    o.timeout_ms = 10000;
    /* test_tls.py: the same runs over TLS */
    o.tls_ca = getenv("FL_PROBE_TLS_CA");
    o.tls_cert = getenv("FL_PROBE_TLS_CERT");
    o.tls_key = getenv("FL_PROBE_TLS_KEY");
    o.password = getenv("FL_PROBE_PASSWORD"); /* AUTH as "default" on every connection */
    if (margin0) { /* the tightest deadline the library may compute: checks are sharpest */
        o.margin_ms = 0;
        o.drift_ppm = 0;
    }
    fl_err e;
    fl_client *c = fl_client_new(endpoints, &o, &e);
    if (!c) {
        printf("FAIL fl_client_new: %s\n", fl_strerror(e));
        exit(2);
    }
    return c;
}

/* ---- api ---- */

static void api_locks(fl_client *c)
{
    fl_session *a, *b;
    uint64_t ta = 0, tb = 0;
    CHECK_ERR(fl_session_open(c, 10000, 0, "probe-a", &a), FL_OK);
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &b), FL_OK);
    CHECK(fl_session_id(a) && fl_session_id(b) > fl_session_id(a));
    int64_t su = fl_session_safe_until(a);
    CHECK(su > fl_now_ms() && su <= fl_now_ms() + 10000);
    CHECK_ERR(fl_lock(a, "api-l", 0, &ta), FL_OK);
    uint64_t again = 0;
    CHECK_ERR(fl_lock(a, "api-l", 0, &again), FL_OK);
    CHECK(again == ta); /* the holder gets its token back */
    CHECK_ERR(fl_trylock(b, "api-l", &tb), FL_EBUSY);
    int64_t t0 = fl_now_ms();
    CHECK_ERR(fl_lock(b, "api-l", 300, &tb), FL_ETIMEOUT);
    CHECK(fl_now_ms() - t0 >= 300);
    CHECK_ERR(fl_fence_check(c, "api-l", ta), FL_OK);
    CHECK_ERR(fl_fence_check(c, "api-l", ta + 1000), FL_ESTALE);
    struct fl_lock_info li;
    CHECK_ERR(fl_lock_info(c, "api-l", &li), FL_OK);
    CHECK(li.holder == fl_session_id(a) && li.token == ta && li.n_waiters == 0);
    CHECK(strcmp(li.mode, "exclusive") == 0 && li.n_holders == 1 &&
          li.holders[0].sid == fl_session_id(a) && li.holders[0].token == ta);
    fl_lock_info_free(&li);
    struct fl_lock_list ll;
    CHECK_ERR(fl_locks(c, "api-", 0, &ll), FL_OK);
    CHECK(ll.n == 1 && strcmp(ll.v[0].name, "api-l") == 0 && ll.v[0].token == ta);
    fl_lock_list_free(&ll);
    CHECK_ERR(fl_unlock(b, "api-l"), FL_ENOTHOLDER);
    CHECK_ERR(fl_unlock(a, "api-l"), FL_OK);
    CHECK_ERR(fl_lock_info(c, "api-l", &li), FL_ENOTFOUND);
    CHECK_ERR(fl_trylock(b, "api-l", &tb), FL_OK);
    CHECK(tb > ta);
    CHECK_ERR(fl_fence_check(c, "api-l", ta), FL_ESTALE);
    CHECK_ERR(fl_session_close(b), FL_OK);
    CHECK_ERR(fl_session_close(a), FL_OK);
}

/* A value and a max hold on the grant (fl_lock_with, fl_lock_meta): the deadline is measured
   from before the request, so it is never after the servers' end of the grant; the holder's
   retry answers the same token and changes neither. */
static void api_lockmeta(fl_client *c)
{
    fl_session *a;
    uint64_t t = 0, t2 = 0;
    int64_t until = 0, until2 = 0;
    CHECK_ERR(fl_session_open(c, 10000, 0, "meta", &a), FL_OK);
    struct fl_lock_opts lo = {
        .size = sizeof lo, .value = "job=7", .value_len = 5, .maxhold_ms = 20000};
    int64_t before = fl_now_ms();
    CHECK_ERR(fl_lock_with(a, "api-meta", 1000, &lo, &t, &until), FL_OK);
    CHECK(t > 0 && until > before && until <= before + 20000 && until > fl_now_ms());
    struct fl_lock_meta m;
    CHECK_ERR(fl_lock_meta(c, "api-meta", &m), FL_OK);
    CHECK(m.value_len == 5 && strcmp(m.value, "job=7") == 0 && m.maxhold_ms == 20000 &&
          m.transitions == 0);
    fl_lock_meta_free(&m);
    lo.maxhold_ms = 0; /* a retry: the same grant, value and max hold unchanged */
    CHECK_ERR(fl_lock_with(a, "api-meta", 0, &lo, &t2, &until2), FL_OK);
    CHECK(t2 == t && until2 == INT64_MAX);
    CHECK_ERR(fl_lock_meta(c, "api-meta", &m), FL_OK);
    CHECK(m.maxhold_ms == 20000);
    fl_lock_meta_free(&m);
    CHECK_ERR(fl_lock_with(a, "api-meta2", 0, NULL, &t2, &until2), FL_OK); /* opts NULL: fl_lock */
    CHECK(t2 > t && until2 == INT64_MAX);
    CHECK_ERR(fl_lock_meta(c, "api-free", &m), FL_ENOTFOUND);
    CHECK_ERR(fl_session_close(a), FL_OK);
}

/* Read-write locks: two readers at once, each with its token; readers pass FENCE.CHECK but
   not a fenced write; a reader's upgrade waits for the other reader. */
static void api_shared(fl_client *c)
{
    fl_session *a, *b;
    uint64_t ta = 0, tb = 0, tx = 0, t0;
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &a), FL_OK);
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &b), FL_OK);
    CHECK_ERR(fl_lock_shared(a, "api-rw", 0, &ta), FL_OK);
    CHECK_ERR(fl_lock_shared(b, "api-rw", 1000, &tb), FL_OK);
    CHECK(ta && tb > ta);
    CHECK_ERR(fl_lock_shared(a, "api-rw", 0, &t0), FL_OK);
    CHECK(t0 == ta); /* a reader asking again gets its token back */
    struct fl_lock_info li;
    CHECK_ERR(fl_lock_info(c, "api-rw", &li), FL_OK);
    CHECK(strcmp(li.mode, "shared") == 0 && li.holder == 0 && li.n_holders == 2);
    CHECK(li.n_holders == 2 && li.holders[0].sid == fl_session_id(a) && li.holders[0].token == ta &&
          li.holders[1].sid == fl_session_id(b) && li.holders[1].token == tb);
    fl_lock_info_free(&li);
    CHECK_ERR(fl_fence_check(c, "api-rw", ta), FL_OK);
    CHECK_ERR(fl_fence_check(c, "api-rw", tb), FL_OK);
    struct fl_write_opts f = {.fence_name = "api-rw", .fence_token = tb};
    CHECK_ERR(fl_put(c, b, "api-rw-key", "x", 1, &f, NULL), FL_ESTALE); /* readers do not write */
    CHECK_ERR(fl_lock(a, "api-rw", 200, &tx), FL_ETIMEOUT);             /* upgrade: b still reads */
    CHECK_ERR(fl_unlock(b, "api-rw"), FL_OK);
    CHECK_ERR(fl_lock(a, "api-rw", 1000, &tx), FL_OK); /* the only reader now: upgraded */
    CHECK(tx > tb);
    CHECK_ERR(fl_lock_info(c, "api-rw", &li), FL_OK);
    CHECK(strcmp(li.mode, "exclusive") == 0 && li.holder == fl_session_id(a) && li.token == tx);
    fl_lock_info_free(&li);
    CHECK_ERR(fl_lock_shared(a, "api-rw", 0, &t0), FL_ESERVER); /* one mode at a time */
    CHECK_ERR(fl_session_close(b), FL_OK);
    CHECK_ERR(fl_session_close(a), FL_OK);
}

/* Several locks at once: every name in one grant (consecutive tokens in name order, returned in
   the order given), a busy name's try holding nothing, a wait granted whole once the busy name
   is free, argument mistakes refused before anything is sent, fl_unlock_multi. */
static void api_multi(fl_client *c)
{
    fl_session *a, *b;
    const char *ab[] = {"api-mb", "api-ma"}, *bc[] = {"api-mc", "api-mb"}, *dup[] = {"x", "x"};
    const uint8_t shared[] = {0, 1};
    uint64_t t[2] = {0, 0}, u[2] = {0, 0};
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &a), FL_OK);
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &b), FL_OK);
    CHECK_ERR(fl_lock_multi(a, 2, ab, shared, 0, t), FL_OK);
    CHECK(t[1] && t[0] == t[1] + 1); /* api-ma (shared) first in name order */
    CHECK_ERR(fl_fence_check(c, "api-mb", t[0]), FL_OK);
    CHECK_ERR(fl_fence_check(c, "api-ma", t[1]), FL_OK);
    CHECK_ERR(fl_lock_multi(b, 2, bc, NULL, 0, u), FL_ETIMEOUT); /* api-mb is a's */
    struct fl_lock_info li;
    CHECK_ERR(fl_lock_info(c, "api-mc", &li), FL_ENOTFOUND); /* nothing held by the try */
    CHECK_ERR(fl_lock_multi(b, 2, dup, NULL, 0, u), FL_EINVAL);
    CHECK_ERR(fl_lock_multi(a, 2, ab, NULL, 0, u), FL_ESERVER); /* names it holds */
    CHECK_ERR(fl_unlock_multi(a, 2, ab), FL_OK);
    CHECK_ERR(fl_lock_multi(b, 2, bc, NULL, 1000, u), FL_OK);
    CHECK(u[1] > t[0] && u[0] == u[1] + 1);
    CHECK_ERR(fl_unlock_multi(b, 2, bc), FL_OK);
    CHECK_ERR(fl_lock_info(c, "api-mb", &li), FL_ENOTFOUND);
    CHECK_ERR(fl_session_close(b), FL_OK);
    CHECK_ERR(fl_session_close(a), FL_OK);
}

/* Reentrant sessions: a re-lock counts up with the same token, fl_lock_count reads the count,
   MAXCOUNT refuses one more, fl_unlock releases the last hold only; a plain session's holder
   counts 1. */
static void api_reentrant(fl_client *c)
{
    fl_session *a, *b;
    uint64_t t, t2, holder = 0, count = 0;
    CHECK_ERR(fl_session_open_reentrant(c, 10000, 0, "re", 2, &a), FL_OK);
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &b), FL_OK);
    CHECK_ERR(fl_lock(a, "api-re", 1000, &t), FL_OK);
    CHECK_ERR(fl_lock(a, "api-re", 1000, &t2), FL_OK);
    CHECK(t2 == t);
    CHECK_ERR(fl_lock_count(c, "api-re", &holder, &count), FL_OK);
    CHECK(holder == fl_session_id(a) && count == 2);
    CHECK_ERR(fl_trylock(a, "api-re", &t2), FL_ESERVER); /* its MAXCOUNT, 2 */
    CHECK_ERR(fl_unlock(a, "api-re"), FL_OK);
    CHECK_ERR(fl_trylock(b, "api-re", &t2), FL_EBUSY); /* one hold left */
    CHECK_ERR(fl_unlock(a, "api-re"), FL_OK);
    CHECK_ERR(fl_lock_count(c, "api-re", &holder, &count), FL_ENOTFOUND);
    CHECK_ERR(fl_lock(b, "api-re", 1000, &t2), FL_OK);
    CHECK(t2 > t);
    CHECK_ERR(fl_lock_count(c, "api-re", &holder, &count), FL_OK);
    CHECK(holder == fl_session_id(b) && count == 1);
    CHECK_ERR(fl_lock_count(c, "api-re", NULL, &count), FL_EINVAL);
    CHECK_ERR(fl_session_close(b), FL_OK);
    CHECK_ERR(fl_session_close(a), FL_OK);
}

static void api_kv(fl_client *c)
{
    fl_session *s;
    uint64_t t, rev = 0, rev2 = 0;
    CHECK_ERR(fl_session_open(c, 10000, 0, NULL, &s), FL_OK);
    CHECK_ERR(fl_lock(s, "inv", 1000, &t), FL_OK);
    struct fl_write_opts fence = {.fence_name = "inv", .fence_token = t};
    CHECK_ERR(fl_put(c, s, "stock", "10", 2, &fence, &rev), FL_OK);
    CHECK(rev > t);
    struct fl_kv kv;
    CHECK_ERR(fl_get(c, "stock", &kv), FL_OK);
    CHECK(kv.len == 2 && strcmp(kv.value, "10") == 0 && kv.mod_rev == rev && kv.version == 1);
    fl_kv_free(&kv);
    struct fl_write_opts stale = {.fence_name = "inv", .fence_token = t - 1};
    CHECK_ERR(fl_put(c, s, "stock", "9", 1, &stale, NULL), FL_ESTALE);
    struct fl_write_opts cas = {.use_ifrev = 1, .ifrev = rev};
    CHECK_ERR(fl_put(c, NULL, "stock", "11", 2, &cas, &rev2), FL_OK);
    CHECK_ERR(fl_put(c, NULL, "stock", "12", 2, &cas, NULL), FL_EIFREV);
    struct fl_write_opts leased = {.lease = 1};
    CHECK_ERR(fl_put(c, s, "eph", "x", 1, &leased, NULL), FL_OK);
    struct fl_strlist keys;
    CHECK_ERR(fl_keys(c, "", 0, &keys), FL_OK);
    CHECK(keys.n == 2 && strcmp(keys.v[0], "eph") == 0 && strcmp(keys.v[1], "stock") == 0);
    fl_strlist_free(&keys);
    int deleted = -1;
    CHECK_ERR(fl_del(c, s, "nokey", NULL, &deleted), FL_OK);
    CHECK(deleted == 0);
    int64_t v = 0; /* counters: fenced through the session (REQ), then without one */
    CHECK_ERR(fl_incr(c, s, "api-ctr", 5, &fence, &v), FL_OK);
    CHECK(v == 5);
    CHECK_ERR(fl_incr(c, NULL, "api-ctr", -7, NULL, &v), FL_OK);
    CHECK(v == -2);
    CHECK_ERR(fl_incr(c, s, "api-ctr", 1, &stale, NULL), FL_ESTALE);
    fl_txn *tx = fl_txn_new(); /* TXN: compares, then all of one branch (REQ via s) */
    CHECK(tx != NULL);
    CHECK_ERR(fl_txn_if_holds(tx, fence.fence_name, fl_session_id(s)), FL_OK);
    CHECK_ERR(fl_txn_if_exists(tx, "api-t", 0), FL_OK);
    CHECK_ERR(fl_txn_then_put(tx, "api-t", "1", 1), FL_OK);
    CHECK_ERR(fl_txn_then_incr(tx, "api-ctr", 10), FL_OK);
    CHECK_ERR(fl_txn_else_del(tx, "api-t"), FL_OK);
    CHECK_ERR(fl_txn_fence(tx, fence.fence_name, fence.fence_token), FL_OK);
    CHECK_ERR(fl_txn_commit(c, s, tx), FL_OK);
    CHECK(fl_txn_succeeded(tx) && fl_txn_nresults(tx) == 2 && fl_txn_results_known(tx));
    CHECK(fl_txn_failed_op(tx) == 0);
    CHECK(fl_txn_result(tx, 0) == (int64_t)fl_txn_revision(tx) - 1 && fl_txn_result(tx, 1) == 8);
    CHECK_ERR(fl_txn_commit(c, NULL, tx), FL_OK); /* api-t exists now: ELSE deletes it */
    CHECK(!fl_txn_succeeded(tx) && fl_txn_nresults(tx) == 1 && fl_txn_result(tx, 0) == 1);
    CHECK_ERR(fl_txn_if_value(tx, "k", FL_TXN_LT, "x", 1), FL_EINVAL);
    CHECK_ERR(fl_txn_fence(tx, stale.fence_name, stale.fence_token), FL_OK);
    CHECK_ERR(fl_txn_commit(c, s, tx), FL_ESTALE);
    CHECK(fl_txn_failed_op(tx) == 0 && !fl_txn_succeeded(tx)); /* STALE names no op */
    fl_txn_free(tx);
    /* An op that cannot apply (op 2 increments "x"): FL_ESERVER, the op named, nothing applied;
     * a later commit refused for another reason names none */
    tx = fl_txn_new();
    CHECK(tx != NULL);
    CHECK_ERR(fl_txn_then_put(tx, "api-t2", "1", 1), FL_OK);
    CHECK_ERR(fl_txn_then_incr(tx, "eph", 1), FL_OK);
    CHECK_ERR(fl_txn_commit(c, s, tx), FL_ESERVER);
    CHECK(fl_txn_failed_op(tx) == 2 && strstr(fl_client_errmsg(c), "TXN op 2") != NULL);
    CHECK_ERR(fl_get(c, "api-t2", &kv), FL_ENOTFOUND);
    CHECK_ERR(fl_txn_commit(c, NULL, tx), FL_ESERVER);
    CHECK(fl_txn_failed_op(tx) == 2);
    CHECK_ERR(fl_txn_fence(tx, stale.fence_name, stale.fence_token), FL_OK);
    CHECK_ERR(fl_txn_commit(c, s, tx), FL_ESTALE);
    CHECK(fl_txn_failed_op(tx) == 0);
    fl_txn_free(tx);
    CHECK_ERR(fl_incr(c, NULL, "api-ctr", -10, NULL, NULL), FL_OK);
    CHECK_ERR(fl_incr(c, NULL, "eph", 1, NULL, NULL), FL_ESERVER); /* "x": not a counter */
    CHECK_ERR(fl_incr(c, NULL, "api-min", INT64_MIN, NULL, &v), FL_OK);
    CHECK(v == INT64_MIN);
    CHECK_ERR(fl_incr(c, NULL, "api-min", -1, NULL, NULL), FL_ESERVER); /* overflow */
    CHECK_ERR(fl_get(c, "api-ctr", &kv), FL_OK);
    CHECK(strcmp(kv.value, "-2") == 0);
    fl_kv_free(&kv);
    CHECK_ERR(fl_del(c, NULL, "api-ctr", NULL, NULL), FL_OK);
    CHECK_ERR(fl_del(c, NULL, "api-min", NULL, NULL), FL_OK);
    CHECK_ERR(fl_session_close(s), FL_OK);
    CHECK_ERR(fl_get(c, "eph", &kv), FL_ENOTFOUND); /* leased to the closed session */
    CHECK_ERR(fl_del(c, NULL, "stock", NULL, &deleted), FL_OK);
    CHECK(deleted == 1);
}

static void api_misc(fl_client *c)
{
    struct fl_status st;
    CHECK_ERR(fl_status(c, &st), FL_OK);
    CHECK(st.n_members >= 1 && st.leader_id && st.term >= 1 && st.revision > 0);
    CHECK(strcmp(st.role, "leader") == 0 && st.id == st.leader_id); /* asked of the leader */
    for (size_t i = 0; i < st.n_members; i++)
        CHECK(st.members[i].leader == (st.members[i].id == st.leader_id));
    fl_status_free(&st);
    uint64_t sid, ttl = 0;
    CHECK_ERR(fl_session_grant(c, 5000, 0, "by-id", &sid), FL_OK);
    CHECK_ERR(fl_session_keepalive_id(c, sid, &ttl), FL_OK);
    CHECK(ttl == 5000);
    CHECK_ERR(fl_session_close_id(c, sid), FL_OK);
    CHECK_ERR(fl_session_keepalive_id(c, sid, &ttl), FL_ESESSION);
    fl_session *s;
    CHECK_ERR(fl_session_open(c, 0, 0, NULL, &s), FL_EINVAL);
    CHECK(fl_client_new("nocolon", NULL, NULL) == NULL);
    CHECK(fl_client_new("h:0", NULL, NULL) == NULL);
    CHECK(strcmp(fl_strerror(FL_ESTALE), "stale fencing token") == 0);
}

/* A session closed behind the library's back is lost: the callback runs, calls fail. */
static atomic_int lost_calls;
static void count_lost(fl_session *s, void *ctx)
{
    (void)s;
    (void)ctx;
    atomic_fetch_add(&lost_calls, 1);
}

static void api_lost(fl_client *c)
{
    fl_session *s;
    uint64_t t;
    CHECK_ERR(fl_session_open(c, 600, 0, NULL, &s), FL_OK);
    fl_session_on_lost(s, count_lost, NULL);
    CHECK_ERR(fl_session_close_id(c, fl_session_id(s)), FL_OK);
    for (int i = 0; i < 200 && !atomic_load(&lost_calls); i++)
        usleep(10000);
    CHECK(atomic_load(&lost_calls) == 1);
    CHECK(fl_session_is_lost(s) && fl_session_safe_until(s) == 0);
    CHECK_ERR(fl_lock(s, "x", 0, &t), FL_ESESSION);
    fl_session_abandon(s);
    CHECK(atomic_load(&lost_calls) == 1);
}

static int mode_api(const char *ep)
{
    fl_client *c = client(ep, 0);
    api_locks(c);
    api_shared(c);
    api_lockmeta(c);
    api_multi(c);
    api_reentrant(c);
    api_kv(c);
    api_misc(c);
    api_lost(c);
    fl_client_free(c);
    printf("tests: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* ---- lock ---- */

enum hold_kind { H_LOCK, H_SHARED, H_SEM, H_CAMPAIGN };

static fl_err take(fl_session *s, enum hold_kind k, const char *name, const char *arg,
                   uint64_t wait_ms, uint64_t *token)
{
    switch (k) {
    case H_SHARED:
        return fl_lock_shared(s, name, wait_ms, token);
    case H_SEM:
        return fl_sem_acquire(s, name, (uint32_t)strtoul(arg, NULL, 10), wait_ms, token);
    case H_CAMPAIGN:
        return fl_campaign(s, name, arg, wait_ms, token);
    default:
        return fl_lock(s, name, wait_ms, token);
    }
}

static fl_err give(fl_session *s, enum hold_kind k, const char *name)
{
    return k == H_SEM        ? fl_sem_release(s, name)
           : k == H_CAMPAIGN ? fl_resign(s, name)
                             : fl_unlock(s, name);
}

static int mode_lock(const char *ep, const char *name, uint64_t wait_ms, uint64_t ttl,
                     enum hold_kind kind, const char *arg)
{
    fl_client *c = client(ep, 0);
    fl_session *s;
    fl_err e = fl_session_open(c, ttl, 0, NULL, &s);
    if (e) {
        printf("error open %s %s\n", fl_strerror(e), fl_client_errmsg(c));
        return 1;
    }
    printf("session %" PRIu64 "\n", fl_session_id(s));
    fflush(stdout);
    uint64_t token = 0;
    e = take(s, kind, name, arg, wait_ms, &token);
    if (e)
        printf("error lock %s %s\n", fl_strerror(e), fl_client_errmsg(c));
    else
        printf("granted %" PRIu64 "\n", token);
    fflush(stdout);
    char line[64];
    if (fgets(line, sizeof(line), stdin) && e == FL_OK) {
        e = give(s, kind, name);
        printf("unlock %s\n", fl_strerror(e));
    }
    e = fl_session_close(s);
    printf("closed %s\n", fl_strerror(e));
    fl_client_free(c);
    return 0;
}

/* ---- semaphores and elections ---- */

static void prims_sem(fl_client *c, fl_session *a, fl_session *b)
{
    uint64_t ta = 0, tb = 0, tl = 0;
    CHECK_ERR(fl_sem_acquire(a, "p.sem", 1, 0, &ta), FL_OK);
    CHECK(ta > 0);
    CHECK_ERR(fl_sem_acquire(b, "p.sem", 1, 200, &tb), FL_ETIMEOUT); /* limit 1: b waits */
    CHECK_ERR(fl_sem_acquire(b, "p.sem", 2, 0, &tb), FL_ESERVER);    /* another limit */
    CHECK_ERR(fl_fence_check(c, "p.sem", ta), FL_OK);
    CHECK_ERR(fl_lock(b, "p.sem", 0, &tl), FL_EWRONGTYPE);
    CHECK(strcmp(fl_strerror(FL_EWRONGTYPE), "unknown error") != 0);
    CHECK_ERR(fl_sem_release(a, "p.sem"), FL_OK);
    CHECK_ERR(fl_sem_release(a, "p.sem"), FL_ENOTHOLDER);
    CHECK_ERR(fl_fence_check(c, "p.sem", ta), FL_ESTALE);
    CHECK_ERR(fl_sem_acquire(b, "p.sem", 1, 1000, &tb), FL_OK);
    CHECK(tb > ta);
    CHECK_ERR(fl_sem_release(b, "p.sem"), FL_OK);
    CHECK_ERR(fl_sem_acquire(a, "", 1, 0, &ta), FL_EINVAL);
    CHECK_ERR(fl_sem_acquire(a, "p.sem", 0, 0, &ta), FL_EINVAL);
    /* weighted: a takes 2 of 3 at once; b's 2 do not fit until a releases its acquisition */
    CHECK_ERR(fl_sem_acquire_n(a, "p.wsem", 3, 2, 0, &ta), FL_OK);
    CHECK_ERR(fl_sem_acquire_n(b, "p.wsem", 3, 2, 200, &tb), FL_ETIMEOUT);
    CHECK_ERR(fl_sem_acquire_n(b, "p.wsem", 3, 1, 0, &tb), FL_OK);
    CHECK_ERR(fl_sem_release(b, "p.wsem"), FL_OK);
    CHECK_ERR(fl_sem_release(a, "p.wsem"), FL_OK);
    CHECK_ERR(fl_sem_acquire_n(b, "p.wsem", 3, 3, 1000, &tb), FL_OK);
    CHECK(tb > ta);
    CHECK_ERR(fl_sem_release(b, "p.wsem"), FL_OK);
    CHECK_ERR(fl_sem_acquire_n(a, "p.wsem", 3, 4, 0, &ta), FL_EINVAL);
    CHECK_ERR(fl_sem_acquire_n(a, "p.wsem", 3, 0, 0, &ta), FL_EINVAL);
    /* the operator's limit: kept while set, winning over the acquirers' 3 */
    int removed = -1;
    CHECK_ERR(fl_sem_setlimit(c, "p.wsem", 5), FL_OK);
    CHECK_ERR(fl_sem_acquire_n(a, "p.wsem", 3, 3, 0, &ta), FL_OK);
    CHECK_ERR(fl_sem_acquire_n(b, "p.wsem", 3, 2, 0, &tb), FL_OK); /* 5 in use of 5 */
    CHECK_ERR(fl_sem_release(a, "p.wsem"), FL_OK);
    CHECK_ERR(fl_sem_release(b, "p.wsem"), FL_OK);
    CHECK_ERR(fl_sem_limit_reset(c, "p.wsem", &removed), FL_OK);
    CHECK(removed == 1);
    CHECK_ERR(fl_sem_limit_reset(c, "p.wsem", &removed), FL_OK);
    CHECK(removed == 0);
    CHECK_ERR(fl_sem_setlimit(c, "p.wsem", 0), FL_EINVAL);
    CHECK_ERR(fl_sem_setlimit(c, "p.el.x", 2), FL_OK);
    CHECK_ERR(fl_sem_limit_reset(c, "p.el.x", NULL), FL_OK);
}

static void prims_elect(fl_client *c, fl_session *a, fl_session *b)
{
    uint64_t ta = 0, tb = 0, rev = 0;
    struct fl_leader_info l;
    CHECK_ERR(fl_leader(c, "p.el", &l), FL_ENOTFOUND);
    CHECK_ERR(fl_campaign(a, "p.el", "alpha", 0, &ta), FL_OK);
    CHECK_ERR(fl_campaign(b, "p.el", "beta", 0, &tb), FL_ETIMEOUT);
    CHECK_ERR(fl_leader(c, "p.el", &l), FL_OK);
    CHECK(l.sid == fl_session_id(a) && l.token == ta && strcmp(l.value, "alpha") == 0);
    uint64_t seen = l.rev;
    fl_leader_info_free(&l);
    CHECK_ERR(fl_observe(c, "p.el", seen, 200, &l), FL_ETIMEOUT); /* nothing changed */
    CHECK_ERR(fl_proclaim(a, "p.el", ta, "alpha2", &rev), FL_OK);
    CHECK(rev > seen);
    CHECK_ERR(fl_proclaim(b, "p.el", ta, "nope", &rev), FL_ESTALE);
    CHECK_ERR(fl_observe(c, "p.el", seen, 2000, &l), FL_OK);
    CHECK(l.sid == fl_session_id(a) && strcmp(l.value, "alpha2") == 0 && l.rev > seen);
    seen = l.rev;
    fl_leader_info_free(&l);
    CHECK_ERR(fl_resign(a, "p.el"), FL_OK);
    CHECK_ERR(fl_observe(c, "p.el", seen, 2000, &l), FL_OK);
    CHECK(l.sid == 0 && l.token == 0 && l.rev > seen);
    fl_leader_info_free(&l);
    CHECK_ERR(fl_campaign(b, "p.el", "beta", 1000, &tb), FL_OK);
    CHECK(tb > ta);
    CHECK_ERR(fl_fence_check(c, "p.el", ta), FL_ESTALE);
    CHECK_ERR(fl_fence_check(c, "p.el", tb), FL_OK);
    CHECK_ERR(fl_sem_acquire(a, "p.el", 1, 0, &ta), FL_EWRONGTYPE);
    CHECK_ERR(fl_resign(b, "p.el"), FL_OK);
    CHECK_ERR(fl_resign(b, "p.el"), FL_ENOTHOLDER);
}

struct waiter_arg {
    fl_session *s;
    fl_err err;
    uint64_t token;
};

static void *wait_for_y(void *arg)
{
    struct waiter_arg *w = arg;
    w->err = fl_lock(w->s, "p.dl.y", 10000, &w->token);
    return NULL;
}

/* Whether fl_lock_waits lists sid waiting for lock y behind `blocker`. */
static int listed(fl_client *c, uint64_t sid, uint64_t blocker)
{
    struct fl_wait_list wl;
    int found = 0;
    if (fl_lock_waits(c, "p.dl.", &wl) != FL_OK)
        return 0;
    for (size_t i = 0; i < wl.n; i++)
        found |= wl.v[i].sid == sid && strcmp(wl.v[i].lock, "p.dl.y") == 0 &&
                 strcmp(wl.v[i].object, "lock") == 0 && wl.v[i].n_waits_for == 1 &&
                 wl.v[i].waits_for[0] == blocker && !wl.v[i].any;
    fl_wait_list_free(&wl);
    return found;
}

/* a holds x and waits for y; b holds y: b's wait for x would close the cycle: FL_EDEADLOCK
   naming it, nothing queued; a's wait completes when b lets go of y. */
static void prims_deadlock(fl_client *c, fl_session *a, fl_session *b)
{
    uint64_t tx = 0, ty = 0, t = 0;
    CHECK_ERR(fl_lock(a, "p.dl.x", 0, &tx), FL_OK);
    CHECK_ERR(fl_lock(b, "p.dl.y", 0, &ty), FL_OK);
    struct waiter_arg w = {.s = a};
    pthread_t th;
    if (pthread_create(&th, NULL, wait_for_y, &w)) {
        CHECK(0);
        return;
    }
    int queued = 0;
    for (int i = 0; i < 500 && !queued; i++) { /* until a is queued on the server */
        queued = listed(c, fl_session_id(a), fl_session_id(b));
        if (!queued)
            usleep(20000);
    }
    CHECK(queued);
    CHECK_ERR(fl_lock(b, "p.dl.x", 10000, &t), FL_EDEADLOCK);
    CHECK(strstr(fl_client_errmsg(c), "cycle of 2") != NULL);
    CHECK(strcmp(fl_strerror(FL_EDEADLOCK), "unknown error") != 0);
    CHECK_ERR(fl_unlock(b, "p.dl.y"), FL_OK);
    pthread_join(th, NULL);
    CHECK(w.err == FL_OK && w.token > ty);
    CHECK_ERR(fl_unlock(a, "p.dl.y"), FL_OK);
    CHECK_ERR(fl_unlock(a, "p.dl.x"), FL_OK);
}

/* Latches and barriers: zero after the promised count-downs, FL_ETIMEOUT before; a joined
 * session closed before counting down breaks the latch (FL_EBROKEN); a barrier of one. */
static void prims_latch(fl_client *c, fl_session *a, fl_session *b)
{
    uint64_t left = 9;
    int deleted = 0;
    struct fl_latch_info li;
    fl_session *x = NULL;
    CHECK_ERR(fl_latch_create(c, "pl", 2), FL_OK);
    CHECK_ERR(fl_latch_create(c, "pl", 2), FL_OK);
    CHECK_ERR(fl_latch_join(a, "pl"), FL_OK);
    CHECK_ERR(fl_latch_countdown(a, "pl", &left), FL_OK);
    CHECK(left == 1);
    CHECK_ERR(fl_latch_wait(c, "pl", 0), FL_ETIMEOUT);
    CHECK_ERR(fl_latch_countdown(b, "pl", &left), FL_OK); /* anonymous: the unpromised count */
    CHECK(left == 0);
    CHECK_ERR(fl_latch_wait(c, "pl", 1000), FL_OK);
    CHECK_ERR(fl_latch_info(c, "pl", &li), FL_OK);
    CHECK(!li.barrier && li.state == 1 && li.count == 2 && li.n_joiners == 1);
    CHECK_ERR(fl_latch_delete(c, "pl", &deleted), FL_OK);
    CHECK(deleted == 1);
    CHECK_ERR(fl_latch_info(c, "pl", &li), FL_ENOTFOUND);
    CHECK_ERR(fl_session_open(c, 10000, 0, "latch-x", &x), FL_OK);
    CHECK_ERR(fl_latch_create(c, "pb", 1), FL_OK);
    if (x) {
        CHECK_ERR(fl_latch_join(x, "pb"), FL_OK);
        CHECK_ERR(fl_session_close(x), FL_OK);
    }
    CHECK_ERR(fl_latch_wait(c, "pb", 1000), FL_EBROKEN);
    CHECK_ERR(fl_latch_countdown(a, "pb", NULL), FL_EBROKEN);
    CHECK_ERR(fl_latch_delete(c, "pb", NULL), FL_OK);
    CHECK_ERR(fl_barrier_enter(a, "pq", 1, 1000), FL_OK);
    CHECK_ERR(fl_barrier_leave(a, "pq", 1000), FL_OK);
    CHECK_ERR(fl_latch_info(c, "pq", &li), FL_ENOTFOUND);
}

static int mode_prims(const char *ep)
{
    fl_client *c = client(ep, 0);
    fl_session *a = NULL, *b = NULL;
    CHECK_ERR(fl_session_open(c, 10000, 0, "prims-a", &a), FL_OK);
    CHECK_ERR(fl_session_open(c, 10000, 0, "prims-b", &b), FL_OK);
    if (a && b) {
        prims_sem(c, a, b);
        prims_elect(c, a, b);
        prims_deadlock(c, a, b);
        prims_latch(c, a, b);
    }
    if (a)
        fl_session_close(a);
    if (b)
        fl_session_close(b);
    fl_client_free(c);
    printf("tests: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* ---- signed tokens ---- */

static int mode_sign(const char *ep, const char *name)
{
    fl_client *c = client(ep, 0);
    fl_session *s = NULL;
    uint64_t token = 0;
    char sig[65] = "x";
    int valid = -1;
    CHECK_ERR(fl_session_open(c, 10000, 0, "sign", &s), FL_OK);
    fl_err e = s ? fl_lock_signed(s, name, 1000, &token, sig) : FL_EINVAL;
    if (e == FL_ESERVER) { /* no --token-key: the lock is held, sig is "" */
        CHECK(token != 0 && sig[0] == 0);
        printf("nokey %s\n", fl_strerror(e));
    } else {
        CHECK_ERR(e, FL_OK);
        printf("signed %" PRIu64 " %s\n", token, sig);
        CHECK_ERR(fl_sign(c, name, token + 1000, sig), FL_ESTALE);
        CHECK(sig[0] == 0);
        CHECK_ERR(fl_sign(c, name, token, sig), FL_OK);
        CHECK_ERR(fl_verify(c, name, token, sig, &valid), FL_OK);
        CHECK(valid == 1);
        CHECK_ERR(fl_verify(c, name, token + 1, sig, &valid), FL_OK);
        CHECK(valid == 0);
        printf("verified\n");
    }
    CHECK_ERR(fl_sign(c, "", token, sig), FL_EINVAL);
    if (s)
        fl_session_close(s);
    fl_client_free(c);
    printf("tests: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* ---- watch ---- */

/* Prints "event ID TYPE NAME", "compacted OLDEST" or "resumed LAST why"; on_compacted 1: stop. */
static int watch_cb(const struct fl_event *ev, void *ctx)
{
    int stop_on_compacted = *(int *)ctx;
    if (ev->kind == FL_WATCH_COMPACTED) {
        printf("compacted %s\n", ev->id);
        return stop_on_compacted;
    }
    if (ev->kind == FL_WATCH_INTERRUPTED) {
        printf("interrupted %s %s\n", ev->id[0] ? ev->id : "-", ev->message);
        return 0;
    }
    if (ev->kind == FL_WATCH_RESUMED) {
        printf("resumed %s %s\n", ev->id[0] ? ev->id : "-", ev->message);
        return 0;
    }
    printf("event %s %s %s\n", ev->id, ev->type, ev->name[0] ? ev->name : "-");
    return 0;
}

/* fl_watch until a stdin line (or EOF), then "end ERR LAST_ID". */
static int mode_watch(const char *ep, const char *prefix, const char *from, int stop_on_compacted)
{
    fl_client *c = client(ep, 0);
    fl_watcher *w;
    fl_err e =
        fl_watch(c, prefix, strcmp(from, "-") == 0 ? NULL : from, watch_cb, &stop_on_compacted, &w);
    if (e) {
        printf("error watch %s %s\n", fl_strerror(e), fl_client_errmsg(c));
        fl_client_free(c);
        return 1;
    }
    printf("watching\n");
    char line[64];
    if (!fgets(line, sizeof(line), stdin))
        line[0] = 0; /* EOF: stop as well */
    if (strcmp(line, "ends\n") == 0) {
        /* the test claims the watcher ends on its own: give it the chance before stopping it */
        for (int i = 0; i < 1000 && !fl_watch_done(w); i++)
            usleep(10000);
        printf("done-by-itself %d\n", fl_watch_done(w));
    }
    fl_watch_stop(w);
    char last[FL_WATCH_ID_MAX], msg[256];
    e = fl_watch_join(w, last, msg, sizeof(msg));
    printf("end %s %s %s\n", fl_strerror(e), last[0] ? last : "-", msg);
    fl_client_free(c);
    return 0;
}

/* ---- safe ---- */

/* remaining_ms of sid on whichever node answers as leader; -1 if none does now. */
static int64_t leader_remaining(int nports, char **ports, uint64_t sid)
{
    for (int i = 0; i < nports; i++) {
        struct timeval tv = {0, 200000};
        redisContext *rc = redisConnectWithTimeout("127.0.0.1", atoi(ports[i]), tv);
        if (!rc || rc->err) {
            redisFree(rc);
            continue;
        }
        redisSetTimeout(rc, tv);
        redisReply *r = redisCommand(rc, "SESSION.INFO %llu", (unsigned long long)sid);
        int64_t rem = -1;
        if (r && r->type == REDIS_REPLY_ARRAY)
            for (size_t k = 0; k + 1 < r->elements; k += 2)
                if (strcmp(r->element[k]->str, "remaining_ms") == 0)
                    rem = r->element[k + 1]->integer;
        if (r)
            freeReplyObject(r);
        redisFree(rc);
        if (rem >= 0)
            return rem;
    }
    return -1;
}

/*
 * The leader computed remaining_ms at some moment between our send (t0) and the reply (t1), so
 * its expiry deadline lies in [t0 + rem, t1 + rem]. The library's safe deadline, read just
 * before, must not exceed even the upper end (+1 ms for the two roundings): only a safe
 * deadline provably later than the server's is a failure. The check's blind spot is the query's
 * round trip (min_slack shows how close the two deadlines came).
 */
static int mode_safe(const char *ep, uint64_t ttl, int nports, char **ports)
{
    fl_client *c = client(ep, 1);
    fl_session *s;
    fl_err e = fl_session_open(c, ttl, 0, NULL, &s);
    if (e) {
        printf("error open %s %s\n", fl_strerror(e), fl_client_errmsg(c));
        return 1;
    }
    fl_session_on_lost(s, count_lost, NULL);
    printf("session %" PRIu64 "\n", fl_session_id(s));
    fflush(stdout);
    int checks = 0, bad = 0;
    int64_t min_slack = INT64_MAX, last_safe = 0, end = fl_now_ms() + 60000;
    while (!atomic_load(&lost_calls) && fl_now_ms() < end) {
        int64_t safe = fl_session_safe_until(s);
        int64_t t0 = fl_now_ms();
        int64_t rem = leader_remaining(nports, ports, fl_session_id(s));
        int64_t t1 = fl_now_ms();
        if (safe && rem >= 0) {
            checks++;
            if (t0 + rem - safe < min_slack)
                min_slack = t0 + rem - safe;
            if (safe > t1 + rem + 1) {
                bad++;
                printf("FAIL safe_until %" PRId64 " > server deadline <= %" PRId64 "\n", safe,
                       t1 + rem);
            }
        }
        if (safe)
            last_safe = safe;
        if (checks == 1 || checks % 20 == 0)
            printf("checks %d\n", checks);
        fflush(stdout);
        usleep(20000);
    }
    int64_t lost_at = fl_now_ms();
    printf("lost at %" PRId64 " last_safe %" PRId64
           " checks %d bad %d callbacks %d min_slack %" PRId64 "\n",
           lost_at, last_safe, checks, bad, atomic_load(&lost_calls), min_slack);
    fflush(stdout);
    fl_session_abandon(s);
    fl_client_free(c);
    return bad != 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "api") == 0)
        return mode_api(argv[2]);
    if (argc == 6 && (strcmp(argv[1], "lock") == 0 || strcmp(argv[1], "shared") == 0))
        return mode_lock(argv[2], argv[3], strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10),
                         strcmp(argv[1], "shared") == 0 ? H_SHARED : H_LOCK, NULL);
    if (argc == 7 && (strcmp(argv[1], "sem") == 0 || strcmp(argv[1], "campaign") == 0))
        return mode_lock(argv[2], argv[3], strtoull(argv[5], NULL, 10), strtoull(argv[6], NULL, 10),
                         strcmp(argv[1], "sem") == 0 ? H_SEM : H_CAMPAIGN, argv[4]);
    if (argc == 4 && strcmp(argv[1], "sign") == 0)
        return mode_sign(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "prims") == 0)
        return mode_prims(argv[2]);
    if (argc == 6 && strcmp(argv[1], "watch") == 0)
        return mode_watch(argv[2], argv[3], argv[4], strcmp(argv[5], "stop") == 0);
    if (argc >= 5 && strcmp(argv[1], "safe") == 0)
        return mode_safe(argv[2], strtoull(argv[3], NULL, 10), argc - 4, argv + 4);
    fprintf(stderr,
            "usage: fl_probe api EP | prims EP | sign EP NAME | lock|shared EP NAME WAIT_MS TTL | "
            "sem|campaign EP NAME LIMIT|VALUE WAIT_MS TTL | watch EP PREFIX "
            "FROM|- stop|continue | safe EP TTL PORT...\n");
    return 2;
}
