/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_prims.c: the torture workloads "sem" and "elect": a semaphore "sem" of
 * limit 3 and an election "elect", held by sessions that are sometimes frozen past their TTL.
 *
 * sem, per session (ops carry "session" and "key": "sem"):
 *   acquire  SEM.ACQUIRE sem sid 3 [PERMITS k] WAIT ms REQ sid seq: 1..3 permits at once
 *            (weighted, up to the whole limit: a request for 3 at the head of the queue
 *            must not be overtaken by later requests for fewer), "permits" in the invoke; ok
 *            "token". An unknown outcome is followed by SEM.RELEASE and ends the session (as
 *            fl_lock does for a lock). The checker sums the permits of the live holds (never
 *            more than 3), by the clock and by the revisions of the accepted fenced writes.
 *   write    "key": "sem-reg": PUT sem-reg "s:<token>:<n>" FENCE sem token, no session (a
 *            naive client); ok "rev", fail (-STALE) or info. "probe": true when, before
 *            it was sent, a linearizable SEM.INFO showed the permit gone (the holder was
 *            frozen past its safe deadline): such a write must be refused.
 *   release  SEM.RELEASE; expire: the session's end (end_lock_session), ok once SEM.INFO
 *            lists the session neither as holder nor waiter.
 *   queue    before one acquire in two: SEM.INFO (linearizable), ok "waiters" (the queued
 *            sids, FIFO) and "wanted" (their permits), fail "error". A session queued at
 *            the read and granted later must not see an acquire invoked after the read
 *            granted first (the FIFO rule: nobody overtakes the queue).
 * elect, candidates: the same with ELECT.CAMPAIGN elect sid value WAIT ms ("acquire"), then
 *   ELECT.PROCLAIM ("proclaim": ok "rev", fail -STALE), a fenced PUT elect-reg ("write",
 *   "probe" as above, decided by ELECT.LEADER), and ELECT.RESIGN ("release").
 * elect, the observer (--observe): ELECT.OBSERVE elect AFTER rev WAIT ms in a loop, one op
 *   "observe" per call on one proc ("observer": its proc): invoke "after"; ok "sid", "token",
 *   "rev", "since_rev" (sid 0: leaderless), "compacted" (1: the current state, changes since
 *   "after" may be skipped); fail: nil (nothing changed in time), or "error". torture.py
 *   runs several; the checker holds them against each other (no change one saw skipped by
 *   another's uncompacted answer).
 *
 * None of these commands is in libfencelock's public API yet: they go through its internal
 * call path (src/client/client.h), so retries, redirects and exactly-once seqs are its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "worker.h"

#define SEM_NAME "sem"
#define SEM_KEY "sem-reg"
#define SEM_LIMIT 3
#define SEM_MAX_PERMITS 3 /* an acquisition takes 1..this permits (the whole limit) */
#define EL_NAME "elect"
#define EL_KEY "elect-reg"

struct prim {
    const char *name, *key, *release_cmd;
    int elect;
};

static const struct prim P_SEM = {SEM_NAME, SEM_KEY, "SEM.RELEASE", 0};
static const struct prim P_EL = {EL_NAME, EL_KEY, "ELECT.RESIGN", 1};

/* A session's mutation m (its REQ added here) as an integer reply; FL_EBUSY for nil. */
static fl_err prim_call_int(fl_session *s, struct cl_cmd *m, int64_t deadline, uint64_t *v)
{
    uint64_t seq;
    fl_err e = cl_session_begin(s, &seq);
    if (e)
        return e;
    fl_client *c = cl_session_client(s);
    cl_arg_req(m, fl_session_id(s), seq);
    redisReply *r = NULL;
    e = cl_call(c, m, deadline, CL_RETRY, &r);
    if (e == FL_OK) {
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
            *v = (uint64_t)r->integer;
        else if (r->type == REDIS_REPLY_NIL)
            e = FL_EBUSY;
        else if (r->type == REDIS_REPLY_STATUS)
            *v = 0;
        else if ((e = cl_reply_err(c, r)) == FL_ESESSION)
            cl_session_mark_lost(s);
        freeReplyObject(r);
    }
    cl_session_end(s);
    return e;
}

static fl_err prim_release(fl_session *s, const struct prim *p)
{
    struct cl_cmd m;
    uint64_t v;
    cl_cmd_init(&m, p->release_cmd);
    cl_arg_str(&m, p->name);
    cl_arg_u64(&m, fl_session_id(s));
    return prim_call_int(s, &m, cl_deadline(cl_session_client(s)), &v);
}

/* SEM.ACQUIRE / ELECT.CAMPAIGN with WAIT: FL_ETIMEOUT when not granted in time. */
static fl_err prim_acquire(fl_session *s, const struct prim *p, uint64_t permits, uint64_t wait_ms,
                           uint64_t *token)
{
    fl_client *c = cl_session_client(s);
    int64_t wait_end = fl_now_ms() + (int64_t)wait_ms;
    struct cl_cmd m;
    cl_cmd_init(&m, p->elect ? "ELECT.CAMPAIGN" : "SEM.ACQUIRE");
    cl_arg_str(&m, p->name);
    cl_arg_u64(&m, fl_session_id(s));
    if (p->elect)
        cl_arg_u64(&m, fl_session_id(s)); /* the campaign value: who campaigns */
    else
        cl_arg_u64(&m, SEM_LIMIT);
    if (!p->elect && permits > 1) {
        cl_arg_str(&m, "PERMITS");
        cl_arg_u64(&m, permits);
    }
    cl_arg_str(&m, "WAIT");
    cl_arg_wait(&m, wait_end);
    fl_err e = prim_call_int(s, &m, wait_end + c->opt.timeout_ms, token);
    if (e == FL_EBUSY)
        return FL_ETIMEOUT;
    if (e == FL_EUNAVAILABLE || e == FL_EUNKNOWN)
        (void)prim_release(s, p); /* we may be queued or even hold it: leave both */
    return e;
}

/* Does sid hold a permit of / lead p (or wait for a permit), by a linearizable read? 1 yes,
   0 no, -1 unknown. */
static int prim_holds(struct worker *w, const struct prim *p, uint64_t sid)
{
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, p->elect ? "ELECT.LEADER" : "SEM.INFO");
    cl_arg_str(&m, p->name);
    if (cl_call(w->c, &m, cl_deadline(w->c), CL_RETRY, &r) != FL_OK)
        return -1;
    int in = -1;
    if (r->type == REDIS_REPLY_NIL) {
        in = 0;
    } else if (r->type == REDIS_REPLY_ARRAY && p->elect) {
        in = cl_field_u64(r, "sid") == sid;
    } else if (r->type == REDIS_REPLY_ARRAY) {
        in = 0;
        const redisReply *h = cl_field(r, "holders"), *q = cl_field(r, "waiters");
        for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i < h->elements; i++)
            if (cl_field_u64(h->element[i], "sid") == sid)
                in = 1;
        for (size_t i = 0; q && q->type == REDIS_REPLY_ARRAY && i < q->elements; i++)
            if (q->element[i]->type == REDIS_REPLY_INTEGER &&
                (uint64_t)q->element[i]->integer == sid)
                in = 1;
    }
    freeReplyObject(r);
    return in;
}

