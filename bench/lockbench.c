/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lockbench — the side-by-side lock benchmark harness. Owns the workloads, their
 * threads, timing and statistics; the lock systems themselves are behind the driver table of
 * bench/driver.h (bench/drv_*.c), so every system runs the identical loop.
 *
 * usage: lockbench --driver NAME --endpoints EP --workload W1|W2|W3
 *                  [--clients N] [--pairs N] [--seconds S] [--ttl ms] [--warmup N]
 *        lockbench --driver fencelock --endpoints EP --workload W4
 *                  [--sessions N] [--locks-per-session K] [--ttl ms]
 *   W1 uncontended: 1 client, acquire + release of its own lock; pair latency, pairs/s.
 *   W2 contended:   8 clients on one lock, acquire with a wait; grants/s, hand-offs/s (grants
 *                   to a client other than the previous holder), acquire-wait p50/p99,
 *                   fairness = min/max grants per client.
 *   W3 parallel:    16 clients, each on its own lock; pairs/s and pair latency.
 * A warm-up (--warmup operations in all, default 300, at most 3 s) precedes the measured phase,
 * which ends after --pairs operations in all or --seconds, whichever comes first. Prints one
 * JSON line. W4 (fencelock only) loads N sessions (default 100000) holding K locks each
 * (default 10) and reports the load rate; bench/run.sh then measures the nodes' footprint.
 * W5 (fencelock only): per read command (GET, KV.GET, FENCE.CHECK, LOCK.INFO,
 * SESSION.KEEPALIVE) p50/p99 one at a time against PUT's, and GET/KEEPALIVE pipelined on one
 * connection; --pairs bounds each command's count, --seconds the whole run. W6 (fencelock
 * only): --sessions sessions of --ttl kept alive every TTL/3 over 4 pipelined connections for
 * --seconds, with a W1 client beside them (fl_reads.c).
 * W6C (fencelock only): --sessions fl_sessions of --ttl, each with its own keepalive thread, in
 * this one process for --seconds: the smallest safe margin and the sessions lost (fl_reads.c).
 * W7 (fencelock only): --sessions idle connections to the leader (each answered one PING),
 * --clients of them active (one GET in flight each) while a W1 client measures its pairs,
 * against the same W1 before they were opened; --server-pid gives the leader's RSS.
 * W8 (any driver; --kill-cmd CMD): 8 clients contend for one lock as in W2; after 1.5 s
 * CMD is run (bench/run.sh: kill -9 of the leader) and the harness reports the time from its
 * return to the next grant acknowledged to any client. Grants acknowledged in the first
 * W8_GUARD_MS are ignored: replies the dead leader had already sent, late on a loaded machine (no
 * system measured elects a leader that fast: election timeouts of 400 ms and more). A failed
 * call is counted and retried with the same client, as its driver's recipe recovers. The JSON
 * line also gives both instants as wall-clock ms (kill_epoch_ms, grant_epoch_ms): bench/run.sh
 * joins them to the servers' log lines (bench/w8_parts.py) to break fencelock's fail-over down.
 * W9 (any driver; rwbench.c): --clients readers (default 16) take one lock shared (a system
 * without a read-write lock, or --exclusive-readers: exclusive) and hold it --hold ms (default
 * 1), one writer takes it exclusively every --writer-pause ms (default 10): reader grants/s,
 * reader and writer wait p50/p99, the writer's timeouts. --pairs bounds the reader grants.
 * W10 (fencelock, etcd; watchbench.c): --clients watchers of one key prefix (XREAD BLOCK on
 * fencelock:events:<prefix>, or an etcd watch over the JSON gateway); one PUT at a time, the
 * next --gap ms (default 10) after every watcher got the last: PUT acknowledged -> event
 * received p50/p99 over all watchers; then PUTs pipelined: events delivered per second in all.
 * --pairs bounds the PUTs of the latency phase (the fan-out phase does 5x). With --rate R, only
 * a fixed offered load instead: R PUTs/s for --seconds, open loop (a PUT is due at its time
 * whatever the answers' pace): ack -> event and due -> event p50/p99, the rate achieved (W10R).
 * --driver fencelock-sse: watchers alternate between XREAD and the HTTP API's GET /v1/events
 * (SSE) on the same PUTs, the latency phase also reported per kind ("by_kind").
 * W11 (fencelock; sembench.c): --clients clients (default 16) loop on SEM.ACQUIRE of one
 * semaphore of --limit permits (default 4) with WAIT, hold --hold ms, SEM.RELEASE: hand-offs/s,
 * wait p50/p99, the most holding at once. --pairs bounds the grants.
 * W12 (fencelock, etcd; electbench.c): --rounds rounds (default 10) of one election each: the
 * leader's session (lease) ended from outside -> each of --clients observers (default 4) sees
 * the queued candidate lead: p50/p99 over the rounds.
 * W13 (fencelock; multibench.c): --clients clients (default 8) take overlapping sets of --k
 * names (2, 4, 8; default all three) out of a pool of 16, hold each --hold ms: with LOCK.MULTI
 * and, against it, the same names one by one in sorted order (--way multi|sequential; default
 * both): sets/s and set acquire+release p50/p99/max, one JSON line per (k, way). --pairs and
 * --seconds bound each line.
 * W14 (fencelock; primbench.c): the coordination primitives one after the other: INCR, k
 * permits of a semaphore at once, a reentrant re-LOCK, LOCK with VALUE, LOCK.HISTORY; a latch's
 * round (the last COUNTDOWN to every parked waiter released) and a barrier's (every member's
 * ENTER answered, then its LEAVE). --pairs bounds each row's operations (rounds), --seconds
 * each row's time.
 * `lockbench --drivers` lists the drivers linked in. Exit: 0 ok, 1 errors (the JSON says
 * which), 2 usage.
 */
