/*
 * Semaphores and elections: SEM.ACQUIRE/RELEASE, ELECT.CAMPAIGN/PROCLAIM/RESIGN, ELECT.LEADER
 * and ELECT.OBSERVE (docs/protocol.md).
 *
 * A permit and a leadership are holds of the session, exactly as a lock is, so the waits
 * follow fl_lock (lock.c): every mutation carries `REQ sid seq`, a resend after a fail-over asks
 * for the wait that is left and gets the truth from the cache, and a wait whose outcome could
 * not be learned sends the release (SEM.RELEASE / ELECT.RESIGN, which also leave the queue)
 * before returning, so no grant the caller never saw outlives the call. Loss of either goes
 * through the session (fl_session_safe_until, on_lost).
 *
 * Ownership: fl_leader_info.value is malloc'ed here and freed by fl_leader_info_free.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* What differs between a semaphore and an election wait. */
struct prim {
    const char *acquire, *release; /* SEM.ACQUIRE / ELECT.CAMPAIGN, SEM.RELEASE / ELECT.RESIGN */
    const char *what;              /* for messages */
    const char *arg;               /* the argument after sid: the limit or the value */
    size_t arg_len;
};

static fl_err session_err(fl_session *s, fl_err e)
{
    if (e == FL_ESESSION)
        cl_session_mark_lost(s);
    return e;
}

/* RELEASE-like command name sid REQ sid seq: +OK or an error. */
static fl_err release_seq(fl_session *s, const char *cmd, const char *name, uint64_t seq,
                          int64_t deadline)
{
    fl_client *c = cl_session_client(s);
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, cmd);
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

/* ACQUIRE name sid arg [WAIT ms] REQ sid seq: FL_OK with *token, FL_EBUSY for nil. */
static fl_err acquire_req(fl_session *s, const struct prim *p, const char *name, uint64_t wait_ms,
                          uint64_t seq, uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, p->acquire);
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    cl_arg(&m, p->arg, p->arg_len);
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

/* The wait, its time-out and the clean-up after an unknown outcome (as lock.c's lock_wait). */
static fl_err acquire_wait(fl_session *s, const struct prim *p, const char *name, uint64_t wait_ms,
                           uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = acquire_req(s, p, name, wait_ms, seq, token);
    if (e == FL_EBUSY) {
        e = cl_fail(c, FL_ETIMEOUT, "%s %s not granted within %llu ms", p->what, name,
                    (unsigned long long)wait_ms);
    } else if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN) {
        char msg[CL_ERRMSG_MAX];
        strcpy(msg, fl_client_errmsg(c));
        cl_session_end(s);
        if (cl_session_begin(s, &seq) == FL_OK)
            release_seq(s, p->release, name, seq, cl_deadline(c));
        e = cl_fail(c, e, "%s", msg);
    }
    cl_session_end(s);
    return e;
}

static fl_err release(fl_session *s, const char *cmd, const char *name)
{
    if (!s || !name || !name[0])
        return FL_EINVAL;
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    e = release_seq(s, cmd, name, seq, cl_deadline(cl_session_client(s)));
    cl_session_end(s);
    return e;
}

fl_err fl_sem_acquire(fl_session *s, const char *name, uint32_t limit, uint64_t wait_ms,
                      uint64_t *token)
{
    if (!s || !name || !name[0] || !token || limit == 0)
        return FL_EINVAL;
    char lim[16];
    int n = snprintf(lim, sizeof lim, "%u", (unsigned)limit);
    struct prim p = {"SEM.ACQUIRE", "SEM.RELEASE", "semaphore", lim, (size_t)n};
    return acquire_wait(s, &p, name, wait_ms, token);
}

fl_err fl_sem_release(fl_session *s, const char *name)
{
    return release(s, "SEM.RELEASE", name);
}

