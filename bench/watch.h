/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.h — lockbench's W10 (watch: event latency and fan-out): the table one system
 * implements (bench/watch_fl.c: fencelock XREAD; bench/watch_etcd.c: etcd's v3 watch over its
 * JSON gateway) and the harness in bench/watchbench.c drives.
 *
 * A backend has a writer (PUTs, each answering the revision it made) and a set of watchers of
 * one key prefix, all driven by one thread (the harness's poller) so that receipt times are
 * taken as the bytes arrive. Revisions are the join key: a PUT's revision is the revision its
 * event carries (fencelock: the id's <rev>; etcd: kv.mod_revision).
 *
 * Ownership: writer_new / watchers_new return objects the caller frees with writer_free /
 * watchers_free, which close every connection they opened. A writer is used by one thread, the
 * watchers by one (other) thread. Errors: -1 with a message in err; never abort().
 */
#ifndef BENCH_WATCH_H
#define BENCH_WATCH_H

#include <stddef.h>

/* Called by watchers_poll for each event received: which watcher, the event's revision, and
   when it arrived (CLOCK_MONOTONIC ms). */
typedef void (*wb_sink)(void *ctx, int watcher, long long rev, double t_ms);

struct watch_backend {
    const char *name; /* the lockbench driver name: "fencelock", "etcd" */
    void *(*writer_new)(const char *endpoints, char *err, size_t errlen);
    /* One PUT, waiting for its answer: *rev is the revision it made. */
    int (*put)(void *w, const char *key, long long *rev, char *err, size_t errlen);
    /* n PUTs of keys[i], up to `window` unanswered; revs[i] and ack_ms[i] when each answered. */
    int (*put_many)(void *w, char *const *keys, long n, int window, long long *revs, double *ack_ms,
                    char *err, size_t errlen);
    void (*writer_free)(void *w);
    /* n watchers of the keys under `prefix`, each from the first revision after after_rev, on
       the same member as the writer (the leader). */
    void *(*watchers_new)(const char *endpoints, const char *prefix, int n, long long after_rev,
                          char *err, size_t errlen);
    /* Waits up to timeout_ms for data on any watcher; calls sink for each event received. */
    int (*watchers_poll)(void *ws, int timeout_ms, wb_sink sink, void *ctx, char *err,
                         size_t errlen);
    void (*watchers_free)(void *ws);
    /* NULL, or what kind watcher i is ("xread", "sse"): the latency phase is then also
       reported per kind (fencelock-sse: the HTTP API's stream beside XREAD on the same PUTs). */
    const char *(*kind_of)(int watcher);
};

extern const struct watch_backend watch_fencelock, watch_fencelock_sse, watch_etcd;

double wb_now_ms(void);                        /* CLOCK_MONOTONIC in ms (watchbench.c) */
void bench_etcd_b64(const char *s, char *out); /* base64 of a C string (drv_etcd.c) */

#endif
