/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server — fencelockd's service layer: one libuv loop, one thread, for state and network.
 *
 * Owns (struct srv, the only mutable state outside main): the FSM, the replication node, the
 * client listener and connections, the HTTP endpoint, the leader's deadline tables (struct
 * lease, lease.h: the rules; timers.c feeds it the clock and FSM events and carries out its
 * actions), the hold-time table (name -> monotonic grant time) and metrics.
 *
 * Requests (struct srv_slot) keep each connection's replies in request order:
 *   slot states: PENDING (proposal, barrier read) -> DONE (reply in out)
 *                PENDING -> PARKED (LOCK ... WAIT queued) -> PENDING -> DONE (woken)
 *   changed only by srv_slot_set_state (asserts the move). srv_slot_done() moves to DONE and
 *   flushes the connection's done prefix. A slot whose connection closed is orphaned
 *   (conn == NULL) and frees itself when it completes.
 * Leadership (leader.c): NOT_LEADER -> READY_PENDING (barrier of this term proposed) -> READY
 *   (barrier applied in the same term) -> NOT_LEADER; READY_PENDING -> NOT_LEADER when that
 *   barrier fails. Changed only by srv_lead_set (asserts the move). A READY leader is the only
 *   one that serves reads and proposes: no stale reads after an election.
 */
#ifndef FENCELOCK_SERVER_H
#define FENCELOCK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/map.h"
#include "common/proto.h"
#include "common/resp.h"
#include "fsm/fsm.h"
#include "raft/rn.h"
#include "server/security/audit.h"
#include "server/security/auth.h"
#include "server/cmd/cmdstat.h"
#include "server/lease/heap.h"
#include "server/obs/http.h"
#include "server/lease/lease.h"
#include "server/security/limits.h"
#include "server/obs/metrics.h"
#include "server/obs/notify.h"
#include "server/net/tls.h"
#include "server/security/tokensig.h"
#include "server/watch/wakeidx.h"
#include "server/watch/watch.h"

/* The release, defined once as FL_VERSION in include/fencelock.h; the Makefile passes it here
 * (-DFENCELOCK_VERSION) so that the server does not include the client library's header. */
#ifndef FENCELOCK_VERSION
#error "FENCELOCK_VERSION is not defined: build with the Makefile (it reads include/fencelock.h)"
#endif

