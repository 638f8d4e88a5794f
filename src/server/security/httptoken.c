/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httptoken.c — the bearer tokens of the HTTP API: the key, signing and checking, with
 * libsodium (httptoken.h has the format and the ownership).
 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "server/security/httptoken.h"
#include "server/security/keyfile.h"

#define HTOK_PREFIX "flt1."
#define HTOK_LABEL "fencelock-http-token-v1"

/* The key of a file's bytes: BLAKE2b-256 of the label and the bytes (the label keeps this key
 * apart from any other use someone may make of the same file). */
static void derive(unsigned char key[HTOK_KEY_LEN], const unsigned char *b, size_t n)
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, HTOK_KEY_LEN);
    crypto_generichash_update(&st, (const unsigned char *)HTOK_LABEL, sizeof HTOK_LABEL);
    crypto_generichash_update(&st, b, n);
    crypto_generichash_final(&st, key, HTOK_KEY_LEN);
    sodium_memzero(&st, sizeof st);
}

int htok_load(struct htok *t, const char *path, char *err, size_t cap)
{
    if (!path || !path[0]) {
        randombytes_buf(t->key, sizeof t->key);
        t->from_file = false;
        return 0;
    }
    _Static_assert(HTOK_FILE_MAX <= KEYFILE_MAX, "keyfile_read reads at most this");
    unsigned char tmp[HTOK_FILE_MAX];
    size_t n;
    if (keyfile_read("--http-token-key", path, tmp, HTOK_FILE_MIN, HTOK_FILE_MAX, &n, err, cap))
        return -1;
    derive(t->key, tmp, n);
    t->from_file = true;
    sodium_memzero(tmp, sizeof tmp);
    return 0;
}

/* The MAC of (user, expiry, the user's stored hash). */
static void mac_of(const struct htok *t, const char *user, size_t ulen, uint64_t exp,
                   const char *hash, unsigned char mac[crypto_auth_hmacsha512256_BYTES])
{
    char num[24];
    int nl = snprintf(num, sizeof num, "%" PRIu64, exp);
    static const unsigned char zero = 0;
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, t->key, sizeof t->key);
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)HTOK_LABEL, sizeof HTOK_LABEL);
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)user, ulen);
    crypto_auth_hmacsha512256_update(&st, &zero, 1);
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)num, (size_t)nl);
    crypto_auth_hmacsha512256_update(&st, &zero, 1);
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)hash, strlen(hash));
    crypto_auth_hmacsha512256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
}

size_t htok_sign(const struct htok *t, const struct acl_user *u, uint64_t expires_ms,
                 char out[HTOK_MAX])
{
    unsigned char mac[crypto_auth_hmacsha512256_BYTES];
    size_t ul = strlen(u->name);
    mac_of(t, u->name, ul, expires_ms, u->hash, mac);
    int n = snprintf(out, HTOK_MAX, HTOK_PREFIX "%s.%" PRIu64 ".", u->name, expires_ms);
    if (n < 0 || (size_t)n + HTOK_MAC_HEX + 1 > HTOK_MAX)
        return 0;
    sodium_bin2hex(out + n, HTOK_MAC_HEX + 1, mac, sizeof mac);
    return (size_t)n + HTOK_MAC_HEX;
}

static bool name_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == '@';
}

/* The user name may hold '.', so the token is split from the right: the MAC, then the expiry. */
int htok_parse(const char *tok, size_t n, const char **user, size_t *ulen, uint64_t *expires_ms)
{
    size_t pl = sizeof HTOK_PREFIX - 1;
    if (n < pl + 1 + 1 + 1 + 1 + HTOK_MAC_HEX || n >= HTOK_MAX || memcmp(tok, HTOK_PREFIX, pl))
        return HTOK_MALFORMED;
    size_t mac_at = n - HTOK_MAC_HEX;
    if (tok[mac_at - 1] != '.')
        return HTOK_MALFORMED;
    for (size_t i = mac_at; i < n; i++)
        if (!((tok[i] >= '0' && tok[i] <= '9') || (tok[i] >= 'a' && tok[i] <= 'f')))
            return HTOK_MALFORMED;
    size_t e = mac_at - 1; /* the '.' before the MAC; the expiry's digits end there */
    size_t b = e;
    while (b > pl && tok[b - 1] >= '0' && tok[b - 1] <= '9')
        b--;
    if (b == e || e - b > 19 || b <= pl + 1 || tok[b - 1] != '.' || (tok[b] == '0' && e - b > 1))
        return HTOK_MALFORMED;
    uint64_t v = 0;
    for (size_t i = b; i < e; i++)
        v = v * 10 + (uint64_t)(tok[i] - '0'); /* 19 digits cannot overflow */
    size_t ul = b - 1 - pl;
    if (ul > ACL_NAME_MAX)
        return HTOK_MALFORMED;
    for (size_t i = pl; i < b - 1; i++)
        if (!name_byte(tok[i]))
            return HTOK_MALFORMED;
    *user = tok + pl;
    *ulen = ul;
    *expires_ms = v;
    return HTOK_OK;
}

int htok_verify(const struct htok *t, const struct acl *acl, const char *tok, size_t n,
                uint64_t now_ms, uint64_t max_ttl_ms, const struct acl_user **out)
{
    const char *user;
    size_t ul;
    uint64_t exp;
    *out = NULL;
    if (htok_parse(tok, n, &user, &ul, &exp))
        return HTOK_MALFORMED;
    if (exp <= now_ms || exp - now_ms > max_ttl_ms + HTOK_SKEW_MS)
        return HTOK_EXPIRED;
    const struct acl_user *u = acl_user_find(acl, user, ul);
    if (!u)
        return HTOK_NOUSER;
    unsigned char want[crypto_auth_hmacsha512256_BYTES], got[crypto_auth_hmacsha512256_BYTES];
    mac_of(t, user, ul, exp, u->hash, want);
    size_t gl = 0;
    if (sodium_hex2bin(got, sizeof got, tok + n - HTOK_MAC_HEX, HTOK_MAC_HEX, NULL, &gl, NULL) ||
        gl != sizeof got || sodium_memcmp(want, got, sizeof got) != 0)
        return HTOK_FORGED;
    *out = u;
    return HTOK_OK;
}

const char *htok_status_text(int st)
{
    switch (st) {
    case HTOK_OK:
        return "accepted";
    case HTOK_MALFORMED:
        return "not a fencelock bearer token";
    case HTOK_EXPIRED:
        return "the token has expired";
    case HTOK_NOUSER: /* the same words: no oracle of which users exist */
    case HTOK_FORGED:
        return "the token is not valid for any current user";
    }
    return "refused";
}

void htok_wipe(struct htok *t)
{
    sodium_memzero(t, sizeof *t);
}
