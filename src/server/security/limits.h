/* SPDX-License-Identifier: Apache-2.0 */
/*
 * limits — what a client may cost the node before it has proved who it is: the
 * caps on unauthenticated connections (in total and per address), the authentication deadline,
 * the caps on TLS handshakes in progress (in total and per address), the small output allowance
 * of an unauthenticated connection, the total output cap across all connections, TCP keepalive
 * on accepted connections, and the rate limit of the AUTH-failure / NOPERM log and audit lines.
 *
 * Owns (struct srv_limits, inside struct srv): a map address -> (unauthenticated
 * connections, handshakes in progress) whose entries are freed when both reach 0, the running
 * sum of every connection's unsent reply bytes and the sweep timer (deadline, dropped-lines
 * report). A connection carries
 * its own part (struct srv_conn: addr, unauth_counted, hs_counted, out_counted): each counted
 * flag is set by exactly one call here and cleared by exactly one (or by srv_limits_conn_gone
 * at close), so the table and the sums always equal what the open connections hold.
 *
 * Keyed by the exact address (text, as uv_ip*_name prints it). The AUTH back-off (auth.c) keys
 * by that address and by its network (/24 IPv4, /64 IPv6): srv_addr_prefix.
 */
#ifndef FENCELOCK_LIMITS_H
#define FENCELOCK_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/map.h"

#define SRV_ADDR_BUF 64 /* an address's text, as AUTH_ADDR_BUF */

struct srv_limits {
    struct map addrs; /* address text -> its counts (limits.c); keyed hash (common/map.c) */
    size_t unauth, handshakes;
    size_t output_bytes; /* sum of out_counted over the open connections */
    uv_timer_t sweep;
    bool timers_on;
    /* the security log limiter: lines in the current second, lines dropped since reported */
    uint64_t log_window_ms, log_in_window, log_dropped_unreported;
    uint64_t refusal_logged_ms; /* a refused connection is logged at most every 10 s */
    /* counters for /metrics */
    uint64_t unauth_rejected, handshake_rejected, auth_timeouts, output_total_closes, log_dropped;
};

struct srv;
struct srv_conn;

/* Address text of c's peer into out ("" when unknown). */
void srv_conn_addr(struct srv_conn *c, char out[SRV_ADDR_BUF]);
/* The network of an address: "a.b.c.0/24" for IPv4 (and IPv4-mapped IPv6), "x:x:x:x::/64" for
 * IPv6; the address itself when it is neither. Pure (the unit test). */
void srv_addr_prefix(const char *addr, char out[SRV_ADDR_BUF]);

/* Start the timers (srv_listen). */
void srv_limits_start(struct srv *s);
/* Close the timers and free the table (shutdown, after every connection closed). */
void srv_limits_stop(struct srv *s);
void srv_limits_free(struct srv *s);

/* A new accepted connection: keepalive, its address, the unauthenticated and handshake caps.
 * 0, or -1 when it must be refused (counted and logged; the caller closes it). */
int srv_limits_accept(struct srv_conn *c);
/* The connection authenticated (c->user set): it no longer counts as unauthenticated. */
void srv_limits_authed(struct srv_conn *c);
/* Its TLS handshake finished: it no longer counts as a handshake in progress. */
void srv_limits_handshake_done(struct srv_conn *c);
/* The connection is closing: release what it counted. */
void srv_limits_conn_gone(struct srv_conn *c);

/* The connection's output limits: before AUTH (an ACL file and no user yet) the close limit is
 * at most --max-output-preauth and the pause limit at most half of it. */
size_t srv_limits_output_max(const struct srv_conn *c);
size_t srv_limits_output_soft(const struct srv_conn *c);
/* Record c's unsent reply bytes `n` in the total; when they grew past --max-output-total the
 * largest holders are closed at once (c itself, possibly: the caller checks c->closing). */
void srv_limits_output(struct srv_conn *c, size_t n);

/* The AUTH-failure and NOPERM lines (log and audit): true when this one may be written; false
 * counts it dropped (reported once a second by the sweep: "N lines dropped"). */
bool srv_seclog_allow(struct srv *s);

#endif
