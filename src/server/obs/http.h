/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http — a minimal HTTP/1.1 server on libuv: /metrics, /health, /v1/fence, the JSON API and its
 * Server-Sent Events streams (the routes are http_routes.c, http_fence.c, http_api.c,
 * http_events.c).
 *
 * Owns: the listening handle, every accepted connection (request head buffer, response
 * buffers, idle timer) and the struct srv_http itself. One request per connection: the reply
 * carries Content-Length and `Connection: close`, then the connection is shut down, drained and
 * closed. Only GET and HEAD reach the handler, and POST the async handler (which may decline
 * it: 405); bad requests get 400/405/431 without them.
 * Invariants: at most max_conns connections are open and not closing; at the cap a new
 * connection closes the oldest one still waiting for its request (srv_http_evictions counts
 * them) or, if every one is busy answering, is closed at once itself; each connection lives
 * at most idle_ms waiting for its request and idle_ms again to send the reply.
 * srv_http_stop starts closing everything; the memory is freed by libuv close callbacks, so the
 * loop must run afterwards. Everything runs on the loop thread.
 * TLS (srv_http_set_tls, --http-tls): a connection accepted after it speaks TLS with the
 * client port's srv_tls (net/tls.h: its context, reloaded on SIGHUP, and its shared read
 * buffer); each connection owns its struct tls_conn. Plaintext reaches the request parser only
 * after the handshake (and the client-certificate check of --tls-client-auth); a handshake not
 * done within --tls-handshake-timeout is closed. Every byte written goes through the
 * connection's TLS state, in write order.
 * Deferred answers (srv_http_set_async): a request the async handler takes waits, not reading,
 * until srv_http_complete; its struct srv_http_pending belongs to the taker, who must complete
 * it exactly once (that frees it). A connection that closes first (idle_ms passed, stop) is
 * detached from it: the answer is then dropped.
 */
#ifndef FENCELOCK_HTTP_H
#define FENCELOCK_HTTP_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "server/obs/http_parse.h" /* SRV_HTTP_MAX_HEAD */

#define SRV_HTTP_MAX_CONNS 64 /* default bound on concurrent connections */
#define SRV_HTTP_IDLE_MS 5000 /* default time allowed to send the request */

struct srv_http;

/* Fill body; set *status (200, 404, 503...) and *ctype (static string). Called on the loop
 * thread with method "GET" or "HEAD" and the path without its query string. Defaults on entry:
 * *status 200, *ctype "text/plain; charset=utf-8". For HEAD the body is measured, not sent. */
typedef void (*srv_http_handler)(void *arg, const char *method, const char *path, struct buf *body,
                                 int *status, const char **ctype);

/* A request taken by the async handler, to be answered by srv_http_complete. */
struct srv_http_pending;

/* What the async handler sees of a GET or HEAD request; valid during the call only. */
struct srv_http_request {
    const char *method;
    const char *path;  /* without the query string */
    const char *query; /* what follows '?', not decoded; "" without one */
    const char *head;  /* the whole request head, for srv_http_header */
    size_t head_len;
    const char *peer; /* the client's IP address as text; "" when unknown */
    bool tls;         /* the request came over TLS */
    const char *cn;   /* TLS: the verified client certificate's CN; "" when none */
};

/* Asked first for every GET/HEAD/POST request (a declined POST is answered 405). 0: not taken (the
 * plain handler answers it, and p is freed by http.c); 1: taken: the handler answers p with
 * srv_http_complete, now or later. */
typedef int (*srv_http_async_handler)(void *arg, const struct srv_http_request *req,
                                      struct srv_http_pending *p);

/* Listen on host:port (IPv4 or IPv6 literal; port 0 picks a free port, see srv_http_port).
 * 0, or -1 with a message in err and *out = NULL (a handle already created is closed and freed
 * by its close callback on the next loop run). */
int srv_http_start(uv_loop_t *loop, const char *host, int port, srv_http_handler h, void *arg,
                   struct srv_http **out, char *err, size_t errlen);

/* Change the connection cap and the idle timeout (ms) for connections accepted from now on;
 * 0 keeps the current value. */
void srv_http_set_limits(struct srv_http *h, unsigned max_conns, uint64_t idle_ms);

struct srv_tls;
/* Speak TLS with t (net/tls.h; it must outlive h) on connections accepted from now on. */
void srv_http_set_tls(struct srv_http *h, struct srv_tls *t);
/* TLS handshakes done, failed (not TLS, bad certificate, timeout) and timed out, since start. */
struct srv_http_tls_stats {
    uint64_t handshakes, failures, timeouts;
};
struct srv_http_tls_stats srv_http_tls_stats(const struct srv_http *h);

/* Install the async handler (NULL: none). */
void srv_http_set_async(struct srv_http *h, srv_http_async_handler fn, void *arg);

/* Answer a taken request (body copied; not sent for HEAD) and free p. Dropped when its
 * connection has closed meanwhile. */
void srv_http_complete(struct srv_http_pending *p, int status, const char *ctype, const char *body,
                       size_t len);
/* The same with extra header lines (each ending in CRLF; NULL: none), e.g. Location. The
 * caller builds them from values it checked: no CR or LF from a request may reach them. */
void srv_http_complete_h(struct srv_http_pending *p, int status, const char *ctype,
                         const char *extra_headers, const char *body, size_t len);

/*
 * Streams (Server-Sent Events): srv_http_stream_begin turns a taken request into a response
 * without Content-Length that stays open: it frees p, sends the head, and the connection then
 * only discards what the client sends (its EOF closes the stream) and has no idle timeout.
 * srv_http_stream_write queues bytes (copied); srv_http_stream_pending says how many are not
 * written yet (the owner bounds it). events(arg, closed): after each completed write with
 * closed false (room for more), and once with closed true when the connection closes by
 * itself (the client left, an error, srv_http_stop): the handle is then invalid. The owner's
 * srv_http_stream_end closes it without that call. NULL when the connection had closed (p is
 * freed either way).
 */
struct srv_http_stream;
typedef void (*srv_http_stream_cb)(void *arg, bool closed);
struct srv_http_stream *srv_http_stream_begin(struct srv_http_pending *p, const char *ctype,
                                              const char *extra_headers, srv_http_stream_cb cb,
                                              void *arg);
/* 0, or -1 when out of memory or the connection is closing (the stream then ends: the owner
 * gets events(arg, true) from the close). */
int srv_http_stream_write(struct srv_http_stream *st, const char *data, size_t len);
size_t srv_http_stream_pending(const struct srv_http_stream *st);
void srv_http_stream_end(struct srv_http_stream *st);

/* The value of header `name` (case-insensitive) in req's head, without the blanks around it, and
 * its length in *len; NULL when absent. Several lines of that name: *len = SIZE_MAX (ambiguous;
 * the caller refuses). Borrowed from the head: valid during the handler call. */
const char *srv_http_header(const struct srv_http_request *req, const char *name, size_t *len);

/* Idle connections closed to make room for a new one, since start (0 for NULL). */
uint64_t srv_http_evictions(const struct srv_http *h);

/* The bound port (useful after listening on port 0), or -1. */
int srv_http_port(const struct srv_http *h);

/* Stop listening, close every connection; memory is freed from the close callbacks (the loop
 * must run afterwards for them to fire). Safe with NULL; a second call does nothing. */
void srv_http_stop(struct srv_http *h);

#endif
