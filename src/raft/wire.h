/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire — the validator of libraft's TCP wire format (libraft 0.22.1, uv_tcp_* and uv_recv.c).
 *
 * Owns nothing: pure functions over borrowed bytes, no allocation, no I/O, no libuv. The raft
 * transport (transport.h) runs every byte a peer sends through them before libraft's decoder
 * sees it, because that decoder trusts lengths, counts and types it reads from the network
 * (docs/raft-wire.md lists each hazard). The fuzzer (fuzz/fuzz_raft_msg.c) drives them too.
 *
 * A connection is one handshake, then frames. Both checks look at the bytes read so far and
 * answer: NEED (r->len: the total the answer needs; never more than the limits below allow),
 * ACCEPT (r->len bytes form a checked unit; r->opaque more bytes follow that are relayed
 * unchecked: an InstallSnapshot's data, which libraft hands to the FSM as a blob) or REJECT
 * (r->reason). An accepted frame decodes in libraft's uvDecodeMessage, and its payload in
 * uvDecodeEntriesBatch / configurationDecode, without reading past what was sent, allocating
 * more than the limits, or meeting a count, type or length it does not handle.
 */
#ifndef FENCELOCK_RN_WIRE_H
#define FENCELOCK_RN_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Limits (bytes unless said). Far above what a fencelock peer sends: libraft sends at most
 * max_inflight_entries (32) entries per AppendEntries, a fencelock entry is a batch of at most
 * 64 commands, and addresses are at most PROTO_ADDR_MAX (128) characters. */
#define RN_WIRE_MAX_ADDRESS 256           /* handshake address field, NUL and padding included */
#define RN_WIRE_MAX_ENTRIES 1024          /* entries per AppendEntries */
#define RN_WIRE_MAX_ENTRY (16u << 20)     /* one entry's data */
#define RN_WIRE_MAX_APPEND (64u << 20)    /* all entries' data of one AppendEntries */
#define RN_WIRE_MAX_SERVERS 256           /* servers in one configuration */
#define RN_WIRE_MAX_CONF (64u << 10)      /* an encoded configuration */
#define RN_WIRE_MAX_SNAPSHOT (4ull << 30) /* InstallSnapshot data */

#define RN_WIRE_HANDSHAKE_PROTOCOL 1
#define RN_WIRE_PREAMBLE 16 /* u64 type word, u64 header length */

/* The largest headers within the limits: AppendEntries (5 u64s, 16 bytes per entry, 1 u64 of
 * padding: 48 + 16 n) and InstallSnapshot (7 u64s around the configuration). */
#define RN_WIRE_MAX_APPEND_HEADER (48 + 16ull * RN_WIRE_MAX_ENTRIES)
#define RN_WIRE_MAX_SNAPSHOT_HEADER (56 + (uint64_t)RN_WIRE_MAX_CONF)
/* The most a frame check can ask to have buffered at once (a NEED's r->len): the largest
 * AppendEntries, data included. An InstallSnapshot's data is relayed, never buffered whole. */
#define RN_WIRE_MAX_FRAME (RN_WIRE_PREAMBLE + RN_WIRE_MAX_APPEND_HEADER + RN_WIRE_MAX_APPEND)

/* libraft's message, entry and role values (raft.h), repeated so the validator (and the fuzzer
 * that builds it alone) needs no libraft; transport.c asserts that they match. */
enum rn_wire_msg {
    RN_WIRE_M_APPEND = 1,
    RN_WIRE_M_APPEND_RESULT = 2,
    RN_WIRE_M_VOTE = 3,
    RN_WIRE_M_VOTE_RESULT = 4,
    RN_WIRE_M_SNAPSHOT = 5,
    RN_WIRE_M_TIMEOUT_NOW = 6,
};
enum rn_wire_entry { RN_WIRE_E_COMMAND = 1, RN_WIRE_E_BARRIER = 2, RN_WIRE_E_CHANGE = 3 };
enum rn_wire_role { RN_WIRE_ROLE_STANDBY = 0, RN_WIRE_ROLE_VOTER = 1, RN_WIRE_ROLE_SPARE = 2 };

enum rn_wire_verdict { RN_WIRE_NEED = 0, RN_WIRE_ACCEPT = 1, RN_WIRE_REJECT = 2 };

/* Why a connection was dropped; the names are the metric's `reason` label values. */
enum rn_wire_reason {
    RN_WIRE_OK = 0,
    RN_WIRE_PROTOCOL,  /* handshake protocol is not 1 */
    RN_WIRE_ID,        /* handshake server id 0 */
    RN_WIRE_ADDRESS,   /* handshake address: bad length, no NUL, not printable */
    RN_WIRE_PEER,      /* claimed id is not a member (transport policy, not the validator) */
    RN_WIRE_TYPE,      /* unknown message type, version or reserved preamble bits */
    RN_WIRE_LENGTH,    /* header length does not match the message type */
    RN_WIRE_SIZE,      /* beyond a limit above */
    RN_WIRE_ENTRY,     /* entry type, term, flags or data length */
    RN_WIRE_CONFIG,    /* configuration encoding (InstallSnapshot or a RAFT_CHANGE entry) */
    RN_WIRE_FIELD,     /* a field libraft trusts: sender id, vote flag, zero snapshot */
    RN_WIRE_TRUNCATED, /* the peer closed in the middle of a handshake or frame */
    /* The transport's own limits (transport.h), not the validator's: */
    RN_WIRE_HANDSHAKE_TIMEOUT, /* no complete handshake within the deadline */
    RN_WIRE_BUFFER_CAP,        /* buffering more would pass the cap over all inbound links */
    RN_WIRE_TLS, /* peer TLS: no TLS, a failed handshake or certificate, a TLS error */
    RN_WIRE_NREASONS
};

struct rn_wire_result {
    enum rn_wire_reason reason; /* REJECT only */
    size_t len;                 /* NEED: bytes needed in all; ACCEPT: bytes of the unit */
    uint64_t opaque;            /* ACCEPT: unchecked bytes that follow (snapshot data) */
    uint8_t type;               /* ACCEPT of a frame: the message type */
    uint64_t id;                /* ACCEPT of a handshake: the claimed server id */
    const char *address;        /* ACCEPT of a handshake: NUL-terminated, inside the input */
};

/* What a frame is checked against beyond its own bytes. */
struct rn_wire_ctx {
    uint64_t peer_id; /* the id the connection's handshake claimed */
    /* This node's term now, or 0 if unknown: a granted vote can never carry a term above
     * term + 1 (libraft asserts it in recv_request_vote_result.c). */
    uint64_t term;
};

const char *rn_wire_reason_name(enum rn_wire_reason r);

/* The handshake: u64 protocol, u64 id, u64 address length, then the address (NUL-padded). */
enum rn_wire_verdict rn_wire_handshake(const uint8_t *p, size_t len, struct rn_wire_result *r);

/* One frame at the start of p: preamble, header and (for AppendEntries) the entries' data. */
enum rn_wire_verdict rn_wire_frame(const uint8_t *p, size_t len, const struct rn_wire_ctx *ctx,
                                   struct rn_wire_result *r);

/* A configuration as libraft encodes it (configuration.c): u8 format 1, u64 n, n x (u64 id,
 * NUL-terminated address, u8 role), zero padding. 0 if libraft's configurationDecode reads it
 * within len and gets n >= 1 servers with distinct nonzero ids and addresses and known roles. */
int rn_wire_check_config(const uint8_t *p, size_t len);

#endif
