/*
 * cmd.c — the command table: argument checks, proposals, reads, local commands.
 *
 * Every command is `static void xxxCommand(struct srv_req *r)`. Paths (srv_dispatch):
 *   CMD_LOCAL  answered at once (PING, HELLO, INFO, SESSION.KEEPALIVE, ...)
 *   CMD_WRITE  validated here, encoded and proposed; answered when applied (write_done)
 *   CMD_READ   queued for the next barrier, then run against the FSM (srv_run_read)
 * Validation happens before proposing, so malformed commands never enter the log; the FSM
 * checks the semantic rules again when it applies (sessions may end in between).
 */
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define ERR_ARGS "ERR wrong number of arguments for '%.*s' command"
#define ERR_ARGS_S "ERR wrong number of arguments for '%s' command"

/* An argument as error text: at most 64 bytes of it, every byte outside printable ASCII as
 * \xNN, so a NUL or a line end cannot cut or break the reply. `out` holds >= 4*64+1 bytes. */
#define ARG_SHOWN 64
#define ARG_TEXT (4 * ARG_SHOWN + 1)
static const char *arg_text(const struct resp_arg *a, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = a->len > ARG_SHOWN ? ARG_SHOWN : a->len, o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)a->p[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
            out[o++] = (char)ch;
            continue;
        }
        out[o++] = '\\';
        out[o++] = 'x';
        out[o++] = hex[ch >> 4];
        out[o++] = hex[ch & 15];
    }
    out[o] = 0;
    return out;
}

static void reply_err(struct srv_req *r, const char *msg)
{
    resp_w_error(r->out, msg);
}

void srv_reply_status(struct srv *s, struct buf *out, int status)
{
    struct buf addr;
    switch (status) {
    case RN_NOTLEADER:
        buf_init(&addr);
        if (srv_leader_client_address(s, &addr) == 0 && addr.len)
            resp_w_errorf(out, "NOTLEADER %.*s", (int)addr.len, addr.p);
        else
            resp_w_error(out, "NOLEADER no leader is known right now; retry later");
        buf_free(&addr);
        break;
    case RN_UNKNOWN:
        resp_w_error(out, "UNKNOWN leadership was lost after the command was proposed: it may or "
                          "may not have applied; retry with the same REQ sid seq");
        break;
    default:
        resp_w_error(out, "ERR server unavailable (shutting down or out of memory)");
        break;
    }
}

/* A write or a linearizable read needs a ready leader. */
static int need_leader(struct srv_req *r)
{
    if (r->s->ready)
        return 0;
    if (r->s->role == RN_LEADER)
        resp_w_error(r->out, "NOLEADER leader elected but not ready yet; retry");
    else
        srv_reply_status(r->s, r->out, RN_NOTLEADER);
    return -1;
}

static int arg_u64(struct srv_req *r, size_t i, const char *what, uint64_t *v)
{
    if (resp_parse_u64(r->argv[i].p, r->argv[i].len, v) == 0)
        return 0;
    resp_w_errorf(r->out, "ERR %s is not a valid unsigned integer", what);
    return -1;
}

static int arg_range(struct srv_req *r, size_t i, const char *what, uint64_t lo, uint64_t hi,
                     uint64_t *v)
{
    if (arg_u64(r, i, what, v))
        return -1;
    if (*v < lo || *v > hi) {
        resp_w_errorf(r->out, "ERR %s must be between %llu and %llu", what, (unsigned long long)lo,
                      (unsigned long long)hi);
        return -1;
    }
    return 0;
}

/* Names and keys: non-empty, at most --max-key bytes. */
static int arg_name(struct srv_req *r, size_t i, const char *what, struct fsm_str *out)
{
    const struct resp_arg *a = &r->argv[i];
    if (a->len == 0) {
        resp_w_errorf(r->out, "ERR %s must not be empty", what);
        return -1;
    }
    if (a->len > r->s->cfg.max_key) {
        resp_w_errorf(r->out, "TOOLARGE %s is %zu bytes, the limit is %zu", what, a->len,
                      r->s->cfg.max_key);
        return -1;
    }
    out->p = a->p;
    out->len = (uint32_t)a->len;
    return 0;
}

/* A session named by a command must be alive and not already expiring on this leader. */
static int live_session(struct srv_req *r, uint64_t sid)
{
    struct srv_sess *e = srv_sess_get(r->s, sid);
    if (e && !e->expiring)
        return 0;
    resp_w_errorf(r->out, "NOSESSION session %llu is not alive", (unsigned long long)sid);
    return -1;
}

/* ---- options: LEASE sid, FENCE name token, IFREV rev, REQ sid seq, WAIT ms, ... ---- */

enum {
    OPT_LEASE = 1,
    OPT_FENCE = 2,
    OPT_IFREV = 4,
    OPT_REQ = 8,
    OPT_WAIT = 16,
    OPT_LOCKDELAY = 32,
    OPT_NAME = 64
};

static const struct {
    const char *word;
    size_t len;
    int bit;
    int nargs;
} opt_defs[] = {
#define OPT(word, bit, nargs)                                                                      \
    {                                                                                              \
        word, sizeof(word) - 1, bit, nargs                                                         \
    }
    OPT("LEASE", OPT_LEASE, 1), OPT("FENCE", OPT_FENCE, 2), OPT("IFREV", OPT_IFREV, 1),
    OPT("REQ", OPT_REQ, 2),     OPT("WAIT", OPT_WAIT, 1),   OPT("LOCKDELAY", OPT_LOCKDELAY, 1),
    OPT("NAME", OPT_NAME, 1),
#undef OPT
};

