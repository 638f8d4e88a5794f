/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rwbench — lockbench's W9: read-write locks. `readers` clients take one lock in
 * shared mode and release it, in a loop, while one writer takes the same lock exclusively every
 * `pause_ms`: reader grants/s, reader and writer wait p50/p99 (call to grant), the writer's
 * grants, timeouts and longest wait (the FIFO rule: a queued writer keeps later readers out,
 * so its wait stays bounded by one round of the readers ahead of it), and the most readers
 * seen holding the lock at once (client-side: grant answered .. UNLOCK sent).
 *
 * Two ways to reach a system, behind the small table `rw_ops`:
 * - fencelock: raw RESP to the leader over hiredis (libfencelock has no shared mode yet), one
 *   connection and one session per client, `LOCK name sid [SHARED] WAIT ms REQ sid seq` and
 *   `UNLOCK name sid REQ sid seq`, SESSION.KEEPALIVE between calls every TTL/3. With
 *   `exclusive` the readers send plain LOCK: the same loop on a mutex, the baseline.
 * - any other driver (bench/driver.h): readers and writer through its acquire/release. No other
 *   system's lock service has a shared mode (etcd's Go client has only an experimental
 *   recipes.RWMutex, not reimplemented here), so its readers take the exclusive lock.
 * Owns its threads, connections and sessions; everything is closed before it returns. Bounded
 * by `count` reader grants and `seconds`; each call waits at most W9_WAIT_MS. One JSON line.
 */
#include "driver.h"
#include "flraw.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W9_WAIT_MS 5000
#define W9_MAX_READERS 256
#define W9_LAT_CAP 1000000 /* wait samples kept per run (readers share them) */

int bench_w9(const struct bench_driver *drv, const char *endpoints, int readers, int ttl_ms,
             long count, int seconds, int exclusive, int pause_ms, int hold_ms);

static double rw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One client of a system: new, acquire (shared or not), release, free. acquire returns 0,
   BENCH_TIMEOUT or -1 with err, as the driver table does. */
struct rw_ops {
    void *(*client_new)(const void *ctx, const char *endpoints, int id, int ttl_ms, char *err,
                        size_t errlen);
    int (*acquire)(void *cl, const char *name, int shared, char *err, size_t errlen);
    int (*release)(void *cl, const char *name, char *err, size_t errlen);
    void (*client_free)(void *cl);
};

/* ---- fencelock over raw RESP ---- */

struct rw_fl {
    redisContext *c;
    long long sid, seq;
    int ttl_ms;
    double last_ka;
};

static void *rwfl_new(const void *ctx, const char *endpoints, int id, int ttl_ms, char *err,
                      size_t errlen)
{
    (void)ctx;
    (void)id;
    struct rw_fl *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->c = fr_connect_leader(endpoints, err, errlen);
    redisReply *r = f->c ? redisCommand(f->c, "SESSION.OPEN %d", ttl_ms) : NULL;
    if (r && r->type == REDIS_REPLY_INTEGER) {
        f->sid = r->integer;
        f->ttl_ms = ttl_ms;
        f->last_ka = rw_now_ms();
        freeReplyObject(r);
        return f;
    }
    if (f->c)
        snprintf(err, errlen, "SESSION.OPEN: %s", r && r->str ? r->str : f->c->errstr);
    if (r)
        freeReplyObject(r);
    if (f->c)
        redisFree(f->c);
    free(f);
    return NULL;
}

static void rwfl_free(void *cl)
{
    struct rw_fl *f = cl;
    redisReply *r = redisCommand(f->c, "SESSION.CLOSE %lld", f->sid);
    if (r)
        freeReplyObject(r);
    redisFree(f->c);
    free(f);
}

/* The session lives as long as the client: a keepalive once a third of the TTL has passed
   (the wait of a call is shorter than the other two thirds: W9 needs a TTL over 7.5 s). */
