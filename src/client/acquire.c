/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one acquire of the library: a lock (exclusive or shared), a semaphore permit and an
 * election's leadership are all holds of a session, taken and given back the same way.
 *
 * Every acquire and release carries `REQ sid seq`. An acquire resent after a lost answer with
 * the same seq gets the truth from the servers (the token if this session now holds it, else
 * it waits again for what is left of the wait), so a grant happens once however often the
 * request is repeated. A wait whose outcome could not be learned sends the release (UNLOCK,
 * SEM.RELEASE, ELECT.RESIGN: each also leaves the queue) before returning, so no grant the
 * caller never saw outlives the call.
 */
#include <string.h>

#include "client/client.h"

/* A session lost on the servers is lost here too. */
fl_err cl_session_err(fl_session *s, fl_err e)
{
    if (e == FL_ESESSION)
        cl_session_mark_lost(s);
    return e;
}

fl_err cl_release_seq(fl_session *s, const char *cmd, const char *name, uint64_t seq,
                      int64_t deadline)
{
    fl_client *c = cl_session_client(s);
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, cmd);
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    if (!strcmp(cmd, "UNLOCK"))
        cl_arg_trace(&m);
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, deadline, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type != REDIS_REPLY_STATUS)
        e = cl_session_err(s, cl_reply_err(c, r));
    freeReplyObject(r);
    return e;
}

fl_err cl_release(fl_session *s, const char *cmd, const char *name)
{
    if (!s || !name || !name[0])
        return FL_EINVAL;
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = cl_release_seq(s, cmd, name, seq, cl_deadline(cl_session_client(s)));
    cl_session_end(s);
    return e;
}

fl_err cl_acquire_req(fl_session *s, const struct cl_hold *h, const char *name, uint64_t wait_ms,
                      uint64_t seq, uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, h->acquire);
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    if (h->arg)
        cl_arg(&m, h->arg, h->arg_len);
    if (h->opt) {
        cl_arg_str(&m, h->opt);
        cl_arg_str(&m, h->opt_val);
    }
    if (h->value) {
        cl_arg_str(&m, "VALUE");
        cl_arg(&m, h->value, h->value_len);
    }
    if (h->maxhold_ms) {
        cl_arg_str(&m, "MAXHOLD");
        cl_arg_u64(&m, h->maxhold_ms);
    }
    if (wait_ms) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    if (!strcmp(h->acquire, "LOCK"))
        cl_arg_trace(&m);
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, wait_end + c->opt.timeout_ms, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        *token = (uint64_t)r->integer;
    else if (r->type == REDIS_REPLY_NIL)
        e = FL_EBUSY;
    else
        e = cl_session_err(s, cl_reply_err(c, r));
    freeReplyObject(r);
    return e;
}

fl_err cl_acquire(fl_session *s, const struct cl_hold *h, const char *name, uint64_t wait_ms,
                  uint64_t *token)
{
    if (!s || !name || !name[0] || !token)
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = cl_acquire_req(s, h, name, wait_ms, seq, token);
    if (e == FL_EBUSY) {
        e = cl_fail(c, FL_ETIMEOUT, "%s %s not granted within %llu ms", h->what, name,
                    (unsigned long long)wait_ms);
    } else if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN) {
        /* We never saw the answer: the session may be queued, or even hold it. */
        char msg[CL_ERRMSG_MAX];
        strcpy(msg, fl_client_errmsg(c));
        cl_session_end(s);
        if (cl_session_begin(s, &seq) == FL_OK)
            cl_release_seq(s, h->release, name, seq, cl_deadline(c));
        e = cl_fail(c, e, "%s", msg);
    }
    cl_session_end(s);
    return e;
}
