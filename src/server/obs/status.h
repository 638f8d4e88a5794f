/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status — what the node tells systemd between READY=1 and STOPPING=1 (obs/notify.h sends it):
 * a STATUS= line saying what it waits for ("waiting for a quorum: 2 of 3 voters unreachable",
 * "joining: ...", "ready, leader is node 2") and, when systemd asked for a watchdog
 * ($WATCHDOG_USEC), WATCHDOG=1 at half its interval.
 *
 * Owns nothing but the timing fields of struct notify it keeps (status_ms, watchdog_ms,
 * watchdog_period_ms). Runs from the server's tick on the loop thread: a loop that is stuck
 * stops the pings, which is what the watchdog is for. A STATUS line is sent only when its text
 * changes, at most once a second (READY's own line is sent at once by leader.c).
 */
#ifndef FENCELOCK_STATUS_H
#define FENCELOCK_STATUS_H

#include <stddef.h>

struct srv;

/* Read $WATCHDOG_USEC / $WATCHDOG_PID once (server start); logs the interval it will keep. */
void srv_status_init(struct srv *s);
/* From every tick: the status line if it changed, the watchdog ping if it is due. */
void srv_status_tick(struct srv *s);
/* The status line for the node's state now (also READY's), into out[cap]. */
void srv_status_text(struct srv *s, char *out, size_t cap);

#endif
