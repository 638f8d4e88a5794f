/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd — the command families' internal header: the request a handler gets, the command table's
 * row, and the argument helpers every family shares (cmd.c).
 *
 * The commands are the rows of commands.def (name, arity, flags, handler, permission, which
 * argument is a key or a lock name, summary); this header expands them into the handlers'
 * declarations and enum srv_cmd_id, cmd.c into the table. A handler is
 * `void fooCommand(struct srv_req *r)` in the file of its family:
 *   cmd_session.c  sessions            cmd_lock.c     locks and fencing tokens
 *   cmd_multi.c    LOCK.MULTI
 *   cmd_sign.c     signed tokens       cmd_prims.c    semaphores and elections
 *   observe.c      ELECT.OBSERVE       cmd_kv.c       keys
 *   cmd_cluster.c  membership          cmd_info.c     PING, HELLO, INFO
 *   cmd_backup.c   SNAPSHOT.SAVE       cmd_watch.c    the event stream
 *   cmd_conn.c     what Redis clients send on connect, COMMAND
 *   cmd_waits.c    the wait-for graph (LOCK.WAITS)
 *   cmd_perm.c     the permission check srv_dispatch makes from the rows (--acl-file)
 * A handler writes its reply to r->out, or sets r->async and answers later through its slot
 * (srv_slot_done). The helpers return 0, or -1 with the error reply already written.
 * The table is static and read-only: nothing to free.
 */
#ifndef FENCELOCK_CMD_H
#define FENCELOCK_CMD_H

#include "server/server.h"

struct srv_req {
    struct srv *s;
    struct srv_conn *c;    /* NULL when run for an orphaned read */
    struct srv_slot *slot; /* NULL for a sync command with nothing queued before it */
    size_t argc;
    struct resp_arg *argv;
    struct buf *out;
    int proto;
    bool async; /* set by the handler when the reply comes later */
};

/* CMD_FRESH: a CMD_READ that goes behind a barrier even on a READONLY connection.
   CMD_ASYNC: a CMD_LOCAL that may answer later (AUTH, HELLO): it always gets a slot. */
enum srv_cmd_flags { CMD_LOCAL = 1, CMD_WRITE = 2, CMD_READ = 4, CMD_FRESH = 8, CMD_ASYNC = 16 };

/* Under --acl-file (a row's perm): answered before AUTH too; any authenticated user. Other
   values are enum acl_perm bits the user needs all of. */
#define CMD_PERM_OPEN 0x100u
#define CMD_PERM_ANY 0u

/* Which argument of a command names a key or a lock (a row's names), for the permission
 * check. */
enum srv_cmd_target {
    CMD_T_NONE = 0,
    CMD_T_KEY,      /* argv[arg] is a key; a FENCE name among the options is a lock */
    CMD_T_LOCK,     /* argv[arg] is a lock name */
    CMD_T_LOCKS,    /* argv[arg] is a count n, the n lock names follow it (LOCK.MULTI) */
    CMD_T_ALLKEYS,  /* counts every key (DBSIZE): only for users without keys= */
    CMD_T_ALLNAMES, /* sees every key and lock name and value (the event stream): only for
                       users without keys= or locks= (events are not filtered per user yet) */
    CMD_T_TXN,      /* TXN: every key and lock its compares, ops and FENCE name (cmd_txn.c) */
};
struct srv_cmd_names {
    enum srv_cmd_target target;
    unsigned arg;       /* CMD_T_KEY / CMD_T_LOCK: the argument's index */
    unsigned opts_from; /* CMD_T_KEY: its options (FENCE name token) start here; 0: none */
};
/* A row's names column, one brace initializer each. */
/* clang-format off */
#define CMD_NAMES_NONE {CMD_T_NONE, 0, 0}
#define CMD_NAMES_KEY(arg, opts_from) {CMD_T_KEY, arg, opts_from}
#define CMD_NAMES_LOCK(arg) {CMD_T_LOCK, arg, 0}
#define CMD_NAMES_LOCKS(arg) {CMD_T_LOCKS, arg, 0}
#define CMD_NAMES_ALLKEYS {CMD_T_ALLKEYS, 0, 0}
#define CMD_NAMES_ALLNAMES {CMD_T_ALLNAMES, 0, 0}
#define CMD_NAMES_TXN {CMD_T_TXN, 0, 0}
/* clang-format on */