static int sem_gone(struct worker *w, const char *name, uint64_t sid)
{
    (void)name;
    return prim_holds(w, &P_SEM, sid) == 0;
}

static int elect_gone(struct worker *w, const char *name, uint64_t sid)
{
    (void)name;
    return prim_holds(w, &P_EL, sid) == 0;
}

static void ev_head(struct ev *e, const struct prim *p, uint64_t sid)
{
    ev_add(e, ",\"key\":\"%s\",\"session\":%" PRIu64, p->name, sid);
}

static int op_acquire(struct worker *w, const struct prim *p, uint64_t *token, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    uint64_t permits = p->elect ? 1 : 1 + rnd(w, SEM_MAX_PERMITS);
    note_safe(w);
    ev_begin(&e, w, proc, "invoke", "acquire", now_ns());
    ev_head(&e, p, sid);
    if (!p->elect)
        ev_add(&e, ",\"permits\":%" PRIu64, permits);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = prim_acquire(w->s, p, permits, 300 + rnd(w, 2000), token);
    const char *type = err == FL_OK ? "ok" : err == FL_ETIMEOUT ? "fail" : "info";
    ev_begin(&e, w, proc, type, "acquire", now_ns());
    ev_head(&e, p, sid);
    if (err == FL_OK)
        ev_add(&e, ",\"token\":%" PRIu64, *token);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    *outcome = type;
    return err == FL_OK;
}