static int opt_value(struct srv_req *r, int bit, size_t i, struct fsm_cmd *cmd)
{
    const struct srv_config *cfg = &r->s->cfg;
    switch (bit) {
    case OPT_LEASE:
        if (arg_u64(r, i, "LEASE sid", &cmd->put.lease_sid) || live_session(r, cmd->put.lease_sid))
            return -1;
        return 0;
    case OPT_FENCE:
        fsm_cmd_cond(cmd)->has_fence = true;
        if (arg_name(r, i, "FENCE lock name", &fsm_cmd_cond(cmd)->fence_name))
            return -1;
        return arg_u64(r, i + 1, "FENCE token", &fsm_cmd_cond(cmd)->fence_token);
    case OPT_IFREV:
        fsm_cmd_cond(cmd)->has_ifrev = true;
        return arg_u64(r, i, "IFREV revision", &fsm_cmd_cond(cmd)->ifrev);
    case OPT_REQ:
        if (arg_u64(r, i, "REQ sid", &cmd->req_sid) ||
            arg_range(r, i + 1, "REQ seq", 1, INT64_MAX, &cmd->req_seq))
            return -1;
        return live_session(r, cmd->req_sid);
    case OPT_WAIT:
        return arg_range(r, i, "WAIT ms", 0, cfg->max_wait, &cmd->lock.wait_ms);
    case OPT_LOCKDELAY:
        return arg_range(r, i, "LOCKDELAY ms", 0, cfg->max_lockdelay,
                         &cmd->session_open.lockdelay_ms);
    case OPT_NAME:
        if (r->argv[i].len > cfg->max_key) {
            resp_w_errorf(r->out, "TOOLARGE NAME is over %zu bytes", cfg->max_key);
            return -1;
        }
        cmd->session_open.name.p = r->argv[i].p;
        cmd->session_open.name.len = (uint32_t)r->argv[i].len;
        return 0;
    }
    return -1;
}

static int parse_opts(struct srv_req *r, size_t start, int allowed, struct fsm_cmd *cmd)
{
    int seen = 0;
    size_t i = start;
    while (i < r->argc) {
        size_t k = 0, nd = sizeof(opt_defs) / sizeof(opt_defs[0]);
        while (k < nd && !resp_arg_eq(&r->argv[i], opt_defs[k].word, opt_defs[k].len))
            k++;
        if (k == nd || !(allowed & opt_defs[k].bit)) {
            char shown[ARG_TEXT];
            resp_w_errorf(r->out, "ERR unknown option '%s'", arg_text(&r->argv[i], shown));
            return -1;
        }
        if (seen & opt_defs[k].bit) {
            resp_w_errorf(r->out, "ERR option %s given twice", opt_defs[k].word);
            return -1;
        }
        if (i + (size_t)opt_defs[k].nargs >= r->argc) {
            resp_w_errorf(r->out, "ERR option %s needs %d argument(s)", opt_defs[k].word,
                          opt_defs[k].nargs);
            return -1;
        }
        seen |= opt_defs[k].bit;
        if (opt_value(r, opt_defs[k].bit, i + 1, cmd))
            return -1;
        i += 1 + (size_t)opt_defs[k].nargs;
    }
    return 0;
}

/* ---- proposals ---- */

static void write_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv_slot *slot = ctx;
    struct srv *s = slot->srv;
    srv_quota_release(s, &slot->res); /* applied (counted in the state now) or never will be */
    hist_observe(&s->m.commit, (double)(uv_hrtime() - slot->started_ns) / 1e9);
    if (status != RN_OK) {
        if (status == RN_UNKNOWN)
            s->m.proposal_unknown++;
        srv_reply_status(s, &slot->out, status);
        srv_slot_done(slot);
        return;
    }
    switch (reply->kind) {
    case FSM_REPLY_OK:
        resp_w_simple(&slot->out, "OK");
        break;
    case FSM_REPLY_INT:
        resp_w_uint(&slot->out, reply->value);
        break;
    case FSM_REPLY_NIL:
        resp_w_nil(&slot->out, slot->proto);
        break;
    case FSM_REPLY_QUEUED: {
        /* The name+sid key was kept in pkey; the reply waits for the grant or the cancel. */
        uint64_t sid = 0;
        for (int i = 0; i < 8; i++)
            sid |= (uint64_t)(unsigned char)slot->pkey[slot->pkeylen - 8 + i] << (8 * i);
        srv_wait_refresh(s, slot->pkey, slot->pkeylen - 8, sid, slot->wait_ms);
        if (slot->conn && srv_park(s, slot) == 0)
            return;
        if (slot->conn)
            resp_w_error(&slot->out, "ERR out of memory parking the request");
        break;
    }
    default:
        resp_w_error(&slot->out, reply->err);
        break;
    }
    srv_slot_done(slot);
}

static void propose(struct srv_req *r, struct fsm_cmd *cmd)
{
    struct srv *s = r->s;
    r->slot->op = cmd->op;
    r->slot->wait_ms = cmd->op == FSM_OP_LOCK ? cmd->lock.wait_ms : 0;
    r->slot->started_ns = uv_hrtime();
    if (cmd->op == FSM_OP_LOCK) {
        struct buf k;
        buf_init(&k);
        if (!srv_key_name_sid(cmd->lock.name.p, cmd->lock.name.len, cmd->lock.sid, &k)) {
            reply_err(r, "ERR out of memory");
            return;
        }
        r->slot->pkey = k.p;
        r->slot->pkeylen = k.len;
    }
    if (srv_quota_reserve(s, cmd, &r->slot->res, r->out))
        return;
    int rc = cmd->op == FSM_OP_LOCK ? srv_propose_lock(s, cmd, write_done, r->slot)
                                    : srv_propose(s, cmd, write_done, r->slot);
    if (rc != RN_OK) {
        srv_quota_release(s, &r->slot->res);
        srv_reply_status(s, r->out, rc);
        return;
    }
    r->async = true;
}

/* ---- sessions ---- */

static void sessionOpenCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 0}};
    if (need_leader(r) ||
        arg_range(r, 1, "ttl_ms", 1, r->s->cfg.max_ttl, &cmd.session_open.ttl_ms) ||
        parse_opts(r, 2, OPT_LOCKDELAY | OPT_NAME, &cmd))
        return;
    propose(r, &cmd);
}

static void keepalive_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv_slot *slot = ctx;
    if (status != RN_OK)
        srv_reply_status(slot->srv, &slot->out, status);
    else if (reply->kind == FSM_REPLY_ERR)
        resp_w_error(&slot->out, reply->err);
    else
        resp_w_uint(&slot->out, slot->wait_ms);
    srv_slot_done(slot);
}

