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

struct fl_bench_client {
    fl_client *c;
    fl_session *s;
};

static void fill_err(fl_client *c, const char *what, fl_err e, char *err, size_t errlen)
{
    const char *msg = c ? fl_client_errmsg(c) : "";
    snprintf(err, errlen, "%s: %s%s%s", what, fl_strerror(e), *msg ? ": " : "", msg);
}

static void *flb_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    struct fl_bench_client *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    fl_err e;
    b->c = fl_client_new(cfg->endpoints, NULL, &e);
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

struct load_part {
    char host[64];
    int port;
    long first, count; /* sessions [first, first + count) */
    int per, ttl_ms;
    long locks, errors;
    char err[256];
};

/* Sends n commands built by fmt_cmd(i) on c, at most LOAD_WINDOW unanswered, and hands each
   reply to on_reply(i, reply). Returns -1 on a connection error. */
static int pipeline(redisContext *c, long n, void *ctx,
                    int (*append)(redisContext *c, void *ctx, long i),
                    void (*on_reply)(void *ctx, long i, redisReply *r))
{
    long sent = 0, got = 0;
    while (got < n) {
        while (sent < n && sent - got < LOAD_WINDOW)
            if (append(c, ctx, sent++) != REDIS_OK)
                return -1;
        void *v;
        if (redisGetReply(c, &v) != REDIS_OK || !v)
            return -1;
        on_reply(ctx, got++, v);
        freeReplyObject(v);
    }
    return 0;
}

struct load_ctx {
    struct load_part *p;
    long long *sids;
};

static int append_open(redisContext *c, void *ctx, long i)
{
    struct load_ctx *l = ctx;
    (void)i;
    return redisAppendCommand(c, "SESSION.OPEN %d", l->p->ttl_ms);
}

static void reply_open(void *ctx, long i, redisReply *r)
{
    struct load_ctx *l = ctx;
    if (r->type == REDIS_REPLY_INTEGER) {
        l->sids[i] = r->integer;
    } else {
        l->sids[i] = 0;
        if (!l->p->errors++)
            snprintf(l->p->err, sizeof(l->p->err), "SESSION.OPEN: %s",
                     r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
}

static int append_lock(redisContext *c, void *ctx, long i)
{
    struct load_ctx *l = ctx;
    long long sid = l->sids[i / l->p->per];
    return redisAppendCommand(c, "LOCK w4-%lld-%ld %lld", sid, i % l->p->per, sid);
}

static void reply_lock(void *ctx, long i, redisReply *r)
{
    struct load_ctx *l = ctx;
    (void)i;
    if (r->type == REDIS_REPLY_INTEGER) {
        l->p->locks++;
    } else if (!l->p->errors++) {
        snprintf(l->p->err, sizeof(l->p->err), "LOCK: %s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
}

static void *load_run(void *arg)
{
    struct load_part *p = arg;
    struct timeval tv = {.tv_sec = 30, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout(p->host, p->port, tv);
    struct load_ctx l = {.p = p, .sids = calloc((size_t)p->count + 1, sizeof(long long))};
    if (!c || c->err || !l.sids) {
        snprintf(p->err, sizeof(p->err), "connect %s:%d: %s", p->host, p->port,
                 c ? c->errstr : "out of memory");
        p->errors++;
    } else {
        redisSetTimeout(c, tv);
        if (pipeline(c, p->count, &l, append_open, reply_open) ||
            pipeline(c, p->count * p->per, &l, append_lock, reply_lock)) {
            snprintf(p->err, sizeof(p->err), "%s:%d: %s", p->host, p->port, c->errstr);
            p->errors++;
        }
    }
    if (c)
        redisFree(c);
    free(l.sids);
    return NULL;
}

int bench_fencelock_load(const char *endpoints, long sessions, int per, int ttl_ms, long *locks,
                         char *err, size_t errlen)
{
    /* The leader's client address, from the library's view of the cluster. */
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
    if (!colon || colon - leader >= 64) {
        snprintf(err, errlen, "no leader address in CLUSTER.MEMBERS ('%s')", leader);
        return -1;
    }
    struct load_part parts[LOAD_THREADS];
    pthread_t t[LOAD_THREADS];
    int started = 0;
    for (int i = 0; i < LOAD_THREADS; i++) {
        struct load_part *p = &parts[i];
        memset(p, 0, sizeof(*p));
        memcpy(p->host, leader, (size_t)(colon - leader));
        p->port = atoi(colon + 1);
        p->first = sessions * i / LOAD_THREADS;
        p->count = sessions * (i + 1) / LOAD_THREADS - p->first;
        p->per = per;
        p->ttl_ms = ttl_ms;
    }
    for (; started < LOAD_THREADS; started++)
        if (pthread_create(&t[started], NULL, load_run, &parts[started]))
            break;
    long errors = started < LOAD_THREADS;
    *locks = 0;
    snprintf(err, errlen, "%s", errors ? "pthread_create failed" : "");
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        *locks += parts[i].locks;
        if (parts[i].errors && !errors)
            snprintf(err, errlen, "%s", parts[i].err);
        errors += parts[i].errors;
    }
    return errors ? -1 : 0;
}
