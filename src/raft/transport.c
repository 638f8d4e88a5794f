/*
 * transport.c — the validating raft_uv_transport. See transport.h for the link life cycle.
 *
 * Invariants: a link is in tp->links until both its handles closed; bytes reach libraft only
 * as whole accepted frames or as the accepted opaque tail of one, in stream order, through
 * deliver(); accept_cb is never called once the transport is closing. A dial is in tp->dials
 * until its callback fired.
 */
#include "raft/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RN_TP_READ_CHUNK (64u << 10)
#define RN_TP_OPAQUE_CHUNK (8u << 20)

enum link_state { L_HANDSHAKE = 0, L_FRAMES = 1, L_OPAQUE = 2, L_CLOSING = 3 };

struct tp;

struct link {
    struct tp *tp;
    uv_tcp_t tcp;      /* from the peer */
    uv_pipe_t pipe;    /* our end of the socketpair: EOF here means libraft closed its end */
    uv_stream_t *raft; /* libraft's end (libraft owns and frees it), NULL before handoff */
    bool has_pipe, reading;
    int open_handles;
    enum link_state state;
    struct rn_wire_ctx ctx;
    uint8_t *buf; /* bytes read from tcp and not yet delivered or rejected */
    size_t len, cap, want;
    uint64_t opaque_left;
    char scratch[16];
    char peer[64];
    struct link *prev, *next;
};

struct dial {
    struct tp *tp;
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
    uv_getaddrinfo_t gai;
    uv_tcp_t *tcp; /* raft_malloc'd: libraft frees it once it has it */
    uv_connect_t conn;
    uv_write_t write;
    uv_buf_t hs;
    int status;
    bool resolving, tcp_closing;
    struct dial *prev, *next;
};

struct tp {
    struct raft_uv_transport *t;
    uv_loop_t *loop;
    uint64_t id;
    char *address;
    raft_uv_accept_cb accept_cb;
    uv_tcp_t listener;
    bool listening, closing;
    raft_uv_transport_close_cb close_cb;
    struct link *links;
    struct dial *dials;
    struct rn_tp_policy policy;
    const struct logger *log;
    uint64_t rejected[RN_WIRE_NREASONS];
    uint64_t log_window; /* uv_now() of the current one-second log window */
    unsigned log_lines;
    uint64_t log_dropped;
    char *capture; /* FENCELOCK_RAFT_CAPTURE or NULL */
    uint64_t captured;
};

static void tp_maybe_closed(struct tp *tp);
static void link_close(struct link *l);
static void link_pump(struct link *l);

/* ---- rejection accounting ---- */

static void tp_log_reject(struct tp *tp, const struct link *l, enum rn_wire_reason why)
{
    uint64_t now = uv_now(tp->loop);
    if (now - tp->log_window >= 1000) {
        if (tp->log_dropped)
            LOGW(tp->log, "raft: %llu more rejected connections not logged",
                 (unsigned long long)tp->log_dropped);
        tp->log_window = now;
        tp->log_lines = 0;
        tp->log_dropped = 0;
    }
    if (tp->log_lines++ < RN_TP_LOG_BURST)
        LOGW(tp->log, "raft: dropped connection from %s: %s", l->peer, rn_wire_reason_name(why));
    else
        tp->log_dropped++;
}

static void link_reject(struct link *l, enum rn_wire_reason why)
{
    l->tp->rejected[why]++;
    tp_log_reject(l->tp, l, why);
    link_close(l);
}

/* Debug only: one file per accepted frame, handshake first, so each is a whole stream. */
static void capture(struct link *l, const uint8_t *p, size_t n)
{
    struct tp *tp = l->tp;
    if (!tp->capture || n > (1u << 20))
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/n%llu-%llu-t%u", tp->capture, (unsigned long long)tp->id,
             (unsigned long long)++tp->captured, p[0]);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    /* A handshake from the sending peer's id with a placeholder address (16 bytes). */
    uint8_t hs[24 + 16] = {0};
    size_t alen = 16;
    uint64_t words[3] = {RN_WIRE_HANDSHAKE_PROTOCOL, l->ctx.peer_id, alen};
    memcpy(hs, words, sizeof(words)); /* little-endian hosts only: debug capture */
    memcpy(hs + 24, "127.0.0.1:1", 11);
    fwrite(hs, 1, 24 + alen, f);
    fwrite(p, 1, n, f);
    fclose(f);
}

