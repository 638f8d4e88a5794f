/*
 * transport_internal — what the pieces of the validating transport share; callers use
 * transport.h.
 *
 *   transport.c       the raft_uv_transport table: init, listen, close; counters and limits
 *   transport_link.c  inbound: one link per accepted connection, validated and relayed
 *   transport_dial.c  outbound: resolve, connect, write libraft's handshake
 *
 * Invariants: a link is in tp->links until all its handles closed; bytes reach libraft only as
 * whole accepted frames or as the accepted opaque tail of one, in stream order, through
 * deliver(); accept_cb is never called once the transport is closing. A dial is in tp->dials
 * until its callback fired. tp->buffered is the sum of rn_tp_charge(l->cap) over tp->links and
 * never exceeds tp->buffer_cap. All on the loop thread.
 */
#ifndef FENCELOCK_RN_TRANSPORT_INTERNAL_H
#define FENCELOCK_RN_TRANSPORT_INTERNAL_H

#include "raft/transport.h"

#include "common/proto.h"

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
    char scratch[16];          /* libraft never writes to its end: room to see EOF */
    char peer[PROTO_ADDR_BUF]; /* "host:port" of the remote end, for log lines */
    struct link *prev, *next;
};

/* The dial life cycle: see transport_dial.c. */
enum dial_state { D_RESOLVING = 0, D_CONNECTING = 1, D_WRITING = 2, D_CLOSING = 3 };

struct dial {
    struct tp *tp;
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
    uv_getaddrinfo_t gai;
    uv_tcp_t *tcp; /* raft_malloc'd: libraft frees it once it has it */
    uv_connect_t conn;
    uv_write_t write;
    uv_buf_t hs;
    int status; /* D_CLOSING: what to report once the TCP handle closed */
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
    uv_tcp_t refuse; /* accepts and closes a connection there is no memory for a link for */
    bool refusing;   /* `refuse` is open or closing */
    char *capture;   /* FENCELOCK_RAFT_CAPTURE or NULL */
    uint64_t captured;
};

/* transport.c: fire close's callback once the listener, every link and every dial are gone. */
void tp_maybe_closed(struct tp *tp);

/* transport_link.c */
void tp_link_accept_cb(uv_stream_t *server, int status); /* the listener's connection_cb */
void tp_link_close(struct link *l);

/* transport_dial.c */
int tp_dial_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                    const char *address, raft_uv_connect_cb cb);
/* Closing: cancel a dial in flight; its callback reports RAFT_CANCELED. */
void tp_dial_cancel(struct dial *d);

#endif
