/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inforows.h — the one read of the member lists that an INFO answer shows as two parallel
 * lists: a semaphore's queue (SEM.INFO's and GET /v1/semaphores' "waiters" and "wanted",
 * cmd_prims.c and obs/http_api.c) and a latch's or barrier's participants (LATCH.INFO's
 * "joiners" and "counted", cmd_latch.c).
 *
 * Owns the copy of one object's list from the applied state in one walk (fsm_sem_waiters,
 * fsm_latch_parts): each answer writes both of its lists from these rows, so the lists are two
 * columns of the same rows and cannot disagree (before, each list walked the FSM again).
 *
 * Invariants: the rows are in the FSM walk's order (a semaphore's queue FIFO, a latch's
 * participants by sid), one per queued request / participant, every one of them (an INFO answer
 * is not cut by --max-keys-reply); `val` is the second column: the permits a request asks, or 1
 * for a participant that counted down and 0 for one that did not. A name of another kind or no
 * object: no rows. Out of memory: `failed` and no rows (an answer never shows one list without
 * the other; the RESP answers reply the error).
 *
 * Who frees: struct info_rows owns r; inforows_free releases it (safe on a zeroed struct). The
 * rows copy numbers only: they stay valid after the next fsm_apply, but describe the state read,
 * so an answer is written before the loop applies more.
 */
#ifndef FENCELOCK_CMD_INFOROWS_H
#define FENCELOCK_CMD_INFOROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsm;

struct info_row {
    uint64_t sid; /* the queued or participating session */
    uint32_t val; /* the permits it asks (semaphore); 1 if it counted down, else 0 (latch) */
};

struct info_rows {
    struct info_row *r;
    size_t n, cap;
    bool failed; /* out of memory: n is 0 */
};

/* The semaphore `name`'s queued requests, FIFO, val = the permits each asks. */
void inforows_sem_queue(const struct fsm *f, const char *name, size_t nl, struct info_rows *x);
/* The latch or barrier `name`'s participants by sid, val = whether each counted down. */
void inforows_latch_parts(const struct fsm *f, const char *name, size_t nl, struct info_rows *x);
void inforows_free(struct info_rows *x);

#endif
