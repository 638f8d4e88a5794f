/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_latch.c: the torture workload "latch": countdown latches and double barriers whose
 * participants are sessions (docs/protocol.md "Latches and barriers"), judged by
 * checkers_latch.py.
 *
 * The workers of the workload (--group N of them) meet by the clock: CLOCK_MONOTONIC is one
 * clock for every process of the run, so epoch k = now / EPOCH_MS names latch "lt/k" (count
 * 1 + k % N) and barrier "bt/k" (count N/2 + 1 + k % (N - N/2): more than half the group, so
 * two full barriers of one name would need more enterers than there are workers, and a name
 * is one barrier for the checker). Each worker takes part in an epoch at most once:
 *
 *   create     LATCH.CREATE lt/k n (no session; the same count again is OK)
 *   doomed     sometimes a second session joins and ends before counting down: "join" with it,
 *              then "close" (SESSION.CLOSE) or "abandon" (keepalives stop; the lease runs out):
 *              it breaks the latch
 *   join       LATCH.JOIN with the worker's session (-ERR once every count is promised)
 *   enter      BARRIER.ENTER bt/k sid m WAIT ms, only early in the epoch
 *   (a pause: hold_pause, sometimes past the TTL: the session expires, the latch breaks)
 *   countdown  LATCH.COUNTDOWN (only after a join that may have applied)
 *   leave      BARRIER.LEAVE bt/k sid WAIT ms (after any enter)
 *   wait       LATCH.WAIT lt/k WAIT ms: mostly short, sometimes longer than the checker's
 *              bound after a break (a waiter that sleeps through a break is stuck)
 *   info       LATCH.INFO lt/k (linearizable); after an abandon, polled until the latch shows
 *              broken (at most LATCH_POLL_S)
 * The worker nemesis (SIGSTOP past the TTL) ends sessions at any step as well.
 *
 * History (every field: HISTORY.md "latch"): "key" the name, "kind" latch|barrier, "count",
 * "session" (0: none). A completion is "ok" for +OK or an integer, "fail" for any other
 * answer of the server (nil, -BROKEN, -ERR, -NOSESSION...), "info" when none came or when
 * -NOSESSION answered a resend (an earlier send may have applied); "result"
 * ok|int|nil|broken|err, "value" (an integer answer), "broken_sid" (named by -BROKEN).
 * Commands go through libfencelock's internal call path (src/client/client.h), so retries,
 * redirects and REQ sid seq are its own, and a nil answer is told apart from no answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "worker.h"

#define EPOCH_MS 5000
#define ENTER_WINDOW_MS (EPOCH_MS / 3) /* enter only this early in an epoch */
#define LATCH_POLL_S 40                /* after an abandon, poll LATCH.INFO this long at most */

/* One answer of the server, or none (got 0: the outcome is unknown). */
struct lreply {
    int got, type; /* REDIS_REPLY_* */
    int resent;    /* the command was sent more than once (struct cl_cmd's sends) */
    long long integer;
    fl_err err;
    char text[256];
};

static void take_reply(fl_client *c, fl_err e, redisReply *r, struct lreply *o)
{
    memset(o, 0, sizeof(*o));
    o->err = e;
    if (e != FL_OK || !r)
        return;
    o->got = 1;
    o->type = r->type;
    if (r->type == REDIS_REPLY_INTEGER)
        o->integer = r->integer;
    if ((r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS) && r->str)
        snprintf(o->text, sizeof(o->text), "%s", r->str);
    if (r->type == REDIS_REPLY_ERROR)
        o->err = cl_reply_err(c, r);
}

/* A session's step: cmd name sid [count] [WAIT until wait_end] REQ sid seq. */
static void session_step(fl_session *s, const char *cmd, const char *name, uint64_t count,
                         int64_t wait_end, struct lreply *o)
{
    fl_client *c = cl_session_client(s);
    uint64_t seq;
    memset(o, 0, sizeof(*o));
    if ((o->err = cl_session_begin(s, &seq)) != FL_OK) {
        o->got = 1; /* nothing was sent: certainly not applied */
        o->type = REDIS_REPLY_ERROR;
        snprintf(o->text, sizeof(o->text), "NOSESSION (local: the session is lost)");
        return;
    }
    struct cl_cmd m;
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
    redisReply *r = NULL;
    fl_err e =
        cl_call(c, &m, wait_end ? wait_end + c->opt.timeout_ms : cl_deadline(c), CL_RETRY, &r);
    take_reply(c, e, r, o);
    o->resent = m.sends > 1;
    if (r)
        freeReplyObject(r);
    if (o->err == FL_ESESSION)
        cl_session_mark_lost(s);
    cl_session_end(s);
}

