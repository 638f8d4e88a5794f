/* SPDX-License-Identifier: Apache-2.0 */
/*
 * drv_fencelock — the fencelock driver of lockbench (bench/driver.h), through libfencelock.
 * Owns, per bench client, one fl_client and one fl_session; client_free closes the session
 * (releasing anything it still holds) and frees the client.
 *
 * Careful-user recipe (docs/client.md): open a session with the lease TTL (cfg->ttl_ms, no
 * lock-delay), whose own thread keeps it alive; acquire = fl_lock(session, name, wait) — the
 * server queues the waiter (FIFO) and grants it with a fencing token (the log revision of the
 * grant), which is returned; release = fl_unlock. Every call carries REQ sid seq, so retries
 * across a fail-over apply once. Nothing is tuned for the benchmark (default timeouts).
 *
 * Also owns the W4 loader (bench_fencelock_load): many sessions holding many locks, which the
 * library's one-keepalive-thread-per-session model is not made for, so it speaks RESP to the
 * leader directly (SESSION.OPEN, then LOCK name sid), pipelined on a few connections, with a
 * session TTL long enough that no keepalive is needed while the footprint is measured.
 */
#include "driver.h"

#include <fencelock.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fl_bench_client {
    fl_client *c;
    fl_session *s;
};

static void fill_err(fl_client *c, const char *what, fl_err e, char *err, size_t errlen)
{
    const char *msg = c ? fl_client_errmsg(c) : "";
    snprintf(err, errlen, "%s: %s%s%s", what, fl_strerror(e), *msg ? ": " : "", msg);
}

/* Default options, plus TLS from FENCELOCK_TLS_CA/CERT/KEY as the CLI reads them (the cost of
 * client TLS on W1: docs/security.md). */
static const struct fl_options *flb_options(struct fl_options *o)
{
    fl_options_init(o);
    o->tls_ca = getenv("FENCELOCK_TLS_CA");
    o->tls_cert = getenv("FENCELOCK_TLS_CERT");
    o->tls_key = getenv("FENCELOCK_TLS_KEY");
    return o;
}

static void *flb_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    struct fl_bench_client *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    fl_err e;
    struct fl_options o;
    b->c = fl_client_new(cfg->endpoints, flb_options(&o), &e);
    if (!b->c) {
        fill_err(NULL, "fl_client_new", e, err, errlen);
        free(b);
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof(name), "lockbench-%d", client_id);
    e = fl_session_open(b->c, (uint64_t)cfg->ttl_ms, 0, name, &b->s);
    if (e) {
        fill_err(b->c, "fl_session_open", e, err, errlen);
        fl_client_free(b->c);
        free(b);
        return NULL;
    }
    return b;
}

static void flb_free(void *cl)
{
    struct fl_bench_client *b = cl;
    if (!b)
        return;
    fl_session_close(b->s);
    fl_client_free(b->c);
    free(b);
}

static int flb_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                       size_t errlen)
{
    struct fl_bench_client *b = cl;
    fl_err e = fl_lock(b->s, name, wait_ms > 0 ? (uint64_t)wait_ms : 0, token);
    if (e == FL_OK)
        return 0;
    if (e == FL_ETIMEOUT || e == FL_EBUSY)
        return BENCH_TIMEOUT;
    fill_err(b->c, "fl_lock", e, err, errlen);
    return -1;
}

static int flb_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct fl_bench_client *b = cl;
    fl_err e = fl_unlock(b->s, name);
    if (e == FL_OK)
        return 0;
    fill_err(b->c, "fl_unlock", e, err, errlen);
    return -1;
}

const struct bench_driver bench_fencelock = {
    .name = "fencelock",
    .client_new = flb_new,
    .client_free = flb_free,
    .acquire = flb_acquire,
    .release = flb_release,
};

/* ---- W4 loader ---- */

#define LOAD_THREADS 4
#define LOAD_WINDOW 256 /* commands in flight per connection (the server's cap is 1024) */
#define LOAD_ROUNDS 10  /* passes over what failed (a leader change mid-load), 1 s apart */

struct load_part {
    const char *endpoints;
    long count; /* sessions of this part */
    int per, ttl_ms;
    long long *sids; /* count; 0 = not open yet */
    long *todo;      /* indices still to do (sessions, then locks) */
    long ntodo, nfail, locks;
    char err[256];
};

/* The leader's client address "host:port" into out, from the library's view of the cluster. */
static int find_leader(const char *endpoints, char *host, size_t hostlen, int *port, char *err,
                       size_t errlen)
{
    fl_err e;
    fl_client *c = fl_client_new(endpoints, NULL, &e);
    if (!c) {
        fill_err(NULL, "fl_client_new", e, err, errlen);
        return -1;
    }
    struct fl_status st;
    char leader[128] = "";
    if ((e = fl_status(c, &st))) {
        fill_err(c, "fl_status", e, err, errlen);
        fl_client_free(c);
        return -1;
    }
    for (size_t i = 0; i < st.n_members; i++)
        if (st.members[i].leader && st.members[i].client_address)
            snprintf(leader, sizeof(leader), "%s", st.members[i].client_address);
    fl_status_free(&st);
    fl_client_free(c);
    const char *colon = strrchr(leader, ':');
    if (!colon || (size_t)(colon - leader) >= hostlen) {
        snprintf(err, errlen, "no leader in CLUSTER.MEMBERS ('%s')", leader);
        return -1;
    }
    memcpy(host, leader, (size_t)(colon - leader));
    host[colon - leader] = 0;
    *port = atoi(colon + 1);
    return 0;
}

