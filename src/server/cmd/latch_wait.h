/* SPDX-License-Identifier: Apache-2.0 */
/*
 * latch_wait.h — LATCH.WAIT and BARRIER.ENTER / BARRIER.LEAVE ... WAIT requests parked on the
 * leader until the latch or barrier they wait for reaches its state (cmd/cmd_latch.c).
 *
 * Owns (struct srv_latch_waits, in struct srv as `latchw`): every parked request, on one list
 * (timeouts, step-down, shutdown) and on its name's list, reached through `by_name` (name ->
 * the first waiter of that name), so an applied latch or barrier event answers its waiters in
 * O(1) each and touches no other name's. A waiter owns its copy of the name; its slot stays
 * owned by its connection and is answered through srv_slot_done. The FSM knows no waiter: the
 * events of src/fsm/latch.c (LATCH_ZERO, LATCH_BROKEN, BARRIER_FULL, BARRIER_DONE,
 * BARRIER_BROKEN, LATCH_DELETED) wake them, on the node they are parked on.
 */
#ifndef FENCELOCK_CMD_LATCH_WAIT_H
#define FENCELOCK_CMD_LATCH_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/map.h"
#include "fsm/fsm.h"

struct srv;
struct latch_waiter;

struct srv_latch_waits {
    struct latch_waiter *all; /* every parked request */
    size_t n;
    struct map by_name; /* name -> its first waiter (struct latch_waiter *) */
};

/* An applied event of a latch or barrier (every node): answer the waiters it releases. */
void srv_latch_event(struct srv *s, const struct fsm_event *e);
/* The tick: answer timed-out waiters with nil, those whose session ended with NOSESSION, free
 * the orphaned ones. */
void srv_latch_tick(struct srv *s, uint64_t now);
/* The state was replaced (a snapshot): every waiter looks at it again. */
void srv_latch_recheck(struct srv *s);
/* Answer every waiter with the error for `status` (step-down, shutdown). */
void srv_latch_fail(struct srv *s, int status);
void srv_latch_free(struct srv *s);

#endif
