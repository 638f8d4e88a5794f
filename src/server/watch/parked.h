/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parked readers — XREAD ... BLOCK requests parked until a matching event or their timeout
 * (cmd/cmd_watch.c), and ELECT.OBSERVE requests parked until the election's leader or value
 * changes (cmd/observe.c); the RESP3 pushes that reach a session's parked connection (push.c).
 *
 * Owns (struct srv_xread and struct srv_observe, in struct srv as `xread` and `observe`): the
 * parked requests' lists and what wakes them: the wake index (wakeidx.h) of the streams they
 * watch, the earliest deadline, and the elections seen leaderless. A parked request's slot
 * stays owned by its connection; an orphaned one (connection closed) is freed by the tick.
 */
#ifndef FENCELOCK_WATCH_PARKED_H
#define FENCELOCK_WATCH_PARKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/map.h"
#include "fsm/fsm.h"
#include "server/watch/wakeidx.h"
#include "server/watch/watch.h"

struct srv;
struct srv_watcher;
struct srv_observer;

struct srv_xread {
    struct srv_watcher *watchers; /* XREAD ... BLOCK requests parked until an event */
    size_t n_watchers;
    uint64_t sweep_ms;      /* when parked XREADs were last swept for orphans */
    uint64_t next_due;      /* the earliest BLOCK deadline among them (UINT64_MAX: none) */
    struct wake_index wake; /* the parked XREADs' streams grouped by prefix (wakeidx.h) */
    uint64_t stamp;         /* srv_watch_wake's count: a watcher is listed once per wake */
    struct watch_id woke;   /* watch.last at the previous srv_watch_wake */
};

struct srv_observe {
    struct srv_observer *observers; /* ELECT.OBSERVE requests parked until a change */
    size_t n_observers;
    bool dirty;            /* an applied entry changed some election's leader or value */
    struct map leaderless; /* election name -> revision it was seen leaderless at */
};

/* cmd_watch.c: XREAD ... BLOCK requests parked until a matching event or their timeout */
/* After an apply added events: answer the parked XREADs they match. */
void srv_watch_wake(struct srv *s);
/* The tick: answer timed-out parked XREADs with nil, free the orphaned ones. */
void srv_watch_tick(struct srv *s, uint64_t now);
/* Answer parked XREADs with the error for `status`: all (shutdown), or only those that are
 * not READONLY (step-down: they resume by id on the new leader). */
void srv_watch_fail(struct srv *s, int status, bool all);
/* srv_reauth_parked's part: parked XREADs whose user may no longer read the stream. */
void srv_watch_reauth(struct srv *s);

/* observe.c: ELECT.OBSERVE requests parked until the election's leader or value changes */
/* An applied LEADER / PROCLAIM event (every node): remember leaderless elections. */
void srv_observe_event(struct srv *s, const struct fsm_event *e);
/* After an apply that changed an election: answer the parked observers it concerns. */
void srv_observe_wake(struct srv *s);
/* The tick: answer timed-out observers with nil, free the orphaned ones. */
void srv_observe_tick(struct srv *s, uint64_t now);
/* Answer parked observers with the error for `status`: all (shutdown) or the non-READONLY. */
void srv_observe_fail(struct srv *s, int status, bool all);
/* srv_reauth_parked's part: observers whose user may no longer read that election. */
void srv_observe_reauth(struct srv *s);
void srv_observe_free(struct srv *s);

/* push.c: sid -> the connections that may be parked for that session (the push index) */
struct srv_push {
    struct map by_sid; /* 8-byte sid -> struct push_set (push.c) */
};

void srv_push_init(struct srv *s);
void srv_push_free(struct srv *s);
struct srv_slot;
struct srv_conn;
/* A slot moved into (parked) or out of SLOT_PARKED: srv_slot_set_state calls it. */
void srv_push_slot_parked(struct srv_slot *slot, bool parked);
/* The one writer of srv_conn.sid, the session last opened on c (0: none). */
void srv_push_conn_sid(struct srv_conn *c, uint64_t sid);
/* c is closing: unlist it (before its slots are orphaned). */
void srv_push_conn_closed(struct srv_conn *c);

/* push.c: a REVOKE_REQUESTED or WAIT_NOTIFY event (every node, once per applied entry) as a
 * RESP3 push on each RESP3 connection parked for the holder's session: one with a parked
 * LOCK / SEM.ACQUIRE / ELECT.CAMPAIGN / LOCK.MULTI WAIT of that session, or one that opened
 * the session (SESSION.OPEN on it) with a parked XREAD BLOCK or ELECT.OBSERVE WAIT. */
void srv_push_event(struct srv *s, const struct fsm_event *e);

#endif
