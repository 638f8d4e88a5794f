/* SPDX-License-Identifier: Apache-2.0 */
/*
 * limits.c — the pre-authentication limits of the client port (limits.h has what it owns).
 *
 * Why each one exists: a connection costs a descriptor, buffers and, on a TLS port,
 * a handshake computed on the loop that also runs Raft; before AUTH nobody is accountable for
 * it. So the number of connections that have not authenticated is capped in total and per
 * address, they must authenticate within --auth-timeout, their unread replies are capped at
 * --max-output-preauth, handshakes in progress are capped in total and per address, and the
 * unread replies of every connection together are capped at --max-output-total (the connection
 * holding the most is closed, as --max-input-total does for input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "server/server.h"

struct limits_addr {
    size_t unauth, hs;
};

#define LIMITS_SWEEP_MAX_MS 1000
#define LIMITS_LOG_WINDOW_MS 1000
#define LIMITS_REFUSAL_LOG_MS 10000 /* a refusal is logged at most this often */

void srv_conn_addr(struct srv_conn *c, char out[SRV_ADDR_BUF])
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    out[0] = '\0';
    if (!c || uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len))
        return;
    if (ss.ss_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)&ss, out, SRV_ADDR_BUF);
    else if (ss.ss_family == AF_INET6)
        uv_ip6_name((const struct sockaddr_in6 *)&ss, out, SRV_ADDR_BUF);
}

void srv_addr_prefix(const char *addr, char out[SRV_ADDR_BUF])
{
    unsigned char b[16];
    int n = addr_ip_bytes(addr, b); /* an IPv4-mapped address counts as its IPv4 one */
    if (n == 4)
        snprintf(out, SRV_ADDR_BUF, "%u.%u.%u.0/24", b[0], b[1], b[2]);
    else if (n == 16)
        snprintf(out, SRV_ADDR_BUF, "%x:%x:%x:%x::/64", b[0] << 8 | b[1], b[2] << 8 | b[3],
                 b[4] << 8 | b[5], b[6] << 8 | b[7]);
    else
        snprintf(out, SRV_ADDR_BUF, "%s", addr);
}

/* ---- the address table (common/map.c: keyed hash, so no client picks colliding keys) ---- */

/* The address's entry, created when `create` (NULL when absent or out of memory). */
static struct limits_addr *addr_get(struct srv_limits *l, const char *addr, bool create)
{
    struct limits_addr *e = map_get(&l->addrs, addr, strlen(addr));
    if (e || !create)
        return e;
    e = calloc(1, sizeof(*e));
    if (e && map_put(&l->addrs, addr, strlen(addr), e)) {
        free(e);
        e = NULL;
    }
    return e;
}

static void addr_maybe_free(struct srv_limits *l, const char *addr, struct limits_addr *e)
{
    if (!e->unauth && !e->hs)
        free(map_del(&l->addrs, addr, strlen(addr)));
}

/* ---- accept, authenticate, handshake, close ---- */

static bool refusal_log_due(struct srv *s)
{
    uint64_t now = clock_ms(), *last = &s->limits.refusal_logged_ms;
    if (*last && now - *last < LIMITS_REFUSAL_LOG_MS)
        return false;
    *last = now;
    return true;
}

/* Over a cap: counted, logged at most every 10 s. Always -1. */
static int refuse(struct srv_conn *c, uint64_t *counter, const char *what, size_t cap)
{
    struct srv *s = c->srv;
    (*counter)++;
    if (refusal_log_due(s))
        LOGW(&s->log, "client from %s refused: %s (%zu); %llu refused so far", c->addr, what, cap,
             (unsigned long long)*counter);
    return -1;
}

