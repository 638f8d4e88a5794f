/* SPDX-License-Identifier: Apache-2.0 */
/*
 * audit.c — the --audit-log lines: JSON escaping and formatting (pure), the file and its
 * reopening, and srv_audit, which fills user and address from a connection (audit.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "server/server.h"

#define AUDIT_ERR_LOG_EVERY_MS 10000 /* a failing disk must not flood the server log */

/* ---- formatting (pure) ---- */

/* Steps of the one JSON policy (common/text.h) into the growing line. */
void audit_json_str(struct buf *out, const char *s, size_t n)
{
    buf_append(out, "\"", 1);
    for (size_t i = 0; i < n;) {
        char step[TEXT_STEP_MAX];
        size_t used, w = text_json_step(s + i, n - i, step, &used);
        buf_append(out, step, w);
        i += used;
    }
    buf_append(out, "\"", 1);
}

void audit_format(struct buf *out, uint64_t wall_ms, uint64_t node, const char *user,
                  const char *addr, const char *event, const char *detail, size_t detail_len)
{
    char ts[TIME_RFC3339_BUF];
    (void)time_rfc3339(ts, wall_ms);
    buf_printf(out, "{\"time\":\"%s\",\"node\":%llu,\"user\":", ts, (unsigned long long)node);
    audit_json_str(out, user ? user : "", user ? strlen(user) : 0);
    buf_append_str(out, ",\"addr\":");
    audit_json_str(out, addr ? addr : "", addr ? strlen(addr) : 0);
    buf_append_str(out, ",\"event\":");
    audit_json_str(out, event, strlen(event));
    buf_append_str(out, ",\"detail\":");
    audit_json_str(out, detail ? detail : "", detail ? detail_len : 0);
    buf_append_str(out, "}\n");
}

/* ---- the file ---- */

int audit_open(struct audit *a, const char *path)
{
    a->fd = -1;
    snprintf(a->path, sizeof a->path, "%s", path ? path : "");
    if (!a->path[0])
        return 0;
    a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    return a->fd < 0 ? -1 : 0;
}

int audit_reopen(struct audit *a)
{
    if (!a->path[0])
        return 0;
    int fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        a->write_errors++;
        return -1; /* the old descriptor stays: lines still go somewhere */
    }
    if (a->fd >= 0)
        close(a->fd);
    a->fd = fd;
    return 0;
}

void audit_close(struct audit *a)
{
    if (a->path[0] && a->fd >= 0) /* a zeroed struct (fd 0) owns nothing */
        close(a->fd);
    a->fd = -1;
}

int audit_write(struct audit *a, const struct buf *line)
{
    if (a->fd < 0 || buf_failed(line)) {
        a->write_errors++;
        return -1;
    }
    /* One write(2) of a whole line on an O_APPEND descriptor: lines never interleave. */
    ssize_t n;
    do
        n = write(a->fd, line->p, line->len);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)line->len) {
        if (n >= 0)
            errno = ENOSPC; /* a short write: the disk is full, most likely */
        a->write_errors++;
        return -1;
    }
    a->lines++;
    return 0;
}

/* ---- the server's calls ---- */

void srv_audit_conn_addr(const struct srv_conn *c, char out[AUDIT_ADDR_BUF])
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[AUDIT_ADDR_BUF - 8] = "";
    out[0] = '\0';
    if (!c || uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len))
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        uv_ip4_name(in, ip, sizeof ip);
        snprintf(out, AUDIT_ADDR_BUF, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        uv_ip6_name(in6, ip, sizeof ip);
        snprintf(out, AUDIT_ADDR_BUF, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    }
}

static void audit_emit(struct srv *s, const char *user, const char *addr, const char *event,
                       const char *fmt, va_list ap)
{
    char detail[AUDIT_DETAIL_MAX];
    int n = vsnprintf(detail, sizeof detail, fmt, ap);
    size_t dlen = n < 0 ? 0 : (size_t)n >= sizeof detail ? sizeof detail - 1 : (size_t)n;
    struct buf line;
    buf_init(&line);
    audit_format(&line, clock_wall_ms(), s->cfg.id, user, addr, event, detail, dlen);
    if (audit_write(&s->audit, &line)) {
        uint64_t now = clock_ms();
        if (!s->audit.err_logged_ms || now - s->audit.err_logged_ms >= AUDIT_ERR_LOG_EVERY_MS) {
            s->audit.err_logged_ms = now;
            LOGE(&s->log, "--audit-log %s: a line was not written (%s); %llu so far", s->audit.path,
                 s->audit.fd < 0 ? "file not open" : strerror(errno),
                 (unsigned long long)s->audit.write_errors);
        }
    }
    buf_free(&line);
}

void srv_audit(struct srv *s, const struct srv_conn *c, const char *event, const char *fmt, ...)
{
    if (!s->audit.path[0])
        return;
    char addr[AUDIT_ADDR_BUF];
    srv_audit_conn_addr(c, addr);
    va_list ap;
    va_start(ap, fmt);
    audit_emit(s, c && c->user ? c->user->name : "", addr, event, fmt, ap);
    va_end(ap);
}

void srv_audit_as(struct srv *s, const char *user, const char *addr, const char *event,
                  const char *fmt, ...)
{
    if (!s->audit.path[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    audit_emit(s, user, addr, event, fmt, ap);
    va_end(ap);
}

void srv_audit_reopen(struct srv *s)
{
    if (!s->audit.path[0])
        return;
    if (audit_reopen(&s->audit))
        LOGE(&s->log,
             "SIGHUP: --audit-log %s cannot be reopened (%s); still writing to the old file",
             s->audit.path, strerror(errno));
    else
        LOGI(&s->log, "SIGHUP: --audit-log %s reopened", s->audit.path);
}
