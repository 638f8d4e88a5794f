/* SPDX-License-Identifier: Apache-2.0 */
/* test_tls.c — the client port's TLS engine (src/server/net/tls.c) without sockets: an OpenSSL
 * client over memory BIOs talks to a tls_conn; handshake, data both ways, garbage, a required
 * client certificate, a member's client session (tls_conn_new_client) against a server engine,
 * the flag checks and the reload that keeps the old pair on failure.
 * Certificates are made here (self-signed P-256) in a temporary directory. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/net/tls.h"
#include "test.h"

static char dir[64];
static struct logger lg;

static void path(char *out, const char *name)
{
    snprintf(out, TLS_PATH_MAX, "%s/%s", dir, name);
}

/* A self-signed certificate for CN=cn (and subjectAltName `san`, or none) as name.crt /
 * name.key. */
static int make_cert(const char *name, const char *cn, const char *san)
{
    char p[TLS_PATH_MAX];
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!k || !x)
        return -1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, n);
    if (san) {
        X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
        if (!e || !X509_add_ext(x, e, -1)) {
            X509_EXTENSION_free(e);
            X509_free(x);
            EVP_PKEY_free(k);
            return -1;
        }
        X509_EXTENSION_free(e);
    }
    int ok = X509_sign(x, k, EVP_sha256()) > 0;
    snprintf(p, sizeof p, "%s/%s.crt", dir, name);
    FILE *f = fopen(p, "w");
    ok = ok && f && PEM_write_X509(f, x);
    if (f)
        fclose(f);
    snprintf(p, sizeof p, "%s/%s.key", dir, name);
    f = fopen(p, "w");
    ok = ok && f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    if (f)
        fclose(f);
    X509_free(x);
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

static struct tls_config config(const char *cert, enum tls_client_auth a)
{
    struct tls_config c = {.client_auth = a, .handshake_ms = 1000};
    char p[64];
    snprintf(p, sizeof p, "%s.crt", cert);
    path(c.cert, p);
    snprintf(p, sizeof p, "%s.key", cert);
    path(c.key, p);
    if (a != TLS_AUTH_NONE)
        path(c.ca, "client.crt"); /* the self-signed client certificate is its own CA */
    return c;
}

struct peer {
    SSL_CTX *ctx;
    SSL *ssl;
    BIO *in, *out;
};

