/* SPDX-License-Identifier: Apache-2.0 */
/*
 * primbench — lockbench's W14 (fencelock only): the coordination primitives beside the lock,
 * in raw RESP over hiredis to the leader (flraw.h), each measured on its own, one after the
 * other, for at most `count` operations (rounds) and `seconds` each:
 *   INCR           INCR of one counter key: latency per INCR
 *   SEM_PERMITS    SEM.ACQUIRE name sid 10 PERMITS 3 + SEM.RELEASE: latency per pair
 *   LOCK_REENTRANT a reentrant session holding the lock: LOCK again (the hold count goes up,
 *                  the same token) + UNLOCK (down again): latency per pair
 *   LOCK_VALUE     LOCK name sid VALUE v + UNLOCK: latency per pair
 *   LOCK_HISTORY   LOCK.HISTORY of the lock the pairs above used (its kept grants): latency
 *   LATCH          per round: LATCH.CREATE of PARTS counts, PARTS sessions JOIN, WAITERS
 *                  connections park LATCH.WAIT, PARTS COUNTDOWNs, LATCH.DELETE; the row's
 *                  latency is the time from sending the last COUNTDOWN to every waiter's answer
 *                  read (release), round_p50_ms the whole round
 *   BARRIER        per round: PARTS sessions, each on a connection of its own, send
 *                  BARRIER.ENTER (pipelined: all at once); latency = from the last ENTER sent
 *                  to every member's OK read (release); then each sends BARRIER.LEAVE, timed
 *                  the same way (leave_p50_ms)
 * Prints one JSON line {"driver":"fencelock","workload":"W14",ROW:{n,p50_ms,p99_ms,per_s}...}.
 * Errors go into the JSON; nothing aborts. Owns its connections and sessions: all closed.
 */
#include "driver.h"
#include "flraw.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W14_PARTS 4   /* a latch's joined sessions, a barrier's members */
#define W14_WAITERS 4 /* a latch's parked waiters */
#define W14_ROUNDS_MAX 2000
#define W14_WAIT_MS 5000 /* every parked request's WAIT */
#define W14_SEM_LIMIT 10
#define W14_SEM_PERMITS 3

enum { R_INCR, R_SEM, R_REENT, R_VALUE, R_HIST, R_LATCH, R_BARRIER, R_N };
static const char *const row_name[R_N] = {
    "INCR", "SEM_PERMITS", "LOCK_REENTRANT", "LOCK_VALUE", "LOCK_HISTORY", "LATCH", "BARRIER"};

struct row {
    double *lat, *lat2; /* ms; lat2: LATCH's round, BARRIER's leave */
    long n, cap;
    double elapsed_ms;
    double p50, p99, p50b, p99b;
};

static double pb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int pb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void pb_pct(double *v, long n, double *p50, double *p99)
{
    *p50 = *p99 = 0;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof(double), pb_cmp);
    *p50 = v[n / 2];
    *p99 = v[n * 99 / 100];
}