static void ev_head(struct ev *e, const char *name, int barrier, uint64_t count, uint64_t sid)
{
    ev_add(e, ",\"key\":\"%s\",\"kind\":\"%s\",\"count\":%" PRIu64 ",\"session\":%" PRIu64, name,
           barrier ? "barrier" : "latch", count, sid);
}

/* The completion of an op from its answer; returns the type written. */
static const char *complete(struct worker *w, int proc, const char *f, const char *name,
                            int barrier, uint64_t count, uint64_t sid, const struct lreply *o)
{
    const char *type, *result;
    if (!o->got) {
        type = "info";
        result = NULL;
    } else if (o->type == REDIS_REPLY_STATUS) {
        type = "ok", result = "ok";
    } else if (o->type == REDIS_REPLY_INTEGER) {
        type = "ok", result = "int";
    } else if (o->type == REDIS_REPLY_NIL) {
        type = "fail", result = "nil";
    } else if (o->err == FL_EBROKEN) {
        type = "fail", result = "broken";
    } else if (o->err == FL_ESESSION && o->resent) {
        /* -NOSESSION to a resend: the session, and the answer kept for a resend with it, is
         * gone, so an earlier send may have applied (the torture saw a barrier enter that did,
         * sent to a leader that froze, then -NOSESSION from the next one) */
        type = "info";
        result = NULL;
    } else {
        type = "fail", result = "err";
    }
    struct ev e;
    ev_begin(&e, w, proc, type, f, now_ns());
    ev_head(&e, name, barrier, count, sid);
    if (result)
        ev_str(&e, "result", result);
    if (o->got && o->type == REDIS_REPLY_INTEGER)
        ev_add(&e, ",\"value\":%lld", o->integer);
    if (result && !strcmp(result, "broken")) {
        /* "BROKEN latch NAME: session SID ended before ..." */
        const char *p = strstr(o->text, ": session ");
        if (p)
            ev_add(&e, ",\"broken_sid\":%llu", strtoull(p + 10, NULL, 10));
    }
    if (o->got && o->type == REDIS_REPLY_ERROR)
        ev_str(&e, "msg", o->text);
    else if (!o->got)
        ev_error(&e, w, o->err);
    ev_complete(w, &e, type);
    return type;
}

static int64_t invoke(struct worker *w, int proc, const char *f, const char *name, int barrier,
                      uint64_t count, uint64_t sid, const char *extra)
{
    struct ev e;
    int64_t t = now_ns();
    ev_begin(&e, w, proc, "invoke", f, t);
    ev_head(&e, name, barrier, count, sid);
    if (extra)
        ev_add(&e, "%s", extra);
    ev_emit(w, &e);
    w->ops++;
    return t;
}

/* A session's step as an op; returns its type (ok / fail / info). */
static const char *step_op(struct worker *w, fl_session *s, const char *f, const char *cmd,
                           const char *name, int barrier, uint64_t count, int64_t wait_ms)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(s);
    char extra[96] = "";
    int64_t wait_end = 0;
    if (wait_ms) {
        wait_end = fl_now_ms() + wait_ms;
        snprintf(extra, sizeof(extra), ",\"wait_ms\":%" PRId64 ",\"wait_end\":%" PRId64, wait_ms,
                 wait_end * 1000000);
    }
    invoke(w, proc, f, name, barrier, count, sid, extra);
    struct lreply o;
    session_step(s, cmd, name, !strcmp(f, "enter") ? count : 0, wait_end, &o);
    const char *type = complete(w, proc, f, name, barrier, count, sid, &o);
    after_info(w, type);
    return type;
}

