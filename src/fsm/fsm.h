/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm — the pure, deterministic state machine of fencelock.
 *
 * Owns: the revision counter, sessions, locks (holder + FIFO waiters + lock-delay flag; also
 * semaphores and elections, which are locks of another kind: src/fsm/sem.c, elect.c), the KV
 * store and the per-session request table (exactly-once retries). It never reads a clock, does
 * no I/O and uses no randomness: time arrives inside commands (`now_ms`, informational only).
 *
 * Invariants (checked by fsm_check_invariants, asserted by the tests after every step):
 *   - a lock has one exclusive holder or any number of shared holders (never both); every
 *     holder's session is alive and holds the lock once, in one mode;
 *   - a lock's FIFO queue never has a head that could be granted now (no missed grant; a
 *     multi-request's waiter at the head: the request could not be granted whole); an
 *     upgrade request (exclusive, by a shared holder) is only ever at the head;
 *   - every queued waiter's session is alive and waits at most once per lock; a session's
 *     waits are in enqueue order, a multi-request's (one revision) next to each other by name;
 *   - a lock that is free (no holder, not in lock-delay) has no waiters, unless the head is a
 *     waiting multi-request (which blocks it until it can take all its names);
 *   - every grant takes a fresh revision: tokens strictly increase per lock and are unique;
 *   - a name has one kind (lock, semaphore, election) while it exists; a semaphore never has
 *     more than `limit` permits (shared holds) and no exclusive holder; an election has at most
 *     one leader (its exclusive holder, no shared holds), candidates are exclusive waiters.
 *
 * Ownership: struct fsm owns all its state. Strings inside a decoded struct fsm_cmd borrow the
 * buffer they were decoded from. Strings inside struct fsm_events are owned by the events
 * struct (copied), valid until fsm_events_reset/fsm_events_free. Query results that return
 * pointers (fsm_kv_get, fsm_lock_info) borrow FSM memory, valid until the next fsm_apply or
 * fsm_restore.
 */
#ifndef FENCELOCK_FSM_H
#define FENCELOCK_FSM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/proto.h"
#include "common/trace.h"
#include "fsm/ops.h"

/* Hard limits enforced by the decoder; the server's configurable limits must be <= these. */
#define FSM_MAX_NAME 1024            /* lock names, session names, keys */
#define FSM_MAX_VALUE (16u << 20)    /* KV values */
#define FSM_CMD_VERSION 1            /* the header of an unchecked entry (struct fsm_cmd) */
#define FSM_CMD_VERSION_USER 2       /* a checked entry: with the acting user (codec.c) */
#define FSM_MAX_USER 64              /* bytes of an acting user / session owner (= ACL_NAME_MAX) */
#define FSM_MAX_SEM_LIMIT (1u << 20) /* a semaphore's limit: 1..this */
#define FSM_MAX_ELECT_VALUE (64u << 10) /* an election candidate's or leader's value */
#define FSM_MAX_MULTI_NAMES 1024        /* the names of one LOCK_MULTI (multi.c) */
/* A lock's max hold (LOCK_META): 1..this ms (about 31 years: a deadline never overflows) */
#define FSM_MAX_MAXHOLD_MS (1ull << 40)
#define FSM_MAX_HOLD_COUNT (1u << 20)  /* a reentrant session's max count: 1..this (reent.c) */
#define FSM_MAX_LATCH_COUNT (1u << 20) /* a latch's count, a barrier's (latch.c): 1..this */
#define FSM_MAX_TXN_ITEMS 1024 /* compares + ops of one TXN (txn.c); the server's --max-txn-ops */
#define FSM_COUNTER_DIGITS 20  /* bytes of an INCR counter's value: "-9223372036854775808" */
/* The log formats (docs/design.md "Log formats"): what a node must read to apply an
 * entry or restore a snapshot. 1: the previous release (header version 1, ops 0-13, snapshots
 * 2-3); 2: adds header version 2 (acting user), ops 14-27 and snapshots 4-7. The cluster's
 * format is replicated state (CLUSTER_FORMAT entries), raised only, never lowered. */
#define FSM_FORMAT_1 1
#define FSM_FORMAT_2 2
#define FSM_FORMAT_MAX FSM_FORMAT_2 /* the highest this code reads */

/* The kind of a named object: locks, semaphores and elections share one namespace; a name
 * keeps its kind while the object exists (using it as another kind answers WRONGTYPE). */
enum fsm_kind { FSM_KIND_LOCK = 0, FSM_KIND_SEM = 1, FSM_KIND_ELECT = 2, FSM_KIND__COUNT };
/* "lock", "semaphore", "election". */
const char *fsm_kind_name(uint8_t kind);

/* The ops: FSM_OP_<OP> = value for each row of FSM_OPS (src/fsm/ops.h, with each op's reply);
 * each carries the payload its row names in struct fsm_cmd. FSM_OP__COUNT is one past the
 * highest value (in an enum of its own: switches on enum fsm_op list every op, no more). */
#define FSM_OP_ENUM_(op, value, ...) FSM_OP_##op = value,
enum fsm_op { FSM_OPS(FSM_OP_ENUM_) };
#define FSM_OP_AFTER_(op, value, ...) FSM_OP_AFTER_##op = value,
enum { FSM_OPS(FSM_OP_AFTER_) FSM_OP__COUNT };
#undef FSM_OP_ENUM_
#undef FSM_OP_AFTER_

struct fsm_str {
    const char *p; /* not NUL-terminated */
    uint32_t len;
};

/* The conditions of a PUT or DEL; a failed one answers STALE or IFREV and changes nothing. */
struct fsm_kv_cond {
    bool has_fence;            /* FENCE fence_name fence_token: the token must be the */
    struct fsm_str fence_name; /* current holder's token of that lock (1..FSM_MAX_NAME) */
    uint64_t fence_token;
    bool has_ifrev; /* IFREV ifrev: the key's mod_rev must be ifrev (0 = key must not exist) */
    uint64_t ifrev;
};