int srv_limits_accept(struct srv_conn *c)
{
    struct srv *s = c->srv;
    struct srv_limits *l = &s->limits;
    if (s->cfg.tcp_keepalive)
        uv_tcp_keepalive(&c->tcp, 1, (unsigned)s->cfg.tcp_keepalive);
    srv_conn_addr(c, c->addr);
    bool unauth = s->auth.on, hs = c->tls != NULL;
    if (!unauth && !hs)
        return 0;
    struct limits_addr *e = addr_get(l, c->addr, true);
    if (!e)
        return -1;
    if (unauth && l->unauth >= s->cfg.max_unauth_clients) {
        addr_maybe_free(l, c->addr, e);
        return refuse(c, &l->unauth_rejected, "--max-unauth-clients", s->cfg.max_unauth_clients);
    }
    if (unauth && e->unauth >= s->cfg.max_unauth_per_addr) {
        addr_maybe_free(l, c->addr, e);
        return refuse(c, &l->unauth_rejected, "--max-unauth-per-addr", s->cfg.max_unauth_per_addr);
    }
    if (hs && l->handshakes >= s->cfg.tls_max_handshakes) {
        addr_maybe_free(l, c->addr, e);
        return refuse(c, &l->handshake_rejected, "--tls-max-handshakes", s->cfg.tls_max_handshakes);
    }
    if (hs && e->hs >= s->cfg.tls_max_handshakes_per_addr) {
        addr_maybe_free(l, c->addr, e);
        return refuse(c, &l->handshake_rejected, "--tls-max-handshakes-per-addr",
                      s->cfg.tls_max_handshakes_per_addr);
    }
    if (unauth) {
        e->unauth++;
        l->unauth++;
        c->unauth_counted = true;
    }
    if (hs) {
        e->hs++;
        l->handshakes++;
        c->hs_counted = true;
    }
    return 0;
}

static void release(struct srv_conn *c, bool unauth, bool hs)
{
    struct srv_limits *l = &c->srv->limits;
    unauth = unauth && c->unauth_counted;
    hs = hs && c->hs_counted;
    if (!unauth && !hs)
        return;
    struct limits_addr *e = addr_get(l, c->addr, false);
    if (unauth) {
        c->unauth_counted = false;
        l->unauth--;
        if (e)
            e->unauth--;
    }
    if (hs) {
        c->hs_counted = false;
        l->handshakes--;
        if (e)
            e->hs--;
    }
    if (e)
        addr_maybe_free(l, c->addr, e);
}

void srv_limits_authed(struct srv_conn *c)
{
    if (c)
        release(c, true, false);
}

void srv_limits_handshake_done(struct srv_conn *c)
{
    release(c, false, true);
}

void srv_limits_conn_gone(struct srv_conn *c)
{
    release(c, true, true);
    srv_limits_output(c, 0);
}

/* ---- output ---- */

static bool preauth(const struct srv_conn *c)
{
    return c->srv->auth.on && !c->user;
}

size_t srv_limits_output_max(const struct srv_conn *c)
{
    size_t m = c->srv->cfg.max_output, p = c->srv->cfg.max_output_preauth;
    return preauth(c) && p < m ? p : m;
}

/* Before AUTH reading pauses at half the allowance: a reply written just under the pause
 * point then never takes a connection past the allowance (replies before AUTH are small). */
size_t srv_limits_output_soft(const struct srv_conn *c)
{
    size_t m = c->srv->cfg.max_output_soft, p = c->srv->cfg.max_output_preauth / 2;
    return preauth(c) && p < m ? p : m;
}

/* Close the connections holding the most unsent replies until the total is under the cap.
 * At once, not on a later loop turn: a reader's reply leaves for the kernel within the turn,
 * and only the holders that do not read must pay. Closing another connection here is what
 * conn_output_check already does to its own: its unfinished slots are orphaned, its done ones
 * freed, and no caller walks the connection list while it produces output. */
