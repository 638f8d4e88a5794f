/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/internal.h — the state layout shared by the fsm's .c files (not part of the interface).
 *
 * Owns the definitions of struct fsm and its records: sessions and locks live in intrusive
 * hash tables (struct htab); keys, and locks a second time, in AVL trees ordered by name bytes
 * (struct onode), and sessions a second time in a list ordered by sid, so byte-order and sid-
 * order walks (KEYS, LOCKS, snapshots) need no sort. Every record that belongs to a session is
 * also on one of that session's intrusive lists, so ending a session costs O(its locks + waits
 * + keys). A record is one malloc with its name stored inline.
 */
#ifndef FENCELOCK_FSM_INTERNAL_H
#define FENCELOCK_FSM_INTERNAL_H

#include <stddef.h>

#include "common/htab.h"
#include "common/proto.h"
#include "fsm/fsm.h"

/* ---- intrusive AVL tree ordered by name bytes (src/fsm/otree.c) ---- */

struct onode {
    struct onode *left, *right;
    /* The record's own name, key_len bytes at key_off bytes past the node (the name follows
     * the node in every record: an offset takes 2 bytes where a pointer took 8); the tree
     * compares without a callback. */
    uint16_t key_off, key_len;
    uint8_t height;
};

static inline const char *onode_key(const struct onode *n)
{
    return (const char *)n + n->key_off;
}

/* n's key: `key` (inside n's record, after n), len bytes. */
static inline void onode_set_key(struct onode *n, const char *key, size_t len)
{
    n->key_off = (uint16_t)(key - (const char *)n);
    n->key_len = (uint16_t)len;
}

#define ONODE_OWNER(n, type, member) ((type *)((char *)(n)-offsetof(type, member)))

/* fsm_name_cmp (byte order; a proper prefix sorts first) is in fsm/fsm.h: the server sorts
 * LOCK.MULTI's names with it. */
struct onode *fsm_otree_find(const struct onode *root, const char *key, size_t len);
void fsm_otree_insert(struct onode **root, struct onode *n); /* its name must be absent */
void fsm_otree_remove(struct onode **root, struct onode *n); /* n must be in the tree */
/* Restore: nodes arriving in strictly increasing order are appended to a right-leaning chain
 * (`last` = the previous one, NULL at first): a valid but unbalanced tree, which fsm_otree_balance
 * then rebuilds balanced in O(n), with no comparisons (n = its node count). */
void fsm_otree_append(struct onode **root, struct onode *last, struct onode *n);
void fsm_otree_balance(struct onode **root, size_t n);
/* In-order visit of the nodes whose name is >= from (all if fromlen == 0), O(log n + visited),
 * until visit returns nonzero; returns that value, or 0. */
int fsm_otree_walk(const struct onode *root, const char *from, size_t fromlen,
                   int (*visit)(void *arg, const struct onode *n), void *arg);
/* Empty the tree, calling free_node on every node; no recursion. */
void fsm_otree_drain(struct onode **root, void (*free_node)(struct onode *n));
/* 0 if names strictly increase in order and the heights are right and balanced; *count nodes. */
int fsm_otree_check(const struct onode *root, size_t *count);

/* ---- the session and lock indexes: common/htab.h's table (htab_init gives each an array) ---- */

/* SipHash-2-4 (libsodium's crypto_shorthash) of a name under f's hash key: lock names are
   chosen by clients, so an unkeyed hash let one pick names that share a bucket. */
struct fsm;
uint32_t fsm_hash_bytes(const struct fsm *f, const void *p, size_t n);
uint32_t fsm_hash_u64(uint64_t v);

/* ---- records ---- */

struct lock;
struct waiter;
struct shold;
struct kv;
struct lpart;

struct sess {
    struct hlink h;             /* in fsm.sessions, hashed by sid */
    struct sess *sprev, *snext; /* in fsm.sess_head/tail, by sid */
    uint64_t sid, ttl_ms, lockdelay_ms;
    uint64_t checkpoint_ms;             /* remaining lease at the last checkpoint; 0 = none */
    struct lock *held_head, *held_tail; /* locks it holds exclusively, in token order */
    struct shold *sh_head, *sh_tail;    /* locks it holds shared, in token order */
    uint32_t n_shared;
    struct waiter *wait_head, *wait_tail; /* its queued waits, in enqueue order */
    struct kv *keys;                      /* keys leased to it (order carries no meaning) */
    struct lpart *lp_head;                /* its latch / barrier participations (latch.c) */
    uint32_t n_locks, n_waits, n_keys;
    uint16_t name_len;
    uint8_t owner_len; /* the owner's bytes follow the name in name[] (0 = none) */
    uint8_t req_kind;  /* request table: highest seq and its reply */
    uint8_t ending;    /* fsm_sess_end runs: a multi-request of it is never granted */
    uint64_t req_seq, req_value;
    uint64_t req_digest; /* fsm_cmd_digest of the command of req_seq; 0 = not recorded */
    char *req_err;       /* NULL unless req_kind is ERR (NULL if lost) */
    uint64_t *req_txn;   /* a TXN's per-op results of req_seq (fsm.c; not in snapshots) */
    uint32_t req_txn_n;
    bool req_txn_known; /* req_txn holds them (false after a restore, or another op) */
    /* deadlock-search scratch (waitgraph.c): its node, valid while wg_epoch == fsm.wg_epoch */
    uint32_t wg_epoch, wg_index;
    /* reentrancy (reent.c): a LOCK of a lock it holds exclusively counts up, to max_count
       holds at most (1..FSM_MAX_HOLD_COUNT); both 0 for a session that is not reentrant */
    uint8_t reentrant;
    uint32_t max_count;
    char name[]; /* name_len bytes of name, then owner_len bytes of owner */
};