/* The names of a LOCK_MULTI (a NAMES field): `n` entries in `raw`, each u8 mode (0 exclusive,
 * 1 shared) then str name (1..FSM_MAX_NAME), names in strictly increasing byte order (so no
 * name twice). `raw` borrows the decode buffer, or a buffer the caller built with
 * fsm_names_add; fsm_names_next walks it. */
struct fsm_names {
    uint32_t n; /* 1..FSM_MAX_MULTI_NAMES */
    struct fsm_str raw;
};
struct fsm_names_it {
    const uint8_t *p;
    size_t len, off;
};
#define FSM_NAME_SHARED 1u /* a NAMES entry's mode byte: shared; 0 = exclusive */
static inline void fsm_names_begin(struct fsm_names_it *it, const struct fsm_names *ns)
{
    it->p = (const uint8_t *)ns->raw.p;
    it->len = ns->raw.len;
    it->off = 0;
}
/* The next entry: 1 and its name and mode, or 0 at the end (or on bytes the decoder would
 * refuse). */
int fsm_names_next(struct fsm_names_it *it, struct fsm_str *name, bool *shared);
/* Append one entry to a raw list being built (the caller keeps the byte order). 0 or -1. */
int fsm_names_add(struct buf *raw, const char *name, size_t len, bool shared);

/* A TXN's compares and ops (a TXN field, txn.c): ncmp compares, then nthen ops (THEN), then
 * nelse ops (ELSE), in `raw` (each entry as ops.h's FSM_F_TXN says); `raw` borrows the decode
 * buffer, or one the caller built with fsm_txn_add. The decoder checked every entry. */
struct fsm_txn {
    uint32_t ncmp, nthen, nelse;
    struct fsm_str raw;
};
enum fsm_txn_type {
    FSM_TXN_REV = 1,     /* name: key; rel n: its mod_rev (0 if absent) */
    FSM_TXN_VALUE = 2,   /* name: key; rel (= or !=) value: its value (an absent key: none) */
    FSM_TXN_EXISTS = 3,  /* name: key */
    FSM_TXN_MISSING = 4, /* name: key */
    FSM_TXN_TOKEN = 5,   /* name: lock; rel (= or !=) n: n is a current token (as FENCE's) */
    FSM_TXN_HOLDS = 6,   /* name: lock; n: a session that holds it (either mode) */
    FSM_TXN_PUT = 16,    /* name: key, value */
    FSM_TXN_DEL = 17,    /* name: key */
    FSM_TXN_INCR = 18,   /* name: key; n: the step, an int64_t in two's complement */
};
enum fsm_txn_rel { FSM_TXN_EQ = 0, FSM_TXN_NE = 1, FSM_TXN_LT = 2, FSM_TXN_GT = 3 };
struct fsm_txn_item {
    uint8_t type, rel; /* enum fsm_txn_type, enum fsm_txn_rel (0 where unused) */
    struct fsm_str name, value;
    uint64_t n;
};
struct fsm_txn_it {
    const uint8_t *p;
    size_t len, off;
};
static inline void fsm_txn_begin(struct fsm_txn_it *it, const struct fsm_txn *t)
{
    it->p = (const uint8_t *)t->raw.p;
    it->len = t->raw.len;
    it->off = 0;
}
/* The next entry: 1, or 0 at the end (or on bytes the decoder would refuse). */
int fsm_txn_next(struct fsm_txn_it *it, struct fsm_txn_item *x);
/* Append one entry to a raw list being built (the caller counts them into ncmp / nthen /
 * nelse, in that order). 0 or -1 (out of memory). */
int fsm_txn_add(struct buf *raw, const struct fsm_txn_item *x);
/* NULL if x is an entry the decoder accepts as a compare (cmp) or an op (!cmp), else why not. */
const char *fsm_txn_item_bad(const struct fsm_txn_item *x, bool cmp);

/* A counter's value (counter.c): 0 and *out if p[0..n) is the canonical decimal text of an
 * int64_t ("0" or "-?[1-9][0-9]*", in range), else -1. */
int fsm_counter_parse(const char *p, size_t n, int64_t *out);

/* ---- per-op payloads: struct fsm_cmd_<payload> from its field list in ops.h ---- */

#define FSM_FIELD_DECL_(p, kind, member, what) FSM_CTYPE_##kind member;
#define FSM_PAYLOAD_STRUCT_(p)                                                                     \
    struct fsm_cmd_##p {                                                                           \
        FSM_PAYLOAD_##p(FSM_FIELD_DECL_, p)                                                        \
    };
FSM_PAYLOADS(FSM_PAYLOAD_STRUCT_)
#undef FSM_PAYLOAD_STRUCT_
#undef FSM_FIELD_DECL_

/* NOOP's payload: C has no empty struct; never encoded. */
struct fsm_cmd_none {
    uint8_t unused_;
};

/*
 * A command: the header every op has, then the payload `op` selects (a tagged union; the other
 * members are meaningless). Build one with the payload member named, so that the payload
 * fields left out are 0: {.op = FSM_OP_LOCK, .lock = {.name = n, .sid = s}}; or memset it to
 * 0 first. `req_sid`/`req_seq` (both non-zero) request exactly-once semantics: see fsm_apply.
 *
 * `checked` marks a client's command as an ownership-aware server proposes it (header version
 * FSM_CMD_VERSION_USER; the encoder sets it whenever `user` is set): the sessions it names
 * must be owned by `user` (fsm_apply: session ownership), SESSION_OPEN records `user` as the
 * new session's owner, and a REQ records the command's digest. `user` is the --acl-file user
 * (0..FSM_MAX_USER bytes; empty without --acl-file). Unchecked (version 1, as every entry
 * written before session ownership): nothing is checked, no owner and no digest are recorded: the
 * leader's own entries (expiry, checkpoints, wait timers, lock-delay ends) are unchecked, and
 * old logs replay identically. `admin`: the user has the admin permission, which overrides
 * ownership for SESSION_CLOSE, SESSION_REVOKE and UNLOCK.
 */
