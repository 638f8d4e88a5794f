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

#define SEM_INFO_FIELDS 5
#define HOLDER_FIELDS 2

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

/* SEM.ACQUIRE name sid limit [WAIT ms] [REQ sid seq] -> token | nil */
void semAcquireCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SEM_ACQUIRE, .sem_acquire = {.wait_ms = 0}};
    struct fsm_cmd_sem_acquire *p = &cmd.sem_acquire;
    if (prim_args(r, "semaphore name", &p->name, &p->sid) ||
        cmd_arg_range(r, 3, "limit", 1, FSM_MAX_SEM_LIMIT, &p->limit) ||
        cmd_parse_opts(r, 4, CMD_OPT_WAIT | CMD_OPT_REQ, &cmd))
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

static void sem_holder_cb(void *arg, uint64_t sid, uint64_t token, bool shared)
{
    struct srv_req *r = arg;
    (void)shared;
    resp_w_map(r->out, r->proto, HOLDER_FIELDS);
    resp_w_bulk_str(r->out, "sid");
    resp_w_uint(r->out, sid);
    resp_w_bulk_str(r->out, "token");
    resp_w_uint(r->out, token);
}

static void sem_waiter_cb(void *arg, uint64_t sid, uint64_t wait_ms)
{
    struct srv_req *r = arg;
    (void)wait_ms;
    resp_w_uint(r->out, sid);
}

/* SEM.INFO name -> nil | {limit, holders: [{sid, token}...], waiters: [sid...], lockdelay} */
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
    resp_w_map(r->out, r->proto, SEM_INFO_FIELDS);
    resp_w_bulk_str(r->out, "limit");
    resp_w_uint(r->out, v.limit);
    resp_w_bulk_str(r->out, "permits");
    resp_w_uint(r->out, v.n_holders);
    resp_w_bulk_str(r->out, "holders");
    resp_w_array(r->out, v.n_holders);
    fsm_lock_holders(r->s->fsm, name.p, name.len, sem_holder_cb, r);
    resp_w_bulk_str(r->out, "waiters");
    resp_w_array(r->out, v.n_waiters);
    fsm_lock_waiters(r->s->fsm, name.p, name.len, sem_waiter_cb, r);
    resp_w_bulk_str(r->out, "lockdelay");
    resp_w_uint(r->out, v.in_lockdelay ? 1 : 0);
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
