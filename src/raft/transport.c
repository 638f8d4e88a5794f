/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport.c — fencelock's raft_uv_transport: the table libraft calls (init, listen, connect,
 * close), the per-reason counters and the limits. See transport.h for the link life cycle and
 * transport_internal.h for how transport_link.c and transport_dial.c divide the work.
 */
#include "raft/transport_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* wire.h repeats libraft's message, entry and role values so the validator builds alone. */
_Static_assert((int)RN_WIRE_M_APPEND == (int)RAFT_APPEND_ENTRIES, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_M_APPEND_RESULT == (int)RAFT_APPEND_ENTRIES_RESULT,
               "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_M_VOTE == (int)RAFT_REQUEST_VOTE, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_M_VOTE_RESULT == (int)RAFT_REQUEST_VOTE_RESULT, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_M_SNAPSHOT == (int)RAFT_INSTALL_SNAPSHOT, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_M_TIMEOUT_NOW == (int)RAFT_TIMEOUT_NOW, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_E_COMMAND == (int)RAFT_COMMAND, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_E_BARRIER == (int)RAFT_BARRIER, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_E_CHANGE == (int)RAFT_CHANGE, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_ROLE_STANDBY == (int)RAFT_STANDBY, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_ROLE_VOTER == (int)RAFT_VOTER, "wire mirrors raft.h");
_Static_assert((int)RN_WIRE_ROLE_SPARE == (int)RAFT_SPARE, "wire mirrors raft.h");
/* The cap lets two of the largest legitimate messages through side by side. */
_Static_assert(RN_TP_BUFFER_CAP >= 2 * (RN_TP_LINK_MAX - RN_TP_LINK_FREE), "cap too small");
_Static_assert(RN_WIRE_MAX_SNAPSHOT_HEADER <= RN_WIRE_MAX_APPEND_HEADER + RN_WIRE_MAX_APPEND,
               "an AppendEntries is the largest buffered frame");

#define RN_TP_BACKLOG 128 /* listen(2) backlog */

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
    char host[PROTO_ADDR_BUF], port[sizeof("65535")];
    int portnum;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res = NULL;
    if (proto_addr_parse(tp->address, strlen(tp->address), host, sizeof(host), &portnum) ||
        snprintf(port, sizeof(port), "%d", portnum) < 0 || getaddrinfo(host, port, &hints, &res) ||
        !res) {
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
        rv = uv_listen((uv_stream_t *)&tp->listener, RN_TP_BACKLOG, tp_link_accept_cb);
    if (rv) {
        snprintf(t->errmsg, sizeof(t->errmsg), "listen on %s: %s", tp->address, uv_strerror(rv));
        return RAFT_IOERR; /* the listener is closed by close() */
    }
    return 0;
}

void tp_maybe_closed(struct tp *tp)
{
    if (!tp->closing || tp->listening || tp->refusing || tp->links || tp->dials || tp->relays ||
        !tp->close_cb)
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
        tp_link_close(l);
    for (struct dial *d = tp->dials; d; d = d->next)
        tp_dial_cancel(d);
    tp_relay_close_all(tp); /* those still dialling were closed just above */
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
    tp->handshake_ms = RN_TP_HANDSHAKE_MS;
    tp->buffer_cap = RN_TP_BUFFER_CAP;
    const char *cap = getenv("FENCELOCK_RAFT_CAPTURE");
    if (cap && *cap && !(tp->capture = strdup(cap))) {
        free(tp);
        return RAFT_NOMEM;
    }
    t->impl = tp;
    t->init = tp_init;
    t->listen = tp_listen;
    t->connect = tp_dial_connect;
    t->close = tp_close;
    return 0;
}

void rn_transport_free(struct raft_uv_transport *t)
{
    struct tp *tp = t->impl;
    if (!tp)
        return;
    tp_tls_free(tp);
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

void rn_transport_set_limits(struct raft_uv_transport *t, unsigned handshake_ms,
                             uint64_t buffer_cap)
{
    struct tp *tp = t->impl;
    tp->handshake_ms = handshake_ms;
    tp->buffer_cap = buffer_cap;
}
