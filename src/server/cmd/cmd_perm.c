/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_perm.c — the check srv_dispatch makes before running a command under --acl-file, from the
 * command's row in commands.def (its perm, alt and names columns): every command has one, so
 * none can be added without saying what it needs (the row does not compile without it).
 *
 * Order of the answers: not authenticated -> -NOAUTH (for every command but PING, HELLO, AUTH,
 * QUIT, as Redis); then the permission; then each key / lock name it names (-NOPERM). A denied
 * command changes nothing: it is refused before its handler runs. Every refusal is counted
 * (fencelock_permission_denials_total) and written to --audit-log (permission.denied).
 *
 * Session ownership is the FSM's rule (src/fsm/owner.c), applied to every checked log entry;
 * cmd_acting_user marks a proposal with its user and asks the same rule first, and
 * cmd_session_access answers it for what never enters the log (KEEPALIVE, SESSION.INFO).
 */
#include <string.h>

#include "server/cmd/cmd.h"

_Static_assert(ACL_NAME_MAX <= FSM_MAX_USER, "an ACL user name must fit a log entry's user");
_Static_assert((CMD_PERM_OPEN & ACL_ALL) == 0, "CMD_PERM_OPEN is no acl_perm bit");

#define DENY_NAME_SHOWN 64 /* bytes of a refused key / lock name quoted in the reply */
#define DENY_CMD_SHOWN 32  /* bytes of the command's name in the audit line */

/* -NOPERM naming the user and what was missing; counted and audited. Always -1. */
static int deny(struct srv_req *r, const char *what, const struct resp_arg *name)
{
    char msg[256];
    int shown = (int)(name && name->len > DENY_NAME_SHOWN ? DENY_NAME_SHOWN : name ? name->len : 0);
    r->s->m.perm_denials++;
    for (int i = 0; i < shown; i++) /* a name with control bytes must not break the reply */
        if ((unsigned char)name->p[i] < ' ' || name->p[i] == 0x7f) {
            shown = i;
            break;
        }
    snprintf(msg, sizeof msg, PROTO_NOPERM " user %s has no permission %s%s%.*s%s",
             r->c->user->name, what, name ? " '" : "", shown, name ? name->p : "", name ? "'" : "");
    resp_w_error(r->out, msg);
    size_t cl = r->argv[0].len > DENY_CMD_SHOWN ? DENY_CMD_SHOWN : r->argv[0].len;
    if (srv_seclog_allow(r->s)) /* --security-log-rate: the rest counted, reported */
        srv_audit(r->s, r->c, "permission.denied", "%.*s: %s", (int)cl, r->argv[0].p, msg);
    return -1;
}

/* FENCE name token among PUT / DEL options (from names.opts_from on; 0: the command has none):
 * the fence names a lock the user must be allowed. */
static int check_fence(struct srv_req *r, const struct srv_cmd *cmd)
{
    for (size_t i = cmd->names.opts_from; i && i + 1 < r->argc; i++)
        if (resp_arg_is(&r->argv[i], "FENCE") &&
            !acl_may_lock(r->c->user, r->argv[i + 1].p, r->argv[i + 1].len))
            return deny(r, "to access lock", &r->argv[i + 1]);
    return 0;
}

static bool perms_ok(unsigned perms, const struct srv_cmd *cmd)
{
    return (perms & cmd->perm) == cmd->perm || (perms & cmd->alt);
}

/* What the row's names column refuses u for the name arg[n] (NULL: no name given, or
 * allowed): the one name rule of a command, for the check before it runs and for a parked one. */
static const char *target_refusal(const struct acl_user *u, const struct srv_cmd *cmd,
                                  const char *arg, size_t n)
{
    switch (cmd->names.target) {
    case CMD_T_KEY:
        return arg && !acl_may_key(u, arg, n) ? "to access key" : NULL;
    case CMD_T_LOCK:
    case CMD_T_LOCKS: /* one of the names (check_names asks for each) */
        return arg && !acl_may_lock(u, arg, n) ? "to access lock" : NULL;
    case CMD_T_ALLKEYS:
        return u->keys ? "to count keys outside its keys= globs" : NULL;
    case CMD_T_ALLNAMES:
        return u->keys || u->locks ? "to read every event (it has keys= or locks= globs)" : NULL;
    case CMD_T_TXN: /* check_names walks its arguments (cmd_txn_names) */
    case CMD_T_NONE:
        return NULL;
    }
    return NULL;
}

/* LOCK.MULTI: every name it counts (as many as are there: a short list is its handler's error). */
static int check_lock_names(struct srv_req *r, const struct srv_cmd *cmd)
{
    uint64_t n = 0;
    size_t at = cmd->names.arg;
    if (at >= r->argc || resp_parse_u64(r->argv[at].p, r->argv[at].len, &n))
        return 0; /* the handler refuses the count */
    for (size_t i = at + 1; i < r->argc && i - at <= n; i++)
        if (!acl_may_lock(r->c->user, r->argv[i].p, r->argv[i].len))
            return deny(r, "to access lock", &r->argv[i]);
    return 0;
}