/*
 * Not logged: the deadline lives only in this leader's memory (a new leader starts over).
 * Except after a checkpoint recorded a shorter lease: then a clearing checkpoint must commit
 * before the client is told its lease is whole again.
 * Runs after a read barrier (CMD_READ): a barrier that commits in this term proves no later
 * leader had been elected when the keepalive arrived, so a client may count its lease from the
 * moment it sent the keepalive (fl_session_safe_until) even across a fail-over. The deadline
 * is reset here, after the barrier: later than the arrival, never earlier.
 */
static void sessionKeepaliveCommand(struct srv_req *r)
{
    uint64_t sid;
    struct fsm_session_view v;
    if (need_leader(r) || arg_u64(r, 1, "sid", &sid) || live_session(r, sid))
        return;
    struct srv_sess *e = srv_sess_get(r->s, sid);
    srv_sess_keepalive(r->s, e);
    if (!e->ck_inflight && !(fsm_session_info(r->s->fsm, sid, &v) && v.checkpoint_ms)) {
        resp_w_uint(r->out, e->ttl_ms);
        return;
    }
    r->slot->wait_ms = e->ttl_ms;
    int rc = srv_propose_checkpoint(r->s, sid, 0, keepalive_done, r->slot);
    if (rc != RN_OK) {
        srv_reply_status(r->s, r->out, rc);
        return;
    }
    r->async = true;
}

static void sessionCloseCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = 0}};
    if (need_leader(r) || arg_u64(r, 1, "sid", &cmd.session_close.sid) ||
        live_session(r, cmd.session_close.sid) || parse_opts(r, 2, OPT_REQ, &cmd))
        return;
    propose(r, &cmd);
}

static void sessionInfoCommand(struct srv_req *r)
{
    uint64_t sid;
    struct fsm_session_view v;
    if (arg_u64(r, 1, "sid", &sid))
        return;
    if (!fsm_session_info(r->s->fsm, sid, &v)) {
        resp_w_errorf(r->out, "NOSESSION session %llu is not alive", (unsigned long long)sid);
        return;
    }
    struct srv_sess *e = srv_sess_get(r->s, sid);
    uint64_t now = srv_now_ms(), left = 0;
    if (e && e->t.idx != HEAP_NONE && e->t.deadline > now)
        left = e->t.deadline - now;
    resp_w_map(r->out, r->proto, 8);
    resp_w_bulk_str(r->out, "sid");
    resp_w_uint(r->out, v.sid);
    resp_w_bulk_str(r->out, "ttl_ms");
    resp_w_uint(r->out, v.ttl_ms);
    resp_w_bulk_str(r->out, "lockdelay_ms");
    resp_w_uint(r->out, v.lockdelay_ms);
    resp_w_bulk_str(r->out, "name");
    resp_w_bulk(r->out, v.name.p, v.name.len);
    resp_w_bulk_str(r->out, "locks");
    resp_w_uint(r->out, v.n_locks);
    resp_w_bulk_str(r->out, "waits");
    resp_w_uint(r->out, v.n_waits);
    resp_w_bulk_str(r->out, "keys");
    resp_w_uint(r->out, v.n_keys);
    resp_w_bulk_str(r->out, "remaining_ms");
    resp_w_uint(r->out, left);
}

/* ---- locks ---- */

static int lock_args(struct srv_req *r, struct fsm_str *name, uint64_t *sid)
{
    if (need_leader(r) || arg_name(r, 1, "lock name", name) || arg_u64(r, 2, "sid", sid) ||
        live_session(r, *sid))
        return -1;
    return 0;
}

static void lockCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LOCK, .lock = {.wait_ms = 0}};
    if (lock_args(r, &cmd.lock.name, &cmd.lock.sid) || parse_opts(r, 3, OPT_WAIT | OPT_REQ, &cmd))
        return;
    propose(r, &cmd);
}

static void unlockCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_UNLOCK, .unlock = {.sid = 0}};
    if (lock_args(r, &cmd.unlock.name, &cmd.unlock.sid) || parse_opts(r, 3, OPT_REQ, &cmd))
        return;
    propose(r, &cmd);
}

struct waiters_arg {
    struct buf *out;
};

static void waiter_cb(void *arg, uint64_t sid, uint64_t wait_ms)
{
    struct waiters_arg *wa = arg;
    (void)wait_ms;
    resp_w_uint(wa->out, sid);
}

static void lockInfoCommand(struct srv_req *r)
{
    struct fsm_str name;
    struct fsm_lock_view v;
    if (arg_name(r, 1, "lock name", &name))
        return;
    if (!fsm_lock_info(r->s->fsm, name.p, name.len, &v)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    resp_w_map(r->out, r->proto, 5);
    resp_w_bulk_str(r->out, "holder");
    resp_w_uint(r->out, v.holder_sid);
    resp_w_bulk_str(r->out, "token");
    resp_w_uint(r->out, v.token);
    resp_w_bulk_str(r->out, "held_since_ms");
    resp_w_uint(r->out, v.held_since_ms);
    resp_w_bulk_str(r->out, "lockdelay");
    resp_w_uint(r->out, v.in_lockdelay ? 1 : 0);
    resp_w_bulk_str(r->out, "waiters");
    resp_w_array(r->out, v.n_waiters);
    struct waiters_arg wa = {r->out};
    fsm_lock_waiters(r->s->fsm, name.p, name.len, waiter_cb, &wa);
}

static void fenceCheckCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t token;
    if (arg_name(r, 1, "lock name", &name) || arg_u64(r, 2, "token", &token))
        return;
    if (fsm_fence_check(r->s->fsm, name.p, name.len, token) == 0)
        resp_w_simple(r->out, "OK");
    else
        resp_w_errorf(r->out, "STALE token %llu is not the current token of lock %.*s",
                      (unsigned long long)token, (int)name.len, name.p);
}

/* ---- keys ---- */