/* LATCH.CREATE name count: no session (retried: the same count again is OK). */
static void create_op(struct worker *w, const char *name, uint64_t count)
{
    int proc = proc_of(w);
    invoke(w, proc, "create", name, 0, count, 0, NULL);
    struct cl_cmd m;
    cl_cmd_init(&m, "LATCH.CREATE");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, count);
    redisReply *r = NULL;
    struct lreply o;
    fl_err e = cl_call(w->c, &m, cl_deadline(w->c), CL_RETRY, &r);
    take_reply(w->c, e, r, &o);
    if (r)
        freeReplyObject(r);
    after_info(w, complete(w, proc, "create", name, 0, count, 0, &o));
}

/* LATCH.WAIT name WAIT ms: a read on the leader, then a server-side wait. */
static void wait_op(struct worker *w, const char *name, uint64_t count, int64_t wait_ms)
{
    int proc = proc_of(w);
    int64_t wait_end = fl_now_ms() + wait_ms;
    char extra[96];
    snprintf(extra, sizeof(extra), ",\"wait_ms\":%" PRId64 ",\"wait_end\":%" PRId64, wait_ms,
             wait_end * 1000000);
    invoke(w, proc, "wait", name, 0, count, 0, extra);
    struct cl_cmd m;
    cl_cmd_init(&m, "LATCH.WAIT");
    cl_arg_str(&m, name);
    cl_arg_str(&m, "WAIT");
    cl_arg_wait(&m, wait_end);
    redisReply *r = NULL;
    struct lreply o;
    fl_err e = cl_call(w->c, &m, wait_end + w->c->opt.timeout_ms, CL_RETRY, &r);
    take_reply(w->c, e, r, &o);
    if (r)
        freeReplyObject(r);
    after_info(w, complete(w, proc, "wait", name, 0, count, 0, &o));
}

/* LATCH.INFO name as an op "info" (ok: "state" none|counting|zero|broken, "remaining",
 * "broken_sid", "joiners", "counted"); returns the state's number (enum in fl_latch_info:
 * 0 counting, 1 zero, 2 broken), -1 absent or unknown. */
static int info_op(struct worker *w, const char *name, uint64_t count)
{
    int proc = proc_of(w);
    invoke(w, proc, "info", name, 0, count, 0, NULL);
    struct cl_cmd m;
    cl_cmd_init(&m, "LATCH.INFO");
    cl_arg_str(&m, name);
    redisReply *r = NULL;
    fl_err err = cl_call(w->c, &m, cl_deadline(w->c), CL_RETRY, &r);
    struct ev e;
    int state = -1;
    const char *type = "info";
    if (err == FL_OK && r->type == REDIS_REPLY_NIL) {
        type = "ok";
        ev_begin(&e, w, proc, type, "info", now_ns());
        ev_head(&e, name, 0, count, 0);
        ev_str(&e, "state", "none");
    } else if (err == FL_OK && r->type == REDIS_REPLY_ARRAY) {
        const redisReply *st = cl_field(r, "state"), *j = cl_field(r, "joiners"),
                         *d = cl_field(r, "counted");
        type = "ok";
        ev_begin(&e, w, proc, type, "info", now_ns());
        ev_head(&e, name, 0, count, 0);
        ev_str(&e, "state", st && st->type == REDIS_REPLY_STRING ? st->str : "?");
        ev_add(&e, ",\"remaining\":%" PRIu64 ",\"broken_sid\":%" PRIu64 ",\"latch_count\":%" PRIu64,
               cl_field_u64(r, "remaining"), cl_field_u64(r, "broken_sid"),
               cl_field_u64(r, "count"));
        const redisReply *arrs[2] = {j, d};
        const char *keys[2] = {"joiners", "counted"};
        for (int a = 0; a < 2; a++) {
            ev_add(&e, ",\"%s\":[", keys[a]);
            for (size_t i = 0;
                 arrs[a] && arrs[a]->type == REDIS_REPLY_ARRAY && i < arrs[a]->elements && i < 64;
                 i++)
                ev_add(&e, "%s%lld", i ? "," : "", arrs[a]->element[i]->integer);
            ev_add(&e, "]");
        }
        if (st && st->type == REDIS_REPLY_STRING)
            state = !strcmp(st->str, "broken") ? 2 : !strcmp(st->str, "zero") ? 1 : 0;
    } else {
        if (err == FL_OK)
            err = cl_reply_err(w->c, r);
        ev_begin(&e, w, proc, type, "info", now_ns());
        ev_head(&e, name, 0, count, 0);
        ev_error(&e, w, err);
    }
    if (r)
        freeReplyObject(r);
    ev_complete(w, &e, type);
    after_info(w, type);
    return state;
}

