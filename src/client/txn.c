/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TXN (docs/protocol.md "TXN"): a builder of compares and two branches of writes, committed
 * as one command; the result (branch, revision, per-op results) stays in the builder.
 *
 * Owns: the fl_txn and copies of every argument it was given (so the caller's strings may go
 * after each call), and the results of the last commit; fl_txn_free frees all of it. The
 * arguments are kept as the wire has them, per part (IF..., THEN ops, ELSE ops), and a commit
 * lays them out in one cl_cmd: at most CL_ARGS_MAX arguments with FENCE and REQ, so a
 * builder refuses (FL_ETOOLARGE) an entry that would not fit (the server's --max-args, 64 by
 * default, usually binds first).
 *
 * Every commit first forgets the last one's result; a commit refused with "-ERR TXN op N: ..."
 * keeps N (fl_txn_failed_op), any other outcome leaves it 0.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

#define TXN_RESERVED 9 /* "TXN", "THEN", "ELSE" (3), FENCE lock token (3), REQ sid seq (3) */

struct txn_arg {
    char *p;
    size_t len;
};

struct txn_part {
    struct txn_arg *v;
    size_t n, cap;
    size_t items; /* compares or ops */
};

struct fl_txn {
    struct txn_part part[3]; /* IF compares, THEN ops, ELSE ops */
    char *fence_name;
    uint64_t fence_token;
    /* the last commit's result */
    int committed, succeeded, known;
    int failed_op; /* the op the servers named in "-ERR TXN op N", from 1; 0: none */
    uint64_t revision;
    int64_t *results;
    size_t nresults;
};

enum { P_IF, P_THEN, P_ELSE };

fl_txn *fl_txn_new(void)
{
    return calloc(1, sizeof(fl_txn));
}

static void clear_results(fl_txn *t)
{
    free(t->results);
    t->results = NULL;
    t->nresults = 0;
    t->committed = t->succeeded = t->known = 0;
    t->failed_op = 0;
    t->revision = 0;
}

void fl_txn_free(fl_txn *t)
{
    if (!t)
        return;
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < t->part[i].n; k++)
            free(t->part[i].v[k].p);
        free(t->part[i].v);
    }
    free(t->fence_name);
    clear_results(t);
    free(t);
}

static size_t total_args(const fl_txn *t)
{
    return t->part[0].n + t->part[1].n + t->part[2].n;
}

/* Append one item of n arguments (p[i], len[i]) to a part: all or none. */
static fl_err add(fl_txn *t, int part, size_t n, const char *const *p, const size_t *len)
{
    struct txn_part *x = &t->part[part];
    if (total_args(t) + n + TXN_RESERVED > CL_ARGS_MAX)
        return FL_ETOOLARGE;
    if (x->n + n > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        while (cap < x->n + n)
            cap *= 2;
        struct txn_arg *v = realloc(x->v, cap * sizeof(*v));
        if (!v)
            return FL_ENOMEM;
        x->v = v;
        x->cap = cap;
    }
    size_t done = 0;
    for (; done < n; done++) {
        char *c = malloc(len[done] + 1);
        if (!c)
            break;
        memcpy(c, p[done], len[done]);
        c[len[done]] = '\0';
        x->v[x->n + done] = (struct txn_arg){c, len[done]};
    }
    if (done < n) {
        while (done--)
            free(x->v[x->n + done].p);
        return FL_ENOMEM;
    }
    x->n += n;
    x->items++;
    clear_results(t);
    return FL_OK;
}

static const char *rel_word(enum fl_txn_rel rel)
{
    static const char *const w[] = {"=", "!=", "<", ">"};
    return (unsigned)rel < 4 ? w[rel] : NULL;
}

static int bad_name(const char *s)
{
    return !s || !s[0];
}

static fl_err cmp_num(fl_txn *t, const char *word, const char *name, const char *rel, uint64_t n)
{
    char num[24];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)n);
    const char *p[] = {"IF", word, name, rel, num};
    size_t len[] = {2, strlen(word), strlen(name), rel ? strlen(rel) : 0, strlen(num)};
    if (!rel) { /* HOLDS lock sid */
        p[3] = num;
        len[3] = len[4];
        return add(t, P_IF, 4, p, len);
    }
    return add(t, P_IF, 5, p, len);
}

