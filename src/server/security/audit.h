/* SPDX-License-Identifier: Apache-2.0 */
/*
 * audit — the --audit-log file: one JSON object a line for the security events an operator
 * must be able to reconstruct later (who authenticated, who was refused, who changed the
 * cluster or revoked a session, which ACL reload took effect).
 *
 * A line: {"time":"2026-12-05T05:00:39.123Z","node":1,"user":"app","addr":"127.0.0.1:5000",
 *          "event":"auth.failure","detail":"..."}  (time RFC 3339 UTC with milliseconds; user
 * and addr "" when there is none, e.g. a SIGHUP reload). Events: auth.success, auth.failure,
 * permission.denied, session.revoke, cluster.add, cluster.remove, cluster.transfer,
 * cluster.announce, acl.reload, acl.reload_refused, traced (a command with TRACEPARENT),
 * log.dropped (auth.failure and
 * permission.denied lines dropped over --security-log-rate, limits.c).
 *
 * Strings are escaped by the one JSON policy of common/text.h: '"' and '\', control bytes
 * (\n, \r, \t, else \u00XX), DEL as \u007f, and every byte that is not part of a valid UTF-8
 * sequence as \u00XX; valid UTF-8 passes through. So a line is always one line of valid JSON,
 * whatever a client sent.
 *
 * Owns (struct audit, inside struct srv): the file descriptor (O_APPEND, reopened by
 * audit_reopen on SIGHUP for log rotation) and its counters. A failed open or write never
 * stops the server: it is counted (write_errors, /metrics) and logged at most every 10 s.
 * audit_format is pure (no clock, no I/O) for the unit test; srv_audit is the server's call.
 */
#ifndef FENCELOCK_AUDIT_H
#define FENCELOCK_AUDIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define AUDIT_DETAIL_MAX 512 /* bytes of a detail kept (a longer one is cut) */
#define AUDIT_ADDR_BUF 64    /* "ip:port" of a client, [v6]:port included */

struct audit {
    int fd; /* -1: no --audit-log, or it could not be opened */
    char path[512];
    uint64_t lines, write_errors;
    uint64_t err_logged_ms; /* when a write error was last logged */
};

/* Append JSON string s[n] (quotes included) to out, escaped as the header says. */
void audit_json_str(struct buf *out, const char *s, size_t n);
/* Append one audit line (newline included) to out. wall_ms: ms since the epoch, UTC. */
void audit_format(struct buf *out, uint64_t wall_ms, uint64_t node, const char *user,
                  const char *addr, const char *event, const char *detail, size_t detail_len);

/* Open path (NULL or "" = audit off). 0, or -1 with errno: the caller refuses to start. */
int audit_open(struct audit *a, const char *path);
/* Close and open the path again (after a rename by logrotate). 0, or -1 (counted as a write
 * error): the old descriptor stays in use and the next SIGHUP tries again. */
int audit_reopen(struct audit *a);
void audit_close(struct audit *a);
/* Write one formatted line; -1 on a failed or short write (counted in write_errors). */
int audit_write(struct audit *a, const struct buf *line);

struct srv;
struct srv_conn;
/* Log one event for connection c (NULL: none; its user and address are taken from it). detail
 * is printf-formatted. Does nothing without --audit-log. For every command that changes
 * security state: SESSION.REVOKE calls srv_audit(s, r->c, "session.revoke", "sid=%llu", sid). */
void srv_audit(struct srv *s, const struct srv_conn *c, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with user and address given (a failed AUTH names a user it is not; its connection
 * may have closed while the password was checked). */
void srv_audit_as(struct srv *s, const char *user, const char *addr, const char *event,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* "ip:port" of c's peer into out, or "" (no connection, or it is gone). */
void srv_audit_conn_addr(const struct srv_conn *c, char out[AUDIT_ADDR_BUF]);
/* SIGHUP: reopen the file, logging the outcome. */
void srv_audit_reopen(struct srv *s);

#endif
