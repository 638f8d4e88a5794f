/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokensig — signed fencing tokens (FENCE.SIGN / FENCE.VERIFY, --token-key): the keys and the
 * one encoding a resource checks against (docs/fencing.md "Signed tokens"; never change it,
 * verifiers outside this repository, e.g. the PostgreSQL guard, implement the same bytes): key = a
 * key file's bytes, one trailing "\n" removed; TSIG_KEY_MIN..TSIG_KEY_MAX bytes msg =
 * "fencelock-token-v1:" <decimal len(name)> ":" <name> ":" <decimal token> sig = lowercase hex of
 * HMAC-SHA256(key, msg): TSIG_HEX characters struct tsig owns copies of up to TSIG_MAX_KEYS keys:
 * key[0] signs, every key verifies (the rotation window). tsig_load fills a new set all or nothing;
 * tsig_wipe zeroes it. The key bytes are never logged nor written anywhere else. No I/O but
 * tsig_load's reads of the key files.
 */
#ifndef FENCELOCK_TOKENSIG_H
#define FENCELOCK_TOKENSIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSIG_MAX_KEYS 2
#define TSIG_KEY_MIN 16
#define TSIG_KEY_MAX 1024
#define TSIG_HEX 64
#define TSIG_PATH_MAX 512

struct tsig_key {
    unsigned char b[TSIG_KEY_MAX];
    size_t len;
};

struct tsig {
    struct tsig_key key[TSIG_MAX_KEYS];
    size_t n; /* 0: no --token-key, FENCE.SIGN refused */
};

/* Read the n key files (n <= TSIG_MAX_KEYS) into *t, replacing what it held only when every
 * file is readable and long enough: 0, or -1 with why in err (names the file, never bytes of
 * a key) and *t unchanged. */
int tsig_load(struct tsig *t, const char (*paths)[TSIG_PATH_MAX], size_t n, char *err, size_t cap);
/* The signature of (name, token) under key k, as TSIG_HEX lowercase hex digits and a NUL:
 * 0, or -1 (OpenSSL out of memory; out is "" then). */
int tsig_sign(const struct tsig_key *k, const char *name, size_t namelen, uint64_t token,
              char out[TSIG_HEX + 1]);
/* Whether sig (siglen bytes, not NUL-terminated) is the signature of (name, token) under any
 * key of t. Compared in constant time; anything but TSIG_HEX lowercase hex digits is false. */
bool tsig_verify(const struct tsig *t, const char *name, size_t namelen, uint64_t token,
                 const char *sig, size_t siglen);
/* Zero every key (teardown, and the temporaries of a load). */
void tsig_wipe(struct tsig *t);

#endif
