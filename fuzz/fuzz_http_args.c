/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_http_args — libFuzzer target for the HTTP API's parsing (src/server/obs/http_args.c):
 * routes, percent-decoding, numbers, query parameters and HTTP Basic credentials, all reached
 * from bytes a client sends before or without authenticating.
 *
 * Input layout: the first byte picks the parser (mod 8), the rest is its input (NUL-terminated
 * copy for the ones that take a C string). Checks (any failure traps):
 *   - no parser writes past the caller's buffers (ASan), every length it reports fits them;
 *   - hapi_pct_decode of a string without '%' is the identity; its output re-encoded as %XX
 *     decodes back to the same bytes (a round trip through the decoder);
 *   - hapi_parse_u64 accepts exactly the non-empty runs of at most 20 digits whose value fits,
 *     agreeing with a reference computed in 128 bits;
 *   - a route with a name or an id returns them within bounds (a name of at least one byte, an
 *     id not 0);
 *   - hapi_parse_query_keys (every route's query parser; the second byte is the `keys` mask,
 *     e.g. HAPI_Q_REVOKE for POST .../revoke): what it accepts has every non-empty parameter's
 *     name among `keys`, each at most once; it touches no buffer of a parameter `keys` does not
 *     name (left NULL here: a touch faults); a number it returns is from 1; texts fit cap; a
 *     refusal says why;
 *   - hapi_parse_query_mode with HAPI_QM_IGNORE_UNKNOWN (the next two bytes the mask): the same,
 *     except that what it accepts may hold any other pair: every `name=value` pair `keys` takes
 *     is there at most once, and `seen` is exactly those;
 *   - hapi_fence_args (GET /v1/fence: the query, then after a NUL the lock header, then after
 *     another the token header; a header starting with '*' is "given twice"): what it accepts
 *     has a name of 1..cap bytes (from the query: its bytes when nothing is escaped); a refusal
 *     says why.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/obs/http_args.h"

#define CAP 256

static void check(bool ok)
{
    if (!ok)
        __builtin_trap();
}

static void fuzz_u64(const char *p, size_t n)
{
    uint64_t v = 0;
    int rc = hapi_parse_u64(p, n, &v);
    bool digits = n > 0 && n <= 20;
    unsigned __int128 ref = 0;
    for (size_t i = 0; digits && i < n; i++) {
        digits = p[i] >= '0' && p[i] <= '9';
        ref = ref * 10 + (unsigned)(p[i] - '0');
    }
    bool fits = digits && ref <= UINT64_MAX;
    check((rc == 0) == fits);
    check(rc != 0 || v == (uint64_t)ref);
}

static void fuzz_pct(const char *p, size_t n)
{
    char out[CAP], enc[3 * CAP], back[CAP];
    long len = hapi_pct_decode(p, n, out, sizeof out);
    check(len >= -1 && len <= (long)sizeof out);
    if (len >= 0 && !memchr(p, '%', n))
        check((size_t)len == n && memcmp(out, p, n) == 0);
    if (len < 0)
        return;
    static const char hex[] = "0123456789ABCDEF";
    for (long i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        enc[3 * i] = '%';
        enc[3 * i + 1] = hex[c >> 4];
        enc[3 * i + 2] = hex[c & 15];
    }
    long len2 = hapi_pct_decode(enc, (size_t)(3 * len), back, sizeof back);
    check(len2 == len && memcmp(back, out, (size_t)len) == 0);
}

/* The names of q's non-empty parameters are all among `keys`, none twice (a reference split,
 * independent of the parser's). */
static bool names_ok(const char *q, unsigned keys)
{
    static const struct {
        const char *n;
        unsigned bit;
    } names[] = {{"prefix", HAPI_Q_PREFIX},     {"after", HAPI_Q_AFTER},   {"limit", HAPI_Q_LIMIT},
                 {"count", HAPI_Q_COUNT},       {"before", HAPI_Q_BEFORE}, {"stale", HAPI_Q_STALE},
                 {"deadline", HAPI_Q_DEADLINE}, {"reason", HAPI_Q_REASON}};
    unsigned seen = 0;
    for (const char *p = q; *p;) {
        size_t l = strcspn(p, "&"), kl = strcspn(p, "=&");
        if (l) {
            unsigned bit = 0;
            for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strlen(names[i].n) == kl && !memcmp(p, names[i].n, kl))
                    bit = names[i].bit;
            if (!bit || !(keys & bit) || (seen & bit))
                return false;
            seen |= bit;
        }
        p += l + (p[l] == '&');
    }
    return true;
}

