/* SPDX-License-Identifier: Apache-2.0 */
/* clang-format off */
/*
 * drvcheck: a self-check of the etcd and ZooKeeper bench drivers against running clusters
 * (bench/servers/etcd.sh start, bench/servers/zookeeper.sh start).
 *
 * Owns nothing beyond its own test clients. Recipe, per driver: three clients A, B, C on one
 * lock name. A lock held 6 s by a client with ttl_ms 2000 stays held (keepalive / pings). A
 * acquires; B's try (wait 0) and B's 300 ms wait both give BENCH_TIMEOUT while A holds; after A
 * releases, C's try succeeds at once (the timed-out waiter left nothing queued) with a larger
 * token; a waiter blocked in acquire gets the lock after the holder releases, with a larger
 * token; 20 successive grants have strictly increasing tokens; a waiter that holds another lock
 * times out without losing that lock or leaving anything queued; 6 contending clients never
 * overlap and see tokens in grant order. Then one client's acquire+release pair latency over
 * 200 pairs (mean, p50, p99). Prints "N passed, N failed"; exits 1 on any failure.
 *
 * Build: cc -Iinclude -Ibench bench/drvcheck.c bench/drv_etcd.c bench/drv_zookeeper.c -lzookeeper_mt -lcurl -lpthread -o build/drvcheck
 * Run:   build/drvcheck [etcd|zookeeper]
 *        (endpoints from ETCD_ENDPOINTS / ZK_ENDPOINTS; default: the ports of etcd.sh, zookeeper.sh)
 */
/* clang-format on */
#include "driver.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tally {
    int passed, failed;
};

