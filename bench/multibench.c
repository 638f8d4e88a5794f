/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multibench — lockbench's W13, multi-lock under contention, fencelock's two ways. The workload
 * (bench/README.md "W13", the same in bench/go and bench/java so that the rows compare):
 *   - a pool of W13_POOL (16) lock names "<prefix>/n00" .. "/n15" (zero-padded: the byte order
 *     is the numeric order), a prefix of its own per row;
 *   - `clients` clients (default 8), each with its own connection and session;
 *   - client c's t-th set (t = 0, 1, ...) is the k names n[(7c + 3t + j) mod 16], j < k,
 *     taken in ascending name order: windows of k neighbours on a ring of 16 that move by 3 each
 *     time, the clients' windows starting spread over the ring, so that sets overlap more the
 *     larger k is (k = 8: every set covers half the pool);
 *   - a set is acquired whole (waiting at most W13_WAIT_MS for all of it), held `hold_ms`,
 *     released whole; a set not granted in time is a timeout (what was taken is released).
 * Ways: "multi" is fl_lock_multi (LOCK.MULTI: one request, one log entry; FIFO on every name)
 * then fl_unlock_multi; "sequential" is fl_lock of each name in ascending order (the
 * deadlock-free recipe of client-side multi-locks; each wait the rest of the set's deadline),
 * then fl_unlock of each. Measured: sets acquired (and released) per second, and per set the
 * acquire time + release time (the hold left out) p50/p99/max. Bounded by `count` sets in all
 * and by `seconds`. One JSON line per (k, way); k = 0 runs 2, 4 and 8, way NULL both ways.
 * Owns its clients and sessions, all freed before it returns.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fencelock.h"

#define W13_WAIT_MS 5000 /* the whole set's wait */
#define W13_POOL 16
#define W13_MAX_K 8
#define W13_LAT_CAP 200000 /* set samples kept per client */

int bench_w13(const char *endpoints, int clients, int k, const char *way, int hold_ms, int ttl_ms,
              long count, int seconds);

static double mb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void mb_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int mb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Shared by the clients of one row. */
struct w13_run {
    const char *endpoints, *prefix;
    int k, multi, hold_ms, ttl_ms;
    long count;
    double end_ms;
    atomic_long taken; /* sets claimed so far (count bound) */
    atomic_int stop;   /* set on the first error */
    atomic_int go;     /* the start gate: every client's first set at once */
};

struct w13_client {
    struct w13_run *run;
    int id;
    fl_client *c;
    fl_session *s;
    double *lat;
    long sets, timeouts, errors;
    char err[200];
};

/* The set of client `id` at its t-th turn: k names in ascending order into buf/names. */
static void w13_set(const char *prefix, int id, long t, int k, char buf[][64], const char **names)
{
    int idx[W13_MAX_K], start = (int)((7L * id + 3L * t) % W13_POOL);
    for (int j = 0; j < k; j++)
        idx[j] = (start + j) % W13_POOL;
    for (int i = 1; i < k; i++) /* insertion sort: at most 8 */
        for (int j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
        }
    for (int j = 0; j < k; j++) {
        snprintf(buf[j], 64, "%s/n%02d", prefix, idx[j]);
        names[j] = buf[j];
    }
}

/* One set: 0 done, 1 timeout (nothing held after it), -1 error (in cl->err). *lat: the acquire
 * time + the release time. */
static int w13_one(struct w13_client *cl, const char *const *names, double *lat)
{
    struct w13_run *r = cl->run;
    uint64_t tok[W13_MAX_K];
    fl_err e = FL_OK;
    int got = 0;
    double t0 = mb_now_ms(), deadline = t0 + W13_WAIT_MS;
    if (r->multi) {
        e = fl_lock_multi(cl->s, (size_t)r->k, names, NULL, W13_WAIT_MS, tok);
        got = e ? 0 : r->k;
    } else {
        for (; got < r->k; got++) {
            double left = deadline - mb_now_ms();
            e = left < 1 ? FL_ETIMEOUT : fl_lock(cl->s, names[got], (uint64_t)left, &tok[got]);
            if (e)
                break;
        }
    }
    double t1 = mb_now_ms();
    if (!e && r->hold_ms > 0)
        mb_sleep_ms(r->hold_ms);
    double t2 = mb_now_ms();
    fl_err u = FL_OK;
    if (r->multi && got)
        u = fl_unlock_multi(cl->s, (size_t)got, names);
    else
        for (int i = 0; i < got; i++) {
            fl_err x = fl_unlock(cl->s, names[i]);
            u = u ? u : x;
        }
    *lat = (t1 - t0) + (mb_now_ms() - t2);
    if (e == FL_ETIMEOUT && !u)
        return 1;
    const char *what = "lock";
    if (u && (!e || e == FL_ETIMEOUT)) {
        e = u;
        what = "unlock";
    }
    if (e)
        snprintf(cl->err, sizeof(cl->err), "%s: %s: %s", what, fl_strerror(e),
                 fl_client_errmsg(cl->c));
    return e ? -1 : 0;
}

static void *w13_thread(void *arg)
{
    struct w13_client *cl = arg;
    struct w13_run *r = cl->run;
    char buf[W13_MAX_K][64];
    const char *names[W13_MAX_K];
    while (!atomic_load(&r->go))
        mb_sleep_ms(1);
    for (long t = 0; !atomic_load(&r->stop) && mb_now_ms() < r->end_ms; t++) {
        if (atomic_fetch_add(&r->taken, 1) >= r->count)
            break;
        w13_set(r->prefix, cl->id, t, r->k, buf, names);
        double lat;
        int rc = w13_one(cl, names, &lat);
        if (rc < 0) {
            cl->errors++;
            atomic_store(&r->stop, 1);
            break;
        }
        if (rc > 0) {
            cl->timeouts++;
            continue;
        }
        if (mb_now_ms() > r->end_ms) /* finished after the time bound: not counted */
            break;
        if (cl->sets < W13_LAT_CAP)
            cl->lat[cl->sets] = lat;
        cl->sets++;
    }
    return NULL;
}

/* One row: clients on sets of k, one way; prints its JSON line. 0 ok, 1 error. */
static int w13_row(const char *endpoints, int nc, int k, int multi, int hold_ms, int ttl_ms,
                   long count, int seconds)
{
    char prefix[64], err[256] = "";
    snprintf(prefix, sizeof(prefix), "lb-%d-%ld-W13-k%d-%s", (int)getpid(), (long)time(NULL), k,
             multi ? "multi" : "seq");
    struct w13_run r = {.endpoints = endpoints,
                        .prefix = prefix,
                        .k = k,
                        .multi = multi,
                        .hold_ms = hold_ms,
                        .ttl_ms = ttl_ms,
                        .count = count};
    struct w13_client *cl = calloc((size_t)nc, sizeof(*cl));
    int made = 0;
    for (; cl && made < nc; made++) {
        fl_err e = FL_OK;
        cl[made] = (struct w13_client){.run = &r, .id = made};
        cl[made].lat = malloc(W13_LAT_CAP * sizeof(double));
        if (!cl[made].lat) {
            snprintf(err, sizeof(err), "out of memory");
            break;
        }
        cl[made].c = fl_client_new(endpoints, NULL, &e);
        if (!cl[made].c) {
            snprintf(err, sizeof(err), "fl_client_new: %s", fl_strerror(e));
            free(cl[made].lat);
            break;
        }
        e = fl_session_open(cl[made].c, (uint64_t)ttl_ms, 0, "w13", &cl[made].s);
        if (e) {
            snprintf(err, sizeof(err), "fl_session_open: %s: %s", fl_strerror(e),
                     fl_client_errmsg(cl[made].c));
            fl_client_free(cl[made].c);
            free(cl[made].lat);
            break;
        }
    }
    if (!cl)
        snprintf(err, sizeof(err), "out of memory");
    double t0 = 0, secs = 0;
    if (!*err) {
        pthread_t th[1000]; /* lockbench's --clients is at most 1000 */
        int started = 0;
        for (; started < nc; started++)
            if (pthread_create(&th[started], NULL, w13_thread, &cl[started]))
                break;
        if (started < nc) { /* the ones started leave at once */
            snprintf(err, sizeof(err), "pthread_create failed");
            atomic_store(&r.stop, 1);
        }
        t0 = mb_now_ms();
        r.end_ms = t0 + seconds * 1e3;
        atomic_store(&r.go, 1);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        secs = (mb_now_ms() - t0) / 1e3;
    }
    long sets = 0, timeouts = 0, errors = *err ? 1 : 0, n = 0;
    for (int i = 0; i < made; i++) {
        sets += cl[i].sets;
        timeouts += cl[i].timeouts;
        errors += cl[i].errors;
        if (cl[i].errors && !*err)
            snprintf(err, sizeof(err), "client %d: %s", i, cl[i].err);
        n += cl[i].sets < W13_LAT_CAP ? cl[i].sets : W13_LAT_CAP;
    }
    double *all = n ? malloc((size_t)n * sizeof(double)) : NULL;
    double p50 = 0, p99 = 0, max = 0;
    if (all) {
        long m = 0;
        for (int i = 0; i < made; i++) {
            long c = cl[i].sets < W13_LAT_CAP ? cl[i].sets : W13_LAT_CAP;
            memcpy(all + m, cl[i].lat, (size_t)c * sizeof(double));
            m += c;
        }
        qsort(all, (size_t)n, sizeof(double), mb_cmp);
        p50 = all[n / 2];
        p99 = all[n * 99 / 100];
        max = all[n - 1];
        free(all);
    }
    printf("{\"driver\":\"fencelock\",\"workload\":\"W13\",\"way\":\"%s\",\"k\":%d,\"pool\":%d,"
           "\"clients\":%d,\"hold_ms\":%d,\"seconds\":%.3f,\"sets\":%ld,\"sets_per_s\":%.1f,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"timeouts\":%ld,\"errors\":%ld",
           multi ? "multi" : "sequential", k, W13_POOL, nc, hold_ms, secs, sets,
           secs > 0 ? sets / secs : 0.0, p50, p99, max, timeouts, errors);
    if (*err) {
        printf(",\"error\":\"");
        for (const char *p = err; *p; p++)
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p >= 0x20)
                putchar(*p);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
    for (int i = 0; i < made; i++) {
        fl_session_close(cl[i].s);
        fl_client_free(cl[i].c);
        free(cl[i].lat);
    }
    free(cl);
    return errors ? 1 : 0;
}

int bench_w13(const char *endpoints, int clients, int k, const char *way, int hold_ms, int ttl_ms,
              long count, int seconds)
{
    static const int ks[] = {2, 4, 8};
    int rc = 0;
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
        if (k && ks[i] != k)
            continue;
        for (int multi = 1; multi >= 0; multi--)
            if (!way || !strcmp(way, multi ? "multi" : "sequential"))
                rc |= w13_row(endpoints, clients, ks[i], multi, hold_ms, ttl_ms, count, seconds);
    }
    return rc;
}
