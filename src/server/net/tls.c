/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.c — the TLS engine of the client port (and of the HTTP port's own pair) over memory BIOs
 * (tls.h has the data flow and who owns what). Nothing here touches a socket or a connection:
 * conn_tls.c glues it to srv_conn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/addr.h"
#include "server/net/tls.h"

struct tls_conn {
    SSL *ssl;
    BIO *rbio, *wbio; /* owned by ssl */
    bool ready;
};

int tls_client_auth_parse(const char *v, enum tls_client_auth *out)
{
    static const char *const names[] = {"none", "optional", "require"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) {
            *out = (enum tls_client_auth)i;
            return 0;
        }
    return -1;
}

int tls_config_check(const struct tls_config *cfg, bool acl_on, char *err, size_t errlen)
{
    bool any = cfg->cert[0] || cfg->key[0] || cfg->ca[0] || cfg->client_auth || cfg->user_from_cn;
    const char *why = NULL;
    if (!any)
        return 0;
    if (!cfg->cert[0] || !cfg->key[0])
        why = "--tls-cert and --tls-key go together (and every other --tls-* flag needs them)";
    else if (cfg->client_auth != TLS_AUTH_NONE && !cfg->ca[0])
        why = "--tls-client-auth optional|require needs --tls-ca (the CA client certificates "
              "must be signed by)";
    else if (cfg->user_from_cn && (cfg->client_auth != TLS_AUTH_REQUIRE || !acl_on))
        why = "--tls-user-from-cn needs --tls-client-auth require and --acl-file";
    if (why)
        snprintf(err, errlen, "%s", why);
    return why ? -1 : 0;
}

/* OpenSSL's queued errors as one string (the queue is cleared). */
static void ssl_errors(char *err, size_t errlen)
{
    unsigned long e;
    size_t off = strlen(err);
    const char *last = NULL;
    while ((e = ERR_get_error()) != 0 && off + 2 < errlen) {
        const char *why = ERR_reason_error_string(e);
        if (!why || (last && !strcmp(why, last)))
            continue;
        last = why;
        snprintf(err + off, errlen - off, "%s%s", off ? ": " : "", why);
        off = strlen(err);
    }
    ERR_clear_error();
}

static int ctx_verify_mode(enum tls_client_auth a)
{
    if (a == TLS_AUTH_REQUIRE)
        return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    return a == TLS_AUTH_OPTIONAL ? SSL_VERIFY_PEER : SSL_VERIFY_NONE;
}

/* A context of `method` with what both sides share: TLS 1.2+, no renegotiation or
 * compression, whole-record writes (a reply is written once; partial writes would only
 * complicate the seal). NULL with the reason in err. */
static SSL_CTX *ctx_new(const SSL_METHOD *method, char *err, size_t errlen)
{
    err[0] = '\0';
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx) {
        ssl_errors(err, errlen);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_clear_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    return ctx;
}

/* A context for cfg: NULL with the reason in err. */
static SSL_CTX *ctx_build(const struct tls_config *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_server_method(), err, errlen);
    if (!ctx)
        return NULL;
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    const char *what = "certificate";
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert) != 1)
        goto fail;
    what = "key";
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->key, SSL_FILETYPE_PEM) != 1)
        goto fail;
    what = "key does not match the certificate";
    if (SSL_CTX_check_private_key(ctx) != 1)
        goto fail;
    if (cfg->ca[0]) {
        what = "CA";
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca);
        if (!names || SSL_CTX_load_verify_locations(ctx, cfg->ca, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names); /* owned by ctx */
    }
    SSL_CTX_set_verify(ctx, ctx_verify_mode(cfg->client_auth), NULL);
    return ctx;
fail:
    snprintf(err, errlen, "%s", what);
    ssl_errors(err, errlen);
    SSL_CTX_free(ctx);
    return NULL;
}

/* The client context for calls to other members (tls.h says what it checks): NULL with the
 * reason in err. */
static SSL_CTX *client_ctx_build(const struct tls_config *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_client_method(), err, errlen);
    if (!ctx)
        return NULL;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    const char *what = "client certificate";
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, cfg->key, SSL_FILETYPE_PEM) != 1)
        goto fail;
    /* Never the system's CAs: any publicly trusted certificate for the address
     * would get the peer password. Without --tls-ca nothing verifies (config/rules.c refuses to
     * start a node that calls other members without it). */
    what = "CA (client side)";
    if (cfg->ca[0] && SSL_CTX_load_verify_locations(ctx, cfg->ca, NULL) != 1)
        goto fail;
    return ctx;
