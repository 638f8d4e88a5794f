/* SPDX-License-Identifier: Apache-2.0 */
/* http_args.c — see http_args.h. */
#include "server/obs/http_args.h"

#include <stdio.h>
#include <sodium.h>
#include <string.h>

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

long hapi_pct_decode(const char *q, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = q[i];
        if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexval(q[i + 1]);
            int lo = hexval(q[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (o == cap)
            return -1;
        out[o++] = ch;
    }
    return (long)o;
}

int hapi_parse_u64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

enum hapi_route hapi_route_of(const char *path, char *name, size_t cap, size_t *nlen, uint64_t *id)
{
    static const struct {
        const char *p;
        enum hapi_route r;
    } fixed[] = {{"/v1/locks", HAPI_LOCKS},
                 {"/v1/sessions", HAPI_SESSIONS},
                 {"/v1/members", HAPI_MEMBERS},
                 {"/v1/elections", HAPI_ELECTIONS},
                 {"/v1/semaphores", HAPI_SEMAPHORES},
                 {"/v1/events", HAPI_EVENTS},
                 {"/v1/waits", HAPI_WAITS}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (!strcmp(path, fixed[i].p))
            return fixed[i].r;
    if (!strncmp(path, "/v1/locks/", 10)) {
        static const char suffix[] = "/history"; /* raw: an encoded %2F is part of the name */
        size_t len = strlen(path + 10), sl = sizeof(suffix) - 1;
        bool history = len > sl && !strcmp(path + 10 + len - sl, suffix);
        long n = hapi_pct_decode(path + 10, history ? len - sl : len, name, cap);
        if (n <= 0)
            return HAPI_BAD;
        *nlen = (size_t)n;
        return history ? HAPI_HISTORY : HAPI_LOCK;
    }
    if (!strncmp(path, "/v1/sessions/", 13)) {
        if (hapi_parse_u64(path + 13, strlen(path + 13), id) || *id == 0)
            return HAPI_BAD;
        return HAPI_SESSION;
    }
    return HAPI_NONE;
}

int hapi_parse_query(const char *q, struct hapi_query *out, size_t cap, char *err, size_t errlen)
{
    bool seen_prefix = false, seen_limit = false, seen_count = false, seen_before = false;
    out->prefix_len = out->after_len = 0;
    out->has_after = out->stale = false;
    out->limit = out->count = out->before = 0;
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', l);
        size_t kl = eq ? (size_t)(eq - q) : l;
        const char *v = eq ? eq + 1 : q + l;
        size_t vl = eq ? l - kl - 1 : 0;
        bool dup = false;
        long n;
        if (l == 0) {
            /* an empty parameter (a&&b, a trailing &): nothing */
        } else if (kl == 5 && !memcmp(q, "stale", 5)) {
            dup = out->stale;
            out->stale = true;
        } else if (kl == 6 && !memcmp(q, "prefix", 6)) {
            dup = seen_prefix;
            seen_prefix = true;
            if ((n = hapi_pct_decode(v, vl, out->prefix, cap)) < 0) {
                snprintf(err, errlen, "prefix: bad percent-encoding, or longer than %zu bytes",
                         cap);
                return -1;
            }
            out->prefix_len = (size_t)n;
        } else if (kl == 5 && !memcmp(q, "after", 5)) {
            dup = out->has_after;
            out->has_after = true;
            if ((n = hapi_pct_decode(v, vl, out->after, cap)) < 0) {
                snprintf(err, errlen, "after: bad percent-encoding, or longer than %zu bytes", cap);
                return -1;
            }
            out->after_len = (size_t)n;
        } else if (kl == 5 && !memcmp(q, "limit", 5)) {
            dup = seen_limit;
            seen_limit = true;
            if (hapi_parse_u64(v, vl, &out->limit) || out->limit == 0) {
                snprintf(err, errlen, "limit: not a decimal number from 1");
                return -1;
            }
        } else if ((kl == 5 && !memcmp(q, "count", 5)) || (kl == 6 && !memcmp(q, "before", 6))) {
            bool is_count = kl == 5;
            dup = is_count ? seen_count : seen_before;
            *(is_count ? &seen_count : &seen_before) = true;
            uint64_t *x = is_count ? &out->count : &out->before;
            if (hapi_parse_u64(v, vl, x) || *x == 0) {
                snprintf(err, errlen, "%s: not a decimal number from 1",
                         is_count ? "count" : "before");
                return -1;
            }
        } else {
            snprintf(err, errlen,
                     "unknown query parameter '%.*s' (prefix, after, limit, count, before, stale)",
                     (int)(kl > 32 ? 32 : kl), q);
            for (char *e = err; *e; e++) /* shown back: printable ASCII only */
                if ((unsigned char)*e < ' ' || (unsigned char)*e >= 0x7f)
                    *e = '?';
            return -1;
        }
        if (dup) {
            snprintf(err, errlen, "a query parameter is given twice");
            return -1;
        }
        q += l + (amp ? 1 : 0);
    }
    return 0;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int hapi_basic_decode(const char *v, size_t n, char *user, size_t ucap, size_t *ulen, char *pw,
                      size_t pcap, size_t *plen)
{
    static const char scheme[] = "basic ";
    if (n < 6)
        return -1;
    for (size_t i = 0; i < 6; i++) {
        char c = v[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != scheme[i])
            return -1;
    }
    v += 6;
    n -= 6;
    while (n && *v == ' ') {
        v++;
        n--;
    }
    if (n == 0 || n % 4)
        return -1;
    char dec[1024];
    size_t d = 0;
    for (size_t i = 0; i < n; i += 4) {
        int x[4];
        for (int k = 0; k < 4; k++) {
            char c = v[i + (size_t)k];
            bool pad_ok = i + 4 == n && k >= 2 && c == '=' && (k == 2 ? v[i + 3] == '=' : 1);
            x[k] = c == '=' && pad_ok ? -2 : b64val(c);
            if (x[k] == -1)
                return -1;
        }
        int pad = (x[2] == -2) + (x[3] == -2);
        uint32_t w = (uint32_t)x[0] << 18 | (uint32_t)x[1] << 12 |
                     (uint32_t)(x[2] < 0 ? 0 : x[2]) << 6 | (uint32_t)(x[3] < 0 ? 0 : x[3]);
        unsigned char b[3] = {(unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w};
        for (int k = 0; k < 3 - pad; k++) {
            if (d == sizeof(dec))
                return -1;
            dec[d++] = (char)b[k];
        }
    }
    const char *colon = memchr(dec, ':', d);
    if (!colon)
        return -1;
    size_t u = (size_t)(colon - dec), p = d - u - 1;
    if (u == 0 || u > ucap || p > pcap)
        return -1;
    memcpy(user, dec, u);
    memcpy(pw, colon + 1, p);
    *ulen = u;
    *plen = p;
    sodium_memzero(dec, sizeof(dec)); /* the password's copy */
    return 0;
}

bool hapi_query_has_stale(const char *q)
{
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        if ((l == 5 || (l > 5 && q[5] == '=')) && !memcmp(q, "stale", 5))
            return true;
        q += l + (amp ? 1 : 0);
    }
    return false;
}
