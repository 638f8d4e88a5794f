/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire.c — checks of libraft 0.22.1's wire format. See wire.h; docs/raft-wire.md maps each
 * check to the libraft code that would otherwise trust the bytes.
 *
 * The checks are exact, not merely safe: a frame passes only if its header length is the one
 * libraft 0.22.1's encoder produces for its type and version (uv_encoding.c), reserved bytes
 * are zero and padding is canonical. A newer libraft that changes the format must be reviewed
 * here before its frames pass, which is the point.
 */
#include "raft/wire.h"

#include <string.h>

static const char *const reason_names[RN_WIRE_NREASONS] = {
    [RN_WIRE_OK] = "ok",
    [RN_WIRE_PROTOCOL] = "protocol",
    [RN_WIRE_ID] = "id",
    [RN_WIRE_ADDRESS] = "address",
    [RN_WIRE_PEER] = "peer",
    [RN_WIRE_TYPE] = "type",
    [RN_WIRE_LENGTH] = "length",
    [RN_WIRE_SIZE] = "size",
    [RN_WIRE_ENTRY] = "entry",
    [RN_WIRE_CONFIG] = "configuration",
    [RN_WIRE_FIELD] = "field",
    [RN_WIRE_TRUNCATED] = "truncated",
    [RN_WIRE_HANDSHAKE_TIMEOUT] = "handshake_timeout",
    [RN_WIRE_BUFFER_CAP] = "buffer_cap",
    [RN_WIRE_TLS] = "tls",
};

const char *rn_wire_reason_name(enum rn_wire_reason r)
{
    return (unsigned)r < RN_WIRE_NREASONS ? reason_names[r] : "unknown";
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--)
        x = (x << 8) | p[i];
    return x;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static enum rn_wire_verdict need(struct rn_wire_result *r, size_t n)
{
    r->len = n;
    return RN_WIRE_NEED;
}

static enum rn_wire_verdict reject(struct rn_wire_result *r, enum rn_wire_reason why)
{
    r->reason = why;
    return RN_WIRE_REJECT;
}

/* Addresses become libraft's server_address: the target of its replies (uv_send.c connects
 * to it) and the leader address followers report. Printable ASCII without spaces only. */
static int printable(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] <= 0x20 || s[i] >= 0x7f)
            return 0;
    return 1;
}

/*
 * The address field is what libraft's uvTcpDecodePreamble mallocs (length from the wire) and
 * uvServerInit strlen()s (so it must hold a NUL). libraft's own encoder pads it with NULs to
 * a multiple of 8; everything after the first NUL must be NUL.
 */
enum rn_wire_verdict rn_wire_handshake(const uint8_t *p, size_t len, struct rn_wire_result *r)
{
    memset(r, 0, sizeof(*r));
    if (len < 24)
        return need(r, 24);
    if (get64(p) != RN_WIRE_HANDSHAKE_PROTOCOL)
        return reject(r, RN_WIRE_PROTOCOL);
    uint64_t id = get64(p + 8), alen = get64(p + 16);
    if (id == 0)
        return reject(r, RN_WIRE_ID);
    if (alen == 0 || alen > RN_WIRE_MAX_ADDRESS || alen % 8)
        return reject(r, RN_WIRE_ADDRESS);
    if (len < 24 + alen)
        return need(r, 24 + (size_t)alen);
    const uint8_t *a = p + 24;
    const uint8_t *nul = memchr(a, 0, (size_t)alen);
    if (!nul || nul == a || !printable(a, (size_t)(nul - a)))
        return reject(r, RN_WIRE_ADDRESS);
    for (const uint8_t *q = nul; q < a + alen; q++)
        if (*q)
            return reject(r, RN_WIRE_ADDRESS);
    r->len = 24 + (size_t)alen;
    r->id = id;
    r->address = (const char *)a;
    return RN_WIRE_ACCEPT;
}

/* configurationDecode (configuration.c) reads ids, strings and role bytes without bounds; its
 * configurationAdd refuses unknown roles and duplicates, but asserts id != 0. */
