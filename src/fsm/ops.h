/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/ops.h — the op descriptor: one row per replicated op, one field list per payload.
 *
 * Owns everything known about an op except what applying it does: its value (the op byte on
 * disk: never reused or renumbered), its name, the log format that introduced it, its
 * payload's fields in wire order with their bounds, the field naming the session it acts on,
 * and how it can grow the state. What used to list the ops reads it: enum fsm_op and the
 * payload structs (fsm.h), the encoder, decoder and layout (codec.c walks the field list), the
 * ownership rule (owner.c), the entry format (format.c); in the server, the REQ rule (cmd.c),
 * the quotas (quota.c) and the upgrade gate (cluster/format.c). Adding an op: a row in FSM_OPS
 * (a field list in FSM_PAYLOAD_* and FSM_PAYLOADS if its payload is new), then its apply
 * handler in fsm.c's dispatch, a switch without default: -Wswitch-enum makes a missed op a
 * compile error. tests/unit/test_fsm_ops.c walks every row through ownership, quotas and
 * formats.
 *
 * Included by fsm.h only, after struct fsm_str and struct fsm_kv_cond. Macros and types only:
 * the tables they generate are in ops.c.
 */
#ifndef FENCELOCK_FSM_OPS_H
#define FENCELOCK_FSM_OPS_H

/*
 * Field kinds: a field's C type, wire form and bounds (the decoder refuses a value out of
 * them with "ERR bad entry: <what> ..."; the encoder writes what it is given). varint =
 * LEB128, shortest form only; str = varint length, then the bytes.
 */
enum fsm_field_kind {
    FSM_F_U64,    /* varint */
    FSM_F_SID,    /* varint: the session the op acts on (0 = none); at most one per payload */
    FSM_F_WAIT,   /* varint: ms the op may queue (0 = try only); the payload's last field */
    FSM_F_ID,     /* varint > 0: a member id */
    FSM_F_NAME,   /* str 1..FSM_MAX_NAME: a lock, semaphore or election name, or a key */
    FSM_F_LABEL,  /* str 0..FSM_MAX_NAME */
    FSM_F_VALUE,  /* str 0..FSM_MAX_VALUE: a key's value */
    FSM_F_EVALUE, /* str 0..FSM_MAX_ELECT_VALUE: an election's value */
    FSM_F_ADDR,   /* str 1..FSM_MAX_ADDR */
    FSM_F_COND,   /* u8 flags (bit 0 fence, bit 1 ifrev, others 0), [str fence_name (1..
                     FSM_MAX_NAME), varint fence_token], [varint ifrev] */
    FSM_F_NAMES,  /* varint n (1..FSM_MAX_MULTI_NAMES), then n times: u8 mode (0 exclusive,
                     1 shared), str name (1..FSM_MAX_NAME); names strictly increasing */
    FSM_F_TXN,    /* a TXN's compares and ops (txn.c): varint ncmp, varint nthen, varint nelse
                     (their sum 1..FSM_MAX_TXN_ITEMS), then that many entries, each u8 type,
                     u8 rel, str name (1..FSM_MAX_NAME), varint n, str value (0..FSM_MAX_VALUE);
                     compare types first, then THEN's ops, then ELSE's; fields a type does not
                     use are 0 / empty */
};
#define FSM_CTYPE_U64 uint64_t
#define FSM_CTYPE_SID uint64_t
#define FSM_CTYPE_WAIT uint64_t
#define FSM_CTYPE_ID uint64_t
#define FSM_CTYPE_NAME struct fsm_str
#define FSM_CTYPE_LABEL struct fsm_str
#define FSM_CTYPE_VALUE struct fsm_str
#define FSM_CTYPE_EVALUE struct fsm_str
#define FSM_CTYPE_ADDR struct fsm_str
#define FSM_CTYPE_COND struct fsm_kv_cond
#define FSM_CTYPE_NAMES struct fsm_names
#define FSM_CTYPE_TXN struct fsm_txn