static void putCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_PUT, .put = {.lease_sid = 0}};
    if (need_leader(r) || arg_name(r, 1, "key", &cmd.put.key))
        return;
    if (r->argv[2].len > r->s->cfg.max_value) {
        resp_w_errorf(r->out, "TOOLARGE value is %zu bytes, the limit is %zu", r->argv[2].len,
                      r->s->cfg.max_value);
        return;
    }
    cmd.put.value.p = r->argv[2].p;
    cmd.put.value.len = (uint32_t)r->argv[2].len;
    if (parse_opts(r, 3, OPT_LEASE | OPT_FENCE | OPT_IFREV | OPT_REQ, &cmd))
        return;
    propose(r, &cmd);
}

static void delCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_DEL, .del = {.cond = {.has_fence = false}}};
    if (need_leader(r) || arg_name(r, 1, "key", &cmd.del.key) ||
        parse_opts(r, 2, OPT_FENCE | OPT_IFREV | OPT_REQ, &cmd))
        return;
    propose(r, &cmd);
}

static void getCommand(struct srv_req *r)
{
    struct fsm_str key;
    struct fsm_kv_meta m;
    if (arg_name(r, 1, "key", &key))
        return;
    if (fsm_kv_get(r->s->fsm, key.p, key.len, &m))
        resp_w_bulk(r->out, m.value, m.value_len);
    else
        resp_w_nil(r->out, r->proto);
}

static void kvGetCommand(struct srv_req *r)
{
    struct fsm_str key;
    struct fsm_kv_meta m;
    if (arg_name(r, 1, "key", &key))
        return;
    if (!fsm_kv_get(r->s->fsm, key.p, key.len, &m)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    resp_w_map(r->out, r->proto, 5);
    resp_w_bulk_str(r->out, "value");
    resp_w_bulk(r->out, m.value, m.value_len);
    resp_w_bulk_str(r->out, "create_rev");
    resp_w_uint(r->out, m.create_rev);
    resp_w_bulk_str(r->out, "mod_rev");
    resp_w_uint(r->out, m.mod_rev);
    resp_w_bulk_str(r->out, "version");
    resp_w_uint(r->out, m.version);
    resp_w_bulk_str(r->out, "lease");
    resp_w_uint(r->out, m.lease_sid);
}

struct keys_arg {
    struct buf body;
    size_t n;
};

static int keys_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    struct keys_arg *ka = arg;
    (void)m;
    resp_w_bulk(&ka->body, key, keylen);
    ka->n++;
    return 0;
}

static void keysCommand(struct srv_req *r)
{
    uint64_t limit = r->s->cfg.max_keys_reply;
    if (r->argc == 4) {
        if (!resp_arg_is(&r->argv[2], "LIMIT")) {
            reply_err(r, "ERR syntax error: KEYS prefix [LIMIT n]");
            return;
        }
        if (arg_range(r, 3, "LIMIT", 1, r->s->cfg.max_keys_reply, &limit))
            return;
    } else if (r->argc != 2) {
        reply_err(r, "ERR syntax error: KEYS prefix [LIMIT n]");
        return;
    }
    struct keys_arg ka = {.n = 0};
    buf_init(&ka.body);
    fsm_kv_scan(r->s->fsm, r->argv[1].p, r->argv[1].len, limit, keys_cb, &ka);
    resp_w_array(r->out, ka.n);
    buf_append(r->out, ka.body.p, ka.body.len);
    buf_free(&ka.body);
}

/* LOCKS prefix [LIMIT n]: existing locks (held, in lock-delay or with waiters) by name. */
static void locksCommand(struct srv_req *r)
{
    uint64_t limit = r->s->cfg.max_keys_reply;
    if (r->argc == 4) {
        if (!resp_arg_is(&r->argv[2], "LIMIT")) {
            reply_err(r, "ERR syntax error: LOCKS prefix [LIMIT n]");
            return;
        }
        if (arg_range(r, 3, "LIMIT", 1, r->s->cfg.max_keys_reply, &limit))
            return;
    } else if (r->argc != 2) {
        reply_err(r, "ERR syntax error: LOCKS prefix [LIMIT n]");
        return;
    }
    struct fsm_lock_item *it = calloc(limit, sizeof(*it));
    if (!it) {
        reply_err(r, "ERR out of memory");
        return;
    }
    size_t n = fsm_locks_list(r->s->fsm, r->argv[1].p, r->argv[1].len, limit, it);
    resp_w_array(r->out, n);
    for (size_t i = 0; i < n; i++) {
        resp_w_map(r->out, r->proto, 5);
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
    }
    free(it);
}

/* ---- connection and server ---- */

static void pingCommand(struct srv_req *r)
{
    if (r->argc == 2)
        resp_w_bulk(r->out, r->argv[1].p, r->argv[1].len);
    else if (r->argc == 1)
        resp_w_simple(r->out, "PONG");
    else
        resp_w_errorf(r->out, ERR_ARGS, 4, "ping");
}

static void helloCommand(struct srv_req *r)
{
    uint64_t v = (uint64_t)r->proto;
    if (r->argc >= 2 && (resp_parse_u64(r->argv[1].p, r->argv[1].len, &v) || v < 2 || v > 3)) {
        reply_err(r, "NOPROTO unsupported protocol version");
        return;
    }
    if (srv_hello_options(r) != 0) /* AUTH, SETNAME: cmd_conn.c */
        return;
    r->proto = (int)v;
    if (r->c)
        r->c->proto = (int)v;
    resp_w_map(r->out, r->proto, 6);
    resp_w_bulk_str(r->out, "server");
    resp_w_bulk_str(r->out, "fencelock");
    resp_w_bulk_str(r->out, "version");
    resp_w_bulk_str(r->out, FENCELOCK_VERSION);
    resp_w_bulk_str(r->out, "proto");
    resp_w_uint(r->out, v);
    resp_w_bulk_str(r->out, "id");
    resp_w_uint(r->out, r->s->cfg.id);
    resp_w_bulk_str(r->out, "mode");
    resp_w_bulk_str(r->out, "cluster");
    resp_w_bulk_str(r->out, "role");
    resp_w_bulk_str(r->out, srv_role_name(r->s->role));
}

