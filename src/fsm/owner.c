/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/owner.c — session ownership: which sessions a command names, and whether its acting user
 * may name them (the rule is in fsm.h, at fsm_apply).
 *
 * Owns the per-op table of "the session this command acts on" and which ops an admin may run
 * on another user's session. Pure: reads the state, changes nothing; fsm_apply runs it before
 * the request table and the op, so a refused command changes nothing and spends no seq.
 */
#include <string.h>

#include "fsm/internal.h"

/* The session the payload of `c` acts on (0 = none: PUT without LEASE, DEL, members, ...). */
static uint64_t acting_sid(const struct fsm_cmd *c)
{
    switch (c->op) {
    case FSM_OP_SESSION_CLOSE:
        return c->session_close.sid;
    case FSM_OP_SESSION_EXPIRE:
        return c->session_expire.sid;
    case FSM_OP_SESSION_REVOKE:
        return c->session_revoke.sid;
    case FSM_OP_SESSION_CHECKPOINT:
        return c->session_checkpoint.sid;
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_SHARED:
        return fsm_cmd_lock_of(c)->sid;
    case FSM_OP_UNLOCK:
        return c->unlock.sid;
    case FSM_OP_CANCEL_WAIT:
        return c->cancel_wait.sid;
    case FSM_OP_PUT:
        return c->put.lease_sid;
    case FSM_OP_SEM_ACQUIRE:
        return c->sem_acquire.sid;
    case FSM_OP_SEM_RELEASE:
        return c->sem_release.sid;
    case FSM_OP_ELECT_CAMPAIGN:
        return c->elect_campaign.sid;
    case FSM_OP_ELECT_PROCLAIM:
        return c->elect_proclaim.sid;
    case FSM_OP_ELECT_RESIGN:
        return c->elect_resign.sid;
    default:
        return 0;
    }
}

/* An operator's forced release: end a session, or take a lock from it. Acting *as* another
 * user's session (LOCK, keeping it alive, leasing keys to it, spending its seqs) stays the
 * owner's alone, admin or not. */
static bool admin_may(const struct fsm_cmd *c)
{
    return c->admin && (c->op == FSM_OP_SESSION_CLOSE || c->op == FSM_OP_SESSION_REVOKE ||
                        c->op == FSM_OP_UNLOCK);
}

static bool owned_by(const struct sess *s, struct fsm_str user)
{
    return s->owner_len == user.len && (!user.len || memcmp(sess_owner(s), user.p, user.len) == 0);
}

/* The session of another user that `c` names and may not, 0 if none. */
static uint64_t foreign_sid(const struct fsm *f, const struct fsm_cmd *c)
{
    if (!c->checked)
        return 0;
    const struct sess *s = sess_find(f, acting_sid(c));
    if (s && !owned_by(s, c->user) && !admin_may(c))
        return s->sid;
    s = sess_find(f, c->req_sid);
    if (s && !owned_by(s, c->user))
        return s->sid;
    return 0;
}

/* Another user's session is answered exactly as a missing one (fsm_nosession): a different
 * answer would tell a tenant which session ids are alive (ids are small revisions, easy to
 * walk). An admin, who may list every session anyway, is told why. */
int owner_check(const struct fsm *f, const struct fsm_cmd *c, struct fsm_reply *r)
{
    uint64_t sid = foreign_sid(f, c);
    if (!sid)
        return 0;
    if (!c->admin)
        return fsm_nosession(r, sid);
    char u[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_NOPERM " user %s does not own session %llu",
                  fsm_printable(c->user.p, c->user.len, u, sizeof(u)), (unsigned long long)sid);
    return -1;
}

uint64_t fsm_cmd_check_owner(const struct fsm *f, const struct fsm_cmd *c)
{
    return foreign_sid(f, c);
}
