/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waitrows.h — the one reader of the wait-for rows that replies show: LOCK.WAITS and LOCK.INFO's
 * waits_for (cmd_waits.c), GET /v1/waits and /v1/locks/{name}'s waits_for (obs/http_api.c).
 *
 * Owns the gathering of one lock-like object's queued requests, each with the sessions it waits
 * for (THE RULE of src/fsm/waitgraph.h), from the applied state: one forward pass per queue
 * (fsm_lock_waits_foreach), so the work is the queue's length plus the sids listed, never the
 * square of a shared run's length.
 *
 * Invariants: the rows are in FIFO order, one per queued request, every one of them whatever the
 * budget: their sids are LOCK.INFO's and /v1/locks/{name}'s `waiters` (which read the queue
 * once, here, for both lists); row i lists its sids at v[r[i].first .. r[i].first + r[i].n). A
 * reply's budget `left` (--max-keys-reply at its start) is shared by every waitrows_read of that
 * reply and only goes down: a row that had more sids than the budget left lists those it could and
 * has `cut` set, so one reply never lists more than --max-keys-reply sids whatever the queues. Out
 * of memory: no rows at all (a list that would be wrong is not given).
 *
 * Who frees: struct wait_rows owns r and v; waitrows_free releases them (safe on a zeroed
 * struct). The rows copy sids only: they stay valid after the next fsm_apply, but describe the
 * state read, so a reply is written before the loop applies more.
 */
#ifndef FENCELOCK_CMD_WAITROWS_H
#define FENCELOCK_CMD_WAITROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fsm;

struct wait_row {
    uint64_t sid;    /* the waiting session */
    size_t first, n; /* its sids: v[first .. first + n) */
    bool any;        /* it waits for any one of them (a full semaphore's holders), else all */
    bool cut;        /* the reply's budget ran out before its list did */
};

struct wait_rows {
    struct wait_row *r;
    size_t n, cap;
    uint64_t *v;
    size_t nv, capv;
    size_t *left; /* the sids the reply may still list: borrowed, shared by the reply's reads */
    bool failed;
};

/* The rows of `name` (none if it does not exist or nobody waits) into *out, which this
   initialises (any previous content is not freed), listing at most *left sids and taking
   them off *left. The caller frees with waitrows_free. */
void waitrows_read(const struct fsm *f, const char *name, size_t nl, size_t *left,
                   struct wait_rows *out);

/* Row i's sids (borrowed from x, valid until waitrows_free; NULL when nothing is listed). */
static inline const uint64_t *waitrows_sids(const struct wait_rows *x, size_t i)
{
    return x->v ? x->v + x->r[i].first : NULL;
}

/* true if any row's list was cut at the budget. */
bool waitrows_cut(const struct wait_rows *x);

void waitrows_free(struct wait_rows *x);

#endif