static void info_server(struct srv *s, struct buf *b)
{
    buf_printf(b,
               "# Server\r\nfencelock_version:%s\r\nnode_id:%llu\r\nprocess_id:%d\r\n"
               "tcp_port:%d\r\nuptime_in_seconds:%llu\r\n",
               FENCELOCK_VERSION, (unsigned long long)s->cfg.id, (int)uv_os_getpid(),
               s->cfg.listen_port, (unsigned long long)((srv_now_ms() - s->started_ms) / 1000));
}

static void info_clients(struct srv *s, struct buf *b)
{
    buf_printf(b, "# Clients\r\nconnected_clients:%zu\r\nmaxclients:%zu\r\n", s->nconns,
               s->cfg.max_clients);
}

static void info_raft(struct srv *s, struct buf *b)
{
    uint64_t lid;
    const char *laddr;
    rn_leader(s->rn, &lid, &laddr);
    buf_printf(b,
               "# Raft\r\nrole:%s\r\nready:%d\r\nterm:%llu\r\nleader_id:%llu\r\n"
               "commit_index:%llu\r\napplied_index:%llu\r\n",
               srv_role_name(s->role), s->ready ? 1 : 0, (unsigned long long)rn_term(s->rn),
               (unsigned long long)lid, (unsigned long long)rn_commit_index(s->rn),
               (unsigned long long)rn_applied_index(s->rn));
}

static void info_fsm(struct srv *s, struct buf *b)
{
    struct fsm_stats st;
    fsm_stats(s->fsm, &st);
    buf_printf(b,
               "# Fsm\r\nrevision:%llu\r\nsessions:%llu\r\nlocks_held:%llu\r\n"
               "waiters:%llu\r\nlocks_in_delay:%llu\r\nkeys:%llu\r\n",
               (unsigned long long)fsm_revision(s->fsm), (unsigned long long)st.sessions,
               (unsigned long long)st.locks_held, (unsigned long long)st.waiters,
               (unsigned long long)st.locks_in_delay, (unsigned long long)st.keys);
}

static void info_stats(struct srv *s, struct buf *b)
{
    buf_printf(b,
               "# Stats\r\ntotal_commands_processed:%llu\r\ntotal_connections_received:%llu\r\n"
               "rejected_connections:%llu\r\ngrants:%llu\r\nexpirations:%llu\r\n"
               "fence_rejections:%llu\r\n",
               (unsigned long long)s->m.commands, (unsigned long long)s->m.connections_total,
               (unsigned long long)s->m.connections_rejected, (unsigned long long)s->m.grants,
               (unsigned long long)s->m.expirations, (unsigned long long)s->m.fence_rejections);
}

static const struct {
    const char *name;
    void (*fn)(struct srv *s, struct buf *b);
} info_sections[] = {{"server", info_server},
                     {"clients", info_clients},
                     {"raft", info_raft},
                     {"fsm", info_fsm},
                     {"stats", info_stats}};

/* INFO [section]: Redis' text form; no argument, "all", "default" or "everything" = all. */
static void infoCommand(struct srv_req *r)
{
    size_t n = sizeof(info_sections) / sizeof(info_sections[0]);
    bool all = r->argc == 1 || resp_arg_is(&r->argv[1], "all") ||
               resp_arg_is(&r->argv[1], "default") || resp_arg_is(&r->argv[1], "everything");
    if (r->argc > 2) {
        resp_w_errorf(r->out, ERR_ARGS, 4, "info");
        return;
    }
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        if (!all && !resp_arg_is(&r->argv[1], info_sections[i].name))
            continue;
        if (b.len)
            buf_append_str(&b, "\r\n");
        info_sections[i].fn(r->s, &b);
    }
    resp_w_verbatim(r->out, r->proto, b.p ? b.p : "", b.len);
    buf_free(&b);
}

static void clusterInfoCommand(struct srv_req *r)
{
    struct srv *s = r->s;
    uint64_t lid;
    const char *laddr;
    struct rn_change_view chg;
    rn_leader(s->rn, &lid, &laddr);
    rn_change_info(s->rn, &chg);
    resp_w_map(r->out, r->proto, 13);
    resp_w_bulk_str(r->out, "id");
    resp_w_uint(r->out, s->cfg.id);
    resp_w_bulk_str(r->out, "leader");
    srv_leader_client_address(s, &s->scratch);
    resp_w_bulk(r->out, s->scratch.p ? s->scratch.p : "", s->scratch.len);
    resp_w_bulk_str(r->out, "role");
    resp_w_bulk_str(r->out, srv_role_name(s->role));
    resp_w_bulk_str(r->out, "ready");
    resp_w_uint(r->out, s->ready ? 1 : 0);
    resp_w_bulk_str(r->out, "leader_id");
    resp_w_uint(r->out, lid);
    resp_w_bulk_str(r->out, "term");
    resp_w_uint(r->out, rn_term(s->rn));
    resp_w_bulk_str(r->out, "commit_index");
    resp_w_uint(r->out, rn_commit_index(s->rn));
    resp_w_bulk_str(r->out, "applied_index");
    resp_w_uint(r->out, rn_applied_index(s->rn));
    resp_w_bulk_str(r->out, "revision");
    resp_w_uint(r->out, fsm_revision(s->fsm));
    /* The membership change in progress as this node sees it (rn_change_info). */
    resp_w_bulk_str(r->out, "change");
    resp_w_bulk_str(r->out, chg.kind ? chg.kind : "none");
    resp_w_bulk_str(r->out, "change_id");
    resp_w_uint(r->out, chg.id);
    resp_w_bulk_str(r->out, "change_index");
    resp_w_uint(r->out, chg.index);
    resp_w_bulk_str(r->out, "change_ms");
    resp_w_uint(r->out, chg.age_ms);
}

struct members_arg {
    struct srv_req *r;
    uint64_t leader;
};