/* One row of commands.def. */
struct srv_cmd {
    const char *name;
    size_t len; /* strlen(name) */
    int arity;  /* exact argc, or -N: at least N */
    int flags;
    void (*fn)(struct srv_req *r);
    unsigned perm; /* CMD_PERM_OPEN, CMD_PERM_ANY, or enum acl_perm bits needed */
    unsigned alt;  /* 0, or acl_perm bits any one of which also suffices */
    struct srv_cmd_names names;
    const char *summary; /* one line: COMMAND DOCS, docs/protocol.md "Command table" */
};

/* SRV_CMD_PING, ...: a row's index in the table (srv_cmd_at), in commands.def's order. */
enum srv_cmd_id {
#define CMD(id, name, arity, flags, fn, perm, alt, names, summary) SRV_CMD_##id,
#include "server/cmd/commands.def"
#undef CMD
    SRV_CMD_N
};

#define CMD_ERR_ARGS PROTO_ERR " wrong number of arguments for '%.*s' command"
#define CMD_ERR_ARGS_S PROTO_ERR " wrong number of arguments for '%s' command"
/* Member ids: 1 .. 2^32 (CLUSTER.ADD / REMOVE / TRANSFER / ANNOUNCE). */
#define CMD_MEMBER_ID_MAX (1ull << 32)

/* Options after a command's fixed arguments (cmd_parse_opts). */
enum {
    CMD_OPT_LEASE = 1,      /* LEASE sid */
    CMD_OPT_FENCE = 2,      /* FENCE name token */
    CMD_OPT_IFREV = 4,      /* IFREV rev */
    CMD_OPT_REQ = 8,        /* REQ sid seq */
    CMD_OPT_WAIT = 16,      /* WAIT ms */
    CMD_OPT_LOCKDELAY = 32, /* LOCKDELAY ms */
    CMD_OPT_NAME = 64,      /* NAME name */
    CMD_OPT_SHARED = 128,   /* SHARED: LOCK in shared mode (the op becomes LOCK_SHARED) */
    CMD_OPT_NOTIFY = 256,   /* NOTIFY: LOCK tells the holder it waits (the op LOCK_NOTIFY) */
    CMD_OPT_VALUE = 512,    /* VALUE v: LOCK's grant carries v (the op LOCK_META) */
    CMD_OPT_MAXHOLD = 1024, /* MAXHOLD ms: LOCK's grant ends after ms (the op LOCK_META) */
    CMD_OPT_TRACE = 2048    /* TRACEPARENT tp: a W3C traceparent in the entry's header */
};

const struct srv_cmd *srv_cmd_lookup(const struct resp_arg *name);
/* An argument (or any name) as error or log text: at most CMD_ARG_SHOWN bytes of it, every
 * byte outside printable ASCII (and '\') as \xNN, so a NUL or a line end cannot cut or break
 * the reply or forge a log line (text_name with TEXT_HEX | TEXT_ASCII, common/text.h). `out`
 * holds CMD_ARG_TEXT bytes. */
#define CMD_ARG_SHOWN 64
#define CMD_ARG_TEXT (4 * CMD_ARG_SHOWN + 1)
const char *cmd_arg_text(const struct resp_arg *a, char *out);

/* Every command, for COMMAND: i in [0, srv_cmd_count()) (an enum srv_cmd_id). */
size_t srv_cmd_count(void);
const struct srv_cmd *srv_cmd_at(size_t i);
/* The index of a table entry (srv_cmd_at(i) == cmd), or srv_cmd_count() for NULL. */
size_t srv_cmd_index(const struct srv_cmd *cmd);
/* Count a finished reply of `cmd` (NULL: unknown command) in fencelock_commands_total. */
void srv_cmd_render_counts(struct srv *s, struct buf *out);
void srv_cmd_count_reply(struct srv *s, const struct srv_cmd *cmd, const struct buf *out,
                         size_t from);