static inline const char *sess_owner(const struct sess *s)
{
    return s->name + s->name_len;
}

/* The rarely used part of a lock record, struct lock_x (l->x): an election's leader value, a
 * pending revoke, lock metadata and a reentrant holder's extra holds. Most lock records never
 * use any of them (bench W4: 1M plain locks), so they live apart, allocated (zeroed) by
 * fsm_lock_x when a record first needs one: an election's at its creation, a revoke's, a
 * LOCK_META's and a re-LOCK's before they change anything (so running out of memory is an error
 * reply, and the state is unchanged). Once allocated it stays with the record until
 * fsm_lock_drop / fsm_free frees both. Readers go through LX(l), which gives an all-zero one for
 * a record without it. */
struct lock_x {
    /* FSM_KIND_ELECT: the leader (holder)'s value (owned, NULL if empty) and the revision of
     * its last change (grant or PROCLAIM); 0 and NULL without a leader. */
    char *value;
    uint64_t value_rev;
    uint32_t value_len;
    /* A pending revoke (revoke.c) of the exclusive grant rv_token (== token while pending; 0 =
     * none): its deadline (0 = asked only) and rv_text (owned, NULL if both are empty): the
     * reason's rv_reason_len bytes, then the requester's rv_by_len bytes. Cleared by any release
     * of that grant (fsm_lock_release). */
    uint16_t rv_reason_len, rv_by_len;
    uint64_t rv_token, rv_ms;
    char *rv_text;
    /* Lock metadata (lockmeta.c), FSM_KIND_LOCK only: the exclusive grant's value (hv, owned,
     * NULL if empty; its bytes in name_bytes) and max hold (0 = none), both cleared by any
     * release of the grant; and the exclusive grants after the record's first. */
    char *hv;
    uint64_t maxhold_ms, transitions;
    uint32_t hv_len;
    uint8_t lm_on;    /* a LOCK_META reached this record (granted or queued): it keeps metadata
                         (transitions count) from then on, while it lives */
    uint32_t reholds; /* reent.c: the exclusive holder's holds beyond the first (its hold count
                         is 1 + reholds); 0 without a holder, > 0 only for a reentrant one */
};

/* A lock, semaphore or election record: what every record needs, in one malloc with its name.
 * Fields are ordered largest first so the compiler adds no padding (sizes: docs/server.md
 * "Memory"); the rarely used ones are in struct lock_x. */
struct lock {
    struct hlink h; /* in fsm.locks, hashed by name: first, the table casts */
    struct onode o; /* in fsm.lock_names */
    struct sess *holder;
    struct lock *hprev, *hnext; /* in holder->held_* */
    uint64_t token;
    /* An exclusive holder's grant time, or a lock-delay's length: never both (a lock in
     * lock-delay has no exclusive holder), so they share 8 bytes. Read held_since_ms only
     * while holder != NULL and lockdelay_ms only while in_delay; each is 0 otherwise. */
    union {
        uint64_t held_since_ms;
        uint64_t lockdelay_ms;
    };
    struct waiter *wq_head, *wq_tail; /* FIFO */
    struct shold *sh_head, *sh_tail;  /* shared holders, in token order (holder is then NULL) */
    struct lock *todo_next;           /* in the apply's hand-on worklist (a->todo_*) */
    struct lock_x *x;                 /* NULL until the record needs one (see struct lock_x) */
    uint32_t n_waiters, n_shared;
    uint32_t limit;  /* FSM_KIND_SEM: permits at most (new grants); else 0 */
    uint32_t in_use; /* FSM_KIND_SEM: the sum of its holds' permits (may exceed a limit
                        an operator lowered: SEM_SETLIMIT); else the number of holds */
    /* deadlock-search scratch (waitgraph.c): its waiters' wg_e/wg_m are valid for this
     * search while wg_epoch == fsm.wg_epoch */
    uint32_t wg_epoch;
    uint16_t name_len;
    uint8_t in_delay;
    uint8_t on_todo;       /* queued in the apply's hand-on worklist */
    uint8_t kind;          /* enum fsm_kind, fixed while the record exists */
    uint8_t snap_weighted; /* restore only: the record was written as a weighted semaphore */
    char name[];
};

extern const struct lock_x fsm_lock_x_none; /* all zero: LX of a record without one */

static inline const struct lock_x *LX(const struct lock *l)
{
    return l->x ? l->x : &fsm_lock_x_none;
}

/* l's struct lock_x, allocated zeroed if it has none; NULL if memory ran out (l unchanged). */
struct lock_x *fsm_lock_x(struct lock *l);

struct waiter {
    struct lock *lock;
    struct sess *sess;
    struct waiter *lprev, *lnext; /* in lock's FIFO */
    struct waiter *sprev, *snext; /* in sess->wait_* */
    uint64_t wait_ms;
    uint64_t rev;     /* revision of the enqueueing command: orders the session's waits; the
                         waiters of one LOCK_MULTI share it (multi.c) */
    uint8_t shared;   /* waits for shared mode; else exclusive (an upgrade if it holds shared) */
    uint32_t permits; /* a semaphore's request: permits wanted at once (1..limit); else 1 */
    char *value;      /* FSM_KIND_ELECT: the candidate's campaign value (owned, NULL if empty) */
    uint32_t value_len;
    /* wait-for scratch (waitgraph.c's queue pass): the nearest exclusive request at or before
     * this one in its FIFO, and the nearest multi-request at or before it but after that one */
    const struct waiter *wg_e, *wg_m;
    /* FSM_KIND_LOCK, exclusive requests only: the value and max hold its grant will carry
     * (LOCK_META; lockmeta.c); hv owned, NULL if empty, its bytes in name_bytes */
    char *hv;
    uint32_t hv_len;
    uint64_t maxhold_ms;
};

