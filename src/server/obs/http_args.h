/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_args — the pure parts of the HTTP API (http_api.c, POST .../revoke in http_revoke.c, and
 * /v1/fence in http_fence.c): which route a path names, the percent-decoding of names, the query
 * parameters (one parser for every route, told which parameters the route takes) and the HTTP
 * Basic credentials. No state, no I/O, no allocation: every buffer is the caller's; unit-tested in
 * tests/unit/test_http_api.c and fuzzed by fuzz/fuzz_http_args.c.
 */
#ifndef FENCELOCK_HTTP_ARGS_H
#define FENCELOCK_HTTP_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hapi_route {
    HAPI_NONE = 0, /* not the API's: 404 (or another handler's) */
    HAPI_BAD,      /* the API's, but the name is badly encoded or too long: 400 */
    HAPI_LOCKS,    /* /v1/locks */
    HAPI_LOCK,     /* /v1/locks/{name} */
    HAPI_SESSIONS, /* /v1/sessions */
    HAPI_SESSION,  /* /v1/sessions/{id} */
    HAPI_MEMBERS,
    HAPI_ELECTIONS,
    HAPI_SEMAPHORES,
    HAPI_EVENTS,  /* /v1/events: Server-Sent Events (http_events.c) */
    HAPI_HISTORY, /* /v1/locks/{name}/history (a name ending in "/history": encode its '/') */
    HAPI_WAITS,   /* /v1/waits: LOCK.WAITS's rows, who blocks whom */
};

/* The route of path; for HAPI_LOCK and HAPI_HISTORY the decoded name in name[0..*nlen) (at most cap
 * bytes, at least one), for HAPI_SESSION the id in *id (decimal, no sign, fits 64 bits, not 0). */
enum hapi_route hapi_route_of(const char *path, char *name, size_t cap, size_t *nlen, uint64_t *id);

/* Percent-decode q[0..n) into out (at most cap bytes); its length, or -1 (a bad %XX or too
 * long). '+' stays '+': names are bytes, not form fields. */
long hapi_pct_decode(const char *q, size_t n, char *out, size_t cap);

/* Decimal digits only (no sign, no blanks), at most UINT64_MAX; 0 or -1. */
int hapi_parse_u64(const char *p, size_t n, uint64_t *out);

/* The query parameters of the HTTP port's routes, one bit each: a route names the ones it takes
 * (hapi_parse_query_keys's `keys`); any other is refused as unknown. */
enum hapi_qkey {
    HAPI_Q_PREFIX = 1u << 0,   /* text: a name prefix */
    HAPI_Q_AFTER = 1u << 1,    /* text: /v1/locks a name, /v1/sessions a decimal id */
    HAPI_Q_LIMIT = 1u << 2,    /* number from 1 */
    HAPI_Q_COUNT = 1u << 3,    /* number from 1: /v1/locks/{name}/history's entries at most */
    HAPI_Q_BEFORE = 1u << 4,   /* number from 1: and the token they are below */
    HAPI_Q_STALE = 1u << 5,    /* a flag: `stale` or `stale=...` */
    HAPI_Q_DEADLINE = 1u << 6, /* number from 1: POST .../revoke's milliseconds */
    HAPI_Q_REASON = 1u << 7,   /* text: POST .../revoke's reason */
    /* the GET routes' (hapi_parse_query) */
    HAPI_Q_READS =
        HAPI_Q_PREFIX | HAPI_Q_AFTER | HAPI_Q_LIMIT | HAPI_Q_COUNT | HAPI_Q_BEFORE | HAPI_Q_STALE,
    HAPI_Q_REVOKE = HAPI_Q_DEADLINE | HAPI_Q_REASON, /* POST /v1/locks/{name}/revoke */
};

/* A query's parameters: `name=value` pairs split at '&' (an empty pair, as in a&&b or a trailing
 * '&', is nothing); names are matched exactly (case, no decoding); a name without '=' has the
 * empty value. Texts are percent-decoded (hapi_pct_decode) into the caller's buffers (cap bytes
 * each; only the ones `keys` names are touched); numbers are decimal from 1 (hapi_parse_u64).
 * A parameter `keys` does not name, one given twice, a bad number or a bad encoding or a text
 * over cap bytes: -1 with a message in err (what it shows of a name is printable ASCII). */
struct hapi_query {
    char *prefix; /* caller's, cap bytes each */
    size_t prefix_len;
    char *after;
    size_t after_len;
    bool has_after;
    uint64_t limit;  /* 0: absent */
    bool stale;      /* `stale` or `stale=...` present */
    uint64_t count;  /* 0: absent */
    uint64_t before; /* 0: absent */
    char *reason;    /* caller's, cap bytes (HAPI_Q_REASON) */
    size_t reason_len;
    uint64_t deadline; /* 0: absent */
};
int hapi_parse_query_keys(const char *q, unsigned keys, struct hapi_query *out, size_t cap,
                          char *err, size_t errlen);
/* The GET routes' parameters: hapi_parse_query_keys with HAPI_Q_READS. */
int hapi_parse_query(const char *q, struct hapi_query *out, size_t cap, char *err, size_t errlen);

/* Whether the query has a `stale` parameter (alone or with a value). */
bool hapi_query_has_stale(const char *q);

/* "Basic BASE64(user:password)" (the scheme without case) into user and pw (caps include no
 * NUL: they are byte strings); 0, or -1 when malformed. */
int hapi_basic_decode(const char *v, size_t n, char *user, size_t ucap, size_t *ulen, char *pw,
                      size_t pcap, size_t *plen);

#endif