int rn_wire_check_config(const uint8_t *p, size_t len)
{
    if (len < 9 || len > RN_WIRE_MAX_CONF || p[0] != 1)
        return -1;
    uint64_t n = get64(p + 1);
    if (n == 0 || n > RN_WIRE_MAX_SERVERS)
        return -1;
    size_t off = 9;
    for (uint64_t i = 0; i < n; i++) {
        if (len - off < 8 + 2 + 1) /* id, at least one character and its NUL, role */
            return -1;
        uint64_t id = get64(p + off);
        off += 8;
        const uint8_t *a = p + off;
        const uint8_t *nul = memchr(a, 0, len - off);
        if (!id || !nul || nul == a || (size_t)(nul - a) >= RN_WIRE_MAX_ADDRESS ||
            !printable(a, (size_t)(nul - a)))
            return -1;
        off += (size_t)(nul - a) + 1;
        if (off >= len || p[off] > RN_WIRE_ROLE_SPARE)
            return -1;
        off++;
        /* Duplicates: libraft refuses them too, but a bounded quadratic scan here keeps the
         * rule in one place. Earlier servers are re-walked from the start. */
        size_t o2 = 9;
        for (uint64_t j = 0; j < i; j++) {
            const char *a2 = (const char *)p + o2 + 8;
            if (get64(p + o2) == id || strcmp(a2, (const char *)a) == 0)
                return -1;
            o2 += 8 + strlen(a2) + 1 + 1;
        }
    }
    /* libraft pads the encoding to a multiple of 8 with zeros (configurationEncodedSize). */
    if (len != ((off + 7) & ~(size_t)7))
        return -1;
    for (; off < len; off++)
        if (p[off])
            return -1;
    return 0;
}

/* Fixed-size headers: the exact lengths libraft's decoders read for each version
 * (uv_encoding.c decodeRequestVote & co: version 0 means "guess from the length"). */
static int fixed_header_ok(uint8_t type, uint8_t version, uint64_t hlen)
{
    switch (type) {
    case RN_WIRE_M_VOTE:
        /* Always 40 bytes: a version-0 header of 32 bytes (libraft's "v1" size) is decoded as
         * version 1, and decodeRequestVote reads the u64 flags for every version >= 1, past a
         * 32-byte header (found by fuzz_raft_msg). */
        return version <= 2 && hlen == 40;
    case RN_WIRE_M_VOTE_RESULT: /* v1: 16 bytes; v2 adds flags, features, capacity: 24 */
        return (version == 1 && hlen == 16) || (version == 0 && (hlen == 16 || hlen == 24)) ||
               (version == 2 && hlen == 24);
    case RN_WIRE_M_APPEND_RESULT: /* v0: 24 bytes; v1/v2 add features, capacity, 4 unused: 32 */
        return version <= 2 && (hlen == 32 || (version == 0 && hlen == 24));
    case RN_WIRE_M_TIMEOUT_NOW:
        return version == 0 && hlen == 24;
    }
    return 0;
}

static enum rn_wire_verdict check_fixed(const uint8_t *h, uint8_t type, uint64_t hlen,
                                        const struct rn_wire_ctx *ctx, struct rn_wire_result *r)
{
    if (type == RN_WIRE_M_VOTE && get64(h + 8) != ctx->peer_id)
        return reject(r, RN_WIRE_FIELD); /* candidate id is who the vote goes to */
    if (type == RN_WIRE_M_VOTE_RESULT) {
        uint64_t term = get64(h), granted = get64(h + 8);
        if (granted > 1)
            return reject(r, RN_WIRE_FIELD);
        if (granted && ctx->term && term > ctx->term + 1)
            return reject(r, RN_WIRE_FIELD);
        if (hlen == 24 && (h[16] > 1 || h[17] || h[22] || h[23]))
            return reject(r, RN_WIRE_FIELD); /* flags: only pre_vote; unused bytes zero */
    }
    /* AppendEntriesResult: `rejected` is an index, not a flag; every value is legal. */
    r->len = RN_WIRE_PREAMBLE + (size_t)hlen;
    r->type = type;
    return RN_WIRE_ACCEPT;
}

/* The batch header inside an AppendEntries header (uvDecodeBatchHeader) and then the entries'
 * data (uvDecodeEntriesBatch steps over each entry padded to 8 bytes, while uvDecodeMessage
 * reads only the unpadded sum: so every length must already be a multiple of 8). */
static enum rn_wire_verdict check_append(const uint8_t *p, size_t len, uint64_t hlen,
                                         struct rn_wire_result *r)
{
    const uint8_t *h = p + RN_WIRE_PREAMBLE;
    uint64_t n = get64(h + 32);
    if (n > RN_WIRE_MAX_ENTRIES)
        return reject(r, RN_WIRE_SIZE);
    if (hlen != 32 + 8 + 16 * n + 8)
        return reject(r, RN_WIRE_LENGTH);
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = h + 40 + 16 * i;
        uint32_t elen = get32(e + 12);
        if (get64(e) == 0 || e[8] < RN_WIRE_E_COMMAND || e[8] > RN_WIRE_E_CHANGE || e[9] || e[10] ||
            e[11] || elen == 0 || elen % 8)
            return reject(r, RN_WIRE_ENTRY);
        if (elen > RN_WIRE_MAX_ENTRY)
            return reject(r, RN_WIRE_SIZE);
        total += elen;
    }
    if (get64(h + 40 + 16 * n) != 0)
        return reject(r, RN_WIRE_FIELD); /* the trailing "currently unused" u64 */
    if (total > RN_WIRE_MAX_APPEND)
        return reject(r, RN_WIRE_SIZE);
    size_t frame = RN_WIRE_PREAMBLE + (size_t)hlen + (size_t)total;
    if (len < frame)
        return need(r, frame);
    /* The data of RAFT_CHANGE entries is decoded by libraft (configurationDecode). */
    const uint8_t *d = p + RN_WIRE_PREAMBLE + hlen;
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = h + 40 + 16 * i;
        uint32_t elen = get32(e + 12);
        if (e[8] == RN_WIRE_E_CHANGE && rn_wire_check_config(d, elen))
            return reject(r, RN_WIRE_CONFIG);
        d += elen;
    }
    r->len = frame;
    r->type = RN_WIRE_M_APPEND;
    return RN_WIRE_ACCEPT;
}

