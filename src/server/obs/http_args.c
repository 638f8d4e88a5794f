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

/* hapi_parse_query_mode's table: a parameter's name, its bit and what its value is. */
enum qkind { Q_FLAG, Q_TEXT, Q_NUM };
static const struct qkey {
    const char *name;
    unsigned bit;
    enum qkind kind;
} QKEYS[] = {
    {"prefix", HAPI_Q_PREFIX, Q_TEXT},    {"after", HAPI_Q_AFTER, Q_TEXT},
    {"limit", HAPI_Q_LIMIT, Q_NUM},       {"count", HAPI_Q_COUNT, Q_NUM},
    {"before", HAPI_Q_BEFORE, Q_NUM},     {"stale", HAPI_Q_STALE, Q_FLAG},
    {"deadline", HAPI_Q_DEADLINE, Q_NUM}, {"reason", HAPI_Q_REASON, Q_TEXT},
    {"lock", HAPI_Q_LOCK, Q_TEXT},        {"token", HAPI_Q_TOKEN, Q_TEXT},
};
#define NQKEYS (sizeof(QKEYS) / sizeof(QKEYS[0]))

/* Where parameter `bit`'s value goes in out: a text's buffer and length, or a number. */
static char *text_of(struct hapi_query *out, unsigned bit, size_t **len)
{
    switch (bit) {
    case HAPI_Q_PREFIX:
        return *len = &out->prefix_len, out->prefix;
    case HAPI_Q_AFTER:
        return *len = &out->after_len, out->after;
    case HAPI_Q_LOCK:
        return *len = &out->lock_len, out->lock;
    case HAPI_Q_TOKEN:
        return *len = &out->token_len, out->token;
    default:
        return *len = &out->reason_len, out->reason;
    }
}

static uint64_t *num_of(struct hapi_query *out, unsigned bit)
{
    switch (bit) {
    case HAPI_Q_LIMIT:
        return &out->limit;
    case HAPI_Q_COUNT:
        return &out->count;
    case HAPI_Q_BEFORE:
        return &out->before;
    default:
        return &out->deadline;
    }
}

/* "unknown query parameter 'NAME' (the names keys takes)", NAME cut at 32 bytes, printable. */
static void unknown_key(const char *name, size_t len, unsigned keys, char *err, size_t errlen)
{
    int o =
        snprintf(err, errlen, "unknown query parameter '%.*s' (", (int)(len > 32 ? 32 : len), name);
    for (char *e = err; *e; e++) /* shown back: printable ASCII only */
        if ((unsigned char)*e < ' ' || (unsigned char)*e >= 0x7f)
            *e = '?';
    const char *sep = "";
    for (size_t i = 0; i < NQKEYS && o >= 0 && (size_t)o < errlen; i++)
        if (keys & QKEYS[i].bit) {
            o += snprintf(err + o, errlen - (size_t)o, "%s%s", sep, QKEYS[i].name);
            sep = ", ";
        }
    if (o >= 0 && (size_t)o < errlen)
        snprintf(err + o, errlen - (size_t)o, ")");
}

/* One pair of a query: [p, p + l) up to the next '&' or the end; its name [p, p + kl) (up to the
 * first '='), its value [v, v + vl) (empty without '='). */
struct qpair {
    const char *p, *v;
    size_t l, kl, vl;
    bool eq;
};

/* The pair at *q into *x and *q past it (and its '&'); false at the end of the query. */
static bool next_pair(const char **q, struct qpair *x)
{
    if (!**q)
        return false;
    const char *amp = strchr(*q, '&');
    x->p = *q;
    x->l = amp ? (size_t)(amp - *q) : strlen(*q);
    const char *eq = memchr(*q, '=', x->l);
    x->eq = eq != NULL;
    x->kl = eq ? (size_t)(eq - *q) : x->l;
    x->v = eq ? eq + 1 : *q + x->l;
    x->vl = eq ? x->l - x->kl - 1 : 0;
    *q += x->l + (amp ? 1 : 0);
    return true;
}

/* The parameter pair x is under keys and mode, NULL when none (an empty pair; a name keys does
 * not take; under HAPI_QM_IGNORE_UNKNOWN a bare name, which is not a `name=value` pair). */
static const struct qkey *key_of(const struct qpair *x, unsigned keys, enum hapi_qmode mode)
{
    if (x->l == 0 || (mode == HAPI_QM_IGNORE_UNKNOWN && !x->eq))
        return NULL;
    for (size_t i = 0; i < NQKEYS; i++)
        if ((keys & QKEYS[i].bit) && strlen(QKEYS[i].name) == x->kl &&
            !memcmp(x->p, QKEYS[i].name, x->kl))
            return &QKEYS[i];
    return NULL;
}

/* Whether parameter k is given again in the pairs from q on. Called once per parameter (at its
 * first pair, which then either is refused or is its only one): the whole parse stays linear
 * in the query's length times the table's size. */
static bool given_again(const char *q, const struct qkey *k, unsigned keys, enum hapi_qmode mode)
{
    struct qpair x;
    while (next_pair(&q, &x))
        if (key_of(&x, keys, mode) == k)
            return true;
    return false;
}

