/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport_internal — what the pieces of the validating transport share; callers use
 * transport.h.
 *
 *   transport.c       the raft_uv_transport table: init, listen, close; counters and limits
 *   transport_link.c  inbound: one link per accepted connection, validated and relayed
 *   transport_dial.c  outbound: resolve, connect, write libraft's handshake
 *   transport_tls.c   peer TLS: the context, inbound links' TLS layer, writing TLS records
 *   transport_relay.c peer TLS outbound: the TLS client between libraft's socketpair and TCP
 *
 * Invariants: a link is in tp->links until all its handles closed; bytes reach libraft only as
 * whole accepted frames or as the accepted opaque tail of one, in stream order, through
 * deliver(); accept_cb is never called once the transport is closing. A dial is in tp->dials
 * until its callback fired. tp->buffered is the sum of rn_tp_charge(l->cap) over tp->links and
 * never exceeds tp->buffer_cap. With peer TLS (tp->tls), a link decrypts what it reads into its
 * buffer (nothing reaches the validator before the TLS handshake, peer certificate included,
 * succeeded), and every outbound connection is a relay in tp->relays until its handles closed.
 * Without it no TLS code runs: l->ssl is NULL and libraft gets the TCP stream as before. All on
 * the loop thread.
 */
#ifndef FENCELOCK_RN_TRANSPORT_INTERNAL_H
#define FENCELOCK_RN_TRANSPORT_INTERNAL_H

#include "raft/transport.h"

#include <openssl/ssl.h>

#include "common/proto.h"

/* Ciphertext read from a TLS peer per read (tp->tls_in, shared: each read is consumed at once) */
#define RN_TP_TLS_READ (64u << 10)

/* The link life cycle: see transport.h. */
enum link_state { L_HANDSHAKE = 0, L_FRAMES = 1, L_OPAQUE = 2, L_CLOSING = 3 };

struct tp;

struct link {
    struct tp *tp;
    uv_tcp_t tcp;      /* from the peer */
    uv_timer_t timer;  /* the handshake deadline; stopped once the handshake is through */
    uv_pipe_t pipe;    /* our end of the socketpair: EOF here means libraft closed its end */
    uv_stream_t *raft; /* libraft's end (libraft owns and frees it), NULL before handoff */
    bool has_pipe, reading;
    bool over_cap; /* the last buffer growth was refused by the cap: read_cb drops the link */
    int open_handles;
    enum link_state state;
    struct rn_wire_ctx ctx;
    uint8_t *buf; /* bytes read from tcp and not yet delivered or rejected */
    size_t len, cap, want;
    uint64_t opaque_left;
    SSL *ssl;                  /* peer TLS: this link's session (memory BIOs), NULL without TLS */
    bool tls_up;               /* the TLS handshake (peer certificate verified) is through */
    bool tls_seen;             /* bytes arrived: an EOF before tls_up is then a failed handshake */
    char scratch[16];          /* libraft never writes to its end: room to see EOF */
    char peer[PROTO_ADDR_BUF]; /* "host:port" of the remote end, for log lines */
    char host[INET6_ADDRSTRLEN]; /* its IP address alone: the per-address caps' key */
    uint64_t peer_id;            /* the id its handshake named (0: before the handshake) */
    struct link *prev, *next;
};

/* The dial life cycle: see transport_dial.c. */
enum dial_state { D_RESOLVING = 0, D_CONNECTING = 1, D_WRITING = 2, D_CLOSING = 3, D_TLS = 4 };

/* The relay life cycle: see transport_relay.c. */
enum relay_state { R_HANDSHAKE = 0, R_RELAY = 1, R_CLOSING = 2 };

