/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions: open, the keepalive thread, the local safe deadline, loss, close.
 *
 * State of a session (guarded by s->mu):
 *   LIVE --keepalive ack--> LIVE (safe_until moves forward)
 *   LIVE --NOSESSION from any call, or now >= safe_until--> LOST (terminal; on_lost runs
 *        once, on the keepalive thread: ka_thread)
 *   LIVE|LOST --fl_session_close/abandon--> stopping, thread joined, freed
 *
 * safe_until is counted from the moment a keepalive was *sent* (the server resets the
 * deadline on arrival, which is later, and SESSION.KEEPALIVE is answered only after a read
 * barrier, so no other leader had taken office by then); minus a margin for clock rates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

struct fl_session {
    fl_client *c;
    uint64_t sid, ttl_ms;
    pthread_mutex_t mu;    /* guards everything below */
    pthread_cond_t cv;     /* wakes the keepalive thread: stop or loss */
    pthread_mutex_t op_mu; /* held across a mutating call: seqs reach the server in order */
    uint64_t seq;
    int64_t safe_until;
    bool lost, stopping, cb_done;
    void (*on_lost)(fl_session *, void *);
    void *ctx;
    pthread_t ka;
    bool ka_started;
};

fl_client *cl_session_client(fl_session *s)
{
    return s->c;
}

/* What the servers granted, less the margin for this machine's clock running slow. */
static int64_t safe_span(const fl_session *s, uint64_t granted_ms)
{
    const struct fl_options *o = &s->c->opt;
    int64_t drift = (int64_t)(granted_ms * (uint64_t)o->drift_ppm / CL_PPM);
    return (int64_t)granted_ms - o->margin_ms - drift;
}

int64_t cl_safe_span(const fl_session *s, uint64_t granted_ms)
{
    return safe_span(s, granted_ms);
}

static bool lost_locked(fl_session *s)
{
    if (!s->lost && fl_now_ms() >= s->safe_until) {
        s->lost = true;
        pthread_cond_broadcast(&s->cv);
    }
    return s->lost;
}

int fl_session_is_lost(fl_session *s)
{
    pthread_mutex_lock(&s->mu);
    bool lost = lost_locked(s);
    pthread_mutex_unlock(&s->mu);
    return lost;
}

int64_t fl_session_safe_until(fl_session *s)
{
    pthread_mutex_lock(&s->mu);
    int64_t t = lost_locked(s) ? 0 : s->safe_until;
    pthread_mutex_unlock(&s->mu);
    return t;
}

