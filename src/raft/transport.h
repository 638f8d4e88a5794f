/*
 * transport — fencelock's raft_uv_transport (libraft's include/raft/uv.h, version 1): the only
 * code that reads bytes from the Raft port before libraft does.
 *
 * Inbound: the transport accepts TCP itself and checks the handshake and every frame with the
 * validator (wire.h). After a valid handshake, libraft's accept_cb gets one end of a
 * socketpair; libraft starts reading it, and each accepted frame is handed to the callbacks
 * libraft registered (deliver() in transport.c: no bytes cross the socket, so the relay adds
 * no system call and no loop turn). Closing our end is how libraft learns the connection
 * ended. Anything malformed closes the connection, bumps a per-reason counter and logs one
 * line (at most RN_TP_LOG_BURST lines a second). Outbound: libraft only writes to the stream
 * it gets from connect (uv_send.c never reads), so connect is a TCP connect plus libraft's
 * handshake and the TCP stream itself. The wire format is libraft's byte for byte.
 *
 * A link (one inbound connection) moves HANDSHAKE -> FRAMES <-> OPAQUE -> CLOSING:
 *   HANDSHAKE --link_handshake: valid, peer allowed--> FRAMES (accept_cb got the pipe end)
 *   FRAMES --link_frames: InstallSnapshot header accepted--> OPAQUE (data delivered unchecked)
 *   OPAQUE --link_frames: data delivered--> FRAMES
 *   any --link_close: reject, EOF, error, libraft dropped its end, transport close--> CLOSING
 * Backpressure: libraft consumes each delivery synchronously, so the only buffer is one
 * frame (bounded by the validator's limits); TCP flow control does the rest. A TLS layer
 * (issue 18) decrypts where link_read_cb gets bytes; outbound it would hand libraft a
 * socketpair end and encrypt what libraft writes into it.
 *
 * Memory: the transport state (t->impl) is freed by rn_transport_free after close's callback,
 * as libraft's raft_uv_tcp_close does. A stream handed to libraft is allocated with
 * raft_malloc and freed by libraft (uv_recv.c / uv_send.c close it and raft_free it).
 */
#ifndef FENCELOCK_RN_TRANSPORT_H
#define FENCELOCK_RN_TRANSPORT_H

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"
#include "raft/wire.h"

#define RN_TP_HIGH (4u << 20) /* bytes queued to libraft before TCP reading pauses */
#define RN_TP_LOW (1u << 20)  /* ... and resumes */
#define RN_TP_LOG_BURST 10    /* rejection log lines per second; the rest are counted */

struct rn_tp_policy {
    void *arg;
    /* May a peer that claims server id `id` in its handshake talk to this node? */
    bool (*peer_ok)(void *arg, uint64_t id);
    /* This node's current term (0: unknown), for rn_wire_ctx. */
    uint64_t (*term)(void *arg);
};

/* Fill `t` (whose version must be 1) with fencelock's transport. `policy` and `log` are
 * borrowed and must outlive the transport. FENCELOCK_RAFT_CAPTURE=dir (debug) writes every
 * accepted handshake+frame to a file in dir: the fuzzer's seed corpus. */
int rn_transport_init(struct raft_uv_transport *t, uv_loop_t *loop,
                      const struct rn_tp_policy *policy, const struct logger *log);
/* Release the implementation: after t->close's callback fired, or if libraft never used it. */
void rn_transport_free(struct raft_uv_transport *t);
/* Connections dropped for `reason` since start. */
uint64_t rn_transport_rejected(const struct raft_uv_transport *t, enum rn_wire_reason reason);

#endif
