/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_prims.c — counting semaphores (SEM.ACQUIRE, SEM.RELEASE, SEM.INFO) and leader election
 * (ELECT.CAMPAIGN, ELECT.PROCLAIM, ELECT.RESIGN, ELECT.LEADER); ELECT.OBSERVE is observe.c's.
 *
 * The FSM rules are src/fsm/sem.c and elect.c; a queued SEM.ACQUIRE or ELECT.CAMPAIGN parks
 * like LOCK ... WAIT (parked.c: answered by the grant, the timeout's CANCEL_WAIT or the
 * session's end). Names share the lock namespace: the reads answer -WRONGTYPE for a name of
 * another kind (the writes get it from the FSM).
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"
#include "server/cmd/inforows.h"

#define SEM_INFO_FIELDS 7
#define HOLDER_FIELDS 3

int cmd_check_kind(struct srv_req *r, const struct fsm_str *name, int kind)
{
    int k = fsm_kind_of(r->s->fsm, name->p, name->len);
    if (k < 0 || k == kind)
        return 0;
    resp_w_errorf(r->out, PROTO_WRONGTYPE " %.*s is %s %s", (int)name->len, name->p,
                  k == FSM_KIND_ELECT ? "an" : "a", fsm_kind_name((uint8_t)k));
    return -1;
}

/* name sid: a write on a live session, on the leader. */
static int prim_args(struct srv_req *r, const char *what, struct fsm_str *name, uint64_t *sid)
{
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, what, name) || cmd_arg_u64(r, 2, "sid", sid) ||
        cmd_live_session(r, *sid))
        return -1;
    return 0;
}

/* An election value: at most --max-value bytes (and the FSM's own bound). */
static int value_arg(struct srv_req *r, size_t i, struct fsm_str *v)
{
    size_t max =
        r->s->cfg.max_value < FSM_MAX_ELECT_VALUE ? r->s->cfg.max_value : FSM_MAX_ELECT_VALUE;
    if (r->argv[i].len > max) {
        resp_w_errorf(r->out, PROTO_TOOLARGE " value is %zu bytes, the limit is %zu",
                      r->argv[i].len, max);
        return -1;
    }
    v->p = r->argv[i].p;
    v->len = (uint32_t)r->argv[i].len;
    return 0;
}

/*
 * PERMITS k, wherever it stands among the options from argv[start] on (the shared option
 * parser does not know it): *at is its index (0 if absent), *k its value (1 if absent).
 */
static int permits_opt(struct srv_req *r, size_t start, size_t *at, uint64_t *k)
{
    *at = 0;
    *k = 1;
    for (size_t i = start; i < r->argc; i++) {
        if (!resp_arg_eq(&r->argv[i], "PERMITS", sizeof("PERMITS") - 1))
            continue;
        if (*at) {
            resp_w_errorf(r->out, PROTO_ERR " option PERMITS given twice");
            return -1;
        }
        if (i + 1 >= r->argc) {
            resp_w_errorf(r->out, PROTO_ERR " option PERMITS needs 1 argument(s)");
            return -1;
        }
        if (cmd_arg_range(r, i + 1, "PERMITS", 1, FSM_MAX_SEM_LIMIT, k))
            return -1;
        *at = i++;
    }
    return 0;
}

/*
 * SEM.ACQUIRE name sid limit [PERMITS k] [WAIT ms] [REQ sid seq] -> token | nil. PERMITS 1 (or
 * none) proposes SEM_ACQUIRE, byte for byte as before; k > 1 proposes SEM_ACQUIRE_W. PERMITS
 * may stand anywhere among the options: those before it and those after it are parsed as two
 * runs by the shared parser, which does not know it.
 */
void semAcquireCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SEM_ACQUIRE_W, .sem_acquire_w = {.wait_ms = 0}};
    struct fsm_cmd_sem_acquire_w *p = &cmd.sem_acquire_w;
    size_t at, argc = r->argc;
    if (prim_args(r, "semaphore name", &p->name, &p->sid) ||
        cmd_arg_range(r, 3, "limit", 1, FSM_MAX_SEM_LIMIT, &p->limit) ||
        permits_opt(r, 4, &at, &p->permits))
        return;
    /* an operator's limit (SEM.SETLIMIT) wins over the one given; the FSM checks again */
    uint64_t op_limit = fsm_semlim_get(r->s->fsm, p->name.p, p->name.len);
    uint64_t limit = op_limit ? op_limit : p->limit;
    if (p->permits > limit) {
        resp_w_errorf(r->out, PROTO_ERR " PERMITS %llu is over the limit %llu",
                      (unsigned long long)p->permits, (unsigned long long)limit);
        return;
    }
    if (at) { /* parse the options around PERMITS k as two runs */
        r->argc = at;
        int rc = cmd_parse_opts(r, 4, CMD_OPT_WAIT | CMD_OPT_REQ, &cmd);
        r->argc = argc;
        if (rc)
            return;
    }
    if (cmd_parse_opts(r, at ? at + 2 : 4, CMD_OPT_WAIT | CMD_OPT_REQ, &cmd))
        return;
    if (p->permits == 1) {
        struct fsm_cmd one = {
            .op = FSM_OP_SEM_ACQUIRE, .req_sid = cmd.req_sid, .req_seq = cmd.req_seq};
        one.sem_acquire = (struct fsm_cmd_sem_acquire){
            .name = p->name, .sid = p->sid, .limit = p->limit, .wait_ms = p->wait_ms};
        cmd_propose(r, &one);
        return;
    }
    cmd_propose(r, &cmd);
}

/*
 * SEM.SETLIMIT name limit -> OK: the operator's limit of the semaphore name (SEM_LIMIT_SET,
 * src/fsm/semlimit.c), kept while set, whether or not the semaphore exists, and winning over
 * the acquirers' limit. SEM.SETLIMIT name RESET -> 1 (removed) | 0 (there was none): the
 * acquirers' limit rules again once the semaphore is next created. (The op SEM_SETLIMIT, which
 * changed a live semaphore only, stays for the log's older entries.)
 */
void semSetlimitCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SEM_LIMIT_SET, .sem_limit_set = {.limit = 0}};
    struct fsm_cmd_sem_setlimit *p = &cmd.sem_limit_set;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "semaphore name", &p->name))
        return;
    if (resp_arg_eq(&r->argv[2], "RESET", sizeof("RESET") - 1)) {
        /* any kind: an override outlives its semaphore, and the name may be a lock's since */
        struct fsm_cmd reset = {.op = FSM_OP_SEM_LIMIT_RESET, .sem_limit_reset = {p->name}};
        cmd_propose(r, &reset);
        return;
    }
    if (cmd_check_kind(r, &p->name, FSM_KIND_SEM) ||
        cmd_arg_range(r, 2, "limit", 1, FSM_MAX_SEM_LIMIT, &p->limit))
        return;
    cmd_propose(r, &cmd);
}

