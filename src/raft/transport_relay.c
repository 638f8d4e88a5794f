/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_relay.c — outbound Raft connections under peer TLS. libraft's uv_send writes to
 * the stream connect gave it and never reads it; under TLS that stream is one end of a
 * socketpair, and a relay moves what libraft writes through a TLS client session into the TCP
 * connection. The relay owns the TCP handle (taken from the dial), its end of the socketpair,
 * a deadline timer and the session; libraft owns and frees its end.
 *
 * A relay (enum relay_state) goes
 *   HANDSHAKE --relay_tls_step: TLS through, the server's certificate names the id dialled
 *             (tp_tls_identity), libraft's handshake sent, libraft got its
 *             socketpair end (tp_dial_done)--> RELAY
 *   any --tp_relay_close: TLS or TCP error, the peer closed, libraft closed its end, the
 *        handshake deadline (handshake_ms), the transport closing--> CLOSING
 * and is freed from CLOSING once its handles closed; a relay that closes in HANDSHAKE ends its
 * dial with RAFT_NOCONNECTION (RAFT_CANCELED while the transport closes). In RELAY, closing our
 * end of the socketpair is how libraft learns the connection is gone: its next write fails and
 * it reconnects, as with a broken TCP stream.
 *
 * Bounded: the relay reads libraft's end only while less than RN_TP_RELAY_HIGH bytes of
 * ciphertext wait for TCP (what uv_try_write could not write at once); past it libraft's
 * writes wait in its own socketpair end (libuv's write queue), where they would wait for a
 * slow TCP peer.
 */
#include "common/list.h"
#include "raft/transport_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

static void relay_pipe_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);
static void relay_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b);

static void free_handle(uv_handle_t *h)
{
    raft_free(h);
}

static void relay_handle_closed(uv_handle_t *h)
{
    struct relay *r = h->data;
    if (--r->open_handles > 0)
        return;
    struct tp *tp = r->tp;
    DLIST_UNLINK(tp->relays, r);
    if (r->d)
        tp_dial_done(r->d, NULL, RAFT_NOCONNECTION);
    SSL_free(r->ssl);
    raft_free(r->tcp);
    free(r);
    tp_maybe_closed(tp);
}

void tp_relay_close(struct relay *r)
{
    if (r->state == R_CLOSING)
        return;
    r->state = R_CLOSING;
    uv_close((uv_handle_t *)r->tcp, relay_handle_closed);
    uv_close((uv_handle_t *)&r->timer, relay_handle_closed);
    if (r->has_pipe)
        uv_close((uv_handle_t *)&r->pipe, relay_handle_closed);
}

void tp_relay_close_all(struct tp *tp)
{
    for (struct relay *r = tp->relays; r; r = r->next)
        tp_relay_close(r);
}

/* A TLS failure: counted with the inbound ones (the peer's certificate failed our check, or
 * ours failed the peer's), logged within the same rate limit. */
static void relay_fail_as(struct relay *r, enum rn_wire_reason reason, const char *why)
{
    char buf[RN_TP_TLS_ERRLEN];
    r->tp->rejected[reason]++;
    if (tp_log_ok(r->tp))
        LOGW(r->tp->log, "raft: TLS connection to %s failed: %s", r->address,
             why ? why : tp_tls_error(buf, sizeof(buf)));
    ERR_clear_error();
    tp_relay_close(r);
}

static void relay_fail(struct relay *r, const char *why)
{
    relay_fail_as(r, RN_WIRE_TLS, why);
}

/* Queue what the session has for the peer; false (relay closed) if that failed. */
static void relay_written(void *owner, int status, size_t len);

static bool relay_flush(struct relay *r)
{
    long n = tp_tls_flush(r->ssl, (uv_stream_t *)r->tcp, relay_written);
    if (n < 0) {
        tp_relay_close(r);
        return false;
    }
    r->queued += (size_t)n;
    return true;
}

/* Read libraft's end only while the ciphertext queue is short: that is the relay's bound. */
static void relay_pipe_flow(struct relay *r)
{
    if (r->state != R_RELAY)
        return;
    if (r->pipe_reading && r->queued >= RN_TP_RELAY_HIGH) {
        uv_read_stop((uv_stream_t *)&r->pipe);
        r->pipe_reading = false;
    } else if (!r->pipe_reading && r->queued < RN_TP_RELAY_HIGH / 2) {
        r->pipe_reading =
            uv_read_start((uv_stream_t *)&r->pipe, relay_alloc_cb, relay_pipe_read_cb) == 0;
    }
}

static void relay_written(void *owner, int status, size_t len)
{
    struct relay *r = owner;
    r->queued -= len;
    if (r->state != R_RELAY)
        return;
    if (status < 0)
        tp_relay_close(r);
    else
        relay_pipe_flow(r);
}

/* Both reads (TCP ciphertext, libraft's plaintext) land in the transport's shared buffer:
 * each is consumed before the callback returns. */
static void relay_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct relay *r = h->data;
    (void)suggested;
    *b = uv_buf_init((char *)r->tp->tls_in, RN_TP_TLS_READ);
}

