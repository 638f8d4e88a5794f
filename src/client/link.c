/* SPDX-License-Identifier: Apache-2.0 */
/*
 * link.c — a client connection: socket, optional TLS, RESP through hiredis's reader (link.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/addr.h"
#include "client/link.h"
#include "fencelock.h"

#define LINK_READ_CHUNK (16 * 1024)

struct cl_link {
    int fd;
    SSL *ssl; /* NULL: plain TCP */
    redisReader *rd;
    bool tls_rejected; /* the last TLS failure was the peer's or a certificate's, not time */
    bool eof;          /* TLS: the socket read returned end of file (BIO_CTRL_EOF) */
    char err[160];
};

/* ---- the socket under TLS ----
 * OpenSSL's own socket BIO (SSL_set_fd) writes with write(2), which raises SIGPIPE once the
 * server has closed the connection: a request still being written when the server reset it,
 * or the fatal alert OpenSSL sends after an unexpected end of file. SIGPIPE's default action
 * kills the host program, which never asked for signals. This BIO does its socket I/O with
 * send(MSG_NOSIGNAL) / recv, so such a write fails with EPIPE and the call reports a broken
 * connection like any other. One method for the process, made once, never freed. */

static int sock_bio_write(BIO *b, const char *p, int n)
{
    const struct cl_link *l = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t w = send(l->fd, p, (size_t)n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)w;
}

static int sock_bio_read(BIO *b, char *p, int n)
{
    struct cl_link *l = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t r = recv(l->fd, p, (size_t)n, 0);
    if (r == 0)
        l->eof = true;
    else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_read(b);
    return (int)r;
}

/* What OpenSSL asks of a socket BIO: flush (nothing is buffered) and end of file (it tells an
 * unexpected EOF from an error). Everything else (kTLS, pending bytes) is "no". */
static long sock_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    const struct cl_link *l = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_EOF:
        return l->eof;
    default:
        return 0;
    }
}

static int sock_bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *sock_bio_method;
static pthread_once_t sock_bio_once = PTHREAD_ONCE_INIT;

static void sock_bio_make(void)
{
    int type = BIO_get_new_index();
    BIO_METHOD *m = type < 0 ? NULL : BIO_meth_new(type | BIO_TYPE_SOURCE_SINK, "fencelock socket");
    if (m && (!BIO_meth_set_write(m, sock_bio_write) || !BIO_meth_set_read(m, sock_bio_read) ||
              !BIO_meth_set_ctrl(m, sock_bio_ctrl) || !BIO_meth_set_create(m, sock_bio_create))) {
        BIO_meth_free(m);
        m = NULL;
    }
    sock_bio_method = m;
}

/* A BIO doing l's socket I/O without SIGPIPE; NULL out of memory. The SSL that takes it frees
 * it; the link outlives the SSL. */
static BIO *sock_bio_new(struct cl_link *l)
{
    pthread_once(&sock_bio_once, sock_bio_make);
    BIO *b = sock_bio_method ? BIO_new(sock_bio_method) : NULL;
    if (b)
        BIO_set_data(b, l);
    return b;
}

/* OpenSSL's queued errors (and a failed verification's reason) appended to err. */
static void ssl_reason(SSL *ssl, char *err, size_t errlen)
{
    size_t off = strlen(err);
    unsigned long e;
    while ((e = ERR_get_error()) != 0 && off + 3 < errlen) {
        const char *why = ERR_reason_error_string(e);
        if (!why)
            continue;
        snprintf(err + off, errlen - off, ": %s", why);
        off = strlen(err);
    }
    long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (v != X509_V_OK && off + 3 < errlen)
        snprintf(err + off, errlen - off, " (%s)", X509_verify_cert_error_string(v));
    ERR_clear_error();
}

struct ssl_ctx_st *cl_tls_ctx_new(const char *ca, const char *cert, const char *key, char *err,
                                  size_t errlen)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    const char *what = "TLS context";
    if (!ctx)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* a record's header and body in one read(2), not two (cl_link_pending sees what is kept) */
    SSL_CTX_set_read_ahead(ctx, 1);
    what = ca ? ca : "the system's CA certificates";
    if (ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1
           : SSL_CTX_set_default_verify_paths(ctx) != 1)
        goto fail;
    if ((cert != NULL) != (key != NULL)) {
        what = "a client certificate needs its key (and a key its certificate)";
        goto fail;
    }
    what = cert;
    if (cert && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        goto fail;
    what = key;
    if (key && (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
                SSL_CTX_check_private_key(ctx) != 1))
        goto fail;
    return ctx;
fail:
    snprintf(err, errlen, "TLS: %s", what);
    ssl_reason(NULL, err, errlen);
    SSL_CTX_free(ctx);
    return NULL;
}

