/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cluster — this node's part in the cluster: the leadership state machine (leader.c),
 * linearizable reads behind shared barriers (reads.c), the replicated member table and --join
 * (members.c), the upgrade gate (format.c) and --restore (restore.c).
 *
 * Owns (struct srv_cluster, in struct srv as `cluster`):
 * Leadership (leader.c): NOT_LEADER -> READY_PENDING (barrier of this term proposed) -> READY
 *   (barrier applied in the same term) -> NOT_LEADER; READY_PENDING -> NOT_LEADER when that
 *   barrier fails. Changed only by srv_lead_set (asserts the move). A READY leader is the only
 *   one that serves reads and proposes: no stale reads after an election.
 * Reads: `reads_waiting` join the next barrier, `reads_inflight` await the current one. At
 *   most one read barrier is in flight. A read that finds none in flight starts the idle
 *   handle, which issues the barrier on the next loop turn, before the loop blocks: every read
 *   of this turn (all connections) shares it. The barrier's callback answers its reads and at
 *   once issues the next barrier for the reads that arrived meanwhile.
 * Members: the CLUSTER.ANNOUNCE in flight (owned; freed when it completes) and --join's state.
 */
#ifndef FENCELOCK_CLUSTER_H
#define FENCELOCK_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/proto.h"
#include "fsm/fsm.h"
#include "raft/rn.h"

struct srv;
struct srv_slot;
struct srv_announce;

/* CLUSTER.ADD's refusal of a member that is a voter already ("-ERR member N " this): a --join
 * node reads it as the leader's word that it is a voter (members.c join_reply). */
#define CLUSTER_ALREADY_VOTER "is already a voter"

enum srv_lead { SRV_NOT_LEADER = 0, SRV_READY_PENDING = 1, SRV_READY = 2 };

struct srv_read_list {
    struct srv_slot *head, *tail;
};

/* A voter's report of the highest log format it reads, heard by this leader in `term`. */
struct srv_format_seen {
    uint64_t id, term;
    unsigned format;
};

struct srv_cluster {
    int role;            /* libraft's, as last polled (enum rn_role) */
    enum srv_lead lead;  /* srv_lead_set only */
    uint64_t ready_term; /* the term whose barrier made (or will make) this node READY */
    uint64_t seen_term, seen_leader; /* newest term and leader id seen (leader.c) */
    bool halted; /* raft met an entry of a newer log format: stop from the next tick */
    /* linearizable reads (reads.c; the header comment has the rule) */
    struct srv_read_list reads_waiting, reads_inflight;
    bool barrier_inflight;
    uv_idle_t reads_issue;
    /* members.c */
    struct srv_announce *announce; /* follower -> leader CLUSTER.ANNOUNCE in flight */
    uint64_t announce_last_ms;
    uint64_t self_assert_ms;  /* a leader last rewrote its own entry */
    bool announce_tls_logged; /* the hint after a failed TLS announce or join was logged */
    /* --join: where the next CLUSTER.ADD goes (follows -NOTLEADER) */
    char join_target[PROTO_ADDR_BUF];
    bool joined;              /* --join: this node is a voter (or was already at start) */
    bool joined_mark;         /* --join: --data-dir holds the mark of a past voter      */
    bool joined_mark_read;    /* --join: joined_mark was looked up (once, at first use) */
    uint64_t leader_heard_ms; /* --join: last tick that knew a leader (members.c recheck) */
    bool join_promote;        /* --join recheck: CLUSTER.ADD ... PROMOTE (only a spare)  */
    unsigned join_next;       /* --join: which listed address a fresh attempt starts from */
    /* announce / join refused for want of credentials (-NOAUTH, -WRONGPASS, -NOPERM): no new
     * attempt before peer_retry_ms; the wait doubles with each refusal in a row */
    unsigned peer_refusals;
    uint64_t peer_retry_ms;
    /* --join: since when no attempt got any answer (clock_ms; 0: the last one did), and
     * whether that silence was logged (members.c join_quiet) */
    uint64_t join_quiet_ms;
    bool join_quiet_logged;
    /* the upgrade gate (format.c) */
    struct {
        struct srv_format_seen seen[RN_MAX_PEERS]; /* leader: what voters reported */
        uint64_t told_term; /* follower: the term whose leader acknowledged our report */
        unsigned inflight;  /* leader: the format of a pending CLUSTER_FORMAT proposal, 0 none */
    } fmt;
    bool dlimit_inflight; /* leader: a DEADLOCK_LIMIT proposal is pending (settings.c) */
    bool hlimit_inflight; /* leader: a HISTORY_LIMITS proposal is pending (settings.c) */
    /* noleader.c: requests waiting for a ready leader to be known (arrival order, so also
     * deadline order: one --noleader-wait-ms for all), at most --max-noleader-waits */
    struct srv_read_list noleader;
    size_t n_noleader;
};

