/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify — systemd's readiness protocol (sd_notify) without libsystemd: one datagram per state
 * ("READY=1", "STOPPING=1", "STATUS=...", "WATCHDOG=1") to the unix socket named by
 * $NOTIFY_SOCKET, a path or, with a leading '@', an abstract name.
 *
 * Owns one socket fd (-1 when $NOTIFY_SOCKET is unset: every call is then a no-op). READY and
 * STOPPING are sent at most once each; a STATUS line only when it differs from the last one
 * sent (the caller rate-limits). The watchdog interval comes from $WATCHDOG_USEC, for this
 * process only ($WATCHDOG_PID unset or ours), as sd_watchdog_enabled(3) reads it.
 * notify_close frees the fd. Nothing here reads the network: a failed send is reported to the
 * caller, who logs it, and never stops the server.
 */
#ifndef FENCELOCK_NOTIFY_H
#define FENCELOCK_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define NOTIFY_STATUS_MAX 160 /* one STATUS line, NUL included; a longer one is cut */

struct notify {
    int fd; /* -1: off */
    struct sockaddr_un addr;
    socklen_t addr_len;
    bool ready_sent, stopping_sent;
    char status[NOTIFY_STATUS_MAX]; /* the last STATUS= sent ("" none) */
    /* kept by obs/status.c (clock_ms stamps; 0: never): the last STATUS-only datagram, the
     * last WATCHDOG=1, and the ping period (half of $WATCHDOG_USEC; 0: no watchdog) */
    uint64_t status_ms, watchdog_ms, watchdog_period_ms;
};

/* Off state (fd -1); call before notify_open so that notify_close is always safe. */
void notify_init(struct notify *n);
/* Open the socket for `path` ($NOTIFY_SOCKET; NULL or "" leaves it off). 0, or -1 if the name
 * is too long, not absolute nor abstract, or no socket could be made (errno says why). */
int notify_open(struct notify *n, const char *path);
/* READY=1 once; 0 (also when off or already sent), -1 if the send failed. */
int notify_ready(struct notify *n, const char *status);
/* STATUS=<status> if it differs from the last status sent (READY's included): 0 (also when
 * off or unchanged), -1 if the send failed. */
int notify_status(struct notify *n, const char *status);
/* WATCHDOG=1: 0 (also when off), -1 if the send failed. */
int notify_watchdog(struct notify *n);
/* The watchdog interval in microseconds systemd asks this process (`pid`) for: $WATCHDOG_USEC
 * (`usec`) when $WATCHDOG_PID (`for_pid`) is unset or names `pid`; 0 when off or malformed. */
uint64_t notify_watchdog_usec(const char *usec, const char *for_pid, long pid);
/* STOPPING=1 once; as notify_ready. */
int notify_stopping(struct notify *n);
void notify_close(struct notify *n);

#endif
