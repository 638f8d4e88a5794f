/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn — replication node: the one place that talks to libraft (Debian libraft-dev >= 0.22.1).
 *
 * Owns: the struct raft, its libuv disk I/O, the validating Raft transport (transport.h: every
 * byte from the Raft port is checked before libraft decodes it), and the table of this node's
 * in-flight proposals. Feeds every committed command entry to the FSM (on every node), hands
 * the FSM's events to the server through rn_hooks, and delivers the reply of a proposal made
 * here to its callback exactly once: the reply when the entry is applied, or RN_UNKNOWN when
 * leadership was lost after proposing (the entry may still commit), or RN_NOTLEADER when it
 * was never appended.
 *
 * Log entry format (rn-owned, versioned): u8 version=1, varint origin node id, varint first
 * proposal id, varint n, then n x (varint len, fsm command bytes). The origin/proposal ids let
 * the applying node find its own waiting proposal without relying on libraft's callback
 * ordering; n > 1 batches several commands into one entry: every command proposed during one
 * turn of the event loop (up to 64) goes into one entry, submitted just before the loop blocks
 * (group commit). rn_barrier and the membership calls submit the open batch first.
 *
 * Memory: rn_propose copies the command; the callback's `reply` is borrowed for the call.
 *
 * Running the glue on another struct raft (the test seam): rn_new makes the node (struct raft
 * over libuv disk I/O and the validating transport) and then binds the glue to it; the glue is
 * everything above libraft (group commit and delivery in rn_batch.c, the FSM callbacks and
 * snapshot thresholds in rn_fsm.c, membership in rn_member.c, rn_tick.c, the snapshot guard).
 * rn_glue_new makes the same glue without a node, for a struct raft its caller made (libraft's
 * raft_fixture: tests/unit/test_rn_fixture.c): the very same code then runs on a deterministic
 * in-memory cluster. Nothing in the glue knows which it runs on. Its order:
 *   rn_glue_new, then raft_init (or raft_fixture_grow) with rn_glue_fsm(rn), then
 *   rn_glue_attach (before raft_start: the snapshot guard wraps the io's start), raft_start,
 *   rn_glue_started. To end: close the struct raft first (its last callbacks still reach the
 *   glue), then rn_close, which fails what is left and frees the glue once the loop released
 *   its handles. rn_start, rn_recover, rn_restore and rn_peer_tls_reload are for rn_new's node
 *   only. The glue's handles (group commit, lazy timer, the guard's check) run on `loop`.
 */
#ifndef FENCELOCK_RN_H
#define FENCELOCK_RN_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/log.h"
#include "common/proto.h"
#include "fsm/fsm.h"

struct raft;
struct raft_fsm;

enum rn_status {
    RN_OK = 0,
    RN_NOTLEADER = 1, /* not appended: this node is not the leader */
    RN_UNKNOWN = 2,   /* appended, then leadership lost: may or may not commit */
    RN_ERR = 3,       /* not appended: local failure (no memory, shutting down) */
};

enum rn_role { RN_UNAVAILABLE = 0, RN_FOLLOWER = 1, RN_CANDIDATE = 2, RN_LEADER = 3 };

#define RN_MAX_PEERS 16
/* The longest read lease a leader takes (--read-lease-ms's maximum): the follower rules that
 * make leases safe hold twice this (rn_lease.c), also on nodes whose own lease is off. */
#define RN_LEASE_MAX_MS 20
/* --peer-cert-name's default: member 3's certificate names fencelock-node-3. */
#define RN_PEER_CERT_NAME "fencelock-node-%d"

struct rn_peer {
    uint64_t id;
    char raft_address[PROTO_ADDR_BUF]; /* host:port */
};

