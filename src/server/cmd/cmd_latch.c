/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_latch.c — countdown latches and double barriers bound to sessions (src/fsm/latch.c has
 * the rules): LATCH.CREATE, LATCH.JOIN, LATCH.COUNTDOWN, LATCH.DELETE (writes), LATCH.INFO,
 * LATCH.WAIT (reads), BARRIER.ENTER, BARRIER.LEAVE (writes that may wait).
 *
 * Waiting is the server's (latch_wait.h): the FSM keeps no waiter, so a wait costs no log
 * entry, and a waiter is released only by an applied event (LATCH_ZERO: the commit of the last
 * count-down; never a read of a state that was not committed). LATCH.WAIT reads the state after
 * the leader's barrier: +OK at zero, -BROKEN if broken, else it parks until the latch reaches
 * zero (+OK), breaks (-BROKEN), is deleted (-ERR), its WAIT runs out (nil, as LOCK's), the
 * session it names ends (-NOSESSION), or the node steps down (-NOTLEADER: ask the new leader).
 * BARRIER.ENTER / LEAVE apply first (the session enters or leaves in the log), then park on an
 * INT answer (sessions still to come or still inside) until BARRIER_FULL / BARRIER_DONE.
 *
 * Latch and barrier waits are not in the wait-for graph (waitgraph.c): nobody holds a latch,
 * so a wait has no edge to a holder; a session that waits for a latch it promised to count
 * down waits for itself, which no graph of holders can see and which breaks the latch only
 * when the session ends (documented in docs/protocol.md).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/list.h"
#include "server/cmd/cmd.h"
#include "server/cmd/inforows.h"
#include "server/server.h"

enum latch_wait_kind { LW_LATCH, LW_ENTER, LW_LEAVE };

struct latch_waiter {
    struct latch_waiter *prev, *next;   /* s->latchw.all */
    struct latch_waiter *nprev, *nnext; /* its name's list */
    struct srv_slot *slot;
    uint64_t *parked;  /* its user's parked count (srv_parked_counter), or NULL */
    uint64_t deadline; /* monotonic ms */
    uint64_t sid;      /* LATCH.WAIT's optional session, a barrier's; 0 = none */
    uint8_t kind;      /* enum latch_wait_kind */
    size_t name_len;
    char name[];
};

/* ---- parked waiters ---- */

static void waiter_finish(struct srv *s, struct latch_waiter *w)
{
    struct srv_latch_waits *lw = &s->latchw;
    DLIST_UNLINK(lw->all, w);
    if (w->nprev) {
        w->nprev->nnext = w->nnext;
    } else if (w->nnext) {
        map_put(&lw->by_name, w->name, w->name_len, w->nnext); /* the key exists: no alloc */
    } else {
        map_del(&lw->by_name, w->name, w->name_len);
    }
    if (w->nnext)
        w->nnext->nprev = w->nprev;
    lw->n--;
    if (w->parked)
        (*w->parked)--;
    srv_slot_set_state(w->slot, SLOT_PENDING);
    srv_slot_done(w->slot);
    free(w);
}

static int waiter_park(struct srv *s, struct srv_slot *slot, const struct acl_user *u,
                       struct fsm_str name, uint64_t sid, uint64_t wait, uint8_t kind)
{
    struct srv_latch_waits *lw = &s->latchw;
    struct latch_waiter *w = calloc(1, sizeof(*w) + name.len);
    if (!w)
        return -1;
    memcpy(w->name, name.p, name.len);
    w->name_len = name.len;
    w->slot = slot;
    w->sid = sid;
    w->kind = kind;
    w->deadline = clock_ms() + wait;
    struct latch_waiter *head = map_get(&lw->by_name, name.p, name.len);
    if (map_put(&lw->by_name, name.p, name.len, w)) {
        free(w);
        return -1;
    }
    w->nnext = head;
    if (head)
        head->nprev = w;
    DLIST_PUSH(lw->all, w);
    lw->n++;
    w->parked = srv_parked_counter(s, u);
    if (w->parked)
        (*w->parked)++;
    srv_slot_set_state(slot, SLOT_PARKED);
    return 0;
}

static void write_broken(struct buf *out, bool barrier, const char *name, size_t len, uint64_t sid)
{
    char shown[FSM_NAME_SHOWN]; /* as the FSM's own replies show it */
    resp_w_errorf(out, PROTO_BROKEN " %s %s: session %llu ended before %s",
                  fsm_latch_kind_name(barrier), fsm_printable(name, len, shown, sizeof(shown)),
                  (unsigned long long)sid, barrier ? "leaving" : "counting down");
}

/* The answer for waiter kind `kind` of `name` in the current state: 1 (written) or 0 (wait). */
static int answer_now(struct srv *s, uint8_t kind, const char *name, size_t len, struct buf *out,
                      int proto)
{
    struct fsm_latch_view v;
    bool barrier = kind != LW_LATCH;
    if (!fsm_latch_info(s->fsm, name, len, &v)) {
        if (kind == LW_LEAVE) /* everybody left: the barrier is gone */
            resp_w_simple(out, "OK");
        else
            resp_w_errorf(out, PROTO_ERR " no such %s (deleted)", fsm_latch_kind_name(barrier));
        return 1;
    }
    if (v.barrier != barrier) {
        resp_w_errorf(out, PROTO_WRONGTYPE " the name is a %s", fsm_latch_kind_name(v.barrier));
        return 1;
    }
    if (v.state == FSM_LATCH_BROKEN) {
        write_broken(out, barrier, name, len, v.broken_sid);
        return 1;
    }
    if ((kind == LW_LATCH || kind == LW_ENTER) && v.state == FSM_LATCH_ZERO) {
        resp_w_simple(out, "OK");
        return 1;
    }
    (void)proto;
    return 0;
}

void srv_latch_event(struct srv *s, const struct fsm_event *e)
{
    struct latch_waiter *w = map_get(&s->latchw.by_name, e->name.p, e->name.len);
    while (w) {
        struct latch_waiter *next = w->nnext;
        struct buf *out = &w->slot->out;
        bool done = true;
        switch (e->type) {
        case FSM_EV_LATCH_ZERO:
        case FSM_EV_BARRIER_FULL:
        case FSM_EV_BARRIER_DONE:
            done = w->kind == (e->type == FSM_EV_LATCH_ZERO     ? LW_LATCH
                               : e->type == FSM_EV_BARRIER_FULL ? LW_ENTER
                                                                : LW_LEAVE);
            if (done)
                resp_w_simple(out, "OK");
            break;
        case FSM_EV_LATCH_BROKEN:
        case FSM_EV_BARRIER_BROKEN:
            done = (w->kind == LW_LATCH) == (e->type == FSM_EV_LATCH_BROKEN);
            if (done)
                write_broken(out, w->kind != LW_LATCH, e->name.p, e->name.len, e->sid);
            break;
        case FSM_EV_LATCH_DELETED:
            resp_w_errorf(out, PROTO_ERR " the %s was deleted while waiting",
                          fsm_latch_kind_name(w->kind != LW_LATCH));
            break;
        default:
            done = false;
            break;
        }
        if (done)
            waiter_finish(s, w);
        w = next;
    }
}

void srv_latch_tick(struct srv *s, uint64_t now)
{
    struct fsm_session_view sv;
    for (struct latch_waiter *w = s->latchw.all, *next; w; w = next) {
        next = w->next;
        if (!w->slot->conn) {
            waiter_finish(s, w);
        } else if (w->sid && !fsm_session_info(s->fsm, w->sid, &sv)) {
            resp_w_errorf(&w->slot->out, PROTO_NOSESSION " session %llu ended while waiting",
                          (unsigned long long)w->sid);
            waiter_finish(s, w);
        } else if (now >= w->deadline) {
            resp_w_nil(&w->slot->out, w->slot->proto);
            waiter_finish(s, w);
        }
    }
}

void srv_latch_recheck(struct srv *s)
{
    for (struct latch_waiter *w = s->latchw.all, *next; w; w = next) {
        next = w->next;
        if (answer_now(s, w->kind, w->name, w->name_len, &w->slot->out, w->slot->proto))
            waiter_finish(s, w);
    }
}

void srv_latch_fail(struct srv *s, int status)
{
    while (s->latchw.all) {
        srv_reply_status(s, &s->latchw.all->slot->out, status);
        waiter_finish(s, s->latchw.all);
    }
}

void srv_latch_free(struct srv *s)
{
    map_free(&s->latchw.by_name, NULL);
}

/* ---- commands ---- */

/* WAIT ms among the options from argv[start] on, parsed around it: the other options as
 * `allowed` (REQ; 0: WAIT only). *wait: 0 if absent. */
static int wait_and_opts(struct srv_req *r, size_t start, int allowed, struct fsm_cmd *cmd,
                         uint64_t *wait)
{
    size_t at = 0, argc = r->argc;
    *wait = 0;
    for (size_t i = start; i < argc; i++)
        if (resp_arg_is(&r->argv[i], "WAIT")) {
            if (at || i + 1 >= argc) {
                cmd_reply_err(r, PROTO_ERR " syntax error: WAIT ms, once");
                return -1;
            }
            at = i;
            i++;
        }
    if (at && cmd_arg_range(r, at + 1, "WAIT", 0, r->s->cfg.max_wait, wait))
        return -1;
    if (!allowed) {
        if (argc == start || (at == start && argc == start + 2))
            return 0;
        cmd_reply_err(r, PROTO_ERR " syntax error: only WAIT ms may follow");
        return -1;
    }
    if (!at)
        return cmd_parse_opts(r, start, allowed, cmd);
    r->argc = at;
    int rc = cmd_parse_opts(r, start, allowed, cmd);
    r->argc = argc;
    return rc ? -1 : cmd_parse_opts(r, at + 2, allowed, cmd);
}

/* LATCH.CREATE name count [REQ sid seq] -> OK */
void latchCreateCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LATCH_CREATE, .latch_create = {.count = 0}};
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "latch name", &cmd.latch_create.name) ||
        cmd_arg_range(r, 2, "count", 1, FSM_MAX_LATCH_COUNT, &cmd.latch_create.count) ||
        cmd_parse_opts(r, 3, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

static int ref_args(struct srv_req *r, struct fsm_cmd *cmd, struct fsm_cmd_latch_ref *p)
{
    return cmd_need_leader(r) || cmd_arg_name(r, 1, "latch name", &p->name) ||
           cmd_arg_u64(r, 2, "sid", &p->sid) || cmd_live_session(r, p->sid) ||
           cmd_parse_opts(r, 3, CMD_OPT_REQ, cmd);
}

/* LATCH.JOIN name sid [REQ sid seq] -> OK */
void latchJoinCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LATCH_JOIN, .latch_join = {.sid = 0}};
    if (!ref_args(r, &cmd, &cmd.latch_join))
        cmd_propose(r, &cmd);
}