#include "driver.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* W4's loader, in drv_fencelock.c (fencelock only: it speaks RESP to the leader directly). */
int bench_fencelock_load(const char *endpoints, long sessions, int per, int ttl_ms, long *locks,
                         long *retried, char *err, size_t errlen);
/* W5 and W6, in fl_reads.c (fencelock only, raw RESP to the leader): print their JSON line. */
int bench_fencelock_w5(const char *endpoints, long count, int seconds);
int bench_fencelock_w6(const char *endpoints, long sessions, int ttl_ms, int seconds);
int bench_fencelock_w6c(const char *endpoints, long sessions, int ttl_ms, int seconds);
int bench_fencelock_w7(const char *endpoints, long conns, int active, int seconds, int server_pid);
/* W9 (read-write locks) in rwbench.c, W10 (watch) in watchbench.c: print their JSON line. */
int bench_w9(const struct bench_driver *drv, const char *endpoints, int readers, int ttl_ms,
             long count, int seconds, int exclusive, int pause_ms, int hold_ms);
int bench_w10(const char *driver, const char *endpoints, int readers, long count, int seconds,
              int gap_ms, long rate);
/* W11 (semaphores) in sembench.c, W12 (election fail-over) in electbench.c. */
int bench_w11(const char *endpoints, int clients, int limit, int ttl_ms, long count, int seconds,
              int hold_ms);
int bench_w12(const char *driver, const char *endpoints, int observers, int rounds, int seconds);
/* W14 (the coordination primitives: latch, barrier, INCR, k permits, reentrant LOCK, LOCK
   with VALUE, LOCK.HISTORY; fencelock only) in primbench.c. */
int bench_w14(const char *endpoints, long count, int seconds);
/* W13 (multi-lock against one-by-one in sorted order) in multibench.c. */
int bench_w13(const char *endpoints, int clients, int k, const char *way, int hold_ms, int ttl_ms,
              long count, int seconds);

#define WAIT_MS 5000 /* the acquire wait of every workload (a free lock is granted at once) */
#define WARMUP_MAX_MS 3000

struct opts {
    const char *driver, *endpoints, *workload, *kill_cmd;
    int server_pid;
    int clients, pairs, seconds, ttl_ms, warmup, sessions, per;
    int exclusive_readers, writer_pause_ms, hold_ms; /* W9 */
    int gap_ms, rate;                                /* W10 (rate 0: no fixed-rate phase) */
    int limit, rounds;                               /* W11, W12 */
    int k;                                           /* W13 (0: 2, 4 and 8) */
    const char *way;                                 /* W13 (NULL: both) */
};

