/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify — systemd's readiness protocol (sd_notify) without libsystemd: one datagram per state
 * ("READY=1", "STOPPING=1") to the unix socket named by $NOTIFY_SOCKET, a path or, with a
 * leading '@', an abstract name.
 *
 * Owns one socket fd (-1 when $NOTIFY_SOCKET is unset: every call is then a no-op). Each state
 * is sent at most once. notify_close frees the fd. Nothing here reads the network: a failed
 * send is reported to the caller, who logs it, and never stops the server.
 */
#ifndef FENCELOCK_NOTIFY_H
#define FENCELOCK_NOTIFY_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

struct notify {
    int fd; /* -1: off */
    struct sockaddr_un addr;
    socklen_t addr_len;
    bool ready_sent, stopping_sent;
};

/* Off state (fd -1); call before notify_open so that notify_close is always safe. */
void notify_init(struct notify *n);
/* Open the socket for `path` ($NOTIFY_SOCKET; NULL or "" leaves it off). 0, or -1 if the name
 * is too long, not absolute nor abstract, or no socket could be made (errno says why). */
int notify_open(struct notify *n, const char *path);
/* READY=1 once; 0 (also when off or already sent), -1 if the send failed. */
int notify_ready(struct notify *n, const char *status);
/* STOPPING=1 once; as notify_ready. */
int notify_stopping(struct notify *n);
void notify_close(struct notify *n);

#endif