/*
 * The payloads: F(payload, kind, member, what) per field, in wire order. `what` names the
 * field in a decode error ("ERR bad entry: lock name empty"); those texts are replies: keep
 * them. fsm.h declares struct fsm_cmd_<payload> from each list.
 */
#define FSM_PAYLOAD_session_open(F, p)                                                             \
    F(p, U64, ttl_ms, "ttl")             /* >= 1, else the apply answers ERR */                    \
    F(p, U64, lockdelay_ms, "lockdelay") /* lock-delay its held locks get when it expires */       \
    F(p, LABEL, name, "session name")    /* informational */
/* SESSION_CLOSE, SESSION_EXPIRE and SESSION_REVOKE */
#define FSM_PAYLOAD_session_end(F, p) F(p, SID, sid, "sid")
#define FSM_PAYLOAD_session_checkpoint(F, p)                                                       \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, remaining_ms, "remaining") /* the lease the leader measured as left; 0 (or >= ttl)   \
                                            clears */
/* LOCK, LOCK_SHARED and LOCK_NOTIFY */
#define FSM_PAYLOAD_lock(F, p)                                                                     \
    F(p, NAME, name, "lock name") F(p, SID, sid, "sid") F(p, WAIT, wait_ms, "wait")
/* UNLOCK, CANCEL_WAIT, SEM_RELEASE, ELECT_RESIGN: a session and what it holds or waits for */
#define FSM_PAYLOAD_lock_ref(F, p) F(p, NAME, name, "lock name") F(p, SID, sid, "sid")
#define FSM_PAYLOAD_lockdelay_end(F, p) F(p, NAME, name, "lock name")
#define FSM_PAYLOAD_put(F, p)                                                                      \
    F(p, NAME, key, "key")                                                                         \
    F(p, VALUE, value, "value")                                                                    \
    F(p, SID, lease_sid, "lease") /* attach the key to this session (0 = none) */                  \
    F(p, COND, cond, "cond")
#define FSM_PAYLOAD_del(F, p) F(p, NAME, key, "key") F(p, COND, cond, "cond")
#define FSM_PAYLOAD_member_set(F, p)                                                               \
    F(p, ID, id, "member id")                                                                      \
    F(p, ADDR, client_addr, "member client address")                                               \
    F(p, ADDR, raft_addr, "member raft address")
#define FSM_PAYLOAD_member_del(F, p) F(p, ID, id, "member id")
/* MEMBER_HTTP (member_http.c): where a member's HTTP port is reached, for a follower's 307 */
#define FSM_PAYLOAD_member_http(F, p)                                                              \
    F(p, ID, id, "member id")                                                                      \
    F(p, ADDR, http_addr, "member http address")                                                   \
    F(p, U64, flags, "member http flags") /* FSM_MEMBER_HTTP_TLS; others 0, else ERR */
#define FSM_PAYLOAD_sem_acquire(F, p)                                                              \
    F(p, NAME, name, "semaphore name")                                                             \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, limit, "limit") /* 1..FSM_MAX_SEM_LIMIT (the apply answers ERR otherwise) */         \
    F(p, WAIT, wait_ms, "wait")
/* SEM_ACQUIRE_W: SEM_ACQUIRE for `permits` permits at once (sem.c) */
#define FSM_PAYLOAD_sem_acquire_w(F, p)                                                            \
    F(p, NAME, name, "semaphore name")                                                             \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, limit, "limit")     /* 1..FSM_MAX_SEM_LIMIT (the apply answers ERR otherwise) */     \
    F(p, U64, permits, "permits") /* 1..limit (the apply answers ERR otherwise) */                 \
    F(p, WAIT, wait_ms, "wait")
/* SEM_SETLIMIT: an operator's new limit for an existing semaphore (sem.c) */
#define FSM_PAYLOAD_sem_setlimit(F, p)                                                             \
    F(p, NAME, name, "semaphore name") F(p, U64, limit, "limit") /* 1..FSM_MAX_SEM_LIMIT */
