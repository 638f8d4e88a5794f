/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wire — the Raft-port validator (src/raft/wire.c): libraft's real messages (the seed
 * corpus captured from a live cluster) pass whole, and each hazard of docs/raft-wire.md is
 * rejected with its reason. Run from the repository root (reads fuzz/corpus/raft/).
 */
#include <dirent.h>
#include <stdlib.h>

#include "raft/wire.h"
#include "test.h"

struct msg {
    uint8_t b[4096];
    size_t n;
};

static void put64(struct msg *m, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        m->b[m->n++] = (uint8_t)(v >> (8 * i));
}

static void put(struct msg *m, const void *p, size_t n)
{
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

/* A preamble (type, version, header length) then the header words. */
static struct msg frame(uint8_t type, uint8_t version, size_t nwords, const uint64_t *w)
{
    struct msg m = {.n = 0};
    put64(&m, (uint64_t)type | (uint64_t)version << 16);
    put64(&m, 8 * nwords);
    for (size_t i = 0; i < nwords; i++)
        put64(&m, w[i]);
    return m;
}

static enum rn_wire_verdict check(const struct msg *m, struct rn_wire_result *r)
{
    struct rn_wire_ctx ctx = {.peer_id = 2, .term = 5};
    return rn_wire_frame(m->b, m->n, &ctx, r);
}

#define REJECTS(m, why)                                                                            \
    do {                                                                                           \
        struct rn_wire_result r_;                                                                  \
        CHECK(check(&(m), &r_) == RN_WIRE_REJECT);                                                 \
        CHECK_EQ_U64(r_.reason, (why));                                                            \
    } while (0)

TEST(test_libraft_handshake_is_accepted_and_one_byte_less_needs_more)
{
    struct msg m = {.n = 0};
    put64(&m, 1);
    put64(&m, 3);
    put64(&m, 16);
    put(&m, "127.0.0.1:7481\0\0", 16);
    struct rn_wire_result r;
    CHECK(rn_wire_handshake(m.b, m.n, &r) == RN_WIRE_ACCEPT);
    CHECK_EQ_U64(r.len, 40);
    CHECK_EQ_U64(r.id, 3);
    CHECK(strcmp(r.address, "127.0.0.1:7481") == 0);
    CHECK(rn_wire_handshake(m.b, 39, &r) == RN_WIRE_NEED);
    CHECK_EQ_U64(r.len, 40);
    CHECK(rn_wire_handshake(m.b, 10, &r) == RN_WIRE_NEED);
    CHECK_EQ_U64(r.len, 24);
}

TEST(test_handshake_hazards_are_rejected)
{
    struct rn_wire_result r;
    struct msg m = {.n = 0};
    put64(&m, 1);
    put64(&m, 3);
    put64(&m, 8);
    put(&m, "AAAAAAAA", 8); /* no NUL: libraft strlen()s past the buffer */
    CHECK(rn_wire_handshake(m.b, m.n, &r) == RN_WIRE_REJECT);
    CHECK_EQ_U64(r.reason, RN_WIRE_ADDRESS);
    m.n = 16;
    put64(&m, 1ull << 62); /* libraft mallocs it */
    CHECK(rn_wire_handshake(m.b, m.n, &r) == RN_WIRE_REJECT);
    CHECK_EQ_U64(r.reason, RN_WIRE_ADDRESS);
    m.b[0] = 2;
    CHECK(rn_wire_handshake(m.b, m.n, &r) == RN_WIRE_REJECT);
    CHECK_EQ_U64(r.reason, RN_WIRE_PROTOCOL);
    m.b[0] = 1;
    memset(m.b + 8, 0, 8); /* id 0: libraft asserts id > 0 in every recv handler */
    CHECK(rn_wire_handshake(m.b, m.n, &r) == RN_WIRE_REJECT);
    CHECK_EQ_U64(r.reason, RN_WIRE_ID);
}

/* The crash: uvDecodeBatchHeader frees the entries on type 0, keeps the count. */
TEST(test_append_entry_of_type_0_is_rejected)
{
    uint64_t w[] = {1, 0, 0, 0, 1, 1, (uint64_t)8 << 32, 0};
    struct msg m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_ENTRY);
    m.b[16 + 48] = 1; /* the same entry as a command: needs its 8 bytes of data */
    struct rn_wire_result r;
    CHECK(check(&m, &r) == RN_WIRE_NEED);
    CHECK_EQ_U64(r.len, 16 + 64 + 8);
    put64(&m, 42);
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    CHECK_EQ_U64(r.len, m.n);
}