struct srv_config {
    uint64_t id;
    char data_dir[512];
    char listen_host[PROTO_ADDR_BUF];
    int listen_port;
    char raft_address[PROTO_ADDR_BUF];
    bool raft_listen_set;
    struct rn_peer peers[RN_MAX_PEERS]; /* --initial-cluster */
    size_t n_peers;
    /* --join: members' client addresses, tried in turn */
    char join[RN_MAX_PEERS][PROTO_ADDR_BUF];
    size_t n_join;     /* 0 = not joining */
    bool recover;      /* --recover: peers is the forced configuration; run once and exit */
    char restore[512]; /* --restore FILE: a backup into an empty data dir; run once and exit */
    char http_host[PROTO_ADDR_BUF];
    int http_port; /* 0 = no HTTP endpoint */
    size_t max_bulk, max_args, max_clients, max_key, max_value, max_keys_reply;
    size_t max_pending;      /* per connection: reading pauses beyond it */
    size_t max_output;       /* per connection: unsent reply bytes before it is closed */
    size_t max_output_soft;  /* per connection: reading and parsing pause beyond it */
    size_t max_query_buffer; /* per connection: input bytes of one unfinished command */
    size_t max_input_total;  /* all connections' input buffers together */
    uint64_t idle_timeout;   /* ms without traffic before a client connection closes; 0 off */
    unsigned http_max_conns; /* HTTP connections open at once */
    uint64_t http_idle_ms;   /* HTTP: ms to send the request, and again to read the reply */
    uint64_t max_ttl, max_lockdelay, max_wait;
    /* quotas (quota.c): checked on the leader before proposing */
    uint64_t max_sessions, max_locks, max_keys, max_waiters, max_data_bytes;
    uint64_t max_parked;         /* --max-parked: parked XREAD/ELECT.OBSERVE, all users (quota.c) */
    uint64_t checkpoint_min_ttl; /* sessions with a TTL this long get lease checkpoints */
    unsigned election_ms, heartbeat_ms, snapshot_threshold, snapshot_trailing, lazy_ms;
    uint64_t snapshot_log_bytes; /* log bytes since a snapshot that force the next one */
    unsigned tick_ms;
    /* XREAD (cmd_watch.c): the event history's bounds, the longest value it keeps, and the
     * unread reply bytes a reader may hold */
    size_t event_history, event_history_bytes, event_value_max, event_buffer;
    enum log_level log_level;
    enum log_format log_format; /* --log-format: text or one JSON object per line */
    /* where the settings came from, for the start's log line (config_src.c): the config file
     * ("" none) and the FENCELOCK_ variables applied, ", "-separated ("" none) */
    char config_file[512];
    char config_env[256];
    char acl_file[512];    /* --acl-file: "" = no users, every client may do anything */
    bool insecure_no_auth; /* --insecure-no-auth: listen publicly without --acl-file */
    /* --peer-user / --peer-password-file: what this node sends AUTH as before CLUSTER.ANNOUNCE
     * and CLUSTER.ADD (--join) to another member; "" = sends no AUTH */
    char peer_user[ACL_NAME_MAX + 1];
    char peer_password_file[512];
    char audit_log[512];   /* --audit-log: "" = none */
    struct tls_config tls; /* --tls-*: cert "" = the client port is plain text */
    /* --peer-tls-cert/-key/-ca: mutual TLS on the Raft port; all three or none ("") */
    char peer_tls_cert[512], peer_tls_key[512], peer_tls_ca[512];
    /* --peer-cert-name: the name member N's peer certificate carries, "%d" for N */
    char peer_cert_name[256];
    /* --peer-ca-shared-with-clients: start although --peer-tls-ca trusts a certificate
     * --tls-ca trusts (otherwise refused: config.c check_peer_ca) */
    bool peer_ca_shared;
    /* --insecure-raft: --raft-listen on a routable address without peer TLS */
    bool insecure_raft;
    /* --announce-any-host: a member's CLUSTER.ANNOUNCE may name a client host other than its
     * Raft address's host */
    bool announce_any_host;
    /* --raft-handshake-timeout and the inbound link caps (transport.h rn_tp_caps) */
    unsigned raft_handshake_ms, raft_max_links, raft_max_links_per_addr, raft_max_handshakes,
        raft_max_handshakes_per_addr, raft_handshake_rate;
    /* --token-key FILE[,FILE2]: FENCE.SIGN signs with the first, FENCE.VERIFY accepts each */
    char token_key[TSIG_MAX_KEYS][TSIG_PATH_MAX];
    size_t n_token_keys; /* 0 = no key: FENCE.SIGN / FENCE.VERIFY refused */
    /* --max-log-format: the highest log format this node reads and reports (format.c); only
     * lowered to simulate a previous-release node in upgrade tests. 0 = FSM_FORMAT_MAX */
    unsigned max_log_format;
    /* before AUTH (limits.h, auth.h; issue 32): the Argon2id pool's threads and queue, the
     * unauthenticated connections' caps and deadline (ms, 0 off), their output allowance, the
     * total output cap, TLS handshakes in progress, failed AUTHs a second (all addresses)
     * before every AUTH that misses the cache is refused without a hash, AUTH-failure/NOPERM
     * log lines a second, TCP keepalive (s, 0 off) */
    unsigned auth_threads;
    size_t auth_queue;
    size_t max_unauth_clients, max_unauth_per_addr;
    uint64_t auth_timeout;
    size_t max_output_preauth, max_output_total;
    unsigned tls_max_handshakes, tls_max_handshakes_per_addr;
    unsigned auth_fail_rate, security_log_rate;
    uint64_t tcp_keepalive;
};

/* A voter's report of the highest log format it reads, heard by this leader in `term`. */
struct srv_format_seen {
    uint64_t id, term;
    unsigned format;
};

/* Fill defaults; parse --config FILE, FENCELOCK_* variables and argv (config_src.c), in that
 * order of precedence. 0 ok, 1 help or --print-config printed (exit 0), -1 error printed. */
