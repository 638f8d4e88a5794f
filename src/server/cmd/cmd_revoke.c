/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_revoke.c — LOCK.REVOKE name [DEADLINE ms] [REASON text]: ask the exclusive holder of a
 * lock to let go (cooperative revocation; the rule is src/fsm/revoke.c).
 *
 * The holder's session gets a revoke-requested event on the event stream (XREAD) naming the
 * lock, its token, the deadline that stands, the reason and who asked. With DEADLINE, the leader
 * releases that grant (as an expiry would: lock-delay, then the next waiter with a larger
 * token) once the deadline passed on its monotonic clock, if the same grant still holds the
 * lock (src/server/lease: lease_revoke_*). Who may: admin, or the `revoke` permission with a
 * locks= glob matching the name (commands.def). The answer is the token of the grant asked.
 */
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/cmd/cmd.h"
#include "server/security/audit.h"
#include "server/server.h"

/* Who asked, as the holder is shown it: the user (under --acl-file) and the client's address. */
static size_t requester(const struct srv_req *r, char *out, size_t cap)
{
    char addr[AUDIT_ADDR_BUF]; /* ip:port, "" if the connection is gone */
    srv_audit_conn_addr(r->c, addr);
    int n = r->c && r->c->user ? snprintf(out, cap, "%s@%s", r->c->user->name, addr)
                               : snprintf(out, cap, "%s", addr);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* The options after the name: DEADLINE ms (1..--max-wait), REASON text (at most --max-key
 * bytes, as a session name), each at most once. */
static int revoke_opts(struct srv_req *r, struct fsm_cmd_lock_revoke *c)
{
    bool seen_deadline = false, seen_reason = false;
    for (size_t i = 2; i < r->argc; i += 2) {
        bool deadline = resp_arg_is(&r->argv[i], "DEADLINE");
        bool reason = resp_arg_is(&r->argv[i], "REASON");
        if ((!deadline && !reason) || i + 1 >= r->argc || (deadline && seen_deadline) ||
            (reason && seen_reason)) {
            cmd_reply_err(r,
                          PROTO_ERR " syntax error: LOCK.REVOKE name [DEADLINE ms] [REASON text]");
            return -1;
        }
        if (deadline &&
            cmd_arg_range(r, i + 1, "DEADLINE ms", 1, r->s->cfg.max_wait, &c->deadline_ms))
            return -1;
        if (reason && r->argv[i + 1].len > r->s->cfg.max_key) {
            resp_w_errorf(r->out, PROTO_TOOLARGE " REASON is %zu bytes, the limit is %zu",
                          r->argv[i + 1].len, r->s->cfg.max_key);
            return -1;
        }
        if (reason)
            c->reason = (struct fsm_str){r->argv[i + 1].p, (uint32_t)r->argv[i + 1].len};
        seen_deadline |= deadline;
        seen_reason |= reason;
    }
    return 0;
}

/*
 * (cmd.h; also POST /v1/locks/{name}/revoke, obs/http_revoke.c.)
 * A second revoke of a grant whose deadline runs: the deadline is a length the FSM counts from
 * each revoke's apply and cannot compare across time (src/fsm/revoke.c), so the leader, whose
 * clock measures it, proposes the shorter of the asked length and what is left of the running
 * one ("ask only" keeps what is left). Only with nothing of its own in flight: then the entry
 * applies to the very state read here, never to a later grant of the name. Otherwise the asked
 * length goes as it is and the FSM keeps the shorter length, restarted from its apply: the
 * holder is still told the deadline that is enforced, which may then end later than the
 * running one did, never earlier.
 */
void cmd_revoke_merge_deadline(struct srv *s, struct fsm_cmd_lock_revoke *c)
{
    struct fsm_revoke_view v;
    uint64_t left;
    if (rn_proposals_pending(s->rn) != 0 ||
        !fsm_lock_revoke_info(s->fsm, c->name.p, c->name.len, &v) ||
        !lease_revoke_left(&s->lease.rules, c->name.p, c->name.len, v.token, clock_ms(), &left))
        return;
    if (c->deadline_ms == 0 || left < c->deadline_ms)
        c->deadline_ms = left;
}

void lockRevokeCommand(struct srv_req *r)
{
    char by[FSM_MAX_USER + AUDIT_ADDR_BUF + 2];
    struct fsm_cmd cmd = {.op = FSM_OP_LOCK_REVOKE, .lock_revoke = {.deadline_ms = 0}};
    struct fsm_cmd_lock_revoke *c = &cmd.lock_revoke;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "lock name", &c->name) ||
        cmd_check_kind(r, &c->name, FSM_KIND_LOCK) || revoke_opts(r, c))
        return;
    c->by = (struct fsm_str){by, (uint32_t)requester(r, by, sizeof(by))};
    uint64_t asked = c->deadline_ms;
    cmd_revoke_merge_deadline(r->s, c);
    cmd_propose(r, &cmd);
    if (r->async) { /* proposed: who took locks from whom is the operator's to know */
        char shown[CMD_ARG_TEXT];
        srv_audit(r->s, r->c, "lock.revoke", "name=%s deadline_ms=%llu asked_ms=%llu",
                  cmd_arg_text(&r->argv[1], shown), (unsigned long long)c->deadline_ms,
                  (unsigned long long)asked);
    }
}