static void peer_init(struct peer *p, const char *cert)
{
    char c[TLS_PATH_MAX], k[TLS_PATH_MAX], ca[TLS_PATH_MAX];
    p->ctx = SSL_CTX_new(TLS_client_method());
    path(ca, "server.crt");
    SSL_CTX_load_verify_locations(p->ctx, ca, NULL);
    SSL_CTX_set_verify(p->ctx, SSL_VERIFY_PEER, NULL);
    if (cert) {
        snprintf(k, sizeof k, "%s/%s.crt", dir, cert);
        snprintf(c, sizeof c, "%s/%s.key", dir, cert);
        SSL_CTX_use_certificate_file(p->ctx, k, SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(p->ctx, c, SSL_FILETYPE_PEM);
    }
    p->ssl = SSL_new(p->ctx);
    p->in = BIO_new(BIO_s_mem());
    p->out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(p->in, -1);
    SSL_set_bio(p->ssl, p->in, p->out);
    SSL_set_connect_state(p->ssl);
}

static void peer_free(struct peer *p)
{
    SSL_free(p->ssl);
    SSL_CTX_free(p->ctx);
}

/* Move bytes both ways until neither side has any; the last feed's result. */
static int pump(struct peer *p, struct tls_conn *tc, struct buf *in, struct buf *out)
{
    int rc = 0;
    for (int round = 0; round < 20; round++) {
        char b[16384];
        SSL_do_handshake(p->ssl);
        int n = BIO_read(p->out, b, sizeof b);
        char err[256];
        if (n > 0 && (rc = tls_conn_feed(tc, b, (size_t)n, in, err, sizeof err)) < 0)
            return rc;
        struct buf wire = {0};
        if (tls_conn_seal(tc, out, &wire))
            return -2;
        if (wire.len)
            BIO_write(p->in, wire.p, (int)wire.len);
        bool idle = n <= 0 && wire.len == 0;
        buf_free(&wire);
        if (idle)
            break;
    }
    return rc;
}

TEST(test_handshake_and_data_both_ways_over_memory)
{
    struct tls_config cfg = config("server", TLS_AUTH_NONE);
    struct srv_tls *t = tls_new(&cfg, &lg);
    CHECK(t != NULL);
    struct tls_conn *tc = tls_conn_new(t);
    struct peer p;
    peer_init(&p, NULL);
    struct buf in = {0}, out = {0};
    CHECK(pump(&p, tc, &in, &out) >= 0);
    CHECK(tls_conn_ready(tc) && SSL_is_init_finished(p.ssl));
    CHECK(SSL_write(p.ssl, "PING\r\n", 6) == 6);
    CHECK(pump(&p, tc, &in, &out) >= 0);
    CHECK(in.len == 6 && memcmp(in.p, "PING\r\n", 6) == 0);
    buf_append(&out, "+PONG\r\n", 7);
    CHECK(pump(&p, tc, &in, &out) >= 0);
    CHECK_EQ_U64(out.len, 0); /* consumed by the seal */
    char got[16];
    CHECK(SSL_read(p.ssl, got, sizeof got) == 7 && memcmp(got, "+PONG\r\n", 7) == 0);
    char cn[64];
    CHECK(tls_conn_peer_cn(tc, cn, sizeof cn) == -1); /* no client certificate */
    buf_free(&in);
    buf_free(&out);
    peer_free(&p);
    tls_conn_free(tc);
    tls_free(t);
}

TEST(test_garbage_and_plain_resp_fail_the_handshake_and_yield_no_plaintext)
{
    struct tls_config cfg = config("server", TLS_AUTH_NONE);
    struct srv_tls *t = tls_new(&cfg, &lg);
    const char *inputs[] = {"*1\r\n$4\r\nPING\r\n", "GET / HTTP/1.1\r\n\r\n",
                            "\x16\x03\x01\xff\xff garbage"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        struct tls_conn *tc = tls_conn_new(t);
        struct buf in = {0};
        char err[256];
        int rc = tls_conn_feed(tc, inputs[i], strlen(inputs[i]), &in, err, sizeof err);
        /* the bad record header is enough, or more bytes are awaited (the deadline ends it) */
        CHECK(rc == -1 || (rc == 0 && i == 2));
        CHECK_EQ_U64(in.len, 0);
        CHECK(!tls_conn_ready(tc));
        buf_free(&in);
        tls_conn_free(tc);
    }
    tls_free(t);
}

/* Random bytes, in random pieces: never plaintext, never a crash (ASan/UBSan watch). */
TEST(test_random_bytes_never_yield_plaintext)
{
    struct tls_config cfg = config("server", TLS_AUTH_NONE);
    struct srv_tls *t = tls_new(&cfg, &lg);
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        struct tls_conn *tc = tls_conn_new(t);
        struct buf in = {0}, wire = {0}, none = {0};
        char b[2048], err[256];
        int rc = 0;
        for (int piece = 0; piece < 4 && rc >= 0; piece++) {
            size_t n = 1 + rand_r(&seed) % sizeof b;
            for (size_t i = 0; i < n; i++)
                b[i] = (char)rand_r(&seed);
            if (round % 3 == 0 && piece == 0) /* a plausible record header first */
                memcpy(b, "\x16\x03\x01", 3);
            rc = tls_conn_feed(tc, b, n, &in, err, sizeof err);
            CHECK(tls_conn_seal(tc, &none, &wire) == 0);
        }
        CHECK(rc <= 0 && in.len == 0 && !tls_conn_ready(tc));
        buf_free(&in);
        buf_free(&wire);
        tls_conn_free(tc);
    }
    tls_free(t);
}

TEST(test_required_client_certificate_refused_without_accepted_with_and_cn_read)
{
    struct tls_config cfg = config("server", TLS_AUTH_REQUIRE);
    struct srv_tls *t = tls_new(&cfg, &lg);
    CHECK(t != NULL);
    struct buf in = {0}, out = {0};
    struct tls_conn *tc = tls_conn_new(t);
    struct peer p;
    peer_init(&p, NULL);
    CHECK(pump(&p, tc, &in, &out) == -1);
    CHECK(!tls_conn_ready(tc));
    peer_free(&p);
    tls_conn_free(tc);

    tc = tls_conn_new(t);
    peer_init(&p, "client");
    CHECK(pump(&p, tc, &in, &out) >= 0);
    CHECK(tls_conn_ready(tc));
    char cn[64];
    CHECK(tls_conn_peer_cn(tc, cn, sizeof cn) == 3 && strcmp(cn, "app") == 0);
    CHECK(tls_conn_peer_cn(tc, cn, 3) == -1); /* too long for the buffer: not truncated */
    peer_free(&p);
    tls_conn_free(tc);
    buf_free(&in);
    buf_free(&out);
    tls_free(t);
}

