/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Acquiring the lock for `fencelock lock` while staying responsive to signals.
 *
 * fl_session_open and fl_lock block (fl_lock for up to --wait, possibly for ever), and the
 * signals are blocked for the whole process so that the supervisor can read them from a
 * signalfd. So the blocking calls run on a worker thread and the main thread waits for either
 * the worker's "done" byte or a signal. On a terminating signal the main thread closes the
 * session by id: the servers drop its queued wait, which ends the worker's fl_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/run.h"

/* A wait longer than this is made of several LOCK ... WAIT requests (the servers cap WAIT at
   --max-wait, 24 h by default). Between two of them the session queues again at the tail. */
#define WAIT_SLICE_MS (3600 * 1000ull)

struct worker {
    pthread_mutex_t mu;
    fl_client *cl;
    const struct run_opts *o;
    int done_fd;       /* write end: one byte when the worker is finished */
    fl_session *s;     /* published under mu once opened */
    int cancelled;     /* set under mu by the main thread */
    struct acquired r; /* the worker's result, read after pthread_join */
    char trace[64];    /* the main thread's traceparent (--traceparent): the worker's LOCK's */
};

int run_is_terminating(int signo)
{
    return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT;
}

static int cancelled(struct worker *w)
{
    pthread_mutex_lock(&w->mu);
    int v = w->cancelled;
    pthread_mutex_unlock(&w->mu);
    return v;
}

const char *run_mode(const struct run_opts *o)
{
    if (o->kind == RUN_LATCH)
        return "latch";
    if (o->kind == RUN_BARRIER)
        return "barrier";
    if (o->kind == RUN_SEM)
        return "semaphore";
    if (o->kind == RUN_ELECT)
        return "leader";
    if (o->n_names > 1) /* each name's mode is in FENCELOCK_MODES */
        return "multi";
    return o->shared ? "shared" : "exclusive";
}

const char *run_noun(const struct run_opts *o)
{
    return o->kind == RUN_SEM       ? "semaphore"
           : o->kind == RUN_ELECT   ? "election"
           : o->kind == RUN_LATCH   ? "latch"
           : o->kind == RUN_BARRIER ? "barrier"
                                    : "lock";
}

const char *run_holding(const struct run_opts *o)
{
    return o->kind == RUN_SEM                               ? "the permit"
           : o->kind == RUN_ELECT                           ? "leadership"
           : o->kind == RUN_LATCH || o->kind == RUN_BARRIER ? "the session"
                                                            : "the lock";
}

/* One wait of at most slice ms for what o asks for (several names: all at once, LOCK.MULTI). */
static fl_err take(const struct run_opts *o, fl_session *s, uint64_t slice, uint64_t *token,
                   uint64_t *tokens, int64_t *maxhold_deadline)
{
    *maxhold_deadline = INT64_MAX;
    if (o->kind == RUN_LOCK && (o->lock_value || o->maxhold_ms)) { /* one exclusive lock */
        struct fl_lock_opts lo = {.size = sizeof lo,
                                  .value = o->lock_value,
                                  .value_len = o->lock_value ? strlen(o->lock_value) : 0,
                                  .maxhold_ms = o->maxhold_ms};
        return fl_lock_with(s, o->name, slice, &lo, token, maxhold_deadline);
    }
    if (o->kind == RUN_LOCK && o->n_names > 1) {
        fl_err e = fl_lock_multi(s, o->n_names, o->names, o->shared_of, slice, tokens);
        *token = tokens[0];
        return e;
    }
    if (o->kind == RUN_SEM)
        return fl_sem_acquire_n(s, o->name, o->limit, o->permits ? o->permits : 1, slice, token);
    if (o->kind == RUN_LATCH) { /* a promise, at once: there is nothing to wait for */
        *token = 0;
        return fl_latch_join(s, o->name);
    }
    if (o->kind == RUN_BARRIER) { /* entering again is no change: the slices wait on */
        *token = 0;
        return fl_barrier_enter(s, o->name, o->limit, slice);
    }
    if (o->kind == RUN_ELECT)
        return fl_campaign(s, o->name, o->value, slice, token);
    return o->shared ? fl_lock_shared(s, o->name, slice, token) : fl_lock(s, o->name, slice, token);
}

/* fl_lock (fl_lock_shared, fl_sem_acquire, fl_campaign) in slices of at most WAIT_SLICE_MS until
   granted, refused, out of time or cancelled. */
