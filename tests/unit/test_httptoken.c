/* SPDX-License-Identifier: Apache-2.0 */
/* test_httptoken.c — the HTTP API's bearer tokens (src/server/security/httptoken.c): the
 * format, the key file, and each reason a token is refused.
 *
 * The expected MAC was computed outside this code, with Python's hashlib and hmac:
 *   key = blake2b(b"fencelock-http-token-v1\0" + file_bytes, digest_size=32).digest()
 *   hmac.new(key, b"fencelock-http-token-v1\0" + user + b"\0" + expiry + b"\0" + hash,
 *            hashlib.sha512).digest()[:32].hex()
 * Members of one cluster (maybe of different releases) must compute the same bytes. */
#include <stdlib.h>
#include <unistd.h>

#include "server/security/httptoken.h"
#include "test.h"

#define KEYFILE "0123456789abcdef-shared-key\n"
#define HASH "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA"
#define EXP 1800000000000ull
#define MAC "42815d408b60481703f2b7b952b723f4f1623f52df431a814a9e4290ce208d04"
#define TOKEN "flt1.app.1800000000000." MAC
#define NOW (EXP - 1000)
#define DAY 86400000ull

static int write_tmp(char *path, size_t cap, const char *bytes)
{
    snprintf(path, cap, "/tmp/fl-htok-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, bytes, strlen(bytes));
    close(fd);
    return w == (ssize_t)strlen(bytes) ? 0 : -1;
}

static struct acl_user users[2];
static struct acl acl = {users, 2, ""};

static void setup(struct htok *t)
{
    char path[64], err[256];
    memset(users, 0, sizeof users);
    snprintf(users[0].name, sizeof users[0].name, "app");
    snprintf(users[0].hash, sizeof users[0].hash, "%s", HASH);
    snprintf(users[1].name, sizeof users[1].name, "a.b@c");
    snprintf(users[1].hash, sizeof users[1].hash, "%s", HASH);
    CHECK(write_tmp(path, sizeof path, KEYFILE) == 0);
    CHECK(htok_load(t, path, err, sizeof err) == 0 && t->from_file);
    unlink(path);
}

TEST(test_token_matches_the_independently_computed_vector)
{
    struct htok t;
    char out[HTOK_MAX];
    setup(&t);
    size_t n = htok_sign(&t, &users[0], EXP, out);
    CHECK(n == strlen(TOKEN) && strcmp(out, TOKEN) == 0);
}

TEST(test_a_signed_token_verifies_as_its_user)
{
    struct htok t;
    char out[HTOK_MAX];
    const struct acl_user *u;
    setup(&t);
    size_t n = htok_sign(&t, &users[1], EXP, out); /* a name with dots: split from the right */
    CHECK(htok_verify(&t, &acl, out, n, NOW, DAY, &u) == HTOK_OK && u == &users[1]);
}

TEST(test_a_changed_token_is_forged_or_malformed)
{
    struct htok t;
    const struct acl_user *u;
    char tok[] = TOKEN;
    setup(&t);
    tok[sizeof tok - 2] = tok[sizeof tok - 2] == '0' ? '1' : '0';
    CHECK(htok_verify(&t, &acl, tok, strlen(tok), NOW, DAY, &u) == HTOK_FORGED && !u);
    char later[] = "flt1.app.1800000000001." MAC;
    CHECK(htok_verify(&t, &acl, later, strlen(later), NOW, DAY, &u) == HTOK_FORGED);
    const char *bad[] = {"",
                         "flt1.",
                         "flt2.app.1800000000000." MAC,
                         "flt1.app.." MAC,
                         "flt1..1800000000000." MAC,
                         "flt1.app.01800000000000." MAC,
                         "flt1.app.1800000000000." MAC "0",
                         "flt1.a:p.1800000000000." MAC,
                         "flt1.app.1800000000000.42815D408B60481703F2B7B952B723F4F1623F52DF431A814A"
                         "9E4290CE208D04"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(htok_verify(&t, &acl, bad[i], strlen(bad[i]), NOW, DAY, &u) == HTOK_MALFORMED);
}

TEST(test_expiry_passed_or_beyond_the_max_ttl_is_expired)
{
    struct htok t;
    const struct acl_user *u;
    setup(&t);
    CHECK(htok_verify(&t, &acl, TOKEN, strlen(TOKEN), EXP, DAY, &u) == HTOK_EXPIRED);
    CHECK(htok_verify(&t, &acl, TOKEN, strlen(TOKEN), EXP + 1, DAY, &u) == HTOK_EXPIRED);
    /* 2 s left, a max TTL of 0.5 s: beyond it and the minute of skew? no: within the skew */
    CHECK(htok_verify(&t, &acl, TOKEN, strlen(TOKEN), EXP - 2000, 500, &u) == HTOK_OK);
    CHECK(htok_verify(&t, &acl, TOKEN, strlen(TOKEN), EXP - HTOK_SKEW_MS - 501, 500, &u) ==
          HTOK_EXPIRED);
}

TEST(test_a_removed_user_or_a_new_password_or_key_kills_the_token)
{
    struct htok t, other;
    const struct acl_user *u;
    char err[256];
    setup(&t);
    struct acl one = {&users[1], 1, ""}; /* app removed */
    CHECK(htok_verify(&t, &one, TOKEN, strlen(TOKEN), NOW, DAY, &u) == HTOK_NOUSER);
    users[0].hash[10] ^= 1; /* a new password */
    CHECK(htok_verify(&t, &acl, TOKEN, strlen(TOKEN), NOW, DAY, &u) == HTOK_FORGED);
    users[0].hash[10] ^= 1;
    CHECK(htok_load(&other, "", err, sizeof err) == 0 && !other.from_file); /* random key */
    CHECK(htok_verify(&other, &acl, TOKEN, strlen(TOKEN), NOW, DAY, &u) == HTOK_FORGED);
    CHECK(strcmp(htok_status_text(HTOK_NOUSER), htok_status_text(HTOK_FORGED)) == 0);
}

TEST(test_short_or_missing_key_file_is_refused_and_the_old_key_stays)
{
    struct htok t;
    char path[64], err[256];
    setup(&t);
    unsigned char before[HTOK_KEY_LEN];
    memcpy(before, t.key, sizeof before);
    CHECK(write_tmp(path, sizeof path, "short\n") == 0);
    CHECK(htok_load(&t, path, err, sizeof err) == -1 && strstr(err, "at least 16"));
    unlink(path);
    CHECK(htok_load(&t, "/nonexistent/key", err, sizeof err) == -1 && strstr(err, "cannot"));
    CHECK(memcmp(before, t.key, sizeof before) == 0 && t.from_file);
    htok_wipe(&t);
}

int main(void)
{
    RUN(test_token_matches_the_independently_computed_vector);
    RUN(test_a_signed_token_verifies_as_its_user);
    RUN(test_a_changed_token_is_forged_or_malformed);
    RUN(test_expiry_passed_or_beyond_the_max_ttl_is_expired);
    RUN(test_a_removed_user_or_a_new_password_or_key_kills_the_token);
    RUN(test_short_or_missing_key_file_is_refused_and_the_old_key_stays);
    TEST_MAIN_END();
}