/* State shared by the threads of one phase (warm-up or measured). */
struct phase {
    const struct bench_driver *drv;
    int contended;         /* W2: all clients on one lock */
    int total;             /* operations to do in all (count bound) */
    double end_ms;         /* time bound */
    atomic_int taken;      /* operations claimed so far */
    atomic_int last_owner; /* W2: client id of the latest grant (-1 none) */
    atomic_int stop;       /* set on the first error */
    pthread_barrier_t start;
};

struct worker {
    struct phase *ph;
    void *cl;
    int id;
    char lock[64];
    double *lat; /* ms: pair latency (W1/W3) or acquire wait (W2); capacity cap */
    int cap, done, timeouts, errors, handoffs;
    double last_ms; /* completion time of the last counted operation */
    char err[256];
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The wall-clock time (ms since the epoch) of a now_ms() reading: W8 joins its client-side
 * instants to the servers' log lines, which carry wall-clock times. */
static double epoch_ms_of(double mono_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 - (now_ms() - mono_ms);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One acquire + release; W2 records the acquire wait, W1/W3 the whole pair, and *handoff
   whether the grant went to another client than the previous one. Returns 0, or
   BENCH_TIMEOUT, or -1 with w->err filled. */
static int one_op(struct worker *w, double *lat, int *handoff)
{
    struct phase *ph = w->ph;
    uint64_t token = 0;
    double t0 = now_ms();
    int rc = ph->drv->acquire(w->cl, w->lock, WAIT_MS, &token, w->err, sizeof(w->err));
    if (rc)
        return rc;
    double t1 = now_ms();
    if (ph->contended) {
        int prev = atomic_exchange(&ph->last_owner, w->id);
        *handoff = prev != w->id;
    }
    if (ph->drv->release(w->cl, w->lock, w->err, sizeof(w->err)))
        return -1;
    *lat = ph->contended ? t1 - t0 : now_ms() - t0;
    return 0;
}

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    struct phase *ph = w->ph;
    pthread_barrier_wait(&ph->start);
    while (!atomic_load(&ph->stop) && now_ms() < ph->end_ms) {
        if (atomic_fetch_add(&ph->taken, 1) >= ph->total)
            break;
        double lat;
        int handoff = 0;
        int rc = one_op(w, &lat, &handoff);
        double t = now_ms();
        if (rc == BENCH_TIMEOUT) {
            w->timeouts++;
            continue;
        }
        if (rc) {
            w->errors++;
            atomic_store(&ph->stop, 1);
            break;
        }
        if (t > ph->end_ms) /* finished after the time bound: not counted */
            break;
        if (w->done < w->cap)
            w->lat[w->done] = lat;
        w->done++;
        w->handoffs += handoff;
        w->last_ms = t;
    }
    return NULL;
}

/* Runs one phase with n workers; returns its elapsed ms (start to the last counted op). */
static double run_phase(struct phase *ph, struct worker *w, int n)
{
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    if (!t)
        return -1;
    pthread_barrier_init(&ph->start, NULL, (unsigned)n + 1);
    int started = 0;
    for (int i = 0; i < n; i++) {
        w[i].ph = ph;
        w[i].done = w[i].timeouts = w[i].errors = w[i].handoffs = 0;
        w[i].last_ms = 0;
        if (pthread_create(&t[i], NULL, worker_run, &w[i]))
            break;
        started++;
    }
    if (started < n) { /* release the barrier with stand-ins: stop at once */
        atomic_store(&ph->stop, 1);
        snprintf(w[started].err, sizeof(w[started].err), "pthread_create failed");
        w[started].errors = 1;
        for (int i = started; i < n; i++)
            pthread_barrier_wait(&ph->start);
    }
    double t0 = now_ms();
    pthread_barrier_wait(&ph->start);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double last = t0;
    for (int i = 0; i < n; i++)
        if (w[i].last_ms > last)
            last = w[i].last_ms;
    pthread_barrier_destroy(&ph->start);
    free(t);
    return last - t0;
}

/* The drivers linked in (every bench/drv_*.c). */
static const struct bench_driver *const *drivers(size_t *n)
{
    static const struct bench_driver *const all[] = {&bench_fencelock, &bench_redis, &bench_redlock,
                                                     &bench_etcd, &bench_zookeeper};
    *n = sizeof(all) / sizeof(all[0]);
    return all;
}

static const struct bench_driver *find_driver(const char *name)
{
    size_t n;
    const struct bench_driver *const *all = drivers(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, all[i]->name))
            return all[i];
    return NULL;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void usage(void)
{
    fprintf(stderr, "usage: lockbench --driver fencelock|redis|redlock|etcd|zookeeper "
                    "--endpoints EP --workload W1|...|W13|W14 [--kill-cmd CMD]\n"
                    "                 [--clients N] [--pairs N] [--seconds S] [--ttl ms] "
                    "[--warmup N]\n"
                    "                 W9: [--exclusive-readers] [--writer-pause ms] [--hold ms]\n"
                    "                 W10: [--clients watchers] [--gap ms] [--rate PUTs/s]\n"
                    "                 W11: [--limit N] [--hold ms]  W12: [--clients observers] "
                    "[--rounds N]\n"
                    "                 W13: [--k 1..8] [--way multi|sequential] [--hold ms]\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {{"driver", 1, 0, 'd'},
                                       {"endpoints", 1, 0, 'e'},
                                       {"workload", 1, 0, 'w'},
                                       {"clients", 1, 0, 'c'},
                                       {"pairs", 1, 0, 'n'},
                                       {"seconds", 1, 0, 's'},
                                       {"ttl", 1, 0, 't'},
                                       {"warmup", 1, 0, 'u'},
                                       {"sessions", 1, 0, 'S'},
                                       {"locks-per-session", 1, 0, 'K'},
                                       {"kill-cmd", 1, 0, 'k'},
                                       {"server-pid", 1, 0, 'P'},
                                       {"exclusive-readers", 0, 0, 'x'},
                                       {"writer-pause", 1, 0, 'p'},
                                       {"hold", 1, 0, 'h'},
                                       {"gap", 1, 0, 'g'},
                                       {"rate", 1, 0, 'r'},
                                       {"limit", 1, 0, 'L'},
                                       {"rounds", 1, 0, 'R'},
                                       {"k", 1, 0, 'M'},
                                       {"way", 1, 0, 'W'},
                                       {0, 0, 0, 0}};
    *o = (struct opts){.clients = 0,
                       .pairs = 100000,
                       .seconds = 10,
                       .ttl_ms = 10000,
                       .warmup = 300,
                       .sessions = 100000,
                       .per = 10,
                       .writer_pause_ms = 10,
                       .hold_ms = 1,
                       .gap_ms = 10,
                       .limit = 4,
                       .rounds = 10};
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->driver = optarg;
            break;
        case 'e':
            o->endpoints = optarg;
            break;
        case 'w':
            o->workload = optarg;
            break;
        case 'c':
            bad |= parse_int(optarg, 1, 1000, &o->clients);
            break;
        case 'n':
            bad |= parse_int(optarg, 1, 10000000, &o->pairs);
            break;
        case 's':
            bad |= parse_int(optarg, 1, 3600, &o->seconds);
            break;
        case 't':
            bad |= parse_int(optarg, 100, 3600000, &o->ttl_ms);
            break;
        case 'u':
            bad |= parse_int(optarg, 0, 1000000, &o->warmup);
            break;
        case 'S':
            bad |= parse_int(optarg, 1, 10000000, &o->sessions);
            break;
        case 'K':
            bad |= parse_int(optarg, 1, 1000, &o->per);
            break;
        case 'k':
            o->kill_cmd = optarg;
            break;
        case 'P':
            bad |= parse_int(optarg, 1, 1 << 30, &o->server_pid);
            break;
        case 'x':
            o->exclusive_readers = 1;
            break;
        case 'p':
            bad |= parse_int(optarg, 0, 60000, &o->writer_pause_ms);
            break;
        case 'h':
            bad |= parse_int(optarg, 0, 1000, &o->hold_ms);
            break;
        case 'g':
            bad |= parse_int(optarg, 0, 1000, &o->gap_ms);
            break;
        case 'r':
            bad |= parse_int(optarg, 1, 1000000, &o->rate);
            break;
        case 'L':
            bad |= parse_int(optarg, 1, 1048576, &o->limit);
            break;
        case 'R':
            bad |= parse_int(optarg, 1, 1000, &o->rounds);
            break;
        case 'M':
            bad |= parse_int(optarg, 1, 8, &o->k);
            break;
        case 'W':
            o->way = optarg;
            bad |= strcmp(optarg, "multi") && strcmp(optarg, "sequential");
            break;
        default:
            bad = 1;
        }
    }
    if (bad || optind < argc || !o->driver || !o->endpoints || !o->workload)
        return -1;
    if (strcmp(o->workload, "W1") && strcmp(o->workload, "W2") && strcmp(o->workload, "W3") &&
        strcmp(o->workload, "W4") && strcmp(o->workload, "W5") && strcmp(o->workload, "W6") &&
        strcmp(o->workload, "W6C") && strcmp(o->workload, "W7") && strcmp(o->workload, "W8") &&
        strcmp(o->workload, "W9") && strcmp(o->workload, "W10") && strcmp(o->workload, "W11") &&
        strcmp(o->workload, "W12") && strcmp(o->workload, "W13") && strcmp(o->workload, "W14"))
        return -1;
    if (!strcmp(o->workload, "W8") && !o->kill_cmd)
        return -1;
    if (!o->clients)
        o->clients = !strcmp(o->workload, "W1")    ? 1
                     : !strcmp(o->workload, "W2")  ? 8
                     : !strcmp(o->workload, "W7")  ? 100
                     : !strcmp(o->workload, "W10") ? 1
                     : !strcmp(o->workload, "W12") ? 4
                     : !strcmp(o->workload, "W13") ? 8
                                                   : 16;
    return 0;
}