static void shed(struct srv *s)
{
    struct srv_limits *l = &s->limits;
    while (l->output_bytes > s->cfg.max_output_total) {
        struct srv_conn *big = NULL;
        for (struct srv_conn *x = s->net.conns; x; x = x->next)
            if (!big || x->out_counted > big->out_counted)
                big = x;
        if (!big || big->out_counted == 0)
            return;
        l->output_total_closes++;
        LOGW(&s->log,
             "client %llu closed: unread replies of all clients over --max-output-total %zu; "
             "it held the most (%zu bytes)",
             (unsigned long long)big->id, s->cfg.max_output_total, big->out_counted);
        srv_conn_close(big);
    }
}

void srv_limits_output(struct srv_conn *c, size_t n)
{
    struct srv *s = c->srv;
    struct srv_limits *l = &s->limits;
    bool grew = n > c->out_counted;
    l->output_bytes = l->output_bytes - c->out_counted + n;
    c->out_counted = n;
    if (grew && l->output_bytes > s->cfg.max_output_total)
        shed(s);
}

/* ---- the security log limiter ---- */

bool srv_seclog_allow(struct srv *s)
{
    struct srv_limits *l = &s->limits;
    uint64_t now = clock_ms();
    if (now - l->log_window_ms >= LIMITS_LOG_WINDOW_MS) {
        l->log_window_ms = now;
        l->log_in_window = 0;
    }
    if (l->log_in_window < s->cfg.security_log_rate) {
        l->log_in_window++;
        return true;
    }
    l->log_dropped++;
    l->log_dropped_unreported++;
    return false;
}

static void report_dropped(struct srv *s)
{
    struct srv_limits *l = &s->limits;
    if (!l->log_dropped_unreported || clock_ms() - l->log_window_ms < LIMITS_LOG_WINDOW_MS)
        return;
    LOGW(&s->log,
         "%llu AUTH-failure / NOPERM log and audit lines dropped (over --security-log-rate %u "
         "a second; %llu in all)",
         (unsigned long long)l->log_dropped_unreported, s->cfg.security_log_rate,
         (unsigned long long)l->log_dropped);
    srv_audit(s, NULL, "log.dropped", "%llu auth.failure / permission.denied lines dropped",
              (unsigned long long)l->log_dropped_unreported);
    l->log_dropped_unreported = 0;
}

/* ---- the sweep: the authentication deadline, the dropped-lines report ---- */

static void sweep_cb(uv_timer_t *t)
{
    struct srv *s = t->data;
    uint64_t now = clock_ms(), limit = s->cfg.auth_timeout;
    report_dropped(s);
    if (!s->auth.on || !limit)
        return;
    struct srv_conn *c = s->net.conns;
    while (c) {
        struct srv_conn *next = c->next;
        if (!c->closing && !c->user && now - c->created_ms >= limit) {
            s->limits.auth_timeouts++;
            LOGD(&s->log, "client %llu from %s closed: not authenticated within --auth-timeout",
                 (unsigned long long)c->id, c->addr);
            srv_conn_close(c);
        }
        c = next;
    }
}

void srv_limits_start(struct srv *s)
{
    struct srv_limits *l = &s->limits;
    uint64_t every = LIMITS_SWEEP_MAX_MS;
    if (s->auth.on && s->cfg.auth_timeout && s->cfg.auth_timeout / 4 < every)
        every = s->cfg.auth_timeout / 4 < 10 ? 10 : s->cfg.auth_timeout / 4;
    uv_timer_init(s->loop, &l->sweep);
    l->sweep.data = s;
    l->timers_on = true;
    uv_timer_start(&l->sweep, sweep_cb, every, every);
    uv_unref((uv_handle_t *)&l->sweep);
}

void srv_limits_stop(struct srv *s)
{
    struct srv_limits *l = &s->limits;
    if (!l->timers_on)
        return;
    l->timers_on = false;
    uv_close((uv_handle_t *)&l->sweep, NULL);
}

void srv_limits_free(struct srv *s)
{
    map_free(&s->limits.addrs, free);
}