static void member_row(void *arg, uint64_t id, const char *raft_address, int role)
{
    struct members_arg *ma = arg;
    struct srv_req *r = ma->r;
    struct fsm_member_view v;
    resp_w_map(r->out, r->proto, 5);
    resp_w_bulk_str(r->out, "id");
    resp_w_uint(r->out, id);
    resp_w_bulk_str(r->out, "raft_address");
    resp_w_bulk_str(r->out, raft_address);
    resp_w_bulk_str(r->out, "client_address");
    if (fsm_member_get(r->s->fsm, id, &v))
        resp_w_bulk(r->out, v.client_addr.p, v.client_addr.len);
    else
        resp_w_bulk_str(r->out, "");
    resp_w_bulk_str(r->out, "role");
    resp_w_bulk_str(r->out, id == ma->leader     ? "leader"
                            : role == RN_VOTER   ? "follower"
                            : role == RN_STANDBY ? "standby"
                                                 : "spare");
    resp_w_bulk_str(r->out, "leader");
    resp_w_uint(r->out, id == ma->leader ? 1 : 0);
}

static void count_server(void *arg, uint64_t id, const char *raft_address, int role)
{
    (void)id;
    (void)raft_address;
    (void)role;
    (*(size_t *)arg)++;
}

/* The Raft configuration as this node sees it, with client addresses from the member table. */
static void clusterMembersCommand(struct srv_req *r)
{
    size_t n = 0;
    const char *laddr;
    struct members_arg ma = {.r = r};
    rn_leader(r->s->rn, &ma.leader, &laddr);
    rn_foreach_server(r->s->rn, count_server, &n);
    resp_w_array(r->out, n);
    rn_foreach_server(r->s->rn, member_row, &ma);
}

/* CLUSTER.ANNOUNCE id client-addr raft-addr: a member tells the leader its client address. */
static void clusterAnnounceCommand(struct srv_req *r)
{
    uint64_t id;
    if (need_leader(r) || arg_u64(r, 1, "member id", &id))
        return;
    const char *known = rn_server_address(r->s->rn, id);
    const struct resp_arg *client = &r->argv[2], *raft = &r->argv[3];
    if (!known || strlen(known) != raft->len || memcmp(known, raft->p, raft->len)) {
        resp_w_errorf(r->out, "ERR member %llu with that raft address is not in the configuration",
                      (unsigned long long)id);
        return;
    }
    if (client->len == 0 || client->len > FSM_MAX_ADDR || !memchr(client->p, ':', client->len)) {
        reply_err(r, "ERR client address must be host:port");
        return;
    }
    r->slot->op = FSM_OP_MEMBER_SET;
    r->slot->started_ns = uv_hrtime();
    int rc = srv_propose_member(r->s, id, client->p, client->len, raft->p, raft->len, write_done,
                                r->slot);
    if (rc != RN_OK) {
        srv_reply_status(r->s, r->out, rc);
        return;
    }
    r->async = true;
}

/* ---- membership: CLUSTER.ADD / CLUSTER.REMOVE / CLUSTER.TRANSFER ---- */

/* A raft address: host:port, host non-empty of [A-Za-z0-9.-], port 1..65535, short enough
 * for rn_peer (libraft's TCP transport only connects to such addresses). */
static int arg_raft_addr(struct srv_req *r, size_t i)
{
    const struct resp_arg *a = &r->argv[i];
    const char *colon = a->len ? memrchr(a->p, ':', a->len) : NULL;
    size_t hostlen = colon ? (size_t)(colon - a->p) : 0;
    uint64_t port = 0;
    bool ok = colon && hostlen > 0 && a->len < sizeof(((struct rn_peer *)0)->raft_address) &&
              resp_parse_u64(colon + 1, a->len - hostlen - 1, &port) == 0 && port >= 1 &&
              port <= 65535;
    for (size_t k = 0; ok && k < hostlen; k++)
        ok = (a->p[k] >= 'a' && a->p[k] <= 'z') || (a->p[k] >= 'A' && a->p[k] <= 'Z') ||
             (a->p[k] >= '0' && a->p[k] <= '9') || a->p[k] == '.' || a->p[k] == '-';
    if (!ok)
        reply_err(r, "ERR raft address must be host:port (port 1..65535)");
    return ok ? 0 : -1;
}

static void change_reply(struct srv_slot *slot, int status, const char *msg)
{
    if (status == RN_OK)
        resp_w_simple(&slot->out, "OK");
    else if (status == RN_ERR)
        resp_w_errorf(&slot->out, "ERR %s", msg ? msg : "membership change failed");
    else
        srv_reply_status(slot->srv, &slot->out, status);
    srv_slot_done(slot);
}

static void change_done(void *ctx, int status, const char *msg)
{
    change_reply(ctx, status, msg);
}

/* Answer a sync failure of rn_add / rn_remove / rn_transfer. */
static void change_failed(struct srv_req *r, int rc)
{
    if (rc == RN_ERR)
        resp_w_errorf(r->out, "ERR %s", rn_errmsg(r->s->rn));
    else
        srv_reply_status(r->s, r->out, rc);
}

/* CLUSTER.ADD id raft-addr: +OK once the node is a voter (libraft catches it up first). */
static void clusterAddCommand(struct srv_req *r)
{
    uint64_t id;
    if (need_leader(r) || arg_range(r, 1, "member id", 1, 1ull << 32, &id) || arg_raft_addr(r, 2))
        return;
    char addr[96];
    snprintf(addr, sizeof(addr), "%.*s", (int)r->argv[2].len, r->argv[2].p);
    const char *known = rn_server_address(r->s->rn, id);
    if (rn_server_role(r->s->rn, id) == RN_VOTER) {
        resp_w_errorf(r->out, "ERR member %llu is already a voter", (unsigned long long)id);
        return;
    }
    if (known && strcmp(known, addr)) {
        resp_w_errorf(r->out, "ERR member %llu is in the configuration at %s",
                      (unsigned long long)id, known);
        return;
    }
    int rc = rn_add(r->s->rn, id, addr, change_done, r->slot);
    if (rc != RN_OK) {
        change_failed(r, rc);
        return;
    }
    LOGI(&r->s->log, "adding member %llu at %s", (unsigned long long)id, addr);
    r->async = true;
}

struct remove_ctx {
    struct srv_slot *slot;
    uint64_t id;
};