static int append_cmd(redisContext *c, struct load_part *p, int locks, long i)
{
    if (!locks)
        return redisAppendCommand(c, "SESSION.OPEN %d", p->ttl_ms);
    long long sid = p->sids[i / p->per];
    return redisAppendCommand(c, "LOCK w4-%lld-%ld %lld", sid, i % p->per, sid);
}

/* One pipelined pass over p->todo (at most LOAD_WINDOW unanswered); what fails stays in todo
   for the next pass. LOCK is idempotent per session (a holder gets its token again), so
   resending one whose answer was lost is safe; a lost SESSION.OPEN only leaves an extra
   session that expires. Returns -1 on a connection error. */
static int load_pass(redisContext *c, struct load_part *p, int locks)
{
    long sent = 0, got = 0, kept = 0, n = p->ntodo;
    while (got < n) {
        while (sent < n && sent - got < LOAD_WINDOW)
            if (append_cmd(c, p, locks, p->todo[sent++]) != REDIS_OK)
                goto broken;
        void *v;
        if (redisGetReply(c, &v) != REDIS_OK || !v)
            goto broken;
        redisReply *r = v;
        long i = p->todo[got++];
        if (r->type == REDIS_REPLY_INTEGER) {
            if (locks)
                p->locks++;
            else
                p->sids[i] = r->integer;
        } else {
            p->todo[kept++] = i;
            p->nfail++;
            snprintf(p->err, sizeof(p->err), "%s: %s", locks ? "LOCK" : "SESSION.OPEN",
                     r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        }
        freeReplyObject(r);
    }
    p->ntodo = kept;
    return 0;
broken: /* everything not answered is still to do */
    snprintf(p->err, sizeof(p->err), "connection: %s", c->errstr);
    memmove(p->todo + kept, p->todo + got, (size_t)(n - got) * sizeof(long));
    p->ntodo = kept + n - got;
    return -1;
}

static void *load_run(void *arg)
{
    struct load_part *p = arg;
    for (int locks = 0; locks <= 1; locks++) {
        long n = locks ? p->count * p->per : p->count;
        p->todo = malloc((size_t)(n ? n : 1) * sizeof(long));
        if (!p->todo) {
            snprintf(p->err, sizeof(p->err), "out of memory");
            p->ntodo = n;
            return NULL;
        }
        p->ntodo = 0;
        for (long i = 0; i < n; i++)
            if (!locks || p->sids[i / p->per])
                p->todo[p->ntodo++] = i;
        for (int round = 0; round < LOAD_ROUNDS && p->ntodo; round++) {
            if (round)
                sleep(1);
            char host[64];
            int port;
            if (find_leader(p->endpoints, host, sizeof(host), &port, p->err, sizeof(p->err)))
                continue;
            struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
            redisContext *c = redisConnectWithTimeout(host, port, tv);
            if (c && !c->err) {
                redisSetTimeout(c, tv);
                load_pass(c, p, locks);
            } else {
                snprintf(p->err, sizeof(p->err), "connect %s:%d: %s", host, port,
                         c ? c->errstr : "out of memory");
            }
            if (c)
                redisFree(c);
        }
        if (p->ntodo)
            return NULL; /* sessions that could not be opened have no locks */
        free(p->todo);
        p->todo = NULL;
    }
    return NULL;
}

/* W4: opens `sessions` sessions (TTL ttl_ms) holding `per` locks each. *locks: locks held at
   the end; *retried: commands that failed once and were sent again (a leader change). */
int bench_fencelock_load(const char *endpoints, long sessions, int per, int ttl_ms, long *locks,
                         long *retried, char *err, size_t errlen)
{
    struct load_part parts[LOAD_THREADS];
    pthread_t t[LOAD_THREADS];
    int started = 0, failed = 0;
    for (int i = 0; i < LOAD_THREADS; i++) {
        struct load_part *p = &parts[i];
        memset(p, 0, sizeof(*p));
        p->endpoints = endpoints;
        p->count = sessions * (i + 1) / LOAD_THREADS - sessions * i / LOAD_THREADS;
        p->per = per;
        p->ttl_ms = ttl_ms;
        p->sids = calloc((size_t)p->count + 1, sizeof(long long));
        if (!p->sids)
            break;
        if (pthread_create(&t[i], NULL, load_run, p)) {
            free(p->sids);
            break;
        }
        started++;
    }
    snprintf(err, errlen, "%s", started < LOAD_THREADS ? "out of memory or threads" : "");
    failed = started < LOAD_THREADS;
    *locks = *retried = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        *locks += parts[i].locks;
        *retried += parts[i].nfail;
        if (parts[i].ntodo) {
            if (!failed)
                snprintf(err, errlen, "%ld commands not done: %s", parts[i].ntodo, parts[i].err);
            failed = 1;
        } else if (parts[i].nfail && !*err) {
            snprintf(err, errlen, "retried after: %s", parts[i].err);
        }
        free(parts[i].sids);
        free(parts[i].todo);
    }
    return failed ? -1 : 0;
}
