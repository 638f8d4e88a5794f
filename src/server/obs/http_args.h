/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_args — the pure parts of the HTTP API (http_api.c, and /v1/fence in http_fence.c): which
 * route a path names, the percent-decoding of names, the query parameters and the HTTP Basic
 * credentials. No state, no I/O, no allocation: every buffer is the caller's; unit-tested in
 * tests/unit/test_http_api.c.
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

/* The API's query parameters. Unknown parameters, one given twice, a bad number or a bad
 * encoding: -1 with a message in err. Decoded strings are copied into the caller's buffers. */
struct hapi_query {
    char *prefix; /* caller's, cap bytes each */
    size_t prefix_len;
    char *after; /* /v1/locks: a name; /v1/sessions: a decimal id */
    size_t after_len;
    bool has_after;
    uint64_t limit;  /* 0: absent */
    bool stale;      /* `stale` or `stale=...` present */
    uint64_t count;  /* /v1/locks/{name}/history: entries at most (0: absent) */
    uint64_t before; /* and the token they are below (0: absent) */
};
int hapi_parse_query(const char *q, struct hapi_query *out, size_t cap, char *err, size_t errlen);

/* Whether the query has a `stale` parameter (alone or with a value). */
bool hapi_query_has_stale(const char *q);

/* "Basic BASE64(user:password)" (the scheme without case) into user and pw (caps include no
 * NUL: they are byte strings); 0, or -1 when malformed. */
int hapi_basic_decode(const char *v, size_t n, char *user, size_t ucap, size_t *ulen, char *pw,
                      size_t pcap, size_t *plen);

#endif