/* The member-table entry went (or not): the configuration change already committed. */
static void member_del_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct remove_ctx *rc = ctx;
    (void)reply;
    if (status != RN_OK)
        LOGW(&rc->slot->srv->log, "member %llu removed; its table entry not deleted (status %d)",
             (unsigned long long)rc->id, status);
    change_reply(rc->slot, RN_OK, NULL);
    free(rc);
}

/* After the configuration without the member committed: delete its member-table entry. A
 * leader that removed itself is no leader any more; its entry stays (harmless: every listing
 * follows the Raft configuration) and the reply is +OK all the same. */
static void remove_done(void *ctx, int status, const char *msg)
{
    struct remove_ctx *rc = ctx;
    struct srv *s = rc->slot->srv;
    if (status != RN_OK) {
        change_reply(rc->slot, status, msg);
        free(rc);
        return;
    }
    LOGI(&s->log, "member %llu removed from the configuration", (unsigned long long)rc->id);
    struct fsm_cmd cmd = {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = rc->id}};
    int prc = srv_propose(s, &cmd, member_del_done, rc);
    if (prc != RN_OK)
        member_del_done(rc, prc, NULL);
}

/* CLUSTER.REMOVE id [FORCE]: +OK once the configuration without `id` committed. Refused, with
 * the reason, when it would leave no voter, or (unless FORCE) one voter, or voters that may not
 * be able to commit it (rn_remove_check). */
static void clusterRemoveCommand(struct srv_req *r)
{
    uint64_t id;
    if (r->argc > 3) {
        resp_w_errorf(r->out, ERR_ARGS, 14, "cluster.remove");
        return;
    }
    if (need_leader(r) || arg_range(r, 1, "member id", 1, 1ull << 32, &id))
        return;
    bool force = r->argc == 3;
    if (force && !resp_arg_is(&r->argv[2], "FORCE")) {
        reply_err(r, "ERR syntax error: CLUSTER.REMOVE id [FORCE]");
        return;
    }
    if (!rn_server_address(r->s->rn, id)) {
        resp_w_errorf(r->out, "ERR member %llu is not in the configuration",
                      (unsigned long long)id);
        return;
    }
    char why[256];
    int risk = rn_remove_check(r->s->rn, id, why, sizeof(why));
    if (risk == RN_REMOVE_LAST || (risk && !force)) {
        resp_w_errorf(r->out, "ERR refused: %s", why);
        return;
    }
    if (risk)
        LOGW(&r->s->log, "CLUSTER.REMOVE %llu FORCE: %s", (unsigned long long)id, why);
    struct remove_ctx *rc = calloc(1, sizeof(*rc));
    if (!rc) {
        reply_err(r, "ERR out of memory");
        return;
    }
    rc->slot = r->slot;
    rc->id = id;
    int st = rn_remove(r->s->rn, id, remove_done, rc);
    if (st != RN_OK) {
        free(rc);
        change_failed(r, st);
        return;
    }
    LOGI(&r->s->log, "removing member %llu", (unsigned long long)id);
    r->async = true;
}

/* CLUSTER.TRANSFER [id]: +OK once `id` (default: any up-to-date voter) is the leader. */
static void clusterTransferCommand(struct srv_req *r)
{
    uint64_t id = 0;
    if (r->argc > 2) {
        resp_w_errorf(r->out, ERR_ARGS, 16, "cluster.transfer");
        return;
    }
    if (need_leader(r) || (r->argc == 2 && arg_range(r, 1, "member id", 1, 1ull << 32, &id)))
        return;
    if (id == r->s->cfg.id) {
        reply_err(r, "ERR this node is already the leader");
        return;
    }
    if (id && rn_server_role(r->s->rn, id) != RN_VOTER) {
        resp_w_errorf(r->out, "ERR member %llu is not a voter", (unsigned long long)id);
        return;
    }
    int rc = rn_transfer(r->s->rn, id, change_done, r->slot);
    if (rc != RN_OK) {
        change_failed(r, rc);
        return;
    }
    LOGI(&r->s->log, "transferring leadership to %llu", (unsigned long long)id);
    r->async = true;
}

/*
 * READONLY / READWRITE (as in Redis Cluster): a connection that says READONLY gets reads answered
 * at once from the local node's applied state, on followers too, without a barrier: possibly
 * stale, never linearizable. Only explicitly asked for; READWRITE goes back to the default.
 */
static void readonlyCommand(struct srv_req *r)
{
    if (r->c)
        r->c->stale_reads = true;
    resp_w_simple(r->out, "OK");
}

static void readwriteCommand(struct srv_req *r)
{
    if (r->c)
        r->c->stale_reads = false;
    resp_w_simple(r->out, "OK");
}

/* redis-cli asks for COMMAND DOCS at start; an empty answer keeps it quiet. */
static void quitCommand(struct srv_req *r)
{
    resp_w_simple(r->out, "OK");
    if (r->c)
        r->c->close_after_write = true;
}

#define CMD(name, arity, flags, fn)                                                                \
    {                                                                                              \
        name, sizeof(name) - 1, arity, flags, fn                                                   \
    }
static const struct srv_cmd cmd_table[] = {
    CMD("PING", -1, CMD_LOCAL, pingCommand),
    CMD("HELLO", -1, CMD_LOCAL, helloCommand),
    CMD("INFO", -1, CMD_LOCAL, infoCommand),
    CMD("QUIT", 1, CMD_LOCAL, quitCommand),
    CMD("READONLY", 1, CMD_LOCAL, readonlyCommand),
    CMD("READWRITE", 1, CMD_LOCAL, readwriteCommand),
    CMD("CLUSTER.INFO", 1, CMD_LOCAL, clusterInfoCommand),
    CMD("CLUSTER.MEMBERS", 1, CMD_LOCAL, clusterMembersCommand),
    CMD("CLUSTER.ANNOUNCE", 4, CMD_WRITE, clusterAnnounceCommand),
    CMD("CLUSTER.ADD", 3, CMD_WRITE, clusterAddCommand),
    CMD("CLUSTER.REMOVE", -2, CMD_WRITE, clusterRemoveCommand),
    CMD("CLUSTER.TRANSFER", -1, CMD_WRITE, clusterTransferCommand),
    CMD("SESSION.OPEN", -2, CMD_WRITE, sessionOpenCommand),
    CMD("SESSION.KEEPALIVE", 2, CMD_READ | CMD_FRESH, sessionKeepaliveCommand),
    CMD("SESSION.CLOSE", -2, CMD_WRITE, sessionCloseCommand),
    CMD("SESSION.INFO", 2, CMD_READ, sessionInfoCommand),
    CMD("LOCK", -3, CMD_WRITE, lockCommand),
    CMD("UNLOCK", -3, CMD_WRITE, unlockCommand),
    CMD("LOCK.INFO", 2, CMD_READ, lockInfoCommand),
    CMD("FENCE.CHECK", 3, CMD_READ, fenceCheckCommand),
    CMD("PUT", -3, CMD_WRITE, putCommand),
    CMD("DEL", -2, CMD_WRITE, delCommand),
    CMD("GET", 2, CMD_READ, getCommand),
    CMD("KV.GET", 2, CMD_READ, kvGetCommand),
    CMD("KEYS", -2, CMD_READ, keysCommand),
    CMD("LOCKS", -2, CMD_READ, locksCommand),
};
#undef CMD

