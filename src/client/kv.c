/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keys: fenced and conditional writes, linearizable reads, listing.
 *
 * A write made through a session carries `REQ sid seq` and is retried until its deadline; a
 * write without a session is sent once and may end in FL_EUNKNOWN.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static void write_opts(struct cl_cmd *m, fl_session *session, const struct fl_write_opts *o,
                       bool is_put)
{
    if (!o)
        return;
    if (is_put && (o->lease || o->lease_sid)) {
        cl_arg_str(m, "LEASE");
        cl_arg_u64(m, o->lease_sid ? o->lease_sid : fl_session_id(session));
    }
    if (o->fence_name) {
        cl_arg_str(m, "FENCE");
        cl_arg_str(m, o->fence_name);
        cl_arg_u64(m, o->fence_token);
        cl_arg_trace(m); /* a fenced write carries the thread's traceparent */
    }
    if (o->use_ifrev) {
        cl_arg_str(m, "IFREV");
        cl_arg_u64(m, o->ifrev);
    }
}

/* Send a write, through the session's REQ sequence when there is one. */
static fl_err write_call(fl_client *c, fl_session *session, struct cl_cmd *m, redisReply **r)
{
    if (!session)
        return cl_call(c, m, cl_deadline(c), 0, r);
    uint64_t seq;
    fl_err e = cl_session_begin(session, &seq);
    if (e)
        return e;
    cl_arg_req(m, fl_session_id(session), seq);
    e = cl_call(c, m, cl_deadline(c), CL_RETRY, r);
    cl_session_end(session);
    return e;
}

/* An error reply of a write; NOSESSION of the request's own session means it is lost. */
static fl_err write_err(fl_client *c, fl_session *session, const redisReply *r)
{
    fl_err e = cl_reply_err(c, r);
    if (e == FL_ESESSION && session)
        cl_session_mark_lost(session);
    return e;
}

fl_err fl_put(fl_client *c, fl_session *session, const char *key, const void *value, size_t len,
              const struct fl_write_opts *opts, uint64_t *rev)
{
    if (!c || !key || !key[0] || (!value && len) ||
        (opts && opts->lease && !opts->lease_sid && !session))
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "PUT");
    cl_arg_str(&m, key);
    cl_arg(&m, value ? value : "", len);
    write_opts(&m, session, opts, true);
    fl_err e = write_call(c, session, &m, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (rev)
            *rev = (uint64_t)r->integer;
    } else {
        e = write_err(c, session, r);
    }
    freeReplyObject(r);
    return e;
}

fl_err fl_incr(fl_client *c, fl_session *session, const char *key, int64_t by,
               const struct fl_write_opts *opts, int64_t *value)
{
    if (!c || !key || !key[0])
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r;
    char num[24];
    snprintf(num, sizeof(num), "%lld", (long long)by);
    cl_cmd_init(&m, "INCR");
    cl_arg_str(&m, key);
    cl_arg_str(&m, "BY");
    cl_arg_str(&m, num);
    write_opts(&m, session, opts, false);
    fl_err e = write_call(c, session, &m, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (value)
            *value = (int64_t)r->integer;
    } else {
        e = write_err(c, session, r);
    }
    freeReplyObject(r);
    return e;
}

fl_err fl_del(fl_client *c, fl_session *session, const char *key, const struct fl_write_opts *opts,
              int *deleted)
{
    if (!c || !key || !key[0])
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "DEL");
    cl_arg_str(&m, key);
    write_opts(&m, session, opts, false);
    fl_err e = write_call(c, session, &m, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (deleted)
            *deleted = r->integer != 0;
    } else {
        e = write_err(c, session, r);
    }
    freeReplyObject(r);
    return e;
}

fl_err fl_get(fl_client *c, const char *key, struct fl_kv *out)
{
    if (!c || !key || !key[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "KV.GET");
    cl_arg_str(&m, key);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    const redisReply *v = cl_field(r, "value");
    if (r->type == REDIS_REPLY_NIL) {
        e = cl_fail(c, FL_ENOTFOUND, "key %s does not exist", key);
    } else if (r->type == REDIS_REPLY_ERROR) {
        e = cl_reply_err(c, r);
    } else if (!v || v->type != REDIS_REPLY_STRING) {
        e = cl_fail(c, FL_EPROTO, "KV.GET: unexpected reply");
    } else if (!(out->value = malloc(v->len + 1))) {
        e = cl_fail(c, FL_ENOMEM, "out of memory");
    } else {
        memcpy(out->value, v->str, v->len);
        ((char *)out->value)[v->len] = 0;
        out->len = v->len;
        out->create_rev = cl_field_u64(r, "create_rev");
        out->mod_rev = cl_field_u64(r, "mod_rev");
        out->version = cl_field_u64(r, "version");
        out->lease = cl_field_u64(r, "lease");
    }
    freeReplyObject(r);
    return e;
}

void fl_kv_free(struct fl_kv *kv)
{
    if (!kv)
        return;
    free(kv->value);
    kv->value = NULL;
    kv->len = 0;
}

static fl_err fill_strlist(fl_client *c, const redisReply *r, struct fl_strlist *out)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return r->type == REDIS_REPLY_ERROR ? cl_reply_err(c, r)
                                            : cl_fail(c, FL_EPROTO, "KEYS: unexpected reply");
    out->v = calloc(r->elements ? r->elements : 1, sizeof(char *));
    if (!out->v)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->elements; i++, out->n++) {
        const redisReply *k = r->element[i];
        out->v[i] = strndup(k->type == REDIS_REPLY_STRING ? k->str : "",
                            k->type == REDIS_REPLY_STRING ? k->len : 0);
        if (!out->v[i])
            return cl_fail(c, FL_ENOMEM, "out of memory");
    }
    return FL_OK;
}

fl_err fl_keys(fl_client *c, const char *prefix, size_t limit, struct fl_strlist *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "KEYS");
    cl_arg_str(&m, prefix ? prefix : "");
    if (limit) {
        cl_arg_str(&m, "LIMIT");
        cl_arg_u64(&m, limit);
    }
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    e = fill_strlist(c, r, out);
    freeReplyObject(r);
    if (e)
        fl_strlist_free(out);
    return e;
}

void fl_strlist_free(struct fl_strlist *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
