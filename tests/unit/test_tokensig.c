/* SPDX-License-Identifier: Apache-2.0 */
/* test_tokensig.c — the signed-token encoding and the key files (src/server/security/tokensig.c).
 *
 * The expected signatures were computed outside this code, with Python's hmac module:
 *   hmac.new(key, b"fencelock-token-v1:%d:%s:%d" % (len(name), name, token),
 *            hashlib.sha256).hexdigest()
 * They pin the encoding other verifiers (the PostgreSQL guard, docs/fencing.md "Signed tokens")
 * rely on: never change them to make a test pass. */
#include <stdlib.h>
#include <unistd.h>

#include "server/security/tokensig.h"
#include "test.h"

#define KEY_A "0123456789abcdef"
#define KEY_B "another-key-of-32-bytes-long!!!!"
#define SIG_A_INV_42 "81b6f5588371818e1fde5cab989a209aa8e6ebeb90d4d11a46d593de2094de57"
#define SIG_A_UTF8_MAX "e031d0d9f149a7101f6edc4e55df741d9513dad14f84a74163052c004201dadf"
#define SIG_B_INV_42 "aefa74b572328c0e953b508ac718de912e021b97589c5837f543aba8cabdeb0a"
/* "café/x:1" in UTF-8: 9 bytes, a ':' inside the name, and the largest token */
#define NAME_UTF8 "caf\xc3\xa9/x:1"

static struct tsig_key key_of(const char *s)
{
    struct tsig_key k = {.len = strlen(s)};
    memcpy(k.b, s, k.len);
    return k;
}

/* A temporary file holding n bytes; its path in path (at least TSIG_PATH_MAX). */
static int write_tmp(char *path, const char *bytes, size_t n)
{
    snprintf(path, TSIG_PATH_MAX, "/tmp/fl-tsig-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, bytes, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

TEST(test_signature_matches_the_independently_computed_vectors)
{
    char out[TSIG_HEX + 1];
    struct tsig_key a = key_of(KEY_A), b = key_of(KEY_B);
    CHECK(tsig_sign(&a, "inventory", 9, 42, out) == 0);
    CHECK(strcmp(out, SIG_A_INV_42) == 0);
    CHECK(tsig_sign(&a, NAME_UTF8, strlen(NAME_UTF8), UINT64_MAX, out) == 0);
    CHECK(strcmp(out, SIG_A_UTF8_MAX) == 0);
    CHECK(tsig_sign(&b, "inventory", 9, 42, out) == 0);
    CHECK(strcmp(out, SIG_B_INV_42) == 0);
}

TEST(test_verify_accepts_each_key_and_nothing_else)
{
    struct tsig t = {.n = 2};
    t.key[0] = key_of(KEY_B);
    t.key[1] = key_of(KEY_A);
    CHECK(tsig_verify(&t, "inventory", 9, 42, SIG_A_INV_42, TSIG_HEX));
    CHECK(tsig_verify(&t, "inventory", 9, 42, SIG_B_INV_42, TSIG_HEX));
    CHECK(!tsig_verify(&t, "inventory", 9, 43, SIG_A_INV_42, TSIG_HEX));
    CHECK(!tsig_verify(&t, "inventor", 8, 42, SIG_A_INV_42, TSIG_HEX));
    CHECK(!tsig_verify(&t, "inventory", 9, 42, SIG_A_INV_42, TSIG_HEX - 1));
    char upper[TSIG_HEX + 1];
    for (size_t i = 0; i <= TSIG_HEX; i++)
        upper[i] = (char)(SIG_A_INV_42[i] >= 'a' ? SIG_A_INV_42[i] - 32 : SIG_A_INV_42[i]);
    CHECK(!tsig_verify(&t, "inventory", 9, 42, upper, TSIG_HEX));
    t.n = 1; /* only KEY_B left: KEY_A's signature no longer verifies */
    CHECK(!tsig_verify(&t, "inventory", 9, 42, SIG_A_INV_42, TSIG_HEX));
    struct tsig none = {.n = 0};
    CHECK(!tsig_verify(&none, "inventory", 9, 42, SIG_A_INV_42, TSIG_HEX));
}

TEST(test_key_file_loses_exactly_one_trailing_newline)
{
    char paths[2][TSIG_PATH_MAX], err[600], out[TSIG_HEX + 1];
    CHECK(write_tmp(paths[0], KEY_A "\n", 17) == 0);
    CHECK(write_tmp(paths[1], KEY_A "\n\n", 18) == 0);
    struct tsig t = {.n = 0};
    int rc = tsig_load(&t, (const char(*)[TSIG_PATH_MAX])paths, 2, err, sizeof err);
    unlink(paths[0]);
    unlink(paths[1]);
    CHECK(rc == 0 && t.n == 2);
    CHECK_EQ_U64(t.key[0].len, 16);
    CHECK_EQ_U64(t.key[1].len, 17); /* the second newline is part of that key */
    CHECK(tsig_sign(&t.key[0], "inventory", 9, 42, out) == 0);
    CHECK(strcmp(out, SIG_A_INV_42) == 0);
    CHECK(tsig_sign(&t.key[1], "inventory", 9, 42, out) == 0);
    CHECK(strcmp(out, SIG_A_INV_42) != 0);
    tsig_wipe(&t);
    CHECK(t.n == 0);
}

TEST(test_short_long_or_missing_key_file_is_refused_and_the_old_keys_stay)
{
    char paths[2][TSIG_PATH_MAX], err[600];
    static char big[TSIG_KEY_MAX + 1];
    memset(big, 'k', sizeof big);
    struct tsig t = {.n = 1};
    t.key[0] = key_of(KEY_A);
    CHECK(write_tmp(paths[0], KEY_B, strlen(KEY_B)) == 0);
    CHECK(write_tmp(paths[1], "fifteen-bytes!\n", 15) == 0); /* 14 bytes once \n is dropped */
    int rc = tsig_load(&t, (const char(*)[TSIG_PATH_MAX])paths, 2, err, sizeof err);
    CHECK(rc == -1 && strstr(err, paths[1]) && strstr(err, "at least 16"));
    CHECK(t.n == 1 && t.key[0].len == 16 && memcmp(t.key[0].b, KEY_A, 16) == 0);
    unlink(paths[1]);
    rc = tsig_load(&t, (const char(*)[TSIG_PATH_MAX])paths, 2, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "cannot be read") && t.n == 1);
    CHECK(write_tmp(paths[1], big, sizeof big) == 0);
    rc = tsig_load(&t, (const char(*)[TSIG_PATH_MAX])paths, 2, err, sizeof err);
    unlink(paths[1]);
    CHECK(rc == -1 && strstr(err, "longer than") && t.n == 1);
    CHECK(write_tmp(paths[1], big, TSIG_KEY_MAX) == 0); /* exactly the limit is fine */
    rc = tsig_load(&t, (const char(*)[TSIG_PATH_MAX])paths, 2, err, sizeof err);
    unlink(paths[0]);
    unlink(paths[1]);
    CHECK(rc == 0 && t.n == 2 && t.key[1].len == TSIG_KEY_MAX);
    CHECK(t.key[0].len == strlen(KEY_B) && memcmp(t.key[0].b, KEY_B, t.key[0].len) == 0);
    tsig_wipe(&t);
}

int main(void)
{
    RUN(test_signature_matches_the_independently_computed_vectors);
    RUN(test_verify_accepts_each_key_and_nothing_else);
    RUN(test_key_file_loses_exactly_one_trailing_newline);
    RUN(test_short_long_or_missing_key_file_is_refused_and_the_old_keys_stay);
    TEST_MAIN_END();
}
