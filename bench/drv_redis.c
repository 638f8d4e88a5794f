/* SPDX-License-Identifier: Apache-2.0 */
/*
 * drv_redis — the plain-Redis and Redlock drivers of lockbench (bench/driver.h), on hiredis.
 * Owns, per bench client, its hiredis connections (1 for redis, 5 for redlock), a small PRNG
 * for lock values and retry jitter, and the list of locks it holds with their values.
 *
 * Careful-user recipe, plain Redis (one server, as the "SET NX PX" locks of most libraries):
 *   acquire: SET name <random unique value> NX PX ttl. If it is taken, sleep 1-5 ms (random
 *            jitter, as redis lock libraries poll) and try again until the wait runs out.
 *   release: compare-and-delete, so a client never deletes a lock that expired and went to
 *            someone else: EVALSHA of
 *              if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1])
 *              else return 0 end
 *            (SCRIPT LOAD once per connection; EVAL again on NOSCRIPT).
 *   No fencing token: Redis has no ordered log to derive one from (token 0).
 *
 * Careful-user recipe, Redlock (antirez's algorithm, N = 5 independent servers):
 *   acquire: take t0; send SET name value NX PX ttl to all 5 (pipelined: written to every
 *            connection before the first reply is read, as the async Redlock clients do);
 *            the lock is ours if a majority (3) said OK and the validity
 *            ttl - elapsed - drift (drift = 1 % of ttl + 2 ms) is still positive. Otherwise
 *            compare-and-delete on all 5 (also those that did not answer OK) and retry after a
 *            random delay of 1-5 ms until the wait runs out. (redsync's default delay is
 *            50-250 ms; the short one here only favours Redlock.)
 *   release: the compare-and-delete script on all 5. Token 0.
 *   A server that does not answer within 1 s counts as "not acquired"; its connection is
 *   re-made on the next attempt.
 */
#include "driver.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>

#define MAX_SERVERS 5
#define VALUE_LEN 32 /* 128 random bits in hex */

static const char unlock_lua[] = "if redis.call('get',KEYS[1]) == ARGV[1] then return "
                                 "redis.call('del',KEYS[1]) else return 0 end";

struct held {
    struct held *next;
    char value[VALUE_LEN + 1];
    char name[];
};

struct rconn {
    char host[64];
    int port;
    redisContext *ctx;
    char sha[41]; /* the unlock script's SHA1 on this server, "" until loaded */
};

struct redis_client {
    int n; /* servers: 1 (redis) or 5 (redlock) */
    int ttl_ms;
    struct rconn srv[MAX_SERVERS];
    uint64_t rng;
    struct held *held;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* xorshift64*: per-client, seeded from getrandom(). */
static uint64_t rnd(struct redis_client *r)
{
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * 2685821657736338717ull;
}

static void sleep_jitter(struct redis_client *r, double remaining_ms)
{
    double ms = 1 + (double)(rnd(r) % 4000) / 1000.0; /* 1-5 ms */
    if (ms > remaining_ms)
        ms = remaining_ms > 0 ? remaining_ms : 0;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(ms * 1e6)};
    nanosleep(&ts, NULL);
}

static void new_value(struct redis_client *r, char *out)
{
    snprintf(out, VALUE_LEN + 1, "%016llx%016llx", (unsigned long long)rnd(r),
             (unsigned long long)rnd(r));
}

/* (Re)connects srv if it has no healthy connection; returns 0 when usable. */
static int conn_ensure(struct rconn *c, char *err, size_t errlen)
{
    if (c->ctx && !c->ctx->err)
        return 0;
    if (c->ctx)
        redisFree(c->ctx);
    c->sha[0] = 0;
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    c->ctx = redisConnectWithTimeout(c->host, c->port, tv);
    if (!c->ctx || c->ctx->err) {
        snprintf(err, errlen, "connect %s:%d: %s", c->host, c->port,
                 c->ctx ? c->ctx->errstr : "out of memory");
        if (c->ctx)
            redisFree(c->ctx);
        c->ctx = NULL;
        return -1;
    }
    redisSetTimeout(c->ctx, tv);
    redisReply *rep = redisCommand(c->ctx, "SCRIPT LOAD %s", unlock_lua);
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len == 40)
        memcpy(c->sha, rep->str, 41);
    if (rep)
        freeReplyObject(rep);
    return c->ctx->err ? -1 : 0;
}

