/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sembench — lockbench's W11: counting semaphores, fencelock only. `clients` clients
 * (default 16), each with its own connection and session to the leader, loop on one semaphore
 * of `limit` permits (default 4): `SEM.ACQUIRE name sid limit WAIT ms REQ sid seq`, a hold of
 * `hold_ms`, `SEM.RELEASE name sid REQ sid seq`. Reports hand-offs/s (permits granted per
 * second in all), the acquire wait p50/p99 and the most clients seen holding a permit at once
 * (client-side: grant answered .. SEM.RELEASE sent, so never more than the server granted;
 * bench/check.sh requires it to stay <= limit). Raw RESP over hiredis, as rwbench.c does
 * (libfencelock has no semaphore call). Owns its threads, connections and sessions; all are
 * closed before it returns. Bounded by `count` grants and `seconds`; each acquire waits at most
 * W11_WAIT_MS. One JSON line.
 */
#include "flraw.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W11_WAIT_MS 5000
#define W11_MAX_CLIENTS 256
#define W11_LAT_CAP 1000000 /* wait samples kept per run (clients share them) */

int bench_w11(const char *endpoints, int clients, int limit, int ttl_ms, long count, int seconds,
              int hold_ms);

static double sb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct w11_run {
    char name[64];
    int limit, hold_ms, ttl_ms;
    long count;
    double end_ms;
    atomic_long granted;
    atomic_int holding, max_holding, stop;
    pthread_barrier_t start;
};

struct w11_client {
    struct w11_run *run;
    redisContext *c;
    long long sid, seq;
    double last_ka;
    double *lat;
    long cap, n, grants, timeouts, errors;
    char err[256];
};

/* 0 with the reply kept in *out, or -1 with k->err (what, and the server's or hiredis' word). */
static int sb_call_check(struct w11_client *k, redisReply *r, int want, const char *what)
{
    if (r && (r->type == want || (want == REDIS_REPLY_INTEGER && r->type == REDIS_REPLY_NIL)))
        return 0;
    snprintf(k->err, sizeof(k->err), "%s: %s", what, r && r->str ? r->str : k->c->errstr);
    return -1;
}

static int sb_open(struct w11_client *k, const char *endpoints)
{
    k->c = fr_connect_leader(endpoints, k->err, sizeof(k->err));
    if (!k->c)
        return -1;
    redisReply *r = redisCommand(k->c, "SESSION.OPEN %d", k->run->ttl_ms);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? 0 : -1;
    if (rc)
        snprintf(k->err, sizeof(k->err), "SESSION.OPEN: %s", r && r->str ? r->str : k->c->errstr);
    else
        k->sid = r->integer;
    k->last_ka = sb_now_ms();
    if (r)
        freeReplyObject(r);
    return rc;
}

/* A keepalive once a third of the TTL passed (the TTL must exceed 3 x W11_WAIT_MS / 2). */
static int sb_keepalive(struct w11_client *k)
{
    if (sb_now_ms() - k->last_ka < k->run->ttl_ms / 3.0)
        return 0;
    redisReply *r = redisCommand(k->c, "SESSION.KEEPALIVE %lld", k->sid);
    int rc = sb_call_check(k, r, REDIS_REPLY_INTEGER, "SESSION.KEEPALIVE");
    if (r)
        freeReplyObject(r);
    k->last_ka = sb_now_ms();
    return rc;
}

static void sb_note_holding(struct w11_run *run)
{
    int h = atomic_fetch_add(&run->holding, 1) + 1, m = atomic_load(&run->max_holding);
    while (h > m && !atomic_compare_exchange_weak(&run->max_holding, &m, h))
        ;
}

