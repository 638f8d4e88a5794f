/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latches and double barriers: LATCH.CREATE/JOIN/COUNTDOWN/WAIT/INFO/DELETE, BARRIER.ENTER and
 * BARRIER.LEAVE (docs/protocol.md "Latches and barriers").
 *
 * The session's steps go with REQ sid seq (exactly once across fail-overs: a retried enter or
 * leave is answered by the FSM's cached reply, then waits again on the new leader). The waits
 * are the server's (WAIT ms): nil is FL_ETIMEOUT, -BROKEN FL_EBROKEN. Owns nothing beyond a
 * call.
 */
#include <string.h>

#include "client/client.h"

/* One reply: +OK is FL_OK, nil FL_ETIMEOUT, an error its code; an integer into *v. */
static fl_err reply_of(fl_client *c, fl_err e, redisReply *r, uint64_t *v)
{
    if (e)
        return e;
    if (r->type == REDIS_REPLY_STATUS)
        e = FL_OK;
    else if (r->type == REDIS_REPLY_NIL)
        e = cl_fail(c, FL_ETIMEOUT, "not yet: the wait ran out");
    else if (r->type == REDIS_REPLY_INTEGER && v)
        *v = (uint64_t)r->integer;
    else if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type != REDIS_REPLY_INTEGER)
        e = cl_fail(c, FL_EPROTO, "unexpected reply type %d", r->type);
    freeReplyObject(r);
    return e;
}

fl_err fl_latch_create(fl_client *c, const char *name, uint32_t count)
{
    if (!c || !name || !name[0] || count == 0)
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "LATCH.CREATE");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, count);
    /* retried: the same count again is OK and changes nothing */
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    return reply_of(c, e, r, NULL);
}

fl_err fl_latch_delete(fl_client *c, const char *name, int *deleted)
{
    if (!c || !name || !name[0])
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r = NULL;
    uint64_t v = 0;
    cl_cmd_init(&m, "LATCH.DELETE");
    cl_arg_str(&m, name);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    e = reply_of(c, e, r, &v); /* r is set by the call: not in one expression */
    if (e == FL_OK && deleted)
        *deleted = v != 0;
    return e;
}

/* A session's step (name sid [count] [WAIT ms] REQ sid seq). */
static fl_err session_step(fl_session *s, const char *cmd, const char *name, uint32_t count,
                           int64_t wait_end, uint64_t *v)
{
    if (!s || !name || !name[0])
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, cmd);
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    if (count)
        cl_arg_u64(&m, count);
    if (wait_end) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    cl_arg_req(&m, fl_session_id(s), seq);
    int64_t deadline = wait_end ? wait_end + c->opt.timeout_ms : cl_deadline(c);
    e = cl_call(c, &m, deadline, CL_RETRY, &r);
    e = cl_session_err(s, reply_of(c, e, r, v));
    cl_session_end(s);
    return e;
}

fl_err fl_latch_join(fl_session *s, const char *name)
{
    return session_step(s, "LATCH.JOIN", name, 0, 0, NULL);
}

fl_err fl_latch_countdown(fl_session *s, const char *name, uint64_t *remaining)
{
    uint64_t v = 0;
    fl_err e = session_step(s, "LATCH.COUNTDOWN", name, 0, 0, &v);
    if (e == FL_OK && remaining)
        *remaining = v;
    return e;
}

fl_err fl_barrier_enter(fl_session *s, const char *name, uint32_t count, uint64_t wait_ms)
{
    if (count == 0)
        return FL_EINVAL;
    uint64_t v = 0;
    fl_err e = session_step(s, "BARRIER.ENTER", name, count,
                            wait_ms ? fl_now_ms() + (int64_t)wait_ms : 0, &v);
    return e == FL_OK && v ? FL_ETIMEOUT : e; /* an integer: never, the server answers nil */
}

fl_err fl_barrier_leave(fl_session *s, const char *name, uint64_t wait_ms)
{
    uint64_t v = 0;
    fl_err e =
        session_step(s, "BARRIER.LEAVE", name, 0, wait_ms ? fl_now_ms() + (int64_t)wait_ms : 0, &v);
    return e == FL_OK && v ? FL_ETIMEOUT : e;
}

fl_err fl_latch_wait(fl_client *c, const char *name, uint64_t wait_ms)
{
    if (!c || !name || !name[0])
        return FL_EINVAL;
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "LATCH.WAIT");
    cl_arg_str(&m, name);
    if (wait_ms) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    fl_err e = cl_call(c, &m, wait_end + c->opt.timeout_ms, CL_RETRY, &r);
    return reply_of(c, e, r, NULL);
}

fl_err fl_latch_info(fl_client *c, const char *name, struct fl_latch_info *out)
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "LATCH.INFO");
    cl_arg_str(&m, name);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_NIL) {
        e = cl_fail(c, FL_ENOTFOUND, "no latch or barrier %s", name);
    } else if (r->type == REDIS_REPLY_ERROR) {
        e = cl_reply_err(c, r);
    } else {
        const redisReply *t = cl_field(r, "type"), *st = cl_field(r, "state"),
                         *j = cl_field(r, "joiners");
        if (!t || t->type != REDIS_REPLY_STRING || !st || st->type != REDIS_REPLY_STRING) {
            e = cl_fail(c, FL_EPROTO, "LATCH.INFO: unexpected reply");
        } else {
            out->barrier = strcmp(t->str, "barrier") == 0;
            out->state = strcmp(st->str, "broken") == 0                                 ? 2
                         : strcmp(st->str, "zero") == 0 || strcmp(st->str, "full") == 0 ? 1
                                                                                        : 0;
            out->count = cl_field_u64(r, "count");
            out->remaining = cl_field_u64(r, "remaining");
            out->n_joiners = j && j->type == REDIS_REPLY_ARRAY ? j->elements : 0;
            out->broken_sid = cl_field_u64(r, "broken_sid");
        }
    }
    freeReplyObject(r);
    return e;
}
