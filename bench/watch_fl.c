/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch_fl — W10's fencelock backend (bench/watch.h): the event stream read as a Redis stream,
 * raw RESP over hiredis to the leader (what any Redis client does; libfencelock has no watch
 * yet).
 *
 * Writer: one connection; `PUT key v` answers the revision, which is the <rev> of the event's
 * id. Pipelined PUTs keep `window` unanswered on that connection.
 * Watchers: one connection each, all polled by the caller's one thread. Each keeps exactly one
 * `XREAD COUNT 1000 BLOCK 10000 STREAMS fencelock:events:<prefix> <last id>` outstanding,
 * starting after `<after_rev>-0` (exclusive), and sends the next as soon as an answer is
 * parsed (nil after BLOCK: the same id again). An error reply (-COMPACTED, -SLOWREADER,
 * -NOTLEADER) or a lost connection fails the poll: the run reports it, nothing resumes.
 * "fencelock-sse" (the HTTP API's GET /v1/events beside XREAD, the same PUTs): the same writer;
 * watcher i is an XREAD watcher as above for even i and, for odd i, a Server-Sent Events stream
 * `GET /v1/events?prefix=<prefix>&after=<after_rev>-0` on the leader's HTTP port (its client
 * port + WFL_HTTP_OFFSET: bench/servers/fencelock.sh's layout), one plain HTTP/1.1 connection
 * parsed as the bytes arrive (an event's receipt is when its `id:` line arrived). A non-200
 * head or a closed stream fails the poll.
 * Owns the connections; *_free closes them.
 */
#include "flraw.h"
#include "watch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WFL_BLOCK_MS 10000
#define WFL_HTTP_OFFSET 2 /* the HTTP port is the client port + 2 (bench/servers/fencelock.sh) */
#define WFL_SSE_BUF 65536

/* ---- writer ---- */

static void *wfl_writer_new(const char *endpoints, char *err, size_t errlen)
{
    return fr_connect_leader(endpoints, err, errlen);
}

static void wfl_writer_free(void *w)
{
    redisFree(w);
}

/* The revision a PUT answered, or -1 with err. */
static int wfl_rev(redisContext *c, redisReply *r, long long *rev, char *err, size_t errlen)
{
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *rev = r->integer;
        return 0;
    }
    snprintf(err, errlen, "PUT: %s", r && r->str ? r->str : c->errstr);
    return -1;
}

static int wfl_put(void *w, const char *key, long long *rev, char *err, size_t errlen)
{
    redisContext *c = w;
    redisReply *r = redisCommand(c, "PUT %s v", key);
    int rc = wfl_rev(c, r, rev, err, errlen);
    if (r)
        freeReplyObject(r);
    return rc;
}

static int wfl_put_many(void *w, char *const *keys, long n, int window, long long *revs,
                        double *ack_ms, char *err, size_t errlen)
{
    redisContext *c = w;
    long sent = 0, got = 0;
    while (got < n) {
        while (sent < n && sent - got < window)
            if (redisAppendCommand(c, "PUT %s v", keys[sent++]) != REDIS_OK) {
                snprintf(err, errlen, "PUT: %s", c->errstr);
                return -1;
            }
        void *v = NULL;
        if (redisGetReply(c, &v) != REDIS_OK || !v) {
            snprintf(err, errlen, "PUT: %s", c->errstr);
            return -1;
        }
        ack_ms[got] = wb_now_ms();
        int rc = wfl_rev(c, v, &revs[got], err, errlen);
        freeReplyObject(v);
        if (rc)
            return -1;
        got++;
    }
    return 0;
}

/* ---- watchers ---- */

struct wfl_watcher {
    redisContext *c; /* XREAD; for an SSE watcher the leader's connection, kept for its address */
    char last[48];   /* the last id received */
    int sse;         /* the SSE stream's socket, or -1: an XREAD watcher */
    int head_done;   /* the stream's response head was read and was a 200 */
    char *buf;       /* SSE bytes not parsed yet */
    size_t len;
};

struct wfl_watchers {
    int n;
    char stream[128];
    struct wfl_watcher *w;
    struct pollfd *pfd;
};

static int wfl_send_xread(struct wfl_watchers *ws, struct wfl_watcher *w, char *err, size_t errlen)
{
    int done = 0;
    if (redisAppendCommand(w->c, "XREAD COUNT 1000 BLOCK %d STREAMS %s %s", WFL_BLOCK_MS,
                           ws->stream, w->last) != REDIS_OK)
        goto fail;
    while (!done)
        if (redisBufferWrite(w->c, &done) != REDIS_OK)
            goto fail;
    return 0;
fail:
    snprintf(err, errlen, "XREAD send: %s", w->c->errstr);
    return -1;
}

static void wfl_watchers_free(void *p)
{
    struct wfl_watchers *ws = p;
    for (int i = 0; ws && i < ws->n; i++) {
        if (ws->w[i].c)
            redisFree(ws->w[i].c);
        if (ws->w[i].sse >= 0)
            close(ws->w[i].sse);
        free(ws->w[i].buf);
    }
    if (ws) {
        free(ws->w);
        free(ws->pfd);
    }
    free(ws);
}

/* The SSE stream of watcher w (its c is connected to the leader): connect to the leader's
 * HTTP port and send the request. */
static int wfl_sse_open(struct wfl_watcher *w, const char *prefix, long long after, char *err,
                        size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(w->c->tcp.port + WFL_HTTP_OFFSET)};
    char req[512];
    int one = 1;
    w->buf = malloc(WFL_SSE_BUF);
    if (!w->buf || inet_pton(AF_INET, w->c->tcp.host, &a.sin_addr) != 1 ||
        (w->sse = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(w->sse, (struct sockaddr *)&a, sizeof(a)) != 0) {
        snprintf(err, errlen, "SSE: cannot connect to %s:%d: %s", w->c->tcp.host,
                 w->c->tcp.port + WFL_HTTP_OFFSET, strerror(errno));
        return -1;
    }
    setsockopt(w->sse, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int n = snprintf(req, sizeof(req),
                     "GET /v1/events?prefix=%s&after=%lld-0 HTTP/1.1\r\nHost: bench\r\n\r\n",
                     prefix, after);
    if (n <= 0 || (size_t)n >= sizeof(req) || write(w->sse, req, (size_t)n) != n) {
        snprintf(err, errlen, "SSE: request not sent");
        return -1;
    }
    return 0;
}

static void *wfl_watchers_new_as(const char *endpoints, const char *prefix, int n, long long after,
                                 int sse, char *err, size_t errlen)
{
    struct wfl_watchers *ws = calloc(1, sizeof(*ws));
    if (!ws || !(ws->w = calloc((size_t)n, sizeof(*ws->w))) ||
        !(ws->pfd = calloc((size_t)n, sizeof(*ws->pfd)))) {
        snprintf(err, errlen, "out of memory");
        wfl_watchers_free(ws);
        return NULL;
    }
    ws->n = n;
    snprintf(ws->stream, sizeof(ws->stream), "fencelock:events:%s", prefix);
    for (int i = 0; i < n; i++)
        ws->w[i].sse = -1;
    for (int i = 0; i < n; i++) {
        struct wfl_watcher *w = &ws->w[i];
        int is_sse = sse && (i & 1);
        snprintf(w->last, sizeof(w->last), "%lld-0", after);
        if (!(w->c = fr_connect_leader(endpoints, err, errlen)) ||
            (is_sse ? wfl_sse_open(w, prefix, after, err, errlen)
                    : wfl_send_xread(ws, w, err, errlen))) {
            wfl_watchers_free(ws);
            return NULL;
        }
        ws->pfd[i] = (struct pollfd){.fd = is_sse ? w->sse : w->c->fd, .events = POLLIN};
    }
    return ws;
}

static void *wfl_watchers_new(const char *endpoints, const char *prefix, int n, long long after,
                              char *err, size_t errlen)
{
    return wfl_watchers_new_as(endpoints, prefix, n, after, 0, err, errlen);
}

static void *wfl_sse_watchers_new(const char *endpoints, const char *prefix, int n, long long after,
                                  char *err, size_t errlen)
{
    return wfl_watchers_new_as(endpoints, prefix, n, after, 1, err, errlen);
}

/* The SSE bytes of watcher i that arrived: the head checked once, then each `id: <rev>-<seq>`
 * line to the sink. */
static int wfl_sse_drain(struct wfl_watcher *w, int idx, wb_sink sink, void *ctx, char *err,
                         size_t errlen)
{
    double t = wb_now_ms();
    ssize_t k = read(w->sse, w->buf + w->len, WFL_SSE_BUF - 1 - w->len);
    if (k <= 0) {
        snprintf(err, errlen, "SSE: the stream ended (%s)", k < 0 ? strerror(errno) : "EOF");
        return -1;
    }
    w->len += (size_t)k;
    w->buf[w->len] = 0;
    char *p = w->buf;
    if (!w->head_done) {
        char *end = strstr(p, "\r\n\r\n");
        if (!end)
            return 0;
        if (strncmp(p, "HTTP/1.1 200", 12) != 0) {
            snprintf(err, errlen, "SSE: %.60s", p);
            return -1;
        }
        w->head_done = 1;
        p = end + 4;
    }
    char *nl;
    while ((nl = strchr(p, '\n')) != NULL) {
        if (!strncmp(p, "id: ", 4))
            sink(ctx, idx, strtoll(p + 4, NULL, 10), t);
        p = nl + 1;
    }
    w->len = (size_t)(w->buf + w->len - p);
    memmove(w->buf, p, w->len);
    if (w->len >= WFL_SSE_BUF - 1) {
        snprintf(err, errlen, "SSE: a line longer than %d bytes", WFL_SSE_BUF);
        return -1;
    }
    return 0;
}

static const char *wfl_sse_kind(int watcher)
{
    return watcher & 1 ? "sse" : "xread";
}

/* One XREAD answer: its entries to the sink, the last id kept. -1 on an error reply. */
static int wfl_answer(struct wfl_watcher *w, int idx, redisReply *r, double t, wb_sink sink,
                      void *ctx, char *err, size_t errlen)
{
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->elements < 2) {
        snprintf(err, errlen, "XREAD: %s", r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
        return -1;
    }
    redisReply *entries = r->element[0]->element[1];
    for (size_t i = 0; i < entries->elements; i++) {
        redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 || !e->element[0]->str) {
            snprintf(err, errlen, "XREAD: bad entry");
            return -1;
        }
        snprintf(w->last, sizeof(w->last), "%s", e->element[0]->str);
        sink(ctx, idx, strtoll(w->last, NULL, 10), t);
    }
    return 0;
}

/* Reads what watcher i has; each complete answer is handled and the next XREAD sent. */
static int wfl_drain(struct wfl_watchers *ws, int i, wb_sink sink, void *ctx, char *err,
                     size_t errlen)
{
    struct wfl_watcher *w = &ws->w[i];
    double t = wb_now_ms();
    if (redisBufferRead(w->c) != REDIS_OK) {
        snprintf(err, errlen, "XREAD read: %s", w->c->errstr);
        return -1;
    }
    for (;;) {
        void *v = NULL;
        if (redisGetReplyFromReader(w->c, &v) != REDIS_OK) {
            snprintf(err, errlen, "XREAD parse: %s", w->c->errstr);
            return -1;
        }
        if (!v)
            return 0;
        int rc = wfl_answer(w, i, v, t, sink, ctx, err, errlen);
        freeReplyObject(v);
        if (rc || wfl_send_xread(ws, w, err, errlen))
            return -1;
    }
}

static int wfl_watchers_poll(void *p, int timeout_ms, wb_sink sink, void *ctx, char *err,
                             size_t errlen)
{
    struct wfl_watchers *ws = p;
    int k = poll(ws->pfd, (nfds_t)ws->n, timeout_ms);
    if (k < 0) {
        snprintf(err, errlen, "poll failed");
        return -1;
    }
    for (int i = 0; k > 0 && i < ws->n; i++)
        if (ws->pfd[i].revents &&
            (ws->w[i].sse >= 0 ? wfl_sse_drain(&ws->w[i], i, sink, ctx, err, errlen)
                               : wfl_drain(ws, i, sink, ctx, err, errlen)))
            return -1;
    return 0;
}

const struct watch_backend watch_fencelock = {
    .name = "fencelock",
    .writer_new = wfl_writer_new,
    .put = wfl_put,
    .put_many = wfl_put_many,
    .writer_free = wfl_writer_free,
    .watchers_new = wfl_watchers_new,
    .watchers_poll = wfl_watchers_poll,
    .watchers_free = wfl_watchers_free,
};

/* One XREAD and one SSE watcher (and so on, alternating) of the same PUTs. */
const struct watch_backend watch_fencelock_sse = {
    .name = "fencelock-sse",
    .writer_new = wfl_writer_new,
    .put = wfl_put,
    .put_many = wfl_put_many,
    .writer_free = wfl_writer_free,
    .watchers_new = wfl_sse_watchers_new,
    .watchers_poll = wfl_watchers_poll,
    .watchers_free = wfl_watchers_free,
    .kind_of = wfl_sse_kind,
};