/* A shared hold: one session holding one lock in shared mode, with its own token. */
struct shold {
    struct lock *lock;
    struct sess *sess;
    struct shold *lprev, *lnext; /* in lock->sh_*, token order */
    struct shold *sprev, *snext; /* in sess->sh_*, token order */
    uint64_t token, held_since_ms;
    uint32_t permits; /* a semaphore's: the permits of this acquisition (>= 1); else 1 */
};

struct kv {
    struct onode o; /* in fsm.keys */
    struct sess *lease;
    struct kv *lprev, *lnext; /* in lease->keys */
    char *value;
    uint32_t value_len;
    uint16_t key_len;
    uint64_t create_rev, mod_rev, version;
    char key[];
};

/* One member-table entry; stored inline (no pointers), so struct fsm stays swappable. */
struct member {
    uint64_t id;                   /* > 0 */
    uint16_t client_len, raft_len; /* 1..FSM_MAX_ADDR */
    char client[FSM_MAX_ADDR];
    char raft[FSM_MAX_ADDR];
    /* MEMBER_HTTP (member_http.c): where the member's HTTP port is reached (0: not known) and
     * its flags (FSM_MEMBER_HTTP_TLS); kept across MEMBER_SET, gone with the entry */
    uint16_t http_len;
    uint8_t http_flags;
    char http[FSM_MAX_ADDR];
};

struct fsm {
    uint64_t revision;
    struct htab sessions, locks;
    struct sess *sess_head, *sess_tail; /* every session (also in `sessions`), by sid */
    struct onode *keys;                 /* struct kv, by key */
    struct onode *lock_names;           /* struct lock (also in `locks`), by name */
    uint64_t n_keys, n_held, n_waiters, n_delay;
    uint64_t n_shared;   /* shared holds over all locks */
    uint64_t n_swaiters; /* queued shared requests over all locks */
    uint64_t n_prims;    /* semaphores and elections (locks of another kind than LOCK) */
    uint64_t n_revokes;  /* locks with a pending revoke (rv_token != 0) */
    /* --max-data-bytes accounting: key + value bytes of every key, name bytes of every lock
     * and session, plus election values (leaders' and candidates', in name_bytes) (kept by
     * kv.c, lock.c, session.c, elect.c; checked by fsm_check_invariants) */
    uint64_t kv_bytes, name_bytes;
    struct member members[FSM_MAX_MEMBERS]; /* sorted by id, strictly increasing */
    uint32_t n_members;
    uint64_t format; /* the cluster's log format (CLUSTER_FORMAT); 0 = none applied: format 1 */
    /* the key of fsm_hash_bytes (fsm_set_hash_key; zeros by default). Local to this process:
       nothing replicated (snapshots, replies, events, walks the server makes) depends on
       bucket order, so replicas with different keys stay byte-identical */
    uint8_t hash_key[FSM_HASH_KEY_BYTES];
    /* usage by session owner (usage.c): derived, rebuilt by restore, never serialised */
    struct fsm_use *uses;
    uint32_t n_uses, cap_uses;
    /* deadlock detection (waitgraph.c): the search bound in force (replicated: the last
       DEADLOCK_LIMIT entry's, FSM_DEADLOCK_LIMIT_DEFAULT before any; in the snapshot), this
       node's flag (not replicated, never read by apply: the leader proposes it), the search
       epoch, and the text of the last cycle found (a DEADLOCK event's value) */
    uint64_t wg_limit, wg_flag;
    uint32_t wg_epoch;
    struct buf wg_text;
    uint64_t n_reent; /* live reentrant sessions (reent.c; the snapshot section's `present`) */
    /* latches and barriers (latch.c): by name, their own namespace; counted as locks by the
       quotas (fsm_stats) */
    struct onode *latches;
    uint64_t n_latches, n_lparts, latch_bytes; /* latch_bytes: their names' bytes */
    struct fsm_hist *hist;                     /* lock history (history.c): NULL while off */
    /* operators' semaphore limits (semlimit.c): by name; each counted as a lock by the quotas */
    struct onode *semlims;
    uint64_t n_semlims, semlim_bytes; /* semlim_bytes: their names' bytes */
    struct buf txn_out; /* the last TXN's per-op results (txn.c; fsm_reply.txn borrows them) */
};

/* ---- operators' semaphore limits (src/fsm/semlimit.c) ---- */
struct actx;
void fsm_op_sem_limit_set(struct actx *a, const struct fsm_cmd_sem_setlimit *c,
                          struct fsm_reply *r);
void fsm_op_sem_limit_reset(struct actx *a, const struct fsm_cmd_sem_limit_reset *c,
                            struct fsm_reply *r);
/* SEM_SETLIMIT changed l's limit: an override of its name follows it. */
void fsm_semlim_follow(struct fsm *f, const struct lock *l);
void fsm_semlim_free_all(struct fsm *f);
int fsm_semlim_check(const struct fsm *f, char *err, size_t errlen);
/* The snapshot section (snap_sect.h's row, tag 5). */
bool fsm_semlim_present(const struct fsm *f);
int fsm_semlim_emit(const struct fsm *f, struct buf *b);
const char *fsm_semlim_restore(struct fsm *nf, struct rd *r);

/* ---- latches and barriers (src/fsm/latch.c) ---- */
struct actx;
/* Every participation of sessions in latches (release the session's when it ends: a joined
 * latch not yet counted down, or a barrier it is inside, breaks). */
