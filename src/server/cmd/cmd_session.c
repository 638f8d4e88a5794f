/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_session.c — SESSION.OPEN / KEEPALIVE / CLOSE / INFO / LIST / REVOKE. The lease rules behind
 * KEEPALIVE are lease.c; this file only carries out what lease_keepalive decides. Ownership:
 * the writes carry their user into the log (cmd_propose); KEEPALIVE and INFO never enter it,
 * so they ask cmd_session_access here, on the leader, against the applied owner (an owner
 * never changes and sids are never reused, so the answer cannot go stale).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/security/audit.h"
#include "server/cmd/cmd.h"

/* Key-value pairs in a SESSION.INFO reply (count them when adding one). */
#define SESSION_INFO_FIELDS 9

/* REENTRANT [MAXCOUNT n] among SESSION.OPEN's options: 1 if REENTRANT was given (then
 * *max is its MAXCOUNT or --reentrant-max-count), 0 if not, -1 (answered) on a bad one. The
 * other options are left in `rest` (rest->argv owned by the caller: free it), for
 * cmd_parse_opts. */
static int reentrant_opts(struct srv_req *r, struct srv_req *rest, uint64_t *max)
{
    int reentrant = 0, counted = 0;
    *rest = *r;
    rest->argv = malloc(r->argc * sizeof(*rest->argv));
    if (!rest->argv) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return -1;
    }
    rest->argc = 0;
    *max = r->s->cfg.reentrant_max_count;
    for (size_t i = 0; i < r->argc; i++) {
        if (i >= 2 && resp_arg_is(&r->argv[i], "REENTRANT") && !reentrant) {
            reentrant = 1;
        } else if (i >= 2 && resp_arg_is(&r->argv[i], "MAXCOUNT") && !counted) {
            if (i + 1 >= r->argc) {
                cmd_reply_err(r, PROTO_ERR " option MAXCOUNT needs 1 argument(s)");
                return -1;
            }
            if (cmd_arg_range(r, ++i, "MAXCOUNT", 1, FSM_MAX_HOLD_COUNT, max))
                return -1;
            counted = 1;
        } else {
            rest->argv[rest->argc++] = r->argv[i];
        }
    }
    if (counted && !reentrant) {
        cmd_reply_err(r, PROTO_ERR " MAXCOUNT needs REENTRANT");
        return -1;
    }
    return reentrant;
}

/* SESSION.OPEN ttl [LOCKDELAY ms] [NAME name] [REENTRANT [MAXCOUNT n]]: REENTRANT proposes
 * SESSION_OPEN_REENTRANT (its own op: a SESSION_OPEN entry's bytes stay what they were). */
void sessionOpenCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 0}};
    struct srv_req rest;
    uint64_t max;
    if (cmd_need_leader(r) ||
        cmd_arg_range(r, 1, "ttl_ms", 1, r->s->cfg.max_ttl, &cmd.session_open.ttl_ms))
        return;
    int reentrant = reentrant_opts(r, &rest, &max);
    int bad =
        reentrant < 0 || cmd_parse_opts(&rest, 2, CMD_OPT_LOCKDELAY | CMD_OPT_NAME, &cmd) != 0;
    free(rest.argv);
    if (bad)
        return;
    if (reentrant) {
        struct fsm_cmd_session_open o = cmd.session_open;
        cmd = (struct fsm_cmd){.op = FSM_OP_SESSION_OPEN_REENTRANT,
                               .session_open_reentrant = {.ttl_ms = o.ttl_ms,
                                                          .lockdelay_ms = o.lockdelay_ms,
                                                          .name = o.name,
                                                          .max_count = max}};
    }
    cmd_propose(r, &cmd);
}

static void keepalive_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv_slot *slot = ctx;
    /* Applied or failed, this checkpoint is no longer in flight: without this every later
     * keepalive of the session would propose another clearing checkpoint (a log entry each). */
    lease_checkpoint_done(&slot->srv->lease.rules, slot->sid);
    if (status != RN_OK)
        srv_reply_status(slot->srv, &slot->out, status);
    else if (reply->kind == FSM_REPLY_ERR)
        resp_w_error(&slot->out, reply->err);
    else
        resp_w_uint(&slot->out, slot->wait_ms);
    srv_slot_done(slot);
}

/*
 * The lease rule is lease_keepalive's: answered at once, or after a clearing checkpoint
 * committed when a checkpoint recorded a shorter lease.
 * Runs after a read barrier (CMD_READ): a barrier that commits in this term proves no later
 * leader had been elected when the keepalive arrived, so a client may count its lease from the
 * moment it sent the keepalive (fl_session_safe_until) even across a fail-over. The deadline
 * is reset here, after the barrier: later than the arrival, never earlier.
 */
void sessionKeepaliveCommand(struct srv_req *r)
{
    uint64_t sid, ttl = 0;
    struct fsm_session_view v;
    if (cmd_need_leader(r) || cmd_arg_u64(r, 1, "sid", &sid) || cmd_live_session(r, sid) ||
        cmd_session_access(r, sid, false))
        return;
    bool checkpointed = fsm_session_info(r->s->fsm, sid, &v) && v.checkpoint_ms;
    enum lease_ka ka = lease_keepalive(&r->s->lease.rules, sid, checkpointed, clock_ms(), &ttl);
    if (ka != LEASE_KA_CLEAR) { /* NOSESSION cannot happen: cmd_live_session just said alive */
        resp_w_uint(r->out, ttl);
        return;
    }
    r->slot->wait_ms = ttl;
    r->slot->sid = sid;
    int rc = srv_propose_checkpoint(r->s, sid, 0, keepalive_done, r->slot);
    if (rc != RN_OK) {
        srv_reply_status(r->s, r->out, rc);
        return;
    }
    r->async = true;
}

void sessionCloseCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = 0}};
    if (cmd_need_leader(r) || cmd_arg_u64(r, 1, "sid", &cmd.session_close.sid) ||
        cmd_live_session(r, cmd.session_close.sid) || cmd_parse_opts(r, 2, CMD_OPT_REQ, &cmd))
        return;
    cmd_propose(r, &cmd);
}

/* One session as SESSION.INFO and SESSION.LIST answer it. */
static void put_session(struct buf *out, int proto, const struct fsm_session_view *v, uint64_t left)
{
    resp_w_map(out, proto, SESSION_INFO_FIELDS + v->reentrant); /* + max_count */
    resp_w_bulk_str(out, "sid");
    resp_w_uint(out, v->sid);
    resp_w_bulk_str(out, "ttl_ms");
    resp_w_uint(out, v->ttl_ms);
    resp_w_bulk_str(out, "lockdelay_ms");
    resp_w_uint(out, v->lockdelay_ms);
    resp_w_bulk_str(out, "name");
    resp_w_bulk(out, v->name.p, v->name.len);
    resp_w_bulk_str(out, "owner");
    resp_w_bulk(out, v->owner.p, v->owner.len);
    resp_w_bulk_str(out, "locks");
    resp_w_uint(out, v->n_locks);
    resp_w_bulk_str(out, "waits");
    resp_w_uint(out, v->n_waits);
    resp_w_bulk_str(out, "keys");
    resp_w_uint(out, v->n_keys);
    resp_w_bulk_str(out, "remaining_ms");
    resp_w_uint(out, left);
    if (v->reentrant) { /* absent for other sessions: their reply is what it always was */
        resp_w_bulk_str(out, "max_count");
        resp_w_uint(out, v->max_count);
    }
}

void sessionInfoCommand(struct srv_req *r)
{
    uint64_t sid;
    struct fsm_session_view v;
    if (cmd_arg_u64(r, 1, "sid", &sid) || cmd_session_access(r, sid, true))
        return;
    if (!fsm_session_info(r->s->fsm, sid, &v)) {
        cmd_no_session(r, sid);
        return;
    }
    put_session(r->out, r->proto, &v, lease_session_remaining(&r->s->lease.rules, sid, clock_ms()));
}

struct list_arg {
    struct srv_req *r;
    struct buf body;
    size_t n;
    uint64_t now;
};

/* Whether SESSION.LIST shows session v to this connection: the rules of SESSION.INFO
 * (cmd_session_access) without its error replies: everything without users (or before owners
 * are recorded), else the user's own sessions, and every session to an admin. */
static bool list_may_see(const struct srv_req *r, const struct fsm_session_view *v)
{
    if (!r->s->auth.on || fsm_format(r->s->fsm) < FSM_FORMAT_2)
        return true;
    if (!r->c || !r->c->user)
        return false;
    const char *u = r->c->user->name;
    return (r->c->user->perms & ACL_ADMIN) ||
           (v->owner.len == strlen(u) && memcmp(v->owner.p, u, v->owner.len) == 0);
}

static void list_one(void *arg, uint64_t sid)
{
    struct list_arg *la = arg;
    struct fsm_session_view v;
    if (!fsm_session_info(la->r->s->fsm, sid, &v) || !list_may_see(la->r, &v))
        return;
    put_session(&la->body, la->r->proto, &v,
                lease_session_remaining(&la->r->s->lease.rules, sid, la->now));
    la->n++;
}

/* SESSION.LIST [AFTER sid] [LIMIT n]: the live sessions above sid in id order, as SESSION.INFO
 * shows each. LIMIT (at most --max-keys-reply, also the default) bounds the sessions looked
 * at, the ones this user may not see included, as KEYS's LIMIT does: it bounds one reply's
 * work on the event loop. */
void sessionListCommand(struct srv_req *r)
{
    uint64_t after = 0, limit = r->s->cfg.max_keys_reply;
    for (size_t i = 1; i < r->argc; i += 2) {
        if (i + 1 >= r->argc ||
            !(resp_arg_is(&r->argv[i], "AFTER") || resp_arg_is(&r->argv[i], "LIMIT"))) {
            cmd_reply_err(r, PROTO_ERR " syntax error: SESSION.LIST [AFTER sid] [LIMIT n]");
            return;
        }
        if (resp_arg_is(&r->argv[i], "AFTER")
                ? cmd_arg_u64(r, i + 1, "AFTER", &after)
                : cmd_arg_range(r, i + 1, "LIMIT", 1, r->s->cfg.max_keys_reply, &limit))
            return;
    }
    struct list_arg la = {.r = r, .n = 0, .now = clock_ms()};
    buf_init(&la.body);
    fsm_sessions_after(r->s->fsm, after, (size_t)limit, list_one, &la);
    resp_w_array(r->out, la.n);
    buf_append(r->out, la.body.p, la.body.len);
    buf_free(&la.body);
}

/* SESSION.REVOKE sid (admin): the session ends now as an expiry would, lock-delay and all. */
void sessionRevokeCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_REVOKE, .session_revoke = {.sid = 0}};
    if (cmd_need_leader(r) || cmd_arg_u64(r, 1, "sid", &cmd.session_revoke.sid) ||
        cmd_live_session(r, cmd.session_revoke.sid))
        return;
    srv_audit(r->s, r->c, "session.revoke", "sid=%llu", (unsigned long long)cmd.session_revoke.sid);
    cmd_propose(r, &cmd);
}
