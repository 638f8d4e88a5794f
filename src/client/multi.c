/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LOCK.MULTI: several locks in one request, all granted in one log entry or none.
 *
 * The same exactly-once rule as every acquire (acquire.c): one REQ seq per call, resent as is
 * after a lost answer, so the grant happens once; the reply is one token per name in the order
 * given. An outcome that could not be learned releases every name (UNLOCK of a name the
 * session waits for leaves all of the request's queues; of a held name, that name), so nothing
 * the caller never saw outlives the call. Nothing is allocated: the command is built on the
 * stack (CL_ARGS_MAX bounds it, FL_LOCK_MULTI_MAX names).
 */
#include <string.h>

#include "client/client.h"

_Static_assert(8 + 3 * FL_LOCK_MULTI_MAX <= CL_ARGS_MAX, "a LOCK.MULTI of the most names fits");

static fl_err check_args(size_t n, const char *const *names)
{
    if (n == 0 || n > FL_LOCK_MULTI_MAX || !names)
        return FL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !names[i][0])
            return FL_EINVAL;
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return FL_EINVAL; /* the server refuses it too */
    }
    return FL_OK;
}

static fl_err multi_req(fl_session *s, size_t n, const char *const *names, const uint8_t *shared,
                        uint64_t wait_ms, uint64_t seq, uint64_t *tokens)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.MULTI");
    cl_arg_u64(&m, fl_session_id(s));
    cl_arg_u64(&m, n);
    for (size_t i = 0; i < n; i++)
        cl_arg_str(&m, names[i]);
    for (size_t i = 0; shared && i < n; i++)
        if (shared[i]) {
            cl_arg_str(&m, "SHARED");
            cl_arg_str(&m, names[i]);
        }
    if (wait_ms) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, wait_end + c->opt.timeout_ms, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == n) {
        for (size_t i = 0; i < n && !e; i++) {
            const redisReply *t = r->element[i];
            if (t->type != REDIS_REPLY_INTEGER || t->integer <= 0)
                e = cl_fail(c, FL_EPROTO, "LOCK.MULTI: unexpected token");
            else
                tokens[i] = (uint64_t)t->integer;
        }
    } else if (r->type == REDIS_REPLY_NIL) {
        e = FL_EBUSY;
    } else if (r->type == REDIS_REPLY_ERROR) {
        e = cl_session_err(s, cl_reply_err(c, r));
    } else {
        e = cl_fail(c, FL_EPROTO, "LOCK.MULTI: unexpected reply");
    }
    freeReplyObject(r);
    return e;
}

/* Every name, each with a seq of its own; the first error. */
static fl_err release_all(fl_session *s, size_t n, const char *const *names, bool ignore_notholder)
{
    fl_client *c = cl_session_client(s);
    fl_err first = FL_OK;
    for (size_t i = 0; i < n; i++) {
        uint64_t seq;
        fl_err e = cl_session_begin(s, &seq);
        if (e == FL_OK) {
            e = cl_release_seq(s, "UNLOCK", names[i], seq, cl_deadline(c));
            cl_session_end(s);
        }
        if (e == FL_ENOTHOLDER && ignore_notholder)
            e = FL_OK;
        if (e && !first)
            first = e;
    }
    return first;
}

fl_err fl_lock_multi(fl_session *s, size_t n, const char *const *names, const uint8_t *shared,
                     uint64_t wait_ms, uint64_t *tokens)
{
    if (!s || !tokens || check_args(n, names))
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = multi_req(s, n, names, shared, wait_ms, seq, tokens);
    cl_session_end(s);
    if (e == FL_EBUSY) {
        e = cl_fail(c, FL_ETIMEOUT, "%zu locks (%s, ...) not granted within %llu ms", n, names[0],
                    (unsigned long long)wait_ms);
    } else if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN) {
        /* We never saw the answer: the session may be queued, or even hold them all. */
        char msg[CL_ERRMSG_MAX];
        strcpy(msg, fl_client_errmsg(c));
        release_all(s, n, names, true);
        e = cl_fail(c, e, "%s", msg);
    }
    return e;
}

fl_err fl_unlock_multi(fl_session *s, size_t n, const char *const *names)
{
    if (!s || check_args(n, names))
        return FL_EINVAL;
    return release_all(s, n, names, false);
}