struct rn_config {
    uint64_t id;
    /* Bootstrap configuration for a pristine data dir: every voter, this node included.
     * n_peers == 0 bootstraps a one-node cluster of this node. Ignored for existing data.
     * Borrowed: must outlive the rn. */
    const struct rn_peer *peers;
    size_t n_peers;
    const char *raft_address; /* host:port this node's raft transport listens on */
    const char *data_dir;
    unsigned election_ms, heartbeat_ms;
    unsigned snapshot_threshold, snapshot_trailing;
    /* Log bytes that force a snapshot whatever the entry count: the log since the last
     * snapshot may hold max(last snapshot's size, this) bytes; the entries kept after a
     * snapshot are cut to about as many bytes. 0: entry counts only. */
    uint64_t snapshot_log_bytes;
    unsigned lazy_ms; /* longest a batch of lazy commands waits for company (0: never waits) */
    /* The leader's read lease (rn_lease.c): at most RN_LEASE_MAX_MS and election_ms / 4; 0:
     * none, every read takes a barrier. The follower rules hold whatever this is. */
    unsigned read_lease_ms;
    /* Joining an existing cluster: a pristine data dir is NOT bootstrapped; the node waits to
     * be added (rn_add on the leader) and receives the log or a snapshot from it. */
    bool join;
    /* Mutual TLS on the Raft port (transport_tls.c): PEM files, all three or NULL. Borrowed. */
    const char *peer_tls_cert, *peer_tls_key, *peer_tls_ca;
    /* Under peer TLS, the name each member's certificate carries, "%d" its Raft id
     * (transport.h, rn_tp_tls). Borrowed. */
    const char *peer_cert_name;
    /* Inbound Raft connections: the handshake deadline (ms) and the caps (transport.h). */
    unsigned raft_handshake_ms; /* 0: RN_TP_HANDSHAKE_MS */
    /* 0 (links): the transport's defaults for all four */
    unsigned raft_max_links, raft_max_links_per_addr, raft_max_handshakes,
        raft_max_handshakes_per_addr, raft_handshake_rate;
    /* The highest log format this node applies (fsm.h, FSM_FORMAT_*; 0 = FSM_FORMAT_MAX).
     * Lower only to simulate a node of the previous release (--max-log-format). */
    unsigned max_format;
};

/* What rn_hooks.timed reports, in seconds. */
enum rn_timing {
    RN_TIME_APPEND,             /* a batch of log entries written and synced (libraft's append) */
    RN_TIME_SNAPSHOT_WRITE,     /* a snapshot written to disk */
    RN_TIME_SNAPSHOT_SERIALIZE, /* the FSM serialised for a snapshot (on the loop thread) */
    RN_TIME_SNAPSHOT_RESTORE,   /* a snapshot loaded into the FSM (on the loop thread) */
};

struct rn_hooks {
    void *arg;
    /* Every applied command on every node, in log order; `ev` borrowed for the call. */
    void (*applied)(void *arg, const struct fsm_reply *reply, const struct fsm_events *ev);
    /* The FSM state was replaced by a snapshot: derived state must be rebuilt. */
    void (*restored)(void *arg);
    /* A committed entry or a snapshot needs a newer log format than this node reads (logged):
     * nothing more is applied or snapshotted; the server must stop (not from inside the
     * call: it comes from libraft's apply). */
    void (*halted)(void *arg);
    /* A disk or snapshot operation took `seconds` (NULL: not measured). */
    void (*timed)(void *arg, enum rn_timing kind, double seconds);
};

typedef void (*rn_propose_cb)(void *ctx, int status, const struct fsm_reply *reply);
typedef void (*rn_barrier_cb)(void *ctx, int status);
/* Membership changes and leadership transfer: status RN_OK, RN_NOTLEADER, RN_UNKNOWN
 * (leadership lost while the change was in flight: it may still commit) or RN_ERR; `msg`
 * (borrowed for the call) says why when status != RN_OK. */
typedef void (*rn_change_cb)(void *ctx, int status, const char *msg);

struct rn;

int rn_new(struct rn **out, uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
           const struct rn_hooks *hooks, const struct logger *log, char *err, size_t errlen);
/* The glue alone, for a struct raft the caller makes (see "Running the glue on another struct
 * raft" above): cfg's id, election_ms, snapshot_* and lazy_ms are used; raft_address, data_dir,
 * join, the TLS files and the Raft-port limits are not. 0, or -1 when out of memory. */
int rn_glue_new(struct rn **out, uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
                const struct rn_hooks *hooks, const struct logger *log);
/* The FSM callbacks to give raft_init: they apply through the glue (borrowed, inside rn). */
struct raft_fsm *rn_glue_fsm(struct rn *rn);
/* Bind the glue to `raft` (raft_init done with rn_glue_fsm, raft_start not yet; it takes
 * raft->data) and, once raft_start succeeded, let it take proposals. */
