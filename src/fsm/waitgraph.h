/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/waitgraph.h — the wait-for graph over sessions, and deadlock detection on it.
 *
 * Owns the rule of who waits for whom, and the search that refuses a wait which would close a
 * cycle (-DEADLOCK). The graph is never stored: it is read from the FSM's queues and holders
 * when a wait starts, so it cannot drift from them, needs no snapshot field and every replica
 * that applied the same log computes the same answer (the walks follow queue, holder and
 * session-wait order, never hash buckets). The only state kept here is per-search scratch
 * (marks on the session records, an epoch in struct fsm) and the text of the last cycle found
 * (fsm.wg_text, owned by the fsm, valid until the next fsm_apply).
 *
 * THE RULE. A session waits for another when one of its queued requests cannot be granted
 * before the other lets go. A queued request R on object L waits for:
 *   - lock or election (R exclusive, shared or an upgrade): E = the nearest earlier exclusive
 *     request in L's FIFO (an upgrade counts as exclusive). If E exists, R waits for E and, if
 *     R is exclusive, for every shared request between E and R. If no E exists, R waits for
 *     the holders that conflict with it (the exclusive holder; for an exclusive R also every
 *     shared holder but R's own session, an upgrade's) and, if R is exclusive, for every earlier
 *     (shared) request. Shared requests never wait for shared holders or for single-name
 *     shared requests (but see multi-requests below).
 *     Edges to requests further back are implied (E waits for them, or for the holders): the
 *     reduction keeps LOCK.INFO and the search linear in the queue, with the same cycles.
 *   - semaphore: the request just before R (FIFO: it is granted first, and nothing overtakes
 *     the head). With none, R (for k permits) waits while in_use + k > limit, for permit
 *     holders whose permits add up to need = in_use + k - limit: a weighted OR (threshold)
 *     edge to every holder, weighted by its acquisition's permits. R can be granted once the
 *     holders that can proceed hold at least `need` permits between them (they are taken to
 *     release them all); without weights (every k = 1, in_use = limit) need is 1: ANY holder.
 *   - lock-delay is waited out by time, not for a session: no edge.
 *   - a waiting multi-request (multi.c) blocks each of its queues until it can be granted on
 *     all of them, even where it heads a free lock: so a shared R also waits for every waiting
 *     multi-request between E (or the head) and R (a single shared request there is granted
 *     with R, or waits for what R waits for).
 * A session's out-edges are the union over all its queued requests: a multi-request queued on
 * several names is one request per name (fsm_wait_request_foreach), each adding its edges; a
 * session is taken to release nothing while any of its requests waits.
 *
 * DEADLOCK. A session that waits for nobody is taken to let go in time. A request can be
 * granted once every session its AND edges lead to can proceed and, if it has OR edges, the
 * sessions they lead to that can proceed weigh at least its need (1 without weights); a
 * session can proceed once each of its requests can be granted.
 * The sessions that cannot (what is left of the least fixed point of "can proceed") are
 * deadlocked: that is exact for AND and weighted OR edges alike. A new request by V closes a cycle
 * when, with it, V cannot proceed and the edges that keep sessions stuck lead from it back to V; it
 * is then refused (FSM_REPLY_ERR "DEADLOCK cycle of N: V -name-> S2 -name-> ... -> V", the
 * shortest such cycle: V waits for name, which S2 holds or is queued for first, ...) and not
 * queued: the request that closes the cycle is the victim, so the waits already queued are
 * untouched. A new multi-request is checked with all its names at once
 * (fsm_deadlock_refused_n: one request per name into the same victim node V), so V proceeds
 * only once every part can be granted (all or nothing, as its grant), and a cycle through any
 * name, in any mode, refuses the whole request: queued on no name. Only a wait start can close
 * a cycle: grants, releases and lock-delay ends only turn an edge to a queued request into one
 * to the same session as holder, or remove edges (or shortcut R -> W -> E to R -> E when W
 * leaves a queue).
 * A V stuck only behind a deadlock it is not part of (one a search that gave up let in) is
 * queued. Detection runs from log format 2 on (format 1: a node of the previous release
 * applies the same entries and would queue the request).
 *
 * COST. The search counts every session it adds and every edge it reads (a request's edges are
 * read from one forward pass per queue met, so a run of k shared requests costs O(k), never
 * O(k^2)); past `limit` it stops expanding: the sessions not expanded yet count as able to
 * proceed, the victim is refused only if it is still stuck in a cycle of expanded sessions (a
 * real one: never a false refusal), else the wait is queued and FSM_EV_DEADLOCK_LIMIT tells
 * that the search stopped. Deterministic: every replica expands in the same order. limit 0
 * turns detection off.
 */