static int rwfl_keepalive(struct rw_fl *f, char *err, size_t errlen)
{
    if (rw_now_ms() - f->last_ka < f->ttl_ms / 3.0)
        return 0;
    redisReply *r = redisCommand(f->c, "SESSION.KEEPALIVE %lld", f->sid);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        snprintf(err, errlen, "SESSION.KEEPALIVE: %s", r && r->str ? r->str : f->c->errstr);
    if (r)
        freeReplyObject(r);
    f->last_ka = rw_now_ms();
    return ok ? 0 : -1;
}

static int rwfl_acquire(void *cl, const char *name, int shared, char *err, size_t errlen)
{
    struct rw_fl *f = cl;
    if (rwfl_keepalive(f, err, errlen))
        return -1;
    f->seq++;
    redisReply *r = shared ? redisCommand(f->c, "LOCK %s %lld SHARED WAIT %d REQ %lld %lld", name,
                                          f->sid, W9_WAIT_MS, f->sid, f->seq)
                           : redisCommand(f->c, "LOCK %s %lld WAIT %d REQ %lld %lld", name, f->sid,
                                          W9_WAIT_MS, f->sid, f->seq);
    int rc = -1;
    if (r && r->type == REDIS_REPLY_INTEGER)
        rc = 0;
    else if (r && r->type == REDIS_REPLY_NIL)
        rc = BENCH_TIMEOUT;
    else
        snprintf(err, errlen, "LOCK: %s", r && r->str ? r->str : f->c->errstr);
    if (r)
        freeReplyObject(r);
    return rc;
}

static int rwfl_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct rw_fl *f = cl;
    f->seq++;
    redisReply *r =
        redisCommand(f->c, "UNLOCK %s %lld REQ %lld %lld", name, f->sid, f->sid, f->seq);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        snprintf(err, errlen, "UNLOCK: %s", r && r->str ? r->str : f->c->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static const struct rw_ops rw_fencelock = {rwfl_new, rwfl_acquire, rwfl_release, rwfl_free};

/* ---- any driver of the table: exclusive only ---- */

struct rw_d {
    const struct bench_driver *drv;
    void *cl;
};

static void *rwd_new(const void *ctx, const char *endpoints, int id, int ttl_ms, char *err,
                     size_t errlen)
{
    struct rw_d *d = calloc(1, sizeof(*d));
    struct bench_cfg cfg = {.endpoints = endpoints, .ttl_ms = ttl_ms};
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->drv = ctx;
    d->cl = d->drv->client_new(&cfg, id, err, errlen);
    if (!d->cl) {
        free(d);
        return NULL;
    }
    return d;
}

static int rwd_acquire(void *cl, const char *name, int shared, char *err, size_t errlen)
{
    struct rw_d *d = cl;
    uint64_t token;
    (void)shared; /* no read-write lock: the mutex */
    return d->drv->acquire(d->cl, name, W9_WAIT_MS, &token, err, errlen);
}

static int rwd_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct rw_d *d = cl;
    return d->drv->release(d->cl, name, err, errlen);
}

static void rwd_free(void *cl)
{
    struct rw_d *d = cl;
    d->drv->client_free(d->cl);
    free(d);
}

static const struct rw_ops rw_driver = {rwd_new, rwd_acquire, rwd_release, rwd_free};

/* ---- the run ---- */

struct w9_run {
    const struct rw_ops *ops;
    char lock[64];
    int shared, pause_ms, hold_ms;
    long count;          /* reader grants to reach */
    double end_ms;       /* time bound */
    atomic_long granted; /* reader grants so far */
    atomic_int holding;  /* readers holding now (grant answered .. UNLOCK sent) */
    atomic_int max_holding;
    atomic_int stop; /* the bounds were reached, or an error */
    pthread_barrier_t start;
};

struct w9_client {
    struct w9_run *run;
    void *cl;
    int writer;
    double *lat; /* waits, ms */
    long cap, n;
    long grants, timeouts, errors;
    char err[256];
};

static void w9_note_holding(struct w9_run *run)
{
    int h = atomic_fetch_add(&run->holding, 1) + 1, m = atomic_load(&run->max_holding);
    while (h > m && !atomic_compare_exchange_weak(&run->max_holding, &m, h))
        ;
}