void fsm_latch_sess_end(struct actx *a, struct sess *s);
void fsm_latch_free_all(struct fsm *f);
int fsm_latch_check(const struct fsm *f, char *err, size_t errlen);
void fsm_op_latch_create(struct actx *a, const struct fsm_cmd_latch_create *p, struct fsm_reply *r);
void fsm_op_latch_join(struct actx *a, const struct fsm_cmd_latch_ref *p, struct fsm_reply *r);
void fsm_op_latch_countdown(struct actx *a, const struct fsm_cmd_latch_ref *p, struct fsm_reply *r);
void fsm_op_latch_delete(struct actx *a, const struct fsm_cmd_latch_delete *p, struct fsm_reply *r);
void fsm_op_barrier(struct actx *a, const struct fsm_cmd_barrier *p, struct fsm_reply *r);
/* The snapshot section (snap_sect.h's row, tag 3). */
bool fsm_latch_snap_present(const struct fsm *f);
int fsm_latch_snap_emit(const struct fsm *f, struct buf *b);
const char *fsm_latch_snap_restore(struct fsm *nf, struct rd *r);

/* ---- usage by session owner (src/fsm/usage.c) ---- */

struct fsm_use {
    uint64_t sessions, waiters, bytes;
    uint8_t len;
    char name[FSM_MAX_USER];
};
/* sign +1 when s (or its wait w) is linked, -1 when unlinked. */
void fsm_usage_session(struct fsm *f, const struct sess *s, int sign);
void fsm_usage_wait(struct fsm *f, const struct sess *s, const struct waiter *w, int sign);

/* ---- apply context: one per fsm_apply ---- */

struct actx {
    struct fsm *f;
    const struct fsm_cmd *c;
    struct fsm_events *ev;
    uint32_t nrev;   /* revisions allocated by this command so far */
    uint64_t digest; /* fsm_cmd_digest of a checked command with a REQ, else 0 */
    /* Locks to hand on (fsm_lock_todo): a multi-request's grant or departure touches several
     * queues; they are handed on one at a time, not recursively. Empty between applies. */
    struct lock *todo_head, *todo_tail;
    bool handing; /* the worklist is being drained */
    /* Lock metadata (lockmeta.c) on its way to a grant or a waiter: the LOCK_META command being
     * applied (its request's value and max hold), and what grant_head takes from a waiter
     * for the grant it makes next (lm_hv owned until then). */
    const struct fsm_cmd_lock_meta *lm_cmd;
    char *lm_cmd_hv;     /* its value, copied (owned until a grant or waiter takes it) */
    struct lock_x *lm_x; /* allocated first, for a record without one (taken, or freed after) */
    char *lm_hv;
    uint32_t lm_hv_len;
    uint64_t lm_maxhold_ms;
    bool lm_pending;
};

/* How long a grant made at since_ms has been held at this entry (0 if the clock went back). */
static inline uint64_t fsm_held_for(const struct actx *a, uint64_t since_ms)
{
    return a->c->now_ms > since_ms ? a->c->now_ms - since_ms : 0;
}

uint64_t fsm_next_rev(struct actx *a);
/* Append an event (name copied); NULL if memory ran out (the event is then lost). */
struct fsm_event *fsm_emit(struct actx *a, uint8_t type, uint64_t sid, uint64_t token, uint64_t ms,
                           const char *name, size_t namelen);
struct lock;
/* fsm_emit of an event about lock-like object `l`: its name and kind. */
struct fsm_event *fsm_lock_emit(struct actx *a, uint8_t type, uint64_t sid, uint64_t token,
                                uint64_t ms, const struct lock *l);
/* Order the events emitted since index `from` by name (byte order): for a run whose natural
 * order is not the same on every replica (a session's leased keys). */