/* LATCH.COUNTDOWN name sid [REQ sid seq] -> the counts left */
void latchCountdownCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LATCH_COUNTDOWN, .latch_countdown = {.sid = 0}};
    if (!ref_args(r, &cmd, &cmd.latch_countdown))
        cmd_propose(r, &cmd);
}

/* LATCH.DELETE name -> 1 | 0 (a latch or a barrier) */
void latchDeleteCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LATCH_DELETE, .latch_delete = {.name = {NULL, 0}}};
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "latch name", &cmd.latch_delete.name) ||
        cmd_parse_opts(r, 2, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

#define LATCH_INFO_FIELDS 7

/* LATCH.INFO name -> nil | {type, state, count, remaining, joiners: [sid...], counted: [0|1...],
 * broken_sid} */
void latchInfoCommand(struct srv_req *r)
{
    struct fsm_str name;
    struct fsm_latch_view v;
    static const char *const states[] = {"counting", "zero", "broken"};
    if (cmd_arg_name(r, 1, "latch name", &name))
        return;
    if (!fsm_latch_info(r->s->fsm, name.p, name.len, &v)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    /* The participants, read once and before anything is written: "joiners" (each row's sid)
     * and "counted" (each row's flag, in the same order). */
    struct info_rows x;
    inforows_latch_parts(r->s->fsm, name.p, name.len, &x);
    if (x.failed) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    resp_w_map(r->out, r->proto, LATCH_INFO_FIELDS);
    resp_w_bulk_str(r->out, "type");
    resp_w_bulk_str(r->out, fsm_latch_kind_name(v.barrier));
    resp_w_bulk_str(r->out, "state");
    resp_w_bulk_str(r->out, v.barrier && v.state == FSM_LATCH_ZERO       ? "full"
                            : v.barrier && v.state == FSM_LATCH_COUNTING ? "filling"
                                                                         : states[v.state]);
    resp_w_bulk_str(r->out, "count");
    resp_w_uint(r->out, v.count);
    resp_w_bulk_str(r->out, "remaining");
    resp_w_uint(r->out, v.remaining);
    resp_w_bulk_str(r->out, "joiners");
    resp_w_array(r->out, x.n);
    for (size_t i = 0; i < x.n; i++)
        resp_w_uint(r->out, x.r[i].sid);
    resp_w_bulk_str(r->out, "counted"); /* per joiner, in the order of "joiners" */
    resp_w_array(r->out, x.n);
    for (size_t i = 0; i < x.n; i++)
        resp_w_uint(r->out, x.r[i].val);
    inforows_free(&x);
    resp_w_bulk_str(r->out, "broken_sid");
    resp_w_uint(r->out, v.broken_sid);
}

/* LATCH.WAIT name [sid] [WAIT ms] -> OK | nil | -BROKEN ... */
void latchWaitCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t sid = 0, wait = 0;
    size_t opts = 2;
    struct fsm_session_view sv;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "latch name", &name))
        return;
    if (r->argc > 2 && !resp_arg_is(&r->argv[2], "WAIT")) {
        if (cmd_arg_u64(r, 2, "sid", &sid))
            return;
        if (!fsm_session_info(r->s->fsm, sid, &sv)) {
            cmd_no_session(r, sid);
            return;
        }
        opts = 3;
    }
    if (wait_and_opts(r, opts, 0, NULL, &wait))
        return;
    if (answer_now(r->s, LW_LATCH, name.p, name.len, r->out, r->proto))
        return;
    if (wait && r->slot && r->c && srv_parked_admit(r))
        return; /* -NOSPACE written: --max-parked or the user's max_parked= */
    if (!wait || !r->slot || !r->c ||
        waiter_park(r->s, r->slot, r->c->user, name, sid, wait, LW_LATCH)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    r->async = true;
}