static void w9_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One acquire, a hold of hold_ms, release; the wait into k->lat. 0, BENCH_TIMEOUT or -1. */
static int w9_one(struct w9_client *k)
{
    struct w9_run *run = k->run;
    int shared = k->writer ? 0 : run->shared;
    double t0 = rw_now_ms();
    int rc = run->ops->acquire(k->cl, run->lock, shared, k->err, sizeof(k->err));
    if (rc)
        return rc;
    double t1 = rw_now_ms();
    if (!k->writer)
        w9_note_holding(run);
    if (run->hold_ms)
        w9_sleep_ms(run->hold_ms); /* the read (or write) the lock protects */
    if (!k->writer)
        atomic_fetch_sub(&run->holding, 1);
    if (run->ops->release(k->cl, run->lock, k->err, sizeof(k->err)))
        return -1;
    if (k->n < k->cap)
        k->lat[k->n++] = t1 - t0;
    return 0;
}

static void *w9_thread(void *arg)
{
    struct w9_client *k = arg;
    struct w9_run *run = k->run;
    pthread_barrier_wait(&run->start);
    while (!atomic_load(&run->stop)) {
        if (rw_now_ms() >= run->end_ms || atomic_load(&run->granted) >= run->count)
            break;
        if (k->writer)
            w9_sleep_ms(run->pause_ms);
        int rc = w9_one(k);
        if (rc == BENCH_TIMEOUT) {
            k->timeouts++;
        } else if (rc) {
            k->errors++;
            atomic_store(&run->stop, 1);
        } else {
            k->grants++;
            if (!k->writer)
                atomic_fetch_add(&run->granted, 1);
        }
    }
    atomic_store(&run->stop, 1); /* the writer stops with the readers, and they with it */
    return NULL;
}

static int w9_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p50, p99 and max of the waits of clients k[0..n) (merged, sorted). */
static void w9_pct(struct w9_client *k, int n, double *p50, double *p99, double *max)
{
    long total = 0;
    for (int i = 0; i < n; i++)
        total += k[i].n;
    *p50 = *p99 = *max = 0;
    double *all = malloc((size_t)(total ? total : 1) * sizeof(double));
    if (!all || !total) {
        free(all);
        return;
    }
    long j = 0;
    for (int i = 0; i < n; i++) {
        memcpy(all + j, k[i].lat, (size_t)k[i].n * sizeof(double));
        j += k[i].n;
    }
    qsort(all, (size_t)total, sizeof(double), w9_cmp);
    *p50 = all[total / 2];
    *p99 = all[total * 99 / 100];
    *max = all[total - 1];
    free(all);
}

static void w9_json_err(const char *err)
{
    if (!*err)
        return;
    printf(",\"error\":\"");
    for (; *err; err++)
        putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
    putchar('"');
}

static void w9_print(const char *driver, struct w9_run *run, struct w9_client *k, int readers,
                     double secs, const char *err)
{
    long rg = 0, rt = 0, errors = 0;
    for (int i = 0; i <= readers; i++)
        errors += k[i].errors;
    for (int i = 0; i < readers; i++)
        rg += k[i].grants, rt += k[i].timeouts;
    double r50, r99, rmax, w50, w99, wmax;
    w9_pct(k, readers, &r50, &r99, &rmax);
    w9_pct(k + readers, 1, &w50, &w99, &wmax);
    const struct w9_client *w = &k[readers];
    printf("{\"driver\":\"%s\",\"workload\":\"W9\",\"readers\":%d,\"reader_mode\":\"%s\","
           "\"writer_pause_ms\":%d,\"hold_ms\":%d,\"seconds\":%.3f,\"reader_grants\":%ld,"
           "\"reader_grants_per_s\":%.1f,\"reader_wait_p50_ms\":%.3f,\"reader_wait_p99_ms\":%.3f,"
           "\"reader_timeouts\":%ld,\"max_readers_holding\":%d,\"writer_grants\":%ld,"
           "\"writer_grants_per_s\":%.1f,\"writer_wait_p50_ms\":%.3f,\"writer_wait_p99_ms\":%.3f,"
           "\"writer_wait_max_ms\":%.3f,\"writer_timeouts\":%ld,\"errors\":%ld",
           driver, readers, run->shared ? "shared" : "exclusive", run->pause_ms, run->hold_ms, secs,
           rg, secs > 0 ? rg / secs : 0, r50, r99, rt, atomic_load(&run->max_holding), w->grants,
           secs > 0 ? w->grants / secs : 0, w50, w99, wmax, w->timeouts, errors);
    w9_json_err(err);
    printf("}\n");
    fflush(stdout);
}