/* Two engines: a member's client session (tls_conn_new_client) against another member's
 * client port. Bytes move both ways until neither side has any; -1 once either side failed. */
static int pump_members(struct tls_conn *cli, struct tls_conn *srv, struct buf *cout,
                        struct buf *cin, struct buf *sin)
{
    char err[256];
    struct buf none = {0};
    if (tls_conn_feed(cli, NULL, 0, cin, err, sizeof err) < 0)
        return -1;
    for (int round = 0; round < 20; round++) {
        struct buf c2s = {0}, s2c = {0};
        int rc = tls_conn_seal(cli, cout, &c2s) ? -2 : 0;
        if (!rc && c2s.len && tls_conn_feed(srv, c2s.p, c2s.len, sin, err, sizeof err) < 0)
            rc = -1;
        if (!rc && tls_conn_seal(srv, &none, &s2c))
            rc = -2;
        if (!rc && s2c.len && tls_conn_feed(cli, s2c.p, s2c.len, cin, err, sizeof err) < 0)
            rc = -1;
        bool idle = c2s.len == 0 && s2c.len == 0;
        buf_free(&c2s);
        buf_free(&s2c);
        if (rc || idle)
            return rc;
    }
    return 0;
}

TEST(test_member_client_session_verifies_the_server_and_presents_its_certificate)
{
    struct tls_config scfg = config("server", TLS_AUTH_REQUIRE); /* trusts client.crt */
    struct tls_config ccfg = config("client", TLS_AUTH_NONE);
    path(ccfg.ca, "server.crt"); /* the calling member trusts the server's certificate */
    struct srv_tls *st = tls_new(&scfg, &lg), *ct = tls_new(&ccfg, &lg);
    CHECK(st != NULL && ct != NULL);
    struct tls_conn *cli = tls_conn_new_client(ct, "127.0.0.1"), *srv = tls_conn_new(st);
    struct buf cout = {0}, cin = {0}, sin = {0};
    buf_append(&cout, "*1\r\n$4\r\nPING\r\n", 14); /* queued before the handshake */
    CHECK(pump_members(cli, srv, &cout, &cin, &sin) == 0);
    CHECK(tls_conn_ready(cli) && tls_conn_ready(srv));
    CHECK(tls_conn_verify_error(cli) == NULL);
    CHECK(sin.len == 14 && memcmp(sin.p, "*1\r\n$4\r\nPING", 12) == 0);
    char cn[64];
    CHECK(tls_conn_peer_cn(srv, cn, sizeof cn) == 3 && strcmp(cn, "app") == 0);
    tls_conn_free(cli);
    tls_conn_free(srv);

    /* a member that trusts another CA refuses the server: no plaintext either way */
    struct tls_config wrong = ccfg;
    path(wrong.ca, "client.crt");
    struct srv_tls *wt = tls_new(&wrong, &lg);
    CHECK(wt != NULL);
    cli = tls_conn_new_client(wt, "127.0.0.1");
    srv = tls_conn_new(st);
    sin.len = 0;
    buf_append(&cout, "PING\r\n", 6);
    CHECK(pump_members(cli, srv, &cout, &cin, &sin) == -1);
    CHECK(!tls_conn_ready(cli) && tls_conn_verify_error(cli) != NULL && sin.len == 0);
    tls_conn_free(cli);
    tls_conn_free(srv);

    /* the right CA, but the certificate does not name the address dialled: no
     * plaintext either, by IP or by name */
    const char *others[] = {"10.0.0.9", "member.example"};
    for (size_t i = 0; i < 2; i++) {
        cli = tls_conn_new_client(ct, others[i]);
        srv = tls_conn_new(st);
        sin.len = 0;
        CHECK(pump_members(cli, srv, &cout, &cin, &sin) == -1);
        CHECK(!tls_conn_ready(cli) && tls_conn_verify_error(cli) != NULL && sin.len == 0);
        tls_conn_free(cli);
        tls_conn_free(srv);
    }

    /* no --tls-ca: nothing verifies (never the system's CAs) */
    struct tls_config none = ccfg;
    none.ca[0] = 0;
    struct srv_tls *nt = tls_new(&none, &lg);
    CHECK(nt != NULL);
    cli = tls_conn_new_client(nt, "127.0.0.1");
    srv = tls_conn_new(st);
    sin.len = 0;
    CHECK(pump_members(cli, srv, &cout, &cin, &sin) == -1);
    CHECK(!tls_conn_ready(cli) && sin.len == 0);
    tls_conn_free(cli);
    tls_conn_free(srv);
    tls_free(nt);

    /* a reload rebuilds the client context too */
    struct ssl_ctx_st *old = ct->client_ctx;
    CHECK(tls_reload(ct, &lg) == 0 && ct->client_ctx != old && ct->client_ctx != NULL);
    buf_free(&cout);
    buf_free(&cin);
    buf_free(&sin);
    tls_free(wt);
    tls_free(ct);
    tls_free(st);
}

