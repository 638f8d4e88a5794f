/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker.h: what the torture worker's files share (worker.c: main, history lines, sessions,
 * the register/mutex/counter workloads; worker_rw.c: read-write locks; worker_watch.c: event
 * stream watchers; worker_prims.c: semaphores and elections; worker_deadlock.c: waits that
 * close cycles; worker_multi.c: multi-locks; worker_latch.c: latches and barriers).
 *
 * Owns nothing global: one struct worker per process, passed everywhere. A struct ev is one
 * history line being built on the stack; ev_emit writes it with a single write() (O_APPEND),
 * so lines of several workers sharing a file never interleave.
 */
#ifndef TORTURE_WORKER_H
#define TORTURE_WORKER_H

#include <stdatomic.h>
#include <stdint.h>

#include "fencelock.h"

enum workload {
    WL_REGISTER,
    WL_MUTEX,
    WL_FENCED,
    WL_CONTROL,
    WL_RW,
    WL_WATCH,
    WL_SEM,
    WL_ELECT,
    WL_DEADLOCK,
    WL_MULTI,
    WL_LATCH
};

struct worker {
    /* configuration */
    const char *endpoints, *wl_name;
    int observe;        /* elect: run the observer instead of a candidate */
    const char *prefix; /* watch: read fencelock:events:<prefix> (NULL: every event) */
    /* torture --secure: ACL user and its password, TLS files (NULL: not used) */
    const char *user, *tls_ca, *tls_cert, *tls_key;
    char password[128];
    enum workload wl;
    int proc_base;
    long max_ops;
    int64_t end_ns;
    uint64_t ttl_ms;
    int pause_ms;
    int revoke_pct; /* fenced-counter: % of ops that first revoke the lock (short deadline) */
    int group;      /* latch: how many workers run the workload (they meet by the clock) */
    int fd;
    /* state */
    uint64_t rng;
    int gen;  /* proc = proc_base + gen * 1000 */
    long ops; /* invokes so far */
    long n_ok, n_fail, n_info, n_lost;
    long uniq; /* counter for unique written values */
    fl_client *c;
    fl_session *s;
    int64_t safe_seen;       /* the largest fl_session_safe_until() seen for s (ms) */
    atomic_llong lost_at_ms; /* set by the on_lost callback of s */
    int64_t latch_epoch;     /* latch: the last epoch taken part in */
};

struct ev {
    char buf[32768]; /* a watcher line holds a whole XREAD reply (COUNT <= 16) */
    size_t n;
};

int64_t now_ns(void);
/* A client on w->endpoints with the worker's timeouts; NULL on failure. */
fl_client *new_client(const struct worker *w);
uint64_t rnd(struct worker *w, uint64_t n);
int proc_of(const struct worker *w);
void ev_add(struct ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ,"key":"value" with JSON escapes, or null when s is NULL. */
void ev_str(struct ev *e, const char *key, const char *s);
void ev_begin(struct ev *e, const struct worker *w, int proc, const char *type, const char *f,
              int64_t t);
void ev_emit(struct worker *w, struct ev *e);
/* The completion of the current proc's op: counts it; an info moves on to a new proc. */
void ev_complete(struct worker *w, struct ev *e, const char *type);
void after_info(struct worker *w, const char *type);
/* How a mutating call ended: a definite refusal is "fail", anything unsure "info". */
const char *write_outcome(fl_err e, fl_err refused);
void ev_error(struct ev *e, struct worker *w, fl_err err);
/* JSON-escaped bytes of s (no quotes) appended to e. */
void ev_esc(struct ev *e, const char *s, size_t n);
int time_left(const struct worker *w);
void sleep_ms(int64_t ms);
/* A stop-the-world pause of the whole process (keepalive thread included). */
void gc_pause(int64_t ms);
void note_safe(struct worker *w);
/* A live session in w->s, opened (after dropping a lost one) if needed; 0 if none by the end. */
int ensure_session(struct worker *w);
/* A pause while holding a lock: mostly short, sometimes up to pause_ms (past the TTL). */
void hold_pause(struct worker *w);
const char *release(struct worker *w, const char *lock);
void end_lock_session(struct worker *w, const char *lock,
                      int (*gone)(struct worker *w, const char *name, uint64_t sid));

/* worker_rw.c and worker_watch.c */
void op_rw(struct worker *w);
/* Runs the watcher until the end of the run (it owns its own clients). */
void run_watch(struct worker *w);

/* worker_prims.c: semaphore permits, election candidates and the election observer */
void op_sem(struct worker *w);
void op_elect(struct worker *w);
void run_observe(struct worker *w);

/* worker_deadlock.c: two of three locks in random order (waits that close cycles) */
void op_deadlock(struct worker *w);
/* worker_multi.c: LOCK.MULTI over overlapping sets of four names */
void op_multi(struct worker *w);
/* worker_latch.c: latches and double barriers met by the clock (one round per epoch) */
void op_latch(struct worker *w);

#endif
