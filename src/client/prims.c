/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Semaphores and elections: SEM.ACQUIRE/RELEASE, SEM.SETLIMIT (the operator's limit, and its
 * RESET), ELECT.CAMPAIGN/PROCLAIM/RESIGN, ELECT.LEADER and ELECT.OBSERVE (docs/protocol.md).
 *
 * A permit and a leadership are holds of the session, exactly as a lock is, so they are
 * taken and given back by acquire.c like fl_lock (exactly once across fail-overs; an unknown
 * outcome is released before the call returns). Loss of either goes through the session
 * (fl_session_safe_until, on_lost).
 *
 * Ownership: fl_leader_info.value is malloc'ed here and freed by fl_leader_info_free.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

fl_err fl_sem_acquire(fl_session *s, const char *name, uint32_t limit, uint64_t wait_ms,
                      uint64_t *token)
{
    return fl_sem_acquire_n(s, name, limit, 1, wait_ms, token);
}

/* PERMITS is sent only for k > 1: the request is then byte for byte fl_sem_acquire's. */
fl_err fl_sem_acquire_n(fl_session *s, const char *name, uint32_t limit, uint32_t permits,
                        uint64_t wait_ms, uint64_t *token)
{
    if (!s || !name || !name[0] || !token || limit == 0 || permits == 0 || permits > limit)
        return FL_EINVAL;
    char lim[16], k[16];
    int n = snprintf(lim, sizeof lim, "%u", (unsigned)limit);
    snprintf(k, sizeof k, "%u", (unsigned)permits);
    struct cl_hold h = {.acquire = "SEM.ACQUIRE",
                        .release = "SEM.RELEASE",
                        .what = "semaphore",
                        .arg = lim,
                        .arg_len = (size_t)n,
                        .opt = permits > 1 ? "PERMITS" : NULL,
                        .opt_val = k};
    return cl_acquire(s, &h, name, wait_ms, token);
}

fl_err fl_sem_release(fl_session *s, const char *name)
{
    return cl_release(s, "SEM.RELEASE", name);
}

/* SEM.SETLIMIT's reply: +OK, or (RESET) an integer into *v. */
static fl_err setlimit_reply(fl_client *c, fl_err e, redisReply *r, uint64_t *v)
{
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type == REDIS_REPLY_INTEGER && v)
        *v = (uint64_t)r->integer;
    else if (r->type != REDIS_REPLY_STATUS)
        e = cl_fail(c, FL_EPROTO, "unexpected reply type %d", r->type);
    freeReplyObject(r);
    return e;
}

fl_err fl_sem_setlimit(fl_client *c, const char *name, uint32_t limit)
{
    if (!c || !name || !name[0] || limit == 0)
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "SEM.SETLIMIT");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, limit);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r); /* the same limit: no change */
    return setlimit_reply(c, e, r, NULL);
}

fl_err fl_sem_limit_reset(fl_client *c, const char *name, int *removed)
{
    if (!c || !name || !name[0])
        return FL_EINVAL;
    struct cl_cmd m;
    redisReply *r = NULL;
    uint64_t v = 0;
    cl_cmd_init(&m, "SEM.SETLIMIT");
    cl_arg_str(&m, name);
    cl_arg_str(&m, "RESET");
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r); /* again: removes nothing more */
    e = setlimit_reply(c, e, r, &v);
    if (e == FL_OK && removed)
        *removed = v != 0;
    return e;
}

fl_err fl_campaign(fl_session *s, const char *name, const char *value, uint64_t wait_ms,
                   uint64_t *token)
{
    if (!s || !name || !name[0] || !value || !token)
        return FL_EINVAL;
    struct cl_hold h = {.acquire = "ELECT.CAMPAIGN",
                        .release = "ELECT.RESIGN",
                        .what = "leadership of",
                        .arg = value,
                        .arg_len = strlen(value)};
    return cl_acquire(s, &h, name, wait_ms, token);
}

fl_err fl_resign(fl_session *s, const char *name)
{
    return cl_release(s, "ELECT.RESIGN", name);
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
    e = cl_session_err(s, cl_call_int(c, &m, cl_deadline(c), CL_RETRY, &v));
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