/* decodeInstallSnapshot: 5 x u64, then the configuration (length from the wire, decoded in
 * place), then the data length (u64, from which uv_recv.c mallocs the payload), 1 unused u64. */
static enum rn_wire_verdict check_snapshot(const uint8_t *h, uint64_t hlen,
                                           struct rn_wire_result *r)
{
    if (hlen < 40 + 8 + 16)
        return reject(r, RN_WIRE_LENGTH);
    uint64_t clen = get64(h + 32);
    if (clen != hlen - 56)
        return reject(r, RN_WIRE_LENGTH);
    if (rn_wire_check_config(h + 40, (size_t)clen))
        return reject(r, RN_WIRE_CONFIG);
    uint64_t dlen = get64(h + 40 + clen);
    if (dlen == 0 || get64(h + 48 + clen) != 0)
        return reject(r, RN_WIRE_FIELD);
    if (dlen > RN_WIRE_MAX_SNAPSHOT)
        return reject(r, RN_WIRE_SIZE);
    r->len = RN_WIRE_PREAMBLE + (size_t)hlen;
    r->opaque = dlen;
    r->type = RN_WIRE_M_SNAPSHOT;
    return RN_WIRE_ACCEPT;
}

/* Largest header length each type can have within the limits; checked before the header is
 * buffered, so a peer cannot make us (or libraft, in uvServerAllocCb) allocate more. */
static uint64_t max_header(uint8_t type)
{
    switch (type) {
    case RN_WIRE_M_APPEND:
        return RN_WIRE_MAX_APPEND_HEADER;
    case RN_WIRE_M_SNAPSHOT:
        return RN_WIRE_MAX_SNAPSHOT_HEADER;
    default:
        return 40;
    }
}

/*
 * uv_recv.c reads a 16-byte preamble (type in byte 0, version in byte 2), mallocs the header
 * length it names, and hands the header to uvDecodeMessage. Bytes 1 and 3..7 are zero in
 * everything libraft 0.22.1 sends.
 */
enum rn_wire_verdict rn_wire_frame(const uint8_t *p, size_t len, const struct rn_wire_ctx *ctx,
                                   struct rn_wire_result *r)
{
    memset(r, 0, sizeof(*r));
    if (len < RN_WIRE_PREAMBLE)
        return need(r, RN_WIRE_PREAMBLE);
    uint8_t type = p[0], version = p[2];
    if (type < RN_WIRE_M_APPEND || type > RN_WIRE_M_TIMEOUT_NOW || p[1] || p[3] || p[4] || p[5] ||
        p[6] || p[7])
        return reject(r, RN_WIRE_TYPE);
    if ((type == RN_WIRE_M_APPEND || type == RN_WIRE_M_SNAPSHOT) && version != 0)
        return reject(r, RN_WIRE_TYPE);
    uint64_t hlen = get64(p + 8);
    if (hlen == 0 || hlen > max_header(type))
        return reject(r, hlen > max_header(type) ? RN_WIRE_SIZE : RN_WIRE_LENGTH);
    if (type != RN_WIRE_M_APPEND && type != RN_WIRE_M_SNAPSHOT &&
        !fixed_header_ok(type, version, hlen))
        return reject(r, RN_WIRE_LENGTH);
    if (type == RN_WIRE_M_APPEND && (hlen < 48 || (hlen - 48) % 16))
        return reject(r, RN_WIRE_LENGTH);
    if (len < RN_WIRE_PREAMBLE + hlen)
        return need(r, RN_WIRE_PREAMBLE + (size_t)hlen);
    const uint8_t *h = p + RN_WIRE_PREAMBLE;
    if (type == RN_WIRE_M_APPEND)
        return check_append(p, len, hlen, r);
    if (type == RN_WIRE_M_SNAPSHOT)
        return check_snapshot(h, hlen, r);
    return check_fixed(h, type, hlen, ctx, r);
}