void srv_config_defaults(struct srv_config *c);
int srv_config_parse(struct srv_config *c, int argc, char **argv);
void srv_config_usage(FILE *f);

struct srv_conn;
struct srv_announce;

/* Quotas, indexed like the counters in struct srv_quota (quota.c). */
enum { SRV_QUOTA_SESSIONS, SRV_QUOTA_LOCKS, SRV_QUOTA_KEYS, SRV_QUOTA_WAITERS, SRV_QUOTA_BYTES };

struct srv_quota {
    uint64_t n[SRV_QUOTA_N];
    /* the acting user's share (per-user quotas, ACL_QUOTA_* order; quota.c), "" = none */
    char user[ACL_NAME_MAX + 1];
    uint64_t u[ACL_QUOTA_N];
};

enum srv_slot_kind { SLOT_SYNC = 0, SLOT_WRITE = 1, SLOT_READ = 2 };

/* A request's progress (the header comment has the moves). */
enum srv_slot_state { SLOT_PENDING = 0, SLOT_PARKED = 1, SLOT_DONE = 2 };

struct srv_slot {
    struct srv_slot *next;  /* connection's queue */
    struct srv_slot *lnext; /* read batch or parked list */
    struct srv_conn *conn;  /* NULL once the connection closed */
    struct srv *srv;
    uint8_t kind;
    enum srv_slot_state state; /* srv_slot_set_state only */
    int proto;
    uint8_t op;           /* fsm op of a write */
    uint64_t wait_ms;     /* LOCK ... WAIT; SESSION.KEEPALIVE: the TTL to answer */
    uint64_t sid;         /* SESSION.KEEPALIVE: the session whose clearing checkpoint is out */
    struct srv_quota res; /* quota reserved while the proposal is in flight */
    uint64_t started_ns;  /* for commit latency */
    size_t held;          /* out.len counted in conn->held_bytes while done and queued */
    size_t pkeylen;       /* parked: map key name+sid */
    char *pkey;
    const struct srv_cmd *cmd; /* read: the command to run after the barrier */
    struct buf args;           /* read: copied argument bytes */
    size_t argc;
    struct buf out;
};

#define SRV_FREE_SLOTS 256
#define SRV_SLOT_KEEP_BYTES 4096 /* a slot whose buffers grew past this is freed, not kept */

struct srv_conn {
    uv_tcp_t tcp;
    uv_write_t wreq; /* the one write in flight (while `writing`) */
    struct srv *srv;
    struct srv_conn *prev, *next;
    struct buf in, out, wbuf;
    struct resp_parser ps;
    struct srv_slot *head, *tail;
    size_t nslots;
    size_t reads_pending; /* reads waiting for a barrier: a write parsed after one waits */
    size_t held_bytes;    /* reply bytes in done slots not yet moved to `out` */
    uint64_t active_ms;   /* last read or completed write (--idle-timeout) */
    size_t in_counted;    /* in.cap as counted in srv.input_bytes */
    int proto;
    bool writing, closing, close_after_write, reading, processing;
    bool stale_reads;           /* READONLY: reads from local state, no barrier */
    struct watch_id watch_sent; /* the highest event id an XREAD reply on it carried */
    /* --acl-file: the authenticated user (into srv.auth.acl; auth.h), NULL = none yet; while
     * an AUTH is being verified nothing after it is parsed */
    const struct acl_user *user;
    bool auth_pending;
    struct tls_conn *tls; /* NULL on a plain port; freed with the connection */
    uint64_t id;
    /* CLIENT SETNAME / SETINFO (cmd_conn.c): "" until set */
    char name[129], lib_name[65], lib_ver[33];
    uint64_t created_ms, last_cmd_ms; /* clock_ms() at accept and at the latest command */
    /* limits.h: the peer's address, what this connection counts in srv.limits */
    char addr[SRV_ADDR_BUF];
    bool unauth_counted, hs_counted;
    size_t out_counted;
};

enum srv_lead { SRV_NOT_LEADER = 0, SRV_READY_PENDING = 1, SRV_READY = 2 };

struct srv_read_list {
    struct srv_slot *head, *tail;
};