/* ---- delivery to libraft ---- */

/*
 * Hand n checked bytes to libraft's reader of its end of the socketpair, by calling the
 * callbacks it registered with uv_read_start (public fields of uv_stream_t) exactly as libuv
 * would after a read: alloc_cb for a buffer, copy, read_cb with the count. Nothing crosses
 * the socketpair, so the relay costs no system call and no extra loop turn on the commit path,
 * and libraft consumes synchronously (no queue: TCP flow control is the backpressure).
 *
 * Safe because libraft closes a server stream only (a) inside its read_cb (decode error,
 * EOF) or inside accept_cb, both checked right after the call while the handle is still
 * valid (libuv frees nothing before the close callback), or (b) in UvRecvClose, which raft_io's
 * close follows at once with the transport's close, and that stops every link first.
 * 0, or -1 if libraft is no longer reading (the caller closes the link).
 */
static int deliver(struct link *l, const uint8_t *p, size_t n)
{
    uv_stream_t *s = l->raft;
    while (n > 0) {
        if (l->state == L_CLOSING || uv_is_closing((uv_handle_t *)s) ||
            !uv_is_active((uv_handle_t *)s) || !s->alloc_cb || !s->read_cb)
            return -1;
        uv_buf_t b = uv_buf_init(NULL, 0);
        s->alloc_cb((uv_handle_t *)s, n, &b);
        if (!b.base || b.len == 0) {
            s->read_cb(s, UV_ENOBUFS, &b); /* what libuv does: libraft drops the stream */
            return -1;
        }
        size_t k = b.len < n ? b.len : n;
        memcpy(b.base, p, k);
        s->read_cb(s, (ssize_t)k, &b);
        p += k;
        n -= k;
    }
    return l->state == L_CLOSING || uv_is_closing((uv_handle_t *)s) ? -1 : 0;
}

/* ---- handles and close ---- */

static void link_handle_closed(uv_handle_t *h)
{
    struct link *l = h->data;
    if (--l->open_handles > 0)
        return;
    struct tp *tp = l->tp;
    if (l->prev)
        l->prev->next = l->next;
    else
        tp->links = l->next;
    if (l->next)
        l->next->prev = l->prev;
    free(l->buf);
    free(l);
    tp_maybe_closed(tp);
}

/* Closing our end of the socketpair makes libraft's reader see EOF and drop its stream. */
static void link_close(struct link *l)
{
    if (l->state == L_CLOSING)
        return;
    l->state = L_CLOSING;
    l->raft = NULL;
    uv_close((uv_handle_t *)&l->tcp, link_handle_closed);
    if (l->has_pipe)
        uv_close((uv_handle_t *)&l->pipe, link_handle_closed);
}

/* libraft never writes to its end: a read here is its close (or an error). */
static void pipe_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct link *l = h->data;
    (void)suggested;
    *b = uv_buf_init(l->scratch, sizeof(l->scratch));
}

static void pipe_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    (void)b;
    if (nread < 0)
        link_close(s->data);
}

/* ---- inbound: handshake, then frames ---- */

static bool peer_allowed(struct tp *tp, uint64_t id)
{
    if (id == tp->id)
        return false; /* libraft never connects to itself */
    return !tp->policy.peer_ok || tp->policy.peer_ok(tp->policy.arg, id);
}

static void free_handle(uv_handle_t *h)
{
    raft_free(h);
}

/* Create the socketpair, give libraft its end and watch ours. libraft reads its end with
 * uv_read_start, but bytes reach it through deliver(), never through the socket. 0 or -1. */