/* The names of q's `name=value` pairs that keys takes, none twice, into *seen (the reference
 * split of HAPI_QM_IGNORE_UNKNOWN); false if one is there twice. */
static bool own_names(const char *q, unsigned keys, unsigned *seen)
{
    static const struct {
        const char *n;
        unsigned bit;
    } names[] = {{"prefix", HAPI_Q_PREFIX},     {"after", HAPI_Q_AFTER},   {"limit", HAPI_Q_LIMIT},
                 {"count", HAPI_Q_COUNT},       {"before", HAPI_Q_BEFORE}, {"stale", HAPI_Q_STALE},
                 {"deadline", HAPI_Q_DEADLINE}, {"reason", HAPI_Q_REASON}, {"lock", HAPI_Q_LOCK},
                 {"token", HAPI_Q_TOKEN}};
    *seen = 0;
    for (const char *p = q; *p;) {
        size_t l = strcspn(p, "&"), kl = strcspn(p, "=&");
        for (size_t i = 0; kl < l && i < sizeof(names) / sizeof(names[0]); i++)
            if ((keys & names[i].bit) && strlen(names[i].n) == kl && !memcmp(p, names[i].n, kl)) {
                if (*seen & names[i].bit)
                    return false;
                *seen |= names[i].bit;
            }
        p += l + (p[l] == '&');
    }
    return true;
}

static void fuzz_query_ignore(unsigned keys, const char *s)
{
    char prefix[CAP], after[CAP], reason[CAP], lock[CAP], token[CAP], err[160];
    struct hapi_query q = {.prefix = keys & HAPI_Q_PREFIX ? prefix : NULL,
                           .after = keys & HAPI_Q_AFTER ? after : NULL,
                           .reason = keys & HAPI_Q_REASON ? reason : NULL,
                           .lock = keys & HAPI_Q_LOCK ? lock : NULL,
                           .token = keys & HAPI_Q_TOKEN ? token : NULL};
    unsigned seen = 0;
    err[0] = '\0';
    if (hapi_parse_query_mode(s, keys, HAPI_QM_IGNORE_UNKNOWN, &q, CAP, err, sizeof err)) {
        check(err[0] != '\0');
        return;
    }
    check(own_names(s, keys, &seen) && q.seen == seen);
    check(q.prefix_len <= CAP && q.after_len <= CAP && q.reason_len <= CAP && q.lock_len <= CAP &&
          q.token_len <= CAP);
    check((seen & HAPI_Q_LOCK) || q.lock_len == 0);
    check((seen & HAPI_Q_TOKEN) || q.token_len == 0);
    check((seen & HAPI_Q_REASON) || q.reason_len == 0);
    check((seen & HAPI_Q_LIMIT) ? q.limit >= 1 : q.limit == 0);
    check((seen & HAPI_Q_DEADLINE) ? q.deadline >= 1 : q.deadline == 0);
    check(q.stale == ((seen & HAPI_Q_STALE) != 0));
}