struct srv {
    uv_loop_t *loop;
    struct srv_config cfg;
    struct logger log;
    struct fsm *fsm;
    struct rn *rn;
    uv_tcp_t listener;
    uv_timer_t tick;
    uv_signal_t sig_term, sig_int;
    uv_signal_t sig_hup; /* reloads the ACL, TLS and peer password files, reopens the audit log */
    bool hup_started;
    struct srv_tls *tls; /* NULL: the client port is plain text (conn_tls.c) */
    struct srv_http *http;
    struct srv_conn *conns;
    size_t nconns;
    size_t input_bytes;    /* sum of every connection's input buffer capacity */
    uv_timer_t idle_timer; /* --idle-timeout sweep (conn.c); initialised with the listener */
    /* Finished slots kept for the next command with their buffers' memory (at most
     * SRV_FREE_SLOTS): a command then allocates nothing for its slot. */
    struct srv_slot *free_slots;
    size_t n_free_slots;
    uint64_t next_conn_id;
    /* leadership */
    int role;
    enum srv_lead lead;  /* srv_lead_set only */
    uint64_t ready_term; /* the term whose barrier made (or will make) this node READY */
    /* linearizable reads: `waiting` join the next barrier, `inflight` await the current one.
     * At most one read barrier is in flight. A read that finds none in flight starts the idle
     * handle, which issues the barrier on the next loop turn, before the loop blocks: every
     * read of this turn (all connections) shares it. The barrier's callback answers its reads
     * and at once issues the next barrier for the reads that arrived meanwhile. */
    struct srv_read_list reads_waiting, reads_inflight;
    bool barrier_inflight;
    uv_idle_t reads_issue;
    struct lease lease;           /* deadline tables and rules (timers.c drives it) */
    struct srv_auth auth;         /* --acl-file users, AUTH (auth.c) */
    struct srv_limits limits;     /* pre-auth caps, output total, log rate (limits.c) */
    struct audit audit;           /* --audit-log (audit.c) */
    struct tsig tsig;             /* --token-key keys (cmd_sign.c; never logged) */
    struct map holds;             /* name -> monotonic grant time (the hold histogram) */
    struct map parked;            /* name+sid -> parked LOCK slots (parked.c) */
    struct watch watch;           /* the event history XREAD reads (cmd_watch.c) */
    struct srv_watcher *watchers; /* XREAD ... BLOCK requests parked until an event */
    size_t n_watchers;
    uint64_t watch_sweep_ms;        /* when parked XREADs were last swept for orphans */
    uint64_t watch_next_due;        /* the earliest BLOCK deadline among them (UINT64_MAX: none) */
    struct wake_index wake;         /* the parked XREADs' streams grouped by prefix (wakeidx.h) */
    uint64_t watch_stamp;           /* srv_watch_wake's count: a watcher is listed once per wake */
    struct watch_id watch_woke;     /* watch.last at the previous srv_watch_wake */
    struct srv_observer *observers; /* ELECT.OBSERVE requests parked until a change (observe.c) */
    size_t n_observers;
    bool observe_dirty;    /* an applied entry changed some election's leader or value */
    struct map leaderless; /* election name -> revision it was seen leaderless at (observe.c) */
    struct srv_metrics m;
    uint64_t seen_term, seen_leader; /* newest term and leader id seen (leader.c) */
    struct cmdstat cmdstat;          /* fencelock_commands_total{command,result} */
    struct srv_quota quota_pending;  /* reserved by proposals in flight (quota.c) */
    struct map user_pending;         /* user name -> uint64_t[ACL_QUOTA_N] in flight (quota.c) */
    struct map user_parked;          /* user name -> uint64_t parked XREAD/OBSERVE here (quota.c) */
    struct buf scratch;
    struct srv_announce *announce; /* follower -> leader CLUSTER.ANNOUNCE in flight */
    uint64_t announce_last_ms;
    uint64_t self_assert_ms;  /* a leader last rewrote its own entry (members.c) */
    bool announce_tls_logged; /* the hint after a failed TLS announce or join was logged */
    /* --join: where the next CLUSTER.ADD goes (follows -NOTLEADER) */
    char join_target[PROTO_ADDR_BUF];
    bool joined;              /* --join: this node is a voter (or was already at start) */
    uint64_t leader_heard_ms; /* --join: last tick that knew a leader (members.c recheck) */
    bool join_promote;        /* --join recheck: CLUSTER.ADD ... PROMOTE (only a spare)  */
    unsigned join_next;       /* --join: which listed address a fresh attempt starts from */
    /* announce / join refused for want of credentials (-NOAUTH, -WRONGPASS, -NOPERM): no new
     * attempt before peer_retry_ms; the wait doubles with each refusal in a row */
    unsigned peer_refusals;
    uint64_t peer_retry_ms;
    bool stopping, listening;
    uint64_t started_ms;
    struct {
        struct srv_format_seen seen[RN_MAX_PEERS]; /* leader: what voters reported */
        uint64_t told_term; /* follower: the term whose leader acknowledged our report */
        unsigned inflight;  /* leader: the format of a pending CLUSTER_FORMAT proposal, 0 none */
    } fmt;
    bool halted;          /* raft met an entry of a newer log format: stop from the next tick */
    struct notify notify; /* $NOTIFY_SOCKET: READY=1 once serving, STOPPING=1 (leader.c) */
    /* --join: since when no attempt got any answer (clock_ms; 0: the last one did), and
     * whether that silence was logged (members.c join_quiet) */
    uint64_t join_quiet_ms;
    bool join_quiet_logged;
};

