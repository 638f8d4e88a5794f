/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport — fencelock's raft_uv_transport (libraft's include/raft/uv.h, version 1): the only
 * code that reads bytes from the Raft port before libraft does.
 *
 * Inbound: the transport accepts TCP itself and checks the handshake and every frame with the
 * validator (wire.h). After a valid handshake, libraft's accept_cb gets one end of a
 * socketpair; libraft starts reading it, and each accepted frame is handed to the callbacks
 * libraft registered (deliver() in transport_link.c: no bytes cross the socket, so the relay adds
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
 *   HANDSHAKE --link_deadline_cb: no complete handshake after handshake_ms--> CLOSING
 *   any --tp_link_close: reject, EOF, error, libraft dropped its end, transport close--> CLOSING
 * Backpressure: libraft consumes each delivery synchronously, so the only buffer is one
 * frame per link (bounded by the validator's limits); TCP flow control does the rest.
 * Limits on what a peer can hold without sending anything useful (each drop is counted):
 *   - a link still in HANDSHAKE after handshake_ms (RN_TP_HANDSHAKE_MS) is closed
 *     (RN_WIRE_HANDSHAKE_TIMEOUT);
 *   - the bytes buffered over all links, beyond RN_TP_LINK_FREE each, stay within buffer_cap
 *     (RN_TP_BUFFER_CAP); a link whose buffer would grow past it is closed (RN_WIRE_BUFFER_CAP).
 *     The cap is twice the most one link can hold, so two largest legitimate messages (a
 *     leader's and a deposed leader's last one) are buffered side by side; small frames
 *     (heartbeats, votes, results) never count against it.
 *   - inbound links are capped in total and per remote address, and so are those still in
 *     their handshake (rn_transport_set_caps): the excess is closed as it is accepted.
 * Peer TLS (rn_transport_tls): inbound, a link's reads are ciphertext, decrypted
 * into its buffer (transport_tls.c) before the handshake check above; the TLS handshake counts
 * against the same handshake_ms deadline and a failed one is RN_WIRE_TLS. Outbound, libraft
 * gets one end of a socketpair and a relay (transport_relay.c) encrypts what it writes into
 * the TCP connection; the relay reads libraft's end only while its queued ciphertext stays
 * under RN_TP_RELAY_HIGH, so a slow peer pushes back on libraft (its writes queue in libuv,
 * as they would on a slow TCP stream). Without TLS none of this runs: libraft writes to the
 * TCP stream itself and inbound bytes go straight from the socket into the link's buffer.
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

#define RN_TP_LOG_BURST 10 /* rejection log lines per second; the rest are counted */

#define RN_TP_READ_CHUNK (64u << 10)  /* bytes asked of the socket per read, at least */
#define RN_TP_OPAQUE_CHUNK (8u << 20) /* per read while relaying snapshot data */
/* Each link's buffer may be this big without counting against the cap: enough for every
 * message but large AppendEntries, and what a link's buffer shrinks back to. */
#define RN_TP_LINK_FREE (2 * RN_TP_READ_CHUNK)
/* The most one link's buffer can grow to: the largest frame the validator lets through plus
 * one read (the OPAQUE read chunk, the larger of the two). */
#define RN_TP_LINK_MAX ((uint64_t)RN_WIRE_MAX_FRAME + RN_TP_OPAQUE_CHUNK)
/* Default cap on the bytes buffered over all inbound links, beyond RN_TP_LINK_FREE each. */
#define RN_TP_BUFFER_CAP (2 * RN_TP_LINK_MAX)
/* Default time an inbound connection has to complete its handshake; libraft's peers send it
 * the moment they connect. */
#define RN_TP_HANDSHAKE_MS 5000
/* TCP keepalive on every peer link (s idle before the first probe), so a half-open link is
 * found dead */
#define RN_TP_KEEPALIVE_S 60

struct rn_tp_policy {
    void *arg;
    /* May a peer that claims server id `id` in its handshake talk to this node? */
    bool (*peer_ok)(void *arg, uint64_t id);
    /* This node's current term (0: unknown), for rn_wire_ctx. */
    uint64_t (*term)(void *arg);
    /* Optional: an inbound link from server `id` (past its handshake) was closed by the peer
     * (EOF or a read error such as a reset), not by us. Called after the link is closing. */
    void (*peer_gone)(void *arg, uint64_t id);
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
/* Peer TLS settings (rn_transport_tls); every string borrowed for the call. */
struct rn_tp_tls {
    const char *cert, *key, *ca; /* PEM: this node's chain, its key, the peer CA */
    /* The name a member's certificate carries (a SAN DNS name, or the subject CN of a
     * certificate without one), "%d" standing for its Raft id: see rn_tp_peer_name. */
    const char *name_pattern;
    uint64_t self_id; /* this node's id: its own certificate must name it */
};
/* Turn on mutual TLS for every connection, before listen, or again (SIGHUP) for new ones.
 * Every peer certificate, in and out, must chain to the CA, carry extendedKeyUsage serverAuth
 * AND clientAuth, and name the Raft id the peer claims in libraft's handshake (inbound) or the
 * id this node dialled (outbound); otherwise the link is dropped as RN_WIRE_IDENTITY before
 * one frame reaches libraft. This node's own certificate is held to the same rule. 0, or -1
 * with err filled (unreadable file, key not matching, own certificate not fit to be a peer's),
 * the previous settings then still in use. */
int rn_transport_tls(struct raft_uv_transport *t, const struct rn_tp_tls *cfg, char *err,
                     size_t errlen);
/* Whether `pattern` is a usable --peer-cert-name: exactly one "%d", no other '%', and the
 * rest letters, digits, '-' and '.' (a DNS name once the id is in), at most
 * RN_TP_NAME_PATTERN_MAX bytes. */
#define RN_TP_NAME_PATTERN_MAX 200
bool rn_tp_name_pattern_ok(const char *pattern);
/* The name member `id` must carry: `pattern` with "%d" replaced by id in decimal. 0, or -1 if
 * it does not fit in `cap` (pattern is never a format string). */
int rn_tp_peer_name(const char *pattern, uint64_t id, char *out, size_t cap);
/* An outbound relay stops reading libraft's end while this much ciphertext waits for TCP. */
#define RN_TP_RELAY_HIGH (2 * RN_TP_READ_CHUNK)

/* Replace the handshake deadline (ms; --raft-handshake-timeout) and the buffer cap (bytes,
 * tests) before listening. */
void rn_transport_set_limits(struct raft_uv_transport *t, unsigned handshake_ms,
                             uint64_t buffer_cap);

/* Caps on inbound links, checked when a connection is accepted (before any TLS work): a
 * connection over one is closed at once and counted (RN_WIRE_LINK_CAP, RN_WIRE_HANDSHAKE_CAP).
 * `links` counts every inbound link, `handshakes` those that have not yet completed TLS and
 * libraft's handshake (the unauthenticated ones: they cost a TLS session and a handshake's
 * CPU); each in total and per remote IP address. With links capped, the memory the inbound
 * side holds is at most links * (RN_TP_LINK_FREE + a TLS session) + the buffer cap. */
struct rn_tp_caps {
    unsigned links, links_per_addr, handshakes, handshakes_per_addr;
    /* New inbound links (each a handshake to run, TLS included) a second, with a burst of as
     * many: a token bucket over all addresses, so a flood of quick handshakes that each end
     * at once cannot keep the loop busy (RN_WIRE_HANDSHAKE_RATE). */
    unsigned handshake_rate;
};
#define RN_TP_MAX_LINKS 64
#define RN_TP_MAX_LINKS_PER_ADDR 16
#define RN_TP_MAX_HANDSHAKES 16
#define RN_TP_MAX_HANDSHAKES_PER_ADDR 8
#define RN_TP_HANDSHAKE_RATE 100
void rn_transport_set_caps(struct raft_uv_transport *t, const struct rn_tp_caps *caps);

/* What a link's buffer of `cap` bytes counts against the cap (pure). */
static inline uint64_t rn_tp_charge(uint64_t cap)
{
    return cap > RN_TP_LINK_FREE ? cap - RN_TP_LINK_FREE : 0;
}

/* Whether a link's buffer may go from old_cap to new_cap bytes while `buffered` bytes count
 * against a cap of `limit` (pure; shrinking always may). */
static inline bool rn_tp_budget_ok(uint64_t buffered, uint64_t old_cap, uint64_t new_cap,
                                   uint64_t limit)
{
    uint64_t before = rn_tp_charge(old_cap), after = rn_tp_charge(new_cap);
    return after <= before || buffered - before + after <= limit;
}

#endif