fl_err fl_txn_if_rev(fl_txn *t, const char *key, enum fl_txn_rel rel, uint64_t rev)
{
    if (!t || bad_name(key) || !rel_word(rel))
        return FL_EINVAL;
    return cmp_num(t, "REV", key, rel_word(rel), rev);
}

fl_err fl_txn_if_value(fl_txn *t, const char *key, enum fl_txn_rel rel, const void *value,
                       size_t len)
{
    if (!t || bad_name(key) || (rel != FL_TXN_EQ && rel != FL_TXN_NE) || (!value && len))
        return FL_EINVAL;
    const char *p[] = {"IF", "VALUE", key, rel_word(rel), value ? value : ""};
    size_t l[] = {2, 5, strlen(key), strlen(rel_word(rel)), len};
    return add(t, P_IF, 5, p, l);
}

fl_err fl_txn_if_exists(fl_txn *t, const char *key, int exists)
{
    if (!t || bad_name(key))
        return FL_EINVAL;
    const char *w = exists ? "EXISTS" : "MISSING";
    const char *p[] = {"IF", w, key};
    size_t l[] = {2, strlen(w), strlen(key)};
    return add(t, P_IF, 3, p, l);
}

fl_err fl_txn_if_token(fl_txn *t, const char *lock, enum fl_txn_rel rel, uint64_t token)
{
    if (!t || bad_name(lock) || (rel != FL_TXN_EQ && rel != FL_TXN_NE))
        return FL_EINVAL;
    return cmp_num(t, "TOKEN", lock, rel_word(rel), token);
}

fl_err fl_txn_if_holds(fl_txn *t, const char *lock, uint64_t sid)
{
    if (!t || bad_name(lock))
        return FL_EINVAL;
    return cmp_num(t, "HOLDS", lock, NULL, sid);
}

static fl_err op_put(fl_txn *t, int part, const char *key, const void *value, size_t len)
{
    if (!t || bad_name(key) || (!value && len))
        return FL_EINVAL;
    const char *p[] = {"PUT", key, value ? value : ""};
    size_t l[] = {3, strlen(key), len};
    return add(t, part, 3, p, l);
}

static fl_err op_del(fl_txn *t, int part, const char *key)
{
    if (!t || bad_name(key))
        return FL_EINVAL;
    const char *p[] = {"DEL", key};
    size_t l[] = {3, strlen(key)};
    return add(t, part, 2, p, l);
}

static fl_err op_incr(fl_txn *t, int part, const char *key, int64_t by)
{
    if (!t || bad_name(key))
        return FL_EINVAL;
    char num[24];
    snprintf(num, sizeof(num), "%lld", (long long)by);
    const char *p[] = {"INCR", key, num};
    size_t l[] = {4, strlen(key), strlen(num)};
    return add(t, part, 3, p, l);
}

fl_err fl_txn_then_put(fl_txn *t, const char *key, const void *value, size_t len)
{
    return op_put(t, P_THEN, key, value, len);
}

fl_err fl_txn_then_del(fl_txn *t, const char *key)
{
    return op_del(t, P_THEN, key);
}

fl_err fl_txn_then_incr(fl_txn *t, const char *key, int64_t by)
{
    return op_incr(t, P_THEN, key, by);
}

fl_err fl_txn_else_put(fl_txn *t, const char *key, const void *value, size_t len)
{
    return op_put(t, P_ELSE, key, value, len);
}

fl_err fl_txn_else_del(fl_txn *t, const char *key)
{
    return op_del(t, P_ELSE, key);
}

fl_err fl_txn_else_incr(fl_txn *t, const char *key, int64_t by)
{
    return op_incr(t, P_ELSE, key, by);
}

fl_err fl_txn_fence(fl_txn *t, const char *lock, uint64_t token)
{
    if (!t || bad_name(lock))
        return FL_EINVAL;
    char *c = strdup(lock);
    if (!c)
        return FL_ENOMEM;
    free(t->fence_name);
    t->fence_name = c;
    t->fence_token = token;
    clear_results(t);
    return FL_OK;
}