fl_err fl_campaign(fl_session *s, const char *name, const char *value, uint64_t wait_ms,
                   uint64_t *token)
{
    if (!s || !name || !name[0] || !value || !token)
        return FL_EINVAL;
    struct prim p = {"ELECT.CAMPAIGN", "ELECT.RESIGN", "leadership of", value, strlen(value)};
    return acquire_wait(s, &p, name, wait_ms, token);
}

fl_err fl_resign(fl_session *s, const char *name)
{
    return release(s, "ELECT.RESIGN", name);
}

fl_err fl_proclaim(fl_session *s, const char *name, uint64_t token, const char *value,
                   uint64_t *rev)
{
    if (!s || !name || !name[0] || !value)
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    uint64_t seq, v = 0;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    struct cl_cmd m;
    cl_cmd_init(&m, "ELECT.PROCLAIM");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, fl_session_id(s));
    cl_arg_u64(&m, token);
    cl_arg_str(&m, value);
    cl_arg_req(&m, fl_session_id(s), seq);
    e = session_err(s, cl_call_int(c, &m, cl_deadline(c), CL_RETRY, &v));
    cl_session_end(s);
    if (e == FL_OK && rev)
        *rev = v;
    return e;
}

/* ---- observing ---- */

static fl_err fill_leader(fl_client *c, const redisReply *r, struct fl_leader_info *out)
{
    const redisReply *v = cl_field(r, "value");
    if (r->type != REDIS_REPLY_ARRAY || !v || v->type != REDIS_REPLY_STRING)
        return cl_fail(c, FL_EPROTO, "ELECT: unexpected reply");
    out->sid = cl_field_u64(r, "sid");
    out->token = cl_field_u64(r, "token");
    out->since_rev = cl_field_u64(r, "since_rev");
    out->rev = cl_field_u64(r, "rev");
    out->value = malloc(v->len + 1);
    if (!out->value)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    memcpy(out->value, v->str, v->len);
    out->value[v->len] = '\0';
    out->value_len = v->len;
    return FL_OK;
}

/* Send m (a read) until deadline; nil is `nil_err` with `nil_msg`. */
static fl_err leader_call(fl_client *c, struct cl_cmd *m, int64_t deadline, fl_err nil_err,
                          const char *nil_msg, struct fl_leader_info *out)
{
    redisReply *r;
    fl_err e = cl_call(c, m, deadline, CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_NIL)
        e = cl_fail(c, nil_err, "%s", nil_msg);
    else if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else
        e = fill_leader(c, r, out);
    freeReplyObject(r);
    if (e)
        fl_leader_info_free(out);
    return e;
}

fl_err fl_leader(fl_client *c, const char *name, struct fl_leader_info *out)
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    cl_cmd_init(&m, "ELECT.LEADER");
    cl_arg_str(&m, name);
    return leader_call(c, &m, cl_deadline(c), FL_ENOTFOUND, "nobody leads", out);
}

/*
 * One ELECT.OBSERVE ... AFTER after_rev WAIT ms. cl_call resends the same AFTER to the new
 * leader after a fail-over (-NOTLEADER of a parked observer, a lost connection), so a change
 * made meanwhile is answered, and never an older state than the one at after_rev.
 */
fl_err fl_observe(fl_client *c, const char *name, uint64_t after_rev, uint64_t wait_ms,
                  struct fl_leader_info *out)
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    cl_cmd_init(&m, "ELECT.OBSERVE");
    cl_arg_str(&m, name);
    if (after_rev) {
        cl_arg_str(&m, "AFTER");
        cl_arg_u64(&m, after_rev);
    }
    if (wait_ms) {
        cl_arg_str(&m, "WAIT");
        cl_arg_wait(&m, wait_end);
    }
    return leader_call(c, &m, wait_end + c->opt.timeout_ms, FL_ETIMEOUT,
                       "no change within the wait", out);
}

void fl_leader_info_free(struct fl_leader_info *info)
{
    if (!info)
        return;
    free(info->value);
    info->value = NULL;
    info->value_len = 0;
}
