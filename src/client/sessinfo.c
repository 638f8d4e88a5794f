/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading sessions (SESSION.INFO, SESSION.LIST) and one node's own view (CLUSTER.INFO asked of
 * the node itself, not of the leader): what the CLI's `session info|list` and `members list`
 * print. Reads only, so every call is safe to retry. Results own their strings; the _free
 * functions release them.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* A reply that is an error reply: the error (and the reply freed, *r NULL); else FL_OK. */
static fl_err take_error(fl_client *c, redisReply **r)
{
    if ((*r)->type != REDIS_REPLY_ERROR)
        return FL_OK;
    fl_err e = cl_reply_err(c, *r);
    freeReplyObject(*r);
    *r = NULL;
    return e;
}

static fl_err fill_session(fl_client *c, const redisReply *m, struct fl_session_info *out)
{
    if (m->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "SESSION.INFO: unexpected reply");
    out->sid = cl_field_u64(m, "sid");
    out->ttl_ms = cl_field_u64(m, "ttl_ms");
    out->lockdelay_ms = cl_field_u64(m, "lockdelay_ms");
    out->remaining_ms = cl_field_u64(m, "remaining_ms");
    out->n_locks = (size_t)cl_field_u64(m, "locks");
    out->n_waits = (size_t)cl_field_u64(m, "waits");
    out->n_keys = (size_t)cl_field_u64(m, "keys");
    out->name = cl_field_dup(m, "name");
    out->owner = cl_field_dup(m, "owner");
    return out->name && out->owner ? FL_OK : cl_fail(c, FL_ENOMEM, "out of memory");
}

fl_err fl_session_info(fl_client *c, uint64_t sid, struct fl_session_info *out)
{
    if (!c || !out || !sid)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "SESSION.INFO");
    cl_arg_u64(&m, sid);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e == FL_OK)
        e = take_error(c, &r);
    if (e)
        return e;
    e = fill_session(c, r, out);
    freeReplyObject(r);
    if (e)
        fl_session_info_free(out);
    return e;
}

void fl_session_info_free(struct fl_session_info *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->owner);
    memset(s, 0, sizeof(*s));
}

fl_err fl_sessions(fl_client *c, uint64_t after, size_t limit, struct fl_session_list *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "SESSION.LIST");
    if (after) {
        cl_arg_str(&m, "AFTER");
        cl_arg_u64(&m, after);
    }
    if (limit) {
        cl_arg_str(&m, "LIMIT");
        cl_arg_u64(&m, limit);
    }
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e == FL_OK)
        e = take_error(c, &r);
    if (e)
        return e;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return cl_fail(c, FL_EPROTO, "SESSION.LIST: unexpected reply");
    }
    out->v = calloc(r->elements ? r->elements : 1, sizeof(*out->v));
    if (!out->v)
        e = cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; e == FL_OK && i < r->elements; i++, out->n++)
        e = fill_session(c, r->element[i], &out->v[i]);
    freeReplyObject(r);
    if (e)
        fl_session_list_free(out);
    return e;
}

void fl_session_list_free(struct fl_session_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        fl_session_info_free(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
