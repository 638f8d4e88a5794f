/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd — the command families' internal header: the request a handler gets, the command table's
 * row, and the argument helpers every family shares (cmd.c).
 *
 * Every command is `void fooCommand(struct srv_req *r)` in the file of its family:
 *   cmd_session.c  SESSION.OPEN / KEEPALIVE / CLOSE / INFO / REVOKE
 *   cmd_lock.c     LOCK, UNLOCK, LOCK.INFO, FENCE.CHECK, LOCKS
 *   cmd_sign.c     FENCE.SIGN, FENCE.VERIFY (signed tokens, --token-key)
 *   cmd_prims.c    SEM.ACQUIRE / RELEASE / INFO, ELECT.CAMPAIGN / PROCLAIM / RESIGN / LEADER
 *   observe.c      ELECT.OBSERVE (parked until the election changes)
 *   cmd_kv.c       PUT, DEL, GET, KV.GET, KEYS
 *   cmd_cluster.c  CLUSTER.INFO / MEMBERS / ANNOUNCE / ADD / REMOVE / TRANSFER
 *   cmd_info.c     PING, HELLO, INFO
 *   cmd_backup.c   SNAPSHOT.SAVE (an online backup of the whole state)
 *   cmd_watch.c    XREAD, XLEN, XINFO (the event stream) and the refused stream writes
 *   cmd_conn.c     QUIT, READONLY, READWRITE, and its own table: AUTH, ECHO, SELECT, DBSIZE,
 *                  CLIENT, COMMAND
 *   cmd_perm.c     what each command needs of the user (--acl-file), checked by srv_dispatch
 * A handler writes its reply to r->out, or sets r->async and answers later through its slot
 * (srv_slot_done). The helpers return 0, or -1 with the error reply already written.
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

struct srv_cmd {
    const char *name;
    size_t len; /* strlen(name) */
    int arity;  /* exact argc, or -N: at least N */
    int flags;
    void (*fn)(struct srv_req *r);
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
    CMD_OPT_SHARED = 128    /* SHARED: LOCK in shared mode (the op becomes LOCK_SHARED) */
};

const struct srv_cmd *srv_cmd_lookup(const struct resp_arg *name);
/* An argument (or any name) as error or log text: at most CMD_ARG_SHOWN bytes of it, every
 * byte outside printable ASCII (and '\') as \xNN, so a NUL or a line end cannot cut or break
 * the reply or forge a log line (text_name with TEXT_HEX | TEXT_ASCII, common/text.h). `out`
 * holds CMD_ARG_TEXT bytes. */
#define CMD_ARG_SHOWN 64
#define CMD_ARG_TEXT (4 * CMD_ARG_SHOWN + 1)
const char *cmd_arg_text(const struct resp_arg *a, char *out);

/* Every command, for COMMAND: i in [0, srv_cmd_count()). */
size_t srv_cmd_count(void);
const struct srv_cmd *srv_cmd_at(size_t i);
/* The index of a table entry (srv_cmd_at(i) == cmd), or srv_cmd_count() for NULL. */
size_t srv_cmd_index(const struct srv_cmd *cmd);
/* Count a finished reply of `cmd` (NULL: unknown command) in fencelock_commands_total. */
void srv_cmd_render_counts(struct srv *s, struct buf *out);
void srv_cmd_count_reply(struct srv *s, const struct srv_cmd *cmd, const struct buf *out,
                         size_t from);
/* The connection-management commands (cmd_conn.c: ECHO, SELECT, DBSIZE, CLIENT, COMMAND),
   looked up after cmd.c's own table. */
extern const struct srv_cmd srv_conn_cmds[];
extern const size_t srv_n_conn_cmds;
/* HELLO's options after the version (AUTH user password, SETNAME name), checked but not
   applied: 0, or -1 with the error written (and nothing changed). Pointers into r->argv. */
struct srv_hello_opts {
    const struct resp_arg *user, *pw, *setname;
};
int srv_hello_options(struct srv_req *r, struct srv_hello_opts *o);

