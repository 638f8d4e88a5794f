/* SPDX-License-Identifier: Apache-2.0 */
#include "common/list.h"
#include "server/obs/http.h"
#include "common/addr.h"
#include "common/proto.h"
#include "server/net/tls.h"
#include "server/obs/http_parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After the reply, how long to keep reading (and discarding) what the client still sends: closing
 * with unread bytes makes the kernel send RST, which can destroy the reply before it is read. */
#define LINGER_MS 2000

/* ST_READING -> (serve) ST_WRITING, or ST_WAITING (taken by the async handler) -> (complete)
 * ST_WRITING -> (on_shutdown) ST_DRAINING; any state -> closed (conn_close). */
enum conn_state { ST_READING, ST_WAITING, ST_WRITING, ST_DRAINING, ST_STREAMING };

struct http_conn;

/* Owned by whoever took the request; c is NULL once the connection closed. */
struct srv_http_pending {
    struct http_conn *c;
    int head_only; /* a HEAD: the body is measured, not sent */
};

struct http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    struct srv_http *srv;
    struct http_conn *prev, *next;
    enum conn_state state;
    int closing;
    int open_handles; /* tcp + timer; the struct is freed when both close callbacks ran */
    struct srv_http_pending *pending; /* ST_WAITING: the taken request, else NULL */
    /* ST_STREAMING: the owner's callback (NULL once it ended the stream) and queued bytes */
    srv_http_stream_cb stream_cb;
    void *stream_arg;
    size_t stream_pending;
    struct buf head, body;
    struct tls_conn *tls; /* --http-tls: this connection's TLS state, else NULL */
    struct buf plain;     /* TLS: what one read decrypted, before it is copied into `in` */
    size_t in_len;
    char in[SRV_HTTP_MAX_HEAD];
};

struct srv_http {
    uv_loop_t *loop;
    uv_tcp_t listener;
    srv_http_handler handler;
    void *arg;
    srv_http_async_handler async;
    void *async_arg;
    struct http_conn *conns; /* every open connection, newest first, for srv_http_stop */
    size_t nconns;
    size_t nlive;       /* connections not closing: what max_conns bounds */
    uint64_t evictions; /* idle connections closed to make room for a new one */
    unsigned max_conns;
    uint64_t idle_ms;
    int stopping;
    int listener_open;   /* until the listener's close callback ran */
    struct srv_tls *tls; /* --http-tls: the client port's TLS (not owned), else NULL */
    struct srv_http_tls_stats tls_stats;
};

/* ---- lifetime ---- */

static void maybe_free_srv(struct srv_http *h)
{
    if (h->stopping && !h->listener_open && h->nconns == 0)
        free(h);
}

static void on_conn_handle_closed(uv_handle_t *hd)
{
    struct http_conn *c = hd->data;
    if (--c->open_handles > 0)
        return;
    struct srv_http *h = c->srv;
    DLIST_UNLINK(h->conns, c);
    h->nconns--;
    buf_free(&c->head);
    buf_free(&c->body);
    buf_free(&c->plain);
    tls_conn_free(c->tls);
    free(c);
    maybe_free_srv(h);
}

static void conn_close(struct http_conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->srv->nlive--;
    if (c->pending) { /* its taker still completes it; the answer is dropped */
        c->pending->c = NULL;
        c->pending = NULL;
    }
    if (c->stream_cb) { /* the stream's owner forgets it now */
        srv_http_stream_cb cb = c->stream_cb;
        c->stream_cb = NULL;
        cb(c->stream_arg, true);
    }
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

static void on_timeout(uv_timer_t *t)
{
    struct http_conn *c = t->data;
    if (c->tls && !tls_conn_ready(c->tls)) { /* --tls-handshake-timeout */
        c->srv->tls_stats.timeouts++;
        c->srv->tls_stats.failures++;
    }
    conn_close(c);
}

static void arm_timer(struct http_conn *c, uint64_t ms)
{
    uv_timer_stop(&c->timer);
    uv_timer_start(&c->timer, on_timeout, ms, 0);
}

/* ---- responses ---- */

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 307:
        return "Temporary Redirect";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 408:
        return "Request Timeout";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    }
    return status < 400 ? "Status" : status < 500 ? "Client Error" : "Server Error";
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);

