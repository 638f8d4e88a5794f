/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multibench — lockbench's W13: atomic multi-lock, fencelock only. One client and one session
 * take a set of k names (k = 2, 4, 8, each name its own) and give it back, in a loop, two ways:
 *   multi       fl_lock_multi (LOCK.MULTI: one request, one log entry) then fl_unlock_multi;
 *   sequential  fl_lock of each name in sorted order (the classic deadlock-free recipe of
 *               client-side multi-locks), then fl_unlock of each.
 * Both hold the same names for the same nothing; the pair latency (acquire of the whole set +
 * release of it) and pairs/s are reported per k and way, on one JSON line. Bounded by `count`
 * pairs per (k, way) and by `seconds` in all (shared equally). Owns its client and session,
 * freed before it returns. Uncontended on purpose: it measures what taking k locks costs one
 * client, not fairness (test_multilock and the torture workload judge correctness).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fencelock.h"

#define W13_WAIT_MS 5000
#define W13_MAX_K 8
#define W13_LAT_CAP 200000 /* pair samples kept per (k, way) */

int bench_w13(const char *endpoints, int ttl_ms, long count, int seconds);

static double mb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int mb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct w13_row {
    int k, multi;
    long pairs, errors;
    double secs, p50, p99;
    char err[160];
};

/* One pair of the set: 0, or -1 with the error in row->err. */
static int w13_pair(fl_session *s, fl_client *c, const char *const *names, int k, int multi,
                    struct w13_row *row)
{
    uint64_t tok[W13_MAX_K];
    fl_err e = FL_OK;
    if (multi) {
        e = fl_lock_multi(s, (size_t)k, names, NULL, W13_WAIT_MS, tok);
        if (!e)
            e = fl_unlock_multi(s, (size_t)k, names);
    } else {
        int got = 0;
        for (; got < k && !e; got++)
            e = fl_lock(s, names[got], W13_WAIT_MS, &tok[got]);
        for (int i = 0; i < got - (e ? 1 : 0); i++) {
            fl_err u = fl_unlock(s, names[i]);
            e = e ? e : u;
        }
    }
    if (e)
        snprintf(row->err, sizeof(row->err), "%s: %s", fl_strerror(e), fl_client_errmsg(c));
    return e ? -1 : 0;
}

static void w13_run(fl_session *s, fl_client *c, int k, int multi, long count, double budget_ms,
                    double *lat, struct w13_row *row)
{
    char buf[W13_MAX_K][32];
    const char *names[W13_MAX_K];
    for (int i = 0; i < k; i++) { /* sorted: "w13/k<k>/n0" < "w13/k<k>/n1" < ... */
        snprintf(buf[i], sizeof(buf[i]), "w13/k%d/n%d", k, i);
        names[i] = buf[i];
    }
    *row = (struct w13_row){.k = k, .multi = multi};
    double start = mb_now_ms(), end = start + budget_ms;
    long n = 0;
    while (n < count && mb_now_ms() < end) {
        double t0 = mb_now_ms();
        if (w13_pair(s, c, names, k, multi, row)) {
            row->errors++;
            break;
        }
        if (n < W13_LAT_CAP)
            lat[n] = mb_now_ms() - t0;
        n++;
    }
    row->pairs = n;
    row->secs = (mb_now_ms() - start) / 1e3;
    long m = n < W13_LAT_CAP ? n : W13_LAT_CAP;
    qsort(lat, (size_t)m, sizeof(double), mb_cmp);
    row->p50 = m ? lat[m / 2] : 0;
    row->p99 = m ? lat[m * 99 / 100] : 0;
}

int bench_w13(const char *endpoints, int ttl_ms, long count, int seconds)
{
    static const int ks[] = {2, 4, 8};
    enum { NK = sizeof(ks) / sizeof(ks[0]) };
    struct w13_row rows[2 * NK];
    fl_err e = FL_OK;
    fl_client *c = fl_client_new(endpoints, NULL, &e);
    fl_session *s = NULL;
    double *lat = malloc(W13_LAT_CAP * sizeof(double));
    const char *fail = !c ? "fl_client_new" : !lat ? "out of memory" : NULL;
    if (!fail && (e = fl_session_open(c, (uint64_t)ttl_ms, 0, "w13", &s)))
        fail = "fl_session_open";
    if (fail) {
        printf("{\"driver\":\"fencelock\",\"workload\":\"W13\",\"error\":\"%s: %s\"}\n", fail,
               fl_strerror(e));
        free(lat);
        fl_client_free(c);
        return 1;
    }
    double budget = seconds * 1e3 / (2 * NK);
    for (int i = 0; i < NK; i++) {
        w13_run(s, c, ks[i], 0, count, budget, lat, &rows[2 * i]);
        w13_run(s, c, ks[i], 1, count, budget, lat, &rows[2 * i + 1]);
    }
    int errors = 0;
    printf("{\"driver\":\"fencelock\",\"workload\":\"W13\",\"ttl_ms\":%d,\"rows\":[", ttl_ms);
    for (int i = 0; i < 2 * NK; i++) {
        const struct w13_row *r = &rows[i];
        errors += r->errors > 0;
        printf("%s{\"k\":%d,\"way\":\"%s\",\"pairs\":%ld,\"pairs_per_s\":%.1f,\"p50_ms\":%.3f,"
               "\"p99_ms\":%.3f,\"errors\":%ld%s%s%s}",
               i ? "," : "", r->k, r->multi ? "multi" : "sequential", r->pairs,
               r->secs > 0 ? r->pairs / r->secs : 0.0, r->p50, r->p99, r->errors,
               r->errors ? ",\"error\":\"" : "", r->errors ? r->err : "", r->errors ? "\"" : "");
    }
    printf("]}\n");
    fflush(stdout);
    fl_session_close(s);
    fl_client_free(c);
    free(lat);
    return errors ? 1 : 0;
}
