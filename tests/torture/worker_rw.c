/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_rw.c: the torture workload "rw": one read-write lock "rw" taken in shared
 * or exclusive mode at random by sessions that are sometimes frozen past their TTL.
 *
 * Per session (ops carry "session": sid and "key": "rw"):
 *   acquire  invoke "mode" shared|exclusive; ok "token" (the grant's own token). LOCK rw sid
 *            [SHARED] WAIT ms REQ sid seq; an unknown outcome is followed by UNLOCK, as
 *            fl_lock does, and ends the session.
 *   write    exclusive holders: PUT rw-reg "x:<token>:<n>" FENCE rw token with no session (a
 *            naive client that does not check its lease); ok "rev", or fail (-STALE). Shared
 *            holders now and then try the same with their token: it must be refused.
 *   check    shared holders: FENCE.CHECK rw token (any current holder's token is accepted).
 *   release  UNLOCK; expire: the session's end, as for mutex (end_lock_session), completed
 *            when a linearizable LOCK.INFO lists the session neither as holder nor waiter.
 *
 * LOCK ... SHARED and LOCK.INFO's "holders" are not in libfencelock's public API yet
 * (fl_lock_shared is being added): this file sends them through the library's internal call
 * path (src/client/client.h: cl_call, the session's REQ seqs), so retries, redirects and
 * exactly-once seqs are the library's own. Switch to fl_lock_shared when it lands.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "worker.h"

#define RW_LOCK "rw"
#define RW_KEY "rw-reg"

/* LOCK name sid [SHARED] [WAIT ms] REQ sid seq; FL_EBUSY for nil. */
static fl_err rw_lock_req(fl_session *s, int shared, uint64_t wait_ms, uint64_t seq,
                          uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK");
    cl_arg_str(&m, RW_LOCK);
    cl_arg_u64(&m, fl_session_id(s));
    cl_arg_str(&m, "WAIT");
    cl_arg_wait(&m, wait_end);
    if (shared)
        cl_arg_str(&m, "SHARED");
    cl_arg_req(&m, fl_session_id(s), seq);
    fl_err e = cl_call(c, &m, wait_end + c->opt.timeout_ms, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
        *token = (uint64_t)r->integer;
    else if (r->type == REDIS_REPLY_NIL)
        e = FL_EBUSY;
    else if ((e = cl_reply_err(c, r)) == FL_ESESSION)
        cl_session_mark_lost(s);
    freeReplyObject(r);
    return e;
}

/* fl_lock in either mode: FL_ETIMEOUT when not granted in time. */
static fl_err rw_lock(fl_session *s, int shared, uint64_t wait_ms, uint64_t *token)
{
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = rw_lock_req(s, shared, wait_ms, seq, token);
    if (e == FL_EBUSY) {
        e = FL_ETIMEOUT;
    } else if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN) {
        /* the answer was lost: we may be queued or even hold the lock; leave both */
        cl_session_end(s);
        if (cl_session_begin(s, &seq) == FL_OK) {
            struct cl_cmd m;
            redisReply *r = NULL;
            cl_cmd_init(&m, "UNLOCK");
            cl_arg_str(&m, RW_LOCK);
            cl_arg_u64(&m, fl_session_id(s));
            cl_arg_req(&m, fl_session_id(s), seq);
            fl_client *c = cl_session_client(s);
            if (cl_call(c, &m, cl_deadline(c), CL_RETRY, &r) == FL_OK)
                freeReplyObject(r);
        }
    }
    cl_session_end(s);
    return e;
}

/* Is sid among the sids of a LOCK.INFO array field ("holders": maps, "waiters": ids)? */
static int sid_in(const redisReply *arr, uint64_t sid)
{
    if (!arr || arr->type != REDIS_REPLY_ARRAY) /* libfencelock speaks RESP2 */
        return 0;
    for (size_t i = 0; i < arr->elements; i++) {
        const redisReply *x = arr->element[i];
        if (x->type == REDIS_REPLY_INTEGER && (uint64_t)x->integer == sid)
            return 1;
        if (x->type == REDIS_REPLY_ARRAY && cl_field_u64(x, "sid") == sid)
            return 1;
    }
    return 0;
}

/* Is sid gone from lock name (no hold in either mode, no wait), by a linearizable read? */
static int rw_gone(struct worker *w, const char *name, uint64_t sid)
{
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "LOCK.INFO");
    cl_arg_str(&m, name);
    if (cl_call(w->c, &m, cl_deadline(w->c), CL_RETRY, &r) != FL_OK)
        return 0;
    int gone = 0;
    if (r->type == REDIS_REPLY_NIL)
        gone = 1;
    else if (r->type == REDIS_REPLY_ARRAY)
        gone = !sid_in(cl_field(r, "holders"), sid) && !sid_in(cl_field(r, "waiters"), sid);
    freeReplyObject(r);
    return gone;
}

static int rw_acquire(struct worker *w, int shared, uint64_t *token, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    const char *mode = shared ? "shared" : "exclusive";
    struct ev e;
    note_safe(w);
    ev_begin(&e, w, proc, "invoke", "acquire", now_ns());
    ev_add(&e, ",\"key\":\"" RW_LOCK "\",\"session\":%" PRIu64 ",\"mode\":\"%s\"", sid, mode);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = rw_lock(w->s, shared, 300 + rnd(w, 2000), token);
    const char *type = err == FL_OK ? "ok" : err == FL_ETIMEOUT ? "fail" : "info";
    ev_begin(&e, w, proc, type, "acquire", now_ns());
    ev_add(&e, ",\"key\":\"" RW_LOCK "\",\"session\":%" PRIu64 ",\"mode\":\"%s\"", sid, mode);
    if (err == FL_OK)
        ev_add(&e, ",\"token\":%" PRIu64, *token);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    *outcome = type;
    return err == FL_OK;
}

/* A fenced PUT with the grant's token and no session; the outcome stays on this proc (no
   linearizability search runs over rw, so an unknown write needs no new proc). */
static void rw_write(struct worker *w, const char *mode, uint64_t token)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    char val[64];
    snprintf(val, sizeof(val), "x:%" PRIu64 ":%ld", token, ++w->uniq);
    struct fl_write_opts fence = {.fence_name = RW_LOCK, .fence_token = token};
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "write", now_ns());
    ev_add(&e, ",\"key\":\"" RW_KEY "\",\"session\":%" PRIu64 ",\"mode\":\"%s\",\"token\":%" PRIu64,
           sid, mode, token);
    ev_str(&e, "value", val);
    ev_emit(w, &e);
    w->ops++;
    uint64_t rev = 0;
    fl_err err = fl_put(w->c, NULL, RW_KEY, val, strlen(val), &fence, &rev);
    const char *type = write_outcome(err, FL_ESTALE);
    ev_begin(&e, w, proc, type, "write", now_ns());
    ev_add(&e, ",\"key\":\"" RW_KEY "\",\"session\":%" PRIu64 ",\"mode\":\"%s\",\"token\":%" PRIu64,
           sid, mode, token);
    ev_str(&e, "value", val);
    if (err == FL_OK)
        ev_add(&e, ",\"rev\":%" PRIu64, rev);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

/* FENCE.CHECK rw token: ok, fail (-STALE) or info. */
static void rw_check(struct worker *w, uint64_t token)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "check", now_ns());
    ev_add(&e, ",\"key\":\"" RW_LOCK "\",\"session\":%" PRIu64 ",\"token\":%" PRIu64, sid, token);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_fence_check(w->c, RW_LOCK, token);
    const char *type = err == FL_OK ? "ok" : err == FL_ESTALE ? "fail" : "info";
    ev_begin(&e, w, proc, type, "check", now_ns());
    ev_add(&e, ",\"key\":\"" RW_LOCK "\",\"session\":%" PRIu64 ",\"token\":%" PRIu64, sid, token);
    if (err != FL_OK)
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

void op_rw(struct worker *w)
{
    if (!ensure_session(w))
        return;
    int shared = rnd(w, 10) < 6;
    uint64_t token;
    const char *outcome;
    if (!rw_acquire(w, shared, &token, &outcome)) {
        if (!strcmp(outcome, "info") || fl_session_is_lost(w->s))
            end_lock_session(w, RW_LOCK, rw_gone);
        return;
    }
    /* hold a while (shared holders overlap here), sometimes frozen past the TTL */
    hold_pause(w);
    if (shared) {
        rw_check(w, token);
        if (rnd(w, 4) == 0)
            rw_write(w, "shared", token);
    } else {
        rw_write(w, "exclusive", token);
    }
    gc_pause((int64_t)rnd(w, 20));
    note_safe(w);
    if (fl_session_is_lost(w->s)) {
        end_lock_session(w, RW_LOCK, rw_gone);
        return;
    }
    if (!strcmp(release(w, RW_LOCK), "info"))
        end_lock_session(w, RW_LOCK, rw_gone);
}