static void alloc_cb(uv_handle_t *hd, size_t suggested, uv_buf_t *b)
{
    struct http_conn *c = hd->data;
    (void)suggested;
    if (c->tls) { /* ciphertext goes to the shared buffer, read at once (net/tls.h) */
        *b = uv_buf_init(c->srv->tls->raw, TLS_RAW_CHUNK);
        return;
    }
    if (c->state == ST_DRAINING || c->state == ST_STREAMING) {
        /* the request area is no longer needed: reuse it to discard input */
        *b = uv_buf_init(c->in, sizeof(c->in));
        return;
    }
    *b = uv_buf_init(c->in + c->in_len, (unsigned)(sizeof(c->in) - c->in_len));
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct http_conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    c->state = ST_DRAINING;
    arm_timer(c, c->srv->idle_ms < LINGER_MS ? c->srv->idle_ms : LINGER_MS);
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read))
        conn_close(c);
}

static void on_write(uv_write_t *req, int status)
{
    struct http_conn *c = req->data;
    if (c->closing)
        return;
    c->sreq.data = c;
    if (status < 0 || uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown))
        conn_close(c);
}

/* ---- writes the connection does not wait for ---- */

/* Handshake records, alerts and stream data: each a copy of its bytes, freed by its callback
 * (the one owner of such writes; a reply's write is the connection's own `wreq`). */
struct owned_write {
    uv_write_t req;
    struct http_conn *c;
    size_t len;
    int stream; /* counted in stream_pending, reported to the stream's owner */
    char data[];
};

static void on_owned_write(uv_write_t *req, int status)
{
    struct owned_write *w = req->data;
    struct http_conn *c = w->c;
    int stream = w->stream;
    if (stream)
        c->stream_pending -= w->len;
    free(w);
    if (c->closing)
        return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (stream && c->stream_cb)
        c->stream_cb(c->stream_arg, false);
}

/* Queue a copy of p[0..n) (n > 0). 0, or -1 (out of memory, or the write failed). */
static int write_owned(struct http_conn *c, const char *p, size_t n, int stream)
{
    struct owned_write *w = malloc(sizeof(*w) + n);
    if (!w)
        return -1;
    memcpy(w->data, p, n);
    w->len = n;
    w->c = c;
    w->stream = stream;
    w->req.data = w;
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_owned_write)) {
        free(w);
        return -1;
    }
    if (stream)
        c->stream_pending += n;
    return 0;
}

/* Encrypt p[0..n) (n may be 0: only what OpenSSL has pending, e.g. handshake records) and
 * queue every ciphertext byte as one write. 0, or -1 (out of memory, or the write failed). */
static int tls_send(struct http_conn *c, const char *p, size_t n, int stream)
{
    /* tls_conn_seal only reads the plaintext and empties `len`: a view of p, not a copy */
    struct buf view = {.p = (char *)p, .len = n}, wire = {0};
    int rc = -1;
    if (!tls_conn_seal(c->tls, &view, &wire))
        rc = wire.len ? write_owned(c, wire.p, wire.len, stream) : 0;
    buf_free(&wire);
    return rc;
}

/* Queue head + body (body omitted for HEAD) and stop reading until it is written. */
static void respond(struct http_conn *c, int status, const char *ctype, int send_body,
                    const char *extra_headers)
{
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->state = ST_WRITING;
    if (status < 100 || status > 599)
        status = 500;
    buf_reset(&c->head);
    if (buf_printf(&c->head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                   "Connection: close\r\n\r\n",
                   status, reason(status), ctype ? ctype : "text/plain", c->body.len,
                   extra_headers ? extra_headers : "")) {
        conn_close(c);
        return;
    }
    unsigned nbufs = send_body && c->body.len ? 2 : 1;
    if (c->tls) { /* the reply as ciphertext, in `head`; the body is no longer needed */
        struct buf wire = {0};
        if ((nbufs == 2 && buf_append(&c->head, c->body.p, c->body.len)) ||
            tls_conn_seal(c->tls, &c->head, &wire)) {
            buf_free(&wire);
            conn_close(c);
            return;
        }
        buf_free(&c->head);
        c->head = wire;
        nbufs = 1;
    }
    uv_buf_t bufs[2] = {uv_buf_init(c->head.p, (unsigned)c->head.len),
                        uv_buf_init(c->body.p, (unsigned)c->body.len)};
    arm_timer(c, c->srv->idle_ms);
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, nbufs, on_write))
        conn_close(c);
}

