/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd.c — the command table (expanded from commands.def), argument parsing and dispatch (cmd.h
 * has the families' files).
 *
 * Paths (srv_dispatch):
 *   CMD_LOCAL  answered at once (PING, HELLO, INFO, ...)
 *   CMD_WRITE  validated here, encoded and proposed; answered when applied (cmd_write_done)
 *   CMD_READ   queued for the next barrier, then run against the FSM (srv_run_read)
 * Validation happens before proposing, so malformed commands never enter the log; the FSM
 * checks the semantic rules again when it applies (sessions may end in between).
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/text.h"
#include "server/cmd/cmd.h"

const char *cmd_arg_text(const struct resp_arg *a, char *out)
{
    size_t n = a->len > CMD_ARG_SHOWN ? CMD_ARG_SHOWN : a->len;
    text_name(a->p, n, TEXT_HEX | TEXT_ASCII, out, CMD_ARG_TEXT); /* 4 bytes a byte: all fit */
    return out;
}

void cmd_reply_err(struct srv_req *r, const char *msg)
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
            resp_w_errorf(out, PROTO_NOTLEADER " %.*s", (int)addr.len, addr.p);
        else
            resp_w_error(out, PROTO_NOLEADER " no leader is known right now; retry later");
        buf_free(&addr);
        break;
    case RN_UNKNOWN:
        resp_w_error(out,
                     PROTO_UNKNOWN " leadership was lost after the command was proposed: it may or "
                                   "may not have applied; retry with the same REQ sid seq");
        break;
    default:
        resp_w_error(out, PROTO_ERR " server unavailable (shutting down or out of memory)");
        break;
    }
}

/* A write or a linearizable read needs a ready leader. */
int cmd_need_leader(struct srv_req *r)
{
    if (srv_ready(r->s))
        return 0;
    if (srv_noleader_park(r)) /* answered once a ready leader is known (noleader.c) */
        return -1;
    if (r->s->cluster.role == RN_LEADER)
        resp_w_error(r->out, PROTO_NOLEADER " leader elected but not ready yet; retry");
    else
        srv_reply_status(r->s, r->out, RN_NOTLEADER);
    return -1;
}

int cmd_arg_u64(struct srv_req *r, size_t i, const char *what, uint64_t *v)
{
    if (resp_parse_u64(r->argv[i].p, r->argv[i].len, v) == 0)
        return 0;
    resp_w_errorf(r->out, PROTO_ERR " %s is not a valid unsigned integer", what);
    return -1;
}