/* The value of pair x into out as parameter k says: 0, or -1 with the message in err. */
static int read_value(const struct qpair *x, const struct qkey *k, struct hapi_query *out,
                      size_t cap, char *err, size_t errlen)
{
    if (k->kind == Q_TEXT) {
        size_t *len;
        char *buf = text_of(out, k->bit, &len);
        long n = hapi_pct_decode(x->v, x->vl, buf, cap);
        if (n < 0) {
            snprintf(err, errlen, "%s: bad percent-encoding, or longer than %zu bytes", k->name,
                     cap);
            return -1;
        }
        *len = (size_t)n;
    } else if (k->kind == Q_NUM) {
        uint64_t *v = num_of(out, k->bit);
        if (hapi_parse_u64(x->v, x->vl, v) || *v == 0) {
            snprintf(err, errlen, "%s: not a decimal number from 1", k->name);
            return -1;
        }
    }
    return 0;
}

int hapi_parse_query_mode(const char *q, unsigned keys, enum hapi_qmode mode,
                          struct hapi_query *out, size_t cap, char *err, size_t errlen)
{
    out->prefix_len = out->after_len = out->reason_len = out->lock_len = out->token_len = 0;
    out->has_after = out->stale = false;
    out->limit = out->count = out->before = out->deadline = 0;
    out->seen = 0;
    struct qpair x;
    while (next_pair(&q, &x)) {
        const struct qkey *k = key_of(&x, keys, mode);
        if (!k && (x.l == 0 || mode == HAPI_QM_IGNORE_UNKNOWN))
            continue; /* an empty pair (a&&b, a trailing &), or another's under IGNORE_UNKNOWN */
        if (!k) {
            unknown_key(x.p, x.kl, keys, err, errlen);
            return -1;
        }
        if (given_again(q, k, keys, mode)) { /* ambiguous: refused whatever the values */
            snprintf(err, errlen, "%s given twice", k->name);
            return -1;
        }
        if (read_value(&x, k, out, cap, err, errlen))
            return -1;
        out->seen |= k->bit;
    }
    out->has_after = (out->seen & HAPI_Q_AFTER) != 0;
    out->stale = (out->seen & HAPI_Q_STALE) != 0;
    return 0;
}

int hapi_parse_query_keys(const char *q, unsigned keys, struct hapi_query *out, size_t cap,
                          char *err, size_t errlen)
{
    return hapi_parse_query_mode(q, keys, HAPI_QM_STRICT, out, cap, err, errlen);
}

int hapi_parse_query(const char *q, struct hapi_query *out, size_t cap, char *err, size_t errlen)
{
    return hapi_parse_query_keys(q, HAPI_Q_READS, out, cap, err, errlen);
}

/* One of /v1/fence's arguments into out (cap bytes): parameter `key` of the query (every other
 * parameter skipped) or its header hv (hlen bytes, SIZE_MAX: given twice); its length (0: absent
 * or empty), or -1 with the message in err. The checks run in the order hapi_fence_args states. */
static long fence_arg(const char *q, unsigned key, const char *header, const char *hv, size_t hlen,
                      char *out, size_t cap, char *err, size_t errlen)
{
    const char *param = key == HAPI_Q_LOCK ? "lock" : "token";
    struct hapi_query hq = {.lock = out, .token = out};
    if (hv && hlen == SIZE_MAX) {
        snprintf(err, errlen, "%s given twice", param); /* the parser's word for the query's */
        return -1;
    }
    if (hapi_parse_query_mode(q, key, HAPI_QM_IGNORE_UNKNOWN, &hq, cap, err, errlen))
        return -1;
    size_t n = key == HAPI_Q_LOCK ? hq.lock_len : hq.token_len;
    if (!hv)
        return (long)n;
    if ((hq.seen & key) && (n != hlen || memcmp(out, hv, hlen))) {
        snprintf(err, errlen, "%s: the query and the %s header differ", param, header);
        return -1;
    }
    if (hlen > cap) {
        snprintf(err, errlen, "%s: longer than %zu bytes", header, cap);
        return -1;
    }
    memcpy(out, hv, hlen);
    return (long)hlen;
}

int hapi_fence_args(struct hapi_fence *f, char *err, size_t errlen)
{
    char tok[HAPI_FENCE_TOKEN_TEXT];
    long n = fence_arg(f->query, HAPI_Q_LOCK, "Fencing-Lock", f->hlock, f->hlock_len, f->name,
                       f->cap, err, errlen);
    long tn = n < 0 ? -1
                    : fence_arg(f->query, HAPI_Q_TOKEN, "Fencing-Token", f->htoken, f->htoken_len,
                                tok, sizeof(tok), err, errlen);
    if (n < 0 || tn < 0)
        return -1;
    if (n == 0 || tn == 0 || hapi_parse_u64(tok, (size_t)tn, &f->token)) {
        snprintf(err, errlen, "%s",
                 n == 0    ? "missing lock (lock=NAME or the Fencing-Lock header)"
                 : tn == 0 ? "missing token (token=T or the Fencing-Token header)"
                           : "token: not a decimal number of at most 20 digits that fits 64 bits");
        return -1;
    }
    f->name_len = (size_t)n;
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