static void respond_error(struct http_conn *c, int status, const char *extra_headers)
{
    buf_reset(&c->body);
    if (buf_printf(&c->body, "%s\n", reason(status))) {
        conn_close(c);
        return;
    }
    respond(c, status, "text/plain; charset=utf-8", 1, extra_headers);
}

/* Offer the request to the async handler; 1 if it took it (the connection then waits for
 * srv_http_complete, reading nothing more: one request per connection). */
static int take_async(struct http_conn *c, const struct http_req *r, size_t head_len)
{
    struct srv_http *h = c->srv;
    if (!h->async)
        return 0;
    struct srv_http_pending *p = calloc(1, sizeof(*p));
    if (!p)
        return 0;
    p->c = c;
    p->head_only = strcmp(r->method, "HEAD") == 0;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->state = ST_WAITING;
    c->pending = p;
    char peer[64] = "";
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            uv_ip4_name((struct sockaddr_in *)&ss, peer, sizeof(peer));
        else if (ss.ss_family == AF_INET6)
            uv_ip6_name((struct sockaddr_in6 *)&ss, peer, sizeof(peer));
    }
    char cn[256] = "";
    if (c->tls && tls_conn_peer_cn(c->tls, cn, sizeof(cn)) < 0)
        cn[0] = '\0';
    struct srv_http_request req = {r->method, r->path, r->query,       c->in,
                                   head_len,  peer,    c->tls != NULL, cn};
    if (!h->async(h->async_arg, &req, p)) {
        c->pending = NULL;
        c->state = ST_READING;
        free(p);
        return 0;
    }
    /* the answer may have come already (and the connection closed); else bound the wait */
    if (!c->closing && c->state == ST_WAITING)
        arm_timer(c, h->idle_ms);
    return 1;
}

static void serve(struct http_conn *c, size_t head_len)
{
    struct http_req *r = malloc(sizeof(*r)); /* the path copy is too big for the stack budget */
    if (!r) {
        conn_close(c);
        return;
    }
    if (http_parse_head(c->in, head_len, r)) {
        respond_error(c, 400, NULL);
    } else if (!strcmp(r->method, "POST")) {
        /* the one write (POST /v1/locks/{name}/revoke) is the async handler's to take; its
         * body, if any, is never read (the parameters are in the query) */
        if (!take_async(c, r, head_len))
            respond_error(c, 405, "Allow: GET, HEAD\r\n");
    } else if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
        respond_error(c, 405, "Allow: GET, HEAD\r\n");
    } else if (!take_async(c, r, head_len)) {
        int status = 200;
        const char *ctype = "text/plain; charset=utf-8";
        buf_reset(&c->body);
        c->srv->handler(c->srv->arg, r->method, r->path, &c->body, &status, &ctype);
        /* the handler may have stopped the server; a body cut short by OOM is not sent */
        if (!c->closing && buf_failed(&c->body))
            respond_error(c, 500, NULL);
        else if (!c->closing)
            respond(c, status, ctype, strcmp(r->method, "HEAD") != 0, NULL);
    }
    free(r);
}

static void on_plain(struct http_conn *c);

/* TLS: n bytes arrived in the shared buffer. Handshake or decrypt, answer the handshake, and
 * hand the plaintext to the request parser (what does not fit in the head area is a 431). */