struct result {
    double elapsed_ms;
    int ops, timeouts, errors, handoffs, fmin, fmax;
    double p50, p99, max;
    const char *err;
};

static void summarize(struct worker *w, int n, double elapsed, struct result *r)
{
    *r = (struct result){.elapsed_ms = elapsed, .fmin = -1, .err = ""};
    size_t cnt = 0;
    for (int i = 0; i < n; i++) {
        r->ops += w[i].done;
        r->handoffs += w[i].handoffs;
        r->timeouts += w[i].timeouts;
        r->errors += w[i].errors;
        if (w[i].errors && !*r->err)
            r->err = w[i].err;
        if (r->fmin < 0 || w[i].done < r->fmin)
            r->fmin = w[i].done;
        if (w[i].done > r->fmax)
            r->fmax = w[i].done;
        cnt += (size_t)(w[i].done < w[i].cap ? w[i].done : w[i].cap);
    }
    double *all = malloc((cnt ? cnt : 1) * sizeof(double));
    if (!all)
        return;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        size_t m = (size_t)(w[i].done < w[i].cap ? w[i].done : w[i].cap);
        memcpy(all + k, w[i].lat, m * sizeof(double));
        k += m;
    }
    qsort(all, cnt, sizeof(double), cmp_double);
    if (cnt) {
        r->p50 = all[cnt / 2];
        r->p99 = all[cnt * 99 / 100];
        r->max = all[cnt - 1];
    }
    free(all);
}

