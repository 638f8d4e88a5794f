/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_internal — what the pieces of the replication node share; not for callers outside
 * src/raft (they use rn.h).
 *
 * The pieces, one concern each:
 *   rn.c         life cycle: rn_new (the node, then the glue bound to it), rn_glue_new /
 *                rn_glue_attach (the glue alone, on a caller's struct raft: rn.h), bootstrap/
 *                start/recover, close, the role accessors
 *   rn_batch.c   proposals: group commit into log entries, lazy batches, barriers, delivery
 *   rn_fsm.c     libraft's FSM callbacks: apply, snapshot (adaptive thresholds), restore
 *   rn_member.c  the configuration: queries, membership changes, leadership transfer
 *   rn_tick.c    rn_tick: repair of libraft's stale change bookkeeping, the stuck-change watchdog
 *   rn_bind.c    waiting for the raft address to be free before libraft listens on it
 *   rn_restore.c a new cluster's data directory from a backup (fencelockd --restore)
 *   rn_iotime.c  disk timings: libraft's appends and snapshot writes (rn_hooks.timed)
 *   rn_heard.c   when each peer was last heard from (rn_voters_heard: the status line)
 *   rn_lease.c   the leader's read lease; the vote hold after start; rn_gone.c's wait
 *
 * Ownership: struct rn owns its batches (and the proposals inside them), barriers and changes
 * until their callbacks fired; everything is freed by rn_close (rn.c). Every struct here lives
 * on the loop thread only.
 *
 * Life cycle (enum rn_life, changed only by rn_life_to, which asserts the move):
 *   NEW --start_raft: raft_start succeeded--> RUNNING
 *   NEW --rn_close--> CLOSING        RUNNING --rn_close--> CLOSING
 * Proposals, barriers and changes are taken only while RUNNING.
 */
#ifndef FENCELOCK_RN_INTERNAL_H
#define FENCELOCK_RN_INTERNAL_H

#include <raft.h>
#include <raft/uv.h>

#include "raft/heap.h"
#include "raft/rn.h"
#include "raft/snapguard.h"
#include "raft/transport.h"

/* libraft 0.15 dereferences NULL when it rolls back a configuration change whose committed
 * predecessor was compacted by a snapshot; 0.22 keeps a copy of the committed configuration. */
#if RAFT_VERSION_NUMBER < 2201
#error "fencelock needs libraft >= 0.22.1 (scripts/deps.sh installs it from Debian)"
#endif

#define RN_ENTRY_VERSION 1 /* the envelope's first byte (rn.h "Log entry format") */

/* A one-line reason: an error message part, a description of a change in progress. */
#define RN_REASON_BUF 160

#define RN_HEARD_MAX 32             /* servers rn_heard.c keeps a last-message stamp for */
#define RN_BATCH_MAX 64             /* commands per log entry */
#define RN_LEASE_ELECTION_SHARE 4   /* a read lease is at most election_ms / this */
#define RN_LEASE_FOLLOWER_HOLDS 2   /* the follower rules hold this many of the longest lease */
#define RN_BATCH_BYTES (256u << 10) /* command bytes per log entry (soft) */

/* A uv_now stamp for the fields below where 0 means "not set": a loop clock reading 0 counts
 * as 1. */
#define RN_MS_NONZERO(now) ((now) ? (now) : 1)

enum rn_life { RN_LIFE_NEW = 0, RN_LIFE_RUNNING = 1, RN_LIFE_CLOSING = 2 };

enum prop_state { PROP_OPEN = 0, PROP_PENDING = 1, PROP_DELIVERED = 2 };

struct batch;

/*
 * Proposal life cycle (struct prop, owned by its batch):
 *   OPEN batch --prepare: raft_apply ok--> PENDING --entry applied here--> DELIVERED
 *                                          PENDING --raft cb with error--> told RN_UNKNOWN
 *   OPEN batch --raft_apply fails--> told RN_NOTLEADER / RN_ERR from the prepare handle (never
 *   from inside an rn_* call, so callers are not re-entered).
 * Invariants: a prop is in `pending` exactly while PENDING; its user callback fires once; a
 * batch is freed by libraft's callback (or on failure / close) after all its props were told.
 */
struct prop {
    uint64_t pid;
    enum prop_state state;
    rn_propose_cb cb;
    void *ctx;
    struct prop *prev, *next; /* in rn->head/tail while PENDING */
};

/* One log entry's worth of proposals. */
struct batch {
    struct raft_apply req; /* first: raft hands it back */
    struct rn *rn;
    struct buf body; /* n x (varint len, command bytes) */
    unsigned n;
    uint64_t submit_ns, term;  /* when and in which term raft_apply took it (the read lease) */
    bool eager;                /* holds a command that is not lazy: submit this loop turn */
    int status;                /* raft_apply's error when it failed */
    struct batch *prev, *next; /* in rn->batches: every batch not yet freed */
    struct prop props[RN_BATCH_MAX];
};

struct bar {
    struct raft_barrier req;
    struct rn *rn;
    uint64_t submit_ns, term; /* as struct batch's */
    rn_barrier_cb cb;
    void *ctx;
};

/*
 * A membership change or transfer in flight. One at a time: rn refuses a second while one is
 * listed (libraft would refuse most, but not all, and with less to say about why).
 *   CHG_ADD --spare committed: raft_assign--> CHG_ASSIGN --promotion committed--> done
 *   CHG_ASSIGN of a spare this change added --catch-up failed: raft_remove--> CHG_UNDO --> done
 * `added`: this change put the server into the configuration (so a failed promotion takes it
 * out again: an unreachable node must not stay behind as a spare).
 */
enum chg_kind { CHG_ADD = 1, CHG_ASSIGN = 2, CHG_REMOVE = 3, CHG_TRANSFER = 4, CHG_UNDO = 5 };

struct chg {
    union {
        struct raft_change change;
        struct raft_transfer transfer;
    } req; /* first: raft hands it back */
    struct rn *rn;
    uint64_t id;
    enum chg_kind kind;
    bool added;
    uint64_t since_ms; /* uv_now when the change was asked for */
    rn_change_cb cb;
    void *ctx;
    char why[RAFT_ERRMSG_BUF_SIZE]; /* CHG_UNDO: why the promotion failed */
    struct chg *next;
};

struct rn {
    /* The struct raft the glue drives: &raft_mem for rn_new's node, the caller's for a glue
     * made with rn_glue_new (rn.h, "Running the glue on another struct raft"). */
    struct raft *raft;
    bool attached;        /* rn_glue_new: no raft_mem, io, transport or heap of its own */
    struct raft raft_mem; /* rn_new: libraft's node, over io and transport below */
    struct raft_io io;
    struct raft_uv_transport transport; /* fencelock's validating transport (transport.h) */
    struct rn_tp_policy tp_policy;
    struct raft_fsm rfsm;
    uv_loop_t *loop;
    struct fsm *fsm;
    struct rn_hooks hooks;
    /* the disk layer's own append / snapshot_put, wrapped by rn_iotime.c's timed versions */
    int (*io_append)(struct raft_io *, struct raft_io_append *, const struct raft_entry[], unsigned,
                     raft_io_append_cb);
    int (*io_snapshot_put)(struct raft_io *, unsigned, struct raft_io_snapshot_put *,
                           const struct raft_snapshot *, raft_io_snapshot_put_cb);
    /* libraft's raft_io start and receive callback, wrapped by rn_heard.c to stamp senders */
    int (*io_start)(struct raft_io *, unsigned, raft_io_tick_cb, raft_io_recv_cb);
    raft_io_recv_cb io_recv;
    struct {
        /* a server id (0: free slot) and when it last sent a message: uv_now (ms), and
         * rn_lease_now_ns (ns, precise: rn_lease_gone_wait_ms) */
        uint64_t id, ms, ns;
    } heard[RN_HEARD_MAX];
    bool halted; /* met an entry or snapshot of a newer log format: applies nothing more */
    const struct logger *log;
    struct rn_config cfg;
    char *raft_address, *data_dir;
    uint64_t next_pid;
    struct prop *head, *tail; /* pending proposals, in proposal order */
    struct batch *batches;    /* every live batch, newest first */
    struct batch *open;       /* the batch taking proposals this loop turn, or NULL */
    struct batch *failed;     /* batches raft_apply refused, told from the prepare handle */
    uv_prepare_t flush;       /* submits the open batch before the loop blocks */
    uv_timer_t lazy;          /* submits an open batch of lazy commands after cfg.lazy_ms */
    struct snapguard guard;   /* holds InstallSnapshot while we write one */
    /* rn_tick_wrap: the io's start it wrapped, and libraft's tick callback */
    int (*io_start_next)(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
                         raft_io_recv_cb recv);
    raft_io_tick_cb libraft_tick;
    struct rn_heap heap;                 /* libraft's allocator while this node exists (heap.h) */
    uint64_t since_bytes, since_entries; /* applied since the last snapshot */
    unsigned threshold;                  /* libraft's snapshot threshold now */
    unsigned trailing;                   /* libraft's snapshot trailing now */
    uint64_t snap_bytes;                 /* size of the last snapshot taken here */
    struct chg *changes;                 /* membership changes and transfers in flight */
    uint64_t lead_term, lead_first;      /* last term this node led and its last log index then */
    uint64_t settled_ms; /* when this leader applied its term's first entry (0: not yet) */
    /* The commit index sampled once per election timeout (mark) and the sample before it
     * (prev): what every live voter has acknowledged by now. See rn_member.c voter_caught_up. */
    uint64_t commit_mark, commit_prev, commit_mark_ms;
    /* A change libraft reports in progress that no rn call started (an earlier leader's): what
     * it was when first seen and since when (uv_now ms; 0: none). See rn_tick.c. */
    uint64_t lib_index, lib_promotee, lib_since_ms;
    /* Why an election started (rn_tick.c rn_note_election): the role and term seen at the last
     * tick or received message, when a follower last heard from a leader (libraft's election timer
     * start) and the last leader it knew, with its term (0: none since start). */
    int seen_state;
    uint64_t seen_term, contact_ms, known_leader, known_leader_term;
    /* rn_gone.c: the probe of a leader whose link closed, the term the fast path last fired
     * in, and whether the next election line is the fast path's */
    struct rn_probe *probe;
    uint64_t gone_term;
    bool gone_fast;
    /* rn_lease.c: the lease's length, the follower hold, when the glue was made (ns); the term
     * and end of the lease held (rn_lease_now_ns); a term in which a transfer was asked for */
    uint64_t lease_ns, lease_hold_ns, lease_started_ns, lease_term, lease_until_ns,
        lease_dropped_term;
    bool lease_vote_logged;
    char errmsg[RAFT_ERRMSG_BUF_SIZE];
    struct fsm_reply reply;
    struct fsm_events ev;
    enum rn_life life;
    bool no_repair; /* FENCELOCK_NO_CONFIG_REPAIR set: leave libraft's bookkeeping alone */
    /* repair_stale_config on a follower (rn_tick.c): the "uncommitted" configuration index
     * and the term it was first seen at, and the last log index then (every entry of the batch
     * that carried the configuration entry is at or below it). */
    uint64_t stale_u, stale_term, stale_bound;
    void (*done)(void *arg);
    void *done_arg;
};

/* ---- rn_gone.c: a follower whose leader's process is gone ---- */
/* The transport's peer_gone: an inbound link from `id` was closed by the peer. */
void rn_peer_gone(void *arg, uint64_t id);
/* rn closes: detach a probe in flight (it frees itself). */
void rn_gone_close(struct rn *rn);
/* Whether the fast path started the election now beginning (read once). */
bool rn_gone_take(struct rn *rn);

/* ---- rn_lease.c ---- */
void rn_lease_init(struct rn *rn); /* in glue_bind: rn->raft and its io are known */
uint64_t rn_lease_now_ns(struct rn *rn);
/* An entry or barrier submitted at submit_ns in `term` applied here: extend the lease. */
void rn_lease_renew(struct rn *rn, uint64_t term, uint64_t submit_ns);
/* A transfer was asked for: no lease for the rest of this term. */
void rn_lease_drop(struct rn *rn);
/* Whether to drop a received message: a vote request during the hold after start. */
bool rn_lease_vote_dropped(struct rn *rn, const struct raft_message *msg);
/* How long rn_gone.c must still wait before clearing the vote guard for `leader_id`. */
uint64_t rn_lease_gone_wait_ms(struct rn *rn, uint64_t leader_id);
/* ---- rn_tick.c ---- */
/* In glue_bind, after snapguard_init, before raft_start: wraps raft->io->start so that every
 * libraft tick sends a heartbeat (why: rn_tick.c). */
void rn_tick_wrap(struct rn *rn);

/* ---- rn.c ---- */
/* The one way rn->life changes; asserts the move is one of the life cycle's above. */
void rn_life_to(struct rn *rn, enum rn_life to);
static inline bool rn_running(const struct rn *rn)
{
    return rn->life == RN_LIFE_RUNNING;
}
static inline bool rn_closing(const struct rn *rn)
{
    return rn->life == RN_LIFE_CLOSING;
}

/* ---- rn_batch.c ---- */
/* Start the prepare handle and set up the lazy timer (both inside rn, unreferenced). */
void rn_batch_init(struct rn *rn);
/* Hand the open batch to libraft now: what is proposed after goes into a later entry. */
void rn_batch_submit_open(struct rn *rn);
/* The entry of proposal `pid` (made on this node) applied with `reply`: tell its caller. */
void rn_batch_deliver(struct rn *rn, uint64_t pid, const struct fsm_reply *reply);
/* Closing: tell every proposal not yet told (RN_ERR if never appended, else RN_UNKNOWN) and
 * free every batch. */
void rn_batch_fail_all(struct rn *rn);

/* ---- rn_fsm.c ---- */
/* Fill rn->rfsm with the callbacks libraft's legacy (v0) FSM API calls. */
void rn_fsm_init(struct rn *rn);

/* ---- rn_member.c ---- */
/* Start a leadership transfer to `id` (0: any voter) that no caller asked for through
 * rn_transfer (the stuck-change watchdog); RN_OK and `cb` later, or an error (rn_errmsg). */
int rn_member_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx);
/* Closing: finish every change in flight with RN_ERR and `msg`. */
void rn_member_fail_all(struct rn *rn, const char *msg);

/* ---- rn_bind.c ---- */
/* Before raft_start: wait up to RN_BIND_WAIT_MS while `address` is in use; 0, or -1 with the
 * reason in err. */
int rn_bind_wait(const char *address, const struct logger *log, char *err, size_t errlen);
/* 0 if a listener could bind `address` now (or it cannot be probed), else the errno. */
int rn_bind_probe(const char *address);

/* rn_iotime.c: wrap io.append / io.snapshot_put to time them (after raft_uv_init). */
void rn_iotime_install(struct rn *rn);
/* rn_heard.c: wrap io.start so every received message stamps its sender (after raft_uv_init). */
void rn_heard_install(struct rn *rn);
/* rn_lease_now_ns when server `id` last sent a message; 0: never (or no longer remembered). */
uint64_t rn_heard_ns(struct rn *rn, uint64_t id);
/* rn_tick.c: sample the role, term and leader, and log why an election started (at every tick
 * and after every message libraft received: a leadership transfer's TimeoutNow can arrive
 * within a tick of the leader's first message, and the leader must already be known then). */
void rn_note_election(struct rn *rn, uint64_t now);

#endif