int cmd_arg_range(struct srv_req *r, size_t i, const char *what, uint64_t lo, uint64_t hi,
                  uint64_t *v)
{
    if (cmd_arg_u64(r, i, what, v))
        return -1;
    if (*v < lo || *v > hi) {
        resp_w_errorf(r->out, PROTO_ERR " %s must be between %llu and %llu", what,
                      (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    return 0;
}

/* Names and keys: non-empty, at most --max-key bytes. */
int cmd_arg_name(struct srv_req *r, size_t i, const char *what, struct fsm_str *out)
{
    const struct resp_arg *a = &r->argv[i];
    if (a->len == 0) {
        resp_w_errorf(r->out, PROTO_ERR " %s must not be empty", what);
        return -1;
    }
    if (a->len > r->s->cfg.max_key) {
        resp_w_errorf(r->out, PROTO_TOOLARGE " %s is %zu bytes, the limit is %zu", what, a->len,
                      r->s->cfg.max_key);
        return -1;
    }
    out->p = a->p;
    out->len = (uint32_t)a->len;
    return 0;
}

int cmd_no_session(struct srv_req *r, uint64_t sid)
{
    resp_w_errorf(r->out, PROTO_NOSESSION " session %llu is not alive", (unsigned long long)sid);
    return -1;
}

/* A session named by a command must be alive and not already expiring on this leader. */
int cmd_live_session(struct srv_req *r, uint64_t sid)
{
    if (lease_session_live(&r->s->lease.rules, sid))
        return 0;
    return cmd_no_session(r, sid);
}

/* ---- options: LEASE sid, FENCE name token, IFREV rev, REQ sid seq, WAIT ms, ... ---- */

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
    OPT("LEASE", CMD_OPT_LEASE, 1),     OPT("FENCE", CMD_OPT_FENCE, 2),
    OPT("IFREV", CMD_OPT_IFREV, 1),     OPT("REQ", CMD_OPT_REQ, 2),
    OPT("WAIT", CMD_OPT_WAIT, 1),       OPT("LOCKDELAY", CMD_OPT_LOCKDELAY, 1),
    OPT("NAME", CMD_OPT_NAME, 1),       OPT("SHARED", CMD_OPT_SHARED, 0),
    OPT("NOTIFY", CMD_OPT_NOTIFY, 0),   OPT("VALUE", CMD_OPT_VALUE, 1),
    OPT("MAXHOLD", CMD_OPT_MAXHOLD, 1), OPT("TRACEPARENT", CMD_OPT_TRACE, 1),
#undef OPT
};

static int opt_value(struct srv_req *r, int bit, size_t i, struct fsm_cmd *cmd)
{
    const struct srv_config *cfg = &r->s->cfg;
    switch (bit) {
    case CMD_OPT_LEASE:
        if (cmd_arg_u64(r, i, "LEASE sid", &cmd->put.lease_sid) ||
            cmd_live_session(r, cmd->put.lease_sid))
            return -1;
        return 0;
    case CMD_OPT_FENCE:
        fsm_cmd_cond(cmd)->has_fence = true;
        if (cmd_arg_name(r, i, "FENCE lock name", &fsm_cmd_cond(cmd)->fence_name))
            return -1;
        return cmd_arg_u64(r, i + 1, "FENCE token", &fsm_cmd_cond(cmd)->fence_token);
    case CMD_OPT_IFREV:
        fsm_cmd_cond(cmd)->has_ifrev = true;
        return cmd_arg_u64(r, i, "IFREV revision", &fsm_cmd_cond(cmd)->ifrev);
    case CMD_OPT_REQ:
        if (cmd_arg_u64(r, i, "REQ sid", &cmd->req_sid) ||
            cmd_arg_range(r, i + 1, "REQ seq", 1, INT64_MAX, &cmd->req_seq))
            return -1;
        return cmd_live_session(r, cmd->req_sid);
    case CMD_OPT_WAIT: /* only the ops that may queue allow it: their payload has a WAIT field */
        return cmd_arg_range(r, i, "WAIT ms", 0, cfg->max_wait, fsm_cmd_u64(cmd, FSM_F_WAIT));
    case CMD_OPT_LOCKDELAY:
        return cmd_arg_range(r, i, "LOCKDELAY ms", 0, cfg->max_lockdelay,
                             &cmd->session_open.lockdelay_ms);
    case CMD_OPT_VALUE: /* LOCK parses into a LOCK_META (cmd_lock.c) */
        if (r->argv[i].len > cfg->max_lock_value) {
            resp_w_errorf(r->out, PROTO_TOOLARGE " VALUE is over %llu bytes (--max-lock-value)",
                          (unsigned long long)cfg->max_lock_value);
            return -1;
        }
        cmd->lock_meta.value.p = r->argv[i].p;
        cmd->lock_meta.value.len = (uint32_t)r->argv[i].len;
        return 0;
    case CMD_OPT_MAXHOLD:
        return cmd_arg_range(r, i, "MAXHOLD ms", cfg->min_max_hold, cfg->max_max_hold,
                             &cmd->lock_meta.maxhold_ms);
    case CMD_OPT_TRACE: /* recorded in the history, the events and the audit log only */
        if (trace_parse(r->argv[i].p, r->argv[i].len, &cmd->trace)) {
            char shown[CMD_ARG_TEXT];
            resp_w_errorf(r->out,
                          PROTO_ERR " TRACEPARENT must be a W3C traceparent "
                                    "00-<32 hex>-<16 hex>-<2 hex> (lowercase, ids not all zeros), "
                                    "not '%s'",
                          cmd_arg_text(&r->argv[i], shown));
            return -1;
        }
        cmd->traced = true;
        return 0;
    case CMD_OPT_SHARED: /* LOCK and LOCK_SHARED share their payload's layout */
    case CMD_OPT_NOTIFY: /* and LOCK_NOTIFY: a shared request tells nobody (no such op) */
        if (cmd->op == FSM_OP_LOCK_META) { /* LOCK's parse: cmd_lock.c picks the op after it */
            if (cmd->lock_meta.flags) {
                resp_w_errorf(r->out, PROTO_ERR " SHARED and NOTIFY do not go together");
                return -1;
            }
            cmd->lock_meta.flags = bit == CMD_OPT_SHARED ? CMD_LOCK_SHARED : CMD_LOCK_NOTIFY;
            return 0;
        }
        if (cmd->op != FSM_OP_LOCK) {
            resp_w_errorf(r->out, PROTO_ERR " SHARED and NOTIFY do not go together");
            return -1;
        }
        cmd->op = bit == CMD_OPT_SHARED ? FSM_OP_LOCK_SHARED : FSM_OP_LOCK_NOTIFY;
        return 0;
    case CMD_OPT_NAME:
        if (r->argv[i].len > cfg->max_key) {
            resp_w_errorf(r->out, PROTO_TOOLARGE " NAME is over %zu bytes", cfg->max_key);
            return -1;
        }
        cmd->session_open.name.p = r->argv[i].p;
        cmd->session_open.name.len = (uint32_t)r->argv[i].len;
        return 0;
    }
    return -1;
}

/*
 * REQ sid seq must name the session the command acts on: otherwise any client could spend
 * another session's seqs (PUT junk v REQ <A's sid> 9223372036854775807 made every later REQ
 * of A fail as superseded). A command that names no session cannot be checked here until
 * sessions record their owner (docs/security.md).
 */
static int cmd_req_names_acting_session(struct srv_req *r, const struct fsm_cmd *cmd)
{
    uint64_t sid = fsm_cmd_acting_sid(cmd); /* its SID field (ops.h), as the FSM's ownership */
    if (sid == 0 || sid == cmd->req_sid)
        return 0;
    resp_w_errorf(r->out,
                  PROTO_ERR " REQ sid %llu is not the session this command acts on (%llu): a "
                            "request's seq belongs to the session it changes",
                  (unsigned long long)cmd->req_sid, (unsigned long long)sid);
    return -1;
}

int cmd_parse_opts(struct srv_req *r, size_t start, int allowed, struct fsm_cmd *cmd)
{
    int seen = 0;
    size_t i = start;
    while (i < r->argc) {
        size_t k = 0, nd = sizeof(opt_defs) / sizeof(opt_defs[0]);
        while (k < nd && !resp_arg_eq(&r->argv[i], opt_defs[k].word, opt_defs[k].len))
            k++;
        if (k == nd || !(allowed & opt_defs[k].bit)) {
            char shown[CMD_ARG_TEXT];
            resp_w_errorf(r->out, PROTO_ERR " unknown option '%s'",
                          cmd_arg_text(&r->argv[i], shown));
            return -1;
        }
        if (seen & opt_defs[k].bit) {
            resp_w_errorf(r->out, PROTO_ERR " option %s given twice", opt_defs[k].word);
            return -1;
        }
        if (i + (size_t)opt_defs[k].nargs >= r->argc) {
            resp_w_errorf(r->out, PROTO_ERR " option %s needs %d argument(s)", opt_defs[k].word,
                          opt_defs[k].nargs);
            return -1;
        }
        seen |= opt_defs[k].bit;
        if (opt_value(r, opt_defs[k].bit, i + 1, cmd))
            return -1;
        i += 1 + (size_t)opt_defs[k].nargs;
    }
    return (seen & CMD_OPT_REQ) ? cmd_req_names_acting_session(r, cmd) : 0;
}

/* ---- proposals ---- */

/* A parked LOCK's key is the name then the sid's 8 bytes (srv_key_name_sid, map_key_u64). */
#define CMD_SID_BYTES 8

void cmd_write_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv_slot *slot = ctx;
    struct srv *s = slot->srv;
    srv_quota_release(s, &slot->res); /* applied (counted in the state now) or never will be */
    hist_observe(&s->m.commit, (double)(clock_ns() - slot->started_ns) / 1e9);
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
        if ((slot->op == FSM_OP_SESSION_OPEN || slot->op == FSM_OP_SESSION_OPEN_REENTRANT) &&
            slot->conn)
            srv_push_conn_sid(slot->conn, reply->value); /* its pushes (watch/push.c) */
        if (slot->op == FSM_OP_INCR)                     /* the counter's value: signed */
            resp_w_int(&slot->out, (int64_t)reply->value);
        else if (slot->op == FSM_OP_TXN) /* branch, revision, results (cmd_txn.c) */
            cmd_txn_reply(slot, reply);
        else
            srv_write_tokens(slot, reply->value); /* a LOCK.MULTI's: all its tokens */
        break;
    case FSM_REPLY_NIL:
        resp_w_nil(&slot->out, slot->proto);
        break;
    case FSM_REPLY_QUEUED: {
        /* The name+sid key was kept in pkey; the reply waits for the grant or the cancel. */
        size_t namelen = slot->pkeylen - CMD_SID_BYTES;
        uint64_t sid = 0;
        for (int i = 0; i < CMD_SID_BYTES; i++)
            sid |= (uint64_t)(unsigned char)slot->pkey[namelen + i] << (8 * i);
        lease_wait_refresh(&s->lease.rules, slot->pkey, namelen, sid, slot->wait_ms,
                           clock_ms()); /* on failure the tick re-derives it */
        if (slot->conn && srv_park(s, slot) == 0)
            return;
        if (slot->conn)
            resp_w_error(&slot->out, PROTO_ERR " out of memory parking the request");
        break;
    }
    default:
        resp_w_error(&slot->out, reply->err);
        break;
    }
    srv_slot_done(slot);
}