static void check(struct tally *t, const char *drv, int ok, const char *what)
{
    if (ok)
        t->passed++;
    else
        t->failed++;
    printf("  %s %s: %s\n", ok ? "ok  " : "FAIL", drv, what);
    fflush(stdout);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct waiter {
    const struct bench_driver *d;
    void *cl;
    const char *name;
    int rc;
    uint64_t token;
    double done_ms;
    char err[256];
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->rc = w->d->acquire(w->cl, w->name, 5000, &w->token, w->err, sizeof(w->err));
    w->done_ms = now_ms();
    return NULL;
}

struct shared {
    pthread_mutex_t mu;
    int holders, overlaps, grants, token_order_ok;
    uint64_t last_token;
};

struct contender {
    const struct bench_driver *d;
    void *cl;
    const char *name;
    struct shared *sh;
    int rounds, errors;
    pthread_t th;
};

static void *contend(void *arg)
{
    struct contender *k = arg;
    char err[256];
    for (int i = 0; i < k->rounds; i++) {
        uint64_t tok = 0;
        int rc = k->d->acquire(k->cl, k->name, 10000, &tok, err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "contender: acquire rc %d: %s\n", rc, rc < 0 ? err : "timeout");
            k->errors++;
            continue;
        }
        pthread_mutex_lock(&k->sh->mu);
        if (k->sh->holders++ > 0)
            k->sh->overlaps++;
        k->sh->grants++;
        if (tok <= k->sh->last_token)
            k->sh->token_order_ok = 0;
        k->sh->last_token = tok;
        pthread_mutex_unlock(&k->sh->mu);
        usleep(1000);
        pthread_mutex_lock(&k->sh->mu);
        k->sh->holders--;
        pthread_mutex_unlock(&k->sh->mu);
        if (k->d->release(k->cl, k->name, err, sizeof(err)) != 0) {
            fprintf(stderr, "contender: release: %s\n", err);
            k->errors++;
        }
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(const struct bench_driver *d, const char *eps, struct tally *t)
{
    struct bench_cfg cfg = {.endpoints = eps, .ttl_ms = 10000};
    char err[256] = "", name[64], what[512];
    uint64_t ta = 0, tb = 0, tc = 0, prev;
    int rc;
    void *a, *b, *c;

    printf("%s (%s)\n", d->name, eps);
    snprintf(name, sizeof(name), "drvcheck-%ld-%ld", (long)getpid(), (long)time(NULL));
    a = d->client_new(&cfg, 0, err, sizeof(err));
    b = a ? d->client_new(&cfg, 1, err, sizeof(err)) : NULL;
    c = b ? d->client_new(&cfg, 2, err, sizeof(err)) : NULL;
    snprintf(what, sizeof(what), "three clients (%s)", c ? "made" : err);
    check(t, d->name, c != NULL, what);
    if (!c)
        goto out;

    /* A lease/session outlives its TTL while the client lives (keepalive / pings). */
    {
        struct bench_cfg shortcfg = {.endpoints = eps, .ttl_ms = 2000};
        void *s = d->client_new(&shortcfg, 3, err, sizeof(err));
        char lname[80];
        uint64_t t1 = 0, t2 = 0;
        snprintf(lname, sizeof(lname), "%s-hold", name);
        int r1 = s ? d->acquire(s, lname, 0, &t1, err, sizeof(err)) : -1;
        if (r1 == 0)
            sleep(6);
        int r2 = r1 == 0 ? d->acquire(a, lname, 0, &t2, err, sizeof(err)) : -1;
        int r3 = r1 == 0 ? d->release(s, lname, err, sizeof(err)) : -1;
        snprintf(what, sizeof(what),
                 "a lock held 6 s with ttl_ms 2000 is still held (rc %d %d %d%s%s)", r1, r2, r3,
                 r3 < 0 ? ", " : "", r3 < 0 ? err : "");
        check(t, d->name, r1 == 0 && r2 == BENCH_TIMEOUT && r3 == 0, what);
        if (s)
            d->client_free(s);
    }

    rc = d->acquire(a, name, 0, &ta, err, sizeof(err));
    snprintf(what, sizeof(what), "A acquires a free lock (rc %d, token %" PRIu64 "%s%s)", rc, ta,
             rc < 0 ? ", " : "", rc < 0 ? err : "");
    check(t, d->name, rc == 0 && ta > 0, what);

    rc = d->acquire(b, name, 0, &tb, err, sizeof(err));
    snprintf(what, sizeof(what), "B's try (wait 0) while A holds gives BENCH_TIMEOUT (rc %d%s%s)",
             rc, rc < 0 ? ", " : "", rc < 0 ? err : "");
    check(t, d->name, rc == BENCH_TIMEOUT, what);

    double t0 = now_ms();
    rc = d->acquire(b, name, 300, &tb, err, sizeof(err));
    double el = now_ms() - t0;
    snprintf(what, sizeof(what),
             "B's wait of 300 ms while A holds gives BENCH_TIMEOUT after %.0f ms (rc %d%s%s)", el,
             rc, rc < 0 ? ", " : "", rc < 0 ? err : "");
    check(t, d->name, rc == BENCH_TIMEOUT && el >= 290 && el < 2000, what);

    rc = d->release(a, name, err, sizeof(err));
    snprintf(what, sizeof(what), "A releases (rc %d%s%s)", rc, rc ? ", " : "", rc ? err : "");
    check(t, d->name, rc == 0, what);

    rc = d->acquire(c, name, 0, &tc, err, sizeof(err));
    snprintf(
        what, sizeof(what),
        "C's try succeeds at once: timed-out waiters left nothing queued (rc %d, token %" PRIu64
        " > %" PRIu64 "%s%s)",
        rc, tc, ta, rc < 0 ? ", " : "", rc < 0 ? err : "");
    check(t, d->name, rc == 0 && tc > ta, what);

    /* A waiter blocked in acquire gets the lock once the holder releases. */
    struct waiter w = {.d = d, .cl = b, .name = name, .rc = -2};
    pthread_t th;
    if (pthread_create(&th, NULL, wait_thread, &w) != 0) {
        check(t, d->name, 0, "start waiter thread");
        goto out;
    }
    usleep(300 * 1000);
    double rel_ms = now_ms();
    rc = d->release(c, name, err, sizeof(err));
    check(t, d->name, rc == 0, "C releases while B waits");
    pthread_join(th, NULL);
    snprintf(what, sizeof(what),
             "waiting B gets the lock %.1f ms after C's release (rc %d, token %" PRIu64
             " > %" PRIu64 "%s%s)",
             w.done_ms - rel_ms, w.rc, w.token, tc, w.rc < 0 ? ", " : "", w.rc < 0 ? w.err : "");
    check(t, d->name, w.rc == 0 && w.token > tc && w.done_ms >= rel_ms, what);
    if (w.rc == 0) {
        rc = d->release(b, name, err, sizeof(err));
        check(t, d->name, rc == 0, "B releases");
    }

    /* Successive grants (alternating clients): strictly increasing tokens. */
    prev = w.rc == 0 ? w.token : tc;
    int mono = 1, n = 0;
    for (int i = 0; i < 20; i++) {
        void *cl = i % 2 ? a : c;
        uint64_t tok = 0;
        if (d->acquire(cl, name, 0, &tok, err, sizeof(err)) != 0 ||
            d->release(cl, name, err, sizeof(err)) != 0) {
            mono = 0;
            break;
        }
        if (tok <= prev)
            mono = 0;
        prev = tok;
        n++;
    }
    snprintf(what, sizeof(what),
             "20 successive grants have strictly increasing tokens (%d done%s%s)", n,
             n < 20 ? ", " : "", n < 20 ? err : "");
    check(t, d->name, mono && n == 20, what);

    /* A waiter that holds another lock times out: only its queued entry goes (etcd: the delete
     * path instead of the lease revoke), and the holder of that other lock keeps it. */
    {
        char other[80];
        uint64_t to = 0, tx = 0;
        snprintf(other, sizeof(other), "%s-other", name);
        int r1 = d->acquire(b, other, 0, &to, err, sizeof(err));
        int r2 = r1 == 0 ? d->acquire(a, name, 0, &ta, err, sizeof(err)) : -1;
        int r3 = r2 == 0 ? d->acquire(b, name, 200, &tb, err, sizeof(err)) : -1;
        int r4 = r3 == BENCH_TIMEOUT ? d->release(a, name, err, sizeof(err)) : -1;
        int r5 = r4 == 0 ? d->acquire(c, name, 0, &tc, err, sizeof(err)) : -1;
        int r6 = r5 == 0 ? d->acquire(c, other, 0, &tx, err, sizeof(err)) : -1;
        snprintf(what, sizeof(what),
                 "a waiter holding another lock times out, leaves nothing queued and keeps the "
                 "other lock (rc %d %d %d %d %d %d%s%s)",
                 r1, r2, r3, r4, r5, r6, r6 < 0 ? ", " : "", r6 < 0 ? err : "");
        check(t, d->name, r3 == BENCH_TIMEOUT && r5 == 0 && r6 == BENCH_TIMEOUT, what);
        if (r5 == 0)
            d->release(c, name, err, sizeof(err));
        if (r1 == 0)
            d->release(b, other, err, sizeof(err));
    }

    /* Mutual exclusion under contention: 6 clients, 15 rounds each. */
    {
        struct contender cs[6];
        struct shared sh = {
            .holders = 0, .overlaps = 0, .grants = 0, .last_token = 0, .token_order_ok = 1};
        pthread_mutex_init(&sh.mu, NULL);
        int made = 0;
        for (int i = 0; i < 6; i++) {
            cs[i] = (struct contender){.d = d, .name = name, .sh = &sh, .rounds = 15};
            cs[i].cl = d->client_new(&cfg, 10 + i, err, sizeof(err));
            if (cs[i].cl)
                made++;
        }
        if (made == 6) {
            for (int i = 0; i < 6; i++)
                pthread_create(&cs[i].th, NULL, contend, &cs[i]);
            for (int i = 0; i < 6; i++)
                pthread_join(cs[i].th, NULL);
        }
        int errs = 0;
        for (int i = 0; i < 6; i++) {
            errs += cs[i].errors;
            if (cs[i].cl)
                d->client_free(cs[i].cl);
        }
        snprintf(
            what, sizeof(what),
            "6 contending clients: %d grants, %d overlaps, %d errors, tokens in grant order: %s",
            sh.grants, sh.overlaps, errs, sh.token_order_ok ? "yes" : "no");
        check(t, d->name,
              made == 6 && sh.grants == 90 && sh.overlaps == 0 && errs == 0 && sh.token_order_ok,
              what);
        pthread_mutex_destroy(&sh.mu);
    }

    /* One client's acquire+release pair latency. */
    enum { PAIRS = 200 };
    double lat[PAIRS], sum = 0;
    int got = 0;
    for (int i = 0; i < PAIRS; i++) {
        uint64_t tok;
        double s = now_ms();
        if (d->acquire(a, name, 1000, &tok, err, sizeof(err)) != 0 ||
            d->release(a, name, err, sizeof(err)) != 0)
            break;
        lat[got++] = now_ms() - s;
        sum += lat[got - 1];
    }
    check(t, d->name, got == PAIRS, "200 acquire+release pairs");
    if (got > 0) {
        qsort(lat, (size_t)got, sizeof(lat[0]), cmp_double);
        printf("  %s: acquire+release pair, one client: mean %.2f ms, p50 %.2f ms, p99 %.2f ms "
               "(%d pairs)\n",
               d->name, sum / got, lat[got / 2],
               lat[(got * 99) / 100 < got ? (got * 99) / 100 : got - 1], got);
    }
out:
    if (c)
        d->client_free(c);
    if (b)
        d->client_free(b);
    if (a)
        d->client_free(a);
}

int main(int argc, char **argv)
{
    struct tally t = {0, 0};
    const char *only = argc > 1 ? argv[1] : NULL;
    const char *ee = getenv("ETCD_ENDPOINTS"), *ze = getenv("ZK_ENDPOINTS");
    if (!only || strcmp(only, "etcd") == 0)
        run(&bench_etcd, ee ? ee : "127.0.0.1:12379,127.0.0.1:12389,127.0.0.1:12399", &t);
    if (!only || strcmp(only, "zookeeper") == 0)
        run(&bench_zookeeper, ze ? ze : "127.0.0.1:12181,127.0.0.1:12182,127.0.0.1:12183", &t);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
