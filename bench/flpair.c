/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flpair — fl_lock + fl_unlock round trips through libfencelock, for quick latency figures of
 * the client as applications use it (REQ seq on every call, leader following, pooled
 * connections).
 *
 * usage: flpair ENDPOINTS [-n pairs per client] [-c clients] [-t max seconds] [-s shared]
 * Each client thread opens its own session; without -s each takes/releases its own lock
 * (-c 1: uncontended latency), with -s all contend for one lock (fl_lock waits).
 * Prints p50/p99/max of one pair and pairs/s over all clients. Bounded by count and time.
 */
#include <fencelock.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct worker {
    fl_client *c;
    int id, n, shared;
    int64_t end_ms;
    double *lat; /* ms per pair */
    int done;
    fl_err err;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    fl_session *s;
    char name[32];
    snprintf(name, sizeof(name), w->shared ? "shared" : "pair-%d", w->id);
    if ((w->err = fl_session_open(w->c, 10000, 0, NULL, &s)))
        return NULL;
    for (int i = 0; i < w->n && fl_now_ms() < w->end_ms; i++) {
        uint64_t token;
        double t0 = now_ms();
        if ((w->err = fl_lock(s, name, w->shared ? 10000 : 0, &token)) ||
            (w->err = fl_unlock(s, name)))
            break;
        w->lat[w->done++] = now_ms() - t0;
    }
    fl_session_close(s);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = 2000, nc = 1, secs = 20, shared = 0, opt;
    while ((opt = getopt(argc, argv, "n:c:t:s")) != -1) {
        if (opt == 'n')
            n = atoi(optarg);
        else if (opt == 'c')
            nc = atoi(optarg);
        else if (opt == 't')
            secs = atoi(optarg);
        else if (opt == 's')
            shared = 1;
        else
            return 2;
    }
    if (optind >= argc || n < 1 || nc < 1 || nc > 256) {
        fprintf(stderr, "usage: flpair ENDPOINTS [-n pairs] [-c clients] [-t secs] [-s]\n");
        return 2;
    }
    fl_client *c = fl_client_new(argv[optind], NULL, NULL);
    if (!c)
        return 2;
    struct worker *w = calloc((size_t)nc, sizeof(*w));
    pthread_t *t = calloc((size_t)nc, sizeof(*t));
    double t0 = now_ms();
    for (int i = 0; i < nc; i++) {
        w[i] = (struct worker){.c = c,
                               .id = i,
                               .n = n,
                               .shared = shared,
                               .end_ms = fl_now_ms() + secs * 1000,
                               .lat = calloc(n, 8)};
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    size_t total = 0;
    for (int i = 0; i < nc; i++) {
        pthread_join(t[i], NULL);
        total += (size_t)w[i].done;
        if (w[i].err)
            fprintf(stderr, "client %d: %s: %s\n", i, fl_strerror(w[i].err), fl_client_errmsg(c));
    }
    double el = (now_ms() - t0) / 1e3;
    double *all = calloc(total ? total : 1, sizeof(double));
    size_t k = 0;
    for (int i = 0; i < nc; i++) {
        memcpy(all + k, w[i].lat, (size_t)w[i].done * sizeof(double));
        k += (size_t)w[i].done;
        free(w[i].lat);
    }
    qsort(all, total, sizeof(double), cmp);
    if (total)
        printf("pairs %zu clients %d%s: p50 %.3f ms p99 %.3f ms max %.3f ms, %.0f pairs/s\n", total,
               nc, shared ? " (one lock)" : "", all[total / 2], all[total * 99 / 100],
               all[total - 1], total / el);
    free(all);
    free(w);
    free(t);
    fl_client_free(c);
    return total ? 0 : 1;
}