static int parse_endpoints(struct redis_client *r, const char *eps, int want, char *err,
                           size_t errlen)
{
    const char *p = eps;
    r->n = 0;
    while (*p && r->n < MAX_SERVERS) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        struct rconn *c = &r->srv[r->n];
        if (!colon || (size_t)(colon - p) >= sizeof(c->host)) {
            snprintf(err, errlen, "bad endpoint in '%s' (host:port)", eps);
            return -1;
        }
        memcpy(c->host, p, (size_t)(colon - p));
        c->host[colon - p] = 0;
        c->port = atoi(colon + 1);
        if (c->port <= 0 || c->port > 65535) {
            snprintf(err, errlen, "bad port in '%s'", eps);
            return -1;
        }
        r->n++;
        p = comma ? comma + 1 : p + len;
    }
    if (r->n != want || *p) {
        snprintf(err, errlen, "need exactly %d endpoint%s, got '%s'", want, want > 1 ? "s" : "",
                 eps);
        return -1;
    }
    return 0;
}

static void *client_new_n(const struct bench_cfg *cfg, int servers, char *err, size_t errlen)
{
    struct redis_client *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->ttl_ms = cfg->ttl_ms;
    if (getrandom(&r->rng, sizeof(r->rng), 0) != sizeof(r->rng) || !r->rng)
        r->rng = (uint64_t)now_ms() * 2654435761u + 1;
    if (parse_endpoints(r, cfg->endpoints, servers, err, errlen)) {
        free(r);
        return NULL;
    }
    for (int i = 0; i < r->n; i++)
        if (conn_ensure(&r->srv[i], err, errlen)) {
            for (int j = 0; j <= i; j++)
                if (r->srv[j].ctx)
                    redisFree(r->srv[j].ctx);
            free(r);
            return NULL;
        }
    return r;
}

static void *redis_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    (void)client_id;
    return client_new_n(cfg, 1, err, errlen);
}

static void *redlock_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    (void)client_id;
    return client_new_n(cfg, MAX_SERVERS, err, errlen);
}

/* Compare-and-delete of name/value on one server: 1 deleted, 0 not ours, -1 error. */
static int cad(struct rconn *c, const char *name, const char *value, char *err, size_t errlen)
{
    if (conn_ensure(c, err, errlen))
        return -1;
    redisReply *rep = NULL;
    if (c->sha[0])
        rep = redisCommand(c->ctx, "EVALSHA %s 1 %s %s", c->sha, name, value);
    if (!rep || (rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8))) {
        if (rep)
            freeReplyObject(rep);
        rep = redisCommand(c->ctx, "EVAL %s 1 %s %s", unlock_lua, name, value);
    }
    if (!rep) {
        snprintf(err, errlen, "%s:%d: %s", c->host, c->port, c->ctx->errstr);
        return -1;
    }
    int rc = rep->type == REDIS_REPLY_INTEGER ? (rep->integer > 0) : -1;
    if (rc < 0)
        snprintf(err, errlen, "%s:%d: unlock: %s", c->host, c->port,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    freeReplyObject(rep);
    return rc;
}

static int remember(struct redis_client *r, const char *name, const char *value, char *err,
                    size_t errlen)
{
    size_t len = strlen(name);
    struct held *h = malloc(sizeof(*h) + len + 1);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(h->value, value, VALUE_LEN + 1);
    memcpy(h->name, name, len + 1);
    h->next = r->held;
    r->held = h;
    return 0;
}

/* Removes name from the held list; copies its value into value. 0 if it was there. */
static int forget(struct redis_client *r, const char *name, char *value)
{
    for (struct held **pp = &r->held; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->name, name)) {
            struct held *h = *pp;
            memcpy(value, h->value, VALUE_LEN + 1);
            *pp = h->next;
            free(h);
            return 0;
        }
    return -1;
}

