/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_link.c — inbound Raft connections. Each accepted connection is a link: its bytes
 * are checked by the validator (wire.h) and only accepted frames reach libraft, through the
 * socketpair end libraft got from accept_cb (deliver()). See transport.h for the life cycle and
 * the limits (handshake deadline, buffer cap), transport_internal.h for the invariants.
 */
#include "common/list.h"
#include "raft/transport_internal.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG_WINDOW_MS 1000     /* RN_TP_LOG_BURST lines per this long */
#define CAPTURE_MAX (1u << 20) /* debug capture: larger frames are not written */
#define CAPTURE_ADDRESS "127.0.0.1:1"
#define CAPTURE_ADDRESS_FIELD 16  /* its field in the captured handshake, NUL-padded */
#define CAPTURE_HS_HEADER (3 * 8) /* protocol, id, address length */

bool tp_log_ok(struct tp *tp)
{
    uint64_t now = uv_now(tp->loop);
    if (now - tp->log_window >= LOG_WINDOW_MS) {
        if (tp->log_dropped)
            LOGW(tp->log, "raft: %llu more rejected connections not logged",
                 (unsigned long long)tp->log_dropped);
        tp->log_window = now;
        tp->log_lines = 0;
        tp->log_dropped = 0;
    }
    if (tp->log_lines++ < RN_TP_LOG_BURST)
        return true;
    tp->log_dropped++;
    return false;
}

void tp_link_reject(struct link *l, enum rn_wire_reason why, const char *detail)
{
    l->tp->rejected[why]++;
    if (tp_log_ok(l->tp))
        LOGW(l->tp->log, "raft: dropped connection from %s: %s%s%s%s", l->peer,
             rn_wire_reason_name(why), detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
    tp_link_close(l);
}

/* Debug only: one file per accepted frame, handshake first, so each is a whole stream. */
static void capture(struct link *l, const uint8_t *p, size_t n)
{
    struct tp *tp = l->tp;
    if (!tp->capture || n > CAPTURE_MAX)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/n%llu-%llu-t%u", tp->capture, (unsigned long long)tp->id,
             (unsigned long long)++tp->captured, p[0]);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    /* A handshake from the sending peer's id with a placeholder address. */
    _Static_assert(sizeof(CAPTURE_ADDRESS) <= CAPTURE_ADDRESS_FIELD, "capture address fits");
    uint8_t hs[CAPTURE_HS_HEADER + CAPTURE_ADDRESS_FIELD] = {0};
    uint64_t words[CAPTURE_HS_HEADER / 8] = {RN_WIRE_HANDSHAKE_PROTOCOL, l->ctx.peer_id,
                                             CAPTURE_ADDRESS_FIELD};
    memcpy(hs, words, sizeof(words)); /* little-endian hosts only: debug capture */
    memcpy(hs + CAPTURE_HS_HEADER, CAPTURE_ADDRESS, sizeof(CAPTURE_ADDRESS) - 1);
    fwrite(hs, 1, sizeof(hs), f);
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
    DLIST_UNLINK(tp->links, l);
    tp->buffered -= rn_tp_charge(l->cap);
    SSL_free(l->ssl);
    free(l->buf);
    free(l);
    tp_maybe_closed(tp);
}

/* Closing our end of the socketpair makes libraft's reader see EOF and drop its stream. */
void tp_link_close(struct link *l)
{
    if (l->state == L_CLOSING)
        return;
    l->state = L_CLOSING;
    l->raft = NULL;
    uv_close((uv_handle_t *)&l->tcp, link_handle_closed);
    uv_close((uv_handle_t *)&l->timer, link_handle_closed);
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
        tp_link_close(s->data);
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
    l->peer_id = id;
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
        tp_link_reject(l, r.reason, NULL);
        return false;
    }
    if (!peer_allowed(l->tp, r.id)) {
        tp_link_reject(l, RN_WIRE_PEER, NULL);
        return false;
    }
    /* Peer TLS: the certificate must be the claimed member's (transport_tls.c), or a client
     * certificate of the same CA could speak as any member. */
    char why[RN_TP_TLS_ERRLEN];
    if (l->ssl && tp_tls_identity(l->tp, l->ssl, r.id, why, sizeof(why))) {
        tp_link_reject(l, RN_WIRE_IDENTITY, why);
        return false;
    }
    l->ctx.peer_id = r.id;
    if (link_handoff(l, r.id, r.address)) {
        LOGW(l->tp->log, "raft: cannot hand the connection from %s to libraft", l->peer);
        tp_link_close(l);
        return false;
    }
    *off = r.len;
    l->state = L_FRAMES;
    uv_timer_stop(&l->timer);
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
                tp_link_close(l);
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
            tp_link_reject(l, r.reason, NULL);
            return false;
        }
        capture(l, p, r.len);
        if (deliver(l, p, r.len)) {
            tp_link_close(l);
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

/* Resize the buffer to `cap` bytes, keeping tp->buffered in step; -1 if realloc failed (the
 * buffer is unchanged). The caller has checked the cap for growth. */
static int link_resize(struct link *l, size_t cap)
{
    struct tp *tp = l->tp;
    uint8_t *nb = realloc(l->buf, cap);
    if (!nb)
        return -1;
    tp->buffered = tp->buffered - rn_tp_charge(l->cap) + rn_tp_charge(cap);
    l->buf = nb;
    l->cap = cap;
    assert(tp->buffered <= tp->buffer_cap);
    return 0;
}

void tp_link_pump(struct link *l)
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
    /* Give a big buffer back once the big frame is through (a failed shrink keeps it). */
    if (l->cap > RN_TP_OPAQUE_CHUNK && l->state != L_OPAQUE && l->len < RN_TP_READ_CHUNK &&
        l->want < RN_TP_READ_CHUNK)
        (void)link_resize(l, RN_TP_LINK_FREE);
    if (!l->reading)
        l->reading = uv_read_start((uv_stream_t *)&l->tcp, link_alloc_cb, link_read_cb) == 0;
}