void rn_glue_attach(struct rn *rn, struct raft *raft);
void rn_glue_started(struct rn *rn);
/* Start raft: loads the log and snapshot; a pristine data dir is bootstrapped with cfg->peers
 * (every node of a new cluster bootstraps the same configuration) unless cfg->join. Blocks up
 * to 5 s while the raft address is still in use (logged); fails naming the address and the
 * reason when it cannot listen. */
int rn_start(struct rn *rn, char *err, size_t errlen);
/* SIGHUP: read the --peer-tls-* files again. Connections made from now on use them; open ones
 * keep the context they were made with. 0 (also without peer TLS), or -1 with the reason in
 * err and the previous files still in use. */
int rn_peer_tls_reload(struct rn *rn, char *err, size_t errlen);
/* Disaster recovery, instead of rn_start, on a stopped node: append a configuration of exactly
 * cfg->peers to the log on disk (libraft's raft_recover), for a cluster that lost its majority
 * for good. Only on one survivor, the one with the highest term and longest log. */
int rn_recover(struct rn *rn, char *err, size_t errlen);
/* `fencelockd --restore`, instead of rn_start, on an EMPTY data dir: make it a new cluster (of
 * cfg->peers, or this node alone) whose state at index 1 is `data` (fsm_snapshot bytes), as a
 * Raft snapshot (rn_restore.c). Refuses a data dir that holds any Raft state. */
int rn_restore(struct rn *rn, const uint8_t *data, size_t len, char *err, size_t errlen);
/* Propose one encoded command. On RN_OK the callback fires later, exactly once; otherwise it
 * never fires and the return value says why. */
int rn_propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx);
/* The same for a command whose outcome nobody waits on at once (a LOCK that will queue): it
 * may wait up to a millisecond for an eager command to share its log entry. The log keeps
 * the order of proposals either way. */
int rn_propose_lazy(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx);
/* A barrier entry: the callback fires (status RN_OK) once everything before it is applied. */
int rn_barrier(struct rn *rn, rn_barrier_cb cb, void *ctx);
/* Whether this leader holds its read lease now (rn_lease.c): no other leader can have been
 * elected yet, so a read or keepalive that arrived before this call may be answered from the
 * applied state without a barrier, as one answered after a barrier would be. False on a
 * follower, with the lease off, after a transfer was asked for in this term, and once the
 * lease has run out since this leader's last entry applied; true again after the next one. */
bool rn_lease_held(struct rn *rn);
/* The lease's length in ms (0: off), after the caps. */
unsigned rn_lease_ms(const struct rn *rn);
int rn_role(struct rn *rn);
uint64_t rn_term(struct rn *rn);
uint64_t rn_commit_index(struct rn *rn);
uint64_t rn_applied_index(struct rn *rn);
void rn_leader(struct rn *rn, uint64_t *id, const char **raft_address);
enum rn_member_role { RN_VOTER = 1, RN_STANDBY = 0, RN_SPARE = 2 };
/* The current Raft configuration (possibly uncommitted): cb per server. */
void rn_foreach_server(struct rn *rn,
                       void (*cb)(void *arg, uint64_t id, const char *raft_address, int role),
                       void *arg);
/* The raft address of server `id` in the configuration, or NULL. Borrowed. */
const char *rn_server_address(struct rn *rn, uint64_t id);
/* The role (enum rn_member_role) of server `id` in the configuration, or -1 if absent. */
int rn_server_role(struct rn *rn, uint64_t id);
/* The same in the last configuration this node knows to be committed: a promotion appended by
 * a leader that lost leadership before committing it may never take effect. */
int rn_server_role_committed(struct rn *rn, uint64_t id);

/*
 * Membership. Each returns RN_OK and then calls `cb` exactly once, or returns RN_NOTLEADER /
 * RN_ERR (rn_errmsg says why) and never calls it. One change at a time (libraft's rule, and
 * rn's: a second is refused while one of this node's is in flight; the message names it).
 *   rn_add: add `id` as a spare, then promote it to voter; libraft catches it up first
 *     (log or InstallSnapshot) and commits the promotion. An id already in the configuration
 *     with the same address and not yet a voter is only promoted (a resumed join). If the
 *     promotion of a spare this call added fails (libraft gave up catching it up: unreachable,
 *     too slow), the spare is removed again before `cb` reports RN_ERR.
 *   rn_remove: committed configuration without `id` (a removed leader steps down).
 *   rn_transfer: `id` (0 = any up-to-date voter) became leader; RN_ERR if libraft gave up.
 */
