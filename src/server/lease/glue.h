/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease glue — what carries the pure lease rules (lease.h) out in the world: timers.c reads the
 * clock, feeds the lease the FSM's events, carries out its actions and is the one way the
 * server proposes; parked.c holds LOCK ... WAIT requests until their wait ends.
 *
 * Owns (struct srv_leases, in struct srv as `leases`): the lease rules' state and the parked
 * LOCK requests (name+sid -> slots). (The hold histogram reads RELEASED's held_ms: no table.)
 * Parked slots stay owned by their connection; the table only lists them.
 */
#ifndef FENCELOCK_LEASE_GLUE_H
#define FENCELOCK_LEASE_GLUE_H

#include <stdint.h>

#include "common/buf.h"
#include "common/map.h"
#include "fsm/fsm.h"
#include "raft/rn.h"
#include "server/lease/lease.h"

struct srv;
struct srv_slot;

struct srv_leases {
    struct lease rules; /* deadline tables and rules (lease.h; timers.c drives it) */
    struct map parked;  /* name+sid -> parked LOCK slots (parked.c) */
};

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

#endif