/* One SET NX PX on every server, pipelined; returns how many said OK (errors count as no). */
static int set_all(struct redis_client *r, const char *name, const char *value)
{
    char ttl[16], e[128];
    snprintf(ttl, sizeof(ttl), "%d", r->ttl_ms);
    int sent[MAX_SERVERS] = {0}, ok = 0;
    for (int i = 0; i < r->n; i++)
        if (!conn_ensure(&r->srv[i], e, sizeof(e)) &&
            redisAppendCommand(r->srv[i].ctx, "SET %s %s NX PX %s", name, value, ttl) == REDIS_OK)
            sent[i] = 1;
    for (int i = 0; i < r->n; i++) {
        void *v = NULL;
        if (!sent[i] || redisGetReply(r->srv[i].ctx, &v) != REDIS_OK || !v)
            continue;
        redisReply *rep = v;
        if (rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "OK"))
            ok++;
        freeReplyObject(rep);
    }
    return ok;
}

static int redis_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                         size_t errlen)
{
    struct redis_client *r = cl;
    char value[VALUE_LEN + 1];
    new_value(r, value);
    double deadline = now_ms() + (wait_ms > 0 ? wait_ms : 0);
    *token = 0;
    for (;;) {
        if (conn_ensure(&r->srv[0], err, errlen))
            return -1;
        redisReply *rep = redisCommand(r->srv[0].ctx, "SET %s %s NX PX %d", name, value, r->ttl_ms);
        if (!rep) {
            snprintf(err, errlen, "SET: %s", r->srv[0].ctx->errstr);
            return -1;
        }
        int got = rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "OK");
        int bad = rep->type == REDIS_REPLY_ERROR;
        if (bad)
            snprintf(err, errlen, "SET: %s", rep->str);
        freeReplyObject(rep);
        if (bad)
            return -1;
        if (got)
            return remember(r, name, value, err, errlen);
        double left = deadline - now_ms();
        if (left <= 0)
            return BENCH_TIMEOUT;
        sleep_jitter(r, left);
    }
}

static int redlock_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                           size_t errlen)
{
    struct redis_client *r = cl;
    double deadline = now_ms() + (wait_ms > 0 ? wait_ms : 0);
    double drift = r->ttl_ms * 0.01 + 2;
    *token = 0;
    for (;;) {
        char value[VALUE_LEN + 1];
        new_value(r, value);
        double t0 = now_ms();
        int ok = set_all(r, name, value);
        double validity = r->ttl_ms - (now_ms() - t0) - drift;
        if (ok >= r->n / 2 + 1 && validity > 0)
            return remember(r, name, value, err, errlen);
        if (ok > 0) { /* undo a partial acquisition everywhere */
            char e[128];
            for (int i = 0; i < r->n; i++)
                cad(&r->srv[i], name, value, e, sizeof(e));
        }
        double left = deadline - now_ms();
        if (left <= 0)
            return BENCH_TIMEOUT;
        sleep_jitter(r, left);
    }
}

static int release_n(void *cl, const char *name, char *err, size_t errlen)
{
    struct redis_client *r = cl;
    char value[VALUE_LEN + 1];
    if (forget(r, name, value)) {
        snprintf(err, errlen, "release of '%s', which this client does not hold", name);
        return -1;
    }
    int deleted = 0, errors = 0;
    for (int i = 0; i < r->n; i++) {
        int rc = cad(&r->srv[i], name, value, err, errlen);
        if (rc < 0)
            errors++;
        else
            deleted += rc;
    }
    /* Plain Redis: the one server must answer. Redlock: a minority may fail, as the
       algorithm allows (its keys expire); a lock that had already expired everywhere is
       not an error of the release either. */
    if (errors > r->n / 2)
        return -1;
    (void)deleted;
    return 0;
}

static void client_free_n(void *cl)
{
    struct redis_client *r = cl;
    if (!r)
        return;
    char e[128];
    while (r->held) { /* release what is still held, best effort */
        struct held *h = r->held;
        r->held = h->next;
        for (int i = 0; i < r->n; i++)
            cad(&r->srv[i], h->name, h->value, e, sizeof(e));
        free(h);
    }
    for (int i = 0; i < r->n; i++)
        if (r->srv[i].ctx)
            redisFree(r->srv[i].ctx);
    free(r);
}

const struct bench_driver bench_redis = {
    .name = "redis",
    .client_new = redis_new,
    .client_free = client_free_n,
    .acquire = redis_acquire,
    .release = release_n,
};

const struct bench_driver bench_redlock = {
    .name = "redlock",
    .client_new = redlock_new,
    .client_free = client_free_n,
    .acquire = redlock_acquire,
    .release = release_n,
};