/* HELLO's options after the version (AUTH user password, SETNAME name), checked but not
   applied: 0, or -1 with the error written (and nothing changed). Pointers into r->argv. */
struct srv_hello_opts {
    const struct resp_arg *user, *pw, *setname;
};
int srv_hello_options(struct srv_req *r, struct srv_hello_opts *o);

/* ---- permissions (cmd_perm.c) ---- */
/* Whether user u may still run `cmd` naming `arg` (its lock name; NULL when it names none):
   the same row as cmd_perm_check, asked again for requests parked before a SIGHUP lowered u's
   permissions (srv_reauth_parked). */
bool cmd_perm_allows(const struct acl_user *u, const struct srv_cmd *cmd, const char *arg,
                     size_t n);
/* -NOPERM for a parked `cmd` whose user lost the permission at an ACL reload, into out. */
void cmd_perm_lost(struct buf *out, const struct acl_user *u, const struct srv_cmd *cmd);
/* Before running cmd for r's connection: 0 to run it, or -1 with -NOAUTH / -NOPERM written
   (and counted). Without --acl-file always 0. */
int cmd_perm_check(struct srv_req *r, const struct srv_cmd *cmd);
/* KEYS / LOCKS: whether r's user may see this key / lock (true without --acl-file). */
bool cmd_may_key(const struct srv_req *r, const char *key, size_t n);
bool cmd_may_lock(const struct srv_req *r, const char *name, size_t n);
/* Session ownership (the FSM decides again at apply, src/fsm/owner.c): whether r's user may
   act on session `sid` (admin_ok: an admin may, too). 0, or -1 with -NOSESSION written,
   exactly as for a missing session (cmd_no_session). 0 for a session that does not exist (the
   caller answers NOSESSION) and without --acl-file. */
int cmd_session_access(struct srv_req *r, uint64_t sid, bool admin_ok);
/* Mark a client's command for the log: checked (with --acl-file, or with a REQ: the request
   digest), the acting user and its admin bit; then the FSM's ownership rule against the
   applied state, so a refusal costs no log entry. 0, or -1 with -NOSESSION written for
   another user's session (cmd_no_session). */
int cmd_acting_user(struct srv_req *r, struct fsm_cmd *cmd);

/* LOCK.INFO's waiters and waits_for (cmd_waits.c), both from one read of the lock's queue
   (waitrows_read: its rows, one per queued request in FIFO order): the array of the rows' sids,
   and the array of each row's list of the sessions it waits for. */
struct wait_rows;
void cmd_write_waiters(struct buf *out, const struct wait_rows *x);
void cmd_write_waits_for(struct buf *out, const struct wait_rows *x);

/* LOCK.HISTORY's entries (cmd_history.c; GET /v1/locks/{name}/history too): up to `count`
   grants of `name` with a token below `before` (0: any), newest first, into out->v (the caller
   frees it; views borrow the FSM until the next apply). 0, or FSM_HIST_OFF, FSM_HIST_COMPACTED
   (out->compacted: the newest revision dropped) or CMD_HISTORY_NOMEM, with out->v NULL. */
#define CMD_HISTORY_NOMEM (-3)
struct cmd_history {
    struct fsm_hist_entry *v;
    size_t n, cap;
    uint64_t compacted;
};
int cmd_history_collect(const struct fsm *f, const char *name, size_t len, uint64_t before,
                        size_t count, struct cmd_history *out);
/* A history entry's traceparent as text in out, or "" for none (NULL). */
const char *cmd_history_trace(const struct trace_ctx *t, char out[TRACE_TEXT_LEN + 1]);
/* The error reply text of a non-zero cmd_history_collect result ("COMPACTED ..."). */
void cmd_history_error(int rc, uint64_t compacted, char *msg, size_t len);

