/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_perm.c — what every command needs of the connection's user under --acl-file, and the
 * check srv_dispatch makes before running a command.
 *
 * One row per command of the command table (cmd.c and cmd_conn.c): a command without a row is
 * refused to every user (never allowed by default), and test_acl.c's
 * test_every_command_in_the_command_table_has_a_permission_rule fails until it has one. To add
 * a command: add its row here with the permission (acl.h) and which argument is a key or a lock
 * name; docs/security.md lists the table.
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

enum perm_target {
    PT_NONE = 0,
    PT_KEY,      /* argv[arg] is a key; a FENCE name among the options is a lock */
    PT_LOCK,     /* argv[arg] is a lock name */
    PT_ALLKEYS,  /* counts every key (DBSIZE): only for users without keys= */
    PT_ALLNAMES, /* sees every key and lock name and value (the event stream): only for users
                    without keys= or locks= (events are not filtered per user yet) */
};

/* perm: enum acl_perm bits the user needs all of; PERM_OPEN answers before AUTH; PERM_ANY
 * any authenticated user. */
#define PERM_OPEN 0x100u
#define PERM_ANY 0u

struct perm_rule {
    const char *name;
    unsigned perm;
    enum perm_target target;
    unsigned arg;       /* PT_KEY / PT_LOCK: the argument's index */
    unsigned opts_from; /* PT_KEY: options start here (FENCE name token) */
    unsigned alt;       /* 0, or bits any one of which also suffices (peer's commands: admin) */
};