TEST(test_flags_are_checked_together)
{
    char err[200];
    struct tls_config c = {0};
    enum tls_client_auth a;
    CHECK(tls_config_check(&c, false, err, sizeof err) == 0); /* TLS off */
    CHECK(tls_client_auth_parse("require", &a) == 0 && a == TLS_AUTH_REQUIRE);
    CHECK(tls_client_auth_parse("sometimes", &a) == -1);
    c = config("server", TLS_AUTH_NONE);
    c.key[0] = 0;
    CHECK(tls_config_check(&c, false, err, sizeof err) == -1 && strstr(err, "go together"));
    c = config("server", TLS_AUTH_REQUIRE);
    c.ca[0] = 0;
    CHECK(tls_config_check(&c, false, err, sizeof err) == -1 && strstr(err, "--tls-ca"));
    c = config("server", TLS_AUTH_OPTIONAL);
    c.user_from_cn = true;
    CHECK(tls_config_check(&c, true, err, sizeof err) == -1);
    c.client_auth = TLS_AUTH_REQUIRE;
    CHECK(tls_config_check(&c, false, err, sizeof err) == -1);
    CHECK(tls_config_check(&c, true, err, sizeof err) == 0);
}

TEST(test_reload_keeps_the_old_context_when_the_new_pair_does_not_load)
{
    struct tls_config cfg = config("server", TLS_AUTH_NONE);
    struct srv_tls *t = tls_new(&cfg, &lg);
    CHECK(t != NULL);
    struct ssl_ctx_st *old = t->ctx;
    path(t->cfg.key, "client.key"); /* does not match server.crt */
    CHECK(tls_reload(t, &lg) == -1 && t->ctx == old && t->reload_failures == 1);
    path(t->cfg.key, "server.key");
    CHECK(tls_reload(t, &lg) == 0 && t->reloads == 1);
    struct tls_config bad = cfg;
    path(bad.cert, "missing.crt");
    CHECK(tls_new(&bad, &lg) == NULL);
    tls_free(t);
}

/* The HTTP port's own pair: a server context only, reloaded and counted like the client
 * port's (a key that does not match keeps the old context). */
TEST(test_http_pair_has_no_client_side_and_reloads_alone)
{
    struct tls_config cfg = config("server", TLS_AUTH_NONE);
    struct srv_tls *t = tls_new_http(&cfg, &lg);
    CHECK(t != NULL && t->ctx != NULL && t->client_ctx == NULL && !t->calls);
    struct ssl_ctx_st *old = t->ctx;
    path(t->cfg.key, "client.key");
    CHECK(tls_reload(t, &lg) == -1 && t->ctx == old && t->reload_failures == 1);
    CHECK(t->client_ctx == NULL);
    path(t->cfg.key, "server.key");
    CHECK(tls_reload(t, &lg) == 0 && t->reloads == 1 && t->client_ctx == NULL);
    tls_free(t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/fl-test-tls-XXXXXX");
    if (!mkdtemp(dir) || make_cert("server", "127.0.0.1", "IP:127.0.0.1") ||
        make_cert("client", "app", NULL)) {
        fprintf(stderr, "cannot make test certificates in %s\n", dir);
        return 1;
    }
    lg = (struct logger){.level = LOG_ERROR, .id = 1};
    RUN(test_handshake_and_data_both_ways_over_memory);
    RUN(test_garbage_and_plain_resp_fail_the_handshake_and_yield_no_plaintext);
    RUN(test_random_bytes_never_yield_plaintext);
    RUN(test_required_client_certificate_refused_without_accepted_with_and_cn_read);
    RUN(test_member_client_session_verifies_the_server_and_presents_its_certificate);
    RUN(test_flags_are_checked_together);
    RUN(test_reload_keeps_the_old_context_when_the_new_pair_does_not_load);
    RUN(test_http_pair_has_no_client_side_and_reloads_alone);
    const char *names[] = {"server.crt", "server.key", "client.crt", "client.key"};
    for (size_t i = 0; i < 4; i++) {
        char p[TLS_PATH_MAX];
        path(p, names[i]);
        unlink(p);
    }
    rmdir(dir);
    TEST_MAIN_END();
}
