/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchbench — lockbench's W10 harness: event latency and fan-out of a watch, the
 * same loop for every system of bench/watch.h (fencelock XREAD, etcd watch).
 *
 * One run: `n` watchers of a fresh key prefix, driven by one poller thread that records every
 * event (watcher, revision, receipt time) in one array; a writer in the calling thread.
 * 1. warm-up: one PUT, then wait until every watcher has seen it (the watches are live).
 * 2. latency: `count` PUTs one at a time; after each, wait until all n watchers have seen it
 *    (see the settle rule below), then `gap_ms` more, so that every watcher is waiting again
 *    (fencelock's next XREAD parks only after a read barrier, a commit: a PUT sent at once
 *    would often meet watchers not parked yet, which gap 0 measures). Latency = receipt - the PUT's
 * acknowledgement, per watcher and event (negative when the event overtook the reply: kept, it is
 * the truth); also receipt - the PUT's sending (the write's commit included: the figure a watcher
 * of another writer sees).
 * 3. fan-out: `count` x W10_FANOUT_MUL PUTs with W10_WINDOW unanswered: events delivered per
 *    second in all (n x PUTs over the span from the first PUT sent to the last event
 *    received), and the latency under that load.
 * Or, with a rate (lockbench --rate R), only a fixed-rate phase: PUTs offered at R/s for
 *    `seconds` whatever the answers' pace (wb_phase_rate): delivery latency at an offered load
 *    that is the same for every system, one JSON line of workload W10R.
 * A backend with kinds of watchers (watch.h kind_of: fencelock-sse, XREAD and SSE alternating)
 * also gets the latency phase per kind (by_kind), from the same PUTs.
 * Every phase's PUTs are bounded by its count and by `seconds`; the wait for the events still
 * on their way ends when none came for W10_SETTLE_MS (or after W10_SETTLE_CAP_MS in all): the
 * events that had not arrived by then are reported (missed). Late is not missed: a fan-out
 * whose delivery outlasts its PUTs is waited for as long as events keep coming.
 * Owns the poller thread, the writer and the watchers; all are freed before it returns. One
 * JSON line.
 */
#include "watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W10_MAX_WATCHERS 1000
#define W10_FANOUT_MUL 5
#define W10_WINDOW 32
#define W10_SETTLE_MS 3000      /* the wait for an event with nothing arriving meanwhile */
#define W10_SETTLE_CAP_MS 60000 /* ... and in all, however slowly events still arrive */

int bench_w10(const char *driver, const char *endpoints, int readers, long count, int seconds,
              int gap_ms, long rate);

double wb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct wb_rec {
    long long rev;
    double t;
    int w; /* the watcher */
};

struct wb_run {
    const struct watch_backend *be;
    void *ws;
    struct wb_rec *rec; /* written by the poller only */
    long cap;
    atomic_long nrec; /* published with release after each record */
    atomic_long dropped;
    atomic_int stop, failed;
    char err[256]; /* the poller's error, set before `failed` */
};

static void wb_sink_rec(void *ctx, int watcher, long long rev, double t_ms)
{
    struct wb_run *r = ctx;
    long i = atomic_load_explicit(&r->nrec, memory_order_relaxed);
    if (i >= r->cap) {
        atomic_fetch_add(&r->dropped, 1);
        return;
    }
    r->rec[i] = (struct wb_rec){rev, t_ms, watcher};
    atomic_store_explicit(&r->nrec, i + 1, memory_order_release);
}

static void *wb_poller(void *arg)
{
    struct wb_run *r = arg;
    while (!atomic_load(&r->stop))
        if (r->be->watchers_poll(r->ws, 50, wb_sink_rec, r, r->err, sizeof(r->err))) {
            atomic_store(&r->failed, 1);
            break;
        }
    return NULL;
}

/* Waits until `want` records exist, the poller failed, no record came for W10_SETTLE_MS
   (events still on their way keep it waiting: late is not lost), or W10_SETTLE_CAP_MS in all;
   the records seen. */