#define FSM_PAYLOAD_elect_campaign(F, p)                                                           \
    F(p, NAME, name, "election name")                                                              \
    F(p, SID, sid, "sid")                                                                          \
    F(p, EVALUE, value, "value")                                                                   \
    F(p, WAIT, wait_ms, "wait")
#define FSM_PAYLOAD_elect_proclaim(F, p)                                                           \
    F(p, NAME, name, "election name")                                                              \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, token, "token") /* must be the current leader's */                                   \
    F(p, EVALUE, value, "value")
/* LOCK_MULTI: several locks at once, each exclusive or shared (multi.c) */
#define FSM_PAYLOAD_lock_multi(F, p)                                                               \
    F(p, SID, sid, "sid") F(p, NAMES, names, "lock names") F(p, WAIT, wait_ms, "wait")
/* INCR: a counter key (its value a signed 64-bit decimal) plus `by`, an int64_t in two's
   complement (a negative step is a 10-byte varint); cond as PUT's (counter.c) */
#define FSM_PAYLOAD_incr(F, p) F(p, NAME, key, "key") F(p, U64, by, "by") F(p, COND, cond, "cond")
/* FSM_FORMAT_2..FSM_FORMAT_MAX (the apply answers ERR otherwise) */
#define FSM_PAYLOAD_cluster_format(F, p) F(p, U64, format, "format")
/* LOCK_REVOKE (revoke.c): no SID field: it acts on whoever holds the lock, not as a session */
#define FSM_PAYLOAD_lock_revoke(F, p)                                                              \
    F(p, NAME, name, "lock name")                                                                  \
    F(p, U64, deadline_ms, "deadline") /* 0: ask only; else the leader releases that grant this    \
                                          long after the entry applied, if it is still held */     \
    F(p, LABEL, reason, "revoke reason")                                                           \
    F(p, LABEL, by, "revoke requester") /* the asking user (or address), shown to the holder */
/* REVOKE_END (revoke.c): the leader's revoke deadline of grant `token` passed */
#define FSM_PAYLOAD_revoke_end(F, p) F(p, NAME, name, "lock name") F(p, U64, token, "token")
/* LOCK_META (lockmeta.c): LOCK with a value and a max hold (LOCK ... VALUE v MAXHOLD ms) */
#define FSM_PAYLOAD_lock_meta(F, p)                                                                \
    F(p, NAME, name, "lock name")                                                                  \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, flags, "lock flags") /* bit 0: NOTIFY (as LOCK_NOTIFY); others 0, else ERR */        \
    F(p, EVALUE, value, "lock value")                                                              \
    F(p, U64, maxhold_ms, "max hold") /* 0: none; else 1..FSM_MAX_MAXHOLD_MS, else ERR */          \
    F(p, WAIT, wait_ms, "wait")
/* MAXHOLD_END (lockmeta.c): the leader's max-hold deadline of grant `token` passed */
#define FSM_PAYLOAD_maxhold_end(F, p) F(p, NAME, name, "lock name") F(p, U64, token, "token")
/* SESSION_OPEN_REENTRANT (reent.c): SESSION_OPEN's fields, then the most holds a LOCK of the
   session counts on one lock (1..FSM_MAX_HOLD_COUNT, the apply answers ERR otherwise) */
#define FSM_PAYLOAD_session_open_r(F, p)                                                           \
    F(p, U64, ttl_ms, "ttl")                                                                       \
    F(p, U64, lockdelay_ms, "lockdelay")                                                           \
    F(p, LABEL, name, "session name")                                                              \
    F(p, U64, max_count, "max count")
