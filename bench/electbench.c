/* SPDX-License-Identifier: Apache-2.0 */
/*
 * electbench — lockbench's W12: election fail-over. Each of `rounds` rounds (default
 * 10) uses a fresh election: a leader L campaigns and wins, a candidate C campaigns and waits,
 * `observers` observers (default 4, each its own connection) watch the election; then L's
 * session is ended from outside (fencelock: SESSION.CLOSE on another connection; etcd: its
 * lease revoked) and the time from that call to the moment each observer sees C lead is
 * measured. Reports p50/p99/max over the rounds of "every observer saw C" and over all the
 * observers' samples, the rounds observed in full, and that C's token is newer than L's.
 * Systems behind the table `el_ops`: fencelock over raw RESP (ELECT.CAMPAIGN / ELECT.OBSERVE
 * AFTER rev WAIT ms, electbench.c) and etcd's v3election over its JSON gateway (elect_etcd.c).
 * Owns its threads, connections and sessions (leases); all are ended before it returns. Each
 * round is bounded by EL_ROUND_MS; the whole run by `seconds`. One JSON line.
 */
#include "elect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EL_MAX_OBSERVERS 64

int bench_w12(const char *driver, const char *endpoints, int observers, int rounds, int seconds);

double el_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void el_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

struct el_obs {
    const struct el_ops *ops;
    void *round;
    int idx;
    double seen_ms; /* when it saw C lead; 0 if it did not */
    char err[256];
};

struct el_cand {
    const struct el_ops *ops;
    void *round;
    long long token;
    int rc;
    char err[256];
};

static void *el_obs_thread(void *arg)
{
    struct el_obs *o = arg;
    if (!o->ops->observe(o->round, o->idx, el_now_ms() + EL_ROUND_MS, o->err, sizeof(o->err)))
        o->seen_ms = el_now_ms();
    return NULL;
}

static void *el_cand_thread(void *arg)
{
    struct el_cand *c = arg;
    c->rc = c->ops->candidate(c->round, &c->token, c->err, sizeof(c->err));
    return NULL;
}

static int el_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void el_pct(double *v, int n, double *p50, double *p99, double *max)
{
    *p50 = *p99 = *max = 0;
    if (!n)
        return;
    qsort(v, (size_t)n, sizeof(double), el_cmp);
    *p50 = v[n / 2];
    *p99 = v[n * 99 / 100];
    *max = v[n - 1];
}

struct el_tally {
    int rounds, observed, token_ok;
    double *all_obs, *per_round; /* samples, ms */
    int n_obs;
    char err[256];
};

/* One round: 0, or -1 with t->err. */
static int el_round(const struct el_ops *ops, void *ctx, int r, int nobs, struct el_tally *t)
{
    char err[256] = "";
    long long ltok = 0;
    void *rd = ops->round_new(ctx, r, nobs, &ltok, err, sizeof(err));
    if (!rd) {
        snprintf(t->err, sizeof(t->err), "round %d: %.200s", r, err);
        return -1;
    }
    struct el_obs o[EL_MAX_OBSERVERS];
    pthread_t ot[EL_MAX_OBSERVERS], ct;
    struct el_cand c = {.ops = ops, .round = rd, .rc = -1};
    int made = 0, cand = !pthread_create(&ct, NULL, el_cand_thread, &c);
    for (; cand && made < nobs; made++) {
        o[made] = (struct el_obs){.ops = ops, .round = rd, .idx = made};
        if (pthread_create(&ot[made], NULL, el_obs_thread, &o[made]))
            break;
    }
    el_sleep_ms(EL_SETTLE_MS); /* C queued, the observers parked */
    double t0 = el_now_ms();
    int killed = cand && made == nobs ? ops->kill_leader(rd, err, sizeof(err)) : -1;
    if (killed && !*err)
        snprintf(err, sizeof(err), "thread create failed");
    for (int i = 0; i < made; i++)
        pthread_join(ot[i], NULL);
    if (cand)
        pthread_join(ct, NULL);
    int all = !killed && made == nobs;
    double worst = 0;
    for (int i = 0; i < made; i++) {
        if (!o[i].seen_ms) {
            all = 0;
            if (!*err)
                snprintf(err, sizeof(err), "observer %d: %.200s", i, o[i].err);
            continue;
        }
        double d = o[i].seen_ms - t0;
        t->all_obs[t->n_obs++] = d;
        worst = d > worst ? d : worst;
    }
    if (cand && c.rc && !*err)
        snprintf(err, sizeof(err), "candidate: %.200s", c.err);
    t->rounds++;
    if (all)
        t->per_round[t->observed++] = worst;
    t->token_ok += cand && !c.rc && c.token > ltok;
    ops->round_free(rd);
    if (*err)
        snprintf(t->err, sizeof(t->err), "round %d: %.200s", r, err);
    return *err ? -1 : 0;
}