TEST(test_append_counts_and_lengths_are_checked)
{
    uint64_t w[] = {1, 0, 0, 0, 2, 1, (uint64_t)8 << 32, 0}; /* count 2, one entry header */
    struct msg m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_LENGTH);
    w[4] = (1ull << 32) + 1; /* libraft truncates the count to unsigned: 1 */
    m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_SIZE);
    w[4] = 1;
    w[6] = (uint64_t)5 << 32 | 1; /* odd length: libraft pads while stepping, not summing */
    m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_ENTRY);
    w[6] = (uint64_t)0xFFFFFFF8 << 32 | 1;
    m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_SIZE);
    w[6] = (uint64_t)8 << 32 | 1;
    w[5] = 0; /* entry term 0 */
    m = frame(1, 0, 8, w);
    REJECTS(m, RN_WIRE_ENTRY);
    uint64_t hb[] = {1, 0, 0, 0, 0, 0}; /* a heartbeat: no entries */
    m = frame(1, 0, 6, hb);
    struct rn_wire_result r;
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    m = frame(1, 0, 6, hb);
    m.b[8] = 0; /* header length 0 */
    REJECTS(m, RN_WIRE_LENGTH);
    m.b[8] = 0;
    m.b[15] = 0x40; /* 2^62 */
    REJECTS(m, RN_WIRE_SIZE);
}

TEST(test_fixed_size_messages_need_their_exact_length)
{
    uint64_t w[] = {1, 2, 3, 4, 0, 0};
    struct msg m = frame(3, 2, 5, w); /* RequestVote v2 from peer 2: 40 bytes */
    struct rn_wire_result r;
    w[1] = 2;
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    m = frame(3, 2, 4, w); /* v2 reads 40 bytes from a 32-byte header */
    REJECTS(m, RN_WIRE_LENGTH);
    m = frame(3, 0, 4, w); /* v0 with 32 bytes: libraft decodes it as v1 and reads 40 bytes */
    REJECTS(m, RN_WIRE_LENGTH);
    w[1] = 9; /* the candidate is not who the handshake said */
    m = frame(3, 2, 5, w);
    REJECTS(m, RN_WIRE_FIELD);
    uint64_t vr[] = {6, 1, 0};
    m = frame(4, 2, 3, vr);
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    vr[0] = 7; /* granted with a term above ours + 1: libraft asserts it cannot happen */
    m = frame(4, 2, 3, vr);
    REJECTS(m, RN_WIRE_FIELD);
    m = frame(4, 2, 2, vr);
    REJECTS(m, RN_WIRE_LENGTH);
    uint64_t ar[] = {1, 77, 5, 0}; /* AppendEntriesResult: `rejected` is an index */
    m = frame(2, 2, 4, ar);
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    m = frame(2, 2, 2, ar);
    REJECTS(m, RN_WIRE_LENGTH);
    uint64_t tn[] = {1, 2, 3};
    m = frame(6, 0, 3, tn);
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    m = frame(6, 0, 2, tn);
    REJECTS(m, RN_WIRE_LENGTH);
    m = frame(0, 0, 3, tn);
    REJECTS(m, RN_WIRE_TYPE);
    m = frame(7, 0, 3, tn);
    REJECTS(m, RN_WIRE_TYPE);
}

/* One server: id 1, "a:1", voter: 1 + 8 + 8 + 4 + 1 = 22 bytes, padded to 24. */
static size_t one_server_conf(uint8_t *p, uint8_t role)
{
    memset(p, 0, 24);
    p[0] = 1;
    p[1] = 1;
    p[9] = 1;
    memcpy(p + 17, "a:1", 4);
    p[21] = role;
    return 24;
}