/* DEADLOCK_LIMIT (waitgraph.c): the deadlock search limit every replica uses from here on */
#define FSM_PAYLOAD_deadlock_limit(F, p) F(p, U64, limit, "deadlock search limit")
/* HISTORY_LIMITS (history.c): the lock history's bounds every replica keeps from here on */
#define FSM_PAYLOAD_history_limits(F, p)                                                           \
    F(p, U64, per_lock, "history per lock") F(p, U64, max_entries, "history max entries")

/* LATCH_CREATE (latch.c): a countdown latch of `count` counts */
#define FSM_PAYLOAD_latch_create(F, p)                                                             \
    F(p, NAME, name, "latch name")                                                                 \
    F(p, U64, count, "count") /* 1..FSM_MAX_LATCH_COUNT (the apply answers ERR otherwise) */
/* LATCH_JOIN, LATCH_COUNTDOWN (latch.c) */
#define FSM_PAYLOAD_latch_ref(F, p) F(p, NAME, name, "latch name") F(p, SID, sid, "sid")
/* LATCH_DELETE (latch.c): a latch or a barrier */
#define FSM_PAYLOAD_latch_delete(F, p) F(p, NAME, name, "latch name")
/* BARRIER (latch.c): a double barrier's enter (leave 0) or leave (leave 1) */
#define FSM_PAYLOAD_barrier(F, p)                                                                  \
    F(p, NAME, name, "barrier name")                                                               \
    F(p, SID, sid, "sid")                                                                          \
    F(p, U64, count, "count") /* enter: 1..FSM_MAX_LATCH_COUNT; leave: 0 */                        \
    F(p, U64, leave, "leave") /* 0 enter, 1 leave (the apply answers ERR otherwise) */
/* SEM_LIMIT_RESET (semlimit.c): remove the operator's limit of a semaphore name */
#define FSM_PAYLOAD_sem_limit_reset(F, p) F(p, NAME, name, "semaphore name")

/* TXN (txn.c): compares, then the ops of the branch they select, in one entry; cond: FENCE only
   (an IFREV bit: the apply answers ERR) */
#define FSM_PAYLOAD_txn(F, p) F(p, TXN, txn, "txn") F(p, COND, cond, "cond")

/* Every payload above (NOOP's is struct fsm_cmd_none, which has no fields). */
/* clang-format off: it does not reach a fixed point on this list */
#define FSM_PAYLOADS(P)                                                                            \
    P(session_open)                                                                                \
    P(session_end)                                                                                 \
    P(session_checkpoint)                                                                          \
    P(lock)                                                                                        \
    P(lock_ref)                                                                                    \
    P(lockdelay_end)                                                                               \
    P(put)                                                                                         \
    P(del)                                                                                         \
    P(member_set)                                                                                  \
    P(member_del)                                                                                  \
    P(sem_acquire)                                                                                 \
    P(elect_campaign)                                                                              \
    P(elect_proclaim)                                                                              \
    P(cluster_format)                                                                              \
    P(lock_multi)                                                                                  \
    P(lock_revoke)                                                                                 \
    P(revoke_end)                                                                                  \
    P(deadlock_limit)                                                                              \
    P(incr)                                                                                        \
    P(sem_acquire_w)                                                                               \
    P(sem_setlimit)                                                                                \
    P(lock_meta)                                                                                   \
    P(maxhold_end)                                                                                 \
    P(session_open_r)                                                                              \
    P(latch_create)                                                                                \
    P(latch_ref)                                                                                   \
    P(latch_delete)                                                                                \
    P(barrier)                                                                                     \
    P(history_limits)                                                                              \
    P(txn)                                                                                         \
    P(sem_limit_reset)                                                                             \
    P(member_http)
/* clang-format on */

/* How an op can grow the state, by the measures of the server's quotas (--max-sessions ...,
 * --max-data-bytes: fsm_stats). The server reserves the worst case before it proposes. */