fail:
    snprintf(err, errlen, "%s", what);
    ssl_errors(err, errlen);
    SSL_CTX_free(ctx);
    return NULL;
}

/* Both contexts, or neither (0 or -1 with the reason in err); cli NULL: the server side only
 * (the HTTP port's own pair calls nobody). */
static int ctx_pair_build(const struct tls_config *cfg, SSL_CTX **srv, SSL_CTX **cli, char *err,
                          size_t errlen)
{
    *srv = ctx_build(cfg, err, errlen);
    if (*srv && !cli)
        return 0;
    if (cli)
        *cli = *srv ? client_ctx_build(cfg, err, errlen) : NULL;
    if (cli && *cli)
        return 0;
    SSL_CTX_free(*srv);
    *srv = NULL;
    return -1;
}

/* What tls_new and tls_new_http share: `port` names the listener in logs, `calls` says whether
 * this node's calls to other members use the pair (a client_ctx is built). */
static struct srv_tls *tls_make(const struct tls_config *cfg, const char *port, bool calls,
                                struct logger *log)
{
    char err[512];
    struct srv_tls *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->cfg = *cfg;
    t->port = port;
    t->calls = calls;
    if (ctx_pair_build(cfg, &t->ctx, calls ? &t->client_ctx : NULL, err, sizeof err)) {
        LOGE(log, "TLS on the %s: %s (%s %s, %s %s%s%s)", port, err,
             calls ? "--tls-cert" : "--http-tls-cert", cfg->cert,
             calls ? "--tls-key" : "--http-tls-key", cfg->key, cfg->ca[0] ? ", --tls-ca " : "",
             cfg->ca);
        free(t);
        return NULL;
    }
    LOGI(log, "TLS on the %s: certificate %s, client certificates %s", port, cfg->cert,
         cfg->client_auth == TLS_AUTH_REQUIRE    ? "required"
         : cfg->client_auth == TLS_AUTH_OPTIONAL ? "optional"
                                                 : "not asked for");
    return t;
}

struct srv_tls *tls_new(const struct tls_config *cfg, struct logger *log)
{
    return tls_make(cfg, "client port", true, log);
}

struct srv_tls *tls_new_http(const struct tls_config *cfg, struct logger *log)
{
    return tls_make(cfg, "HTTP port", false, log);
}

void tls_free(struct srv_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    SSL_CTX_free(t->client_ctx);
    free(t);
}

int tls_reload(struct srv_tls *t, struct logger *log)
{
    char err[512];
    SSL_CTX *ctx, *cli = NULL;
    bool calls = t->calls, http = !calls; /* only the HTTP port's own pair calls nobody */
    if (ctx_pair_build(&t->cfg, &ctx, calls ? &cli : NULL, err, sizeof err)) {
        t->reload_failures++;
        LOGE(log, "SIGHUP: %sTLS certificate/key not reloaded (%s); the previous ones stay",
             http ? "HTTP port " : "", err);
        return -1;
    }
    SSL_CTX_free(t->ctx); /* open connections hold their own references */
    t->ctx = ctx;
    if (calls) {
        SSL_CTX_free(t->client_ctx);
        t->client_ctx = cli;
    }
    t->reloads++;
    LOGI(log, "SIGHUP: %sTLS certificate, key and CA reloaded", http ? "HTTP port " : "");
    return 0;
}

static struct tls_conn *conn_new(SSL_CTX *ctx, bool server)
{
    struct tls_conn *tc = calloc(1, sizeof(*tc));
    if (!tc)
        return NULL;
    tc->ssl = SSL_new(ctx);
    tc->rbio = BIO_new(BIO_s_mem());
    tc->wbio = BIO_new(BIO_s_mem());
    if (!tc->ssl || !tc->rbio || !tc->wbio) {
        SSL_free(tc->ssl);
        BIO_free(tc->rbio);
        BIO_free(tc->wbio);
        free(tc);
        return NULL;
    }
    /* an empty memory BIO means "no data yet", not end of file */
    BIO_set_mem_eof_return(tc->rbio, -1);
    SSL_set_bio(tc->ssl, tc->rbio, tc->wbio);
    if (server)
        SSL_set_accept_state(tc->ssl);
    else
        SSL_set_connect_state(tc->ssl);
    return tc;
}