static void el_print(const char *driver, int nobs, struct el_tally *t, const char *err)
{
    double r50, r99, rmax, o50, o99, omax;
    el_pct(t->per_round, t->observed, &r50, &r99, &rmax);
    el_pct(t->all_obs, t->n_obs, &o50, &o99, &omax);
    printf("{\"driver\":\"%s\",\"workload\":\"W12\",\"observers\":%d,\"rounds\":%d,"
           "\"observed\":%d,\"token_newer\":%d,\"all_seen_p50_ms\":%.2f,\"all_seen_p99_ms\":%.2f,"
           "\"all_seen_max_ms\":%.2f,\"observer_p50_ms\":%.2f,\"observer_p99_ms\":%.2f,"
           "\"observer_max_ms\":%.2f,\"errors\":%d",
           driver, nobs, t->rounds, t->observed, t->token_ok, r50, r99, rmax, o50, o99, omax,
           *err ? 1 : 0);
    if (*err) {
        printf(",\"error\":\"");
        for (; *err; err++)
            putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
        putchar('"');
    }
    printf("}\n");
    fflush(stdout);
}

/* W12: prints one JSON line; 0, or 1 on an error. */
int bench_w12(const char *driver, const char *endpoints, int observers, int rounds, int seconds)
{
    const struct el_ops *ops = !strcmp(driver, "fencelock") ? &el_fencelock
                               : !strcmp(driver, "etcd")    ? &el_etcd
                                                            : NULL;
    if (!ops) {
        printf("{\"driver\":\"%s\",\"workload\":\"W12\",\"skipped\":\"fencelock and etcd "
               "only\"}\n",
               driver);
        return 0;
    }
    struct el_tally t = {.err = ""};
    char err[256] = "";
    if (observers < 1 || observers > EL_MAX_OBSERVERS || rounds < 1 || rounds > 1000) {
        printf("{\"driver\":\"%s\",\"workload\":\"W12\",\"errors\":1,\"error\":\"observers "
               "1..%d, rounds 1..1000\"}\n",
               driver, EL_MAX_OBSERVERS);
        return 1;
    }
    t.all_obs = calloc((size_t)observers * (size_t)rounds, sizeof(double));
    t.per_round = calloc((size_t)rounds, sizeof(double));
    void *ctx = t.all_obs && t.per_round ? ops->ctx_new(endpoints, err, sizeof(err)) : NULL;
    if (!ctx && !*err)
        snprintf(err, sizeof(err), "out of memory");
    double end = el_now_ms() + seconds * 1e3;
    for (int r = 0; ctx && r < rounds && el_now_ms() < end; r++)
        if (el_round(ops, ctx, r, observers, &t)) {
            snprintf(err, sizeof(err), "%s", t.err);
            break;
        }
    if (ctx)
        ops->ctx_free(ctx);
    el_print(driver, observers, &t, err);
    free(t.all_obs);
    free(t.per_round);
    return *err ? 1 : 0;
}
