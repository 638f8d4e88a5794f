/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_tls.c — mutual TLS on the Raft port: the context every connection's
 * session comes from, writing a session's records to a libuv stream, and the inbound half (a
 * link's ciphertext in, plaintext into the link's buffer for the validator).
 *
 * Sessions use memory BIOs: the transport keeps doing its own libuv reads and writes, so TLS
 * adds no thread, no blocking call and no extra system call on the inbound path. What is
 * checked: TLS 1.2 or later; each side presents a certificate that chains to --peer-tls-ca
 * (SSL_VERIFY_FAIL_IF_NO_PEER_CERT: no anonymous client); and the certificate is a
 * member's, for the id it speaks as: extendedKeyUsage serverAuth AND clientAuth (an
 * application's clientAuth-only certificate from the same CA is not a peer), and the name
 * --peer-cert-name makes of the Raft id (fencelock-node-%d by default) as a SAN DNS name or,
 * in a certificate without one, the subject CN. Inbound, the id is the one libraft's handshake
 * claims, checked before that handshake is accepted (tp_tls_identity from link_handshake), so
 * not one frame from a certificate that names another id reaches libraft; outbound, the id
 * this node dialled. The certificate's names are not checked against addresses: a cluster is
 * addressed by IP and members change at run time, the Raft id is the identity.
 * Renegotiation is off and no session tickets are issued: a peer connection lives long and a
 * resumption cache would only be state to bound.
 */
#include "raft/transport_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

/* One uv_write of TLS records; freed by write_done. */
struct tls_write {
    uv_write_t req;
    tp_tls_written_cb cb;
    size_t len;
    uint8_t data[];
};

const char *tp_tls_error(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    if (!e)
        snprintf(buf, len, "connection closed during the TLS handshake");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static int tls_ctx_load(SSL_CTX *ctx, const char *cert, const char *key, const char *ca, char *err,
                        size_t errlen)
{
    const char *what = NULL, *file = NULL;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        what = "certificate", file = cert;
    else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        what = "private key", file = key;
    else if (SSL_CTX_check_private_key(ctx) != 1)
        what = "private key does not match the certificate", file = key;
    else if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
        what = "CA", file = ca;
    if (!what)
        return 0;
    char why[RN_TP_TLS_ERRLEN];
    snprintf(err, errlen, "peer TLS: %s %s: %s", what, file, tp_tls_error(why, sizeof(why)));
    return -1;
}

bool rn_tp_name_pattern_ok(const char *pattern)
{
    size_t n = strlen(pattern);
    const char *d = strstr(pattern, "%d");
    if (!n || n > RN_TP_NAME_PATTERN_MAX || !d)
        return false;
    for (const char *p = pattern; *p; p++) {
        if (p == d) {
            p++; /* the one %d */
            continue;
        }
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
            *p != '-' && *p != '.')
            return false;
    }
    return true;
}