/* W9: `readers` readers (shared, or exclusive with `exclusive` or a system without shared
   mode) and one writer (exclusive, every pause_ms) on one lock. Prints one JSON line;
   returns 0, or 1 on an error. */
int bench_w9(const struct bench_driver *drv, const char *endpoints, int readers, int ttl_ms,
             long count, int seconds, int exclusive, int pause_ms, int hold_ms)
{
    int fl = !strcmp(drv->name, "fencelock");
    struct w9_run run = {.ops = fl ? &rw_fencelock : &rw_driver,
                         .shared = fl && !exclusive,
                         .pause_ms = pause_ms,
                         .hold_ms = hold_ms,
                         .count = count};
    char err[256] = "";
    if (readers < 1 || readers > W9_MAX_READERS) {
        snprintf(err, sizeof(err), "readers: 1..%d", W9_MAX_READERS);
        readers = 0;
    }
    snprintf(run.lock, sizeof(run.lock), "lb-%d-W9", (int)getpid());
    struct w9_client *k = calloc((size_t)readers + 1, sizeof(*k));
    pthread_t *t = calloc((size_t)readers + 1, sizeof(*t));
    int made = 0, started = 0;
    long cap = W9_LAT_CAP / (readers + 1);
    for (; k && t && readers && made <= readers; made++) {
        k[made].run = &run;
        k[made].writer = made == readers;
        k[made].cap = k[made].writer ? W9_LAT_CAP : cap;
        k[made].lat = malloc((size_t)k[made].cap * sizeof(double));
        char cerr[256] = ""; /* a driver may note a retried attempt on success */
        k[made].cl = k[made].lat
                         ? run.ops->client_new(drv, endpoints, made, ttl_ms, cerr, sizeof(cerr))
                         : NULL;
        if (!k[made].cl) {
            snprintf(err, sizeof(err), "%s", k[made].lat ? cerr : "out of memory");
            free(k[made].lat);
            break;
        }
    }
    double secs = 0;
    if (k && t && readers && made == readers + 1) {
        pthread_barrier_init(&run.start, NULL, (unsigned)readers + 2);
        run.end_ms = rw_now_ms() + 1e9; /* set for real below, when all are ready */
        for (; started <= readers; started++)
            if (pthread_create(&t[started], NULL, w9_thread, &k[started]))
                break;
        if (started <= readers) { /* stand in for the missing ones, and stop at once */
            atomic_store(&run.stop, 1);
            snprintf(err, sizeof(err), "pthread_create failed");
            for (int i = started; i <= readers; i++)
                pthread_barrier_wait(&run.start);
        }
        double t0 = rw_now_ms();
        run.end_ms = t0 + seconds * 1e3;
        pthread_barrier_wait(&run.start);
        for (int i = 0; i < started; i++)
            pthread_join(t[i], NULL);
        secs = (rw_now_ms() - t0) / 1e3;
        pthread_barrier_destroy(&run.start);
        for (int i = 0; i <= readers && !*err; i++)
            if (k[i].errors)
                snprintf(err, sizeof(err), "%s", k[i].err);
    } else if (!*err) {
        snprintf(err, sizeof(err), "out of memory");
    }
    if (k && made == readers + 1 && readers)
        w9_print(drv->name, &run, k, readers, secs, err);
    else
        printf("{\"driver\":\"%s\",\"workload\":\"W9\",\"errors\":1,\"error\":\"%s\"}\n", drv->name,
               err);
    for (int i = 0; k && i < made; i++) {
        run.ops->client_free(k[i].cl);
        free(k[i].lat);
    }
    free(k);
    free(t);
    return *err ? 1 : 0;
}