struct fsm_cmd {
    uint8_t op;          /* enum fsm_op */
    uint64_t now_ms;     /* leader's wall clock when proposed; informational only */
    uint64_t req_sid;    /* REQ session (0 = none) */
    uint64_t req_seq;    /* REQ seq (0 = none) */
    bool checked;        /* version-2 entry: ownership, owners and digests apply */
    struct fsm_str user; /* acting user (checked entries); empty = no --acl-file */
    bool admin;          /* the user is an admin (checked entries) */
    /* A W3C traceparent the client attached (TRACEPARENT: LOCK, UNLOCK, fenced writes), in its
     * binary form (common/trace.h); only on a checked entry (the version-2 header's flag bit
     * 1). Recorded in the lock history and the events; it changes nothing else and is not part
     * of the request digest (a retry with another traceparent is the same request). */
    bool traced;
    struct trace_ctx trace;
#define FSM_CMD_MEMBER_(op, value, member, payload, ...) struct fsm_cmd_##payload member;
    union {
        FSM_OPS(FSM_CMD_MEMBER_)
#undef FSM_CMD_MEMBER_
    };
};

/* The conditions of a PUT, DEL, INCR or TXN command, NULL for any other op. */
static inline struct fsm_kv_cond *fsm_cmd_cond(struct fsm_cmd *c)
{
    return c->op == FSM_OP_PUT    ? &c->put.cond
           : c->op == FSM_OP_DEL  ? &c->del.cond
           : c->op == FSM_OP_INCR ? &c->incr.cond
           : c->op == FSM_OP_TXN  ? &c->txn.cond
                                  : NULL;
}

/* The payload of a LOCK, LOCK_SHARED or LOCK_NOTIFY command, NULL for any other op. */
static inline const struct fsm_cmd_lock *fsm_cmd_lock_of(const struct fsm_cmd *c)
{
    return c->op == FSM_OP_LOCK          ? &c->lock
           : c->op == FSM_OP_LOCK_SHARED ? &c->lock_shared
           : c->op == FSM_OP_LOCK_NOTIFY ? &c->lock_notify
                                         : NULL;
}

/* What a command that may queue asks for (LOCK, LOCK_SHARED, SEM_ACQUIRE, ELECT_CAMPAIGN):
 * the object, the session and its wait. A QUEUED reply is answered later by the GRANTED or
 * WAIT_ENDED event of (name, sid); CANCEL_WAIT (name, sid) ends the wait. */
struct fsm_wait_ref {
    struct fsm_str name;
    uint64_t sid, wait_ms;
};

/* true and fill `w` for a command that may queue (its payload has a WAIT field: LOCK,
 * LOCK_SHARED, SEM_ACQUIRE, ELECT_CAMPAIGN, LOCK_MULTI), else false. A LOCK_MULTI's name is
 * its first (lowest) name: the server parks it, and the FSM answers its retry, by that one. */
bool fsm_cmd_wait_of(const struct fsm_cmd *c, struct fsm_wait_ref *w);

/* ---- the op descriptor (ops.h's rows as data; ops.c) ---- */

struct fsm_field {
    uint8_t kind;       /* enum fsm_field_kind */
    uint16_t off;       /* in the payload struct */
    const char *what;   /* in decode errors */
    const char *member; /* the struct member's name (tests) */
};

struct fsm_op_desc {
    const char *name; /* "SESSION_OPEN" */
    uint8_t format;   /* the log format that introduced the op */
    uint8_t grow;     /* enum fsm_grow */
    bool admin;       /* an admin may run it on another user's session */
    uint8_t nfields;
    const struct fsm_field *fields; /* the payload's, in wire order */
};

/* The row of `op`, NULL for a value that is not an op (19, 28, >= FSM_OP__COUNT). */
const struct fsm_op_desc *fsm_op_desc(unsigned op);
/* Its name, "?" for a value that is not an op. */
const char *fsm_op_name(unsigned op);
/* The log format that introduced `op`, FSM_FORMAT_MAX + 1 for a value that is not an op. */
unsigned fsm_op_format(unsigned op);

/* The session `c` acts on (its SID field: ownership in fsm_apply, the server's REQ rule),
 * 0 if it names none. */
uint64_t fsm_cmd_acting_sid(const struct fsm_cmd *c);
/* The first field of `kind` in c's payload, NULL if it has none. The _str form is for the
 * string kinds (NAME, LABEL, VALUE, EVALUE, ADDR), the _u64 form for U64, SID, WAIT and ID. */
const struct fsm_str *fsm_cmd_str(const struct fsm_cmd *c, enum fsm_field_kind kind);
uint64_t *fsm_cmd_u64(struct fsm_cmd *c, enum fsm_field_kind kind);

/*
 * Encode `c` (versioned binary format, FSM_CMD_VERSION) by appending to `out`.
 * Returns 0, or -1 on allocation failure.
 */
int fsm_cmd_encode(const struct fsm_cmd *c, struct buf *out);

/*
 * Decode `len` bytes into `c`; strings in `c` borrow `data`. Total: any byte string either
 * decodes or returns -1 with a message in `err` (size errlen). Never reads past `len`.
 */
int fsm_cmd_decode(const uint8_t *data, size_t len, struct fsm_cmd *c, char *err, size_t errlen);

/*
 * The log format a node must read to apply this entry: FSM_FORMAT_1 for a version-1 header
 * with an op of 0-13 (and for bytes too short to tell: every node answers them ERR alike),
 * FSM_FORMAT_2 for a version-2 header or an op of 14-20, the format a CLUSTER_FORMAT entry
 * sets (at least 2), and FSM_FORMAT_MAX + 1 for a header version or op this code does not know.
 * A node must not apply an entry above the format it reads: it would answer it ERR while the
 * others apply it (src/raft/rn_fsm.c stops the node instead).
 */
