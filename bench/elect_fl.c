/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elect_fl — W12's fencelock side (bench/elect.h): raw RESP to the leader over hiredis, one
 * connection and session per participant of a round. L wins `ELECT.CAMPAIGN name sid L` at
 * once, C sends `ELECT.CAMPAIGN name sid C WAIT ms` and blocks, each observer loops on
 * `ELECT.OBSERVE name AFTER rev WAIT ms` (passing back the `rev` it saw) until the answer's
 * `sid` is C's; the kill is `SESSION.CLOSE Lsid` on the run's admin connection. round_free
 * closes the sessions left and the connections.
 */
#include "elect.h"
#include "flraw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EL_FL_TTL_MS 15000

struct fl_ctx {
    const char *endpoints;
    redisContext *admin;
};

struct fl_part {
    redisContext *c;
    long long sid;
};

struct fl_round {
    struct fl_ctx *ctx;
    char name[64];
    struct fl_part l, c;
    struct fl_part *obs;
    int nobs;
    long long lrev;
};

static void fl_err(char *err, size_t errlen, const char *what, redisContext *c, redisReply *r)
{
    snprintf(err, errlen, "%s: %s", what, r && r->str ? r->str : c ? c->errstr : "no connection");
}

static void *fl_ctx_new(const char *endpoints, char *err, size_t errlen)
{
    struct fl_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->endpoints = endpoints;
    x->admin = fr_connect_leader(endpoints, err, errlen);
    if (!x->admin) {
        free(x);
        return NULL;
    }
    return x;
}

static void fl_ctx_free(void *p)
{
    struct fl_ctx *x = p;
    redisFree(x->admin);
    free(x);
}

static int fl_part_open(struct fl_ctx *x, struct fl_part *p, int session, char *err, size_t el)
{
    p->c = fr_connect_leader(x->endpoints, err, el);
    if (!p->c || !session)
        return p->c ? 0 : -1;
    redisReply *r = redisCommand(p->c, "SESSION.OPEN %d", EL_FL_TTL_MS);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (ok)
        p->sid = r->integer;
    else
        fl_err(err, el, "SESSION.OPEN", p->c, r);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static void fl_part_close(struct fl_part *p)
{
    if (!p->c)
        return;
    redisReply *r = p->sid ? redisCommand(p->c, "SESSION.CLOSE %lld", p->sid) : NULL;
    if (r)
        freeReplyObject(r);
    redisFree(p->c);
}

static void fl_round_free(void *p)
{
    struct fl_round *d = p;
    fl_part_close(&d->l);
    fl_part_close(&d->c);
    for (int i = 0; d->obs && i < d->nobs; i++)
        fl_part_close(&d->obs[i]);
    free(d->obs);
    free(d);
}

static void *fl_round_new(void *ctx, int r, int nobs, long long *ltok, char *err, size_t el)
{
    struct fl_ctx *x = ctx;
    struct fl_round *d = calloc(1, sizeof(*d));
    if (!d || !(d->obs = calloc((size_t)nobs, sizeof(*d->obs)))) {
        free(d);
        snprintf(err, el, "out of memory");
        return NULL;
    }
    d->ctx = x;
    d->nobs = nobs;
    snprintf(d->name, sizeof(d->name), "lb-%d-W12-%d", (int)getpid(), r);
    int bad = fl_part_open(x, &d->l, 1, err, el) || fl_part_open(x, &d->c, 1, err, el);
    for (int i = 0; !bad && i < nobs; i++)
        bad = fl_part_open(x, &d->obs[i], 0, err, el);
    redisReply *rp = bad ? NULL
                         : redisCommand(d->l.c, "ELECT.CAMPAIGN %s %lld L REQ %lld 1", d->name,
                                        d->l.sid, d->l.sid);
    if (!bad && !(rp && rp->type == REDIS_REPLY_INTEGER)) {
        fl_err(err, el, "ELECT.CAMPAIGN (L)", d->l.c, rp);
        bad = 1;
    }
    if (!bad)
        *ltok = d->lrev = rp->integer; /* since_rev = rev = token at a takeover */
    if (rp)
        freeReplyObject(rp);
    if (bad) {
        fl_round_free(d);
        return NULL;
    }
    return d;
}

static int fl_candidate(void *p, long long *token, char *err, size_t el)
{
    struct fl_round *d = p;
    redisReply *r = redisCommand(d->c.c, "ELECT.CAMPAIGN %s %lld C WAIT %d REQ %lld 1", d->name,
                                 d->c.sid, EL_ROUND_MS - 1000, d->c.sid);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (ok)
        *token = r->integer;
    else if (r && r->type == REDIS_REPLY_NIL)
        snprintf(err, el, "ELECT.CAMPAIGN (C): timed out");
    else
        fl_err(err, el, "ELECT.CAMPAIGN (C)", d->c.c, r);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* The integer under `key` in a map reply (RESP2: a flat array of pairs); -1 if absent. */
static long long fl_field(const redisReply *r, const char *key)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->str && !strcmp(k->str, key) && v->type == REDIS_REPLY_INTEGER)
            return v->integer;
    }
    return -1;
}

static int fl_observe(void *p, int idx, double deadline_ms, char *err, size_t el)
{
    struct fl_round *d = p;
    struct fl_part *o = &d->obs[idx];
    long long after = d->lrev;
    while (el_now_ms() < deadline_ms) {
        redisReply *r =
            redisCommand(o->c, "ELECT.OBSERVE %s AFTER %lld WAIT %d", d->name, after, 2000);
        if (r && r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);
            continue;
        }
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            fl_err(err, el, "ELECT.OBSERVE", o->c, r);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        long long sid = fl_field(r, "sid"), rev = fl_field(r, "rev");
        freeReplyObject(r);
        if (sid == d->c.sid)
            return 0;
        if (rev <= after) { /* the rule every observer relies on: never an older state */
            snprintf(err, el, "ELECT.OBSERVE answered rev %lld after %lld", rev, after);
            return -1;
        }
        after = rev;
    }
    snprintf(err, el, "C not observed within %d ms", EL_ROUND_MS);
    return -1;
}

static int fl_kill(void *p, char *err, size_t el)
{
    struct fl_round *d = p;
    redisReply *r = redisCommand(d->ctx->admin, "SESSION.CLOSE %lld", d->l.sid);
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (ok)
        d->l.sid = 0; /* closed: round_free need not */
    else
        fl_err(err, el, "SESSION.CLOSE (L)", d->ctx->admin, r);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

const struct el_ops el_fencelock = {fl_ctx_new,   fl_ctx_free, fl_round_new, fl_round_free,
                                    fl_candidate, fl_observe,  fl_kill};