/* A barrier step applied: OK (full / everybody left) or an error as it is; an INT (sessions
 * still to come / inside) parks the request for its WAIT, or answers nil without one. */
static void barrier_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv_slot *slot = ctx;
    struct srv *s = slot->srv;
    if (status == RN_OK && reply->kind == FSM_REPLY_INT) {
        size_t namelen = slot->pkeylen - 8;
        uint8_t kind = slot->sid ? LW_LEAVE : LW_ENTER; /* slot->sid: 1 for a leave */
        uint64_t sid = 0;
        for (int i = 0; i < 8; i++)
            sid |= (uint64_t)(unsigned char)slot->pkey[namelen + i] << (8 * i);
        srv_quota_release(s, &slot->res);
        struct fsm_str name = {slot->pkey, (uint32_t)namelen};
        /* The state may have moved on in the same batch of applies: look again first. */
        if (slot->conn && slot->wait_ms &&
            !answer_now(s, kind, slot->pkey, namelen, &slot->out, slot->proto)) {
            if (!waiter_park(s, slot, slot->conn->user, name, sid, slot->wait_ms, kind))
                return;
            resp_w_error(&slot->out, PROTO_ERR " out of memory parking the request");
        } else if (!slot->wait_ms || !slot->conn) {
            resp_w_nil(&slot->out, slot->proto);
        }
        srv_slot_done(slot);
        return;
    }
    cmd_write_done(ctx, status, reply);
}

