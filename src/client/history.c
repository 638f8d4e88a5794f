/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history.c — fl_lock_history: a lock's grants (LOCK.HISTORY) as the caller's own copy.
 *
 * Every string and array in the list is malloc'ed here and freed by fl_history_free, which
 * also frees what a failed fill left behind. A -COMPACTED reply maps to FL_ECOMPACTED
 * (cl_reply_err).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static fl_err fill_waiters(fl_client *c, const redisReply *w, struct fl_history_entry *x)
{
    if (!w || w->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "LOCK.HISTORY: an entry without waiters");
    x->waiters = calloc(w->elements ? w->elements : 1, sizeof(*x->waiters));
    if (!x->waiters)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t k = 0; k < w->elements; k++, x->n_waiters++) {
        x->waiters[k].sid = cl_field_u64(w->element[k], "session");
        x->waiters[k].waited_ms = cl_field_u64(w->element[k], "waited_ms");
    }
    return FL_OK;
}

static fl_err fill_entry(fl_client *c, const redisReply *it, struct fl_history_entry *x)
{
    x->kind = cl_field_dup(it, "kind");
    x->session_name = cl_field_dup(it, "session_name");
    x->user = cl_field_dup(it, "user");
    x->value = cl_field_dup(it, "value");
    x->ended_by = cl_field_dup(it, "ended_by");
    if (!x->kind || !x->session_name || !x->user || !x->value || !x->ended_by)
        return cl_fail(c, FL_ENOMEM, "out of memory (or an entry without its text fields)");
    x->sid = cl_field_u64(it, "session");
    x->token = cl_field_u64(it, "token");
    x->permits = cl_field_u64(it, "permits");
    x->granted_ms = cl_field_u64(it, "granted_ms");
    x->waited_ms = cl_field_u64(it, "waited_ms");
    x->ended_rev = cl_field_u64(it, "ended_rev");
    x->ended_ms = cl_field_u64(it, "ended_ms");
    x->held_ms = cl_field_u64(it, "held_ms");
    x->waiters_total = cl_field_u64(it, "waiters_total");
    return fill_waiters(c, cl_field(it, "waiters"), x);
}

fl_err fl_lock_history(fl_client *c, const char *name, size_t count, uint64_t before,
                       struct fl_history *out)
{
    if (!c || !name || !*name || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.HISTORY");
    cl_arg_str(&m, name);
    if (count) {
        cl_arg_str(&m, "COUNT");
        cl_arg_u64(&m, count);
    }
    if (before) {
        cl_arg_str(&m, "BEFORE");
        cl_arg_u64(&m, before);
    }
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR && cl_err_is(r, PROTO_COMPACTED))
        e = cl_fail(c, FL_ECOMPACTED, "%.*s", (int)r->len, r->str);
    else if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type != REDIS_REPLY_ARRAY)
        e = cl_fail(c, FL_EPROTO, "LOCK.HISTORY: unexpected reply");
    else if (!(out->v = calloc(r->elements ? r->elements : 1, sizeof(*out->v))))
        e = cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; e == FL_OK && i < r->elements; i++) {
        out->n++;
        e = fill_entry(c, r->element[i], &out->v[i]);
    }
    freeReplyObject(r);
    if (e)
        fl_history_free(out);
    return e;
}

void fl_history_free(struct fl_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++) {
        struct fl_history_entry *x = &h->v[i];
        free(x->kind);
        free(x->session_name);
        free(x->user);
        free(x->value);
        free(x->ended_by);
        free(x->waiters);
    }
    free(h->v);
    h->v = NULL;
    h->n = 0;
}