static fl_err lock_wait(struct worker *w, fl_session *s, uint64_t *token, uint64_t *tokens)
{
    const struct run_opts *o = w->o;
    uint64_t left = o->wait_ms;
    for (;;) {
        uint64_t slice = o->wait_forever || left > WAIT_SLICE_MS ? WAIT_SLICE_MS : left;
        fl_err err = take(o, s, slice, token, tokens, &w->r.maxhold_deadline);
        if (err != FL_ETIMEOUT || cancelled(w))
            return err;
        if (!o->wait_forever) {
            left -= slice;
            if (left == 0)
                return FL_ETIMEOUT;
        }
    }
}

/* The grant's signature for FENCELOCK_TOKEN_SIG. Servers without --token-key answer an error
   that names the flag: then there is nothing to export, silently. Any other failure leaves
   the variable unset too, with a warning (the command still runs: the lock is held). */
static void sign_grant(struct worker *w)
{
    fl_err e = fl_sign(w->cl, w->o->name, w->r.token, w->r.sig);
    const char *msg = fl_client_errmsg(w->cl);
    if (e != FL_OK && !(e == FL_ESERVER && strstr(msg, "--token-key")))
        fprintf(stderr, "fencelock: FENCELOCK_TOKEN_SIG not set: %s: %s\n", fl_strerror(e), msg);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct run_opts *o = w->o;
    fl_session *s = NULL;
    fl_trace_set(w->trace); /* validated by the main thread: per-thread in the library */
    fl_err err = fl_session_open(w->cl, o->ttl_ms, o->lockdelay_ms, o->label, &s);
    w->r.what = "open session";
    pthread_mutex_lock(&w->mu);
    w->s = s;
    int stop = w->cancelled;
    pthread_mutex_unlock(&w->mu);
    if (err == FL_OK && !stop) {
        w->r.what = "lock";
        err = lock_wait(w, s, &w->r.token, w->r.tokens);
        if (err == FL_OK && o->kind != RUN_LATCH && o->kind != RUN_BARRIER) /* no token */
            sign_grant(w);
    }
    w->r.s = s;
    w->r.err = err;
    if (err != FL_OK)
        snprintf(w->r.msg, sizeof w->r.msg, "%s", fl_client_errmsg(w->cl));
    char b = 1;
    while (write(w->done_fd, &b, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/* A signal arrived while waiting: cancel if it is one that ends us. Returns the signal if it
   did, else 0. */
static int on_signal(struct worker *w, int sigfd)
{
    struct signalfd_siginfo si;
    int got = 0;
    while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (!run_is_terminating((int)si.ssi_signo) || got)
            continue; /* SIGCHLD, SIGUSR1/2: nothing runs yet to forward them to */
        got = (int)si.ssi_signo;
        pthread_mutex_lock(&w->mu);
        w->cancelled = 1;
        fl_session *s = w->s;
        pthread_mutex_unlock(&w->mu);
        /* Ends the session on the servers: its queued wait goes, and the worker's fl_lock
           returns. The worker is still inside fl_session_open if s is NULL; it then sees
           `cancelled` and does not lock. */
        if (s)
            fl_session_close_id(w->cl, fl_session_id(s));
    }
    return got;
}

int acquire(fl_client *cl, const struct run_opts *o, int sigfd, struct acquired *out)
{
    int done[2];
    if (pipe2(done, O_CLOEXEC) < 0)
        return -1;
    struct worker w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    w.cl = cl;
    w.o = o;
    w.done_fd = done[1];
    snprintf(w.trace, sizeof w.trace, "%s", fl_trace_get());
    pthread_t t;
    int e = pthread_create(&t, NULL, worker_main, &w);
    if (e != 0) {
        close(done[0]);
        close(done[1]);
        pthread_mutex_destroy(&w.mu);
        errno = e;
        return -1;
    }
    int signo = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = done[0], .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break; /* cannot happen with valid fds; the join below still waits for the worker */
        if (p[0].revents)
            break;
        if (p[1].revents) {
            int got = on_signal(&w, sigfd);
            if (got && !signo)
                signo = got;
        }
    }
    pthread_join(t, NULL);
    close(done[0]);
    close(done[1]);
    pthread_mutex_destroy(&w.mu);
    *out = w.r;
    out->signo = signo;
    return 0;
}
