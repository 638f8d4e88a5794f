/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waits.c — fl_lock_waits: the wait-for graph (LOCK.WAITS) as the caller's own copy.
 *
 * Every string and array in the list is malloc'ed here and freed by fl_wait_list_free, which
 * also frees what a failed fill left behind.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static fl_err fill_row(fl_client *c, const redisReply *it, struct fl_wait_entry *x)
{
    x->lock = cl_field_dup(it, "lock");
    x->object = cl_field_dup(it, "object");
    if (!x->lock || !x->object)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    x->sid = cl_field_u64(it, "sid");
    x->any = cl_field_u64(it, "any") != 0;
    const redisReply *w = cl_field(it, "waits_for");
    if (!w || w->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "LOCK.WAITS: a row without waits_for");
    x->waits_for = calloc(w->elements ? w->elements : 1, sizeof(*x->waits_for));
    if (!x->waits_for)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t k = 0; k < w->elements; k++, x->n_waits_for++) {
        if (w->element[k]->type != REDIS_REPLY_INTEGER || w->element[k]->integer < 0)
            return cl_fail(c, FL_EPROTO, "LOCK.WAITS: a sid that is not a number");
        x->waits_for[k] = (uint64_t)w->element[k]->integer;
    }
    return FL_OK;
}

fl_err fl_lock_waits(fl_client *c, const char *prefix, struct fl_wait_list *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.WAITS");
    cl_arg_str(&m, prefix ? prefix : "");
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type != REDIS_REPLY_ARRAY)
        e = cl_fail(c, FL_EPROTO, "LOCK.WAITS: unexpected reply");
    else if (!(out->v = calloc(r->elements ? r->elements : 1, sizeof(*out->v))))
        e = cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; e == FL_OK && i < r->elements; i++) {
        out->n++;
        e = fill_row(c, r->element[i], &out->v[i]);
    }
    freeReplyObject(r);
    if (e)
        fl_wait_list_free(out);
    return e;
}

void fl_wait_list_free(struct fl_wait_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].lock);
        free(l->v[i].object);
        free(l->v[i].waits_for);
    }
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
