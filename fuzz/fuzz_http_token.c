/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_http_token — libFuzzer target for the bearer tokens of the HTTP API
 * (src/server/security/httptoken.c): the `Authorization: Bearer` value is parsed and checked
 * before the request is authenticated, so any bytes a client sends reach it.
 *
 * Input layout: byte 0 picks what is done, the rest is the presented token (or, for the forgery
 * check, where to change a genuine one). Checks (any failure traps):
 *   - htok_parse either refuses or returns a non-empty user inside the input;
 *   - htok_verify of arbitrary bytes never accepts them for a user the ACL lacks, and accepts
 *     only a token of a listed user (the fuzzer cannot know the process's random key, so an
 *     acceptance of fuzzer bytes would be a forgery);
 *   - a token htok_sign made verifies as its user, and the same token with any one byte
 *     changed does not (the MAC or the parse refuses it).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/security/httptoken.h"

#define NOW_MS 1800000000000ull
#define MAX_TTL_MS 86400000ull

static void check(bool ok)
{
    if (!ok)
        __builtin_trap();
}

static struct acl_user users[2];
static struct acl acl = {users, 2, ""};
static struct htok key;

static void setup(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    snprintf(users[0].name, sizeof users[0].name, "alice");
    snprintf(users[0].hash, sizeof users[0].hash, "$argon2id$v=19$m=65536,t=2,p=1$fuzzsalt$hash");
    snprintf(users[1].name, sizeof users[1].name, "bob");
    snprintf(users[1].hash, sizeof users[1].hash, "$argon2id$v=19$m=65536,t=2,p=1$other$hash");
    char err[64];
    check(htok_load(&key, NULL, err, sizeof err) == 0); /* a random key of this process */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1)
        return 0;
    const char *tok = (const char *)data + 1;
    size_t n = size - 1;
    const struct acl_user *u = NULL;
    switch (data[0] % 3) {
    case 0: {
        const char *user = NULL;
        size_t ulen = 0;
        uint64_t exp = 0;
        if (htok_parse(tok, n, &user, &ulen, &exp) == 0)
            check(user && ulen > 0 && user >= tok && user + ulen <= tok + n);
        break;
    }
    case 1:
        check(htok_verify(&key, &acl, tok, n, NOW_MS, MAX_TTL_MS, &u) != HTOK_OK);
        break;
    default: {
        char t[HTOK_MAX];
        size_t tl = htok_sign(&key, &users[n % 2], NOW_MS + 1000, t);
        check(tl > 0);
        check(htok_verify(&key, &acl, t, tl, NOW_MS, MAX_TTL_MS, &u) == HTOK_OK &&
              u == &users[n % 2]);
        if (n >= 2) {
            size_t at = (((size_t)data[1] << 8) | data[2]) % tl;
            char to = (char)(n > 2 ? data[3] : 'x');
            if (t[at] != to) {
                t[at] = to;
                check(htok_verify(&key, &acl, t, tl, NOW_MS, MAX_TTL_MS, &u) != HTOK_OK);
            }
        }
        break;
    }
    }
    return 0;
}