unsigned fsm_entry_format(const uint8_t *data, size_t len);

/* The same for a snapshot: 1 for versions 2-3, 2 for versions 4-8, FSM_FORMAT_MAX + 1 for any
 * other version (or bad magic: the restore refuses it on its own). */
unsigned fsm_snapshot_format(const uint8_t *data, size_t len);

/* Byte order of names (lock names, keys); a proper prefix sorts first: the order of the FSM's
 * trees and of a LOCK_MULTI entry's names (the server sorts them with it). */
int fsm_name_cmp(const char *a, size_t alen, const char *b, size_t blen);

enum fsm_reply_kind {
    FSM_REPLY_OK = 0,
    FSM_REPLY_INT = 1,    /* value */
    FSM_REPLY_NIL = 2,    /* e.g. try-lock on a busy lock; cancelled wait */
    FSM_REPLY_QUEUED = 3, /* LOCK enqueued the session; the grant comes later as an event */
    FSM_REPLY_ERR = 4,    /* err: "CODE message", CODE one of NOSESSION STALE NOTHOLDER
                             IFREV ERR ... (Redis style, without the leading '-') */
};

#define FSM_ERR_LEN 128 /* an ERR reply's text with its NUL; longer texts are cut */

struct fsm_reply {
    uint8_t kind;          /* enum fsm_reply_kind */
    uint64_t value;        /* INT */
    char err[FSM_ERR_LEN]; /* ERR */
    /* TXN's INT reply: the result of each op of the branch that ran, in order (PUT: its
       revision; DEL: the deleted count; INCR: the new value, two's complement); borrowed from
       the fsm (valid until the next fsm_apply, fsm_restore or fsm_free). txn_known false: a
       retry answered from a request table restored from a snapshot, which keeps the reply's
       INT but not these results (txn_n is then 0). */
    const uint64_t *txn;
    uint32_t txn_n;
    bool txn_known;
};

enum fsm_event_type {
    FSM_EV_SESSION_OPENED = 1,    /* sid, ttl_ms */
    FSM_EV_SESSION_ENDED = 2,     /* sid, expired (true if by expiry) */
    FSM_EV_GRANTED = 3,           /* name, sid, token; value: a lock grant's (LOCK ... VALUE) */
    FSM_EV_RELEASED = 4,          /* name, sid, token (unlock, close or expiry of holder) */
    FSM_EV_WAIT_STARTED = 5,      /* name, sid, wait_ms (the session was enqueued) */
    FSM_EV_WAIT_ENDED = 6,        /* name, sid (removed from the queue without a grant) */
    FSM_EV_LOCKDELAY_STARTED = 7, /* name, delay_ms */
    FSM_EV_LOCKDELAY_ENDED = 8,   /* name */
    FSM_EV_FENCE_REJECTED = 9,    /* name, token (a fenced write failed with STALE) */
    FSM_EV_KEY_PUT = 10,          /* name (key), value, sid (its lease session, 0 = none) */
    FSM_EV_KEY_DELETED = 11,      /* name (key), sid: 0 for DEL, else the lease session whose
                                     end removed it (expired: that session expired) */
    FSM_EV_LEADER = 12,           /* name, sid, token, value: an election's new leader; sid 0
                                     (token 0, no value): the election has no leader any more */
    FSM_EV_PROCLAIM = 13,         /* name, sid, token, value: the leader changed its value */
    FSM_EV_DEADLOCK = 14,         /* name, sid, ms = sessions in the cycle, value = the cycle
                                     ("5 -a-> 7 -b-> 5"): the wait of sid on name was refused */
    FSM_EV_DEADLOCK_LIMIT = 15,   /* name, sid, ms = steps: the deadlock search gave up at its
                                     limit and the wait was queued (waitgraph.h) */
    FSM_EV_REVOKE_REQUESTED = 16, /* name, sid (the holder), token (its grant), ms (the deadline
                                     asked, 0 = none), value (the reason), by (who asked) */
    FSM_EV_WAIT_NOTIFY = 17,      /* name, sid (the waiter), token (the exclusive holder's grant
                                     it queued behind), ms (its wait): LOCK ... NOTIFY */
    /* latches and barriers (latch.c): the values of their ops' range, so that events other
     * features add do not collide with them */
    FSM_EV_LATCH_ZERO = 36,     /* name, sid (the last count-down's session), ms = its count */
    FSM_EV_LATCH_BROKEN = 37,   /* name, sid: the joined session that ended before counting down */
    FSM_EV_BARRIER_FULL = 38,   /* name, sid (the last to enter), ms = its count */
    FSM_EV_BARRIER_DONE = 39,   /* name, sid (the last to leave): everybody left, it is gone */
    FSM_EV_BARRIER_BROKEN = 40, /* name, sid: the session that ended while inside */
    FSM_EV_LATCH_DELETED = 41,  /* name, ms = 1 for a barrier, 0 for a latch: the record is gone
                                   (LATCH_DELETE, or a barrier everybody withdrew from) */
};