#define N_CMD_TABLE (sizeof(cmd_table) / sizeof(cmd_table[0]))

size_t srv_cmd_count(void)
{
    return N_CMD_TABLE + srv_n_conn_cmds;
}

const struct srv_cmd *srv_cmd_at(size_t i)
{
    return i < N_CMD_TABLE ? &cmd_table[i] : &srv_conn_cmds[i - N_CMD_TABLE];
}

const struct srv_cmd *srv_cmd_lookup(const struct resp_arg *name)
{
    for (size_t i = 0; i < srv_cmd_count(); i++) {
        const struct srv_cmd *cmd = srv_cmd_at(i);
        if (resp_arg_eq(name, cmd->name, cmd->len))
            return cmd;
    }
    return NULL;
}

bool srv_cmd_is_write(const struct resp_arg *name)
{
    const struct srv_cmd *cmd = srv_cmd_lookup(name);
    return cmd && (cmd->flags & CMD_WRITE);
}

static struct srv_slot *slot_new(struct srv_conn *c)
{
    struct srv_slot *slot = srv_slot_new(c->srv);
    if (!slot)
        return NULL;
    slot->conn = c;
    slot->srv = c->srv;
    slot->proto = c->proto;
    if (c->tail)
        c->tail->next = slot;
    else
        c->head = slot;
    c->tail = slot;
    c->nslots++;
    return slot;
}

/* Reads run after a barrier, when the input buffer has moved on: keep a copy of the args. */
static int copy_args(struct srv_slot *slot, size_t argc, const struct resp_arg *argv)
{
    for (size_t i = 0; i < argc; i++)
        if (buf_put_bytes(&slot->args, argv[i].p, argv[i].len))
            return -1;
    slot->argc = argc;
    return 0;
}

/* Arguments of a read on the stack: every read command but KEYS/LOCKS with options has at
 * most 4, so the read path allocates nothing per request. */
#define READ_ARGV_STACK 8

bool srv_run_read(struct srv *s, struct srv_slot *slot)
{
    struct resp_arg stack_argv[READ_ARGV_STACK];
    struct resp_arg *argv =
        slot->argc <= READ_ARGV_STACK ? stack_argv : calloc(slot->argc, sizeof(*argv));
    if (!argv) {
        resp_w_error(&slot->out, "ERR out of memory");
        return false;
    }
    struct rd rd;
    rd_init(&rd, slot->args.p, slot->args.len);
    for (size_t i = 0; i < slot->argc; i++) {
        uint32_t n = 0;
        rd_bytes(&rd, &argv[i].p, &n, UINT32_MAX);
        argv[i].len = n;
    }
    struct srv_req r = {.s = s,
                        .c = slot->conn,
                        .slot = slot,
                        .argc = slot->argc,
                        .argv = argv,
                        .out = &slot->out,
                        .proto = slot->proto};
    slot->cmd->fn(&r);
    if (argv != stack_argv)
        free(argv);
    return r.async;
}

static int arity_ok(const struct srv_cmd *cmd, size_t argc)
{
    return cmd->arity >= 0 ? argc == (size_t)cmd->arity : argc >= (size_t)-cmd->arity;
}

void srv_dispatch(struct srv *s, struct srv_conn *c, size_t argc, struct resp_arg *argv)
{
    const struct srv_cmd *cmd = srv_cmd_lookup(&argv[0]);
    struct srv_req r = {.s = s, .c = c, .argc = argc, .argv = argv, .proto = c->proto};
    s->m.commands++;
    c->last_cmd_ms = uv_now(s->loop);
    /* libraft has no role callback: look now, so no command is answered from a stale role. */
    srv_poll_leadership(s);
    bool async = cmd && (cmd->flags & (CMD_WRITE | CMD_READ));
    if (c->head || async) {
        r.slot = slot_new(c);
        if (!r.slot) {
            srv_conn_close(c);
            return;
        }
        r.out = &r.slot->out;
    } else {
        r.out = &c->out;
    }
    char shown[ARG_TEXT];
    if (!cmd) {
        resp_w_errorf(r.out, "ERR unknown command '%s'", arg_text(&argv[0], shown));
    } else if (!arity_ok(cmd, argc)) {
        resp_w_errorf(r.out, ERR_ARGS_S, arg_text(&argv[0], shown));
    } else if ((cmd->flags & CMD_READ) && c->stale_reads && !(cmd->flags & CMD_FRESH)) {
        cmd->fn(&r); /* READONLY: this node's applied state, possibly stale, any role */
    } else if (cmd->flags & CMD_READ) {
        if (need_leader(&r) == 0) {
            if (copy_args(r.slot, argc, argv)) {
                reply_err(&r, "ERR out of memory");
            } else {
                r.slot->cmd = cmd;
                r.slot->kind = SLOT_READ;
                c->reads_pending++;
                srv_enqueue_read(s, r.slot);
                r.async = true;
            }
        }
    } else {
        cmd->fn(&r);
    }
    if (r.slot && !r.async)
        srv_slot_done(r.slot);
}
