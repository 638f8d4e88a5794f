/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Locks: acquire (blocking, across fail-overs), try, release, and the lock queries. The waits
 * and their exactly-once rules are acquire.c's, shared with semaphores and elections.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static const struct cl_hold exclusive = {.acquire = "LOCK", .release = "UNLOCK", .what = "lock"};
static const struct cl_hold shared = {
    .acquire = "LOCK", .release = "UNLOCK", .what = "lock", .arg = "SHARED", .arg_len = 6};

fl_err fl_lock(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token)
{
    return cl_acquire(s, &exclusive, name, wait_ms, token);
}

fl_err fl_lock_shared(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token)
{
    return cl_acquire(s, &shared, name, wait_ms, token);
}

fl_err fl_lock_with(fl_session *s, const char *name, uint64_t wait_ms,
                    const struct fl_lock_opts *opts, uint64_t *token, int64_t *maxhold_deadline)
{
    struct fl_lock_opts o = {0};
    if (opts) { /* a caller compiled against an older, shorter struct: the rest stays 0 */
        if (opts->size < offsetof(struct fl_lock_opts, value) + sizeof(opts->value))
            return FL_EINVAL;
        memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
    }
    if (o.value_len && !o.value)
        return FL_EINVAL;
    struct cl_hold h = o.notify ? (struct cl_hold){.acquire = "LOCK",
                                                   .release = "UNLOCK",
                                                   .what = "lock",
                                                   .arg = "NOTIFY",
                                                   .arg_len = 6}
                                : exclusive;
    h.value = o.value_len ? o.value : NULL;
    h.value_len = o.value_len;
    h.maxhold_ms = o.maxhold_ms;
    int64_t sent = fl_now_ms(); /* before the first LOCK: the grant can only come later */
    fl_err e = cl_acquire(s, &h, name, wait_ms, token);
    if (e == FL_OK && maxhold_deadline)
        *maxhold_deadline =
            o.maxhold_ms ? sent + cl_safe_span(s, o.maxhold_ms) : (int64_t)INT64_MAX;
    return e;
}

fl_err fl_trylock(fl_session *s, const char *name, uint64_t *token)
{
    if (!s || !name || !name[0] || !token)
        return FL_EINVAL;
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = cl_acquire_req(s, &exclusive, name, 0, seq, token);
    if (e == FL_EBUSY)
        cl_fail(cl_session_client(s), e, "lock %s is held or in lock-delay", name);
    cl_session_end(s);
    return e;
}

fl_err fl_unlock(fl_session *s, const char *name)
{
    return cl_release(s, "UNLOCK", name);
}

/* ---- queries ---- */

/* A linearizable read of one command: the reply, or an error already mapped. */
static fl_err read_cmd(fl_client *c, struct cl_cmd *m, redisReply **r)
{
    fl_err e = cl_call(c, m, cl_deadline(c), CL_RETRY, r);
    if (e == FL_OK && (*r)->type == REDIS_REPLY_ERROR) {
        e = cl_reply_err(c, *r);
        freeReplyObject(*r);
        *r = NULL;
    }
    return e;
}

/* mode and holders; a server from before read-write locks sends neither: the exclusive
   holder alone, if any. */
static fl_err fill_holders(fl_client *c, const redisReply *r, struct fl_lock_info *out)
{
    const redisReply *m = cl_field(r, "mode"), *h = cl_field(r, "holders");
    if (m && m->type == REDIS_REPLY_STRING && m->len < sizeof(out->mode))
        memcpy(out->mode, m->str, m->len + 1);
    else
        strcpy(out->mode, out->holder ? "exclusive" : "none");
    size_t n = h && h->type == REDIS_REPLY_ARRAY ? h->elements : (out->holder ? 1 : 0);
    out->holders = calloc(n ? n : 1, sizeof(*out->holders));
    if (!out->holders)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    out->n_holders = n;
    for (size_t i = 0; i < n; i++)
        out->holders[i] = h && h->type == REDIS_REPLY_ARRAY
                              ? (struct fl_lock_holder){cl_field_u64(h->element[i], "sid"),
                                                        cl_field_u64(h->element[i], "token")}
                              : (struct fl_lock_holder){out->holder, out->token};
    return FL_OK;
}

static fl_err fill_lock_info(fl_client *c, const redisReply *r, struct fl_lock_info *out)
{
    const redisReply *w = cl_field(r, "waiters");
    if (r->type != REDIS_REPLY_ARRAY || !w || w->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "LOCK.INFO: unexpected reply");
    out->holder = cl_field_u64(r, "holder");
    out->token = cl_field_u64(r, "token");
    out->held_since_ms = cl_field_u64(r, "held_since_ms");
    out->lockdelay = cl_field_u64(r, "lockdelay") != 0;
    out->n_waiters = w->elements;
    out->waiters = calloc(w->elements ? w->elements : 1, sizeof(uint64_t));
    if (!out->waiters)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->elements; i++)
        out->waiters[i] =
            w->element[i]->type == REDIS_REPLY_INTEGER ? (uint64_t)w->element[i]->integer : 0;
    return fill_holders(c, r, out);
}