struct fsm_event {
    uint8_t type;
    uint8_t kind;  /* enum fsm_kind of the object named, for the events that name one */
    bool expired;  /* SESSION_ENDED, KEY_DELETED: by expiry; RELEASED: the holder expired */
    bool revoked;  /* with expired: the expiry was a SESSION_REVOKE */
    bool deadline; /* RELEASED with expired: a LOCK.REVOKE's deadline passed (REVOKE_END); the
                      holder's session lives on */
    bool maxhold;  /* RELEASED with expired: the grant's max hold ended it (MAXHOLD_END; ms: the
                      max hold); the holder's session lives on */
    uint64_t sid;
    uint64_t token;
    uint64_t ms;          /* ttl_ms, wait_ms or delay_ms by type */
    uint64_t held_ms;     /* RELEASED: how long that grant was held, in the entries' clock (the
                             releasing entry's now_ms less the granting one's; 0 if the leaders'
                             clocks went back): the hold-time histogram needs no table of its
                             own */
    struct fsm_str name;  /* owned by the events struct */
    struct fsm_str value; /* KEY_PUT, LEADER, PROCLAIM, DEADLOCK: borrowed from the key's or
                             the election's record (the fsm's last cycle text), valid until
                             the next fsm_apply, fsm_restore or fsm_free; REVOKE_REQUESTED: the
                             reason, borrowed as well */
    struct fsm_str by;    /* REVOKE_REQUESTED: who asked, borrowed as value is */
    /* The traceparent that goes with the event (history.c, fsm_trace_events): a GRANTED its
     * grantee's own request's (the LOCK that queued or took it), every other event the entry's
     * command's; traced false when none. */
    bool traced;
    struct trace_ctx trace;
};

/* Events produced by one fsm_apply, in the order they happened. `lost` is set when an event
 * could not be recorded (out of memory): a consumer that promises a gap-free stream (watch)
 * must then say the history before this point is incomplete. */
struct fsm_events {
    struct fsm_event *ev;
    size_t n, cap;
    struct buf names; /* storage for event names; ev[i].name points inside after apply */
    bool lost;
};

void fsm_events_init(struct fsm_events *e);
void fsm_events_reset(struct fsm_events *e); /* n = 0, keeps memory */
void fsm_events_free(struct fsm_events *e);

struct fsm;

struct fsm *fsm_new(void);

/*
 * The key of the FSM's name hash (lock names pick hash buckets). fsm_new starts with a key of
 * zeros; the server sets a random one per process (randomness stays out of src/fsm), so that
 * clients cannot choose names that share a bucket. Bucket order never reaches the replicated
 * outputs (snapshots walk names in byte order, sessions by id; fsm_foreach_* too), so nodes
 * with different keys agree byte for byte. fsm_restore keeps the target's key. 0, or -1 if
 * the FSM already holds locks (set it right after fsm_new).
 */
#define FSM_HASH_KEY_BYTES 16
int fsm_set_hash_key(struct fsm *f, const uint8_t key[FSM_HASH_KEY_BYTES]);
/* The longest chain of the lock table's buckets (tests: chains stay short whatever the names). */
size_t fsm_max_lock_chain(const struct fsm *f);
void fsm_free(struct fsm *f);

/*
 * Apply one committed entry. Total: never fails on any input; a malformed entry or a
 * semantically invalid command yields an ERR reply and changes nothing (revision unchanged).
 * Appends the events of this entry to `ev` (the caller resets it between entries).
 *
 * Revision: a command that changes state allocates revisions: each grant takes ++revision
 * (its token); a state-changing command without a grant takes ++revision once.
 *
 * Exactly-once: with req_sid/req_seq set, req_sid must be alive (else ERR NOSESSION).
 * seq < session's highest seq -> ERR "ERR request seq already superseded", nothing changes.
 * seq == highest -> the cached reply, nothing changes; except for LOCK (LOCK_SHARED,
 * SEM_ACQUIRE, ELECT_CAMPAIGN) whose cached reply is QUEUED: then the current truth is
 * answered (INT token if the session now holds it, QUEUED if still queued, NIL if its wait
 * ended). seq > highest -> applied; reply cached.
 * The table is dropped with the session. With seq == highest, a command whose digest (its op
 * and payload, the WAIT of LOCK / SEM_ACQUIRE / ELECT_CAMPAIGN left out: a resend asks for the
 * wait that is left) differs from the one recorded with that seq is refused: ERR "request seq N
 * of session S was used by a different command". A seq restored from a snapshot without a
 * digest replays as before.
 *
 * Session ownership (cmd->checked entries only, checked before anything else, so a refused command
 * changes nothing and spends no seq): the session the command acts on (its payload's SID field,
 * fsm_cmd_acting_sid: LOCK, UNLOCK, SEM_ACQUIRE/RELEASE, ELECT_CAMPAIGN/PROCLAIM/RESIGN,
 * SESSION_CLOSE/REVOKE/CHECKPOINT/EXPIRE, CANCEL_WAIT, PUT ... LEASE) and the REQ session must be
 * owned by cmd->user, else ERR "NOPERM ...". cmd->admin overrides it for the ops whose row in
 * ops.h says admin (SESSION_CLOSE, SESSION_REVOKE and UNLOCK; never for REQ: a seq belongs to
 * the session's owner). A session that does not exist is left to the
 * op (NOSESSION).
 */
void fsm_apply(struct fsm *f, const uint8_t *data, size_t len, struct fsm_reply *reply,
               struct fsm_events *ev);

/*
 * The ownership rule of fsm_apply for `c` against the current state, without applying: 0, or
 * the id of the other user's session that `c` may not name (fsm_apply answers it as NOSESSION,
 * exactly as a session that does not exist: no oracle of live ids). The server asks before
 * proposing, so a refusal costs no log entry; fsm_apply decides again when the entry applies
 * (the state may have moved on).
 */
uint64_t fsm_cmd_check_owner(const struct fsm *f, const struct fsm_cmd *c);

/* Deterministic snapshot: the same state gives the same bytes. Appends to `out`. 0 or -1. */
int fsm_snapshot(const struct fsm *f, struct buf *out);

/*
 * Replace the whole state with a snapshot. On error (-1, message in err) the state is left
 * unchanged. Does not take ownership of `data`.
 */
int fsm_restore(struct fsm *f, const uint8_t *data, size_t len, char *err, size_t errlen);

/* ---- Queries (read-only; the server calls them after a barrier for linearizable reads) ---- */

uint64_t fsm_revision(const struct fsm *f);