/* ELECT.PROCLAIM elect sid token value: ok "rev", fail (-STALE) or info. */
static void op_proclaim(struct worker *w, uint64_t token)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "proclaim", now_ns());
    ev_head(&e, &P_EL, sid);
    ev_add(&e, ",\"token\":%" PRIu64, token);
    ev_emit(w, &e);
    w->ops++;
    struct cl_cmd m;
    cl_cmd_init(&m, "ELECT.PROCLAIM");
    cl_arg_str(&m, EL_NAME);
    cl_arg_u64(&m, sid);
    cl_arg_u64(&m, token);
    cl_arg_u64(&m, (uint64_t)++w->uniq);
    uint64_t rev = 0;
    fl_err err = prim_call_int(w->s, &m, cl_deadline(w->c), &rev);
    const char *type = write_outcome(err, FL_ESTALE);
    ev_begin(&e, w, proc, type, "proclaim", now_ns());
    ev_head(&e, &P_EL, sid);
    ev_add(&e, ",\"token\":%" PRIu64, token);
    if (err == FL_OK)
        ev_add(&e, ",\"rev\":%" PRIu64, rev);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

/* A fenced PUT with the grant's token and no session; probe: the grant was seen gone. */
static void op_write(struct worker *w, const struct prim *p, uint64_t token, int probe)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    char val[64];
    snprintf(val, sizeof(val), "s:%" PRIu64 ":%ld", token, ++w->uniq);
    struct fl_write_opts fence = {.fence_name = p->name, .fence_token = token};
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "write", now_ns());
    ev_add(&e, ",\"key\":\"%s\",\"session\":%" PRIu64, p->key, sid); /* the PUT's key */
    ev_add(&e, ",\"token\":%" PRIu64 ",\"probe\":%s", token, probe ? "true" : "false");
    ev_str(&e, "value", val);
    ev_emit(w, &e);
    w->ops++;
    uint64_t rev = 0;
    fl_err err = fl_put(w->c, NULL, p->key, val, strlen(val), &fence, &rev);
    const char *type = write_outcome(err, FL_ESTALE);
    ev_begin(&e, w, proc, type, "write", now_ns());
    ev_add(&e, ",\"key\":\"%s\",\"session\":%" PRIu64 ",\"token\":%" PRIu64, p->key, sid, token);
    ev_str(&e, "value", val); /* the watch checker matches acknowledged PUTs by key and value */
    if (err == FL_OK)
        ev_add(&e, ",\"rev\":%" PRIu64, rev);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

static const char *op_release(struct worker *w, const struct prim *p)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "release", now_ns());
    ev_head(&e, p, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = prim_release(w->s, p);
    const char *type = err == FL_OK ? "ok" : "info";
    ev_begin(&e, w, proc, type, "release", now_ns());
    ev_head(&e, p, sid);
    if (err != FL_OK)
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    return type;
}

/* SEM.INFO as the op "queue": who waits, in order, and for how many permits. */
static void op_queue(struct worker *w)
{
    int proc = proc_of(w);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "queue", now_ns());
    ev_add(&e, ",\"key\":\"%s\"", SEM_NAME);
    ev_emit(w, &e);
    w->ops++;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "SEM.INFO");
    cl_arg_str(&m, SEM_NAME);
    fl_err err = cl_call(w->c, &m, cl_deadline(w->c), CL_RETRY, &r);
    /* a read changes nothing: no answer is a "fail" with "error" */
    const char *type = err == FL_OK && (r->type == REDIS_REPLY_ARRAY || r->type == REDIS_REPLY_NIL)
                           ? "ok"
                           : "fail";
    if (err == FL_OK && *type == 'f')
        err = cl_reply_err(w->c, r);
    ev_begin(&e, w, proc, type, "queue", now_ns());
    ev_add(&e, ",\"key\":\"%s\"", SEM_NAME);
    if (*type == 'o') {
        const char *keys[2] = {"waiters", "wanted"};
        for (int a = 0; a < 2; a++) {
            const redisReply *q = r->type == REDIS_REPLY_ARRAY ? cl_field(r, keys[a]) : NULL;
            ev_add(&e, ",\"%s\":[", keys[a]);
            for (size_t i = 0; q && q->type == REDIS_REPLY_ARRAY && i < q->elements && i < 256; i++)
                ev_add(&e, "%s%lld", i ? "," : "", q->element[i]->integer);
            ev_add(&e, "]");
        }
    } else {
        ev_error(&e, w, err);
    }
    if (r)
        freeReplyObject(r);
    ev_complete(w, &e, type);
}