static int check_names(struct srv_req *r, const struct srv_cmd *cmd)
{
    enum srv_cmd_target t = cmd->names.target;
    if (t == CMD_T_LOCKS)
        return check_lock_names(r, cmd);
    if (t == CMD_T_TXN) { /* every key and lock it compares or writes, and its FENCE lock */
        size_t at;
        const char *why = cmd_txn_names(r->c->user, r->argv, r->argc, &at);
        return why ? deny(r, why, at ? &r->argv[at] : NULL) : 0;
    }
    const struct resp_arg *a = cmd->names.arg < r->argc ? &r->argv[cmd->names.arg] : NULL;
    const char *why = target_refusal(r->c->user, cmd, a ? a->p : NULL, a ? a->len : 0);
    if (why)
        return deny(r, why, t == CMD_T_KEY || t == CMD_T_LOCK ? a : NULL);
    return t == CMD_T_KEY ? check_fence(r, cmd) : 0;
}

bool cmd_perm_allows(const struct acl_user *u, const struct srv_cmd *cmd, const char *arg, size_t n)
{
    return u && cmd && perms_ok(u->perms, cmd) && !target_refusal(u, cmd, arg, n);
}

void cmd_perm_lost(struct buf *out, const struct acl_user *u, const struct srv_cmd *cmd)
{
    resp_w_errorf(out,
                  PROTO_NOPERM " user %s no longer has the permission for this parked '%s' "
                               "(ACL reloaded)",
                  u ? u->name : "?", cmd ? cmd->name : "?");
}

int cmd_perm_check(struct srv_req *r, const struct srv_cmd *cmd)
{
    if (!r->s->auth.on || !r->c)
        return 0;
    /* PING with a payload before AUTH would echo up to --max-bulk bytes per command to anyone
     * (as Redis 6: only a plain PING answers PONG before AUTH) */
    if (cmd && cmd->perm == CMD_PERM_OPEN &&
        !(r->argc > 1 && !r->c->user && cmd == srv_cmd_at(SRV_CMD_PING)))
        return 0;
    if (!r->c->user) {
        resp_w_error(r->out, PROTO_NOAUTH " Authentication required.");
        return -1;
    }
    if (!cmd)
        return 0; /* unknown: answered as such */
    if (!perms_ok(r->c->user->perms, cmd)) {
        char need[64], alt[64] = "";
        acl_perm_names(cmd->perm, need, sizeof need);
        if (cmd->alt)
            acl_perm_names(cmd->alt, alt, sizeof alt);
        char what[160];
        snprintf(what, sizeof what, "to run '%s' (needs %s%s%s)", cmd->name, need,
                 alt[0] ? " or " : "", alt);
        return deny(r, what, NULL);
    }
    return check_names(r, cmd);
}

bool cmd_may_key(const struct srv_req *r, const char *key, size_t n)
{
    if (!r->s->auth.on)
        return true;
    return r->c && r->c->user && acl_may_key(r->c->user, key, n);
}

bool cmd_may_lock(const struct srv_req *r, const char *name, size_t n)
{
    if (!r->s->auth.on)
        return true;
    return r->c && r->c->user && acl_may_lock(r->c->user, name, n);
}

static bool is_admin(const struct srv_req *r)
{
    return r->c && r->c->user && (r->c->user->perms & ACL_ADMIN);
}

/* Another user's session: answered as a missing one (no oracle of live ids), except to an
   admin, who may list the sessions anyway and is told why. Always -1. */
static int cmd_foreign_session(struct srv_req *r, uint64_t sid)
{
    if (!is_admin(r))
        return cmd_no_session(r, sid);
    resp_w_errorf(r->out, PROTO_NOPERM " user %s does not own session %llu", r->c->user->name,
                  (unsigned long long)sid);
    return -1;
}

int cmd_session_access(struct srv_req *r, uint64_t sid, bool admin_ok)
{
    struct fsm_session_view v;
    /* Before the cluster reads format 2 no owner is recorded: ownership is not enforced. */
    if (!r->s->auth.on || fsm_format(r->s->fsm) < FSM_FORMAT_2 ||
        !fsm_session_info(r->s->fsm, sid, &v))
        return 0;
    if (!r->c || !r->c->user) { /* an orphaned read: nobody to act for */
        resp_w_error(r->out, PROTO_NOPERM " the connection is gone");
        return -1;
    }
    const char *u = r->c->user->name;
    if ((v.owner.len == strlen(u) && memcmp(v.owner.p, u, v.owner.len) == 0) ||
        (admin_ok && is_admin(r)))
        return 0;
    r->s->m.perm_denials++;
    return cmd_foreign_session(r, sid);
}

int cmd_acting_user(struct srv_req *r, struct fsm_cmd *cmd)
{
    int gate = srv_format_gate(r->s, cmd, r->out);
    if (gate)
        return gate < 0 ? -1 : 0;
    cmd->checked = r->s->auth.on || cmd->req_sid;
    if (r->s->auth.on && r->c && r->c->user) {
        cmd->user.p = r->c->user->name;
        cmd->user.len = (uint32_t)strlen(r->c->user->name);
        cmd->admin = is_admin(r);
    }
    uint64_t foreign = fsm_cmd_check_owner(r->s->fsm, cmd);
    if (foreign == 0)
        return 0;
    r->s->m.perm_denials++;
    return cmd_foreign_session(r, foreign);
}