/* The cluster's log format: FSM_FORMAT_1 until a CLUSTER_FORMAT entry raised it. */
unsigned fsm_format(const struct fsm *f);

struct fsm_kv_meta {
    const char *value; /* borrowed */
    uint32_t value_len;
    uint64_t create_rev, mod_rev, version, lease_sid;
};

/* 1 and fill `m` if `key` exists, else 0. */
int fsm_kv_get(const struct fsm *f, const char *key, size_t keylen, struct fsm_kv_meta *m);

/* Calls cb for keys starting with prefix, in byte order, at most `limit` (0 = no limit).
 * cb returns non-zero to stop. Returns the number of keys visited. */
size_t fsm_kv_scan(const struct fsm *f, const char *prefix, size_t prefixlen, size_t limit,
                   int (*cb)(void *arg, const char *key, size_t keylen,
                             const struct fsm_kv_meta *m),
                   void *arg);

struct fsm_lock_view {
    uint8_t kind;           /* enum fsm_kind */
    uint64_t holder_sid;    /* the exclusive holder, 0 = none */
    uint64_t token;         /* exclusive holder's token */
    size_t n_shared;        /* shared holders (0 while held exclusively) */
    uint64_t held_since_ms; /* now_ms of the granting entry */
    bool in_lockdelay;
    uint64_t lockdelay_ms;
    size_t n_waiters;
    struct fsm_str value; /* the exclusive grant's value (LOCK ... VALUE), borrowed; empty */
    uint64_t maxhold_ms;  /* the exclusive grant's max hold (LOCK ... MAXHOLD), 0 = none */
    uint64_t transitions; /* ended exclusive grants since a LOCK_META reached the record */
    bool reentrant;       /* the exclusive holder is a reentrant session (reent.c) */
    uint32_t count;       /* the exclusive holder's hold count (0 without one) */
};

/* 1 and fill `v` if the lock exists (held, in lock-delay or with waiters), else 0. */
int fsm_lock_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_lock_view *v);

/* The names of the request session `sid` waits with on lock `name`: every name of a waiting
 * LOCK_MULTI in name order, else `name` alone; visit returns nonzero to stop. Returns that
 * value, or 0 (also when the session does not wait there). */
int fsm_wait_request_names(const struct fsm *f, const char *name, size_t namelen, uint64_t sid,
                           int (*visit)(void *arg, const char *n, size_t len), void *arg);

/* Waiters of a lock in FIFO order: calls cb(arg, sid, wait_ms) for each. */
void fsm_lock_waiters(const struct fsm *f, const char *name, size_t namelen,
                      void (*cb)(void *arg, uint64_t sid, uint64_t wait_ms), void *arg);

/* Holders of a lock: the exclusive holder, or every shared holder in token order. */
void fsm_lock_holders(const struct fsm *f, const char *name, size_t namelen,
                      void (*cb)(void *arg, uint64_t sid, uint64_t token, bool shared), void *arg);

/* One lock of fsm_locks_list(); name borrowed. */
struct fsm_lock_item {
    struct fsm_str name;
    uint8_t kind;               /* enum fsm_kind */
    uint64_t holder_sid, token; /* the exclusive holder */
    size_t n_shared;            /* shared holders */
    bool in_lockdelay;
    size_t n_waiters;
    struct fsm_str value; /* as in struct fsm_lock_view */
    uint64_t maxhold_ms;  /* as in struct fsm_lock_view */
    uint64_t transitions; /* as in struct fsm_lock_view */
    bool reentrant;       /* as struct fsm_lock_view's */
    uint32_t count;
};

/* Up to `limit` locks whose name starts with prefix, in name byte order, into out[].
   Returns how many. O(log locks + limit): locks are also kept in a tree ordered by name. */
size_t fsm_locks_list(const struct fsm *f, const char *prefix, size_t plen, size_t limit,
                      struct fsm_lock_item *out);
/* The same from the first name after `after` (NULL or alen 0: from the prefix): paging. */
size_t fsm_locks_list_after(const struct fsm *f, const char *prefix, size_t plen, const char *after,
                            size_t alen, size_t limit, struct fsm_lock_item *out);

/* 0 if `token` is the token of a current holder of lock `name`, exclusive or shared, a
 * semaphore permit's or the election leader's, else -1 (FENCE.CHECK; a fenced PUT/DEL accepts
 * only a lock's exclusive holder's token, a permit's or the leader's). */
int fsm_fence_check(const struct fsm *f, const char *name, size_t namelen, uint64_t token);

/* A semaphore (SEM.INFO); holders and waiters through fsm_sem_holders / fsm_sem_waiters. */
struct fsm_sem_view {
    uint64_t limit;
    uint64_t in_use; /* permits held, summed over the acquisitions (may exceed a lowered limit) */
    size_t n_holders, n_waiters;
    bool in_lockdelay;
    bool by_operator; /* `limit` is an operator's (SEM_LIMIT_SET), which wins over acquirers' */
};
/* A semaphore's acquisitions in token order: cb(arg, sid, token, permits). */
void fsm_sem_holders(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, uint64_t token, uint32_t permits),
                     void *arg);
/* A semaphore's queued requests in FIFO order: cb(arg, sid, permits). */
void fsm_sem_waiters(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, uint32_t permits), void *arg);
/* A latch or a barrier (LATCH.INFO, latch.c). */
enum fsm_latch_state {
    FSM_LATCH_COUNTING = 0, /* a latch above zero; a barrier that is filling */
    FSM_LATCH_ZERO = 1,     /* a latch at zero; a barrier that is full (its leave phase) */
    FSM_LATCH_BROKEN = 2,   /* a participant's session ended before it counted down / left */
};
struct fsm_latch_view {
    bool barrier;        /* a barrier, else a latch */
    uint8_t state;       /* enum fsm_latch_state */
    uint64_t count;      /* the latch's count; the barrier's */
    uint64_t remaining;  /* latch: counts left; barrier: sessions still to enter (filling) or
                            inside (full) */
    size_t n_parts;      /* latch: joined sessions; barrier: sessions inside */
    uint64_t broken_sid; /* BROKEN: the session whose end broke it */
};
/* 1 and fill `v` if a latch or barrier `name` exists, else 0. */
int fsm_latch_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_latch_view *v);
/* Its participants in sid order: cb(arg, sid, done) (done: a joined session that counted down). */
void fsm_latch_parts(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, bool done), void *arg);
/* "latch", "barrier" */
const char *fsm_latch_kind_name(bool barrier);

