/* SPDX-License-Identifier: Apache-2.0 */
/* test_snapfile.c — the backup file of `fencelock snapshot save` (src/common/snapfile.c):
 * header layout, the checksum, and every damage --restore must refuse. */
#include "common/snapfile.h"
#include "test.h"

static const uint8_t payload[] = "fencelock state bytes \x00\x01\x02 and more";

/* A whole file of payload in out (sizeof payload + header bytes); 0 if it could not be made. */
static size_t make_file(uint8_t *out, uint64_t revision)
{
    char sha[SNAPFILE_SHA_HEX];
    if (snapfile_sha256_hex(payload, sizeof payload, sha) ||
        snapfile_header(out, revision, sizeof payload, sha))
        return 0;
    memcpy(out + SNAPFILE_HEADER, payload, sizeof payload);
    return SNAPFILE_HEADER + sizeof payload;
}

TEST(test_sha256_is_the_standard_one)
{
    char sha[SNAPFILE_SHA_HEX];
    CHECK(snapfile_sha256_hex((const uint8_t *)"abc", 3, sha) == 0);
    CHECK(strcmp(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
}

TEST(test_a_whole_file_parses_to_its_payload_and_revision)
{
    uint8_t f[SNAPFILE_HEADER + sizeof payload];
    size_t len = make_file(f, 0x0102030405060708ull);
    CHECK(len == sizeof f);
    CHECK(memcmp(f, "FLSNAP01\x01\x02\x03\x04\x05\x06\x07\x08", 16) == 0);
    const uint8_t *p;
    size_t n;
    uint64_t rev;
    char err[200];
    CHECK(snapfile_parse(f, len, &p, &n, &rev, err, sizeof err) == 0);
    CHECK(p == f + SNAPFILE_HEADER && n == sizeof payload && rev == 0x0102030405060708ull);
}

TEST(test_every_damage_is_refused_with_its_reason)
{
    uint8_t f[SNAPFILE_HEADER + sizeof payload + 1];
    size_t len = make_file(f, 7);
    CHECK(len == sizeof f - 1);
    const uint8_t *p;
    size_t n;
    uint64_t rev;
    char err[200];
    /* every single flipped bit of the payload or the checksum */
    for (size_t i = 24; i < len; i++)
        for (int bit = 0; bit < 8; bit++) {
            f[i] ^= (uint8_t)(1u << bit);
            CHECK(snapfile_parse(f, len, &p, &n, &rev, err, sizeof err) == -1);
            CHECK(strstr(err, "checksum mismatch") != NULL);
            f[i] ^= (uint8_t)(1u << bit);
        }
    CHECK(snapfile_parse(f, len - 1, &p, &n, &rev, err, sizeof err) == -1);
    CHECK(strstr(err, "truncated") != NULL);
    f[len] = 0;
    CHECK(snapfile_parse(f, len + 1, &p, &n, &rev, err, sizeof err) == -1);
    CHECK(strstr(err, "truncated or extended") != NULL);
    CHECK(snapfile_parse(f, 10, &p, &n, &rev, err, sizeof err) == -1);
    CHECK(strstr(err, "not a fencelock snapshot") != NULL);
    f[7] = '2'; /* a later format version */
    CHECK(snapfile_parse(f, len, &p, &n, &rev, err, sizeof err) == -1);
    CHECK(strstr(err, "not a fencelock snapshot") != NULL);
    f[7] = '1';
    CHECK(snapfile_parse(f, len, &p, &n, &rev, err, sizeof err) == 0);
}

TEST(test_header_refuses_a_bad_checksum_text)
{
    uint8_t h[SNAPFILE_HEADER];
    CHECK(snapfile_header(h, 1, 0, "abc") == -1);
    char bad[SNAPFILE_SHA_HEX];
    memset(bad, 'g', 64);
    bad[64] = 0;
    CHECK(snapfile_header(h, 1, 0, bad) == -1);
    memset(bad, 'A', 64); /* upper case is not what the leader sends */
    CHECK(snapfile_header(h, 1, 0, bad) == -1);
}

int main(void)
{
    RUN(test_sha256_is_the_standard_one);
    RUN(test_a_whole_file_parses_to_its_payload_and_revision);
    RUN(test_every_damage_is_refused_with_its_reason);
    RUN(test_header_refuses_a_bad_checksum_text);
    TEST_MAIN_END();
}