static void on_tls_read(struct http_conn *c, size_t n)
{
    struct srv_http *h = c->srv;
    char err[256];
    bool was_ready = tls_conn_ready(c->tls);
    buf_reset(&c->plain);
    int rc = tls_conn_feed(c->tls, h->tls->raw, n, &c->plain, err, sizeof(err));
    if (rc < 0) {
        if (err[0] && !was_ready)
            h->tls_stats.failures++;
        if (err[0]) { /* the alert OpenSSL queued, best effort: the socket closes now */
            struct buf wire = {0}, none = {0};
            if (!tls_conn_seal(c->tls, &none, &wire) && wire.len) {
                uv_buf_t b = uv_buf_init(wire.p, (unsigned)wire.len);
                (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
            }
            buf_free(&wire);
        }
        conn_close(c);
        return;
    }
    if (rc == 1) { /* the handshake's deadline is over; the request's starts */
        h->tls_stats.handshakes++;
        arm_timer(c, h->idle_ms);
    }
    if (tls_send(c, NULL, 0, 0)) {
        conn_close(c);
        return;
    }
    if (c->state != ST_READING || !c->plain.len)
        return; /* draining or streaming: discarded */
    size_t room = sizeof(c->in) - c->in_len;
    size_t k = c->plain.len < room ? c->plain.len : room;
    memcpy(c->in + c->in_len, c->plain.p, k);
    c->in_len += k;
    on_plain(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct http_conn *c = s->data;
    (void)b;
    if (c->closing)
        return;
    if (nread < 0) {
        /* EOF or error: before a full request there is nobody to answer; while draining the
         * client has read the reply and hung up */
        conn_close(c);
        return;
    }
    if (c->tls) {
        if (nread > 0)
            on_tls_read(c, (size_t)nread);
        return;
    }
    if (c->state != ST_READING || nread == 0)
        return;
    c->in_len += (size_t)nread;
    on_plain(c);
}

/* New bytes of the request head are in `in`: serve it once complete. */
static void on_plain(struct http_conn *c)
{
    size_t end = http_head_end(c->in, c->in_len);
    if (end)
        serve(c, end);
    else if (c->in_len == sizeof(c->in))
        respond_error(c, 431, NULL);
}

/* ---- accepting ---- */

static void free_handle_cb(uv_handle_t *hd)
{
    free(hd);
}

/* Over the cap: accept and close at once, so the kernel backlog does not fill up with
 * connections nobody will serve. */
static void reject(uv_stream_t *server)
{
    uv_tcp_t *t = malloc(sizeof(*t));
    if (!t)
        return;
    if (uv_tcp_init(server->loop, t)) {
        free(t);
        return;
    }
    uv_accept(server, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, free_handle_cb);
}

/* At the cap, the oldest connection still waiting for its request is closed so the new one
 * is served: a probe of /health always gets an answer, however many connections sit idle (a
 * client sends its request at once; one that has not is the one to drop). 0 if every
 * connection is busy answering. */
static int evict_oldest_idle(struct srv_http *h)
{
    struct http_conn *c = h->conns, *victim = NULL;
    for (; c; c = c->next) /* newest first: the last match is the oldest */
        if (!c->closing && c->state == ST_READING)
            victim = c;
    if (!victim)
        return 0;
    h->evictions++;
    conn_close(victim);
    return 1;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct srv_http *h = server->data;
    if (status < 0 || h->stopping)
        return;
    if (h->nlive >= h->max_conns && !evict_oldest_idle(h)) {
        reject(server);
        return;
    }
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        reject(server);
        return;
    }
    c->srv = h;
    c->tcp.data = c->timer.data = c;
    uv_tcp_init(h->loop, &c->tcp);
    uv_timer_init(h->loop, &c->timer);
    c->open_handles = 2;
    DLIST_PUSH(h->conns, c);
    h->nconns++;
    h->nlive++;
    if (h->tls && !(c->tls = tls_conn_new(h->tls))) {
        conn_close(c);
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) ||
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read)) {
        conn_close(c);
        return;
    }
    /* with TLS the handshake gets --tls-handshake-timeout, then the request idle_ms */
    arm_timer(c, h->tls ? h->tls->cfg.handshake_ms : h->idle_ms);
}

/* ---- public API ---- */

static void on_listener_closed(uv_handle_t *hd)
{
    struct srv_http *h = hd->data;
    h->listener_open = 0;
    maybe_free_srv(h);
}

static int fail_start(struct srv_http *h, int rc, const char *what, char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", what, uv_strerror(rc));
    srv_http_stop(h);
    return -1;
}

int srv_http_start(uv_loop_t *loop, const char *host, int port, srv_http_handler handler, void *arg,
                   struct srv_http **out, char *err, size_t errlen)
{
    *out = NULL;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (!host || !handler || port < 0 || port > 65535 || addr_ip_sockaddr(host, port, &ss)) {
        if (err && errlen)
            snprintf(err, errlen, "bad http listen address %s:%d", host ? host : "(null)", port);
        return -1;
    }
    struct srv_http *h = calloc(1, sizeof(*h));
    if (!h) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->loop = loop;
    h->handler = handler;
    h->arg = arg;
    h->max_conns = SRV_HTTP_MAX_CONNS;
    h->idle_ms = SRV_HTTP_IDLE_MS;
    int rc = uv_tcp_init(loop, &h->listener);
    if (rc) {
        free(h);
        if (err && errlen)
            snprintf(err, errlen, "http listener: %s", uv_strerror(rc));
        return -1;
    }
    h->listener.data = h;
    h->listener_open = 1;
    rc = uv_tcp_bind(&h->listener, (const struct sockaddr *)&ss, 0);
    if (rc)
        return fail_start(h, rc, "http bind", err, errlen);
    rc = uv_listen((uv_stream_t *)&h->listener, 128, on_connection);
    if (rc)
        return fail_start(h, rc, "http listen", err, errlen);
    *out = h;
    return 0;
}

