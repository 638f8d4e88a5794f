/* SPDX-License-Identifier: Apache-2.0 */
/* snapfile.c — see snapfile.h. SHA-256 is OpenSSL's (libcrypto, linked by server and client). */
#include "common/snapfile.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static int sha256(const uint8_t *p, size_t n, uint8_t out[SNAPFILE_SHA_LEN])
{
    unsigned len = 0;
    return EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) == 1 && len == SNAPFILE_SHA_LEN ? 0 : -1;
}

int snapfile_sha256_hex(const uint8_t *p, size_t n, char out[SNAPFILE_SHA_HEX])
{
    uint8_t d[SNAPFILE_SHA_LEN];
    if (sha256(p, n, d))
        return -1;
    for (size_t i = 0; i < SNAPFILE_SHA_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    return 0;
}

static int unhex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int snapfile_header(uint8_t out[SNAPFILE_HEADER], uint64_t revision, size_t n, const char *sha_hex)
{
    if (strlen(sha_hex) != 2 * SNAPFILE_SHA_LEN)
        return -1;
    memcpy(out, SNAPFILE_MAGIC, 8);
    put_be64(out + 8, revision);
    put_be64(out + 16, n);
    for (size_t i = 0; i < SNAPFILE_SHA_LEN; i++) {
        int hi = unhex(sha_hex[2 * i]), lo = unhex(sha_hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[24 + i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int snapfile_parse(const uint8_t *file, size_t len, const uint8_t **payload, size_t *n,
                   uint64_t *revision, char *err, size_t errlen)
{
    uint8_t d[SNAPFILE_SHA_LEN];
    if (len < SNAPFILE_HEADER || memcmp(file, SNAPFILE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a fencelock snapshot file (no %s header)", SNAPFILE_MAGIC);
        return -1;
    }
    uint64_t want = get_be64(file + 16);
    if (want != len - SNAPFILE_HEADER) {
        snprintf(err, errlen,
                 "truncated or extended: the header says %llu payload bytes, the "
                 "file has %zu",
                 (unsigned long long)want, len - SNAPFILE_HEADER);
        return -1;
    }
    if (sha256(file + SNAPFILE_HEADER, len - SNAPFILE_HEADER, d)) {
        snprintf(err, errlen, "SHA-256 could not be computed");
        return -1;
    }
    if (memcmp(d, file + 24, SNAPFILE_SHA_LEN) != 0) {
        snprintf(err, errlen, "checksum mismatch: the file is damaged");
        return -1;
    }
    *payload = file + SNAPFILE_HEADER;
    *n = len - SNAPFILE_HEADER;
    *revision = get_be64(file + 8);
    return 0;
}