/* server.c: lifecycle */
int srv_init(struct srv *s, uv_loop_t *loop, const struct srv_config *cfg);
int srv_start(struct srv *s);
/* --recover: force the configuration on the stopped node's data dir; 0 or -1. */
int srv_recover(struct srv *s);
/* --restore (restore.c): check cfg.restore (a `fencelock snapshot save` file), and make the
 * empty data dir a new cluster starting from it. 0, or -1 with the reason logged. */
int srv_restore(struct srv *s);
void srv_stop(struct srv *s); /* begins shutdown; the loop ends when everything closed */
void srv_free(struct srv *s);

/* conn.c */
int srv_listen(struct srv *s);
void srv_conn_close(struct srv_conn *c);
/* Reply bytes the connection holds that its client has not read yet. */
size_t srv_conn_unread(const struct srv_conn *c);
/* Send what is queued, then close (a final error was queued last). */
void srv_conn_close_after_write(struct srv_conn *c);
void srv_close_all_conns(struct srv *s);
void srv_slot_done(struct srv_slot *slot);
/* The one legal way to change a slot's state (asserts the move; header comment). */
void srv_slot_set_state(struct srv_slot *slot, enum srv_slot_state to);
/* A zeroed slot (from the server's free list when it has one), or NULL. */
struct srv_slot *srv_slot_new(struct srv *s);
/* A new PENDING slot appended to c's queue (replies leave in queue order), or NULL. */
struct srv_slot *srv_slot_append(struct srv_conn *c);
/* Done with a slot: kept on the free list (bounded) or freed. */
void srv_slot_free(struct srv_slot *slot);
/* Free the free list (server teardown). */
void srv_free_slots(struct srv *s);

/* conn_guard.c: HTTP sent to the client port (a browser driven by a web page) */
bool srv_conn_is_http(bool inline_cmd, size_t argc, const struct resp_arg *argv);
void srv_conn_close_http(struct srv_conn *c);

/* conn_tls.c: the client port's TLS (tls.h is the engine) */
/* Load the TLS files when configured: 0, or -1 (logged; the server must not start). */
int srv_tls_init(struct srv *s);
void srv_tls_free(struct srv *s);
/* SIGHUP: reload the certificate, key and CA (a bad new set keeps the old one). */
void srv_tls_reload(struct srv *s);
/* Give a new connection its TLS state: 0, or -1 (out of memory). */
int srv_conn_tls_start(struct srv_conn *c);
/* n bytes arrived in s->tls->raw: handshake, decrypt into c->in. false if c was closed. */
bool srv_conn_tls_read(struct srv_conn *c, size_t n);
/* The connection has not finished its handshake within --tls-handshake-timeout. */
bool srv_conn_tls_overdue(struct srv_conn *c, uint64_t now);