struct tls_conn *tls_conn_new(struct srv_tls *t)
{
    return conn_new(t->ctx, true);
}

struct tls_conn *tls_conn_new_client(struct srv_tls *t, const char *host)
{
    struct tls_conn *tc = conn_new(t->client_ctx, false);
    if (!tc)
        return NULL;
    /* The server's certificate must name the address dialled: an IP literal as an IP SAN, a
     * name as a DNS SAN (or the CN without one), so another certificate of the same CA
     * cannot stand in for the member. */
    unsigned char ip[16];
    bool literal = addr_ip_bytes(host, ip) != 0;
    X509_VERIFY_PARAM *param = SSL_get0_param(tc->ssl);
    int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
                     : SSL_set1_host(tc->ssl, host) && SSL_set_tlsext_host_name(tc->ssl, host);
    if (ok != 1) {
        tls_conn_free(tc);
        return NULL;
    }
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return tc;
}

const char *tls_conn_verify_error(const struct tls_conn *tc)
{
    long v = SSL_get_verify_result(tc->ssl);
    return v == X509_V_OK ? NULL : X509_verify_cert_error_string(v);
}

void tls_conn_free(struct tls_conn *tc)
{
    if (!tc)
        return;
    SSL_free(tc->ssl);
    free(tc);
}

bool tls_conn_ready(const struct tls_conn *tc)
{
    return tc->ready;
}

/* The reason an SSL call failed, or NULL when it only needs more bytes. */
static const char *ssl_failed(SSL *ssl, int rc, char *err, size_t errlen)
{
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return NULL;
    err[0] = '\0';
    if (e == SSL_ERROR_ZERO_RETURN)
        return err; /* "": the client closed cleanly (close_notify) */
    ssl_errors(err, errlen);
    if (!err[0])
        snprintf(err, errlen, "TLS error %d", e);
    return err;
}

int tls_conn_feed(struct tls_conn *tc, const char *raw, size_t n, struct buf *in, char *err,
                  size_t errlen)
{
    int done = 0;
    ERR_clear_error();
    if (n && BIO_write(tc->rbio, raw, (int)n) != (int)n) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!tc->ready) {
        int rc = SSL_do_handshake(tc->ssl);
        if (rc != 1)
            return ssl_failed(tc->ssl, rc, err, errlen) ? -1 : 0;
        tc->ready = true;
        done = 1;
    }
    for (;;) {
        if (buf_reserve(in, 16 * 1024)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = SSL_read(tc->ssl, in->p + in->len, (int)(in->cap - in->len));
        if (rc <= 0)
            return ssl_failed(tc->ssl, rc, err, errlen) ? -1 : done;
        in->len += (size_t)rc;
    }
}

int tls_conn_seal(struct tls_conn *tc, struct buf *out, struct buf *wire)
{
    if (tc->ready && out->len) {
        ERR_clear_error();
        int rc = SSL_write(tc->ssl, out->p, (int)out->len);
        if (rc != (int)out->len)
            return -1; /* a memory BIO takes everything unless memory ran out */
        out->len = 0;
    }
    size_t pending;
    while ((pending = BIO_ctrl_pending(tc->wbio)) > 0) {
        if (buf_reserve(wire, pending))
            return -1;
        int rc = BIO_read(tc->wbio, wire->p + wire->len, (int)pending);
        if (rc <= 0)
            return -1;
        wire->len += (size_t)rc;
    }
    return 0;
}

int tls_conn_peer_cn(const struct tls_conn *tc, char *cn, size_t n)
{
    X509 *peer = SSL_get1_peer_certificate(tc->ssl);
    if (!peer)
        return -1;
    int len = -1;
    X509_NAME *subject = X509_get_subject_name(peer);
    if (SSL_get_verify_result(tc->ssl) == X509_V_OK) {
        /* the whole CN or nothing: a truncated one could name another user */
        int whole = X509_NAME_get_text_by_NID(subject, NID_commonName, NULL, 0);
        if (whole >= 0 && (size_t)whole < n &&
            X509_NAME_get_text_by_NID(subject, NID_commonName, cn, (int)n) == whole &&
            strlen(cn) == (size_t)whole)
            len = whole;
    }
    X509_free(peer);
    return len;
}