static int link_handoff(struct link *l, uint64_t id, const char *address)
{
    struct tp *tp = l->tp;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds))
        return -1;
    uv_pipe_t *theirs = raft_malloc(sizeof(*theirs));
    if (!theirs) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    uv_pipe_init(tp->loop, &l->pipe, 0);
    l->pipe.data = l;
    l->has_pipe = true;
    l->open_handles++;
    uv_pipe_init(tp->loop, theirs, 0);
    if (uv_pipe_open(&l->pipe, fds[0])) {
        close(fds[0]);
        close(fds[1]);
        uv_close((uv_handle_t *)theirs, free_handle);
        return -1;
    }
    if (uv_pipe_open(theirs, fds[1])) {
        close(fds[1]);
        uv_close((uv_handle_t *)theirs, free_handle);
        return -1; /* fds[0] now belongs to l->pipe, closed by link_close */
    }
    uv_read_start((uv_stream_t *)&l->pipe, pipe_alloc_cb, pipe_read_cb);
    l->raft = (uv_stream_t *)theirs;
    tp->accept_cb(tp->t, id, address, l->raft);
    /* libraft closed it at once if it could not take it (out of memory). */
    return uv_is_closing((uv_handle_t *)l->raft) || !uv_is_active((uv_handle_t *)l->raft) ? -1 : 0;
}

/* Consume a complete handshake, if buffered; false if the link was closed. */
static bool link_handshake(struct link *l, size_t *off)
{
    struct rn_wire_result r;
    enum rn_wire_verdict v = rn_wire_handshake(l->buf, l->len, &r);
    if (v == RN_WIRE_NEED) {
        l->want = r.len;
        return true;
    }
    if (v == RN_WIRE_REJECT) {
        link_reject(l, r.reason);
        return false;
    }
    if (!peer_allowed(l->tp, r.id)) {
        link_reject(l, RN_WIRE_PEER);
        return false;
    }
    l->ctx.peer_id = r.id;
    if (link_handoff(l, r.id, r.address)) {
        LOGW(l->tp->log, "raft: cannot hand the connection from %s to libraft", l->peer);
        link_close(l);
        return false;
    }
    *off = r.len;
    l->state = L_FRAMES;
    return true;
}

/* Deliver every accepted frame in the buffer; stop at a partial one. false if closed. */
static bool link_frames(struct link *l, size_t *off)
{
    struct tp *tp = l->tp;
    while (*off < l->len) {
        size_t n = l->len - *off;
        const uint8_t *p = l->buf + *off;
        if (l->state == L_OPAQUE) {
            if (n > l->opaque_left)
                n = (size_t)l->opaque_left;
            if (deliver(l, p, n)) {
                link_close(l);
                return false;
            }
            *off += n;
            if ((l->opaque_left -= n) == 0)
                l->state = L_FRAMES;
            continue;
        }
        l->ctx.term = tp->policy.term ? tp->policy.term(tp->policy.arg) : 0;
        struct rn_wire_result r;
        enum rn_wire_verdict v = rn_wire_frame(p, n, &l->ctx, &r);
        if (v == RN_WIRE_NEED) {
            l->want = r.len;
            return true;
        }
        if (v == RN_WIRE_REJECT) {
            link_reject(l, r.reason);
            return false;
        }
        capture(l, p, r.len);
        if (deliver(l, p, r.len)) {
            link_close(l);
            return false;
        }
        *off += r.len;
        if (r.opaque) {
            l->opaque_left = r.opaque;
            l->state = L_OPAQUE;
        }
    }
    l->want = 0;
    return true;
}

static void link_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);
static void link_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b);

/* Check and deliver what is buffered, then read more. */
static void link_pump(struct link *l)
{
    size_t off = 0;
    if (l->state == L_HANDSHAKE && !link_handshake(l, &off))
        return;
    if (l->state != L_HANDSHAKE && !link_frames(l, &off))
        return;
    if (off) {
        memmove(l->buf, l->buf + off, l->len - off);
        l->len -= off;
    }
    if (l->cap > RN_TP_OPAQUE_CHUNK && l->state != L_OPAQUE && l->len < RN_TP_READ_CHUNK &&
        l->want < RN_TP_READ_CHUNK) {
        uint8_t *nb = realloc(l->buf, RN_TP_READ_CHUNK * 2);
        if (nb) {
            l->buf = nb;
            l->cap = RN_TP_READ_CHUNK * 2;
        }
    }
    if (!l->reading)
        l->reading = uv_read_start((uv_stream_t *)&l->tcp, link_alloc_cb, link_read_cb) == 0;
}