#ifndef FENCELOCK_FSM_WAITGRAPH_H
#define FENCELOCK_FSM_WAITGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsm/fsm.h"

#define FSM_DEADLOCK_LIMIT_DEFAULT 10000 /* sessions + edges a search may visit */
#define FSM_DEADLOCK_LIMIT_MAX 100000000

/*
 * The search bound (0 = no detection) is replicated state: every replica searches with the
 * value of the last DEADLOCK_LIMIT entry (FSM_DEADLOCK_LIMIT_DEFAULT before any), kept in the
 * snapshot (version 7), so a search that gives up on one replica gives up on all of them and
 * they answer alike. fsm_deadlock_limit reads it.
 *
 * fsm_set_deadlock_limit records this node's --deadlock-search-limit (the flag; values over
 * FSM_DEADLOCK_LIMIT_MAX are clamped), which apply never reads: a leader whose flag differs
 * from the replicated value proposes a DEADLOCK_LIMIT entry (src/server/cluster/settings.c).
 * fsm_restore keeps the flag.
 */
void fsm_set_deadlock_limit(struct fsm *f, uint64_t limit);
uint64_t fsm_deadlock_flag(const struct fsm *f);
uint64_t fsm_deadlock_limit(const struct fsm *f);

/*
 * The sessions the queued request of `sid` on `name` waits for, by THE RULE above, in a fixed
 * order: the nearest earlier exclusive request, or else the exclusive holder and then the
 * shared holders in the lock's list order; then the requests between that one (or the head)
 * and this one, nearest first (request_edges walks back from this request). A semaphore: the
 * request just before, or else the permit holders. cb(arg, blocker, any) with any = true for an
 * OR edge (a full semaphore's permit holders). Nothing if `sid` is not queued there.
 */
void fsm_waiter_waits_for(const struct fsm *f, const char *name, size_t namelen, uint64_t sid,
                          void (*cb)(void *arg, uint64_t blocker, bool any), void *arg);

/*
 * Every queued request of the lock-like object `name`, in FIFO order, with the sessions it
 * waits for: waiter(arg, sid) once per request, then edge(arg, blocker, any) for its edges as
 * fsm_waiter_waits_for gives them. One forward pass over the queue. Once max_edges edges were
 * given, a request's edges stop after one more (so the caller sees which lists it cuts): the
 * cost is the queue's length plus max_edges, never the square of a shared run's length.
 */
void fsm_lock_waits_foreach(const struct fsm *f, const char *name, size_t namelen, size_t max_edges,
                            void (*waiter)(void *arg, uint64_t sid),
                            void (*edge)(void *arg, uint64_t blocker, bool any), void *arg);

struct actx;
struct lock;
struct sess;

/* One name a new request would queue on: an existing lock and enum lock_mode. */
struct fsm_wg_want {
    struct lock *l;
    uint8_t mode;
    uint32_t permits; /* a semaphore request's permits (0 counts as 1) */
};
/*
 * Called before a request by `s` queues on one name (fsm_lock_enqueue_permits: n = 1) or on
 * several names at once (LOCK_MULTI: the existing
 * locks among its names; an absent one has nobody to wait for): the victim node gets one
 * request per name, so it can proceed only once every name can be granted, and the request is
 * refused if its waits on any of them, in any mode, close a cycle. The event names the lock
 * of the cycle's first edge (the LIMIT event: want[0]'s). n == 0: false.
 */
/* true and r = ERR DEADLOCK (a revision taken, FSM_EV_DEADLOCK emitted) if the wait would
 * close a cycle; else false (FSM_EV_DEADLOCK_LIMIT emitted if the search stopped at its limit
 * or ran out of memory) and the caller queues. */
bool fsm_deadlock_refused_n(struct actx *a, struct sess *s, const struct fsm_wg_want *want,
                            size_t n, struct fsm_reply *r);

#endif