static void print_json(const struct opts *o, const struct result *r)
{
    double s = r->elapsed_ms > 0 ? r->elapsed_ms / 1e3 : 1;
    printf("{\"driver\":");
    json_str(o->driver);
    printf(",\"workload\":\"%s\",\"clients\":%d,\"ttl_ms\":%d,\"seconds\":%.3f,\"ops\":%d,"
           "\"ops_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
           "\"timeouts\":%d,\"errors\":%d",
           o->workload, o->clients, o->ttl_ms, s, r->ops, r->ops / s, r->p50, r->p99, r->max,
           r->timeouts, r->errors);
    if (!strcmp(o->workload, "W2"))
        printf(",\"grants_per_s\":%.1f,\"handoffs_per_s\":%.1f,\"fair_min\":%d,\"fair_max\":%d,"
               "\"fairness\":%.3f",
               r->ops / s, r->handoffs / s, r->fmin, r->fmax,
               r->fmax ? (double)r->fmin / r->fmax : 0.0);
    if (*r->err) {
        printf(",\"error\":");
        json_str(r->err);
    }
    printf("}\n");
    fflush(stdout);
}

/* ---- W8: fail-over ---- */

#define W8_CLIENTS 8
#define W8_GUARD_MS 100

struct w8 {
    const struct bench_driver *drv;
    struct bench_cfg cfg;
    char lock[64];
    atomic_int stop;
    atomic_llong kill_us;  /* when the kill command returned (0: not yet) */
    atomic_llong grant_us; /* the first grant acknowledged after it (0: none yet) */
    atomic_int errors;
    char err[256];
};