void srv_http_set_tls(struct srv_http *h, struct srv_tls *t)
{
    if (h)
        h->tls = t;
}

struct srv_http_tls_stats srv_http_tls_stats(const struct srv_http *h)
{
    struct srv_http_tls_stats none = {0};
    return h ? h->tls_stats : none;
}

void srv_http_set_async(struct srv_http *h, srv_http_async_handler fn, void *arg)
{
    if (!h)
        return;
    h->async = fn;
    h->async_arg = arg;
}

void srv_http_complete(struct srv_http_pending *p, int status, const char *ctype, const char *body,
                       size_t len)
{
    srv_http_complete_h(p, status, ctype, NULL, body, len);
}

void srv_http_complete_h(struct srv_http_pending *p, int status, const char *ctype,
                         const char *extra_headers, const char *body, size_t len)
{
    struct http_conn *c = p->c;
    int send_body = !p->head_only;
    free(p);
    if (!c || c->closing)
        return;
    c->pending = NULL;
    buf_reset(&c->body);
    if (buf_append(&c->body, body, len)) {
        respond_error(c, 500, NULL);
        return;
    }
    respond(c, status, ctype, send_body, extra_headers);
}

const char *srv_http_header(const struct srv_http_request *req, const char *name, size_t *len)
{
    return http_parse_header(req->head, req->head_len, name, len);
}

void srv_http_set_limits(struct srv_http *h, unsigned max_conns, uint64_t idle_ms)
{
    if (!h)
        return;
    if (max_conns)
        h->max_conns = max_conns;
    if (idle_ms)
        h->idle_ms = idle_ms;
}

uint64_t srv_http_evictions(const struct srv_http *h)
{
    return h ? h->evictions : 0;
}

int srv_http_port(const struct srv_http *h)
{
    if (!h || h->stopping)
        return -1;
    struct sockaddr_storage ss;
    int n = sizeof(ss);
    if (uv_tcp_getsockname(&h->listener, (struct sockaddr *)&ss, &n))
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

void srv_http_stop(struct srv_http *h)
{
    if (!h || h->stopping)
        return;
    h->stopping = 1;
    uv_close((uv_handle_t *)&h->listener, on_listener_closed);
    for (struct http_conn *c = h->conns; c; c = c->next)
        conn_close(c);
}

/* ---- streams ---- */

struct srv_http_stream *srv_http_stream_begin(struct srv_http_pending *p, const char *ctype,
                                              const char *extra_headers, srv_http_stream_cb cb,
                                              void *arg)
{
    struct http_conn *c = p->c;
    free(p);
    if (!c || c->closing)
        return NULL;
    c->pending = NULL;
    uv_timer_stop(&c->timer); /* a stream has no idle timeout: the client's EOF ends it */
    c->state = ST_STREAMING;
    buf_reset(&c->head);
    if (buf_printf(&c->head,
                   "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nCache-Control: no-cache\r\n%s"
                   "Connection: close\r\n\r\n",
                   ctype, extra_headers ? extra_headers : "")) {
        conn_close(c);
        return NULL;
    }
    c->stream_cb = cb;
    c->stream_arg = arg;
    struct srv_http_stream *st = (struct srv_http_stream *)c;
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read) ||
        srv_http_stream_write(st, c->head.p, c->head.len)) {
        c->stream_cb = NULL; /* the caller learns it from NULL, not from the callback */
        conn_close(c);
        return NULL;
    }
    return st;
}

int srv_http_stream_write(struct srv_http_stream *st, const char *data, size_t len)
{
    struct http_conn *c = (struct http_conn *)st;
    if (c->closing)
        return -1;
    if (c->tls)
        return tls_send(c, data, len, 1);
    return len ? write_owned(c, data, len, 1) : 0;
}

size_t srv_http_stream_pending(const struct srv_http_stream *st)
{
    return ((const struct http_conn *)st)->stream_pending;
}

void srv_http_stream_end(struct srv_http_stream *st)
{
    struct http_conn *c = (struct http_conn *)st;
    c->stream_cb = NULL;
    conn_close(c);
}