/* A second session joins and ends before it counts down: closed, or abandoned (its lease
 * runs out on the servers). Returns 1 if it was abandoned after a join that may have applied
 * (the caller then polls the latch until it shows broken). */
static int doomed_op(struct worker *w, const char *name, uint64_t count)
{
    fl_session *d = NULL;
    if (fl_session_open(w->c, w->ttl_ms, 0, "torture-latch-doomed", &d) != FL_OK)
        return 0;
    const char *joined = step_op(w, d, "join", "LATCH.JOIN", name, 0, count, 0);
    uint64_t sid = fl_session_id(d);
    int proc = proc_of(w);
    if (rnd(w, 2)) {
        invoke(w, proc, "close", name, 0, count, sid, NULL);
        fl_err err = fl_session_close(d);
        struct ev e;
        const char *type = err == FL_OK ? "ok" : "info";
        ev_begin(&e, w, proc, type, "close", now_ns());
        ev_head(&e, name, 0, count, sid);
        if (err != FL_OK)
            ev_error(&e, w, err);
        ev_complete(w, &e, type);
        after_info(w, type);
        return 0;
    }
    /* "abandon": invoked when the keepalives stop; the servers end the session one TTL after
       the last keepalive they received (longer across leader changes), which is what the
       checker measures the break against */
    invoke(w, proc, "abandon", name, 0, count, sid, NULL);
    fl_session_abandon(d);
    struct ev e;
    ev_begin(&e, w, proc, "ok", "abandon", now_ns());
    ev_head(&e, name, 0, count, sid);
    ev_complete(w, &e, "ok");
    return strcmp(joined, "fail") != 0;
}

static void sleep_until_ms(int64_t t)
{
    int64_t d = t - fl_now_ms();
    if (d > 0)
        sleep_ms(d);
}

void op_latch(struct worker *w)
{
    if (!ensure_session(w))
        return;
    int64_t now = fl_now_ms();
    int64_t k = now / EPOCH_MS;
    if (k <= w->latch_epoch) { /* one round per epoch: wait for the next */
        sleep_until_ms((w->latch_epoch + 1) * EPOCH_MS + (int64_t)rnd(w, 50));
        return;
    }
    w->latch_epoch = k;
    int64_t start = k * EPOCH_MS;
    uint64_t g = (uint64_t)(w->group > 0 ? w->group : 1);
    uint64_t n = 1 + (uint64_t)k % g;
    uint64_t m = g / 2 + 1 + (uint64_t)k % (g - g / 2);
    char lname[32], bname[32];
    snprintf(lname, sizeof(lname), "lt/%" PRId64, k);
    snprintf(bname, sizeof(bname), "bt/%" PRId64, k);

    create_op(w, lname, n);
    int abandoned = rnd(w, 6) == 0 ? doomed_op(w, lname, n) : 0;
    const char *joined = rnd(w, 10) ? step_op(w, w->s, "join", "LATCH.JOIN", lname, 0, n, 0) : NULL;
    const char *entered = NULL;
    if (fl_now_ms() < start + ENTER_WINDOW_MS && rnd(w, 4))
        entered = step_op(w, w->s, "enter", "BARRIER.ENTER", bname, 1, m, 500 + rnd(w, 2000));
    hold_pause(w); /* sometimes past the TTL: the session ends, what it joined breaks */
    if (joined && strcmp(joined, "fail") != 0)
        step_op(w, w->s, "countdown", "LATCH.COUNTDOWN", lname, 0, n, 0);
    if (entered)
        step_op(w, w->s, "leave", "BARRIER.LEAVE", bname, 1, m, 500 + rnd(w, 2000));
    /* mostly short waits; one in four longer than the checker's bound after a break */
    int64_t wait_ms = rnd(w, 4) ? 200 + (int64_t)rnd(w, 2800) : 9000 + (int64_t)rnd(w, 5000);
    wait_op(w, lname, n, wait_ms);
    if (rnd(w, 2))
        info_op(w, lname, n);
    int64_t give_up = now_ns() + (int64_t)LATCH_POLL_S * 1000000000;
    while (abandoned && info_op(w, lname, n) != 2 && now_ns() < give_up)
        sleep_ms(100);
}