void fsm_sort_events_by_name(struct actx *a, size_t from);
void fsm_reply_err(struct fsm_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fsm_nosession(struct fsm_reply *r, uint64_t sid);

/* ---- sessions, locks, waiters ---- */

struct sess *fsm_sess_find(const struct fsm *f, uint64_t sid);
struct sess *fsm_sess_alloc(uint64_t sid, const char *name, size_t namelen, struct fsm_str owner);
void fsm_sess_insert(struct fsm *f, struct sess *s); /* hash and sid-ordered list */
void fsm_sess_destroy(struct sess *s);               /* frees the record; lists must be empty */

struct lock *fsm_lock_find(const struct fsm *f, const char *name, size_t namelen);
struct lock *fsm_lock_alloc(const char *name, size_t namelen);
void fsm_lock_insert(struct fsm *f, struct lock *l);
void fsm_lock_insert_last(struct fsm *f, struct lock *l,
                          struct lock *last);      /* restore: fsm_otree_append */
void fsm_lock_drop(struct fsm *f, struct lock *l); /* unlink and free a lock nobody uses */
void fsm_held_append(struct sess *s, struct lock *l);
void fsm_held_unlink(struct lock *l);
void fsm_waiter_append(struct fsm *f, struct lock *l, struct sess *s, struct waiter *w);
/* The two halves of fsm_waiter_append: tail of the lock's FIFO / of the session's list. Restore
 * links the session side later, in enqueue-revision order. */
void fsm_waiter_link_lock(struct fsm *f, struct lock *l, struct waiter *w);
void fsm_waiter_link_sess(struct fsm *f, struct sess *s, struct waiter *w);
void fsm_waiter_link_lock_head(struct fsm *f, struct lock *l, struct waiter *w); /* upgrades */
void fsm_waiter_remove(struct fsm *f, struct waiter *w); /* unlinks and frees */
struct waiter *fsm_waiter_find(const struct lock *l, const struct sess *s);
/* Shared holds (src/fsm/lock_shared.c). shold_link appends at the tails of both lists (restore
 * links the session side later, in token order). */
struct shold *fsm_shold_find(const struct lock *l, const struct sess *s);
void fsm_shold_link_lock(struct fsm *f, struct lock *l, struct shold *h);
void fsm_shold_link_sess(struct sess *s, struct shold *h);
void fsm_shold_unlink(struct fsm *f, struct shold *h); /* both lists; frees h */
/* The head waiter may be granted now (no exclusive holder, no lock-delay, and for an exclusive
 * request no shared holder but, for an upgrade, the requester itself). */
bool fsm_lock_head_grantable(const struct lock *l, const struct waiter *w);
/* Give a lock with no holder to `s` exclusively: a fresh revision is the token. */
uint64_t fsm_lock_grant(struct actx *a, struct lock *l, struct sess *s);
/* ERR WRONGTYPE (and true) if `l` exists and is not of `kind`. */
bool fsm_lock_wrongtype(const struct lock *l, uint8_t kind, struct fsm_reply *r);
/* A new record of `kind` (counted in n_prims if not a lock), inserted; NULL: out of memory. */
struct lock *fsm_lock_create(struct fsm *f, const char *name, size_t namelen, uint8_t kind);
/* Whether `token` is a shared hold's (a read-lock's or a semaphore permit's) on `l`. */
bool fsm_shold_token_held(const struct lock *l, uint64_t token);
/* Elections (src/fsm/elect.c): the leader's hand-over. A grant of the head candidate moves its
 * value to the leader; a release frees the leader's value and tells (LEADER, sid 0) when no
 * successor is granted in the same entry (delay_ms > 0 or nobody queued). */
bool fsm_elect_grant_head(struct actx *a, struct lock *l, struct waiter *w);
void fsm_elect_leader_gone(struct actx *a, struct lock *l, uint64_t delay_ms);
/* A new, unlinked waiter record as every path makes it (the FIFO, the ops, LOCK_MULTI, restore):
 * zeroed but permits 1 (a semaphore request sets its own), so a replica that applied the log
 * and one that restored hold the same bytes. NULL: out of memory. */
struct waiter *fsm_waiter_new(void);
void fsm_waiter_free(struct fsm *f, struct waiter *w); /* frees its value (and bytes) too */
/* Whether a new request in that mode, by a session with nothing on `l`, is granted at once: no
 * holder in a conflicting mode, no lock-delay, nobody queued (strict FIFO); NULL (no record):
 * yes. LOCK_SHARED and LOCK_MULTI decide with it. */
static inline bool fsm_lock_free_for(const struct lock *l, bool shared)
{
    return !l || (!l->holder && !l->in_delay && !l->wq_head && (shared || !l->n_shared));
}
/* Whether a lock is unused: no holder of either mode, no lock-delay, no waiter. */
static inline bool lock_unused(const struct lock *l)
{
    return !l->holder && !l->n_shared && !l->in_delay && !l->wq_head;
}

/* What a queued request asks for. */
enum lock_mode { LOCK_MODE_EXCLUSIVE, LOCK_MODE_SHARED, LOCK_MODE_UPGRADE };
/* Queue `s` (QUEUED, or ERR out of memory; -DEADLOCK if the wait would close a cycle): at the
 * tail, or at the head for an upgrade. */
void fsm_lock_enqueue(struct actx *a, struct lock *l, struct sess *s, uint64_t wait_ms,
                      uint8_t mode, struct fsm_reply *r);
/* As fsm_lock_enqueue, for a semaphore request of `permits` permits. */
void fsm_lock_enqueue_permits(struct actx *a, struct lock *l, struct sess *s, uint64_t wait_ms,
                              uint8_t mode, uint32_t permits, struct fsm_reply *r);
/* The answer to a LOCK by a session already queued as `w` (same mode: its place; else ERR). */
void fsm_lock_requeued(const struct lock *l, const struct waiter *w, bool shared, uint64_t wait_ms,
                       struct fsm_reply *r);
/* Start (or restart) lock-delay on a lock with no exclusive holder. */
void fsm_lock_delay_start(struct actx *a, struct lock *l, uint64_t delay_ms);
void fsm_reply_int(struct fsm_reply *r, uint64_t v);
/* Release a held lock: lock-delay of delay_ms if > 0, else hand it on (or drop it). `expired`:
 * its holder's session expired (told in the RELEASED event). */
void fsm_lock_release(struct actx *a, struct lock *l, uint64_t delay_ms, bool expired);
/* End a shared hold the same way (the lock is handed on only once no lock-delay runs). */
void fsm_shold_release(struct actx *a, struct shold *h, uint64_t delay_ms, bool expired);
/* Grant the head of the queue while it can be granted (a run of shared requests together;
 * a multi-request at the head when it can be granted on all its names); drop the lock if
 * nothing uses it any more. `l` may be freed. Called while another hand-on runs, it only
 * queues `l` in the worklist (fsm_lock_todo), which the outer one drains. */
void fsm_lock_hand_on(struct actx *a, struct lock *l);
void fsm_lock_todo(struct actx *a, struct lock *l);
void fsm_lock_hand_on_todo(struct actx *a); /* drain the worklist (unless one drains it) */
/* A shared grant with a record the caller allocated (so a multi-grant fails before any change). */
uint64_t fsm_shold_grant_with(struct actx *a, struct lock *l, struct sess *s, struct shold *h);

/* ---- multi-requests (src/fsm/multi.c) ----
 * A waiting LOCK_MULTI is one waiter per name, each in its lock's FIFO; they share the session
 * and the enqueue revision and sit next to each other in the session's wait list, in name order.
 * That is the whole representation (a snapshot needs nothing more). */
/* Whether w is one of a multi-request's waiters (a request of two names or more). */
bool fsm_waiter_multi(const struct waiter *w);
/* The names the waiting request of w is queued on: calls visit for each of its waiters in name
 * order (only w itself for a single-name request) until visit returns nonzero; returns that. */
int fsm_wait_request_foreach(const struct waiter *w,
                             int (*visit)(void *arg, const struct waiter *x), void *arg);
/* Whether the request of w (multi or not) can be granted now: at the head of every queue it
 * waits in, each grantable there (fsm_lock_head_grantable), its session not ending. */
bool fsm_wait_request_grantable(const struct waiter *w);
/* Grant a multi-request now if it can be: every name in one go (tokens: consecutive revisions
 * in name order); the other locks go to the worklist. False if it cannot (or memory ran out:
 * nothing changed). */
bool fsm_multi_grant(struct actx *a, struct waiter *w);
/* Remove every waiter of w's multi-request (WAIT_ENDED each) and hand their locks on. */
void fsm_multi_leave(struct actx *a, struct waiter *w);
/* The truth for a LOCK_MULTI retried after its QUEUED answer: QUEUED if the session's waiter on
 * the first name is a multi-request over exactly these names in these modes; the first token
 * if it holds every name, name i with token first + i (one grant of this request); else ERR
 * (its outcome is gone: the names were released, or other requests of the session took or
 * wait for some of them, so no answer about this request is true). */
void fsm_multi_truth(const struct fsm *f, const struct fsm_cmd_lock_multi *c, struct fsm_reply *r);
/* For restore and the invariant audit: x and y (x first) are next to each other in one
 * session's wait list with one enqueue revision, so they must be one multi-request as
 * LOCK_MULTI writes it: locks (not semaphores or elections), in increasing name order, neither
 * an upgrade, one wait. NULL if so, else what is wrong. (The head of the group is checked
 * against the next; a group of n is n - 1 such pairs.) */
const char *fsm_multi_group_bad(const struct waiter *x, const struct waiter *y);
/* Give a lock to `s` in shared mode: a fresh revision is the token; 0 (and nothing changed)
 * if memory ran out. */
uint64_t fsm_shold_grant(struct actx *a, struct lock *l, struct sess *s);
/* As fsm_shold_grant, for a semaphore acquisition of `permits` permits. */
uint64_t fsm_shold_grant_permits(struct actx *a, struct lock *l, struct sess *s, uint32_t permits);
/* Remove a waiter that leaves without a grant (WAIT_ENDED), then hand the lock on: an
 * exclusive request that leaves may let the shared requests behind it in. `l` may be freed. */
void fsm_waiter_leave(struct actx *a, struct waiter *w);
/* End a session's life: locks, waits, keys, the record itself. */
void fsm_sess_end(struct actx *a, struct sess *s, bool expired);

/* The ops: each gets its payload (inside a->c, whose header the ops read for now_ms). */
void fsm_op_lock(struct actx *a, const struct fsm_cmd_lock *p, struct fsm_reply *r);
/* LOCK's rule (fsm_op_lock is it): true when this apply queued the session, newly, behind an
 * exclusive holder (LOCK ... NOTIFY then tells that holder, revoke.c); false for a grant, a
 * retry of a queued session, a wait behind shared holds or a lock-delay, NIL and errors. */
bool fsm_lock_exclusive(struct actx *a, const struct fsm_cmd_lock *p, struct fsm_reply *r);
void fsm_op_lock_shared(struct actx *a, const struct fsm_cmd_lock *p, struct fsm_reply *r);
void fsm_op_unlock(struct actx *a, const struct fsm_cmd_lock_ref *p, struct fsm_reply *r);
void fsm_op_cancel_wait(struct actx *a, const struct fsm_cmd_lock_ref *p, struct fsm_reply *r);
void fsm_op_lockdelay_end(struct actx *a, const struct fsm_cmd_lockdelay_end *p,
                          struct fsm_reply *r);
void fsm_op_lock_multi(struct actx *a, const struct fsm_cmd_lock_multi *p, struct fsm_reply *r);
/* Open a session (SESSION_OPEN's rule): the record, or NULL with r answered ERR. */
struct sess *fsm_sess_open(struct actx *a, uint64_t ttl_ms, uint64_t lockdelay_ms,
                           struct fsm_str name, struct fsm_reply *r);
void fsm_op_session_new(struct actx *a, const struct fsm_cmd_session_open *p, struct fsm_reply *r);
void fsm_op_session_end(struct actx *a, const struct fsm_cmd_session_end *p, struct fsm_reply *r,
                        bool expired);
/* Ownership (src/fsm/owner.c): 0 if c->user may act on the sessions `c` names, else -1 with
 * NOPERM in r. */
int fsm_owner_check(const struct fsm *f, const struct fsm_cmd *c, struct fsm_reply *r);
void fsm_op_session_checkpoint(struct actx *a, const struct fsm_cmd_session_checkpoint *p,
                               struct fsm_reply *r);
void fsm_op_put(struct actx *a, const struct fsm_cmd_put *p, struct fsm_reply *r);
void fsm_op_del(struct actx *a, const struct fsm_cmd_del *p, struct fsm_reply *r);
void fsm_op_incr(struct actx *a, const struct fsm_cmd_incr *p, struct fsm_reply *r); /* counter.c */
/* The canonical decimal text of v (counter.c's form: "-?[1-9][0-9]*" or "0", at most
 * FSM_COUNTER_DIGITS bytes, no NUL), in a new malloc'd buffer the caller owns (a kv value takes
 * it over), its length in *len; NULL when out of memory. fsm_counter_parse reads it back. */
char *fsm_counter_text(int64_t v, uint32_t *len);
void fsm_op_txn(struct actx *a, const struct fsm_cmd_txn *p, struct fsm_reply *r); /* txn.c */
/* A write's FENCE and IFREV checks (kv.c): 0 if it may apply, else -1 with r answered (STALE,
   with a FENCE_REJECTED event, or IFREV). */
int fsm_kv_fence_fails(struct actx *a, const struct fsm_kv_cond *c, struct fsm_reply *r);
int fsm_kv_ifrev_fails(const struct fsm_kv_cond *c, const struct kv *k, struct fsm_reply *r);
void fsm_op_member_set(struct actx *a, const struct fsm_cmd_member_set *p, struct fsm_reply *r);
void fsm_op_member_del(struct actx *a, const struct fsm_cmd_member_del *p, struct fsm_reply *r);
void fsm_op_member_http(struct actx *a, const struct fsm_cmd_member_http *p, struct fsm_reply *r);
void fsm_op_deadlock_limit(struct actx *a, const struct fsm_cmd_deadlock_limit *c,
                           struct fsm_reply *r);
void fsm_op_cluster_format(struct actx *a, const struct fsm_cmd_cluster_format *c,
                           struct fsm_reply *r); /* format.c */
void fsm_op_sem_acquire(struct actx *a, const struct fsm_cmd_sem_acquire *p, struct fsm_reply *r);
void fsm_op_sem_acquire_w(struct actx *a, const struct fsm_cmd_sem_acquire_w *p,
                          struct fsm_reply *r);
void fsm_op_sem_setlimit(struct actx *a, const struct fsm_cmd_sem_setlimit *p, struct fsm_reply *r);
/* An operator's new limit, SEM_SETLIMIT's and SEM_LIMIT_SET's one rule (sem.c): ERR (true,
 * nothing changed) for a limit out of 1..FSM_MAX_SEM_LIMIT, a name that is not a semaphore, or a
 * request queued on l for more permits than `limit`; l NULL: no semaphore of the name (passes).
 * Then fsm_sem_limit_apply: l takes `limit` (the caller has taken the revision), an override of
 * the name follows it, and a higher limit grants the queue's head run. */
bool fsm_sem_limit_refused(const struct lock *l, uint64_t limit, struct fsm_reply *r);
void fsm_sem_limit_apply(struct actx *a, struct lock *l, uint32_t limit);
/* A semaphore whose snapshot record needs the weighted form (snap_prims.c): a hold or a
 * request of other than 1 permit, or more permits in use than its limit. */
bool fsm_sem_weighted(const struct lock *l);
void fsm_op_sem_release(struct actx *a, const struct fsm_cmd_lock_ref *p, struct fsm_reply *r);
void fsm_op_elect_campaign(struct actx *a, const struct fsm_cmd_elect_campaign *p,
                           struct fsm_reply *r);
void fsm_op_elect_proclaim(struct actx *a, const struct fsm_cmd_elect_proclaim *p,
                           struct fsm_reply *r);
void fsm_op_elect_resign(struct actx *a, const struct fsm_cmd_lock_ref *p, struct fsm_reply *r);
/* Cooperative revocation (src/fsm/revoke.c). */
void fsm_op_lock_revoke(struct actx *a, const struct fsm_cmd_lock_revoke *p, struct fsm_reply *r);
void fsm_op_revoke_end(struct actx *a, const struct fsm_cmd_revoke_end *p, struct fsm_reply *r);
void fsm_op_lock_notify(struct actx *a, const struct fsm_cmd_lock *p, struct fsm_reply *r);
/* Forget l's pending revoke, if any (its grant ended, or the record goes away). */
void fsm_revoke_clear(struct fsm *f, struct lock *l);
/* Set l's pending revoke from a snapshot: 0, or -1 (out of memory). */
int fsm_revoke_set(struct fsm *f, struct lock *l, uint64_t ms, struct fsm_str reason,
                   struct fsm_str by);

/* Lock metadata (src/fsm/lockmeta.c). */
void fsm_op_lock_meta(struct actx *a, const struct fsm_cmd_lock_meta *p, struct fsm_reply *r);
void fsm_op_maxhold_end(struct actx *a, const struct fsm_cmd_maxhold_end *p, struct fsm_reply *r);
/* A new exclusive grant of lock `l` to `s` (fsm_lock_grant, before its GRANTED event): counts
 * the transition and gives the grant the metadata on its way (a->lm_*, a->lm_cmd), if any. */
void fsm_lockmeta_grant(struct actx *a, struct lock *l, struct sess *s);
/* A new waiter `w` of `s` on `l`, not linked yet (fsm_lock_enqueue_permits): the LOCK_META
 * being applied gives an exclusive one its value and max hold. Nothing can fail here. */
void fsm_lockmeta_enqueued(struct actx *a, struct lock *l, const struct sess *s, struct waiter *w);
/* The head waiter `w` is about to be granted exclusively: its metadata goes with the grant. */
void fsm_lockmeta_take(struct actx *a, struct waiter *w);
/* The exclusive grant of `l` ends (fsm_lock_release): its value and max hold go, and the
 * transitions count it. */
void fsm_lockmeta_release(struct fsm *f, struct lock *l);
/* The record goes (fsm_lock_drop, restore failures): frees what it still owns. */
void fsm_lockmeta_free(struct fsm *f, struct lock *l);
/* The value of l's exclusive grant (empty if none): the one accessor for other modules (the
 * lock history records it per grant). Borrowed: valid until the grant ends. */
struct fsm_str fsm_lock_holder_value(const struct lock *l);
/* The snapshot's tagged section 1 ("lockmeta"; payload format in lockmeta.c). */
bool fsm_lockmeta_present(const struct fsm *f);
int fsm_lockmeta_emit(const struct fsm *f, struct buf *b);
const char *fsm_lockmeta_restore(struct fsm *nf, struct rd *r);
/* ---- reentrant sessions (src/fsm/reent.c) ---- */

void fsm_op_session_open_r(struct actx *a, const struct fsm_cmd_session_open_r *p,
                           struct fsm_reply *r);
/* LOCK of `l` by its exclusive holder `s`: the same token, counted up if `s` is reentrant (ERR
 * at its max_count, nothing changed). */
void fsm_reent_relock(struct actx *a, struct lock *l, struct sess *s, struct fsm_reply *r);
/* UNLOCK of `l` by its exclusive holder `s`: true if it only counted down (the lock stays
 * held); false if the hold ends (the last hold, or an admin's forced release). */
bool fsm_reent_unlock(struct actx *a, struct lock *l);
/* The reentrancy invariants (hold counts only on reentrant holders, within their limits, and
 * fsm.n_reent): NULL, or what is wrong. */
const char *fsm_reent_check(const struct fsm *f);
/* The snapshot section (tag 2, snap_sect.h). */
bool fsm_reent_present(const struct fsm *f);
int fsm_reent_emit(const struct fsm *f, struct buf *b);
const char *fsm_reent_restore(struct fsm *nf, struct rd *r);
/* Whether `s` belongs to `user` (owner.c). */
bool fsm_sess_owned_by(const struct sess *s, struct fsm_str user);
/* Lock history (src/fsm/history.c): record what the events of one apply, from index `from`,
 * say about grants, releases and waits; the HISTORY_LIMITS op; teardown; snapshot section 4;
 * invariants. */
void fsm_history_note(struct fsm *f, const struct fsm_cmd *c, struct fsm_events *ev, size_t from);
void fsm_op_history_limits(struct actx *a, const struct fsm_cmd_history_limits *c,
                           struct fsm_reply *r);
void fsm_history_free(struct fsm *f);
bool fsm_history_present(const struct fsm *f);
/* The snapshot's tagged section 6 ("member http"; payload format in member_http.c). */
bool fsm_member_http_present(const struct fsm *f);
int fsm_member_http_emit(const struct fsm *f, struct buf *b);
const char *fsm_member_http_restore(struct fsm *nf, struct rd *r);
int fsm_history_emit(const struct fsm *f, struct buf *b);
const char *fsm_history_restore(struct fsm *nf, struct rd *r);
int fsm_history_check(const struct fsm *f, char *err, size_t errlen);

/* ---- member table ---- */

/* Index of member `id`, or -1 - (insertion index) if absent. */
long fsm_member_find(const struct fsm *f, uint64_t id);

/* ---- KV tree ---- */

struct kv *fsm_kv_find(const struct fsm *f, const char *key, size_t keylen);
struct kv *fsm_kv_alloc(const char *key, size_t keylen);
void fsm_kv_insert(struct fsm *f, struct kv *k); /* the key must be absent */
void fsm_kv_insert_last(struct fsm *f, struct kv *k,
                        struct kv *last);        /* restore: fsm_otree_append */
void fsm_kv_delete(struct fsm *f, struct kv *k); /* unlinks from tree and lease, frees */
void fsm_kv_set_lease(struct kv *k, struct sess *s);
/* Give key k (NULL: a new record for `key`, inserted) the value val (len bytes, malloc'd and
 * owned from here; NULL iff len is 0) under a fresh revision: version, create/mod revision,
 * --max-data-bytes accounting, the lease if set_lease (else it keeps its own), and the KEY_PUT
 * event (sid: the key's lease). PUT and INCR both write through it. The revision, or 0 if
 * memory ran out (val freed, nothing changed). */
uint64_t fsm_kv_set_value(struct actx *a, struct kv *k, struct fsm_str key, char *val, uint32_t len,
                          bool set_lease, struct sess *lease);
/* The same with the record made (fresh: a new one, not in the tree yet; it is inserted) and
 * the revision taken by the caller (a TXN allocates everything before its first change,
 * txn.c). Cannot fail; returns rev. */
uint64_t fsm_kv_set_value_at(struct actx *a, struct kv *k, bool fresh, char *val, uint32_t len,
                             bool set_lease, struct sess *lease, uint64_t rev);
void fsm_kv_free_all(struct fsm *f); /* teardown: every key record */

/* The newest snapshot version this release writes and reads (snapshot.c; format.c reads it). */
#define FSM_SNAP_VERSION_LAST 8

/* ---- snapshot fields of semaphores and elections (src/fsm/snap_prims.c, version 4) ---- */
/* `weighted`: fsm_sem_weighted(l), computed once per record by the caller (it walks them). */
int fsm_snap_emit_kind(const struct lock *l, bool weighted, struct buf *b);
int fsm_snap_emit_leader(const struct lock *l, struct buf *b);
int fsm_snap_emit_candidate(const struct lock *l, bool weighted, const struct waiter *w,
                            struct buf *b);
/* NULL, or what is wrong. */
const char *fsm_snap_read_kind(struct rd *r, struct lock *l);
const char *fsm_snap_read_leader(struct fsm *f, struct rd *r, struct lock *l, uint64_t *rev);
const char *fsm_snap_read_candidate(struct fsm *f, struct rd *r, const struct lock *l,
                                    struct waiter *w);
const char *fsm_snap_check_kind(struct lock *l);
int fsm_snap_emit_permits(bool weighted, const struct shold *h, struct buf *b);
const char *fsm_snap_read_permits(struct rd *r, const struct lock *l, uint32_t *permits);

/* ---- lifecycle and codecs ---- */

int fsm_init_state(struct fsm *f);
void fsm_free_state(struct fsm *f);
/* A canonical (shortest-form) varint, and a length-prefixed string with bounds. */
int fsm_rd_varint(struct rd *r, uint64_t *v);
int fsm_rd_str(struct rd *r, const char **p, uint32_t *n, uint32_t max);
int fsm_cmp_u64(const void *a, const void *b);
/* Decode as fsm_cmd_decode; *body_off = where the op's payload starts in data. */
int fsm_cmd_decode_at(const uint8_t *data, size_t len, struct fsm_cmd *c, size_t *body_off,
                      char *err, size_t errlen);
/* The digest of a decoded entry for the request table (codec.c): never 0, the same on every
 * replica and in every version (it is stored in snapshots). `body` is the op's payload bytes. */
uint64_t fsm_cmd_digest(const struct fsm_cmd *c, const uint8_t *body, size_t n);

#endif
