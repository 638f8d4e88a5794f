/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease — the leader's deadline rules, as a pure module: it never reads a clock (every call
 * takes `now`, monotonic ms), performs no I/O and proposes nothing; it answers with actions
 * that the server carries out (server/lease/timers.c).
 *
 * Owns (struct lease): the deadline tables, derived from FSM events on every node so that a
 * new leader has them already, and one heap of their deadlines:
 *   sessions  sid       -> struct lease_sess  (ttl, expiry deadline, checkpoint deadline)
 *   waits     name+sid  -> struct lease_wait  (WAIT bound, deadline, when it started)
 *   delays    name      -> struct lease_delay (lock-delay, deadline)
 *   revokes   name      -> struct lease_revoke (a revoke's grant and deadline)
 *   maxholds  name      -> struct lease_revoke (a grant's max hold and its deadline)
 * Every entry is owned and freed by the module; pointers and names it hands out are borrowed,
 * valid until the next call that changes the tables.
 *
 * Invariants: deadlines are acted on only while leading (between lease_takeover and
 * lease_step_down); at takeover every deadline restarts at its full length, a session's at
 * what an earlier leader checkpointed as left if that is shorter (never early after a
 * fail-over); a max hold keeps the deadline this node armed when it applied the grant (its
 * apply came after the old leader's commit: never early, and late only by the replication
 * lag). An entry's timer is queued unless its action is in flight (expiring,
 * cancelling, ending). A failed allocation never loses a deadline silently: the module marks
 * itself damaged, and lease_repair plus a re-derivation from the FSM restore it (later, never
 * earlier, than the lost deadline).
 */
#ifndef FENCELOCK_LEASE_H
#define FENCELOCK_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/map.h"
#include "server/lease/heap.h"

/* A failed expiry / WAIT-cancel / lock-delay-end proposal is tried again this much later. */
#define LEASE_RETRY_MS 10

enum lease_kind {
    LEASE_SESSION = 1,
    LEASE_WAIT = 2,
    LEASE_DELAY = 3,
    LEASE_CHECKPOINT = 4,
    LEASE_REVOKE = 5,
    LEASE_MAXHOLD = 6
};

/*
 * A session's lease. `t` is its expiry deadline; for sessions with a TTL of at least the
 * checkpoint minimum, `ck` fires half-way through an idle lease and asks for a checkpoint of
 * what is left, so that a later leader does not hand an abandoned session a full TTL again.
 * A keepalive after a checkpoint is acknowledged only once a clearing checkpoint committed,
 * so no leader can later apply a stale, shorter lease to a live client.
 */
struct lease_sess {
    struct heap_item t;
    struct heap_item ck;
    uint64_t sid, ttl_ms;
    bool expiring;    /* an expiry proposal is in flight */
    bool ck_inflight; /* a checkpoint proposal is in flight */
};

struct lease_wait {
    struct heap_item t;
    uint64_t sid, wait_ms, started_ms;
    bool cancelling; /* a CANCEL_WAIT proposal is in flight */
    size_t keylen;
    char key[]; /* name + 8-byte sid: the map key */
};

struct lease_delay {
    struct heap_item t;
    uint64_t delay_ms;
    bool ending; /* a LOCKDELAY_END proposal is in flight */
    size_t namelen;
    char name[];
};

/* A pending revoke with a deadline (LOCK.REVOKE ... DEADLINE): REVOKE_END(name, token) is
 * proposed when it passes. A second revoke of the same grant restarts it at the FSM's new
 * deadline (which the leader merged with what was left: lease_revoke_left). */
struct lease_revoke {
    struct heap_item t;
    uint64_t token, deadline_ms; /* deadline_ms: the FSM's stored one, for a takeover */
    bool ending;                 /* a REVOKE_END proposal is in flight */
    size_t namelen;
    char name[];
};

struct lease {
    struct map sessions, waits, delays, revokes, maxholds;
    struct heap timers;
    struct buf scratch;
    uint64_t checkpoint_min_ttl;
    bool leading; /* a ready leader: deadlines are acted on */
    bool damaged; /* an allocation failed: lease_repair and a re-derivation are due */
};

/* What the server must do now. `key` (wait: name+sid; delay: name) is borrowed. */
struct lease_action {
    enum lease_kind kind; /* SESSION: propose expiry; WAIT: cancel; DELAY: end; CHECKPOINT;
                             REVOKE: end the grant `token` */
    uint64_t sid;
    uint64_t token;        /* REVOKE, MAXHOLD */
    uint64_t remaining_ms; /* CHECKPOINT: what is left of the lease */
    const char *key;
    size_t keylen;
    const char *name; /* WAIT, DELAY, REVOKE: the lock name (a prefix of key for a WAIT) */
    size_t namelen;
};

/* What a keepalive gets. */
enum lease_ka {
    LEASE_KA_NOSESSION, /* not alive here (unknown, or its expiry is in flight) */
    LEASE_KA_ANSWER,    /* answer the TTL now */
    LEASE_KA_CLEAR,     /* propose a clearing checkpoint (remaining 0), answer once it applied */
};

void lease_init(struct lease *l, uint64_t checkpoint_min_ttl);
void lease_free(struct lease *l);
/* Forget every entry (the FSM was replaced by a snapshot; the caller derives them again). */
void lease_clear(struct lease *l);

/* ---- FSM events (every node). The adds return 0, or -1 with the module marked damaged. ---- */
int lease_session_opened(struct lease *l, uint64_t sid, uint64_t ttl_ms, uint64_t now);
void lease_session_ended(struct lease *l, uint64_t sid);
int lease_wait_started(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                       uint64_t wait_ms, uint64_t now);
/* A wait ended (granted or removed): how long it waited (ms), or -1 if there was none. */
int64_t lease_wait_ended(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                         uint64_t now);
/* A LOCK retry by a session already queued: its new WAIT bound is the one that counts. */
int lease_wait_refresh(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                       uint64_t wait_ms, uint64_t now);
int lease_delay_started(struct lease *l, const char *name, size_t namelen, uint64_t delay_ms,
                        uint64_t now);
void lease_delay_ended(struct lease *l, const char *name, size_t namelen);
/* A revoke of grant `token` of lock `name` applied (FSM REVOKE_REQUESTED): its deadline is
 * `deadline_ms` from now, the FSM's stored one that the event tells the holder. A second revoke
 * of the same grant restarts the countdown at it: the leader merged it with what was left on
 * its clock before it proposed (lease_revoke_left; docs/protocol.md "Revocation"), so the
 * holder and the leader count to the same instant. */
int lease_revoke_started(struct lease *l, const char *name, size_t namelen, uint64_t token,
                         uint64_t deadline_ms, uint64_t now);
/* On a leading node: what is left at `now` of grant `token`'s armed revoke deadline (at least
 * 1 ms: a due one ends at the next tick) in *left; false if none is armed (no revoke with a
 * deadline, another grant's, or its REVOKE_END is in flight). */
bool lease_revoke_left(struct lease *l, const char *name, size_t namelen, uint64_t token,
                       uint64_t now, uint64_t *left);
/* Grant `token` of `name` ended (RELEASED): its revoke deadline, if any, goes. */
void lease_revoke_ended(struct lease *l, const char *name, size_t namelen, uint64_t token);
int lease_revoke_ensure(struct lease *l, const char *name, size_t namelen, uint64_t token,
                        uint64_t deadline_ms, uint64_t now);

/* Grant `token` of lock `name` has a max hold of maxhold_ms (FSM GRANTED): its deadline is
 * now + maxhold_ms on this node's clock, kept across takeovers. _ended: the grant ended
 * (RELEASED). _ensure: derived from the FSM after a restore or a repair (full length from now). */
int lease_maxhold_started(struct lease *l, const char *name, size_t namelen, uint64_t token,
                          uint64_t maxhold_ms, uint64_t now);
void lease_maxhold_ended(struct lease *l, const char *name, size_t namelen, uint64_t token);
int lease_maxhold_ensure(struct lease *l, const char *name, size_t namelen, uint64_t token,
                         uint64_t maxhold_ms, uint64_t now);

/* ---- queries ---- */
/* The session is known here and no expiry of it is in flight. */
bool lease_session_live(struct lease *l, uint64_t sid);
/* The session's entry, or NULL (borrowed). */
const struct lease_sess *lease_session(struct lease *l, uint64_t sid);
/* Milliseconds until the session's deadline (0 when unknown, passed or in flight). */
uint64_t lease_session_remaining(struct lease *l, uint64_t sid, uint64_t now);
/* The earliest deadline, or UINT64_MAX when none (what the uv timer may wait for). */
uint64_t lease_next_deadline(const struct lease *l);

/* ---- leadership ---- */
/* Checkpointed remaining lease of a session in the FSM, 0 = none. */
typedef uint64_t (*lease_checkpoint_fn)(void *arg, uint64_t sid);
/* This node became a ready leader: every deadline restarts at full length from `now`. */
void lease_takeover(struct lease *l, uint64_t now, lease_checkpoint_fn ck, void *arg);
/* No longer leading: nothing fires, failed proposals are not retried, until a takeover. */
void lease_step_down(struct lease *l);

/* ---- the rules ---- */
/*
 * A keepalive of `sid` (after its read barrier): restarts the lease at `now`. `checkpointed`
 * is whether the FSM holds a checkpoint of it. *ttl_ms gets the TTL to answer.
 */
enum lease_ka lease_keepalive(struct lease *l, uint64_t sid, bool checkpointed, uint64_t now,
                              uint64_t *ttl_ms);
/* The next due action, if any (true): its in-flight flag is set, its timer dequeued. Call in a
 * loop until false. Nothing is due while not leading. */
bool lease_next(struct lease *l, uint64_t now, struct lease_action *a);
/* The action's proposal could not even be made: try again LEASE_RETRY_MS later (still in
 * flight meanwhile, so the session counts as expiring). CHECKPOINT: nothing to do. */
void lease_propose_failed(struct lease *l, const struct lease_action *a, uint64_t now);
/* An expiry / cancel / delay-end proposal completed unsuccessfully: no longer in flight,
 * tried again LEASE_RETRY_MS later if still leading. Success needs no call (the applied
 * events update the tables). */
void lease_duty_failed(struct lease *l, enum lease_kind kind, uint64_t sid, const char *key,
                       size_t keylen, uint64_t now);
/* A checkpoint proposal of `sid` was made / completed (either outcome). */
void lease_checkpoint_proposed(struct lease *l, uint64_t sid);
void lease_checkpoint_done(struct lease *l, uint64_t sid);

/* ---- allocation failures ---- */
bool lease_damaged(const struct lease *l);
/* Queue again every entry left unqueued by a failed allocation, at its full length from `now`
 * (never early); clears the damage mark (set again if it fails again). The caller then derives
 * the entries again from the FSM with the *_ensure calls below. */
void lease_repair(struct lease *l, uint64_t now);
int lease_session_ensure(struct lease *l, uint64_t sid, uint64_t ttl_ms, uint64_t now);
int lease_wait_ensure(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                      uint64_t wait_ms, uint64_t now);
int lease_delay_ensure(struct lease *l, const char *name, size_t namelen, uint64_t delay_ms,
                       uint64_t now);

#endif