static void barrier_propose(struct srv_req *r, struct fsm_cmd *cmd, uint64_t wait, bool leave)
{
    struct srv *s = r->s;
    if (cmd_acting_user(r, cmd))
        return;
    if (wait && r->c && srv_parked_admit(r))
        return;
    struct buf k;
    buf_init(&k);
    if (!srv_key_name_sid(cmd->barrier.name.p, cmd->barrier.name.len, cmd->barrier.sid, &k)) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    r->slot->op = cmd->op;
    r->slot->wait_ms = wait;
    r->slot->sid = leave;
    r->slot->started_ns = clock_ns();
    r->slot->pkey = k.p; /* name + sid: also what push.c reads of a parked slot */
    r->slot->pkeylen = k.len;
    if (srv_quota_reserve(s, cmd, r->c ? r->c->user : NULL, &r->slot->res, r->out))
        return;
    int rc = srv_propose(s, cmd, barrier_done, r->slot);
    if (rc != RN_OK) {
        srv_quota_release(s, &r->slot->res);
        srv_reply_status(s, r->out, rc);
        return;
    }
    r->async = true;
}

/* BARRIER.ENTER name sid count [WAIT ms] [REQ sid seq] -> OK (full) | nil | -BROKEN ... */
void barrierEnterCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_BARRIER, .barrier = {.leave = 0}};
    struct fsm_cmd_barrier *p = &cmd.barrier;
    uint64_t wait;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "barrier name", &p->name) ||
        cmd_arg_u64(r, 2, "sid", &p->sid) || cmd_live_session(r, p->sid) ||
        cmd_arg_range(r, 3, "count", 1, FSM_MAX_LATCH_COUNT, &p->count) ||
        wait_and_opts(r, 4, CMD_OPT_REQ, &cmd, &wait))
        return;
    barrier_propose(r, &cmd, wait, false);
}

/* BARRIER.LEAVE name sid [WAIT ms] [REQ sid seq] -> OK (everybody left) | nil | -BROKEN ... */
void barrierLeaveCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_BARRIER, .barrier = {.leave = 1}};
    struct fsm_cmd_barrier *p = &cmd.barrier;
    uint64_t wait;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "barrier name", &p->name) ||
        cmd_arg_u64(r, 2, "sid", &p->sid) || cmd_live_session(r, p->sid) ||
        wait_and_opts(r, 3, CMD_OPT_REQ, &cmd, &wait))
        return;
    barrier_propose(r, &cmd, wait, true);
}