/* One acquire, hold, release: 0 granted, 1 timed out (nil), -1 error. */
static int sb_one(struct w11_client *k)
{
    struct w11_run *run = k->run;
    if (sb_keepalive(k))
        return -1;
    double t0 = sb_now_ms();
    k->seq++;
    redisReply *r = redisCommand(k->c, "SEM.ACQUIRE %s %lld %d WAIT %d REQ %lld %lld", run->name,
                                 k->sid, run->limit, W11_WAIT_MS, k->sid, k->seq);
    if (sb_call_check(k, r, REDIS_REPLY_INTEGER, "SEM.ACQUIRE")) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    int nil = r->type == REDIS_REPLY_NIL;
    freeReplyObject(r);
    if (nil)
        return 1;
    double t1 = sb_now_ms();
    sb_note_holding(run);
    if (run->hold_ms) {
        struct timespec ts = {run->hold_ms / 1000, (long)(run->hold_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_sub(&run->holding, 1);
    k->seq++;
    r = redisCommand(k->c, "SEM.RELEASE %s %lld REQ %lld %lld", run->name, k->sid, k->sid, k->seq);
    int rc = sb_call_check(k, r, REDIS_REPLY_STATUS, "SEM.RELEASE");
    if (r)
        freeReplyObject(r);
    if (!rc && k->n < k->cap)
        k->lat[k->n++] = t1 - t0;
    return rc;
}

static void *sb_thread(void *arg)
{
    struct w11_client *k = arg;
    struct w11_run *run = k->run;
    pthread_barrier_wait(&run->start);
    while (!atomic_load(&run->stop) && sb_now_ms() < run->end_ms &&
           atomic_load(&run->granted) < run->count) {
        int rc = sb_one(k);
        if (rc < 0) {
            k->errors++;
            break;
        }
        if (rc)
            k->timeouts++;
        else
            k->grants++, atomic_fetch_add(&run->granted, 1);
    }
    atomic_store(&run->stop, 1);
    return NULL;
}

static int sb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void sb_pct(struct w11_client *k, int n, double *p50, double *p99)
{
    long total = 0, j = 0;
    for (int i = 0; i < n; i++)
        total += k[i].n;
    *p50 = *p99 = 0;
    double *all = total ? malloc((size_t)total * sizeof(double)) : NULL;
    if (!all)
        return;
    for (int i = 0; i < n; i++) {
        memcpy(all + j, k[i].lat, (size_t)k[i].n * sizeof(double));
        j += k[i].n;
    }
    qsort(all, (size_t)total, sizeof(double), sb_cmp);
    *p50 = all[total / 2];
    *p99 = all[total * 99 / 100];
    free(all);
}

static void sb_print(struct w11_run *run, struct w11_client *k, int n, double secs, const char *err)
{
    long g = 0, to = 0, errors = *err ? 1 : 0;
    for (int i = 0; i < n; i++)
        g += k[i].grants, to += k[i].timeouts, errors += k[i].errors;
    double p50, p99;
    sb_pct(k, n, &p50, &p99);
    printf("{\"driver\":\"fencelock\",\"workload\":\"W11\",\"clients\":%d,\"limit\":%d,"
           "\"hold_ms\":%d,\"seconds\":%.3f,\"grants\":%ld,\"handoffs_per_s\":%.1f,"
           "\"wait_p50_ms\":%.3f,\"wait_p99_ms\":%.3f,\"timeouts\":%ld,\"max_holding\":%d,"
           "\"errors\":%ld",
           n, run->limit, run->hold_ms, secs, g, secs > 0 ? g / secs : 0, p50, p99, to,
           atomic_load(&run->max_holding), errors);
    if (*err) {
        printf(",\"error\":\"");
        for (; *err; err++)
            putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
}

static void sb_close(struct w11_client *k)
{
    if (!k->c)
        return;
    redisReply *r = k->sid ? redisCommand(k->c, "SESSION.CLOSE %lld", k->sid) : NULL;
    if (r)
        freeReplyObject(r);
    redisFree(k->c);
}

/* The threads' run, once every client is connected: the elapsed seconds; err on a failure. */
static double sb_run(struct w11_run *run, struct w11_client *k, int n, int seconds, char *err,
                     size_t errlen)
{
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    int started = 0;
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    pthread_barrier_init(&run->start, NULL, (unsigned)n + 1);
    run->end_ms = sb_now_ms() + 1e9;
    for (; started < n; started++)
        if (pthread_create(&t[started], NULL, sb_thread, &k[started]))
            break;
    if (started < n) { /* stand in for the missing ones, and stop at once */
        atomic_store(&run->stop, 1);
        snprintf(err, errlen, "pthread_create failed");
        for (int i = started; i < n; i++)
            pthread_barrier_wait(&run->start);
    }
    double t0 = sb_now_ms();
    run->end_ms = t0 + seconds * 1e3;
    pthread_barrier_wait(&run->start);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double secs = (sb_now_ms() - t0) / 1e3;
    pthread_barrier_destroy(&run->start);
    free(t);
    for (int i = 0; i < n && !*err; i++)
        if (k[i].errors)
            snprintf(err, errlen, "%s", k[i].err);
    return secs;
}

/* W11: prints one JSON line; 0, or 1 on an error. */
int bench_w11(const char *endpoints, int clients, int limit, int ttl_ms, long count, int seconds,
              int hold_ms)
{
    struct w11_run run = {.limit = limit, .hold_ms = hold_ms, .ttl_ms = ttl_ms, .count = count};
    char err[256] = "";
    snprintf(run.name, sizeof(run.name), "lb-%d-W11", (int)getpid());
    if (clients < 1 || clients > W11_MAX_CLIENTS || limit < 1)
        clients = 0, snprintf(err, sizeof(err), "clients: 1..%d, limit >= 1", W11_MAX_CLIENTS);
    struct w11_client *k = calloc((size_t)(clients ? clients : 1), sizeof(*k));
    int made = 0;
    for (; k && made < clients; made++) {
        k[made].run = &run;
        k[made].cap = W11_LAT_CAP / clients;
        k[made].lat = malloc((size_t)k[made].cap * sizeof(double));
        if (!k[made].lat || sb_open(&k[made], endpoints)) {
            snprintf(err, sizeof(err), "%s", k[made].lat ? k[made].err : "out of memory");
            made++; /* closed below with the others */
            break;
        }
    }
    double secs = 0;
    int ran = k && clients && !*err;
    if (ran)
        secs = sb_run(&run, k, clients, seconds, err, sizeof(err));
    else if (!*err)
        snprintf(err, sizeof(err), "out of memory");
    if (ran)
        sb_print(&run, k, clients, secs, err);
    else
        printf("{\"driver\":\"fencelock\",\"workload\":\"W11\",\"errors\":1,\"error\":\"%s\"}\n",
               err);
    for (int i = 0; k && i < made; i++) {
        sb_close(&k[i]);
        free(k[i].lat);
    }
    free(k);
    return *err ? 1 : 0;
}
