/*
 * Locks: acquire (blocking, across fail-overs), try, release, and the lock queries.
 *
 * Every LOCK/UNLOCK carries `REQ sid seq`. A LOCK resent after a lost answer with the same seq
 * gets the truth from the servers (the token if this session now holds the lock, else it waits
 * again), so a grant happens once however often the request is repeated.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* A session lost on the servers is lost here too. */
static fl_err session_err(fl_session *s, fl_err e)
{
    if (e == FL_ESESSION)
        cl_session_mark_lost(s);
    return e;
}

/* UNLOCK with a fresh seq: releases the lock or leaves its queue. */
static fl_err unlock_seq(fl_session *s, const char *name, uint64_t seq, int64_t deadline)
{
    fl_client *c = cl_session_client(s);
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "UNLOCK");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, deadline, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type != REDIS_REPLY_STATUS)
        e = session_err(s, cl_reply_err(c, r));
    freeReplyObject(r);
    return e;
}

enum lock_mode { MODE_EXCLUSIVE, MODE_SHARED };

/*
 * LOCK name sid [SHARED] [WAIT ms] REQ sid seq until `deadline`. A resend (after a fail-over)
 * asks for the wait that is left. FL_OK with *token, FL_EBUSY for nil.
 */
static fl_err lock_req(fl_session *s, const char *name, enum lock_mode mode, uint64_t wait_ms,
                       uint64_t seq, uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    if (mode == MODE_SHARED)
        cl_arg_str(&m, "SHARED");
    if (wait_ms) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, wait_end + c->opt.timeout_ms, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        *token = (uint64_t)r->integer;
    else if (r->type == REDIS_REPLY_NIL)
        e = FL_EBUSY;
    else
        e = session_err(s, cl_reply_err(c, r));
    freeReplyObject(r);
    return e;
}

/* fl_lock and fl_lock_shared: the same wait, fail-over and clean-up in either mode. */
static fl_err lock_wait(fl_session *s, const char *name, enum lock_mode mode, uint64_t wait_ms,
                        uint64_t *token)
{
    if (!s || !name || !name[0] || !token)
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = lock_req(s, name, mode, wait_ms, seq, token);
    if (e == FL_EBUSY) {
        e = cl_fail(c, FL_ETIMEOUT, "lock %s not granted within %llu ms", name,
                    (unsigned long long)wait_ms);
    } else if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN) {
        /* We never saw the answer: the session may be queued, or even hold the lock. Leave
           the queue / release, so that no grant we do not know of outlives this call. */
        char msg[CL_ERRMSG_MAX];
        strcpy(msg, fl_client_errmsg(c));
        cl_session_end(s);
        if (cl_session_begin(s, &seq) == FL_OK)
            unlock_seq(s, name, seq, cl_deadline(c));
        e = cl_fail(c, e, "%s", msg);
    }
    cl_session_end(s);
    return e;
}

fl_err fl_lock(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token)
{
    return lock_wait(s, name, MODE_EXCLUSIVE, wait_ms, token);
}

fl_err fl_lock_shared(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token)
{
    return lock_wait(s, name, MODE_SHARED, wait_ms, token);
}

fl_err fl_trylock(fl_session *s, const char *name, uint64_t *token)
{
    if (!s || !name || !name[0] || !token)
        return FL_EINVAL;
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = lock_req(s, name, MODE_EXCLUSIVE, 0, seq, token);
    if (e == FL_EBUSY)
        cl_fail(cl_session_client(s), e, "lock %s is held or in lock-delay", name);
    cl_session_end(s);
    return e;
}

fl_err fl_unlock(fl_session *s, const char *name)
{
    if (!s || !name || !name[0])
        return FL_EINVAL;
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = unlock_seq(s, name, seq, cl_deadline(cl_session_client(s)));
    cl_session_end(s);
    return e;
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