static long wb_wait_records(struct wb_run *r, long want)
{
    double now = wb_now_ms(), stall = now + W10_SETTLE_MS, cap = now + W10_SETTLE_CAP_MS;
    long n, last = -1;
    while ((n = atomic_load_explicit(&r->nrec, memory_order_acquire)) < want &&
           !atomic_load(&r->failed) && (now = wb_now_ms()) < stall && now < cap) {
        if (n != last)
            stall = now + W10_SETTLE_MS, last = n;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return n;
}

struct wb_put {
    long long rev;
    double ack, sent; /* sent: 0 when not known (pipelined) */
};

static int wb_cmp_put(const void *a, const void *b)
{
    long long x = ((const struct wb_put *)a)->rev, y = ((const struct wb_put *)b)->rev;
    return x < y ? -1 : x > y;
}

static int wb_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What one phase measured. */
struct wb_phase {
    long puts, events, missed;
    double p50, p99, max, span_ms, first_send;
    double send_p50, send_p99; /* PUT sent -> event received (one PUT at a time only) */
};

#define WB_KINDS 2 /* kinds of watchers a backend may mix (kind_of of watchers 0 and 1) */

/* Latencies of records rec[from..to) against the phase's PUTs (sorted here); records of
   other revisions (none expected) are ignored, and with kind >= 0 those of watchers of another
   kind than watcher `kind`'s (watchers: how many of that kind). */
static void wb_latency(struct wb_run *r, long from, long to, struct wb_put *p, long np,
                       long watchers, int kind, struct wb_phase *ph)
{
    qsort(p, (size_t)np, sizeof(*p), wb_cmp_put);
    double *lat = malloc((size_t)(to - from + 1) * sizeof(double)), last = 0;
    double *snd = malloc((size_t)(to - from + 1) * sizeof(double));
    long k = 0, ks = 0;
    for (long i = from; lat && snd && i < to; i++) {
        if (kind >= 0 && strcmp(r->be->kind_of(r->rec[i].w), r->be->kind_of(kind)) != 0)
            continue;
        struct wb_put key = {.rev = r->rec[i].rev};
        struct wb_put *hit = bsearch(&key, p, (size_t)np, sizeof(*p), wb_cmp_put);
        if (!hit)
            continue;
        lat[k++] = r->rec[i].t - hit->ack;
        if (hit->sent > 0)
            snd[ks++] = r->rec[i].t - hit->sent;
        if (r->rec[i].t > last)
            last = r->rec[i].t;
    }
    ph->events = k;
    ph->missed = np * watchers - k;
    ph->span_ms = last > ph->first_send ? last - ph->first_send : 0;
    if (k) {
        qsort(lat, (size_t)k, sizeof(double), wb_cmp_d);
        ph->p50 = lat[k / 2];
        ph->p99 = lat[k * 99 / 100];
        ph->max = lat[k - 1];
    }
    if (ks) {
        qsort(snd, (size_t)ks, sizeof(double), wb_cmp_d);
        ph->send_p50 = snd[ks / 2];
        ph->send_p99 = snd[ks * 99 / 100];
    }
    free(lat);
    free(snd);
}

/* Phase 2: PUTs one at a time, each awaited by every watcher; per kind into kinds[] too. */
static int wb_phase_latency(struct wb_run *r, void *w, const char *prefix, int n, long count,
                            int gap_ms, double end, struct wb_phase *ph,
                            struct wb_phase kinds[WB_KINDS], char *err, size_t errlen)
{
    struct wb_put *p = calloc((size_t)count + 1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    long from = atomic_load_explicit(&r->nrec, memory_order_acquire), np = 0;
    char key[160];
    int rc = 0;
    ph->first_send = wb_now_ms();
    for (; np < count && wb_now_ms() < end && !atomic_load(&r->failed); np++) {
        snprintf(key, sizeof(key), "%sl%ld", prefix, np);
        p[np].sent = wb_now_ms();
        if ((rc = r->be->put(w, key, &p[np].rev, err, errlen)))
            break;
        p[np].ack = wb_now_ms();
        wb_wait_records(r, from + (np + 1) * n);
        struct timespec gap = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
        if (gap_ms)
            nanosleep(&gap, NULL);
    }
    ph->puts = np;
    long to = atomic_load_explicit(&r->nrec, memory_order_acquire);
    wb_latency(r, from, to, p, np, n, -1, ph);
    for (int k = 0; r->be->kind_of && k < WB_KINDS && k < n; k++) {
        kinds[k] = (struct wb_phase){.puts = np, .first_send = ph->first_send};
        wb_latency(r, from, to, p, np, (n - k + 1) / 2, k, &kinds[k]); /* kinds alternate */
    }
    free(p);
    return rc;
}

/* A phase's `count` PUTs: their keys "<prefix><tag><i>", and for each its revision, its
 * acknowledgement time and its record for wb_latency. 0, or -1 with err (out of memory: what was
 * made is freed by wb_batch_free, which is always called). */
struct wb_batch {
    struct wb_put *p;
    long long *revs;
    double *acks;
    char **keys;
    long count;
};

static int wb_batch_new(struct wb_batch *b, const char *prefix, char tag, long count, char *err,
                        size_t errlen)
{
    *b = (struct wb_batch){.p = calloc((size_t)count + 1, sizeof(*b->p)),
                           .revs = calloc((size_t)count + 1, sizeof(*b->revs)),
                           .acks = calloc((size_t)count + 1, sizeof(*b->acks)),
                           .keys = calloc((size_t)count + 1, sizeof(*b->keys)),
                           .count = count};
    int rc = 0;
    for (long i = 0; b->keys && i < count && !rc; i++)
        if (asprintf(&b->keys[i], "%s%c%ld", prefix, tag, i) < 0)
            b->keys[i] = NULL, rc = -1;
    if (!b->p || !b->revs || !b->acks || !b->keys || rc) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    return rc;
}

static void wb_batch_free(struct wb_batch *b)
{
    for (long i = 0; b->keys && i < b->count; i++)
        free(b->keys[i]);
    free(b->keys);
    free(b->p);
    free(b->revs);
    free(b->acks);
}

/* Phase 3: PUTs pipelined (W10_WINDOW unanswered), in chunks so that the time bound holds. */
static int wb_phase_fanout(struct wb_run *r, void *w, const char *prefix, int n, long count,
                           double end, struct wb_phase *ph, char *err, size_t errlen)
{
    struct wb_batch b;
    int rc = wb_batch_new(&b, prefix, 'f', count, err, errlen);
    struct wb_put *p = b.p;
    long long *revs = b.revs;
    double *acks = b.acks;
    char **keys = b.keys;
    long from = atomic_load_explicit(&r->nrec, memory_order_acquire), np = 0;
    ph->first_send = wb_now_ms();
    while (!rc && np < count && wb_now_ms() < end && !atomic_load(&r->failed)) {
        long chunk = count - np < 4 * W10_WINDOW ? count - np : 4 * W10_WINDOW;
        rc = r->be->put_many(w, keys + np, chunk, W10_WINDOW, revs + np, acks + np, err, errlen);
        if (!rc)
            np += chunk;
    }
    for (long i = 0; i < np; i++)
        p[i] = (struct wb_put){.rev = revs[i], .ack = acks[i]};
    if (p) {
        wb_wait_records(r, from + np * n);
        ph->puts = np;
        wb_latency(r, from, atomic_load_explicit(&r->nrec, memory_order_acquire), p, np, n, -1, ph);
    }
    wb_batch_free(&b);
    return rc;
}

/* The fixed-rate phase (--rate R): PUTs offered at R per second, open loop, for `ms`: PUT i is
 * due at t0 + i/R; every millisecond the PUTs due so far are sent pipelined (put_many, up to
 * W10_WINDOW unanswered) and answered before the next turn, so a system slower than R falls
 * behind its schedule and the latency from the due time shows it (no coordinated omission).
 * Latency: the PUT's acknowledgement -> event (as the latency phase) and its due time -> event
 * (the write's commit and any queueing included). Achieved: PUTs / (last answer - t0). */
static int wb_phase_rate(struct wb_run *r, void *w, const char *prefix, int n, long rate, long ms,
                         struct wb_phase *ph, double *achieved, char *err, size_t errlen)
{
    long count = rate * ms / 1000;
    struct wb_batch b;
    int rc = wb_batch_new(&b, prefix, 'r', count, err, errlen);
    struct wb_put *p = b.p;
    long long *revs = b.revs;
    double *acks = b.acks;
    char **keys = b.keys;
    long from = atomic_load_explicit(&r->nrec, memory_order_acquire), np = 0;
    double t0 = wb_now_ms() + 1, per = 1e3 / (double)rate, hard = t0 + ms + 30e3, last = t0;
    ph->first_send = t0;
    while (!rc && np < count && !atomic_load(&r->failed)) {
        double now = wb_now_ms();
        if (now > hard) {
            snprintf(err, errlen, "fixed rate: %ld of %ld PUTs sent 30 s past the schedule", np,
                     count);
            rc = -1;
            break;
        }
        long due = now < t0 ? 0 : (long)((now - t0) / per) + 1;
        if (due > count)
            due = count;
        if (due <= np) {
            double wait = t0 + (double)np * per - now;
            struct timespec ts = {0, (long)(wait > 0 ? wait * 1e6 : 0)};
            nanosleep(&ts, NULL);
            continue;
        }
        rc = r->be->put_many(w, keys + np, due - np, W10_WINDOW, revs + np, acks + np, err, errlen);
        for (long i = np; !rc && i < due; i++) {
            p[i] = (struct wb_put){.rev = revs[i], .ack = acks[i], .sent = t0 + (double)i * per};
            if (acks[i] > last)
                last = acks[i];
        }
        if (!rc)
            np = due;
    }
    *achieved = last > t0 ? np / ((last - t0) / 1e3) : 0;
    if (p) {
        wb_wait_records(r, from + np * n);
        ph->puts = np;
        wb_latency(r, from, atomic_load_explicit(&r->nrec, memory_order_acquire), p, np, n, -1, ph);
    }
    wb_batch_free(&b);
    return rc;
}

static void wb_print(const struct watch_backend *be, const char *driver, int n, int gap_ms,
                     const struct wb_phase *a, const struct wb_phase *b,
                     const struct wb_phase kinds[WB_KINDS], long dropped, const char *err)
{
    double s = b->span_ms / 1e3;
    printf("{\"driver\":\"%s\",\"workload\":\"W10\",\"watchers\":%d,"
           "\"latency\":{\"gap_ms\":%d,\"puts\":%ld,\"events\":%ld,\"missed\":%ld,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"from_send_p50_ms\":%.3f,"
           "\"from_send_p99_ms\":%.3f},"
           "\"fanout\":{\"puts\":%ld,\"window\":%d,\"events\":%ld,\"missed\":%ld,\"seconds\":%.3f,"
           "\"events_per_s\":%.1f,\"puts_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f},"
           "\"dropped\":%ld,\"errors\":%d",
           driver, n, gap_ms, a->puts, a->events, a->missed, a->p50, a->p99, a->max, a->send_p50,
           a->send_p99, b->puts, W10_WINDOW, b->events, b->missed, s, s > 0 ? b->events / s : 0,
           s > 0 ? b->puts / s : 0, b->p50, b->p99, dropped, *err != 0);
    if (be && be->kind_of) { /* the latency phase per kind of watcher, the same PUTs */
        printf(",\"by_kind\":{");
        for (int k = 0; k < WB_KINDS && k < n; k++)
            printf("%s\"%s\":{\"events\":%ld,\"missed\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                   "\"max_ms\":%.3f,\"from_send_p50_ms\":%.3f,\"from_send_p99_ms\":%.3f}",
                   k ? "," : "", be->kind_of(k), kinds[k].events, kinds[k].missed, kinds[k].p50,
                   kinds[k].p99, kinds[k].max, kinds[k].send_p50, kinds[k].send_p99);
        printf("}");
    }
    if (*err) {
        printf(",\"error\":\"");
        for (; *err; err++)
            putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
}

static void wb_print_rate(const char *driver, int n, long rate, double achieved,
                          const struct wb_phase *a, long dropped, const char *err)
{
    printf("{\"driver\":\"%s\",\"workload\":\"W10R\",\"watchers\":%d,\"rate\":%ld,"
           "\"puts\":%ld,\"achieved_per_s\":%.1f,\"events\":%ld,\"missed\":%ld,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"from_due_p50_ms\":%.3f,\"from_due_p99_ms\":%.3f,"
           "\"dropped\":%ld,\"errors\":%d",
           driver, n, rate, a->puts, achieved, a->events, a->missed, a->p50, a->p99, a->max,
           a->send_p50, a->send_p99, dropped, *err != 0);
    if (*err) {
        printf(",\"error\":\"");
        for (; *err; err++)
            putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
}

static const struct watch_backend *wb_find(const char *driver)
{
    if (!strcmp(driver, watch_fencelock.name))
        return &watch_fencelock;
    if (!strcmp(driver, watch_fencelock_sse.name))
        return &watch_fencelock_sse;
    if (!strcmp(driver, watch_etcd.name))
        return &watch_etcd;
    return NULL;
}

/* W10 for `driver` with `n` watchers; 0 ok, 1 on an error (in the JSON line). With rate > 0
 * only the fixed-rate phase runs (rate PUTs/s for `seconds`), and the line's workload is
 * "W10R". */
int bench_w10(const char *driver, const char *endpoints, int n, long count, int seconds, int gap_ms,
              long rate)
{
    const struct watch_backend *be = wb_find(driver);
    if (!be) {
        printf("{\"driver\":\"%s\",\"workload\":\"W10\",\"skipped\":\"no watch backend\"}\n",
               driver);
        return 0;
    }
    char err[256] = "", prefix[64];
    struct wb_phase a = {0}, b = {0}, kinds[WB_KINDS] = {{0}};
    struct wb_run r = {.be = be};
    pthread_t poller;
    int started = 0;
    long long rev0 = 0;
    snprintf(prefix, sizeof(prefix), "lb-%d-W10-%d/", (int)getpid(), n);
    if (n < 1 || n > W10_MAX_WATCHERS) {
        snprintf(err, sizeof(err), "watchers: 1..%d", W10_MAX_WATCHERS);
        n = 0;
    }
    if (rate > 0)
        count = rate * seconds / (W10_FANOUT_MUL + 1) + 1; /* records for rate x seconds */
    r.cap = (long)n * (count * (W10_FANOUT_MUL + 1) + 16);
    r.rec = n ? malloc((size_t)r.cap * sizeof(*r.rec)) : NULL;
    void *w = r.rec ? be->writer_new(endpoints, err, sizeof(err)) : NULL;
    char key[160];
    snprintf(key, sizeof(key), "%sstart", prefix);
    if (w && !be->put(w, key, &rev0, err, sizeof(err)))
        r.ws = be->watchers_new(endpoints, prefix, n, rev0, err, sizeof(err));
    if (r.ws && !pthread_create(&poller, NULL, wb_poller, &r))
        started = 1;
    else if (r.ws)
        snprintf(err, sizeof(err), "pthread_create failed");
    long long wrev;
    snprintf(key, sizeof(key), "%swarm", prefix);
    if (started && !be->put(w, key, &wrev, err, sizeof(err)) && wb_wait_records(&r, n) < n &&
        !atomic_load(&r.failed))
        snprintf(err, sizeof(err), "the watchers did not all see the warm-up PUT");
    double end = wb_now_ms() + seconds * 1e3 / 2, achieved = 0;
    if (rate > 0) {
        if (started && !*err)
            wb_phase_rate(&r, w, prefix, n, rate, seconds * 1000L, &a, &achieved, err, sizeof(err));
    } else if (started && !*err &&
               !wb_phase_latency(&r, w, prefix, n, count, gap_ms, end, &a, kinds, err, sizeof(err)))
        wb_phase_fanout(&r, w, prefix, n, count * W10_FANOUT_MUL, end + seconds * 1e3 / 2, &b, err,
                        sizeof(err));
    if (started) {
        atomic_store(&r.stop, 1);
        pthread_join(poller, NULL);
        if (atomic_load(&r.failed) && !*err)
            snprintf(err, sizeof(err), "%s", r.err);
    }
    if (!r.rec && !*err)
        snprintf(err, sizeof(err), "out of memory");
    if (rate > 0)
        wb_print_rate(driver, n, rate, achieved, &a, atomic_load(&r.dropped), err);
    else
        wb_print(be, driver, n, gap_ms, &a, &b, kinds, atomic_load(&r.dropped), err);
    if (r.ws)
        be->watchers_free(r.ws);
    if (w)
        be->writer_free(w);
    free(r.rec);
    return *err ? 1 : 0;
}