int rn_add(struct rn *rn, uint64_t id, const char *raft_address, rn_change_cb cb, void *ctx);
int rn_remove(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx);
/* Whether removing voter `id` keeps the cluster able to decide (call on the leader, before
 * rn_remove). 0: safe. RN_REMOVE_LAST: `id` is the only voter (never allowed: the cluster
 * would have none). RN_REMOVE_ONE_LEFT: one voter would remain, the whole cluster's quorum
 * (and if `id` is the leader, the change commits only once that voter acknowledged it).
 * RN_REMOVE_NO_QUORUM: fewer of the remaining voters than their majority have acknowledged
 * this leader's commit index, so the change may never commit. The last two need the
 * operator's FORCE; `why` gets a sentence for the error reply either way. */
enum { RN_REMOVE_LAST = 1, RN_REMOVE_ONE_LEFT = 2, RN_REMOVE_NO_QUORUM = 3 };
int rn_remove_check(struct rn *rn, uint64_t id, char *why, size_t whylen);
int rn_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx);
/* The reason of the last failed call above (borrowed, overwritten by the next call). */
const char *rn_errmsg(struct rn *rn);

/* The membership change or transfer in progress as this node sees it. kind: "add" (the spare
 * entry), "promote", "remove", "transfer", "undo-add" (taking out a spare whose promotion
 * failed) for one started here; "promote" or "uncommitted" (an entry at `index`) for one that
 * libraft tracks and no rn call started (an earlier leader's). id 0: no server (a transfer to
 * any voter, an uncommitted entry). Returns 0 (out zeroed) when there is none. */
struct rn_change_view {
    const char *kind; /* static string */
    uint64_t id, index, age_ms;
};
int rn_change_info(struct rn *rn, struct rn_change_view *out);

/* From the server's tick (outside every libraft callback), about every heartbeat:
 *   - repairs libraft 0.22.1's stale "uncommitted configuration" bookkeeping (a change a
 *     follower received in a batch stays uncommitted for good; see rn_tick.c), with a log line,
 *     unless FENCELOCK_NO_CONFIG_REPAIR is set in the environment;
 *   - a change libraft keeps in progress on this leader that no rn call started, unchanged
 *     for 20 election timeouts: hands leadership to another voter, with a log line. */
void rn_tick(struct rn *rn);

/* Proposals made here and not answered yet: in the open batch or appended and waiting to
 * apply (the fencelock_proposals_pending gauge). Walks the live batches: O(in flight). */
uint64_t rn_proposals_pending(struct rn *rn);
/* On the leader, for each other server of the configuration (voters, standbys, spares): how
 * many entries of the leader's log it has not acknowledged (last index - libraft's match
 * index). Nothing on a follower. Right after an election a peer reads as far behind as the
 * whole log until its first reply (a heartbeat later). */
void rn_foreach_peer_lag(struct rn *rn, void (*cb)(void *arg, uint64_t id, uint64_t lag),
                         void *arg);
/* Voters of the current configuration (this node included, if it is one) and how many of them
 * this node heard from within `within_ms` (itself always counts): what a node waiting for a
 * quorum reports. Only a hint (rn_heard.c): nothing decides on it. Zeroes on a glue without a
 * node of its own (rn_glue_new) until it is attached. */
void rn_voters_heard(struct rn *rn, uint64_t within_ms, unsigned *voters, unsigned *heard);
/* Milliseconds since this node last heard from server `id` (the HTTP API's
 * X-Fencelock-Last-Contact), or UINT64_MAX when never (or no longer remembered). */
uint64_t rn_heard_ago(struct rn *rn, uint64_t id);

/* Raft-port connections dropped by the validating transport for `reason` (enum rn_wire_reason
 * in raft/wire.h; rn_wire_reason_name names it). */
uint64_t rn_raft_rejected(struct rn *rn, int reason);

/* Fail every in-flight proposal and barrier with RN_UNKNOWN/RN_ERR, then close libraft;
 * `done` fires after everything is released (the loop must keep running). A glue made with
 * rn_glue_new does not close the struct raft: its owner closes it before rn_close. */
void rn_close(struct rn *rn, void (*done)(void *arg), void *arg);

#endif