void cl_tls_ctx_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

struct ssl_ctx_st *cl_tls_ctx_ref(struct ssl_ctx_st *ctx)
{
    if (ctx)
        SSL_CTX_up_ref(ctx);
    return ctx;
}

/* 1 when fd is ready for `ev`, 0 at `until`, -1 on a poll error. */
static int wait_fd(int fd, short ev, int64_t until)
{
    for (;;) {
        int64_t left = until - fl_now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = ev};
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : n > 0;
    }
}

static int link_fail(struct cl_link *l, const char *msg)
{
    snprintf(l->err, sizeof l->err, "%s", msg);
    return -1;
}

/* After an SSL call returned rc <= 0: wait as it asks (0), or fail (-1, reason in l->err). */
static int ssl_wait(struct cl_link *l, int rc, int64_t until, const char *what)
{
    int e = SSL_get_error(l->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        int w = wait_fd(l->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, until);
        return w > 0 ? 0 : link_fail(l, w == 0 ? "no reply in time" : strerror(errno));
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return link_fail(l, "connection closed by the server");
    l->tls_rejected = true;
    snprintf(l->err, sizeof l->err, "TLS %s failed", what);
    if (e == SSL_ERROR_SYSCALL && !ERR_peek_error())
        snprintf(l->err, sizeof l->err, "TLS %s: connection closed by the server", what);
    ssl_reason(l->ssl, l->err, sizeof l->err);
    return -1;
}

/* A non-blocking socket connected to one address by `until`: fd, or -1 (errno set). */
static int tcp_connect(const struct addrinfo *a, int64_t until)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        int e = errno, soerr = 0;
        socklen_t sl = sizeof soerr;
        if (e != EINPROGRESS) {
            close(fd);
            errno = e;
            return -1;
        }
        int w = wait_fd(fd, POLLOUT, until);
        if (w <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
            close(fd);
            errno = w == 0 ? ETIMEDOUT : soerr ? soerr : errno;
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int tls_start(struct cl_link *l, SSL_CTX *ctx, const char *name, int64_t until)
{
    unsigned char ip[16];
    ERR_clear_error();
    if (!(l->ssl = SSL_new(ctx)))
        return link_fail(l, "TLS: out of memory");
    BIO *b = sock_bio_new(l);
    if (!b)
        return link_fail(l, "TLS: out of memory");
    SSL_set_bio(l->ssl, b, b); /* the SSL owns b (one reference for both directions) */
    bool is_ip = addr_ip_bytes(name, ip) != 0;
    if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), name) != 1
              : SSL_set1_host(l->ssl, name) != 1 || SSL_set_tlsext_host_name(l->ssl, name) != 1)
        return link_fail(l, "TLS: bad server name");
    int rc;
    while ((rc = SSL_connect(l->ssl)) != 1)
        if (ssl_wait(l, rc, until, "handshake"))
            return -1;
    return 0;
}

struct cl_link *cl_link_open(struct ssl_ctx_st *ctx, const char *server_name, const char *host,
                             int port, int64_t until, enum cl_link_fail *why, char *err,
                             size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    *why = CL_LINK_FAILED;
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) {
        snprintf(err, errlen, "%s", gai_strerror(rc));
        return NULL;
    }
    int fd = -1, e = 0;
    for (const struct addrinfo *a = res; a && fd < 0; a = a->ai_next)
        if ((fd = tcp_connect(a, until)) < 0)
            e = errno;
    freeaddrinfo(res);
    if (fd < 0) {
        *why = e == ECONNREFUSED ? CL_LINK_REFUSED : CL_LINK_FAILED;
        snprintf(err, errlen, "%s", strerror(e));
        return NULL;
    }
    struct cl_link *l = calloc(1, sizeof(*l));
    if (!l || !(l->rd = redisReaderCreate())) {
        free(l);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->fd = fd;
    if (ctx && tls_start(l, ctx, server_name ? server_name : host, until)) {
        snprintf(err, errlen, "%s", l->err);
        *why = l->tls_rejected ? CL_LINK_TLS : CL_LINK_FAILED;
        cl_link_free(l);
        return NULL;
    }
    return l;
}