static void op_prim(struct worker *w, const struct prim *p)
{
    int (*gone)(struct worker *, const char *, uint64_t) = p->elect ? elect_gone : sem_gone;
    if (!ensure_session(w))
        return;
    uint64_t token;
    const char *outcome;
    if (!p->elect && rnd(w, 2))
        op_queue(w);
    if (!op_acquire(w, p, &token, &outcome)) {
        if (!strcmp(outcome, "info") || fl_session_is_lost(w->s))
            end_lock_session(w, p->name, gone);
        return;
    }
    note_safe(w);
    int64_t safe = w->safe_seen;
    hold_pause(w); /* sometimes frozen past the TTL */
    /* past the last safe deadline: if a linearizable read shows the grant gone, the
       fenced write that follows is a probe that must be refused */
    int probe = now_ns() / 1000000 > safe && gone(w, p->name, fl_session_id(w->s));
    if (p->elect && !probe)
        op_proclaim(w, token);
    op_write(w, p, token, probe);
    gc_pause((int64_t)rnd(w, 20));
    note_safe(w);
    if (probe || fl_session_is_lost(w->s)) {
        end_lock_session(w, p->name, gone);
        return;
    }
    if (!strcmp(op_release(w, p), "info"))
        end_lock_session(w, p->name, gone);
}

void op_sem(struct worker *w)
{
    op_prim(w, &P_SEM);
}

void op_elect(struct worker *w)
{
    op_prim(w, &P_EL);
}

/* One ELECT.OBSERVE elect AFTER *after WAIT ms; moves *after to the answer's rev. */
static void observe_once(struct worker *w, uint64_t *after)
{
    int64_t wait_end = fl_now_ms() + 1000;
    struct ev e;
    ev_begin(&e, w, w->proc_base, "invoke", "observe", now_ns());
    ev_add(&e, ",\"key\":\"" EL_NAME "\",\"observer\":%d,\"after\":%" PRIu64, w->proc_base, *after);
    ev_emit(w, &e);
    w->ops++;
    struct cl_cmd m;
    cl_cmd_init(&m, "ELECT.OBSERVE");
    cl_arg_str(&m, EL_NAME);
    cl_arg_str(&m, "AFTER");
    cl_arg_u64(&m, *after);
    cl_arg_str(&m, "WAIT");
    cl_arg_wait(&m, wait_end);
    redisReply *r = NULL;
    fl_err err = cl_call(w->c, &m, wait_end + w->c->opt.timeout_ms, CL_RETRY, &r);
    /* an observation changes nothing: an error is a "fail" with "error" on the same proc */
    const char *type = "fail";
    if (err == FL_OK && r->type == REDIS_REPLY_ARRAY)
        type = "ok";
    else if (err == FL_OK && r->type != REDIS_REPLY_NIL)
        err = cl_reply_err(w->c, r);
    ev_begin(&e, w, w->proc_base, type, "observe", now_ns());
    ev_add(&e, ",\"key\":\"" EL_NAME "\",\"observer\":%d,\"after\":%" PRIu64, w->proc_base, *after);
    if (*type == 'o') {
        uint64_t rev = cl_field_u64(r, "rev");
        ev_add(&e,
               ",\"sid\":%" PRIu64 ",\"token\":%" PRIu64 ",\"since_rev\":%" PRIu64
               ",\"rev\":%" PRIu64 ",\"compacted\":%" PRIu64,
               cl_field_u64(r, "sid"), cl_field_u64(r, "token"), cl_field_u64(r, "since_rev"), rev,
               cl_field_u64(r, "compacted"));
        *after = rev;
        w->n_ok++;
    } else {
        if (err != FL_OK)
            ev_error(&e, w, err);
        w->n_fail++;
    }
    ev_emit(w, &e);
    if (r)
        freeReplyObject(r);
    if (err != FL_OK)
        sleep_ms(50);
}

void run_observe(struct worker *w)
{
    uint64_t after = 0;
    while (time_left(w))
        observe_once(w, &after);
}