/* 1 and fill `v` if `name` is an existing semaphore or has an operator's limit (then, if the
 * semaphore does not exist, as an idle one of that limit), else 0. */
int fsm_sem_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_sem_view *v);
/* The operator's limit of semaphore name (SEM_LIMIT_SET, semlimit.c), 0 if none. */
uint32_t fsm_semlim_get(const struct fsm *f, const char *name, size_t namelen);

/* An election's leader (ELECT.LEADER, ELECT.OBSERVE). */
struct fsm_elect_view {
    uint64_t sid, token;  /* the leader; token is also the revision it took over at */
    struct fsm_str value; /* borrowed */
    uint64_t rev;         /* revision of the last change: the grant or the last PROCLAIM */
    size_t n_candidates;  /* queued campaigns */
};
/* 1 and fill `v` if `name` is an election with a leader, else 0. */
int fsm_elect_leader(const struct fsm *f, const char *name, size_t namelen,
                     struct fsm_elect_view *v);

/* The kind of the object `name` (enum fsm_kind), or -1 if none exists. */
int fsm_kind_of(const struct fsm *f, const char *name, size_t namelen);

struct fsm_session_view {
    uint64_t sid, ttl_ms, lockdelay_ms;
    uint64_t checkpoint_ms;          /* last SESSION_CHECKPOINT, 0 = none (a full TTL) */
    struct fsm_str name;             /* borrowed */
    struct fsm_str owner;            /* borrowed; the opening user, empty = none recorded */
    size_t n_locks, n_waits, n_keys; /* n_locks: held exclusively */
    size_t n_shared;                 /* locks held in shared mode */
    bool reentrant;                  /* opened REENTRANT, with max_count (else 0) */
    uint32_t max_count;
};

/* 1 and fill `v` if the session is alive, else 0. */
int fsm_session_info(const struct fsm *f, uint64_t sid, struct fsm_session_view *v);

/* Usage by session owner (usage.c): the sessions `owner` owns, the waits they have queued, and
 * their bytes by the --max-data-bytes measure (a record each, and session names).
 * Derived from the replicated tables, so every node holds the same numbers; all 0 for an owner
 * with nothing (or no owner: sessions without one are not counted). */
struct fsm_owner_usage {
    uint64_t sessions, waiters, bytes;
};
void fsm_owner_usage(const struct fsm *f, const char *owner, size_t len,
                     struct fsm_owner_usage *out);
/* Every owner ever counted (counts may be 0), in first-seen order. */
void fsm_foreach_owner(const struct fsm *f,
                       void (*cb)(void *arg, const char *owner, size_t len,
                                  const struct fsm_owner_usage *u),
                       void *arg);

/* Iteration for a new leader re-arming timers: sessions by id, waiters and lock-delays by lock
   name (then queue order); never the hash buckets, so it is the same under any hash key. */
void fsm_foreach_session(const struct fsm *f, void (*cb)(void *arg, uint64_t sid, uint64_t ttl_ms),
                         void *arg);
/* SESSION.LIST (sesslist.c): cb(arg, sid) for at most `limit` live sessions with ids above
   `after`, in id order; returns how many. O(limit) when session `after` is alive. */
size_t fsm_sessions_after(const struct fsm *f, uint64_t after, size_t limit,
                          void (*cb)(void *arg, uint64_t sid), void *arg);
void fsm_foreach_waiter(const struct fsm *f,
                        void (*cb)(void *arg, const char *name, size_t namelen, uint64_t sid,
                                   uint64_t wait_ms),
                        void *arg);
void fsm_foreach_lockdelay(const struct fsm *f,
                           void (*cb)(void *arg, const char *name, size_t namelen,
                                      uint64_t delay_ms),
                           void *arg);

/* Pending revokes with a deadline (src/fsm/revoke.c), by lock name: a new leader arms each at
 * its full length (it cannot know how much of it an earlier leader saw pass). */
void fsm_foreach_revoke(const struct fsm *f,
                        void (*cb)(void *arg, const char *name, size_t namelen, uint64_t token,
                                   uint64_t deadline_ms),
                        void *arg);
/* A lock's pending revoke (strings borrowed, valid until the next fsm_apply or fsm_restore). */
struct fsm_revoke_view {
    uint64_t token;       /* the grant asked to let go */
    uint64_t deadline_ms; /* 0: asked only, never forced */
    struct fsm_str reason, by;
};
/* 1 and fill `v` if lock `name` has a pending revoke, else 0. */
int fsm_lock_revoke_info(const struct fsm *f, const char *name, size_t namelen,
                         struct fsm_revoke_view *v);

/* Exclusive grants with a max hold (src/fsm/lockmeta.c), by lock name: every node arms each
 * at its full length from when it learns of the grant (applies it, or restores a snapshot
 * holding it); a takeover keeps what the node armed then (lease.c). */
void fsm_foreach_maxhold(const struct fsm *f,
                         void (*cb)(void *arg, const char *name, size_t namelen, uint64_t token,
                                    uint64_t maxhold_ms),
                         void *arg);

/* The replicated member table: every node's client and raft address, so any node can tell a
 * client where the leader is (-NOTLEADER host:port). */
