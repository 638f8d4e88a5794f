/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokensig.c — the signed-token encoding, HMAC-SHA256 via OpenSSL, and reading the key files
 * (tokensig.h has the encoding and the ownership).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

#include "server/security/keyfile.h"
#include "server/security/tokensig.h"

#define TSIG_PREFIX "fencelock-token-v1:"

/* One file into k: at most TSIG_KEY_MAX bytes after the one trailing "\n" is dropped. A file
 * one byte longer than that is read to tell "too long" from "exactly the limit". */
static int load_one(struct tsig_key *k, const char *path, char *err, size_t cap)
{
    _Static_assert(TSIG_KEY_MAX <= KEYFILE_MAX, "keyfile_read reads at most this");
    return keyfile_read("--token-key", path, k->b, TSIG_KEY_MIN, TSIG_KEY_MAX, &k->len, err, cap);
}

int tsig_load(struct tsig *t, const char (*paths)[TSIG_PATH_MAX], size_t n, char *err, size_t cap)
{
    struct tsig next = {.n = 0};
    if (n > TSIG_MAX_KEYS) {
        snprintf(err, cap, "--token-key takes at most %d files", TSIG_MAX_KEYS);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (load_one(&next.key[i], paths[i], err, cap)) {
            tsig_wipe(&next);
            return -1;
        }
        next.n = i + 1;
    }
    tsig_wipe(t);
    *t = next;
    tsig_wipe(&next);
    return 0;
}

int tsig_sign(const struct tsig_key *k, const char *name, size_t namelen, uint64_t token,
              char out[TSIG_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    char head[64], tail[32];
    int hl = snprintf(head, sizeof head, TSIG_PREFIX "%zu:", namelen);
    int tl = snprintf(tail, sizeof tail, ":%" PRIu64, token);
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t maclen = 0;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *mac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *h = mac_alg ? EVP_MAC_CTX_new(mac_alg) : NULL;
    int ok = h && EVP_MAC_init(h, k->b, k->len, params) &&
             EVP_MAC_update(h, (const unsigned char *)head, (size_t)hl) &&
             EVP_MAC_update(h, (const unsigned char *)name, namelen) &&
             EVP_MAC_update(h, (const unsigned char *)tail, (size_t)tl) &&
             EVP_MAC_final(h, mac, &maclen, sizeof mac) && maclen == TSIG_HEX / 2;
    EVP_MAC_CTX_free(h);
    EVP_MAC_free(mac_alg);
    if (!ok) {
        out[0] = 0;
        return -1; /* out of memory inside OpenSSL */
    }
    for (size_t i = 0; i < maclen; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[TSIG_HEX] = 0;
    return 0;
}

bool tsig_verify(const struct tsig *t, const char *name, size_t namelen, uint64_t token,
                 const char *sig, size_t siglen)
{
    if (siglen != TSIG_HEX)
        return false;
    for (size_t i = 0; i < siglen; i++)
        if (!((sig[i] >= '0' && sig[i] <= '9') || (sig[i] >= 'a' && sig[i] <= 'f')))
            return false;
    bool ok = false;
    for (size_t i = 0; i < t->n; i++) {
        char want[TSIG_HEX + 1];
        if (tsig_sign(&t->key[i], name, namelen, token, want) == 0)
            ok |= CRYPTO_memcmp(want, sig, TSIG_HEX) == 0;
    }
    return ok;
}

void tsig_wipe(struct tsig *t)
{
    OPENSSL_cleanse(t, sizeof *t);
}