enum fsm_grow {
    FSM_GROW_NONE,    /* frees, or changes bookkeeping only: never refused by a quota */
    FSM_GROW_SESSION, /* a session and its LABEL (its name) */
    FSM_GROW_LOCK,    /* a lock (its NAME) if absent, else a waiter; plus its EVALUE if any */
    FSM_GROW_SHARED,  /* as LOCK, plus a shared hold's record when granted */
    FSM_GROW_VALUE,   /* its EVALUE's bytes (at most: the old value is freed) */
    FSM_GROW_KEY,     /* a key (NAME and VALUE), or the growth of the key's value */
    FSM_GROW_MULTI,   /* per NAMES entry, as LOCK (SHARED for a shared one) */
    FSM_GROW_LATCH,   /* a latch or barrier (its NAME) if absent, plus a participant record */
    FSM_GROW_SEMLIM,  /* an operator's semaphore limit (its NAME) if absent: as a lock */
    FSM_GROW_TXN,     /* per PUT / INCR of a branch, as KEY; the larger branch counts */
};

/*
 * The ops: X(OP, value, member, payload, format, grow, admin), the reply after the row.
 *   OP       FSM_OP_<OP>; "<OP>" is its name (fsm_op_name)
 *   value    the op byte on disk: never reused (19 never was an op, 28 is none yet: the decoder
 *            rejects them)
 *   member   its payload's member in struct fsm_cmd, of type struct fsm_cmd_<payload>
 *   format   the log format that introduced it: the leader writes it only once the cluster's
 *            format is at least that (1: the previous release; 2: this one)
 *   grow     enum fsm_grow without the prefix
 *   admin    1: an admin may run it on another user's session (a forced release); acting *as*
 *            another user's session stays its owner's alone, admin or not
 */
