/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_lock.c — LOCK (exclusive, or SHARED: read-write locks), UNLOCK, LOCK.INFO, FENCE.CHECK
 * and LOCKS.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"
#include "server/cmd/waitrows.h"

/* Key-value pairs in a LOCK.INFO reply and in each LOCKS row. */
#define LOCK_INFO_FIELDS 11
#define LOCKS_ROW_FIELDS 10
#define HOLDER_FIELDS 2 /* sid, token: one map per holder in LOCK.INFO's holders */

static int lock_args(struct srv_req *r, struct fsm_str *name, uint64_t *sid)
{
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "lock name", name) ||
        cmd_arg_u64(r, 2, "sid", sid) || cmd_live_session(r, *sid))
        return -1;
    return 0;
}

/*
 * LOCK name sid [WAIT ms] [VALUE v] [MAXHOLD ms] [SHARED | NOTIFY] [REQ sid seq]
 * [TRACEPARENT tp] (tp in the entry's header: any op it becomes carries it). The options
 * parse into a LOCK_META; without a value or a max hold the command is proposed as the LOCK,
 * LOCK_SHARED or LOCK_NOTIFY it always was (the same bytes). A value and a max hold belong to
 * an exclusive grant: SHARED with either is refused.
 */
void lockCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LOCK_META, .lock_meta = {.wait_ms = 0}};
    if (lock_args(r, &cmd.lock_meta.name, &cmd.lock_meta.sid) ||
        cmd_parse_opts(r, 3,
                       CMD_OPT_WAIT | CMD_OPT_REQ | CMD_OPT_SHARED | CMD_OPT_NOTIFY |
                           CMD_OPT_VALUE | CMD_OPT_MAXHOLD | CMD_OPT_TRACE,
                       &cmd))
        return;
    struct fsm_cmd_lock_meta m = cmd.lock_meta;
    if (m.value.len == 0 && m.maxhold_ms == 0) {
        cmd.op = m.flags == CMD_LOCK_SHARED   ? FSM_OP_LOCK_SHARED
                 : m.flags == CMD_LOCK_NOTIFY ? FSM_OP_LOCK_NOTIFY
                                              : FSM_OP_LOCK;
        cmd.lock = (struct fsm_cmd_lock){.name = m.name, .sid = m.sid, .wait_ms = m.wait_ms};
    } else if (m.flags & CMD_LOCK_SHARED) {
        cmd_reply_err(r, PROTO_ERR " VALUE and MAXHOLD do not go with SHARED: they belong to an "
                                   "exclusive grant");
        return;
    }
    cmd_propose(r, &cmd);
}

/* "exclusive", "shared" or "none" (in lock-delay or only waiters). */
static const char *lock_mode(uint64_t holder_sid, size_t n_shared)
{
    return holder_sid ? "exclusive" : n_shared ? "shared" : "none";
}

void unlockCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_UNLOCK, .unlock = {.sid = 0}};
    if (lock_args(r, &cmd.unlock.name, &cmd.unlock.sid) ||
        cmd_parse_opts(r, 3, CMD_OPT_REQ | CMD_OPT_TRACE, &cmd))
        return;
    cmd_propose(r, &cmd);
}

struct holders_arg {
    struct buf *out;
    int proto;
};

static void holder_cb(void *arg, uint64_t sid, uint64_t token, bool shared)
{
    struct holders_arg *ha = arg;
    (void)shared;
    resp_w_map(ha->out, ha->proto, HOLDER_FIELDS);
    resp_w_bulk_str(ha->out, "sid");
    resp_w_uint(ha->out, sid);
    resp_w_bulk_str(ha->out, "token");
    resp_w_uint(ha->out, token);
}

/* The lock metadata fields of LOCK.INFO and of a LOCKS row (fsm/lockmeta.c). */
static void write_meta(struct buf *out, struct fsm_str value, uint64_t maxhold_ms,
                       uint64_t transitions)
{
    resp_w_bulk_str(out, "value");
    resp_w_bulk(out, value.p, value.len);
    resp_w_bulk_str(out, "max_hold_ms");
    resp_w_uint(out, maxhold_ms);
    resp_w_bulk_str(out, "transitions");
    resp_w_uint(out, transitions);
}

