/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/owner.c — session ownership: which sessions a command names, and whether its acting user
 * may name them (the rule is in fsm.h, at fsm_apply).
 *
 * Reads "the session this command acts on" and which ops an admin may run on another user's
 * session from the op descriptor (ops.h: the SID field, the admin column). Pure: reads the
 * state, changes nothing; fsm_apply runs it before the request table and the op, so a refused
 * command changes nothing and spends no seq.
 */
#include <string.h>

#include "fsm/internal.h"

/* An operator's forced release: end a session, or take a lock from it (the ops whose row in
 * ops.h says admin). Acting *as* another user's session (LOCK, keeping it alive, leasing keys
 * to it, spending its seqs) stays the owner's alone, admin or not. */
static bool admin_may(const struct fsm_cmd *c)
{
    const struct fsm_op_desc *d = fsm_op_desc(c->op);
    return c->admin && d && d->admin;
}

bool fsm_sess_owned_by(const struct sess *s, struct fsm_str user)
{
    return s->owner_len == user.len && (!user.len || memcmp(sess_owner(s), user.p, user.len) == 0);
}

/* The session of another user that `c` names and may not, 0 if none. */
static uint64_t foreign_sid(const struct fsm *f, const struct fsm_cmd *c)
{
    if (!c->checked)
        return 0;
    const struct sess *s = fsm_sess_find(f, fsm_cmd_acting_sid(c));
    if (s && !fsm_sess_owned_by(s, c->user) && !admin_may(c))
        return s->sid;
    s = fsm_sess_find(f, c->req_sid);
    if (s && !fsm_sess_owned_by(s, c->user))
        return s->sid;
    return 0;
}

/* Another user's session is answered exactly as a missing one (fsm_nosession): a different
 * answer would tell a tenant which session ids are alive (ids are small revisions, easy to
 * walk). An admin, who may list every session anyway, is told why. */
int fsm_owner_check(const struct fsm *f, const struct fsm_cmd *c, struct fsm_reply *r)
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
