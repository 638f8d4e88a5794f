/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httptoken — bearer tokens for the HTTP API (AUTH.TOKEN mints one, `Authorization: Bearer`
 * presents it; docs/security.md "Bearer tokens"). A token names an ACL user and a wall-clock
 * expiry and is signed with the node's token key:
 *   token = "flt1." <user> "." <expiry ms since the epoch, decimal> "." <hex of the MAC>
 *   MAC   = HMAC-SHA-512-256(key, "fencelock-http-token-v1" NUL user NUL expiry NUL hash)
 * where hash is the user's stored password hash (the ACL file's HASH field), so that changing
 * a user's password, like removing the user, invalidates every token of theirs; the key is
 * BLAKE2b-256 of a label and the --http-token-key file's bytes (the same file on every member:
 * a token is then accepted by every node), or 32 random bytes of this process without the file
 * (its tokens are accepted by this node only, until it restarts).
 *
 * Owns (struct htok, in struct srv as `htok`): the key, never logged nor written anywhere;
 * htok_wipe zeroes it. htok_load fills a new key all or nothing. htok_sign and htok_parse are
 * pure (no clock, no I/O) for the unit test; the expiry rule takes `now` as an argument.
 */
#ifndef FENCELOCK_HTTPTOKEN_H
#define FENCELOCK_HTTPTOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/security/acl.h"

#define HTOK_KEY_LEN 32    /* crypto_auth_hmacsha512256_KEYBYTES */
#define HTOK_MAC_HEX 64    /* hex digits of the 32-byte MAC */
#define HTOK_FILE_MIN 16   /* bytes of a key file, one trailing newline dropped */
#define HTOK_FILE_MAX 1024 /* the same bound as --token-key's */
#define HTOK_SKEW_MS 60000 /* clock skew between members allowed over the max TTL */
/* "flt1." user "." 20 digits "." mac, and a NUL */
#define HTOK_MAX (5 + ACL_NAME_MAX + 1 + 20 + 1 + HTOK_MAC_HEX + 1)

struct htok {
    unsigned char key[HTOK_KEY_LEN];
    bool from_file; /* false: a random key of this process */
};

/* Why a presented token is refused (0: accepted). */
enum htok_status {
    HTOK_OK = 0,
    HTOK_MALFORMED, /* not flt1.<user>.<expiry>.<64 hex> */
    HTOK_EXPIRED,   /* expiry passed, or further away than the max TTL allows */
    HTOK_NOUSER,    /* no such user in the current ACL (removed: its tokens died with it) */
    HTOK_FORGED,    /* the MAC does not match (another key, changed bytes, a new password) */
};

/* The key from path ("" or NULL: a random one). 0, or -1 with why in err (names the file,
 * never a byte of it) and *t unchanged. */
int htok_load(struct htok *t, const char *path, char *err, size_t cap);
/* The token of user u valid until expires_ms into out (HTOK_MAX bytes): its length, or 0 when
 * out of memory. */
size_t htok_sign(const struct htok *t, const struct acl_user *u, uint64_t expires_ms,
                 char out[HTOK_MAX]);
/* Split a presented token: its user name (borrowed from tok) and expiry. 0, or HTOK_MALFORMED. */
int htok_parse(const char *tok, size_t n, const char **user, size_t *ulen, uint64_t *expires_ms);
/* Check a presented token against the current users at wall time now_ms with max_ttl_ms:
 * HTOK_OK with *out the user, else why. The MAC is compared in constant time. */
int htok_verify(const struct htok *t, const struct acl *acl, const char *tok, size_t n,
                uint64_t now_ms, uint64_t max_ttl_ms, const struct acl_user **out);
/* A word for a status, for the 401's text. */
const char *htok_status_text(int st);
void htok_wipe(struct htok *t);

#endif