/* SEM.RELEASE name sid [REQ sid seq] -> OK */
void semReleaseCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SEM_RELEASE, .sem_release = {.sid = 0}};
    if (prim_args(r, "semaphore name", &cmd.sem_release.name, &cmd.sem_release.sid) ||
        cmd_parse_opts(r, 3, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

static void sem_holder_cb(void *arg, uint64_t sid, uint64_t token, uint32_t permits)
{
    struct srv_req *r = arg;
    resp_w_map(r->out, r->proto, HOLDER_FIELDS);
    resp_w_bulk_str(r->out, "sid");
    resp_w_uint(r->out, sid);
    resp_w_bulk_str(r->out, "token");
    resp_w_uint(r->out, token);
    resp_w_bulk_str(r->out, "permits");
    resp_w_uint(r->out, permits);
}

/* SEM.INFO name -> nil | {limit, permits (in use), holders: [{sid, token, permits}...],
 * waiters: [sid...], lockdelay, wanted: [permits of each waiter, in the same order],
 * limit_set_by_operator: 1 if `limit` is an operator's (SEM.SETLIMIT), which wins over the
 * acquirers'}. A name with an operator's limit and no semaphore answers as an idle one. */
void semInfoCommand(struct srv_req *r)
{
    struct fsm_str name;
    struct fsm_sem_view v;
    if (cmd_arg_name(r, 1, "semaphore name", &name) || cmd_check_kind(r, &name, FSM_KIND_SEM))
        return;
    if (!fsm_sem_info(r->s->fsm, name.p, name.len, &v)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    /* The queue, read once and before anything is written: its rows are both "waiters" (each
     * row's sid, FIFO) and "wanted" (each row's permits, in the same order). */
    struct info_rows q;
    inforows_sem_queue(r->s->fsm, name.p, name.len, &q);
    if (q.failed) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    resp_w_map(r->out, r->proto, SEM_INFO_FIELDS);
    resp_w_bulk_str(r->out, "limit");
    resp_w_uint(r->out, v.limit);
    resp_w_bulk_str(r->out, "permits");
    resp_w_uint(r->out, v.in_use);
    resp_w_bulk_str(r->out, "holders");
    resp_w_array(r->out, v.n_holders);
    fsm_sem_holders(r->s->fsm, name.p, name.len, sem_holder_cb, r);
    resp_w_bulk_str(r->out, "waiters");
    resp_w_array(r->out, q.n);
    for (size_t i = 0; i < q.n; i++)
        resp_w_uint(r->out, q.r[i].sid);
    resp_w_bulk_str(r->out, "lockdelay");
    resp_w_uint(r->out, v.in_lockdelay ? 1 : 0);
    resp_w_bulk_str(r->out, "wanted"); /* per waiter, in the order of "waiters" */
    resp_w_array(r->out, q.n);
    for (size_t i = 0; i < q.n; i++)
        resp_w_uint(r->out, q.r[i].val);
    inforows_free(&q);
    resp_w_bulk_str(r->out, "limit_set_by_operator");
    resp_w_uint(r->out, v.by_operator ? 1 : 0);
}

/* ELECT.CAMPAIGN name sid value [WAIT ms] [REQ sid seq] -> token | nil */
void electCampaignCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_ELECT_CAMPAIGN, .elect_campaign = {.wait_ms = 0}};
    struct fsm_cmd_elect_campaign *p = &cmd.elect_campaign;
    if (prim_args(r, "election name", &p->name, &p->sid) || value_arg(r, 3, &p->value) ||
        cmd_parse_opts(r, 4, CMD_OPT_WAIT | CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

/* ELECT.PROCLAIM name sid token value [REQ sid seq] -> revision | -STALE */
void electProclaimCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_ELECT_PROCLAIM, .elect_proclaim = {.token = 0}};
    struct fsm_cmd_elect_proclaim *p = &cmd.elect_proclaim;
    if (prim_args(r, "election name", &p->name, &p->sid) || cmd_arg_u64(r, 3, "token", &p->token) ||
        value_arg(r, 4, &p->value) || cmd_parse_opts(r, 5, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

/* ELECT.RESIGN name sid [REQ sid seq] -> OK */
void electResignCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.sid = 0}};
    if (prim_args(r, "election name", &cmd.elect_resign.name, &cmd.elect_resign.sid) ||
        cmd_parse_opts(r, 3, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

/* ELECT.LEADER name -> nil | {sid, token, value, since_rev, rev} */
void electLeaderCommand(struct srv_req *r)
{
    struct fsm_str name;
    struct fsm_elect_view v;
    if (cmd_arg_name(r, 1, "election name", &name) || cmd_check_kind(r, &name, FSM_KIND_ELECT))
        return;
    if (fsm_elect_leader(r->s->fsm, name.p, name.len, &v))
        srv_write_elect(r->out, r->proto, &v, 0);
    else
        resp_w_nil(r->out, r->proto);
}