fl_err fl_lock_info(fl_client *c, const char *name, struct fl_lock_info *out)
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.INFO");
    cl_arg_str(&m, name);
    fl_err e = read_cmd(c, &m, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_NIL)
        e = cl_fail(c, FL_ENOTFOUND, "lock %s is free and nobody waits", name);
    else
        e = fill_lock_info(c, r, out);
    freeReplyObject(r);
    if (e && e != FL_ENOTFOUND)
        fl_lock_info_free(out);
    return e;
}

fl_err fl_lock_count(fl_client *c, const char *name, uint64_t *holder, uint64_t *count)
{
    if (!c || !name || !name[0] || !holder || !count)
        return FL_EINVAL;
    *holder = *count = 0;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.INFO");
    cl_arg_str(&m, name);
    fl_err e = read_cmd(c, &m, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_NIL) {
        e = cl_fail(c, FL_ENOTFOUND, "lock %s is free and nobody waits", name);
    } else if (r->type != REDIS_REPLY_ARRAY) {
        e = cl_fail(c, FL_EPROTO, "LOCK.INFO: unexpected reply");
    } else {
        *holder = cl_field_u64(r, "holder");
        /* "count" only for a reentrant holder: any other holder holds once */
        *count = cl_field(r, "count") ? cl_field_u64(r, "count") : *holder != 0;
    }
    freeReplyObject(r);
    return e;
}

fl_err fl_lock_meta(fl_client *c, const char *name, struct fl_lock_meta *out)
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.INFO");
    cl_arg_str(&m, name);
    fl_err e = read_cmd(c, &m, &r);
    if (e)
        return e;
    const redisReply *v = r->type == REDIS_REPLY_ARRAY ? cl_field(r, "value") : NULL;
    if (r->type == REDIS_REPLY_NIL) {
        e = cl_fail(c, FL_ENOTFOUND, "lock %s is free and nobody waits", name);
    } else if (r->type != REDIS_REPLY_ARRAY) {
        e = cl_fail(c, FL_EPROTO, "LOCK.INFO: unexpected reply");
    } else {
        size_t n = v && v->type == REDIS_REPLY_STRING ? v->len : 0; /* older servers: none */
        if (!(out->value = malloc(n + 1))) {
            e = cl_fail(c, FL_ENOMEM, "out of memory");
        } else {
            if (n)
                memcpy(out->value, v->str, n);
            out->value[n] = '\0';
            out->value_len = n;
            out->maxhold_ms = cl_field_u64(r, "max_hold_ms");
            out->transitions = cl_field_u64(r, "transitions");
        }
    }
    freeReplyObject(r);
    return e;
}

void fl_lock_meta_free(struct fl_lock_meta *meta)
{
    if (!meta)
        return;
    free(meta->value);
    meta->value = NULL;
    meta->value_len = 0;
}

void fl_lock_info_free(struct fl_lock_info *info)
{
    if (!info)
        return;
    free(info->waiters);
    free(info->holders);
    info->waiters = NULL;
    info->holders = NULL;
    info->n_waiters = info->n_holders = 0;
}

fl_err fl_fence_check(fl_client *c, const char *name, uint64_t token)
{
    if (!c || !name || !name[0])
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "FENCE.CHECK");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, token);
    fl_err e = read_cmd(c, &m, &r);
    if (e == FL_OK)
        freeReplyObject(r);
    return e;
}

static fl_err fill_locks(fl_client *c, const redisReply *r, struct fl_lock_list *out)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "LOCKS: unexpected reply");
    out->v = calloc(r->elements ? r->elements : 1, sizeof(*out->v));
    if (!out->v)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->elements; i++, out->n++) {
        const redisReply *it = r->element[i];
        struct fl_lock_entry *x = &out->v[i];
        x->name = cl_field_dup(it, "name");
        if (!x->name)
            return cl_fail(c, FL_ENOMEM, "out of memory");
        x->holder = cl_field_u64(it, "holder");
        x->token = cl_field_u64(it, "token");
        x->lockdelay = cl_field_u64(it, "lockdelay") != 0;
        x->n_waiters = cl_field_u64(it, "waiters");
    }
    return FL_OK;
}

fl_err fl_locks(fl_client *c, const char *prefix, size_t limit, struct fl_lock_list *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCKS");
    cl_arg_str(&m, prefix ? prefix : "");
    if (limit) {
        cl_arg_str(&m, "LIMIT");
        cl_arg_u64(&m, limit);
    }
    fl_err e = read_cmd(c, &m, &r);
    if (e)
        return e;
    e = fill_locks(c, r, out);
    freeReplyObject(r);
    if (e)
        fl_lock_list_free(out);
    return e;
}

void fl_lock_list_free(struct fl_lock_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