void cl_link_free(struct cl_link *l)
{
    if (!l)
        return;
    SSL_free(l->ssl);
    if (l->rd)
        redisReaderFree(l->rd);
    close(l->fd);
    free(l);
}

int cl_link_fd(const struct cl_link *l)
{
    return l->fd;
}

const char *cl_link_err(const struct cl_link *l)
{
    return l->err;
}

void cl_link_set_err(struct cl_link *l, const char *msg)
{
    snprintf(l->err, sizeof l->err, "%s", msg);
}

bool cl_link_pending(const struct cl_link *l)
{
    return l->rd->len > l->rd->pos || (l->ssl && SSL_has_pending(l->ssl));
}

bool cl_link_idle_ok(struct cl_link *l)
{
    struct pollfd p = {.fd = l->fd, .events = POLLIN};
    if (cl_link_pending(l))
        return false;
    if (poll(&p, 1, 0) == 0)
        return true;
    if (!l->ssl)
        return false;
    /* TLS may deliver records that carry no data (a session ticket): those are fine */
    char c;
    ERR_clear_error();
    int rc = SSL_read(l->ssl, &c, 1);
    bool ok = rc <= 0 && SSL_get_error(l->ssl, rc) == SSL_ERROR_WANT_READ;
    ERR_clear_error();
    return ok;
}

/* Not common/io.h's io_write_all: the socket is non-blocking, may carry TLS, waits at most until
 * the deadline, and a failure marks the link broken (link_fail) with its reason. */
static int link_send_all(struct cl_link *l, const char *p, size_t n, int64_t until)
{
    while (n) {
        ssize_t w;
        if (l->ssl) {
            ERR_clear_error();
            int rc = SSL_write(l->ssl, p, (int)n);
            if (rc <= 0) {
                if (ssl_wait(l, rc, until, "write"))
                    return -1;
                continue;
            }
            w = rc;
        } else if ((w = send(l->fd, p, n, MSG_NOSIGNAL)) < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return link_fail(l, strerror(errno));
            int r = wait_fd(l->fd, POLLOUT, until);
            if (r <= 0)
                return link_fail(l, r == 0 ? "send timed out" : strerror(errno));
            continue;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int cl_link_send(struct cl_link *l, int argc, const char **argv, const size_t *len, int64_t until)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, len);
    if (n < 0)
        return link_fail(l, "out of memory");
    int rc = link_send_all(l, cmd, (size_t)n, until);
    redisFreeCommand(cmd);
    return rc;
}

/* Read what arrived (waiting until `until` for something) into the reader. 0 or -1. */
static int read_some(struct cl_link *l, int64_t until)
{
    char buf[LINK_READ_CHUNK];
    for (;;) {
        ssize_t n;
        if (l->ssl) {
            ERR_clear_error();
            int rc = SSL_read(l->ssl, buf, sizeof buf);
            if (rc <= 0) {
                if (ssl_wait(l, rc, until, "read"))
                    return -1;
                continue;
            }
            n = rc;
        } else if ((n = recv(l->fd, buf, sizeof buf, 0)) <= 0) {
            if (n == 0)
                return link_fail(l, "connection closed by the server");
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return link_fail(l, strerror(errno));
            int r = wait_fd(l->fd, POLLIN, until);
            if (r <= 0)
                return link_fail(l, r == 0 ? "no reply in time" : strerror(errno));
            continue;
        }
        if (redisReaderFeed(l->rd, buf, (size_t)n) != REDIS_OK)
            return link_fail(l, "out of memory");
        return 0;
    }
}

redisReply *cl_link_reply(struct cl_link *l, int64_t until)
{
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(l->rd, &r) != REDIS_OK) {
            snprintf(l->err, sizeof l->err, "protocol error: %s", l->rd->errstr);
            return NULL;
        }
        if (r)
            return r;
        if (read_some(l, until))
            return NULL;
    }
}

redisReply *cl_link_call(struct cl_link *l, int argc, const char **argv, const size_t *len,
                         int64_t until)
{
    return cl_link_send(l, argc, argv, len, until) ? NULL : cl_link_reply(l, until);
}