/* GET /v1/fence's arguments: the query, the lock header and the token header split at NULs. */
static void fuzz_fence(const char *p, size_t n)
{
    char buf[3][4096], name[64], err[256];
    size_t len[3] = {0, 0, 0}, part = 0;
    for (size_t i = 0; i < n; i++) {
        if (!p[i] && part < 2)
            part++;
        else
            buf[part][len[part]++] = p[i];
    }
    buf[0][len[0]] = '\0';
    struct hapi_fence f = {.query = buf[0], .name = name, .cap = sizeof(name)};
    if (part >= 1) { /* a lock header: '*' first says "given twice" */
        f.hlock = buf[1];
        f.hlock_len = len[1] && buf[1][0] == '*' ? SIZE_MAX : len[1];
    }
    if (part >= 2) {
        f.htoken = buf[2];
        f.htoken_len = len[2] && buf[2][0] == '*' ? SIZE_MAX : len[2];
    }
    err[0] = '\0';
    if (hapi_fence_args(&f, err, sizeof err)) {
        check(err[0] != '\0');
        return;
    }
    check(f.name_len >= 1 && f.name_len <= sizeof(name));
    /* without a lock header and without escapes, the name is the lock= pair's value */
    if (!f.hlock && !memchr(buf[0], '%', len[0]))
        check(memmem(buf[0], len[0], name, f.name_len) != NULL);
}

static void fuzz_query_keys(unsigned keys, const char *s)
{
    char prefix[CAP], after[CAP], reason[CAP], err[160];
    struct hapi_query q = {.prefix = keys & HAPI_Q_PREFIX ? prefix : NULL,
                           .after = keys & HAPI_Q_AFTER ? after : NULL,
                           .reason = keys & HAPI_Q_REASON ? reason : NULL};
    err[0] = '\0';
    if (hapi_parse_query_keys(s, keys, &q, CAP, err, sizeof err)) {
        check(err[0] != '\0');
        return;
    }
    check(names_ok(s, keys));
    check(q.prefix_len <= CAP && q.after_len <= CAP && q.reason_len <= CAP);
    check((keys & HAPI_Q_PREFIX) || q.prefix_len == 0);
    check((keys & HAPI_Q_AFTER) || (q.after_len == 0 && !q.has_after));
    check((keys & HAPI_Q_REASON) || q.reason_len == 0);
    check((keys & HAPI_Q_LIMIT) || q.limit == 0);
    check((keys & HAPI_Q_COUNT) || q.count == 0);
    check((keys & HAPI_Q_BEFORE) || q.before == 0);
    check((keys & HAPI_Q_DEADLINE) || q.deadline == 0);
    check((keys & HAPI_Q_STALE) || !q.stale);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    uint8_t which = data[0];
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    char *s = malloc(n + 1); /* the C-string parsers' input */
    if (!s)
        return 0;
    memcpy(s, p, n);
    s[n] = '\0';
    switch (which % 8) {
    case 0: {
        char name[CAP];
        size_t nlen = 0;
        uint64_t id = 0;
        enum hapi_route r = hapi_route_of(s, name, sizeof name, &nlen, &id);
        if (r == HAPI_LOCK)
            check(nlen >= 1 && nlen <= sizeof name);
        if (r == HAPI_SESSION)
            check(id != 0);
        break;
    }
    case 1:
        fuzz_pct(p, n);
        break;
    case 2:
        fuzz_u64(p, n);
        break;
    case 3: {
        char prefix[CAP], after[CAP], err[128];
        struct hapi_query q = {.prefix = prefix, .after = after};
        if (hapi_parse_query(s, &q, sizeof prefix, err, sizeof err) == 0)
            check(q.prefix_len <= sizeof prefix && q.after_len <= sizeof after);
        else
            check(err[0] != '\0');
        (void)hapi_query_has_stale(s);
        break;
    }
    case 5: /* the next byte is the keys mask, the rest the query */
        if (n >= 1)
            fuzz_query_keys((unsigned char)s[0], s + 1);
        break;
    case 6: /* the next two bytes are the keys mask, the rest the query */
        if (n >= 2)
            fuzz_query_ignore(((unsigned)(unsigned char)s[0] << 8 | (unsigned char)s[1]) & 0x3ffu,
                              s + 2);
        break;
    case 7:
        fuzz_fence(p, n);
        break;
    default: {
        char user[64], pw[64];
        size_t ul = 0, pl = 0;
        if (hapi_basic_decode(p, n, user, sizeof user, &ul, pw, sizeof pw, &pl) == 0)
            check(ul <= sizeof user && pl <= sizeof pw);
        break;
    }
    }
    free(s);
    return 0;
}