TEST(test_configurations_are_decoded_before_libraft_does)
{
    uint8_t c[64];
    size_t n = one_server_conf(c, 1);
    CHECK(rn_wire_check_config(c, n) == 0);
    CHECK(rn_wire_check_config(c, 22) != 0); /* not padded */
    c[21] = 9;
    CHECK(rn_wire_check_config(c, n) != 0); /* role */
    one_server_conf(c, 1);
    c[1] = 2; /* two servers announced, one there */
    CHECK(rn_wire_check_config(c, n) != 0);
    one_server_conf(c, 1);
    c[9] = 0; /* id 0 */
    CHECK(rn_wire_check_config(c, n) != 0);
    one_server_conf(c, 1);
    memset(c + 17, 'x', 7); /* no NUL before the end */
    CHECK(rn_wire_check_config(c, n) != 0);
    CHECK(rn_wire_check_config(c, 0) != 0); /* libraft asserts len > 0 */
}

TEST(test_install_snapshot_lengths_are_checked)
{
    uint8_t conf[24];
    one_server_conf(conf, 1);
    struct msg m = {.n = 0};
    put64(&m, 5);
    put64(&m, 40 + 24 + 16);
    uint64_t w[] = {1, 10, 1, 1, 24};
    for (int i = 0; i < 5; i++)
        put64(&m, w[i]);
    put(&m, conf, 24);
    put64(&m, 4096);
    put64(&m, 0);
    struct rn_wire_result r;
    CHECK(check(&m, &r) == RN_WIRE_ACCEPT);
    CHECK_EQ_U64(r.opaque, 4096);
    CHECK_EQ_U64(r.len, m.n);
    m.b[16 + 32] = 25; /* configuration length disagrees with the header length */
    REJECTS(m, RN_WIRE_LENGTH);
    m.b[16 + 32] = 24;
    m.b[m.n - 9] = 0x40; /* data length 2^62 */
    REJECTS(m, RN_WIRE_SIZE);
    memset(m.b + m.n - 16, 0, 8); /* no data */
    REJECTS(m, RN_WIRE_FIELD);
}

/* Every seed is a real handshake + frame captured from a live cluster: all must pass. */
TEST(test_captured_messages_are_accepted)
{
    DIR *d = opendir("fuzz/corpus/raft");
    CHECK(d);
    int seen = 0, types = 0;
    struct dirent *e;
    static uint8_t buf[1 << 20];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof(path), "fuzz/corpus/raft/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        struct rn_wire_result r;
        if (rn_wire_handshake(buf, n, &r) != RN_WIRE_ACCEPT) {
            fprintf(stderr, "  seed %s: handshake not accepted\n", e->d_name);
            CHECK(0);
        }
        struct rn_wire_ctx ctx = {.peer_id = r.id};
        size_t off = r.len;
        if (rn_wire_frame(buf + off, n - off, &ctx, &r) != RN_WIRE_ACCEPT || off + r.len != n) {
            fprintf(stderr, "  seed %s: frame not accepted whole (reason %s)\n", e->d_name,
                    rn_wire_reason_name(r.reason));
            CHECK(0);
        }
        types |= 1 << r.type;
        seen++;
    }
    closedir(d);
    CHECK(seen >= 20);
    CHECK_EQ_U64(types, 0x7e); /* all six message types */
}

int main(void)
{
    RUN(test_libraft_handshake_is_accepted_and_one_byte_less_needs_more);
    RUN(test_handshake_hazards_are_rejected);
    RUN(test_append_entry_of_type_0_is_rejected);
    RUN(test_append_counts_and_lengths_are_checked);
    RUN(test_fixed_size_messages_need_their_exact_length);
    RUN(test_configurations_are_decoded_before_libraft_does);
    RUN(test_install_snapshot_lengths_are_checked);
    RUN(test_captured_messages_are_accepted);
    TEST_MAIN_END();
}
