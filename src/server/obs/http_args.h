/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_args — the pure parts of the HTTP API (http_api.c, POST .../revoke in http_revoke.c, and
 * /v1/fence in http_fence.c): which route a path names, the percent-decoding of names, the query
 * parameters (one parser for every route, told which parameters the route takes and whether
 * other ones are refused or skipped), /v1/fence's arguments and the HTTP Basic credentials. No
 * state, no I/O, no allocation: every buffer is the caller's; unit-tested in
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
 * (hapi_parse_query_mode's `keys`). */
enum hapi_qkey {
    HAPI_Q_PREFIX = 1u << 0,   /* text: a name prefix */
    HAPI_Q_AFTER = 1u << 1,    /* text: /v1/locks a name, /v1/sessions a decimal id */
    HAPI_Q_LIMIT = 1u << 2,    /* number from 1 */
    HAPI_Q_COUNT = 1u << 3,    /* number from 1: /v1/locks/{name}/history's entries at most */
    HAPI_Q_BEFORE = 1u << 4,   /* number from 1: and the token they are below */
    HAPI_Q_STALE = 1u << 5,    /* a flag: `stale` or `stale=...` */
    HAPI_Q_DEADLINE = 1u << 6, /* number from 1: POST .../revoke's milliseconds */
    HAPI_Q_REASON = 1u << 7,   /* text: POST .../revoke's reason */
    HAPI_Q_LOCK = 1u << 8,     /* text: /v1/fence's lock name */
    HAPI_Q_TOKEN = 1u << 9,    /* text: /v1/fence's token (decimal once decoded: the route's) */
    /* the GET routes' (hapi_parse_query) */
    HAPI_Q_READS =
        HAPI_Q_PREFIX | HAPI_Q_AFTER | HAPI_Q_LIMIT | HAPI_Q_COUNT | HAPI_Q_BEFORE | HAPI_Q_STALE,
    HAPI_Q_REVOKE = HAPI_Q_DEADLINE | HAPI_Q_REASON, /* POST /v1/locks/{name}/revoke */
    HAPI_Q_FENCE = HAPI_Q_LOCK | HAPI_Q_TOKEN,       /* GET /v1/fence (hapi_fence_args) */
};

/* What the parser does with a pair that is not one of the route's parameters. */
enum hapi_qmode {
    /* refused: "unknown query parameter 'x' (the names it takes)". The API's own routes: a
     * misspelt parameter is the client's mistake, said at once. */
    HAPI_QM_STRICT = 0,
    /* skipped: only `name=value` pairs whose name `keys` takes are read; any other pair, and a
     * bare name without '=' (even one `keys` takes), is not this route's. /v1/fence, which a
     * proxy (nginx's auth_request) reaches with parameters of its own. */
    HAPI_QM_IGNORE_UNKNOWN,
};

/* A query's parameters: `name=value` pairs split at '&' (an empty pair, as in a&&b or a trailing
 * '&', is nothing); names are matched exactly (case, no decoding); a name without '=' has the
 * empty value (HAPI_QM_STRICT). Texts are percent-decoded (hapi_pct_decode) into the caller's
 * buffers (cap bytes each; only the ones `keys` names are touched); numbers are decimal from 1
 * (hapi_parse_u64). Refused, -1 with a message in err (what it shows of a name is printable
 * ASCII), in the order of the pairs: a parameter given twice ("NAME given twice", said at its
 * first pair, before its value is read), one `keys` does not name (HAPI_QM_STRICT), a bad number,
 * a bad encoding or a text over cap bytes. */
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
    char *lock;        /* caller's, cap bytes (HAPI_Q_LOCK) */
    size_t lock_len;
    char *token; /* caller's, cap bytes (HAPI_Q_TOKEN) */
    size_t token_len;
    unsigned seen; /* the parameters given (enum hapi_qkey bits), an empty value too */
};
int hapi_parse_query_mode(const char *q, unsigned keys, enum hapi_qmode mode,
                          struct hapi_query *out, size_t cap, char *err, size_t errlen);
/* hapi_parse_query_mode with HAPI_QM_STRICT. */
int hapi_parse_query_keys(const char *q, unsigned keys, struct hapi_query *out, size_t cap,
                          char *err, size_t errlen);
/* The GET routes' parameters: hapi_parse_query_keys with HAPI_Q_READS. */
int hapi_parse_query(const char *q, struct hapi_query *out, size_t cap, char *err, size_t errlen);

/* GET /v1/fence's arguments: the lock name and the token, each from the query (lock=, token=,
 * read by hapi_parse_query_mode with HAPI_QM_IGNORE_UNKNOWN, one parameter at a time) or from its
 * header (Fencing-Lock, Fencing-Token: raw bytes); given both ways, they must agree. The name is
 * at most cap bytes (--max-key), the token's text at most HAPI_FENCE_TOKEN_TEXT bytes, then a
 * decimal number that fits 64 bits. Refused, -1 with the message (no newline) in err, in this
 * order: for the lock, then for the token: given twice (in the query or as a header), a bad
 * encoding or over its cap in the query, query and header differing, a header over its cap;
 * then a missing (or empty) lock, a missing token, a token that is not a number. */
#define HAPI_FENCE_TOKEN_TEXT 31
struct hapi_fence {
    const char *query;            /* the request's query, "" for none */
    const char *hlock, *htoken;   /* the headers' values, NULL when absent */
    size_t hlock_len, htoken_len; /* SIZE_MAX: given twice (srv_http_header's sign) */
    char *name;                   /* caller's, cap bytes: the decoded lock name */
    size_t cap;
    size_t name_len; /* out: at least 1 */
    uint64_t token;  /* out */
};
int hapi_fence_args(struct hapi_fence *f, char *err, size_t errlen);

/* Whether the query has a `stale` parameter (alone or with a value). */
bool hapi_query_has_stale(const char *q);

/* "Basic BASE64(user:password)" (the scheme without case) into user and pw (caps include no
 * NUL: they are byte strings); 0, or -1 when malformed. */
int hapi_basic_decode(const char *v, size_t n, char *user, size_t ucap, size_t *ulen, char *pw,
                      size_t pcap, size_t *plen);

#endif