/* leader.c: the leadership state machine */
const char *srv_role_name(int role);
/* The one legal way to change s->cluster.lead (asserts the move; header comment). */
void srv_lead_set(struct srv *s, enum srv_lead to);
/* This node is a READY leader: it may serve reads and propose. */
bool srv_ready(const struct srv *s);
/* Re-read libraft's role and term; step down or start the ready barrier as needed. */
void srv_poll_leadership(struct srv *s);
/* From the apply path: step down at once if libraft says this node was deposed. */
void srv_check_deposed(struct srv *s);

/* reads.c: linearizable reads behind shared barriers */
void srv_enqueue_read(struct srv *s, struct srv_slot *slot);
/* Whether a read that arrived before this call may be answered now without a barrier: the
 * ready leader holds its read lease (rn_lease_held) and is not stopping. */
bool srv_read_lease(const struct srv *s);
/* Answer every waiting read with the error for `status`. */
void srv_fail_waiting_reads(struct srv *s, int status);

/* noleader.c: a leader-only request that arrives while this node knows no ready leader */
struct srv_req;
/* Park r (r->async set) until a ready leader is known or --noleader-wait-ms passes; false:
 * not parked (no slot, off, over --max-noleader-waits, stopping), the caller answers now. */
bool srv_noleader_park(struct srv_req *r);
/* From srv_poll_leadership: answer the parked requests once a ready leader is known (a
 * -NOTLEADER redirect with its client address, this node's own when it became ready) and
 * those whose wait ran out (-NOLEADER, as before). */
void srv_noleader_poll(struct srv *s);
/* Shutdown: answer every parked request with the error for `status`. */
void srv_noleader_fail(struct srv *s, int status);

/* members.c */
void srv_self_client_address(struct srv *s, struct buf *out);
/* The known leader's client address from the member table; -1 if unknown. */
int srv_leader_client_address(struct srv *s, struct buf *out);
int srv_propose_member(struct srv *s, uint64_t id, const char *client, size_t clen,
                       const char *raft, size_t rlen, rn_propose_cb cb, void *ctx);
/* MEMBER_HTTP for member id (its entry must exist by the time it applies); logs a failure. */
int srv_propose_member_http(struct srv *s, uint64_t id, const char *http, size_t len,
                            uint8_t flags);
/* This node's HTTP address as the other members redirect to it, into out ("" without an HTTP
 * port): --http-advertise, else --http-listen with a wildcard host (0.0.0.0, ::) replaced by
 * the raft address's host. *flags: FSM_MEMBER_HTTP_TLS under --http-tls. */
void srv_self_http_address(struct srv *s, struct buf *out, uint8_t *flags);
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
/* ---- settings a leader makes the cluster's (settings.c) ---- */
/* Leader, ready: propose this node's --deadlock-search-limit if the replicated one differs. */
void srv_settings_tick(struct srv *s);
/* Follower: the leader of this term has not yet acknowledged what this node reads. */
bool srv_format_tell_needed(struct srv *s);
/* Before proposing a client's command: 0 (format 2: as is), 1 (format 1: made a version-1
 * entry; skip ownership) or -1 (refused: the error is written to `out`). */
int srv_format_gate(struct srv *s, struct fsm_cmd *cmd, struct buf *out);
/* The gate's rule: true if the leader may not write `op` yet (the op's row in the op descriptor
 * names a newer log format than the cluster's, or an in-flight raise, reaches). */
bool srv_format_refuses(const struct srv *s, uint8_t op);
void srv_members_tick(struct srv *s);
void srv_members_stop(struct srv *s);

#endif