int cmd_trace_needs_fence(struct srv_req *r, struct fsm_cmd *cmd)
{
    const struct fsm_kv_cond *cond = fsm_cmd_cond(cmd);
    if (!cmd->traced || (cond && cond->has_fence))
        return 0;
    cmd_reply_err(r, PROTO_ERR " TRACEPARENT goes with FENCE: only a fenced write carries one");
    return -1;
}

/* A command with TRACEPARENT, proposed: one audit line (`traced`), so a trace's request is found
 * in the audit log as in the lock history and the events. */
static void audit_traced(struct srv_req *r, const struct fsm_cmd *cmd)
{
    char tp[TRACE_TEXT_LEN + 1], name[FSM_NAME_SHOWN];
    const struct fsm_str *n = fsm_cmd_str(cmd, FSM_F_NAME);
    trace_format(&cmd->trace, tp);
    srv_audit(r->s, r->c, "traced", "op=%s name=%s sid=%llu traceparent=%s", fsm_op_name(cmd->op),
              n ? fsm_printable(n->p, n->len, name, sizeof(name)) : "",
              (unsigned long long)fsm_cmd_acting_sid(cmd), tp);
}

void cmd_propose(struct srv_req *r, struct fsm_cmd *cmd)
{
    struct srv *s = r->s;
    struct fsm_wait_ref wr;
    const struct fsm_wait_ref *lk = fsm_cmd_wait_of(cmd, &wr) ? &wr : NULL;
    if (cmd_acting_user(r, cmd))
        return;
    r->slot->op = cmd->op;
    r->slot->wait_ms = lk ? lk->wait_ms : 0;
    r->slot->started_ns = clock_ns();
    if (lk) {
        struct buf k;
        buf_init(&k);
        if (!srv_key_name_sid(lk->name.p, lk->name.len, lk->sid, &k)) {
            cmd_reply_err(r, PROTO_ERR " out of memory");
            return;
        }
        r->slot->pkey = k.p;
        r->slot->pkeylen = k.len;
    }
    if (srv_quota_reserve(s, cmd, r->c ? r->c->user : NULL, &r->slot->res, r->out))
        return;
    int rc = lk ? srv_propose_lock(s, cmd, cmd_write_done, r->slot)
                : srv_propose(s, cmd, cmd_write_done, r->slot);
    if (rc != RN_OK) {
        srv_quota_release(s, &r->slot->res);
        srv_reply_status(s, r->out, rc);
        return;
    }
    if (cmd->traced)
        audit_traced(r, cmd);
    r->async = true;
}