/* ---- permissions (cmd_perm.c) ---- */
/* Whether the command has a row in the permission table (every command must: test_acl.c). */
bool cmd_perm_rule(const char *name, size_t len);
/* Whether user u may still run command `name` naming `arg` (its lock name; NULL when it names
   none): the same table as cmd_perm_check, asked again for requests parked before a SIGHUP
   lowered u's permissions (srv_reauth_parked). */
bool cmd_perm_allows(const struct acl_user *u, const char *name, const char *arg, size_t n);
/* -NOPERM for a parked `name` whose user lost the permission at an ACL reload, into out. */
void cmd_perm_lost(struct buf *out, const struct acl_user *u, const char *name);
size_t cmd_perm_count(void);
const char *cmd_perm_name(size_t i);
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

/* ---- argument helpers (cmd.c) ---- */
void cmd_reply_err(struct srv_req *r, const char *msg);
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
/* Parse the options from argv[start] on; only those in `allowed` (CMD_OPT_* bits). */
int cmd_parse_opts(struct srv_req *r, size_t start, int allowed, struct fsm_cmd *cmd);
/* Propose `cmd` for r's slot; the reply comes from cmd_write_done when it applied. */
void cmd_propose(struct srv_req *r, struct fsm_cmd *cmd);
/* The rn_propose_cb of a command's proposal: renders the FSM's reply into the slot. */
void cmd_write_done(void *ctx, int status, const struct fsm_reply *reply);

/* ---- the commands ---- */
void sessionOpenCommand(struct srv_req *r);
void sessionKeepaliveCommand(struct srv_req *r);
void sessionCloseCommand(struct srv_req *r);
void sessionInfoCommand(struct srv_req *r);
void sessionRevokeCommand(struct srv_req *r);
void lockCommand(struct srv_req *r);
void unlockCommand(struct srv_req *r);
void lockInfoCommand(struct srv_req *r);
void fenceCheckCommand(struct srv_req *r);
void fenceSignCommand(struct srv_req *r);
void fenceVerifyCommand(struct srv_req *r);
void locksCommand(struct srv_req *r);
void putCommand(struct srv_req *r);
void delCommand(struct srv_req *r);
void getCommand(struct srv_req *r);
void kvGetCommand(struct srv_req *r);
void keysCommand(struct srv_req *r);
void pingCommand(struct srv_req *r);
void helloCommand(struct srv_req *r);
void infoCommand(struct srv_req *r);
void quitCommand(struct srv_req *r);
void readonlyCommand(struct srv_req *r);
void readwriteCommand(struct srv_req *r);
void clusterInfoCommand(struct srv_req *r);
void clusterMembersCommand(struct srv_req *r);
void clusterAnnounceCommand(struct srv_req *r);
void clusterAddCommand(struct srv_req *r);
void clusterRemoveCommand(struct srv_req *r);
void clusterTransferCommand(struct srv_req *r);
void snapshotSaveCommand(struct srv_req *r);
void semAcquireCommand(struct srv_req *r);
void semReleaseCommand(struct srv_req *r);
void semInfoCommand(struct srv_req *r);
void electCampaignCommand(struct srv_req *r);
void electProclaimCommand(struct srv_req *r);
void electResignCommand(struct srv_req *r);
void electLeaderCommand(struct srv_req *r);
void electObserveCommand(struct srv_req *r);
/* ELECT.LEADER's and ELECT.OBSERVE's map; v NULL: nobody leads, as of revision `rev`. */
void srv_write_elect(struct buf *out, int proto, const struct fsm_elect_view *v, uint64_t rev);
/* -WRONGTYPE (and -1) if `name` exists as another kind than `kind`. */
int cmd_check_kind(struct srv_req *r, const struct fsm_str *name, int kind);
void xreadCommand(struct srv_req *r);
void xlenCommand(struct srv_req *r);
void xinfoCommand(struct srv_req *r);
void xwriteCommand(struct srv_req *r);

#endif