/* LOCK.REVOKE's deadline on the leader (cmd_revoke.c): against a revoke already running on the
 * same grant, the shorter of the asked length and what is left of the running one. */
void cmd_revoke_merge_deadline(struct srv *s, struct fsm_cmd_lock_revoke *c);

/* ---- argument helpers (cmd.c) ---- */
void cmd_reply_err(struct srv_req *r, const char *msg);
/* For an unknown command that Redis users try first (SET, SETNX, EXPIRE...): the fencelock
   command that does its job, as a phrase for the error reply; NULL for any other (cmd_hint.c). */
const char *cmd_unknown_hint(const struct resp_arg *name);
/* A write or a linearizable read needs a ready leader. */
int cmd_need_leader(struct srv_req *r);
int cmd_arg_u64(struct srv_req *r, size_t i, const char *what, uint64_t *v);
int cmd_arg_range(struct srv_req *r, size_t i, const char *what, uint64_t lo, uint64_t hi,
                  uint64_t *v);
/* Names and keys: non-empty, at most --max-key bytes. */
int cmd_arg_name(struct srv_req *r, size_t i, const char *what, struct fsm_str *out);
/* A session named by a command must be alive and not already expiring on this leader. */
int cmd_live_session(struct srv_req *r, uint64_t sid);
/* The one answer for a session a command may not use: missing, ended, or another user's
   (so that the answer is no oracle of other users' live session ids). Writes -NOSESSION,
   returns -1. */
int cmd_no_session(struct srv_req *r, uint64_t sid);
/* LOCK's options parse into a LOCK_META's flags: NOTIFY is the FSM's bit 0; SHARED is the
 * parser's own mark (bit 1, never proposed: cmd_lock.c turns it into LOCK_SHARED). */
#define CMD_LOCK_NOTIFY 1u
#define CMD_LOCK_SHARED 2u
/* PUT, DEL, INCR: a TRACEPARENT without FENCE is refused (the error replied, -1); else 0. */
int cmd_trace_needs_fence(struct srv_req *r, struct fsm_cmd *cmd);
/* Parse the options from argv[start] on; only those in `allowed` (CMD_OPT_* bits). */
int cmd_parse_opts(struct srv_req *r, size_t start, int allowed, struct fsm_cmd *cmd);
/* Propose `cmd` for r's slot; the reply comes from cmd_write_done when it applied. */
void cmd_propose(struct srv_req *r, struct fsm_cmd *cmd);
/* The rn_propose_cb of a command's proposal: renders the FSM's reply into the slot. */
void cmd_write_done(void *ctx, int status, const struct fsm_reply *reply);

/* ---- the commands: every handler of commands.def (a shared one is declared again) ---- */
#define CMD(id, name, arity, flags, fn, perm, alt, names, summary) void fn(struct srv_req *r);
#include "server/cmd/commands.def"
#undef CMD

/* A granted lock's reply into the slot: the token, or for a LOCK.MULTI the array of its tokens
 * in the order the names were given (cmd_multi.c; `first` is the grant's first token). */
void srv_write_tokens(struct srv_slot *slot, uint64_t first);

/* TXN (cmd_txn.c): the reply of an applied TXN (INT reply) into the slot; and for the
 * permission check, what u may not do among the names a TXN's arguments give (NULL: all
 * allowed, or a syntax error the handler answers), *at the argv index of the name refused (0:
 * none to quote). */
void cmd_txn_reply(struct srv_slot *slot, const struct fsm_reply *reply);
const char *cmd_txn_names(const struct acl_user *u, const struct resp_arg *argv, size_t argc,
                          size_t *at);

/* ELECT.LEADER's and ELECT.OBSERVE's map; v NULL: nobody leads, as of revision `rev`. */
void srv_write_elect(struct buf *out, int proto, const struct fsm_elect_view *v, uint64_t rev);
/* -WRONGTYPE (and -1) if `name` exists as another kind than `kind`. */
int cmd_check_kind(struct srv_req *r, const struct fsm_str *name, int kind);

#endif