void cl_session_mark_lost(fl_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->lost = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

uint64_t fl_session_id(const fl_session *s)
{
    return s->sid;
}

uint64_t fl_session_ttl(const fl_session *s)
{
    return s->ttl_ms;
}

fl_err cl_session_begin(fl_session *s, uint64_t *seq)
{
    if (fl_session_is_lost(s))
        return cl_fail(s->c, FL_ESESSION, "session %llu is lost", (unsigned long long)s->sid);
    pthread_mutex_lock(&s->op_mu);
    pthread_mutex_lock(&s->mu);
    *seq = ++s->seq;
    pthread_mutex_unlock(&s->mu);
    return FL_OK;
}

void cl_session_end(fl_session *s)
{
    pthread_mutex_unlock(&s->op_mu);
}

/* Run the loss callback once, outside the lock. Called with s->mu held; returns with it held. */
static void fire_lost(fl_session *s)
{
    if (s->cb_done || !s->on_lost)
        return;
    s->cb_done = true;
    void (*cb)(fl_session *, void *) = s->on_lost;
    void *ctx = s->ctx;
    pthread_mutex_unlock(&s->mu);
    cb(s, ctx);
    pthread_mutex_lock(&s->mu);
}

void fl_session_on_lost(fl_session *s, void (*cb)(fl_session *s, void *ctx), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->on_lost = cb;
    s->ctx = ctx;
    s->cb_done = false;
    if (lost_locked(s))
        fire_lost(s);
    pthread_mutex_unlock(&s->mu);
}

/* One SESSION.KEEPALIVE; the deadline is the safe deadline: no later answer is of use. */
static fl_err keepalive_once(fl_client *c, uint64_t sid, int64_t deadline, uint64_t *ttl)
{
    struct cl_cmd m;
    cl_cmd_init(&m, "SESSION.KEEPALIVE");
    cl_arg_u64(&m, sid);
    return cl_call_int(c, &m, deadline, CL_RETRY, ttl);
}

static struct timespec abs_ts(int64_t mono_ms)
{
    return (struct timespec){.tv_sec = mono_ms / 1000, .tv_nsec = (mono_ms % 1000) * 1000000};
}

/* Keepalive pacing (see ka_thread). */
#define KA_PER_TTL 3
#define KA_RETRIES_PER_TTL 10
#define KA_RETRY_MIN_MS 20

/*
 * The keepalive thread: renew every TTL/3; after a failure retry sooner (TTL/10, at least
 * 20 ms) until the safe deadline passes. The thread owns the transition to LOST by deadline.
 */
static void *ka_thread(void *arg)
{
    fl_session *s = arg;
    int64_t interval = (int64_t)s->ttl_ms / KA_PER_TTL;
    int64_t retry = (int64_t)s->ttl_ms / KA_RETRIES_PER_TTL;
    retry = retry < KA_RETRY_MIN_MS ? KA_RETRY_MIN_MS : retry;
    int64_t next = fl_now_ms() + interval;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && !lost_locked(s)) {
        int64_t wake = next < s->safe_until ? next : s->safe_until;
        struct timespec ts = abs_ts(wake);
        if (fl_now_ms() < wake) {
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            continue;
        }
        int64_t deadline = s->safe_until;
        pthread_mutex_unlock(&s->mu);
        int64_t sent = fl_now_ms();
        uint64_t ttl = 0;
        fl_err e = keepalive_once(s->c, s->sid, deadline, &ttl);
        pthread_mutex_lock(&s->mu);
        if (e == FL_OK) {
            uint64_t granted = ttl < s->ttl_ms ? ttl : s->ttl_ms;
            if (sent + safe_span(s, granted) > s->safe_until)
                s->safe_until = sent + safe_span(s, granted);
            next = sent + interval;
        } else if (e == FL_ESESSION) {
            s->lost = true;
        } else {
            next = fl_now_ms() + retry;
        }
    }
    if (s->lost) {
        s->safe_until = 0;
        fire_lost(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* SESSION.OPEN; a retry after a lost answer may leave an unused session that expires. */
/* SESSION.OPEN ttl [LOCKDELAY ms] [NAME name] [REENTRANT [MAXCOUNT n]]; max_count 0 without
 * MAXCOUNT (the server's default). */
static fl_err grant(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms, const char *name,
                    bool reentrant, uint32_t max_count, uint64_t *sid)
{
    if (!c || ttl_ms == 0 || !sid)
        return FL_EINVAL;
    struct cl_cmd m;
    cl_cmd_init(&m, "SESSION.OPEN");
    cl_arg_u64(&m, ttl_ms);
    if (lockdelay_ms) {
        cl_arg_str(&m, "LOCKDELAY");
        cl_arg_u64(&m, lockdelay_ms);
    }
    if (name && name[0]) {
        cl_arg_str(&m, "NAME");
        cl_arg_str(&m, name);
    }
    if (reentrant)
        cl_arg_str(&m, "REENTRANT");
    if (reentrant && max_count) {
        cl_arg_str(&m, "MAXCOUNT");
        cl_arg_u64(&m, max_count);
    }
    return cl_call_int(c, &m, cl_deadline(c), CL_RETRY, sid);
}

fl_err fl_session_grant(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms, const char *name,
                        uint64_t *sid)
{
    return grant(c, ttl_ms, lockdelay_ms, name, false, 0, sid);
}

fl_err fl_session_keepalive_id(fl_client *c, uint64_t sid, uint64_t *ttl_ms)
{
    uint64_t ttl = 0;
    fl_err e = keepalive_once(c, sid, cl_deadline(c), &ttl);
    if (e == FL_OK && ttl_ms)
        *ttl_ms = ttl;
    return e;
}

/* SESSION.CLOSE sid [REQ sid seq], or SESSION.REVOKE sid (seq 0). */
static fl_err end_sid(fl_client *c, const char *cmd, uint64_t sid, uint64_t seq)
{
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, cmd);
    cl_arg_u64(&m, sid);
    if (seq)
        cl_arg_req(&m, sid, seq);
    fl_err e = cl_call(c, &m, cl_deadline(c), seq ? CL_RETRY : 0, &r);
    if (e)
        return e;
    if (!(r->type == REDIS_REPLY_STATUS))
        e = cl_reply_err(c, r);
    freeReplyObject(r);
    return e;
}

static fl_err close_sid(fl_client *c, uint64_t sid, uint64_t seq)
{
    return end_sid(c, "SESSION.CLOSE", sid, seq);
}

fl_err fl_session_close_id(fl_client *c, uint64_t sid)
{
    return close_sid(c, sid, 0);
}

fl_err fl_session_revoke_id(fl_client *c, uint64_t sid)
{
    return end_sid(c, "SESSION.REVOKE", sid, 0);
}

static fl_err open_session(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms, const char *name,
                           bool reentrant, uint32_t max_count, fl_session **out)
{
    if (!c || !out || ttl_ms == 0)
        return FL_EINVAL;
    fl_session *s = calloc(1, sizeof(*s));
    if (!s)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    s->c = c;
    s->ttl_ms = ttl_ms;
    int64_t sent = fl_now_ms();
    fl_err e = grant(c, ttl_ms, lockdelay_ms, name, reentrant, max_count, &s->sid);
    if (e) {
        free(s);
        return e;
    }
    s->safe_until = sent + safe_span(s, ttl_ms);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->op_mu, NULL);
    if (pthread_create(&s->ka, NULL, ka_thread, s) != 0) {
        close_sid(c, s->sid, 0);
        fl_session_abandon(s);
        return cl_fail(c, FL_ENOMEM, "cannot start the keepalive thread");
    }
    s->ka_started = true;
    *out = s;
    return FL_OK;
}

fl_err fl_session_open(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms, const char *name,
                       fl_session **out)
{
    return open_session(c, ttl_ms, lockdelay_ms, name, false, 0, out);
}

fl_err fl_session_open_reentrant(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms,
                                 const char *name, uint32_t max_count, fl_session **out)
{
    return open_session(c, ttl_ms, lockdelay_ms, name, true, max_count, out);
}

static void stop_and_free(fl_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->ka_started)
        pthread_join(s->ka, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->op_mu);
    free(s);
}

void fl_session_abandon(fl_session *s)
{
    if (s)
        stop_and_free(s);
}

/* Closing a session that is lost locally still ends it on the servers if it lives there. */
fl_err fl_session_close(fl_session *s)
{
    if (!s)
        return FL_EINVAL;
    pthread_mutex_lock(&s->op_mu); /* after any mutating call in flight */
    pthread_mutex_lock(&s->mu);
    uint64_t seq = ++s->seq;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->op_mu);
    /* Stop renewing first: the close is the session's last word. */
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->ka_started)
        pthread_join(s->ka, NULL);
    s->ka_started = false;
    fl_err e = close_sid(s->c, s->sid, seq);
    stop_and_free(s);
    return e;
}