static const struct perm_rule perm_rules[] = {
    /* connection: what clients send on connect, and the discovery clients need */
    {"PING", PERM_OPEN, PT_NONE, 0, 0, 0},
    {"HELLO", PERM_OPEN, PT_NONE, 0, 0, 0},
    {"AUTH", PERM_OPEN, PT_NONE, 0, 0, 0},
    {"QUIT", PERM_OPEN, PT_NONE, 0, 0, 0},
    {"ECHO", PERM_ANY, PT_NONE, 0, 0, 0},
    {"SELECT", PERM_ANY, PT_NONE, 0, 0, 0},
    {"CLIENT", PERM_ANY, PT_NONE, 0, 0, 0},
    {"COMMAND", PERM_ANY, PT_NONE, 0, 0, 0},
    {"READONLY", PERM_ANY, PT_NONE, 0, 0, 0},
    {"READWRITE", PERM_ANY, PT_NONE, 0, 0, 0},
    {"CLUSTER.INFO", PERM_ANY, PT_NONE, 0, 0, 0},
    {"CLUSTER.MEMBERS", PERM_ANY, PT_NONE, 0, 0, 0},
    /* admin */
    {"INFO", ACL_ADMIN, PT_NONE, 0, 0, 0},
    {"CLUSTER.REMOVE", ACL_ADMIN, PT_NONE, 0, 0, 0},
    {"CLUSTER.TRANSFER", ACL_ADMIN, PT_NONE, 0, 0, 0},
    {"SNAPSHOT.SAVE", ACL_ADMIN, PT_NONE, 0, 0, 0}, /* every key, lock and session */
    /* what a member sends for itself (members.c, as --peer-user): peer, or admin */
    {"CLUSTER.ANNOUNCE", ACL_PEER, PT_NONE, 0, 0, ACL_ADMIN},
    {"CLUSTER.ADD", ACL_PEER, PT_NONE, 0, 0, ACL_ADMIN},
    /* sessions and locks */
    {"SESSION.OPEN", ACL_LOCK, PT_NONE, 0, 0, 0},
    {"SESSION.KEEPALIVE", ACL_LOCK, PT_NONE, 0, 0, 0},
    {"SESSION.CLOSE", ACL_LOCK, PT_NONE, 0, 0, 0},
    {"SESSION.INFO", ACL_READ, PT_NONE, 0, 0, 0}, /* another user's: admin (cmd_session_access) */
    {"SESSION.REVOKE", ACL_ADMIN, PT_NONE, 0, 0, 0},
    {"LOCK", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"UNLOCK", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"LOCK.INFO", ACL_READ, PT_LOCK, 1, 0, 0},
    {"FENCE.CHECK", ACL_READ, PT_LOCK, 1, 0, 0},
    /* a signature is a credential a guarded resource accepts as the holder's: only a user that
       may take that lock may mint one (read alone let any reader act as the holder); read as
       well, since it answers from the lock's state */
    {"FENCE.SIGN", ACL_READ | ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"FENCE.VERIFY", ACL_READ, PT_LOCK, 1, 0, 0},
    {"LOCKS", ACL_READ, PT_NONE, 0, 0, 0}, /* filtered: cmd_may_lock */
    /* semaphores and elections: their names are lock names (locks= globs) */
    {"SEM.ACQUIRE", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"SEM.RELEASE", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"SEM.INFO", ACL_READ, PT_LOCK, 1, 0, 0},
    {"ELECT.CAMPAIGN", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"ELECT.PROCLAIM", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"ELECT.RESIGN", ACL_LOCK, PT_LOCK, 1, 0, 0},
    {"ELECT.LEADER", ACL_READ, PT_LOCK, 1, 0, 0},
    {"ELECT.OBSERVE", ACL_READ, PT_LOCK, 1, 0, 0},
    /* keys */
    {"PUT", ACL_WRITE, PT_KEY, 1, 3, 0},
    {"DEL", ACL_WRITE, PT_KEY, 1, 2, 0},
    {"GET", ACL_READ, PT_KEY, 1, 0, 0},
    {"KV.GET", ACL_READ, PT_KEY, 1, 0, 0},
    {"KEYS", ACL_READ, PT_NONE, 0, 0, 0}, /* filtered: cmd_may_key */
    {"DBSIZE", ACL_READ, PT_ALLKEYS, 0, 0, 0},
    /* the event stream (cmd_watch.c); the stream writes are refused to everybody anyway */
    {"XREAD", ACL_READ, PT_ALLNAMES, 0, 0, 0},
    {"XLEN", ACL_READ, PT_ALLNAMES, 0, 0, 0},
    {"XINFO", ACL_READ, PT_ALLNAMES, 0, 0, 0},
    {"XADD", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XDEL", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XTRIM", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XSETID", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XGROUP", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XREADGROUP", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XACK", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XCLAIM", PERM_ANY, PT_NONE, 0, 0, 0},
    {"XAUTOCLAIM", PERM_ANY, PT_NONE, 0, 0, 0},
};

#define N_PERM_RULES (sizeof perm_rules / sizeof perm_rules[0])

static const struct perm_rule *rule_of(const char *name, size_t len)
{
    for (size_t i = 0; i < N_PERM_RULES; i++)
        if (strlen(perm_rules[i].name) == len && strncasecmp(perm_rules[i].name, name, len) == 0)
            return &perm_rules[i];
    return NULL;
}

bool cmd_perm_rule(const char *name, size_t len)
{
    return rule_of(name, len) != NULL;
}

size_t cmd_perm_count(void)
{
    return N_PERM_RULES;
}

const char *cmd_perm_name(size_t i)
{
    return i < N_PERM_RULES ? perm_rules[i].name : NULL;
}

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

/* FENCE name token among PUT / DEL options: the fence names a lock the user must be allowed. */
static int check_fence(struct srv_req *r, const struct perm_rule *rule)
{
    for (size_t i = rule->opts_from; i + 1 < r->argc; i++)
        if (resp_arg_is(&r->argv[i], "FENCE") &&
            !acl_may_lock(r->c->user, r->argv[i + 1].p, r->argv[i + 1].len))
            return deny(r, "to access lock", &r->argv[i + 1]);
    return 0;
}

static bool perms_ok(unsigned perms, const struct perm_rule *rule)
{
    return (perms & rule->perm) == rule->perm || (perms & rule->alt);
}

/* What the rule's target refuses u for the name arg[n] (NULL: no name given, or allowed):
 * the one name rule of a command, for the check before it runs and for a parked one. */
static const char *target_refusal(const struct acl_user *u, const struct perm_rule *rule,
                                  const char *arg, size_t n)
{
    switch (rule->target) {
    case PT_KEY:
        return arg && !acl_may_key(u, arg, n) ? "to access key" : NULL;
    case PT_LOCK:
        return arg && !acl_may_lock(u, arg, n) ? "to access lock" : NULL;
    case PT_ALLKEYS:
        return u->keys ? "to count keys outside its keys= globs" : NULL;
    case PT_ALLNAMES:
        return u->keys || u->locks ? "to read every event (it has keys= or locks= globs)" : NULL;
    case PT_NONE:
        return NULL;
    }
    return NULL;
}

static int check_names(struct srv_req *r, const struct perm_rule *rule)
{
    const struct resp_arg *a = rule->arg < r->argc ? &r->argv[rule->arg] : NULL;
    const char *why = target_refusal(r->c->user, rule, a ? a->p : NULL, a ? a->len : 0);
    if (why)
        return deny(r, why, rule->target == PT_KEY || rule->target == PT_LOCK ? a : NULL);
    return rule->target == PT_KEY ? check_fence(r, rule) : 0;
}

bool cmd_perm_allows(const struct acl_user *u, const char *name, const char *arg, size_t n)
{
    const struct perm_rule *rule = rule_of(name, strlen(name));
    return u && rule && perms_ok(u->perms, rule) && !target_refusal(u, rule, arg, n);
}

void cmd_perm_lost(struct buf *out, const struct acl_user *u, const char *name)
{
    resp_w_errorf(out,
                  PROTO_NOPERM " user %s no longer has the permission for this parked '%s' "
                               "(ACL reloaded)",
                  u ? u->name : "?", name);
}

int cmd_perm_check(struct srv_req *r, const struct srv_cmd *cmd)
{
    if (!r->s->auth.on || !r->c)
        return 0;
    const struct perm_rule *rule = cmd ? rule_of(cmd->name, cmd->len) : NULL;
    /* PING with a payload before AUTH would echo up to --max-bulk bytes per command to anyone
     * (as Redis 6: only a plain PING answers PONG before AUTH) */
    if (rule && rule->perm == PERM_OPEN &&
        !(r->argc > 1 && !r->c->user && !strcmp(rule->name, "PING")))
        return 0;
    if (!r->c->user) {
        resp_w_error(r->out, PROTO_NOAUTH " Authentication required.");
        return -1;
    }
    if (!cmd)
        return 0; /* unknown: answered as such */
    if (!rule)
        return deny(r, "to run a command without a rule:", &r->argv[0]);
    if (!perms_ok(r->c->user->perms, rule)) {
        char need[64], alt[64] = "";
        acl_perm_names(rule->perm, need, sizeof need);
        if (rule->alt)
            acl_perm_names(rule->alt, alt, sizeof alt);
        char what[160];
        snprintf(what, sizeof what, "to run '%s' (needs %s%s%s)", cmd->name, need,
                 alt[0] ? " or " : "", alt);
        return deny(r, what, NULL);
    }
    return check_names(r, rule);
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