struct w8_worker {
    struct w8 *w;
    int id;
    void *cl;
};

/* A failed call: counted, then the same client is used again after a pause. Every driver
 * recovers by itself (fencelock follows the new leader, ZooKeeper reconnects and deletes a node
 * whose delete failed on its next call, an expired session is replaced); a client dropped
 * instead would keep its session and queue place, or leave them to expire, blocking the lock. */
static void w8_failed(struct w8_worker *k, const char *err)
{
    atomic_fetch_add(&k->w->errors, 1);
    if (!*k->w->err)
        snprintf(k->w->err, sizeof(k->w->err), "%s", err);
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
}

static void *w8_run(void *arg)
{
    struct w8_worker *k = arg;
    struct w8 *w = k->w;
    char err[256];
    while (!atomic_load(&w->stop)) {
        uint64_t token = 0;
        int rc = w->drv->acquire(k->cl, w->lock, WAIT_MS, &token, err, sizeof(err));
        long long t = (long long)(now_ms() * 1e3);
        if (rc == BENCH_TIMEOUT)
            continue;
        if (rc) {
            w8_failed(k, err);
            continue;
        }
        long long kill = atomic_load(&w->kill_us), none = 0;
        if (kill && t > kill + W8_GUARD_MS * 1000)
            atomic_compare_exchange_strong(&w->grant_us, &none, t);
        if (w->drv->release(k->cl, w->lock, err, sizeof(err)))
            w8_failed(k, err);
    }
    return NULL;
}