/* Room for what the validator asked for, or a read chunk, whichever is more. The validator's
 * limits bound `want`. */
int tp_link_room(struct link *l)
{
    /* Snapshot data is read in big pieces, as libraft reads it itself: a slower receipt widens
     * the window in which libraft's leader gives up on the snapshot and sends it again. */
    size_t chunk = RN_TP_READ_CHUNK;
    if (l->state == L_OPAQUE && l->opaque_left > chunk)
        chunk = l->opaque_left < RN_TP_OPAQUE_CHUNK ? (size_t)l->opaque_left : RN_TP_OPAQUE_CHUNK;
    size_t need = l->len + chunk;
    if (l->want > need)
        need = l->want;
    if (need > l->cap) {
        l->over_cap = !rn_tp_budget_ok(l->tp->buffered, l->cap, need, l->tp->buffer_cap);
        if (l->over_cap || link_resize(l, need))
            return -1;
    }
    return 0;
}

/* With TLS the socket's bytes are ciphertext: they go to the shared read buffer and are
 * decrypted into l->buf (tp_tls_link_input). */
static void link_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct link *l = h->data;
    (void)suggested;
    if (l->ssl)
        *b = uv_buf_init((char *)l->tp->tls_in, RN_TP_TLS_READ);
    else if (tp_link_room(l))
        *b = uv_buf_init(NULL, 0); /* read_cb gets UV_ENOBUFS */
    else
        *b = uv_buf_init((char *)l->buf + l->len, (unsigned)(l->cap - l->len));
}

/* The peer is gone. Stopping mid-unit is a truncated message (nothing partial reached
 * libraft's decoder, but an InstallSnapshot's data may have started); at a unit boundary it is
 * an ordinary close. With TLS, a peer that sent something and left before the TLS handshake
 * was through failed it (a plain-text peer's handshake ends here when it is short). */
void tp_link_eof(struct link *l)
{
    if (l->ssl && !l->tls_up && l->tls_seen) {
        tp_link_reject(l, RN_WIRE_TLS, "closed during the TLS handshake");
        return;
    }
    if (l->len > 0 || l->state == L_OPAQUE) {
        tp_link_reject(l, RN_WIRE_TRUNCATED, NULL);
        return;
    }
    tp_link_close(l);
}

static void link_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct link *l = s->data;
    if (l->state == L_CLOSING)
        return;
    if (nread > 0) {
        if (l->ssl) {
            tp_tls_link_input(l, (const uint8_t *)b->base, (size_t)nread);
            return;
        }
        l->len += (size_t)nread;
        tp_link_pump(l);
        return;
    }
    if (nread == 0)
        return;
    if (l->over_cap) {
        tp_link_reject(l, RN_WIRE_BUFFER_CAP, NULL);
        return;
    }
    /* the peer closed it (EOF, or a reset): the glue may check whether the process is gone */
    struct tp *tp = l->tp;
    uint64_t id = l->peer_id;
    tp_link_eof(l);
    if (id && !tp->closing && tp->policy.peer_gone)
        tp->policy.peer_gone(tp->policy.arg, id);
}

static void link_peer_name(struct link *l)
{
    struct sockaddr_storage ss;
    int n = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
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
    snprintf(l->host, sizeof(l->host), "%s", host);
}

/* The handshake deadline passed: a peer that has not said who it is in that time is not a
 * libraft peer (they send the handshake the moment they connect), and holds a socket. */
