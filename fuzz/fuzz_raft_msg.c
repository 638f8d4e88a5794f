/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_raft_msg — libFuzzer target for the Raft-port validator (src/raft/wire.c), checked
 * against libraft 0.22.1's real decoder.
 *
 * The input is one inbound connection's bytes: a handshake, then frames (and the unchecked
 * data an accepted InstallSnapshot announces). Every unit the validator accepts is then
 * handled the way libraft's uv_tcp_listen.c and uv_recv.c would: the address copied into a
 * buffer of exactly the announced length and strlen()'d; the header copied into an exact-size
 * allocation and given to uvDecodeMessage; the payload into an exact-size allocation and
 * given to uvDecodeEntriesBatch; every RAFT_CHANGE entry and the InstallSnapshot
 * configuration decoded with configurationDecode. libraft's uv_encoding.c, configuration.c
 * and heap.c are compiled into this target from /work/libraft-src (LIBRAFT_SRC) with ASan
 * and their asserts on; nothing of them is copied here or shipped. Checks:
 *   - what the validator accepts, libraft decodes without a sanitizer report, an assert, or
 *     an error, and its payload length is the one the validator computed;
 *   - every entry's data lies inside the payload;
 *   - the validator's NEED never asks for more than its limits, and one byte less than an
 *     accepted unit is NEED, not ACCEPT (so a relay never forwards a partial frame).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raft/wire.h"

/* libraft internals (src/uv_encoding.h, src/configuration.h of libraft 0.22.1). */
#include <raft.h>
#include <uv.h>
int uvDecodeMessage(uint8_t type, uint8_t version, const uv_buf_t *header,
                    struct raft_message *message, size_t *payload_len);
void uvDecodeEntriesBatch(uint8_t *batch, size_t offset, struct raft_entry *entries, unsigned n);
int configurationDecode(const struct raft_buffer *buf, struct raft_configuration *c);
void configurationClose(struct raft_configuration *c);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

static void check_prefix_needs_more(const uint8_t *p, size_t len, const struct rn_wire_ctx *ctx,
                                    int handshake)
{
    struct rn_wire_result r;
    enum rn_wire_verdict v =
        handshake ? rn_wire_handshake(p, len - 1, &r) : rn_wire_frame(p, len - 1, ctx, &r);
    CHECK(v != RN_WIRE_ACCEPT);
    if (v == RN_WIRE_NEED)
        CHECK(r.len > len - 1 && r.len <= len);
}

/* uv_tcp_listen.c: malloc(address length), read into it, later strlen/strcpy (uv_recv.c). */
static void libraft_handshake(const uint8_t *p, const struct rn_wire_result *r)
{
    uint64_t alen;
    memcpy(&alen, p + 16, 8);
    char *a = malloc((size_t)alen);
    CHECK(a);
    memcpy(a, p + 24, (size_t)alen);
    CHECK(strlen(a) == strlen(r->address));
    free(a);
}

static void decode_change(struct raft_entry *e)
{
    struct raft_configuration c;
    CHECK(configurationDecode(&e->buf, &c) == 0);
    CHECK(c.n >= 1);
    configurationClose(&c);
}

/* uv_recv.c uvServerReadCb: header, then payload, each in its own exact allocation. */
static void libraft_frame(const uint8_t *p, const struct rn_wire_result *r)
{
    uint64_t w, hlen;
    memcpy(&w, p, 8);
    memcpy(&hlen, p + 8, 8);
    uv_buf_t header = {.base = malloc((size_t)hlen), .len = (size_t)hlen};
    CHECK(header.base);
    memcpy(header.base, p + RN_WIRE_PREAMBLE, (size_t)hlen);
    struct raft_message m;
    size_t payload_len = 0;
    int rv = uvDecodeMessage((uint8_t)w, (uint8_t)(w >> 16), &header, &m, &payload_len);
    CHECK(rv == 0);
    CHECK(m.type == r->type);
    if (m.type == RAFT_APPEND_ENTRIES) {
        size_t want = r->len - RN_WIRE_PREAMBLE - (size_t)hlen;
        CHECK(payload_len == want);
        uint8_t *payload = payload_len ? malloc(payload_len) : NULL;
        if (payload_len) {
            CHECK(payload);
            memcpy(payload, p + RN_WIRE_PREAMBLE + hlen, payload_len);
            uvDecodeEntriesBatch(payload, 0, m.append_entries.entries, m.append_entries.n_entries);
        }
        for (unsigned i = 0; i < m.append_entries.n_entries; i++) {
            struct raft_entry *e = &m.append_entries.entries[i];
            CHECK(e->buf.len > 0 && e->buf.base);
            CHECK((uint8_t *)e->buf.base >= payload &&
                  (uint8_t *)e->buf.base + e->buf.len <= payload + payload_len);
            if (e->type == RAFT_CHANGE)
                decode_change(e);
        }
        raft_free(m.append_entries.entries);
        free(payload);
    } else if (m.type == RAFT_INSTALL_SNAPSHOT) {
        CHECK(payload_len == r->opaque);
        CHECK(m.install_snapshot.conf.n >= 1);
        configurationClose(&m.install_snapshot.conf);
    } else {
        CHECK(payload_len == 0);
    }
    free(header.base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rn_wire_result r;
    if (rn_wire_handshake(data, size, &r) != RN_WIRE_ACCEPT)
        return 0;
    CHECK(r.len <= 24 + RN_WIRE_MAX_ADDRESS && r.len <= size);
    check_prefix_needs_more(data, r.len, NULL, 1);
    libraft_handshake(data, &r);
    struct rn_wire_ctx ctx = {.peer_id = r.id, .term = 7};
    size_t off = r.len;
    while (off < size) {
        enum rn_wire_verdict v = rn_wire_frame(data + off, size - off, &ctx, &r);
        if (v == RN_WIRE_NEED)
            CHECK(r.len > size - off && r.len <= RN_WIRE_PREAMBLE + 56 + RN_WIRE_MAX_CONF +
                                                     16ull * RN_WIRE_MAX_ENTRIES +
                                                     RN_WIRE_MAX_APPEND);
        if (v != RN_WIRE_ACCEPT)
            break;
        CHECK(r.len <= size - off);
        check_prefix_needs_more(data + off, r.len, &ctx, 0);
        libraft_frame(data + off, &r);
        off += r.len;
        /* The snapshot data the frame announced, relayed unchecked. */
        off += r.opaque < size - off ? (size_t)r.opaque : size - off;
    }
    return 0;
}