void lockInfoCommand(struct srv_req *r)
{
    struct fsm_str name;
    struct fsm_lock_view v;
    if (cmd_arg_name(r, 1, "lock name", &name) || cmd_check_kind(r, &name, FSM_KIND_LOCK))
        return;
    if (!fsm_lock_info(r->s->fsm, name.p, name.len, &v)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    /* The queue, read once (waitrows.h) and before anything is written: its rows are both
     * "waiters" (each row's sid, FIFO) and "waits_for" (each row's list), and whether a list was
     * cut decides the map's size. */
    size_t left = r->s->cfg.max_keys_reply;
    struct wait_rows x;
    waitrows_read(r->s->fsm, name.p, name.len, &left, &x);
    if (x.failed) {
        waitrows_free(&x);
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    bool cut = waitrows_cut(&x);
    resp_w_map(r->out, r->proto, LOCK_INFO_FIELDS + v.reentrant + cut); /* + count, cut */
    resp_w_bulk_str(r->out, "holder");
    resp_w_uint(r->out, v.holder_sid);
    resp_w_bulk_str(r->out, "token");
    resp_w_uint(r->out, v.token);
    resp_w_bulk_str(r->out, "held_since_ms");
    resp_w_uint(r->out, v.held_since_ms);
    resp_w_bulk_str(r->out, "lockdelay");
    resp_w_uint(r->out, v.in_lockdelay ? 1 : 0);
    resp_w_bulk_str(r->out, "waiters");
    cmd_write_waiters(r->out, &x);
    resp_w_bulk_str(r->out, "mode");
    resp_w_bulk_str(r->out, lock_mode(v.holder_sid, v.n_shared));
    resp_w_bulk_str(r->out, "holders");
    resp_w_array(r->out, v.holder_sid ? 1 : v.n_shared);
    struct holders_arg ha = {r->out, r->proto};
    fsm_lock_holders(r->s->fsm, name.p, name.len, holder_cb, &ha);
    resp_w_bulk_str(r->out, "waits_for"); /* per waiter, in the order of "waiters" */
    cmd_write_waits_for(r->out, &x);
    waitrows_free(&x);
    if (cut) { /* a list stopped at --max-keys-reply sids; absent otherwise (as before it) */
        resp_w_bulk_str(r->out, "waits_for_cut");
        resp_w_uint(r->out, 1);
    }
    write_meta(r->out, v.value, v.maxhold_ms, v.transitions);
    if (v.reentrant) { /* a reentrant holder's holds; absent otherwise (as before them) */
        resp_w_bulk_str(r->out, "count");
        resp_w_uint(r->out, v.count);
    }
}

void fenceCheckCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t token;
    if (cmd_arg_name(r, 1, "lock name", &name) || cmd_arg_u64(r, 2, "token", &token))
        return;
    if (fsm_fence_check(r->s->fsm, name.p, name.len, token) == 0)
        resp_w_simple(r->out, "OK");
    else
        resp_w_errorf(r->out, PROTO_STALE " token %llu is not the current token of lock %.*s",
                      (unsigned long long)token, (int)name.len, name.p);
}

void locksCommand(struct srv_req *r)
{
    uint64_t limit = r->s->cfg.max_keys_reply;
    if (r->argc == 4) {
        if (!resp_arg_is(&r->argv[2], "LIMIT")) {
            cmd_reply_err(r, PROTO_ERR " syntax error: LOCKS prefix [LIMIT n]");
            return;
        }
        if (cmd_arg_range(r, 3, "LIMIT", 1, r->s->cfg.max_keys_reply, &limit))
            return;
    } else if (r->argc != 2) {
        cmd_reply_err(r, PROTO_ERR " syntax error: LOCKS prefix [LIMIT n]");
        return;
    }
    struct fsm_lock_item *it = calloc(limit, sizeof(*it));
    if (!it) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    size_t n = fsm_locks_list(r->s->fsm, r->argv[1].p, r->argv[1].len, limit, it), shown = 0;
    for (size_t i = 0; i < n; i++) /* locks the user may not see are left out */
        if (cmd_may_lock(r, it[i].name.p, it[i].name.len))
            it[shown++] = it[i];
    n = shown;
    resp_w_array(r->out, n);
    for (size_t i = 0; i < n; i++) {
        resp_w_map(r->out, r->proto, LOCKS_ROW_FIELDS + it[i].reentrant);
        resp_w_bulk_str(r->out, "name");
        resp_w_bulk(r->out, it[i].name.p, it[i].name.len);
        resp_w_bulk_str(r->out, "holder");
        resp_w_uint(r->out, it[i].holder_sid);
        resp_w_bulk_str(r->out, "token");
        resp_w_uint(r->out, it[i].token);
        resp_w_bulk_str(r->out, "lockdelay");
        resp_w_uint(r->out, it[i].in_lockdelay ? 1 : 0);
        resp_w_bulk_str(r->out, "waiters");
        resp_w_uint(r->out, it[i].n_waiters);
        resp_w_bulk_str(r->out, "mode");
        resp_w_bulk_str(r->out, it[i].kind == FSM_KIND_LOCK
                                    ? lock_mode(it[i].holder_sid, it[i].n_shared)
                                    : fsm_kind_name(it[i].kind));
        resp_w_bulk_str(r->out, "holders");
        resp_w_uint(r->out, it[i].holder_sid ? 1 : it[i].n_shared);
        write_meta(r->out, it[i].value, it[i].maxhold_ms, it[i].transitions);
        if (it[i].reentrant) {
            resp_w_bulk_str(r->out, "count");
            resp_w_uint(r->out, it[i].count);
        }
    }
    free(it);
}