#define FSM_OPS(X)                                                                                 \
    /* -> OK; changes nothing (leader term start) */                                               \
    X(NOOP, 0, noop, none, 1, NONE, 0)                                                             \
    /* -> INT sid */                                                                               \
    X(SESSION_OPEN, 1, session_open, session_open, 1, SESSION, 0)                                  \
    /* -> OK; releases locks (no lock-delay), drops waits, keys */                                 \
    X(SESSION_CLOSE, 2, session_close, session_end, 1, NONE, 1)                                    \
    /* -> OK; as close, but starts lock-delay on held locks */                                     \
    X(SESSION_EXPIRE, 3, session_expire, session_end, 1, NONE, 0)                                  \
    /* -> INT token | QUEUED | NIL */                                                              \
    X(LOCK, 4, lock, lock, 1, LOCK, 0)                                                             \
    /* -> OK (released, or left the queue) | NOTHOLDER */                                          \
    X(UNLOCK, 5, unlock, lock_ref, 1, NONE, 1)                                                     \
    /* -> NIL if the waiter was removed (or was not queued), INT token if it already holds the     \
       lock (the grant won the race), ERR NOSESSION if the session is gone */                      \
    X(CANCEL_WAIT, 6, cancel_wait, lock_ref, 1, NONE, 0)                                           \
    /* -> OK; ends lock-delay, grants the next waiter */                                           \
    X(LOCKDELAY_END, 7, lockdelay_end, lockdelay_end, 1, NONE, 0)                                  \
    /* -> INT revision */                                                                          \
    X(PUT, 8, put, put, 1, KEY, 0)                                                                 \
    /* -> INT deleted count (0 or 1) */                                                            \
    X(DEL, 9, del, del, 1, NONE, 0)                                                                \
    /* -> OK; replaces the member's entry */                                                       \
    X(MEMBER_SET, 10, member_set, member_set, 1, NONE, 0)                                          \
    /* -> INT 1 if removed, 0 if absent */                                                         \
    X(MEMBER_DEL, 11, member_del, member_del, 1, NONE, 0)                                          \
    /* -> OK; lease bookkeeping: no revision bump. A new leader arms min(ttl, checkpoint)          \
       instead of ttl, so an abandoned session ends although leaders change. */                    \
    X(SESSION_CHECKPOINT, 12, session_checkpoint, session_checkpoint, 1, NONE, 0)                  \
    /* -> INT token | QUEUED | NIL; the lock in shared mode (read-write locks, lock.c) */          \
    X(LOCK_SHARED, 13, lock_shared, lock, 1, SHARED, 0)                                            \
    /* -> INT token | QUEUED | NIL (sem.c) */                                                      \
    X(SEM_ACQUIRE, 14, sem_acquire, sem_acquire, 2, SHARED, 0)                                     \
    /* -> OK (released, or left the queue) | NOTHOLDER */                                          \
    X(SEM_RELEASE, 15, sem_release, lock_ref, 2, NONE, 0)                                          \
    /* -> INT token (now leader) | QUEUED | NIL (elect.c) */                                       \
    X(ELECT_CAMPAIGN, 16, elect_campaign, elect_campaign, 2, LOCK, 0)                              \
    /* -> INT revision | STALE */                                                                  \
    X(ELECT_PROCLAIM, 17, elect_proclaim, elect_proclaim, 2, VALUE, 0)                             \
    /* -> OK (handed on, or left the candidates) | NOTHOLDER */                                    \
    X(ELECT_RESIGN, 18, elect_resign, lock_ref, 2, NONE, 0)                                        \
    /* -> OK; ends a session as an expiry does (lock-delay applies), its events marked revoked */  \
    X(SESSION_REVOKE, 20, session_revoke, session_end, 2, NONE, 1)                                 \
    /* -> OK; raises the cluster's log format (a lower one than the current: ERR, nothing          \
       changes; the same: OK, no revision). The leader writes it, as a version-1 entry, once       \
       every voter reads the new format. */                                                        \
    X(CLUSTER_FORMAT, 21, cluster_format, cluster_format, 2, NONE, 0)                              \
    /* -> INT the first token (the tokens are consecutive revisions, one per name in name          \
       order) | QUEUED | NIL: every name at once or none (multi.c) */                              \
    X(LOCK_MULTI, 22, lock_multi, lock_multi, 2, MULTI, 0)                                         \
    /* -> INT token of the grant asked to let go (its holder gets REVOKE_REQUESTED); ERR           \
       NOTHOLDER if nobody holds the lock exclusively (revoke.c) */                                \
    X(LOCK_REVOKE, 23, lock_revoke, lock_revoke, 2, NONE, 0)                                       \
    /* -> OK; releases grant `token` as an expiry does if it still holds the lock under a pending  \
       revoke with a deadline, else changes nothing (a stale timer) */                             \
    X(REVOKE_END, 24, revoke_end, revoke_end, 2, NONE, 0)                                          \
    /* -> as LOCK; a session it queues behind an exclusive holder tells that holder once           \
       (WAIT_NOTIFY: LOCK ... NOTIFY, revoke.c) */                                                 \
    X(LOCK_NOTIFY, 25, lock_notify, lock, 2, LOCK, 0)                                              \
    /* -> OK; sets the cluster's deadlock search limit (0: no detection; the same value: no        \
       revision; over FSM_DEADLOCK_LIMIT_MAX: ERR, nothing changes). The leader writes it when     \
       its --deadlock-search-limit differs from the replicated one (waitgraph.c) */                \
    X(DEADLOCK_LIMIT, 26, deadlock_limit, deadlock_limit, 2, NONE, 0)                              \
    /* -> INT the new value, an int64_t in two's complement | ERR (not an integer, overflow) |     \
       STALE | IFREV: nothing changes on an error (counter.c) */                                   \
    X(INCR, 27, incr, incr, 2, KEY, 0)                                                             \
    /* (28: not an op; the decoder rejects it as it does 19) */                                    \
    /* -> OK (the limit changed, or was already that) | NIL (no such semaphore); holders above a   \
       lower limit keep their permits (sem.c); an operator's limit of the name follows it. The     \
       server proposes SEM_LIMIT_SET instead now: this op stays for the log's older entries */     \
    X(SEM_SETLIMIT, 29, sem_setlimit, sem_setlimit, 2, NONE, 0)                                    \
    /* -> INT token | QUEUED | NIL: `permits` permits in one acquisition (sem.c) */                \
    X(SEM_ACQUIRE_W, 30, sem_acquire_w, sem_acquire_w, 2, SHARED, 0)                               \
    /* -> as LOCK (exclusive only); the grant carries the value and the max hold; a queued         \
       request keeps them until granted; a LOCK by the holder changes neither (lockmeta.c) */      \
    X(LOCK_META, 31, lock_meta, lock_meta, 2, LOCK, 0)                                             \
    /* -> OK; releases grant `token` as an expiry does if it still holds the lock and has a max    \
       hold, else changes nothing (a stale timer) (lockmeta.c) */                                  \
    X(MAXHOLD_END, 32, maxhold_end, maxhold_end, 2, NONE, 0)                                       \
    /* -> INT sid: a reentrant session, whose LOCK of a lock it holds counts up (reent.c) */       \
    X(SESSION_OPEN_REENTRANT, 34, session_open_reentrant, session_open_r, 2, SESSION, 0)           \
    /* -> OK (created, or the same count again) | ERR (another count) | BROKEN (latch.c) */        \
    X(LATCH_CREATE, 36, latch_create, latch_create, 2, LATCH, 0)                                   \
    /* -> OK: the session promises one count-down | ERR | BROKEN (latch.c) */                      \
    X(LATCH_JOIN, 37, latch_join, latch_ref, 2, LATCH, 0)                                          \
    /* -> INT the counts left | ERR | BROKEN (latch.c) */                                          \
    X(LATCH_COUNTDOWN, 38, latch_countdown, latch_ref, 2, NONE, 0)                                 \
    /* -> INT 1 if a latch or barrier was deleted, 0 if absent (latch.c) */                        \
    X(LATCH_DELETE, 39, latch_delete, latch_delete, 2, NONE, 0)                                    \
    /* -> OK (enter: the barrier is full; leave: everybody left) | INT sessions it still waits     \
       for | ERR | BROKEN (latch.c) */                                                             \
    X(BARRIER, 40, barrier, barrier, 2, LATCH, 0)                                                  \
    /* -> OK; sets the lock history's limits (either 0: both 0, off, all history dropped; the      \
       same: no revision; over FSM_HIST_*_MAX: ERR, nothing changes); lower ones drop the oldest   \
       entries at once. The leader writes it when its --history-* flags differ (history.c) */      \
    X(HISTORY_LIMITS, 41, history_limits, history_limits, 2, NONE, 0)                              \
    /* -> INT (last revision << 1 | 1 if THEN ran), each op's result beside it (fsm_reply.txn) |   \
       STALE (FENCE) | ERR: every compare, then all of one branch's ops or none, a revision per    \
       change (txn.c) */                                                                           \
    X(TXN, 42, txn, txn, 2, TXN, 0)                                                                \
    /* (43: handed out with 42, not needed: no op; the decoder rejects it) */                      \
    /* -> OK: the operator's limit of the semaphore name, kept while set, whether or not the       \
       semaphore exists; it wins over the acquirers' limit (semlimit.c) | ERR | WRONGTYPE */       \
    X(SEM_LIMIT_SET, 44, sem_limit_set, sem_setlimit, 2, SEMLIM, 0)                                \
    /* -> INT 1 if the operator's limit of the name was removed, 0 if there was none */            \
    X(SEM_LIMIT_RESET, 45, sem_limit_reset, sem_limit_reset, 2, NONE, 0)                           \
    /* -> OK; sets member `id`'s HTTP address and flags (the same: no revision); ERR if the id     \
       has no entry (MEMBER_SET first) or a flag is unknown: nothing changes (member_http.c) */    \
    X(MEMBER_HTTP, 46, member_http, member_http, 2, NONE, 0)

#endif