/* Room for what the validator asked for, or a read chunk, whichever is more. The validator's
 * limits bound `want`. */
static void link_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct link *l = h->data;
    (void)suggested;
    /* Snapshot data is read in big pieces, as libraft reads it itself: a slower receipt widens
     * the window in which libraft's leader gives up on the snapshot and sends it again. */
    size_t chunk = RN_TP_READ_CHUNK;
    if (l->state == L_OPAQUE && l->opaque_left > chunk)
        chunk = l->opaque_left < RN_TP_OPAQUE_CHUNK ? (size_t)l->opaque_left : RN_TP_OPAQUE_CHUNK;
    size_t need = l->len + chunk;
    if (l->want > need)
        need = l->want;
    if (need > l->cap) {
        uint8_t *nb = realloc(l->buf, need);
        if (!nb) {
            *b = uv_buf_init(NULL, 0); /* read_cb gets UV_ENOBUFS */
            return;
        }
        l->buf = nb;
        l->cap = need;
    }
    *b = uv_buf_init((char *)l->buf + l->len, (unsigned)(l->cap - l->len));
}

static void link_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct link *l = s->data;
    (void)b;
    if (l->state == L_CLOSING)
        return;
    if (nread > 0) {
        l->len += (size_t)nread;
        link_pump(l);
        return;
    }
    if (nread == 0)
        return;
    /* The peer is gone. Stopping mid-unit is a truncated message (nothing partial reached
     * libraft's decoder, but an InstallSnapshot's data may have started); at a unit boundary
     * it is an ordinary close. */
    if (l->len > 0 || l->state == L_OPAQUE) {
        link_reject(l, RN_WIRE_TRUNCATED);
        return;
    }
    link_close(l);
}

static void link_peer_name(struct link *l)
{
    struct sockaddr_storage ss;
    int n = sizeof(ss);
    char host[48] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&l->tcp, (struct sockaddr *)&ss, &n) == 0) {
        if (ss.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
    }
    snprintf(l->peer, sizeof(l->peer), "%s:%d", host, port);
}

static void listen_cb(uv_stream_t *server, int status)
{
    struct tp *tp = server->data;
    if (status < 0 || tp->closing)
        return;
    struct link *l = calloc(1, sizeof(*l));
    if (!l)
        return;
    l->tp = tp;
    uv_tcp_init(tp->loop, &l->tcp);
    l->tcp.data = l;
    l->open_handles = 1;
    l->next = tp->links;
    if (tp->links)
        tp->links->prev = l;
    tp->links = l;
    if (uv_accept(server, (uv_stream_t *)&l->tcp)) {
        link_close(l);
        return;
    }
    uv_tcp_nodelay(&l->tcp, 1);
    link_peer_name(l);
    link_pump(l);
}

/* ---- outbound ---- */

static void dial_unlink(struct dial *d)
{
    struct tp *tp = d->tp;
    if (d->prev)
        d->prev->next = d->next;
    else
        tp->dials = d->next;
    if (d->next)
        d->next->prev = d->prev;
}

/* Fire libraft's callback and free the dial. `stream` is NULL unless status == 0. */
static void dial_finish(struct dial *d, uv_stream_t *stream, int status)
{
    struct tp *tp = d->tp;
    dial_unlink(d);
    raft_free(d->hs.base);
    d->cb(d->req, stream, status);
    free(d);
    tp_maybe_closed(tp);
}

static void dial_tcp_closed(uv_handle_t *h)
{
    struct dial *d = h->data;
    raft_free(d->tcp);
    d->tcp = NULL;
    dial_finish(d, NULL, d->tp->closing ? RAFT_CANCELED : d->status);
}

static void dial_fail(struct dial *d, int status)
{
    if (d->tcp_closing)
        return;
    d->status = status;
    d->tcp_closing = true;
    uv_close((uv_handle_t *)d->tcp, dial_tcp_closed);
}

