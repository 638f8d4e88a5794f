/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_dial.c — outbound Raft connections: resolve, TCP connect, write libraft's
 * handshake, hand the TCP stream to libraft (which only ever writes to it: uv_send.c).
 *
 * A dial (enum dial_state, changed only by dial_to, which asserts the move) goes
 *   RESOLVING --dial_resolved_cb: TCP handle made, connect started--> CONNECTING
 *   CONNECTING --dial_connect_cb: connected, handshake write started--> WRITING
 *   CONNECTING --dial_connect_cb: connected, peer TLS on, relay started--> TLS
 *   CONNECTING or WRITING --dial_fail: error, or the transport closing--> CLOSING
 * and ends (dial_finish: libraft's callback fires once, the dial is freed) from RESOLVING when
 * resolving fails or is cancelled, from WRITING with the TCP stream handed to libraft, from
 * CLOSING once the TCP handle closed, or from TLS when the relay (transport_relay.c, which
 * owns the TCP handle from then on) calls tp_dial_done: libraft's socketpair end once the TLS
 * handshake is through and libraft's handshake was sent, or an error.
 */
#include "common/list.h"
#include "raft/transport_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libraft's handshake: three u64 words (protocol, id, address length), then the address. */
#define HS_WORDS 3
#define HS_HEADER (HS_WORDS * 8)
#define HS_ALIGN 8

static void dial_to(struct dial *d, enum dial_state to)
{
    assert((d->state == D_RESOLVING && to == D_CONNECTING) ||
           (d->state == D_CONNECTING && (to == D_WRITING || to == D_TLS)) ||
           ((d->state == D_CONNECTING || d->state == D_WRITING) && to == D_CLOSING));
    d->state = to;
}

static void dial_unlink(struct dial *d)
{
    struct tp *tp = d->tp;
    DLIST_UNLINK(tp->dials, d);
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
    if (d->state == D_CLOSING)
        return;
    d->status = status;
    dial_to(d, D_CLOSING);
    uv_close((uv_handle_t *)d->tcp, dial_tcp_closed);
}

static void dial_write_cb(uv_write_t *w, int status)
{
    struct dial *d = w->data;
    if (d->state == D_CLOSING)
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
    if (d->state == D_CLOSING)
        return;
    if (status < 0) {
        dial_fail(d, RAFT_NOCONNECTION);
        return;
    }
    uv_tcp_nodelay(d->tcp, 1);
    uv_tcp_keepalive(d->tcp, 1, RN_TP_KEEPALIVE_S); /* a half-open peer link is found dead */
    if (d->tp->tls) {
        if (tp_relay_start(d)) /* nothing taken: d->tcp is still ours */
            dial_fail(d, RAFT_NOMEM);
        else
            dial_to(d, D_TLS);
        return;
    }
    dial_to(d, D_WRITING);
    d->write.data = d;
    if (uv_write(&d->write, (uv_stream_t *)d->tcp, &d->hs, 1, dial_write_cb))
        dial_fail(d, RAFT_NOCONNECTION);
}

static void dial_resolved_cb(uv_getaddrinfo_t *g, int status, struct addrinfo *res)
{
    struct dial *d = g->data;
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
    dial_to(d, D_CONNECTING);
    int rv = uv_tcp_connect(&d->conn, d->tcp, res->ai_addr, dial_connect_cb);
    uv_freeaddrinfo(res);
    if (rv)
        dial_fail(d, RAFT_NOCONNECTION);
}

/* libraft's handshake (uv_tcp_connect.c uvTcpEncodeHandshake): protocol, id, padded address
 * length, the address and NULs to the next multiple of 8. Little-endian u64s. */
static int encode_handshake(uint64_t id, const char *address, uv_buf_t *out)
{
    size_t alen = strlen(address) + 1, padded = (alen + HS_ALIGN - 1) & ~(size_t)(HS_ALIGN - 1);
    uint8_t *p = raft_calloc(1, HS_HEADER + padded);
    if (!p)
        return -1;
    uint64_t w[HS_WORDS] = {RN_WIRE_HANDSHAKE_PROTOCOL, id, padded};
    for (int i = 0; i < HS_WORDS; i++)
        for (int b = 0; b < 8; b++)
            p[8 * i + b] = (uint8_t)(w[i] >> (8 * b));
    memcpy(p + HS_HEADER, address, alen);
    *out = uv_buf_init((char *)p, (unsigned)(HS_HEADER + padded));
    return 0;
}

int tp_dial_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                    const char *address, raft_uv_connect_cb cb)
{
    struct tp *tp = t->impl;
    char host[PROTO_ADDR_BUF], port[sizeof("65535")];
    int portnum;
    if (tp->closing || proto_addr_parse(address, strlen(address), host, sizeof(host), &portnum))
        return RAFT_NOCONNECTION;
    snprintf(port, sizeof(port), "%d", portnum);
    struct dial *d = calloc(1, sizeof(*d));
    if (!d)
        return RAFT_NOMEM;
    d->tp = tp;
    d->req = req;
    d->cb = cb;
    d->id = id;
    snprintf(d->address, sizeof(d->address), "%s", address);
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
    d->state = D_RESOLVING;
    DLIST_PUSH(tp->dials, d);
    return 0;
}

void tp_dial_done(struct dial *d, uv_stream_t *stream, int status)
{
    assert(d->state == D_TLS);
    d->relay = NULL;
    dial_finish(d, stream, d->tp->closing && !stream ? RAFT_CANCELED : status);
}

void tp_dial_cancel(struct dial *d)
{
    if (d->state == D_TLS)
        tp_relay_close(d->relay); /* its close reports RAFT_CANCELED through tp_dial_done */
    else if (d->state == D_RESOLVING)
        uv_cancel((uv_req_t *)&d->gai); /* dial_resolved_cb sees closing either way */
    else
        dial_fail(d, RAFT_CANCELED); /* nothing more to do if CLOSING already */
}