/* cmd.c (the command table and dispatch; cmd.h is the command families' header) */
/* Whether the named command is proposed to the log (CMD_WRITE). */
bool srv_cmd_is_write(const struct resp_arg *name);
/* Run a parsed command for connection c (flags decide sync / write / read paths). */
void srv_dispatch(struct srv *s, struct srv_conn *c, size_t argc, struct resp_arg *argv);
/* Answer one read after its barrier; true if the reply will come later (srv_slot_done then). */
bool srv_run_read(struct srv *s, struct srv_slot *slot);
/* Render an error for a failed proposal / barrier status. */
void srv_reply_status(struct srv *s, struct buf *out, int status);

/* timers.c: the lease glue (clock, FSM events, lease actions) and proposals */
/* Stamp, encode and propose one command; the one way the server writes to the log.
 * Returns an rn_status; on RN_OK `cb` fires exactly once later. */
int srv_propose(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx);
/* srv_propose for LOCK: lazy (rn_propose_lazy) when it will queue behind another session. */
int srv_propose_lock(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx);
/* Propose a checkpoint of `sid` with `remaining_ms` left (0 clears it); an rn_status. */
int srv_propose_checkpoint(struct srv *s, uint64_t sid, uint64_t remaining_ms, rn_propose_cb cb,
                           void *ctx);
/* The FSM's checkpointed remainder of a session, 0 = none (a lease_checkpoint_fn). */
uint64_t srv_checkpoint_of(void *arg, uint64_t sid);
/* The tick: leadership, libraft's tick, members, the lease's due actions. */
void srv_tick(struct srv *s);
/* The FSM hooks libraft's apply path calls (rn_hooks). */
void srv_hook_applied(void *arg, const struct fsm_reply *reply, const struct fsm_events *ev);
void srv_hook_restored(void *arg);
void srv_hook_halted(void *arg); /* rn met a newer log format: stop from the tick */
/* Free the hold-time table (teardown). */
void srv_holds_free(struct srv *s);

/* parked.c: LOCK ... WAIT requests parked until their wait ends */
/* Park a LOCK slot (its pkey = name + sid already set) until that wait ends. */
int srv_park(struct srv *s, struct srv_slot *slot);
/* Answer every request parked on (name, sid): with the token, or nil (token 0). */
void srv_wake_parked(struct srv *s, const char *name, size_t namelen, uint64_t sid, uint64_t token);
/* Answer every parked request with the error for `status` (step-down, shutdown). */
void srv_fail_parked(struct srv *s, int status);
size_t srv_key_name_sid(const char *name, size_t namelen, uint64_t sid, struct buf *out);
/* After SIGHUP reloaded the ACL: every parked request (LOCK/SEM.ACQUIRE/ELECT.CAMPAIGN ... WAIT,
 * XREAD ... BLOCK, ELECT.OBSERVE) whose user lost the permission it needs is answered -NOPERM
 * and unparked (a queued wait is also cancelled in the log). */
void srv_reauth_parked(struct srv *s);

/* cmd_watch.c: XREAD ... BLOCK requests parked until a matching event or their timeout */
/* After an apply added events: answer the parked XREADs they match. */
void srv_watch_wake(struct srv *s);
/* The tick: answer timed-out parked XREADs with nil, free the orphaned ones. */
void srv_watch_tick(struct srv *s, uint64_t now);
/* Answer parked XREADs with the error for `status`: all (shutdown), or only those that are
 * not READONLY (step-down: they resume by id on the new leader). */
void srv_watch_fail(struct srv *s, int status, bool all);
/* srv_reauth_parked's part: parked XREADs whose user may no longer read the stream. */
void srv_watch_reauth(struct srv *s);

/* observe.c: ELECT.OBSERVE requests parked until the election's leader or value changes */
/* An applied LEADER / PROCLAIM event (every node): remember leaderless elections. */
void srv_observe_event(struct srv *s, const struct fsm_event *e);
/* After an apply that changed an election: answer the parked observers it concerns. */
void srv_observe_wake(struct srv *s);
/* The tick: answer timed-out observers with nil, free the orphaned ones. */
void srv_observe_tick(struct srv *s, uint64_t now);
/* Answer parked observers with the error for `status`: all (shutdown) or the non-READONLY. */
void srv_observe_fail(struct srv *s, int status, bool all);
/* srv_reauth_parked's part: observers whose user may no longer read that election. */
void srv_observe_reauth(struct srv *s);
void srv_observe_free(struct srv *s);

