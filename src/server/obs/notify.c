/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify.c — sd_notify's wire format: "KEY=VALUE\n..." in one datagram to $NOTIFY_SOCKET.
 */
#include "server/obs/notify.h"

#include <errno.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/num.h"

void notify_init(struct notify *n)
{
    memset(n, 0, sizeof(*n));
    n->fd = -1;
}

int notify_open(struct notify *n, const char *path)
{
    notify_init(n);
    if (!path || !*path)
        return 0;
    size_t len = strlen(path);
    /* sun_path needs no NUL for an abstract name, but a path is passed with its NUL. */
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(n->addr.sun_path)) {
        errno = EINVAL;
        return -1;
    }
    n->addr.sun_family = AF_UNIX;
    memcpy(n->addr.sun_path, path, len);
    if (path[0] == '@')
        n->addr.sun_path[0] = 0;
    n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    return n->fd < 0 ? -1 : 0;
}

static int send_state(struct notify *n, const char *msg)
{
    ssize_t w = sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&n->addr,
                       n->addr_len);
    return w == (ssize_t)strlen(msg) ? 0 : -1;
}

int notify_ready(struct notify *n, const char *status)
{
    if (n->fd < 0 || n->ready_sent)
        return 0;
    n->ready_sent = true;
    snprintf(n->status, sizeof(n->status), "%s", status ? status : "serving");
    char msg[NOTIFY_STATUS_MAX + 32];
    snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s\n", n->status);
    return send_state(n, msg);
}

int notify_status(struct notify *n, const char *status)
{
    if (n->fd < 0 || !strncmp(n->status, status, sizeof(n->status) - 1))
        return 0;
    snprintf(n->status, sizeof(n->status), "%s", status);
    char msg[NOTIFY_STATUS_MAX + 16];
    snprintf(msg, sizeof(msg), "STATUS=%s\n", n->status);
    return send_state(n, msg);
}

int notify_watchdog(struct notify *n)
{
    return n->fd < 0 ? 0 : send_state(n, "WATCHDOG=1\n");
}

uint64_t notify_watchdog_usec(const char *usec, const char *for_pid, long pid)
{
    uint64_t u, p;
    if (num_parse_u64_str(usec, 1, UINT64_MAX, &u))
        return 0;
    if (for_pid && *for_pid &&
        (num_parse_u64_str(for_pid, 1, UINT64_MAX, &p) || p != (uint64_t)pid))
        return 0;
    return u;
}

int notify_stopping(struct notify *n)
{
    if (n->fd < 0 || n->stopping_sent)
        return 0;
    n->stopping_sent = true;
    return send_state(n, "STOPPING=1\nSTATUS=shutting down\n");
}

void notify_close(struct notify *n)
{
    if (n->fd >= 0)
        close(n->fd);
    n->fd = -1;
}