/* commands.def's rows, in its order (COMMAND's); the index of a row is its enum srv_cmd_id. */
static const struct srv_cmd cmd_table[] = {
#define CMD(id, name, arity, flags, fn, perm, alt, names, summary)                                 \
    [SRV_CMD_##id] = {name, sizeof(name) - 1, arity, flags, fn, perm, alt, names, summary},
#include "server/cmd/commands.def"
#undef CMD
};
_Static_assert(sizeof cmd_table / sizeof cmd_table[0] == SRV_CMD_N, "one row per command id");

size_t srv_cmd_count(void)
{
    return SRV_CMD_N;
}

const struct srv_cmd *srv_cmd_at(size_t i)
{
    return i < SRV_CMD_N ? &cmd_table[i] : NULL;
}

size_t srv_cmd_index(const struct srv_cmd *cmd)
{
    if (cmd >= cmd_table && cmd < cmd_table + SRV_CMD_N)
        return (size_t)(cmd - cmd_table);
    return SRV_CMD_N;
}

void srv_cmd_count_reply(struct srv *s, const struct srv_cmd *cmd, const struct buf *out,
                         size_t from)
{
    if (out->len >= from)
        cmdstat_count(&s->cmdstat, srv_cmd_index(cmd), out->p + from, out->len - from);
}

static const char *cmd_name_at(size_t i)
{
    return srv_cmd_at(i)->name;
}

void srv_cmd_render_counts(struct srv *s, struct buf *out)
{
    cmdstat_render(&s->cmdstat, out, cmd_name_at);
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
        resp_w_error(&slot->out, PROTO_ERR " out of memory");
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
    c->last_cmd_ms = clock_ms();
    /* libraft has no role callback: look now, so no command is answered from a stale role. */
    srv_poll_leadership(s);
    bool async = cmd && (cmd->flags & (CMD_WRITE | CMD_READ | CMD_ASYNC));
    if (c->head || async) {
        r.slot = srv_slot_append(c);
        if (!r.slot) {
            srv_conn_close(c);
            return;
        }
        r.out = &r.slot->out;
        r.slot->cmd = cmd; /* srv_slot_done counts its reply under it */
    } else {
        r.out = &c->out;
    }
    size_t out_from = r.out->len;
    char shown[CMD_ARG_TEXT];
    if (cmd_perm_check(&r, cmd)) {
        /* -NOAUTH or -NOPERM written: nothing runs (cmd_perm.c) */
    } else if (!cmd) {
        const char *hint = cmd_unknown_hint(&argv[0]);
        resp_w_errorf(r.out, PROTO_ERR " unknown command '%s'%s%s", cmd_arg_text(&argv[0], shown),
                      hint ? "; " : "", hint ? hint : "");
    } else if (!arity_ok(cmd, argc)) {
        resp_w_errorf(r.out, CMD_ERR_ARGS_S, cmd_arg_text(&argv[0], shown));
    } else if ((cmd->flags & CMD_READ) && c->stale_reads && !(cmd->flags & CMD_FRESH)) {
        cmd->fn(&r); /* READONLY: this node's applied state, possibly stale, any role */
    } else if (cmd->flags & CMD_READ) {
        if (cmd_need_leader(&r) == 0) {
            if (copy_args(r.slot, argc, argv)) {
                cmd_reply_err(&r, PROTO_ERR " out of memory");
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
    else if (!r.slot)
        srv_cmd_count_reply(s, cmd, &c->out, out_from);
}