/* What libraft wrote: encrypt and send. EOF or an error: libraft closed its end. */
static void relay_pipe_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct relay *r = s->data;
    if (r->state != R_RELAY || nread == 0)
        return;
    if (nread < 0) {
        tp_relay_close(r);
        return;
    }
    ERR_clear_error();
    if (SSL_write(r->ssl, b->base, (int)nread) != (int)nread) {
        relay_fail(r, NULL);
        return;
    }
    if (relay_flush(r))
        relay_pipe_flow(r);
}

/* The socketpair: ours is read by the relay, libraft's is handed over by tp_dial_done. */
static uv_stream_t *relay_socketpair(struct relay *r)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds))
        return NULL;
    uv_pipe_t *theirs = raft_malloc(sizeof(*theirs));
    if (!theirs || uv_pipe_init(r->tp->loop, &r->pipe, 0)) {
        raft_free(theirs);
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    r->pipe.data = r;
    r->has_pipe = true;
    r->open_handles++;
    if (uv_pipe_open(&r->pipe, fds[0])) {
        close(fds[0]);
        close(fds[1]);
        raft_free(theirs);
        return NULL;
    }
    uv_pipe_init(r->tp->loop, theirs, 0);
    if (uv_pipe_open(theirs, fds[1])) {
        close(fds[1]);
        uv_close((uv_handle_t *)theirs, free_handle);
        return NULL;
    }
    return (uv_stream_t *)theirs;
}

/* TLS is up: send libraft's handshake through it first (libraft expects connect to have done
 * so), then give libraft its end. */
static void relay_handoff(struct relay *r)
{
    struct dial *d = r->d;
    if (SSL_write(r->ssl, d->hs.base, (int)d->hs.len) != (int)d->hs.len) {
        relay_fail(r, NULL);
        return;
    }
    if (!relay_flush(r))
        return;
    uv_stream_t *theirs = relay_socketpair(r);
    if (!theirs) {
        LOGW(r->tp->log, "raft: cannot make the socketpair for %s", r->address);
        tp_relay_close(r);
        return;
    }
    uv_timer_stop(&r->timer);
    r->state = R_RELAY;
    r->d = NULL;
    relay_pipe_flow(r);
    tp_dial_done(d, theirs, 0);
}

/* Continue the handshake with what arrived; hand off once it is through. */
static void relay_tls_step(struct relay *r)
{
    int rc = SSL_do_handshake(r->ssl);
    int e = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(r->ssl, rc);
    if (!relay_flush(r))
        return;
    char why[RN_TP_TLS_ERRLEN];
    if (e == SSL_ERROR_NONE && tp_tls_identity(r->tp, r->ssl, r->id, why, sizeof(why)))
        relay_fail_as(r, RN_WIRE_IDENTITY, why); /* not the member we meant to reach */
    else if (e == SSL_ERROR_NONE)
        relay_handoff(r);
    else if (e != SSL_ERROR_WANT_READ)
        relay_fail(r, NULL);
}

/* Drain what the peer sent after the handshake. An inbound side of fencelock's transport
 * (libraft's too) never writes application data: any is a protocol error. */
static void relay_tls_drain(struct relay *r)
{
    char sink[256];
    int k = SSL_read(r->ssl, sink, sizeof(sink));
    int e = k > 0 ? SSL_ERROR_SSL : SSL_get_error(r->ssl, k);
    if (!relay_flush(r) || e == SSL_ERROR_WANT_READ)
        return;
    if (e == SSL_ERROR_ZERO_RETURN)
        tp_relay_close(r); /* the peer closed cleanly */
    else
        relay_fail(r, k > 0 ? "application data from the accepting side" : NULL);
}

static void relay_tcp_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct relay *r = s->data;
    if (r->state == R_CLOSING || nread == 0)
        return;
    if (nread < 0) {
        if (r->state == R_HANDSHAKE)
            relay_fail(r, "connection closed during the TLS handshake");
        else
            tp_relay_close(r);
        return;
    }
    ERR_clear_error();
    if (BIO_write(SSL_get_rbio(r->ssl), b->base, (int)nread) != (int)nread) {
        tp_relay_close(r);
        return;
    }
    if (r->state == R_HANDSHAKE)
        relay_tls_step(r);
    else
        relay_tls_drain(r);
}

static void relay_deadline_cb(uv_timer_t *t)
{
    struct relay *r = t->data;
    if (r->state == R_HANDSHAKE)
        relay_fail(r, "no TLS handshake within handshake_ms");
}

int tp_relay_start(struct dial *d)
{
    struct tp *tp = d->tp;
    struct relay *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    if (!(r->ssl = tp_tls_session(tp, false))) {
        free(r);
        return -1;
    }
    r->tp = tp;
    r->d = d;
    r->id = d->id;
    r->tcp = d->tcp; /* taken: the relay closes and frees it */
    d->tcp = NULL;
    d->relay = r;
    r->tcp->data = r;
    snprintf(r->address, sizeof(r->address), "%s", d->address);
    uv_timer_init(tp->loop, &r->timer);
    r->timer.data = r;
    r->open_handles = 2;
    DLIST_PUSH(tp->relays, r);
    uv_timer_start(&r->timer, relay_deadline_cb, tp->handshake_ms, 0);
    if (uv_read_start((uv_stream_t *)r->tcp, relay_alloc_cb, relay_tcp_read_cb)) {
        tp_relay_close(r);
        return 0; /* closing reports to the dial */
    }
    ERR_clear_error();
    relay_tls_step(r); /* the ClientHello */
    return 0;
}