struct fsm_member_view {
    uint64_t id;
    struct fsm_str client_addr, raft_addr; /* borrowed */
    struct fsm_str http_addr;              /* borrowed; empty until its MEMBER_HTTP */
    uint8_t http_flags;                    /* FSM_MEMBER_HTTP_TLS: the HTTP port speaks TLS */
};
#define FSM_MEMBER_HTTP_TLS 1u /* MEMBER_HTTP flags bit 0; the other bits are 0 */
#define FSM_MAX_MEMBERS 64
#define FSM_MAX_ADDR PROTO_ADDR_MAX /* member addresses: on disk, so never shrinks */
/* Empty the member table: a backup restored into a new cluster (`fencelockd --restore`) must
 * not send clients to the old cluster's addresses; the new nodes announce themselves. */
void fsm_forget_members(struct fsm *f);
/* 1 and fill `v` if member `id` is in the table, else 0. */
int fsm_member_get(const struct fsm *f, uint64_t id, struct fsm_member_view *v);
/* In increasing id order. */
void fsm_foreach_member(const struct fsm *f, void (*cb)(void *arg, const struct fsm_member_view *v),
                        void *arg);

/*
 * data_bytes: the state's size as --max-data-bytes counts it, deterministic on every replica:
 * key + value bytes of every key, name bytes of every lock and session, plus
 * FSM_RECORD_BYTES for each key, lock, session, waiter and shared hold (about what a record costs
 * in memory and in a snapshot).
 */
#define FSM_RECORD_BYTES 128
struct fsm_stats {
    uint64_t sessions, locks_held, waiters, locks_in_delay, keys;
    uint64_t locks;        /* existing locks: held, in lock-delay or with waiters */
    uint64_t shared_holds; /* shared holds over all locks (locks_held counts exclusive ones) */
    uint64_t data_bytes;
    uint64_t key_bytes; /* the keys' part of data_bytes: key and value bytes, a record each */
};
void fsm_stats(const struct fsm *f, struct fsm_stats *s);

/* ---- lock history (src/fsm/history.c; LOCK.HISTORY) ----
 * Each grant of a lock, a semaphore's acquisition or an election's leadership, kept per name
 * newest first within replicated limits (HISTORY_LIMITS entries; off until one). Times are the
 * now_ms of the entries that granted and ended it (the leaders' clocks), revisions the state's. */
#define FSM_HIST_WAITERS 8              /* waiters kept per grant (n_waiters counts them all) */
#define FSM_HIST_PER_LOCK_MAX 65536u    /* --history-per-lock at most */
#define FSM_HIST_ENTRIES_MAX 100000000u /* --history-max-entries at most */
#define FSM_HIST_END_UPGRADE 255        /* end_op of a shared hold that became exclusive */
struct fsm_hist_waiter {
    uint64_t sid, waited_ms; /* queued at the grant, and for how long by then */
};
struct fsm_hist_entry {
    uint8_t kind;                      /* enum fsm_kind of the name at the grant */
    uint64_t sid, token;               /* the grantee and its token (= the grant's revision) */
    uint64_t granted_ms, waited_ms;    /* the grant's now_ms; how long the grantee had queued */
    uint32_t permits;                  /* a semaphore acquisition's; else 1 */
    uint64_t ended_rev, ended_ms;      /* 0 while held: the revision after the ending entry */
    const char *ended_by;              /* "" while held; "unlock", "expiry", ... (protocol.md) */
    uint64_t held_ms;                  /* ended_ms - granted_ms (0 while held) */
    struct fsm_str session_name, user; /* as the session had them at the grant (borrowed) */
    struct fsm_str value; /* a lock grant's value (LOCK ... VALUE, lockmeta.c); else empty */
    const struct trace_ctx *trace;         /* the grantee's request's traceparent, NULL if none */
    const struct trace_ctx *end_trace;     /* the ending command's traceparent, NULL if none */
    uint32_t n_waiters, n_shown;           /* queued at the grant; the first n_shown in waiters[] */
    const struct fsm_hist_waiter *waiters; /* borrowed, in the order they queued */
};
#define FSM_HIST_OFF (-1)       /* the history is off (limits 0) */
#define FSM_HIST_COMPACTED (-2) /* the range asked was dropped (*compacted: newest dropped) */
/* Calls cb for up to `count` entries of `name` with a token below `before` (0: no bound),
 * newest first; returns how many, or FSM_HIST_OFF / FSM_HIST_COMPACTED when nothing is kept
 * in the range and some of it was dropped. *compacted: the newest token dropped for the name
 * (the whole history's for a name without any kept). Borrowed views, valid during cb. */
int fsm_lock_history(const struct fsm *f, const char *name, size_t len, uint64_t before,
                     size_t count, void (*cb)(void *arg, const struct fsm_hist_entry *e), void *arg,
                     uint64_t *compacted);
/* The replicated limits in force (both 0: off). */
void fsm_history_limits(const struct fsm *f, uint64_t *per_lock, uint64_t *max_entries);
struct fsm_hist_stats {
    uint64_t entries, names, waits; /* grants kept, names with a record, pending waits */
    uint64_t bytes;                 /* the records' malloc sizes (without allocator overhead) */
    uint64_t compacted;             /* the newest token dropped anywhere */
};
void fsm_history_stats(const struct fsm *f, struct fsm_hist_stats *s);

/* 0 if every invariant in the header comment holds, else -1 with a message. For tests. */
int fsm_check_invariants(const struct fsm *f, char *err, size_t errlen);

/* A printable, truncated copy of a name for error texts: NUL-terminated, at most outlen bytes
 * with the NUL, FSM_ELLIPSIS at the end if cut (outlen > sizeof(FSM_ELLIPSIS)). Callers use a
 * buffer of FSM_NAME_SHOWN bytes; the server uses it too, so a name reads the same in every
 * error whether the FSM or the server wrote it. */
#define FSM_NAME_SHOWN 64
#define FSM_ELLIPSIS "..."
const char *fsm_printable(const char *p, size_t n, char *out, size_t outlen);

#endif