struct relay {
    struct tp *tp;
    struct dial *d;   /* R_HANDSHAKE: the dial waiting for us; NULL once it ended */
    uint64_t id;      /* the Raft id dialled (from the dial) */
    uv_tcp_t *tcp;    /* raft_malloc'd by the dial; freed here */
    uv_timer_t timer; /* the TLS handshake deadline */
    uv_pipe_t pipe;   /* our end of the socketpair */
    bool has_pipe, pipe_reading;
    int open_handles;
    enum relay_state state;
    SSL *ssl;
    size_t queued; /* ciphertext queued for TCP (uv_write) and not yet written */
    char address[PROTO_ADDR_BUF];
    struct relay *prev, *next;
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
    struct relay *relay; /* D_TLS: the relay doing the TLS handshake (owns the TCP handle) */
    uint64_t id;         /* the Raft id dialled: the server certificate must name it */
    char address[PROTO_ADDR_BUF]; /* the peer's, for log lines */
    int status;                   /* D_CLOSING: what to report once the TCP handle closed */
    enum dial_state state;
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
    unsigned handshake_ms; /* RN_TP_HANDSHAKE_MS unless a test set it */
    uint64_t buffer_cap;   /* RN_TP_BUFFER_CAP unless a test set it */
    uint64_t buffered;     /* what the links' buffers count against buffer_cap */
    uint64_t rejected[RN_WIRE_NREASONS];
    uint64_t log_window; /* uv_now() of the current one-second log window */
    unsigned log_lines;
    uint64_t log_dropped;
    uv_tcp_t refuse;    /* accepts and closes a connection there is no memory for a link for */
    bool refusing;      /* `refuse` is open or closing */
    SSL_CTX *tls;       /* peer TLS (rn_transport_tls), or NULL: plain TCP */
    char *name_pattern; /* peer TLS: --peer-cert-name (owned) */
    struct rn_tp_caps caps;
    uint64_t hs_tokens_milli; /* the handshake rate's bucket, in thousandths of a token */
    uint64_t hs_refill_ms;    /* uv_now() it was last refilled */
    uint8_t *tls_in;          /* RN_TP_TLS_READ bytes: every TLS connection's read buffer */
    struct relay *relays;
    char *capture; /* FENCELOCK_RAFT_CAPTURE or NULL */
    uint64_t captured;
};

/* transport.c: fire close's callback once the listener, every link and every dial are gone. */
void tp_maybe_closed(struct tp *tp);

/* transport_link.c */
void tp_link_accept_cb(uv_stream_t *server, int status); /* the listener's connection_cb */
void tp_link_close(struct link *l);
void tp_link_reject(struct link *l, enum rn_wire_reason why, const char *detail);
/* Check and deliver what is buffered, then (re)start reading. */
void tp_link_pump(struct link *l);
/* Make room in l->buf for the next read (what the validator wants, or a read chunk) within
 * the cap. 0, or -1: l->over_cap says whether the cap (not memory) refused. */
int tp_link_room(struct link *l);
/* The peer's stream ended (TCP EOF, or TLS close_notify). */
void tp_link_eof(struct link *l);
/* Whether a rate-limited log line may be written now (RN_TP_LOG_BURST a second; counts the
 * rest and reports their number once the window moves on). */
bool tp_log_ok(struct tp *tp);

/* transport_tls.c */
void tp_tls_free(struct tp *tp); /* the context and read buffer (rn_transport_free) */
/* A new session for an accepted (server) or dialled (client) connection; NULL: no memory. */
SSL *tp_tls_session(struct tp *tp, bool server);
/* After a write tp_tls_flush queued: `owner` is the stream's data, `len` the bytes written. */
typedef void (*tp_tls_written_cb)(void *owner, int status, size_t len);
/* Write what the session has for the peer (handshake, alerts, records) to `s`: at once as far
 * as the socket takes it, the rest in one uv_write whose buffer is freed when it completes
 * (then `cb`, if not NULL, with that rest's length). The bytes left queued (0: all written or
 * nothing pending), or -1 if out of memory or the stream failed. */
long tp_tls_flush(SSL *ssl, uv_stream_t *s, tp_tls_written_cb cb);
/* The last OpenSSL error of this thread as text in buf, and the queue cleared. */
#define RN_TP_TLS_ERRLEN 160
const char *tp_tls_error(char *buf, size_t len);
/* Whether the peer certificate of `ssl` may speak for Raft id `id`: extendedKeyUsage
 * serverAuth and clientAuth, and the name --peer-cert-name makes of id. 0, or -1 with why. */
int tp_tls_identity(struct tp *tp, SSL *ssl, uint64_t id, char *why, size_t len);
/* An inbound link read n bytes of ciphertext: decrypt, pump, reject on any TLS failure. */
void tp_tls_link_input(struct link *l, const uint8_t *p, size_t n);

/* transport_relay.c */
/* The dial `d` (TCP connected, d->tcp) goes TLS: the relay takes the TCP handle, does the
 * handshake and ends the dial (tp_dial_done). 0, or -1 (nothing taken: the dial fails). */
int tp_relay_start(struct dial *d);
void tp_relay_close(struct relay *r);
void tp_relay_close_all(struct tp *tp); /* transport close */

/* transport_dial.c */
int tp_dial_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                    const char *address, raft_uv_connect_cb cb);
/* Closing: cancel a dial in flight; its callback reports RAFT_CANCELED. */
void tp_dial_cancel(struct dial *d);
/* The relay of a D_TLS dial finished its part: `stream` (libraft's socketpair end) or NULL
 * with a RAFT_* status. Fires libraft's callback and frees the dial. */
void tp_dial_done(struct dial *d, uv_stream_t *stream, int status);

#endif