/* cmd_sign.c: the --token-key keys of FENCE.SIGN / FENCE.VERIFY */
/* Read the key files when configured: 0, or -1 (logged; the server must not start). */
int srv_tsig_init(struct srv *s);
/* SIGHUP: read them again (a missing or short file keeps the old keys). */
void srv_tsig_reload(struct srv *s);

/* reads.c: linearizable reads behind shared barriers */
void srv_enqueue_read(struct srv *s, struct srv_slot *slot);
/* Answer every waiting read with the error for `status`. */
void srv_fail_waiting_reads(struct srv *s, int status);

/* leader.c: the leadership state machine */
const char *srv_role_name(int role);
/* The one legal way to change s->lead (asserts the move; header comment). */
void srv_lead_set(struct srv *s, enum srv_lead to);
static inline bool srv_ready(const struct srv *s)
{
    return s->lead == SRV_READY;
}
/* Re-read libraft's role and term; step down or start the ready barrier as needed. */
void srv_poll_leadership(struct srv *s);
/* From the apply path: step down at once if libraft says this node was deposed. */
void srv_check_deposed(struct srv *s);

/* http_routes.c: what the HTTP endpoint serves (/metrics, /health) */
void srv_http_route(void *arg, const char *method, const char *path, struct buf *body, int *status,
                    const char **ctype);

/* quota.c */
/* Reserve what `cmd` may add; 0, or -1 with a NOSPACE error written to out (nothing
 * reserved). Release exactly once when the proposal completed or failed. */
int srv_quota_reserve(struct srv *s, const struct fsm_cmd *cmd, const struct acl_user *user,
                      struct srv_quota *res, struct buf *out);
/* Before parking an XREAD ... BLOCK or ELECT.OBSERVE ... WAIT: 0, or -1 with -NOSPACE written
 * when --max-parked (all users) or the user's max_parked= is reached. */
int srv_parked_admit(struct srv_req *r);
/* The counter of user u's parked requests on this node (NULL for no user, or out of memory):
 * a request that parks adds 1 to it and keeps the pointer, and takes the 1 back when it is
 * unparked, however it ends (the counters live until srv_quota_free). */
uint64_t *srv_parked_counter(struct srv *s, const struct acl_user *u);
/* Teardown: the per-user reservations' table. */
void srv_quota_free(struct srv *s);
void srv_quota_release(struct srv *s, struct srv_quota *res);
void srv_quota_render(struct srv *s, struct buf *out);
const char *srv_quota_name(int q);

/* members.c */
void srv_self_client_address(struct srv *s, struct buf *out);
/* The known leader's client address from the member table; -1 if unknown. */
int srv_leader_client_address(struct srv *s, struct buf *out);
int srv_propose_member(struct srv *s, uint64_t id, const char *client, size_t clen,
                       const char *raft, size_t rlen, rn_propose_cb cb, void *ctx);
void srv_members_on_ready(struct srv *s);

/* ---- the upgrade gate (format.c) ---- */
unsigned srv_format_max(const struct srv *s); /* what this node reads */
/* Leader: a follower's report (CLUSTER.ANNOUNCE ... format) in the current term. */
void srv_format_report(struct srv *s, uint64_t id, unsigned format);
/* Leader: the lowest format the voters read (1 for one not heard from this term), and one
 * voter that reads only that. */
unsigned srv_format_readable(struct srv *s, uint64_t *blocker);
/* Leader, from the tick: commit CLUSTER_FORMAT once every voter reads more. */
void srv_format_on_ready(struct srv *s); /* leader ready: a new cluster starts at the newest */
void srv_format_tick(struct srv *s);
/* Follower: the leader of this term has not yet acknowledged what this node reads. */
bool srv_format_tell_needed(struct srv *s);
/* Before proposing a client's command: 0 (format 2: as is), 1 (format 1: made a version-1
 * entry; skip ownership) or -1 (refused: the error is written to `out`). */
int srv_format_gate(struct srv *s, struct fsm_cmd *cmd, struct buf *out);
void srv_members_tick(struct srv *s);
void srv_members_stop(struct srv *s);

#endif