int rn_tp_peer_name(const char *pattern, uint64_t id, char *out, size_t cap)
{
    const char *d = strstr(pattern, "%d");
    if (!d)
        return -1;
    int k = snprintf(out, cap, "%.*s%llu%s", (int)(d - pattern), pattern, (unsigned long long)id,
                     d + 2);
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* A peer certificate is used both ways: it accepts (serverAuth) and dials (clientAuth). A
 * certificate without the extension is not taken as "any use": a client certificate made
 * without one must not pass either. */
static bool eku_peer(X509 *x)
{
    uint32_t flags = X509_get_extension_flags(x);
    uint32_t xku = X509_get_extended_key_usage(x);
    return (flags & EXFLAG_XKUSAGE) && (xku & XKU_SSL_SERVER) && (xku & XKU_SSL_CLIENT);
}

static int cert_identity(const char *pattern, X509 *x, uint64_t id, char *why, size_t len)
{
    char name[RN_TP_NAME_PATTERN_MAX + 24];
    if (!x) {
        snprintf(why, len, "no peer certificate");
        return -1;
    }
    if (!eku_peer(x)) {
        snprintf(why, len, "certificate lacks extendedKeyUsage serverAuth and clientAuth");
        return -1;
    }
    if (rn_tp_peer_name(pattern, id, name, sizeof(name)) ||
        X509_check_host(x, name, strlen(name), X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1) {
        snprintf(why, len, "certificate does not name Raft id %llu (%s)", (unsigned long long)id,
                 name);
        return -1;
    }
    return 0;
}

int tp_tls_identity(struct tp *tp, SSL *ssl, uint64_t id, char *why, size_t len)
{
    return cert_identity(tp->name_pattern, SSL_get0_peer_certificate(ssl), id, why, len);
}

int rn_transport_tls(struct raft_uv_transport *t, const struct rn_tp_tls *cfg, char *err,
                     size_t errlen)
{
    struct tp *tp = t->impl;
    char why[RN_TP_TLS_ERRLEN];
    ERR_clear_error();
    if (!cfg->name_pattern || !rn_tp_name_pattern_ok(cfg->name_pattern)) {
        snprintf(err, errlen, "peer TLS: bad certificate name pattern");
        return -1;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    /* a reload keeps the read buffer: only the context changes */
    uint8_t *in = tp->tls_in ? tp->tls_in : malloc(RN_TP_TLS_READ);
    char *pattern = strdup(cfg->name_pattern);
    if (!ctx || !in || !pattern) {
        snprintf(err, errlen, "peer TLS: out of memory");
        goto fail;
    }
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
        snprintf(err, errlen, "peer TLS: cannot require TLS 1.2");
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    if (tls_ctx_load(ctx, cfg->cert, cfg->key, cfg->ca, err, errlen))
        goto fail;
    /* Our own certificate goes to every peer, which holds it to the rule below: a node whose
     * certificate would be refused by all its peers is refused here, naming the fix. */
    if (cert_identity(pattern, SSL_CTX_get0_certificate(ctx), cfg->self_id, why, sizeof(why))) {
        snprintf(err, errlen,
                 "peer TLS: %s: %s (every member's certificate needs both and the "
                 "name --peer-cert-name makes of its id)",
                 cfg->cert, why);
        goto fail;
    }
    SSL_CTX_free(tp->tls); /* sessions made with the old one hold their own references */
    tp->tls = ctx;
    tp->tls_in = in;
    free(tp->name_pattern);
    tp->name_pattern = pattern;
    return 0;
fail:
    SSL_CTX_free(ctx);
    free(pattern);
    if (in != tp->tls_in)
        free(in);
    return -1;
}

void tp_tls_free(struct tp *tp)
{
    SSL_CTX_free(tp->tls);
    free(tp->tls_in);
    free(tp->name_pattern);
    tp->tls = NULL;
    tp->tls_in = NULL;
    tp->name_pattern = NULL;
}

SSL *tp_tls_session(struct tp *tp, bool server)
{
    SSL *ssl = SSL_new(tp->tls);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    if (!ssl || !rb || !wb) {
        SSL_free(ssl);
        BIO_free(rb);
        BIO_free(wb);
        return NULL;
    }
    /* An empty memory BIO reads as "retry", not EOF: SSL_read then says WANT_READ. */
    BIO_set_mem_eof_return(rb, -1);
    SSL_set_bio(ssl, rb, wb); /* the session owns both */
    if (server)
        SSL_set_accept_state(ssl);
    else
        SSL_set_connect_state(ssl);
    return ssl;
}

static void write_done(uv_write_t *w, int status)
{
    struct tls_write *tw = (struct tls_write *)w;
    tp_tls_written_cb cb = tw->cb;
    void *owner = w->handle->data;
    size_t len = tw->len;
    free(tw);
    if (cb)
        cb(owner, status, len);
}

long tp_tls_flush(SSL *ssl, uv_stream_t *s, tp_tls_written_cb cb)
{
    BIO *wb = SSL_get_wbio(ssl);
    size_t n = BIO_ctrl_pending(wb);
    if (n == 0)
        return 0;
    if (n > LONG_MAX || n > UINT_MAX)
        return -1;
    struct tls_write *tw = malloc(sizeof(*tw) + n);
    if (!tw)
        return -1;
    if (BIO_read(wb, tw->data, (int)n) != (int)n) {
        free(tw);
        return -1;
    }
    /* Written at once when the socket has room (the usual case): no request, no callback, and
     * no POLLOUT round in libuv (each completed uv_write on a stream that is also being read
     * costs an epoll_ctl). uv_try_write refuses while earlier writes wait, so order holds. */
    uv_buf_t b = uv_buf_init((char *)tw->data, (unsigned)n);
    int k = uv_try_write(s, &b, 1);
    if (k < 0 && k != UV_EAGAIN) {
        free(tw);
        return -1;
    }
    size_t done = k > 0 ? (size_t)k : 0;
    if (done == n) {
        free(tw);
        return 0;
    }
    tw->cb = cb;
    tw->len = n - done;
    b = uv_buf_init((char *)tw->data + done, (unsigned)(n - done));
    if (uv_write(&tw->req, s, &b, 1, write_done)) {
        free(tw);
        return -1;
    }
    return (long)(n - done);
}

/* ---- inbound: a link's TLS layer ---- */

static void link_tls_reject(struct link *l)
{
    char why[RN_TP_TLS_ERRLEN];
    tp_link_reject(l, RN_WIRE_TLS, tp_tls_error(why, sizeof(why)));
}

/* Handshake records (and a TLS 1.3 key update's answer) go back to the peer; an inbound link
 * writes nothing else. */
static int link_tls_flush(struct link *l)
{
    return tp_tls_flush(l->ssl, (uv_stream_t *)&l->tcp, NULL) < 0 ? -1 : 0;
}

/* Continue the handshake; true once it is through (peer certificate verified). */
static bool link_tls_handshake(struct link *l)
{
    int rc = SSL_do_handshake(l->ssl);
    int e = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, rc);
    if (link_tls_flush(l)) {
        tp_link_close(l);
        return false;
    }
    if (e == SSL_ERROR_NONE) {
        l->tls_up = true;
        return true;
    }
    if (e != SSL_ERROR_WANT_READ)
        link_tls_reject(l);
    return false;
}

/* Decrypt into the link's buffer as long as records are complete, pumping after each piece:
 * the buffer and its cap work as without TLS (the validator asks for room, tp_link_room
 * grants it within buffer_cap). */
static void link_tls_read(struct link *l)
{
    for (;;) {
        if (tp_link_room(l)) {
            if (l->over_cap)
                tp_link_reject(l, RN_WIRE_BUFFER_CAP, NULL);
            else
                tp_link_close(l);
            return;
        }
        size_t room = l->cap - l->len;
        int k = SSL_read(l->ssl, l->buf + l->len, room > INT_MAX ? INT_MAX : (int)room);
        if (k > 0) {
            l->len += (size_t)k;
            tp_link_pump(l);
            if (l->state == L_CLOSING)
                return;
            continue;
        }
        int e = SSL_get_error(l->ssl, k);
        if (link_tls_flush(l)) {
            tp_link_close(l);
            return;
        }
        if (e == SSL_ERROR_WANT_READ)
            return;
        if (e == SSL_ERROR_ZERO_RETURN)
            tp_link_eof(l); /* close_notify: as a TCP EOF */
        else
            link_tls_reject(l);
        return;
    }
}

void tp_tls_link_input(struct link *l, const uint8_t *p, size_t n)
{
    ERR_clear_error();
    l->tls_seen = true;
    if (BIO_write(SSL_get_rbio(l->ssl), p, (int)n) != (int)n) {
        tp_link_close(l);
        return;
    }
    if (!l->tls_up && !link_tls_handshake(l))
        return;
    link_tls_read(l);
}