static int run_w8(const struct opts *o, const struct bench_driver *drv)
{
    struct w8 w = {.drv = drv, .cfg = {.endpoints = o->endpoints, .ttl_ms = o->ttl_ms}};
    struct w8_worker k[W8_CLIENTS];
    pthread_t t[W8_CLIENTS];
    int started = 0, rc = 1;
    snprintf(w.lock, sizeof(w.lock), "lb-%d-W8", (int)getpid());
    memset(k, 0, sizeof(k));
    for (int i = 0; i < W8_CLIENTS; i++) {
        k[i].w = &w;
        k[i].id = i;
        k[i].cl = drv->client_new(&w.cfg, i, w.err, sizeof(w.err));
        if (!k[i].cl || pthread_create(&t[i], NULL, w8_run, &k[i]))
            break;
        started++;
    }
    double failover = -1;
    if (started == W8_CLIENTS) {
        struct timespec warm = {1, 500 * 1000000};
        nanosleep(&warm, NULL);
        int killed = system(o->kill_cmd);
        atomic_store(&w.kill_us, (long long)(now_ms() * 1e3));
        double end = now_ms() + 60e3;
        while (!atomic_load(&w.grant_us) && now_ms() < end) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        long long g = atomic_load(&w.grant_us);
        if (killed != 0)
            snprintf(w.err, sizeof(w.err), "kill command failed (status %d)", killed);
        else if (g)
            failover = (g - atomic_load(&w.kill_us)) / 1e3, rc = 0;
        else
            snprintf(w.err, sizeof(w.err), "no grant within 60 s of the kill");
    }
    atomic_store(&w.stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    printf("{\"driver\":");
    json_str(o->driver);
    printf(",\"workload\":\"W8\",\"clients\":%d,\"failover_ms\":%.1f,\"errors\":%d", W8_CLIENTS,
           failover, atomic_load(&w.errors));
    if (failover >= 0) /* for the breakdown against the servers' logs (bench/w8_parts.py) */
        printf(",\"kill_epoch_ms\":%.1f,\"grant_epoch_ms\":%.1f",
               epoch_ms_of(atomic_load(&w.kill_us) / 1e3),
               epoch_ms_of(atomic_load(&w.grant_us) / 1e3));
    if (*w.err) {
        printf(",\"%s\":", rc ? "error" : "note");
        json_str(w.err);
    }
    printf("}\n");
    fflush(stdout);
    for (int i = 0; i < W8_CLIENTS; i++)
        if (k[i].cl)
            drv->client_free(k[i].cl);
    return rc;
}

/* W4: load sessions x locks (fencelock only; the others are not measured). */
static int run_w4(const struct opts *o, const struct bench_driver *drv)
{
    char err[256] = "";
    long locks = 0, retried = 0;
    int rc = 1;
    double t0 = now_ms();
    if (strcmp(drv->name, "fencelock"))
        snprintf(err, sizeof(err), "W4 is implemented for fencelock only");
    else
        rc = bench_fencelock_load(o->endpoints, o->sessions, o->per, o->ttl_ms, &locks, &retried,
                                  err, sizeof(err)) != 0;
    double s = (now_ms() - t0) / 1e3;
    printf("{\"driver\":");
    json_str(o->driver);
    printf(",\"workload\":\"W4\",\"sessions\":%d,\"locks\":%ld,\"ttl_ms\":%d,\"seconds\":%.3f,"
           "\"locks_per_s\":%.1f,\"retried\":%ld,\"errors\":%d",
           o->sessions, locks, o->ttl_ms, s, s > 0 ? locks / s : 0, retried, rc);
    if (*err) {
        printf(",\"%s\":", rc ? "error" : "note");
        json_str(err);
    }
    printf("}\n");
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (argc == 2 && !strcmp(argv[1], "--drivers")) { /* for bench/run.sh */
        size_t n;
        const struct bench_driver *const *all = drivers(&n);
        for (size_t i = 0; i < n; i++)
            printf("%s\n", all[i]->name);
        return 0;
    }
    if (parse_args(argc, argv, &o)) {
        usage();
        return 2;
    }
    /* W10's fencelock-sse: XREAD and the HTTP API's SSE watchers of the same PUTs (watch_fl.c);
     * a watch backend only, no lock driver */
    if (!strcmp(o.workload, "W10") && !strcmp(o.driver, "fencelock-sse"))
        return bench_w10(o.driver, o.endpoints, o.clients, o.pairs, o.seconds, o.gap_ms,
                         (long)o.rate);
    const struct bench_driver *drv = find_driver(o.driver);
    if (!drv) {
        printf("{\"driver\":");
        json_str(o.driver);
        printf(",\"workload\":\"%s\",\"error\":\"unknown driver\"}\n", o.workload);
        return 2;
    }
    if (!strcmp(o.workload, "W4"))
        return run_w4(&o, drv);
    if ((!strcmp(o.workload, "W5") || !strcmp(o.workload, "W6") || !strcmp(o.workload, "W7") ||
         !strcmp(o.workload, "W6C") || !strcmp(o.workload, "W11") || !strcmp(o.workload, "W13") ||
         !strcmp(o.workload, "W14")) &&
        strcmp(drv->name, "fencelock")) {
        printf("{\"driver\":");
        json_str(o.driver);
        printf(",\"workload\":\"%s\",\"skipped\":\"fencelock only\"}\n", o.workload);
        return 0;
    }
    if (!strcmp(o.workload, "W8"))
        return run_w8(&o, drv);
    if (!strcmp(o.workload, "W9")) /* --clients: the readers; one writer besides */
        return bench_w9(drv, o.endpoints, o.clients, o.ttl_ms, o.pairs, o.seconds,
                        o.exclusive_readers, o.writer_pause_ms, o.hold_ms);
    if (!strcmp(o.workload, "W11")) /* --clients: the clients; --pairs: the grants */
        return bench_w11(o.endpoints, o.clients, o.limit, o.ttl_ms, o.pairs, o.seconds, o.hold_ms);
    if (!strcmp(o.workload, "W13")) /* --pairs, --seconds: per set size and way */
        return bench_w13(o.endpoints, o.clients, o.k, o.way, o.hold_ms, o.ttl_ms, o.pairs,
                         o.seconds);
    if (!strcmp(o.workload, "W12")) /* --clients: the observers */
        return bench_w12(o.driver, o.endpoints, o.clients, o.rounds, o.seconds);
    if (!strcmp(o.workload, "W10")) /* --clients: the readers; --pairs: the PUTs */
        return bench_w10(o.driver, o.endpoints, o.clients, o.pairs, o.seconds, o.gap_ms,
                         (long)o.rate);
    if (!strcmp(o.workload, "W5"))
        return bench_fencelock_w5(o.endpoints, o.pairs, o.seconds);
    if (!strcmp(o.workload, "W14")) /* --pairs: operations (rounds) per row, --seconds: each */
        return bench_w14(o.endpoints, o.pairs, o.seconds);
    if (!strcmp(o.workload, "W7")) /* --sessions: connections, --clients: the active ones */
        return bench_fencelock_w7(o.endpoints, o.sessions, o.clients, o.seconds, o.server_pid);
    if (!strcmp(o.workload, "W6C"))
        return bench_fencelock_w6c(o.endpoints, o.sessions, o.ttl_ms, o.seconds);
    if (!strcmp(o.workload, "W6"))
        return bench_fencelock_w6(o.endpoints, o.sessions, o.ttl_ms, o.seconds);
    int n = o.clients, contended = !strcmp(o.workload, "W2");
    struct bench_cfg cfg = {.endpoints = o.endpoints, .ttl_ms = o.ttl_ms};
    struct worker *w = calloc((size_t)n, sizeof(*w));
    if (!w)
        return 1;
    int cap = o.pairs / n + 1 < 2000000 ? o.pairs / n + 1 : 2000000;
    if (contended)
        cap = o.pairs; /* one client may take most grants */
    int rc = 0, made = 0;
    char err[256] = "";
    for (; made < n; made++) {
        w[made].id = made;
        w[made].cap = cap;
        w[made].lat = malloc((size_t)cap * sizeof(double));
        if (contended)
            snprintf(w[made].lock, sizeof(w[made].lock), "lb-%d-%s-shared", (int)getpid(),
                     o.workload);
        else
            snprintf(w[made].lock, sizeof(w[made].lock), "lb-%d-%s-%d", (int)getpid(), o.workload,
                     made);
        if (!w[made].lat) {
            snprintf(err, sizeof(err), "out of memory");
            break;
        }
        w[made].cl = drv->client_new(&cfg, made, err, sizeof(err));
        if (!w[made].cl) {
            free(w[made].lat);
            break;
        }
    }
    struct result r;
    if (made < n) {
        r = (struct result){.errors = 1, .err = err};
        print_json(&o, &r);
        rc = 1;
    } else {
        struct phase warm = {.drv = drv,
                             .contended = contended,
                             .total = o.warmup,
                             .end_ms = now_ms() + WARMUP_MAX_MS};
        atomic_init(&warm.last_owner, -1);
        if (o.warmup)
            run_phase(&warm, w, n);
        summarize(w, n, 0, &r);
        if (r.errors) {
            snprintf(err, sizeof(err), "warm-up: %s", r.err);
            r.err = err;
            print_json(&o, &r);
            rc = 1;
        } else {
            struct phase meas = {.drv = drv,
                                 .contended = contended,
                                 .total = o.pairs,
                                 .end_ms = now_ms() + o.seconds * 1e3};
            atomic_init(&meas.last_owner, -1);
            double el = run_phase(&meas, w, n);
            summarize(w, n, el, &r);
            print_json(&o, &r);
            rc = r.errors || !r.ops;
        }
    }
    for (int i = 0; i < made; i++) {
        drv->client_free(w[i].cl);
        free(w[i].lat);
    }
    free(w);
    return rc;
}