/* One command; its reply must not be an error (nor nil unless nil_ok). -1 with err. */
static int pb_cmd(redisContext *c, long long *out, bool nil_ok, char *err, size_t errlen,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int pb_cmd(redisContext *c, long long *out, bool nil_ok, char *err, size_t errlen,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = 0;
    if (!r || r->type == REDIS_REPLY_ERROR || (r->type == REDIS_REPLY_NIL && !nil_ok)) {
        snprintf(err, errlen, "%.40s: %s", fmt, r && r->str ? r->str : r ? "nil" : c->errstr);
        rc = -1;
    } else if (out && r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* Send what was appended now, without reading a reply. */
static int pb_flush(redisContext *c, char *err, size_t errlen)
{
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) {
            snprintf(err, errlen, "write: %s", c->errstr);
            return -1;
        }
    return 0;
}

/* Read one reply that must be +OK (a latch at zero, a full or emptied barrier). */
static int pb_read_ok(redisContext *c, const char *what, char *err, size_t errlen)
{
    void *v = NULL;
    if (redisGetReply(c, &v) != REDIS_OK || !v) {
        snprintf(err, errlen, "%s: %s", what, c->errstr);
        return -1;
    }
    redisReply *r = v;
    int ok = r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    if (!ok)
        snprintf(err, errlen, "%s: %s", what, r->str ? r->str : "not OK");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static bool more(const struct row *w, long count, double end)
{
    return w->n < w->cap && w->n < count && pb_now_ms() < end;
}

/* The serial rows: one timed step per iteration. */
static int serial_rows(redisContext *c, struct row *rows, long count, int seconds, char *err,
                       size_t errlen)
{
    long long sid = 0, rsid = 0, tok = 0;
    char cnt[64], sem[64], rl[64], vl[64];
    snprintf(cnt, sizeof cnt, "w14-%d-counter", (int)getpid());
    snprintf(sem, sizeof sem, "w14-%d-sem", (int)getpid());
    snprintf(rl, sizeof rl, "w14-%d-reent", (int)getpid());
    snprintf(vl, sizeof vl, "w14-%d-value", (int)getpid());
    if (pb_cmd(c, &sid, false, err, errlen, "SESSION.OPEN 60000") ||
        pb_cmd(c, &rsid, false, err, errlen, "SESSION.OPEN 60000 REENTRANT MAXCOUNT 4") ||
        pb_cmd(c, &tok, false, err, errlen, "LOCK %s %lld", rl, rsid))
        return -1;
    int rc = 0;
    for (int k = R_INCR; k <= R_HIST && !rc; k++) {
        struct row *w = &rows[k];
        double t0 = pb_now_ms(), end = t0 + seconds * 1e3;
        while (!rc && more(w, count, end)) {
            double s = pb_now_ms();
            switch (k) {
            case R_INCR:
                rc = pb_cmd(c, NULL, false, err, errlen, "INCR %s", cnt);
                break;
            case R_SEM:
                rc = pb_cmd(c, NULL, false, err, errlen, "SEM.ACQUIRE %s %lld %d PERMITS %d", sem,
                            sid, W14_SEM_LIMIT, W14_SEM_PERMITS) ||
                     pb_cmd(c, NULL, false, err, errlen, "SEM.RELEASE %s %lld", sem, sid);
                break;
            case R_REENT: /* counts up to 2 holds and down to 1: the lock stays held */
                rc = pb_cmd(c, NULL, false, err, errlen, "LOCK %s %lld", rl, rsid) ||
                     pb_cmd(c, NULL, false, err, errlen, "UNLOCK %s %lld", rl, rsid);
                break;
            case R_VALUE:
                rc = pb_cmd(c, NULL, false, err, errlen, "LOCK %s %lld VALUE host=bench,job=%ld",
                            vl, sid, w->n) ||
                     pb_cmd(c, NULL, false, err, errlen, "UNLOCK %s %lld", vl, sid);
                break;
            case R_HIST: /* the grants LOCK_VALUE's pairs left (--history-per-lock of them) */
                rc = pb_cmd(c, NULL, false, err, errlen, "LOCK.HISTORY %s", vl);
                break;
            }
            if (!rc)
                w->lat[w->n++] = pb_now_ms() - s;
        }
        w->elapsed_ms = pb_now_ms() - t0;
    }
    redisReply *r = redisCommand(c, "SESSION.CLOSE %lld", sid);
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "SESSION.CLOSE %lld", rsid);
    if (r)
        freeReplyObject(r);
    return rc;
}

/* LATCH rounds: the main connection creates, joins and counts down; the waiters park. */
static int latch_rows(redisContext *c, redisContext **wc, struct row *w, long count, int seconds,
                      char *err, size_t errlen)
{
    long long sids[W14_PARTS];
    char name[64];
    int rc = 0, opened = 0;
    for (; opened < W14_PARTS && !rc; opened++)
        rc = pb_cmd(c, &sids[opened], false, err, errlen, "SESSION.OPEN 60000");
    double t0 = pb_now_ms(), end = t0 + seconds * 1e3;
    while (!rc && more(w, count, end)) {
        snprintf(name, sizeof name, "w14-%d-latch-%ld", (int)getpid(), w->n);
        double r0 = pb_now_ms();
        rc = pb_cmd(c, NULL, false, err, errlen, "LATCH.CREATE %s %d", name, W14_PARTS);
        for (int i = 0; i < W14_PARTS && !rc; i++)
            rc = pb_cmd(c, NULL, false, err, errlen, "LATCH.JOIN %s %lld", name, sids[i]);
        for (int i = 0; i < W14_WAITERS && !rc; i++) {
            redisAppendCommand(wc[i], "LATCH.WAIT %s WAIT %d", name, W14_WAIT_MS);
            rc = pb_flush(wc[i], err, errlen);
        }
        double last = 0;
        for (int i = 0; i < W14_PARTS && !rc; i++) {
            last = pb_now_ms();
            rc = pb_cmd(c, NULL, false, err, errlen, "LATCH.COUNTDOWN %s %lld", name, sids[i]);
        }
        for (int i = 0; i < W14_WAITERS && !rc; i++)
            rc = pb_read_ok(wc[i], "LATCH.WAIT", err, errlen);
        double released = pb_now_ms();
        if (!rc)
            rc = pb_cmd(c, NULL, false, err, errlen, "LATCH.DELETE %s", name);
        if (!rc) {
            w->lat[w->n] = released - last;
            w->lat2[w->n++] = pb_now_ms() - r0;
        }
    }
    w->elapsed_ms = pb_now_ms() - t0;
    for (int i = 0; i < opened; i++) {
        redisReply *r = redisCommand(c, "SESSION.CLOSE %lld", sids[i]);
        if (r)
            freeReplyObject(r);
    }
    return rc;
}

/* BARRIER rounds: each member on its own connection, all sent at once, then all read. */
static int barrier_rows(redisContext *c, redisContext **mc, struct row *w, long count, int seconds,
                        char *err, size_t errlen)
{
    long long sids[W14_PARTS];
    char name[64];
    int rc = 0, opened = 0;
    for (; opened < W14_PARTS && !rc; opened++)
        rc = pb_cmd(c, &sids[opened], false, err, errlen, "SESSION.OPEN 60000");
    double t0 = pb_now_ms(), end = t0 + seconds * 1e3;
    while (!rc && more(w, count, end)) {
        snprintf(name, sizeof name, "w14-%d-barrier-%ld", (int)getpid(), w->n);
        double sent = 0, leave_sent = 0;
        for (int i = 0; i < W14_PARTS && !rc; i++) {
            redisAppendCommand(mc[i], "BARRIER.ENTER %s %lld %d WAIT %d", name, sids[i], W14_PARTS,
                               W14_WAIT_MS);
            sent = pb_now_ms();
            rc = pb_flush(mc[i], err, errlen);
        }
        for (int i = 0; i < W14_PARTS && !rc; i++)
            rc = pb_read_ok(mc[i], "BARRIER.ENTER", err, errlen);
        double entered = pb_now_ms();
        for (int i = 0; i < W14_PARTS && !rc; i++) {
            redisAppendCommand(mc[i], "BARRIER.LEAVE %s %lld WAIT %d", name, sids[i], W14_WAIT_MS);
            leave_sent = pb_now_ms();
            rc = pb_flush(mc[i], err, errlen);
        }
        for (int i = 0; i < W14_PARTS && !rc; i++)
            rc = pb_read_ok(mc[i], "BARRIER.LEAVE", err, errlen);
        if (!rc) {
            w->lat[w->n] = entered - sent;
            w->lat2[w->n++] = pb_now_ms() - leave_sent;
        }
    }
    w->elapsed_ms = pb_now_ms() - t0;
    for (int i = 0; i < opened; i++) {
        redisReply *r = redisCommand(c, "SESSION.CLOSE %lld", sids[i]);
        if (r)
            freeReplyObject(r);
    }
    return rc;
}

int bench_w14(const char *endpoints, long count, int seconds)
{
    char err[256] = "";
    struct row rows[R_N];
    redisContext *c = NULL, *extra[W14_WAITERS > W14_PARTS ? W14_WAITERS : W14_PARTS] = {NULL};
    const int n_extra = sizeof extra / sizeof extra[0];
    long cap = count < W14_ROUNDS_MAX * 100 ? count : W14_ROUNDS_MAX * 100;
    int rc = -1;
    memset(rows, 0, sizeof rows);
    for (int k = 0; k < R_N; k++) {
        rows[k].cap = k >= R_LATCH ? (cap < W14_ROUNDS_MAX ? cap : W14_ROUNDS_MAX) : cap;
        rows[k].lat = malloc((size_t)(rows[k].cap + 1) * sizeof(double));
        rows[k].lat2 = malloc((size_t)(rows[k].cap + 1) * sizeof(double));
        if (!rows[k].lat || !rows[k].lat2)
            snprintf(err, sizeof err, "out of memory");
    }
    if (!err[0])
        c = fr_connect_leader(endpoints, err, sizeof err);
    for (int i = 0; c && i < n_extra && !err[0]; i++)
        extra[i] = fr_connect_leader(endpoints, err, sizeof err);
    if (c && !err[0]) {
        rc = serial_rows(c, rows, count, seconds, err, sizeof err);
        if (!rc)
            rc = latch_rows(c, extra, &rows[R_LATCH], count, seconds, err, sizeof err);
        if (!rc)
            rc = barrier_rows(c, extra, &rows[R_BARRIER], count, seconds, err, sizeof err);
    }
    printf("{\"driver\":\"fencelock\",\"workload\":\"W14\",\"errors\":%d,\"parts\":%d,"
           "\"waiters\":%d,\"sem_limit\":%d,\"sem_permits\":%d",
           rc != 0, W14_PARTS, W14_WAITERS, W14_SEM_LIMIT, W14_SEM_PERMITS);
    for (int k = 0; k < R_N; k++) {
        struct row *w = &rows[k];
        if (w->lat2 && k >= R_LATCH)
            pb_pct(w->lat2, w->n, &w->p50b, &w->p99b);
        if (w->lat)
            pb_pct(w->lat, w->n, &w->p50, &w->p99);
        printf(",\"%s\":{\"n\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"per_s\":%.0f", row_name[k],
               w->n, w->p50, w->p99, w->elapsed_ms > 0 ? w->n / (w->elapsed_ms / 1e3) : 0);
        if (k == R_LATCH)
            printf(",\"round_p50_ms\":%.3f,\"round_p99_ms\":%.3f", w->p50b, w->p99b);
        if (k == R_BARRIER)
            printf(",\"leave_p50_ms\":%.3f,\"leave_p99_ms\":%.3f", w->p50b, w->p99b);
        printf("}");
        free(w->lat);
        free(w->lat2);
    }
    if (err[0]) {
        printf(",\"error\":\"");
        for (const char *p = err; *p; p++)
            putchar(*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '\'' : *p);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
    for (int i = 0; i < n_extra; i++)
        if (extra[i])
            redisFree(extra[i]);
    if (c)
        redisFree(c);
    return rc ? 1 : 0;
}