int cl_txn_op(const char *s, size_t len)
{
    static const char pfx[] = PROTO_ERR " TXN op ";
    size_t i = sizeof(pfx) - 1;
    long long n = 0;
    if (!s || len <= i || memcmp(s, pfx, i) != 0)
        return 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        n = n * 10 + (s[i] - '0');
        if (n > INT_MAX)
            return 0;
    }
    if (i == sizeof(pfx) - 1 || i == len || s[i] != ':')
        return 0; /* no digits, or not "N:" */
    return (int)n;
}

/* [THEN|ELSE, revision, [results] | nil] into t. */
static fl_err take_reply(fl_client *c, fl_txn *t, const redisReply *r)
{
    const redisReply *b, *rev, *res;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return cl_fail(c, FL_EPROTO, "TXN: a reply of an unexpected shape");
    b = r->element[0];
    rev = r->element[1];
    res = r->element[2];
    if ((b->type != REDIS_REPLY_STATUS && b->type != REDIS_REPLY_STRING) ||
        rev->type != REDIS_REPLY_INTEGER ||
        (res->type != REDIS_REPLY_ARRAY && res->type != REDIS_REPLY_NIL))
        return cl_fail(c, FL_EPROTO, "TXN: a reply of an unexpected shape");
    clear_results(t);
    if (res->type == REDIS_REPLY_ARRAY && res->elements) {
        t->results = malloc(res->elements * sizeof(*t->results));
        if (!t->results)
            return FL_ENOMEM;
        for (size_t i = 0; i < res->elements; i++)
            t->results[i] = res->element[i]->type == REDIS_REPLY_INTEGER
                                ? (int64_t)res->element[i]->integer
                                : 0;
        t->nresults = res->elements;
    }
    t->known = res->type == REDIS_REPLY_ARRAY;
    t->succeeded = b->len == 4 && memcmp(b->str, "THEN", 4) == 0;
    t->revision = (uint64_t)rev->integer;
    t->committed = 1;
    return FL_OK;
}

fl_err fl_txn_commit(fl_client *c, fl_session *session, fl_txn *t)
{
    if (!c || !t || t->part[P_IF].items + t->part[P_THEN].items + t->part[P_ELSE].items == 0)
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "TXN");
    for (int part = 0; part < 3; part++) {
        if (part == P_THEN)
            cl_arg_str(&m, "THEN");
        if (part == P_ELSE && t->part[P_ELSE].n)
            cl_arg_str(&m, "ELSE");
        for (size_t k = 0; k < t->part[part].n; k++)
            cl_arg(&m, t->part[part].v[k].p, t->part[part].v[k].len);
    }
    if (t->fence_name) {
        cl_arg_str(&m, "FENCE");
        cl_arg_str(&m, t->fence_name);
        cl_arg_u64(&m, t->fence_token);
    }
    fl_err e;
    clear_results(t); /* nothing of an earlier commit survives this one, whatever it ends with */
    if (session) {
        uint64_t seq;
        if ((e = cl_session_begin(session, &seq)))
            return e;
        cl_arg_req(&m, fl_session_id(session), seq);
        e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
        cl_session_end(session);
    } else {
        e = cl_call(c, &m, cl_deadline(c), 0, &r);
    }
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR) {
        e = cl_reply_err(c, r);
        if (e == FL_ESESSION && session)
            cl_session_mark_lost(session);
        if (e == FL_ESERVER)
            t->failed_op = cl_txn_op(r->str, r->len);
    } else {
        e = take_reply(c, t, r);
    }
    freeReplyObject(r);
    return e;
}

int fl_txn_succeeded(const fl_txn *t)
{
    return t && t->committed && t->succeeded;
}

uint64_t fl_txn_revision(const fl_txn *t)
{
    return t && t->committed ? t->revision : 0;
}

size_t fl_txn_nresults(const fl_txn *t)
{
    return t && t->committed ? t->nresults : 0;
}

int fl_txn_results_known(const fl_txn *t)
{
    return t && t->committed && t->known;
}

int fl_txn_failed_op(const fl_txn *t)
{
    return t ? t->failed_op : 0;
}

int64_t fl_txn_result(const fl_txn *t, size_t i)
{
    return t && t->committed && i < t->nresults ? t->results[i] : 0;
}