static void dial_write_cb(uv_write_t *w, int status)
{
    struct dial *d = w->data;
    if (d->tcp_closing)
        return; /* cancelled by close: dial_tcp_closed reports it */
    if (status < 0) {
        dial_fail(d, RAFT_NOCONNECTION);
        return;
    }
    uv_stream_t *s = (uv_stream_t *)d->tcp;
    d->tcp = NULL;
    dial_finish(d, s, 0);
}

static void dial_connect_cb(uv_connect_t *c, int status)
{
    struct dial *d = c->data;
    if (d->tcp_closing)
        return;
    if (status < 0) {
        dial_fail(d, RAFT_NOCONNECTION);
        return;
    }
    uv_tcp_nodelay(d->tcp, 1);
    d->write.data = d;
    if (uv_write(&d->write, (uv_stream_t *)d->tcp, &d->hs, 1, dial_write_cb))
        dial_fail(d, RAFT_NOCONNECTION);
}

static void dial_resolved_cb(uv_getaddrinfo_t *g, int status, struct addrinfo *res)
{
    struct dial *d = g->data;
    d->resolving = false;
    if (d->tp->closing || status < 0 || !res) {
        uv_freeaddrinfo(res);
        dial_finish(d, NULL, d->tp->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
        return;
    }
    d->tcp = raft_malloc(sizeof(*d->tcp));
    if (!d->tcp) {
        uv_freeaddrinfo(res);
        dial_finish(d, NULL, RAFT_NOMEM);
        return;
    }
    uv_tcp_init(d->tp->loop, d->tcp);
    d->tcp->data = d;
    d->conn.data = d;
    int rv = uv_tcp_connect(&d->conn, d->tcp, res->ai_addr, dial_connect_cb);
    uv_freeaddrinfo(res);
    if (rv)
        dial_fail(d, RAFT_NOCONNECTION);
}

/* libraft's handshake (uv_tcp_connect.c uvTcpEncodeHandshake): protocol, id, padded address
 * length, the address and NULs to the next multiple of 8. Little-endian u64s. */
static int encode_handshake(uint64_t id, const char *address, uv_buf_t *out)
{
    size_t alen = strlen(address) + 1, padded = (alen + 7) & ~(size_t)7;
    uint8_t *p = raft_calloc(1, 24 + padded);
    if (!p)
        return -1;
    uint64_t w[3] = {RN_WIRE_HANDSHAKE_PROTOCOL, id, padded};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++)
            p[8 * i + b] = (uint8_t)(w[i] >> (8 * b));
    memcpy(p + 24, address, alen);
    *out = uv_buf_init((char *)p, (unsigned)(24 + padded));
    return 0;
}

/* Split "host:port" (also "[v6]:port"); 0 or -1. */
static int split_hostport(const char *a, char *host, size_t hl, char *port, size_t pl)
{
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a || !colon[1])
        return -1;
    const char *h = a, *he = colon;
    if (*h == '[' && he[-1] == ']') {
        h++;
        he--;
    }
    if ((size_t)(he - h) >= hl || strlen(colon + 1) >= pl)
        return -1;
    memcpy(host, h, (size_t)(he - h));
    host[he - h] = 0;
    snprintf(port, pl, "%s", colon + 1);
    return 0;
}

static int tp_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                      const char *address, raft_uv_connect_cb cb)
{
    struct tp *tp = t->impl;
    (void)id;
    char host[256], port[16];
    if (tp->closing || split_hostport(address, host, sizeof(host), port, sizeof(port)))
        return RAFT_NOCONNECTION;
    struct dial *d = calloc(1, sizeof(*d));
    if (!d)
        return RAFT_NOMEM;
    d->tp = tp;
    d->req = req;
    d->cb = cb;
    if (encode_handshake(tp->id, tp->address, &d->hs)) {
        free(d);
        return RAFT_NOMEM;
    }
    d->gai.data = d;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    if (uv_getaddrinfo(tp->loop, &d->gai, dial_resolved_cb, host, port, &hints)) {
        raft_free(d->hs.base);
        free(d);
        return RAFT_NOCONNECTION;
    }
    d->resolving = true;
    d->next = tp->dials;
    if (tp->dials)
        tp->dials->prev = d;
    tp->dials = d;
    return 0;
}