static void link_deadline_cb(uv_timer_t *t)
{
    struct link *l = t->data;
    if (l->state == L_HANDSHAKE)
        tp_link_reject(l, RN_WIRE_HANDSHAKE_TIMEOUT, NULL);
}

static void refuse_closed(uv_handle_t *h)
{
    struct tp *tp = h->data;
    tp->refusing = false;
    if (tp->closing)
        tp_maybe_closed(tp);
    else
        tp_link_accept_cb((uv_stream_t *)&tp->listener, 0); /* one may be waiting meanwhile */
}

/* No memory for a link: accept the connection into the transport's spare handle and close it
 * at once. libuv stops watching the listener while a connection waits to be accepted, so
 * leaving it unaccepted would stop every later one too. While the spare is busy, the next
 * connection waits for refuse_closed. */
static void link_refuse(struct tp *tp)
{
    if (tp->refusing)
        return;
    LOGW(tp->log, "raft: out of memory: refusing a Raft connection");
    uv_tcp_init(tp->loop, &tp->refuse);
    tp->refuse.data = tp;
    tp->refusing = true;
    (void)uv_accept((uv_stream_t *)&tp->listener, (uv_stream_t *)&tp->refuse);
    uv_close((uv_handle_t *)&tp->refuse, refuse_closed);
}

/* The caps (rn_transport_set_caps) for the new link `l`: RN_WIRE_OK, or the one it is over.
 * Links closing are not counted: their descriptors go within the loop turn. An address that
 * could not be read ("?") shares one count. */
static enum rn_wire_reason link_admit(const struct link *l)
{
    const struct tp *tp = l->tp;
    unsigned links = 0, here = 0, hs = 0, hs_here = 0;
    for (const struct link *o = tp->links; o; o = o->next) {
        if (o == l || o->state == L_CLOSING)
            continue;
        bool same = !strcmp(o->host, l->host);
        links++;
        here += same;
        if (o->state == L_HANDSHAKE) {
            hs++;
            hs_here += same;
        }
    }
    if (links >= tp->caps.links || here >= tp->caps.links_per_addr)
        return RN_WIRE_LINK_CAP;
    if (hs >= tp->caps.handshakes || hs_here >= tp->caps.handshakes_per_addr)
        return RN_WIRE_HANDSHAKE_CAP;
    return RN_WIRE_OK;
}

/* Take a token from the handshake rate's bucket (refilled at handshake_rate a second, holding
 * a second's worth at most): false if it is empty. */
static bool link_rate_ok(struct tp *tp)
{
    uint64_t now = uv_now(tp->loop), full = (uint64_t)tp->caps.handshake_rate * 1000;
    uint64_t add = (now - tp->hs_refill_ms) * tp->caps.handshake_rate;
    tp->hs_refill_ms = now;
    tp->hs_tokens_milli = tp->hs_tokens_milli + add > full ? full : tp->hs_tokens_milli + add;
    if (tp->hs_tokens_milli < 1000)
        return false;
    tp->hs_tokens_milli -= 1000;
    return true;
}

void tp_link_accept_cb(uv_stream_t *server, int status)
{
    struct tp *tp = server->data;
    if (status < 0 || tp->closing)
        return;
    struct link *l = calloc(1, sizeof(*l));
    if (!l) {
        link_refuse(tp);
        return;
    }
    l->tp = tp;
    uv_tcp_init(tp->loop, &l->tcp);
    l->tcp.data = l;
    uv_timer_init(tp->loop, &l->timer);
    l->timer.data = l;
    l->open_handles = 2;
    DLIST_PUSH(tp->links, l);
    if (uv_accept(server, (uv_stream_t *)&l->tcp)) {
        tp_link_close(l);
        return;
    }
    uv_tcp_nodelay(&l->tcp, 1);
    uv_tcp_keepalive(&l->tcp, 1, RN_TP_KEEPALIVE_S); /* a half-open peer link is found dead */
    link_peer_name(l);
    enum rn_wire_reason over = link_admit(l);
    if (over == RN_WIRE_OK && !link_rate_ok(tp))
        over = RN_WIRE_HANDSHAKE_RATE;
    if (over != RN_WIRE_OK) {
        tp_link_reject(l, over, NULL); /* before any TLS work: the cap bounds that too */
        return;
    }
    if (tp->tls && !(l->ssl = tp_tls_session(tp, true))) {
        LOGW(tp->log, "raft: out of memory: no TLS session for %s", l->peer);
        tp_link_close(l);
        return;
    }
    uv_timer_start(&l->timer, link_deadline_cb, tp->handshake_ms, 0);
    tp_link_pump(l);
}
