/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn_tls.c — the client port's TLS glued to the connections (tls.h is the engine and says
 * who owns what): loading and reloading the files (the HTTP port's own pair too), a connection's
 * handshake, its deadline, a failed handshake's alert, and --tls-user-from-cn. conn.c calls in here
 * only when s->net.tls.
 */
#include <ctype.h>
#include <string.h>

#include "common/clock.h"
#include "server/server.h"

/* The files just loaded: their expiry for /metrics (obs/certexp.h). */
static void note_expiry(struct srv *s)
{
    certexp_note(&s->certs, SRV_CERT_TLS, s->cfg.tls.cert, &s->log);
    certexp_note(&s->certs, SRV_CERT_TLS_CA, s->cfg.tls.ca, &s->log);
}

/* The HTTP port's own pair (--http-tls-cert): only the pair and the handshake deadline. No CA,
 * so no client certificate is asked for: the port faces browsers, which have none of the
 * cluster's CA; its users authenticate with Basic or a bearer token (docs/security.md "The
 * HTTP port"). A client certificate on the HTTP port needs --http-tls with the client port's
 * pair. 0, or -1 (logged). */
static int http_tls_init(struct srv *s)
{
    struct tls_config hc = {0};
    if (!s->cfg.http_tls_cert[0])
        return 0;
    snprintf(hc.cert, sizeof hc.cert, "%s", s->cfg.http_tls_cert);
    snprintf(hc.key, sizeof hc.key, "%s", s->cfg.http_tls_key);
    hc.handshake_ms = s->cfg.tls.handshake_ms;
    s->net.http_tls = tls_new_http(&hc, &s->log);
    if (!s->net.http_tls)
        return -1;
    certexp_note(&s->certs, SRV_CERT_HTTP_TLS, hc.cert, &s->log);
    return 0;
}

int srv_tls_init(struct srv *s)
{
    if (http_tls_init(s))
        return -1;
    if (!s->cfg.tls.cert[0])
        return 0;
    s->net.tls = tls_new(&s->cfg.tls, &s->log);
    if (!s->net.tls)
        return -1;
    note_expiry(s);
    return 0;
}

void srv_tls_free(struct srv *s)
{
    tls_free(s->net.tls);
    s->net.tls = NULL;
    tls_free(s->net.http_tls);
    s->net.http_tls = NULL;
}

void srv_tls_reload(struct srv *s)
{
    if (s->net.tls && tls_reload(s->net.tls, &s->log) == 0)
        note_expiry(s);
    /* its own pair: a bad one keeps the old, whatever the client port's did */
    if (s->net.http_tls && tls_reload(s->net.http_tls, &s->log) == 0)
        certexp_note(&s->certs, SRV_CERT_HTTP_TLS, s->cfg.http_tls_cert, &s->log);
}

int srv_conn_tls_start(struct srv_conn *c)
{
    c->tls = tls_conn_new(c->srv->net.tls);
    return c->tls ? 0 : -1;
}

/* At most one line every 10 s: garbage sent to the port must not become a log storm. */
static void log_failure(struct srv_conn *c, const char *what, const char *why)
{
    struct srv_tls *t = c->srv->net.tls;
    uint64_t now = clock_ms();
    if (t->fail_logged_ms && now - t->fail_logged_ms < 10000) {
        LOGD(&c->srv->log, "client %llu: TLS %s: %s", (unsigned long long)c->id, what, why);
        return;
    }
    t->fail_logged_ms = now;
    LOGI(&c->srv->log, "client %llu closed: TLS %s: %s (%llu failed handshakes so far)",
         (unsigned long long)c->id, what, why, (unsigned long long)t->failures);
}

/* Send the alert OpenSSL queued (best effort: the socket is closed right after). */
static void send_alert(struct srv_conn *c)
{
    struct buf wire = {0}, none = {0};
    if (!c->writing && !tls_conn_seal(c->tls, &none, &wire) && wire.len) {
        uv_buf_t b = uv_buf_init(wire.p, (unsigned)wire.len);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    buf_free(&wire);
}

/* --tls-user-from-cn: the verified certificate's CN names the ACL user. A CN that names no
 * user leaves the connection unauthenticated (it may still AUTH). */
static void user_from_cn(struct srv_conn *c)
{
    struct srv *s = c->srv;
    char cn[256];
    int n = tls_conn_peer_cn(c->tls, cn, sizeof cn);
    if (n <= 0)
        return;
    c->user = acl_user_find(&s->auth.acl, cn, (size_t)n);
    for (int i = 0; i < n; i++) /* the CN is client-chosen text: keep it out of log syntax */
        if (!isprint((unsigned char)cn[i]))
            cn[i] = '?';
    if (c->user) {
        srv_limits_authed(c);
        LOGD(&s->log, "client %llu: authenticated as '%s' by its certificate",
             (unsigned long long)c->id, cn);
    } else {
        LOGI(&s->log, "client %llu: certificate CN '%s' is no ACL user; it must AUTH",
             (unsigned long long)c->id, cn);
    }
}

bool srv_conn_tls_read(struct srv_conn *c, size_t n)
{
    struct srv *s = c->srv;
    char err[256];
    bool was_ready = tls_conn_ready(c->tls);
    int rc = tls_conn_feed(c->tls, s->net.tls->raw, n, &c->in, err, sizeof err);
    if (rc < 0 && !err[0]) { /* close_notify: an orderly close, like EOF on a plain port */
        srv_conn_close(c);
        return false;
    }
    if (rc < 0) {
        if (!was_ready)
            s->net.tls->failures++;
        log_failure(c, was_ready ? "error" : "handshake failed", err);
        send_alert(c);
        srv_conn_close(c);
        return false;
    }
    if (rc == 1) {
        s->net.tls->handshakes++;
        srv_limits_handshake_done(c);
        if (s->net.tls->cfg.user_from_cn && s->auth.on)
            user_from_cn(c);
    }
    return true;
}

bool srv_conn_tls_overdue(struct srv_conn *c, uint64_t now)
{
    struct srv_tls *t = c->srv->net.tls;
    if (tls_conn_ready(c->tls) || now - c->created_ms < t->cfg.handshake_ms)
        return false;
    t->timeouts++;
    t->failures++;
    log_failure(c, "handshake", "not finished within --tls-handshake-timeout");
    return true;
}