/* ---- transport ---- */

static int tp_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    struct tp *tp = t->impl;
    tp->id = id;
    free(tp->address);
    tp->address = strdup(address);
    return tp->address ? 0 : RAFT_NOMEM;
}

static int tp_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    struct tp *tp = t->impl;
    char host[256], port[16];
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res = NULL;
    if (split_hostport(tp->address, host, sizeof(host), port, sizeof(port)) ||
        getaddrinfo(host, port, &hints, &res) || !res) {
        snprintf(t->errmsg, sizeof(t->errmsg), "cannot resolve %s", tp->address);
        return RAFT_IOERR;
    }
    tp->accept_cb = cb;
    uv_tcp_init(tp->loop, &tp->listener);
    tp->listener.data = tp;
    tp->listening = true;
    int rv = uv_tcp_bind(&tp->listener, res->ai_addr, 0);
    freeaddrinfo(res);
    if (!rv)
        rv = uv_listen((uv_stream_t *)&tp->listener, 128, listen_cb);
    if (rv) {
        snprintf(t->errmsg, sizeof(t->errmsg), "listen on %s: %s", tp->address, uv_strerror(rv));
        return RAFT_IOERR; /* the listener is closed by close() */
    }
    return 0;
}

static void tp_maybe_closed(struct tp *tp)
{
    if (!tp->closing || tp->listening || tp->links || tp->dials || !tp->close_cb)
        return;
    raft_uv_transport_close_cb cb = tp->close_cb;
    tp->close_cb = NULL;
    cb(tp->t);
}

static void listener_closed(uv_handle_t *h)
{
    struct tp *tp = h->data;
    tp->listening = false;
    tp_maybe_closed(tp);
}

/* libraft's contract: no accept_cb after this, pending connects cancelled, cb once the
 * transport's memory may go. Every link and dial is torn down; their callbacks finish it. */
static void tp_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    struct tp *tp = t->impl;
    tp->closing = true;
    tp->close_cb = cb;
    if (tp->listening)
        uv_close((uv_handle_t *)&tp->listener, listener_closed);
    for (struct link *l = tp->links; l; l = l->next)
        link_close(l);
    for (struct dial *d = tp->dials; d; d = d->next) {
        if (d->resolving)
            uv_cancel((uv_req_t *)&d->gai); /* dial_resolved_cb sees closing either way */
        else if (d->tcp)
            dial_fail(d, RAFT_CANCELED);
    }
    tp_maybe_closed(tp);
}

int rn_transport_init(struct raft_uv_transport *t, uv_loop_t *loop,
                      const struct rn_tp_policy *policy, const struct logger *log)
{
    if (t->version != 1)
        return RAFT_INVALID;
    struct tp *tp = calloc(1, sizeof(*tp));
    if (!tp)
        return RAFT_NOMEM;
    tp->t = t;
    tp->loop = loop;
    tp->policy = *policy;
    tp->log = log;
    const char *cap = getenv("FENCELOCK_RAFT_CAPTURE");
    if (cap && *cap && !(tp->capture = strdup(cap))) {
        free(tp);
        return RAFT_NOMEM;
    }
    t->impl = tp;
    t->init = tp_init;
    t->listen = tp_listen;
    t->connect = tp_connect;
    t->close = tp_close;
    return 0;
}

void rn_transport_free(struct raft_uv_transport *t)
{
    struct tp *tp = t->impl;
    if (!tp)
        return;
    free(tp->address);
    free(tp->capture);
    free(tp);
    t->impl = NULL;
}

uint64_t rn_transport_rejected(const struct raft_uv_transport *t, enum rn_wire_reason reason)
{
    const struct tp *tp = t->impl;
    return tp && (unsigned)reason < RN_WIRE_NREASONS ? tp->rejected[reason] : 0;
}
