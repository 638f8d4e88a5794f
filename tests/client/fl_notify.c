/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_notify: LOCK ... NOTIFY through libfencelock, driven by tests/integration/test_notify.py.
 * Each mode prints one line per step, flushed at once, so the test can follow it.
 *
 * fl_notify hold EP NAME
 *     open a session, fl_lock NAME, fl_waiter_watch it: "held SID TOKEN", then for each waiter
 *     "waiter SID WAIT_MS TOKEN"; after the first, unlock ("unlocked ERR") and close
 * fl_notify wait EP NAME WAIT_MS
 *     open a session, fl_lock_notify NAME: "session SID", then "granted TOKEN" or "error ..."
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fencelock.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int heard;

static fl_client *client(const char *endpoints)
{
    struct fl_options o;
    fl_options_init(&o);
    o.timeout_ms = 10000;
    fl_err e;
    fl_client *c = fl_client_new(endpoints, &o, &e);
    if (!c) {
        printf("error fl_client_new %s\n", fl_strerror(e));
        exit(2);
    }
    return c;
}

static void on_waiter(const struct fl_waiter *w, void *ctx)
{
    (void)ctx;
    printf("waiter %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", w->sid, w->wait_ms, w->token);
    fflush(stdout);
    pthread_mutex_lock(&mu);
    heard++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

static int hold(const char *ep, const char *name)
{
    fl_client *c = client(ep);
    fl_session *s;
    uint64_t token = 0;
    fl_watcher *w;
    fl_err e = fl_session_open(c, 60000, 0, NULL, &s);
    if (!e)
        e = fl_lock(s, name, 0, &token);
    if (!e)
        e = fl_waiter_watch(s, name, token, on_waiter, NULL, &w);
    if (e) {
        printf("error %s %s\n", fl_strerror(e), fl_client_errmsg(c));
        return 1;
    }
    printf("held %" PRIu64 " %" PRIu64 "\n", fl_session_id(s), token);
    fflush(stdout);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 120; /* a generous bound: the test fails on its own timeout first */
    pthread_mutex_lock(&mu);
    while (!heard && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    pthread_mutex_unlock(&mu);
    fl_watch_stop(w);
    fl_watch_join(w, NULL, NULL, 0);
    e = fl_unlock(s, name);
    printf("unlocked %s\n", fl_strerror(e));
    fflush(stdout);
    fl_session_close(s);
    fl_client_free(c);
    return 0;
}

static int wait_notify(const char *ep, const char *name, uint64_t wait_ms)
{
    fl_client *c = client(ep);
    fl_session *s;
    uint64_t token = 0;
    fl_err e = fl_session_open(c, 60000, 0, NULL, &s);
    if (e) {
        printf("error %s %s\n", fl_strerror(e), fl_client_errmsg(c));
        return 1;
    }
    printf("session %" PRIu64 "\n", fl_session_id(s));
    fflush(stdout);
    e = fl_lock_notify(s, name, wait_ms, &token);
    if (e)
        printf("error %s %s\n", fl_strerror(e), fl_client_errmsg(c));
    else
        printf("granted %" PRIu64 "\n", token);
    fflush(stdout);
    fl_session_close(s);
    fl_client_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "wait") == 0)
        return wait_notify(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    fprintf(stderr, "usage: fl_notify hold EP NAME | fl_notify wait EP NAME WAIT_MS\n");
    return 2;
}
