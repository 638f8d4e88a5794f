/* SPDX-License-Identifier: Apache-2.0 */
/* test_http_api.c — the HTTP API's pure parsing (server/obs/http_args.c): which route a path
 * names and the name or id it carries, percent-decoding, the query parameters (unknown, twice,
 * bad numbers refused), ?stale, POST .../revoke's parameters through the same parser (the table
 * of what revoke's own parser accepted and refused), GET /v1/fence's arguments through it in its
 * HAPI_QM_IGNORE_UNKNOWN mode (the table of what /v1/fence's own parser accepted and refused,
 * and random requests on which that parser, kept here as the reference, and the new code
 * agree), and the HTTP Basic credentials (good, and every malformed form refused). */
#include <stdio.h>
#include <string.h>

#include "server/obs/http_args.h"
#include "test.h"

TEST(test_routes_and_their_names)
{
    char name[16];
    size_t nl = 0;
    uint64_t id = 0;
    CHECK(hapi_route_of("/v1/locks", name, sizeof(name), &nl, &id) == HAPI_LOCKS);
    CHECK(hapi_route_of("/v1/sessions", name, sizeof(name), &nl, &id) == HAPI_SESSIONS);
    CHECK(hapi_route_of("/v1/members", name, sizeof(name), &nl, &id) == HAPI_MEMBERS);
    CHECK(hapi_route_of("/v1/elections", name, sizeof(name), &nl, &id) == HAPI_ELECTIONS);
    CHECK(hapi_route_of("/v1/semaphores", name, sizeof(name), &nl, &id) == HAPI_SEMAPHORES);
    CHECK(hapi_route_of("/v1/locks/a%2Fb+c%00", name, sizeof(name), &nl, &id) == HAPI_LOCK);
    CHECK_EQ_U64(nl, 6);
    CHECK(memcmp(name, "a/b+c\0", 6) == 0);
    CHECK(hapi_route_of("/v1/locks/", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/locks/%zz", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/locks/a%2", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/locks/0123456789abcdef", name, sizeof(name), &nl, &id) == HAPI_LOCK);
    CHECK(hapi_route_of("/v1/locks/0123456789abcdefg", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/sessions/42", name, sizeof(name), &nl, &id) == HAPI_SESSION);
    CHECK_EQ_U64(id, 42);
    CHECK(hapi_route_of("/v1/sessions/18446744073709551615", name, sizeof(name), &nl, &id) ==
          HAPI_SESSION);
    CHECK(hapi_route_of("/v1/sessions/18446744073709551616", name, sizeof(name), &nl, &id) ==
          HAPI_BAD);
    CHECK(hapi_route_of("/v1/sessions/0", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/sessions/-1", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/sessions/", name, sizeof(name), &nl, &id) == HAPI_BAD);
    CHECK(hapi_route_of("/v1/lockz", name, sizeof(name), &nl, &id) == HAPI_NONE);
    CHECK(hapi_route_of("/v1/locksx", name, sizeof(name), &nl, &id) == HAPI_NONE);
    CHECK(hapi_route_of("/v2/locks", name, sizeof(name), &nl, &id) == HAPI_NONE);
}

TEST(test_query_parameters)
{
    char p[8], a[8], err[128];
    struct hapi_query q = {.prefix = p, .after = a};
    CHECK(hapi_parse_query("", &q, sizeof(p), err, sizeof(err)) == 0);
    CHECK(!q.stale && !q.has_after && q.limit == 0 && q.prefix_len == 0);
    CHECK(hapi_parse_query("prefix=a%26b&after=x&limit=10&stale", &q, sizeof(p), err,
                           sizeof(err)) == 0);
    CHECK(q.prefix_len == 3 && memcmp(p, "a&b", 3) == 0);
    CHECK(q.has_after && q.after_len == 1 && a[0] == 'x');
    CHECK_EQ_U64(q.limit, 10);
    CHECK(q.stale);
    CHECK(hapi_parse_query("prefix=&&", &q, sizeof(p), err, sizeof(err)) == 0);
    const char *bad[] = {"limit=0",          "limit=",     "limit=1x",
                         "limit=-1",         "bogus=1",    "prefix=a&prefix=b",
                         "stale&stale",      "prefix=%zz", "prefix=%",
                         "prefix=123456789", "after=%4",   "Limit=1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (hapi_parse_query(bad[i], &q, sizeof(p), err, sizeof(err)) != -1) {
            fprintf(stderr, "  accepted %s\n", bad[i]);
            CHECK(0);
        }
        CHECK(err[0] != '\0');
    }
    /* what an unknown parameter shows back is printable */
    CHECK(hapi_parse_query("a\x01\x7f=1", &q, sizeof(p), err, sizeof(err)) == -1);
    for (const char *e = err; *e; e++)
        CHECK((unsigned char)*e >= ' ' && (unsigned char)*e < 0x7f);
    CHECK(hapi_query_has_stale("stale"));
    CHECK(hapi_query_has_stale("a=1&stale=1"));
    CHECK(!hapi_query_has_stale("stalex=1"));
    CHECK(!hapi_query_has_stale("prefix=stale"));
}

/* POST /v1/locks/{name}/revoke's query (http_revoke.c) through the shared parser: deadline=ms
 * and reason=text, each at most once, nothing else. The table is what revoke's own parser
 * accepted and refused before it used this one (cap 16 standing for --max-key; the --max-wait
 * bound is revoke's own, after the parser). */
TEST(test_revoke_query_cases)
{
    static const struct {
        const char *q;
        uint64_t deadline;
        const char *reason; /* NULL: refused */
        size_t rlen;
    } cases[] = {
        {"", 0, "", 0},
        {"deadline=1500&reason=deploy%20now", 1500, "deploy now", 10},
        {"reason=a+b", 0, "a+b", 3}, /* '+' stays '+' */
        {"reason=%2B", 0, "+", 1},
        {"reason", 0, "", 0}, /* a missing value: empty */
        {"reason=", 0, "", 0},
        {"&&deadline=5&", 5, "", 0}, /* empty parameters: nothing */
        {"&", 0, "", 0},
        {"reason=%41%62&deadline=7", 7, "Ab", 2},
        {"reason=a=b", 0, "a=b", 3},
        {"reason=%00", 0, "\0", 1},
        {"reason=%e2%82%ac", 0, "\xe2\x82\xac", 3},
        {"deadline=00012", 12, "", 0},
        {"deadline=18446744073709551615", UINT64_MAX, "", 0},   /* revoke's --max-wait refuses */
        {"reason=0123456789abcdef", 0, "0123456789abcdef", 16}, /* exactly the cap */
        {"reason=%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41", 0, "AAAAAAAAAAAAAAAA", 16},
        /* refused: bad numbers */
        {"deadline=0", 0, NULL, 0},
        {"deadline=", 0, NULL, 0},
        {"deadline", 0, NULL, 0},
        {"deadline=-1", 0, NULL, 0},
        {"deadline=+1", 0, NULL, 0},
        {"deadline=1.5", 0, NULL, 0},
        {"deadline= 1", 0, NULL, 0},
        {"deadline=0x10", 0, NULL, 0},
        {"deadline=%31", 0, NULL, 0}, /* numbers are not decoded */
        {"deadline=18446744073709551616", 0, NULL, 0},
        {"deadline=99999999999999999999", 0, NULL, 0},
        /* refused: repeated keys */
        {"deadline=1&deadline=2", 0, NULL, 0},
        {"reason=a&reason=b", 0, NULL, 0},
        {"reason&reason", 0, NULL, 0},
        {"deadline=1&reason=x&deadline=1", 0, NULL, 0},
        {"deadline=3&deadline", 0, NULL, 0},
        /* refused: other names (exact, case and all; names are not decoded) */
        {"color=red", 0, NULL, 0},
        {"reason=x&color", 0, NULL, 0},
        {"Deadline=1", 0, NULL, 0},
        {"REASON=x", 0, NULL, 0},
        {"stale", 0, NULL, 0},
        {"prefix=a", 0, NULL, 0},
        {"limit=1", 0, NULL, 0},
        {"=x", 0, NULL, 0},
        {" deadline=1", 0, NULL, 0},
        {"deadline%3D1", 0, NULL, 0},
        {"reason%3Dx", 0, NULL, 0},
        /* refused: bad percent-encoding, over-long values */
        {"reason=%zz", 0, NULL, 0},
        {"reason=%4", 0, NULL, 0},
        {"reason=%", 0, NULL, 0},
        {"reason=%%41", 0, NULL, 0},
        {"reason=0123456789abcdefg", 0, NULL, 0},
        {"reason=%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41%41", 0, NULL, 0},
    };
    char reason[16], err[128];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct hapi_query q = {.reason = reason};
        err[0] = '\0';
        int rc =
            hapi_parse_query_keys(cases[i].q, HAPI_Q_REVOKE, &q, sizeof(reason), err, sizeof(err));
        bool ok = cases[i].reason ? rc == 0 && q.deadline == cases[i].deadline &&
                                        q.reason_len == cases[i].rlen &&
                                        memcmp(reason, cases[i].reason, cases[i].rlen) == 0
                                  : rc == -1 && err[0] != '\0';
        if (!ok)
            fprintf(stderr, "  revoke query '%s': rc %d, err '%s'\n", cases[i].q, rc, err);
        CHECK(ok);
    }
    /* the messages name the parameter, and an unknown one lists what revoke takes */
    struct hapi_query q = {.reason = reason};
    CHECK(hapi_parse_query_keys("color=red", HAPI_Q_REVOKE, &q, sizeof(reason), err, sizeof(err)) ==
          -1);
    CHECK(strcmp(err, "unknown query parameter 'color' (deadline, reason)") == 0);
    CHECK(hapi_parse_query_keys("deadline=0", HAPI_Q_REVOKE, &q, sizeof(reason), err,
                                sizeof(err)) == -1);
    CHECK_STR_PREFIX(err, "deadline: ");
    /* and the GET routes still refuse revoke's parameters, as before */
    char p[8], a[8];
    struct hapi_query g = {.prefix = p, .after = a};
    CHECK(hapi_parse_query("deadline=5", &g, sizeof(p), err, sizeof(err)) == -1);
    CHECK(hapi_parse_query("reason=x", &g, sizeof(p), err, sizeof(err)) == -1);
    CHECK(strcmp(err, "unknown query parameter 'reason' (prefix, after, limit, count, before, "
                      "stale)") == 0);
}

/* ---- GET /v1/fence's arguments (hapi_fence_args) ----
 *
 * /v1/fence read its query with a parser of its own until it moved onto the port's one parser
 * (HAPI_QM_IGNORE_UNKNOWN). What it accepted and refused, and the message it gave, stay the
 * same: old_fence_args below is that code as it was (query_param and arg_of of http_fence.c,
 * with the 400 answers turned into a message), the reference both tests compare with. */

#define OLD_TWICE SIZE_MAX /* a header given twice, as srv_http_header says it */

static int old_query_param(const char *q, const char *key, const char **v, size_t *vlen)
{
    size_t klen = strlen(key);
    int found = 0;
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        if (l > klen && q[klen] == '=' && !memcmp(q, key, klen)) {
            if (found)
                return -1;
            found = 1;
            *v = q + klen + 1;
            *vlen = l - klen - 1;
        }
        q += l + (amp ? 1 : 0);
    }
    return found;
}

static long old_arg_of(const char *query, const char *hv, size_t hlen, const char *param,
                       const char *header, char *out, size_t cap, char *msg, size_t msglen)
{
    const char *qv = NULL;
    size_t qlen = 0;
    long n = 0;
    int qrc = old_query_param(query, param, &qv, &qlen);
    if (qrc < 0 || (hv && hlen == SIZE_MAX)) {
        snprintf(msg, msglen, "%s given twice\n", param);
        return -1;
    }
    if (qrc > 0) {
        n = hapi_pct_decode(qv, qlen, out, cap);
        if (n < 0) {
            snprintf(msg, msglen, "%s: bad percent-encoding, or longer than %zu bytes\n", param,
                     cap);
            return -1;
        }
    }
    if (hv) {
        if (qrc > 0 && ((size_t)n != hlen || memcmp(out, hv, hlen))) {
            snprintf(msg, msglen, "%s: the query and the %s header differ\n", param, header);
            return -1;
        }
        if (hlen > cap) {
            snprintf(msg, msglen, "%s: longer than %zu bytes\n", header, cap);
            return -1;
        }
        memcpy(out, hv, hlen);
        n = (long)hlen;
    }
    return n;
}

/* 0 with the name and token, or -1 with the 400's body in msg (newline and all). */
static int old_fence_args(const struct hapi_fence *in, char *name, size_t *nlen, uint64_t *token,
                          char *msg, size_t msglen)
{
    char tok[32];
    long n = old_arg_of(in->query, in->hlock, in->hlock_len, "lock", "Fencing-Lock", name, in->cap,
                        msg, msglen);
    long tn = n < 0 ? -1
                    : old_arg_of(in->query, in->htoken, in->htoken_len, "token", "Fencing-Token",
                                 tok, sizeof(tok) - 1, msg, msglen);
    if (n < 0 || tn < 0)
        return -1;
    if (n == 0 || tn == 0 || hapi_parse_u64(tok, (size_t)tn, token)) {
        snprintf(msg, msglen, "%s",
                 n == 0 ? "missing lock (lock=NAME or the Fencing-Lock header)\n"
                 : tn == 0
                     ? "missing token (token=T or the Fencing-Token header)\n"
                     : "token: not a decimal number of at most 20 digits that fits 64 bits\n");
        return -1;
    }
    *nlen = (size_t)n;
    return 0;
}

/* The old code and hapi_fence_args on one input: the same verdict, the same name and token, or
 * the same message (the route adds the newline). false, printing both, when they differ. */
static bool fence_agrees(const struct hapi_fence *in)
{
    char oname[16], nname[16], omsg[256], err[256], nmsg[260];
    size_t olen = 0;
    uint64_t otok = 0;
    struct hapi_fence f = *in;
    f.name = nname;
    omsg[0] = err[0] = '\0';
    int orc = old_fence_args(in, oname, &olen, &otok, omsg, sizeof(omsg));
    int nrc = hapi_fence_args(&f, err, sizeof(err));
    snprintf(nmsg, sizeof(nmsg), "%s\n", err);
    bool same =
        orc == nrc && (orc ? !strcmp(omsg, nmsg)
                           : olen == f.name_len && !memcmp(oname, nname, olen) && otok == f.token);
    if (!same)
        fprintf(stderr, "  fence '%s' lock hdr %s token hdr %s: old %d '%s', new %d '%s'\n",
                in->query, in->hlock ? in->hlock : "-", in->htoken ? in->htoken : "-", orc, omsg,
                nrc, nrc ? err : "");
    return same;
}

/* The table of cases written from the old code: every rule it had, each with the answer it
 * gave (a name and token, or its message), through hapi_fence_args (cap 8 standing for
 * --max-key), and each agreeing with the reference too. */
TEST(test_fence_args_cases)
{
    static const struct {
        const char *q, *hl, *ht; /* headers: NULL absent, "TWICE" given twice */
        const char *name;        /* accepted: the name and token */
        uint64_t token;
        const char *err; /* refused: the message */
    } cases[] = {
        {"lock=inv&token=7", NULL, NULL, "inv", 7, NULL},
        {"token=7&lock=inv", NULL, NULL, "inv", 7, NULL},
        /* percent-encoding: decoded, '+' stays '+', %00 is a byte; the token is decoded too */
        {"lock=i%6Ev&token=7", NULL, NULL, "inv", 7, NULL},
        {"lock=a+b&token=7", NULL, NULL, "a+b", 7, NULL},
        {"lock=a%2Bb%20c&token=7", NULL, NULL, "a+b c", 7, NULL},
        {"lock=%00&token=7", NULL, NULL, "\0", 7, NULL},
        {"lock=inv&token=%31%32", NULL, NULL, "inv", 12, NULL},
        {"lock=a=b&token=7", NULL, NULL, "a=b", 7, NULL},
        {"lock=inv&token=007", NULL, NULL, "inv", 7, NULL},
        {"lock=inv&token=18446744073709551615", NULL, NULL, "inv", UINT64_MAX, NULL},
        {"lock=inv&token=0", NULL, NULL, "inv", 0, NULL}, /* 0: a check that says 409 */
        /* unknown parameters, bare names, other cases and empty pairs are skipped */
        {"lock=inv&token=7&other=1", NULL, NULL, "inv", 7, NULL},
        {"a=1&lock=inv&b&token=7&c=%zz&=x", NULL, NULL, "inv", 7, NULL},
        {"lock&lock=inv&token=7&token", NULL, NULL, "inv", 7, NULL},
        {"Lock=x&lock=inv&TOKEN=1&token=7", NULL, NULL, "inv", 7, NULL},
        {"lock%3Dx&lock=inv&token=7", NULL, NULL, "inv", 7, NULL},
        {"&&lock=inv&&token=7&", NULL, NULL, "inv", 7, NULL},
        {"stale&prefix=a&limit=0&lock=inv&token=7", NULL, NULL, "inv", 7, NULL},
        /* the name at exactly the cap, in the query and in the header */
        {"lock=12345678&token=7", NULL, NULL, "12345678", 7, NULL},
        {"lock=%41%41%41%41%41%41%41%41&token=7", NULL, NULL, "AAAAAAAA", 7, NULL},
        /* the headers: raw bytes, alone or agreeing with the query */
        {"", "inv", "7", "inv", 7, NULL},
        {"", "a%41", "7", "a%41", 7, NULL},
        {"lock=inv", NULL, "7", "inv", 7, NULL},
        {"lock=inv&token=7", "inv", "7", "inv", 7, NULL},
        {"lock=i%6Ev&token=7", "inv", NULL, "inv", 7, NULL},
        {"lock", "inv", "7", "inv", 7, NULL}, /* a bare name is not a query lock: no clash */
        {"", "12345678", "7", "12345678", 7, NULL},
        /* missing or empty */
        {"", NULL, NULL, NULL, 0, "missing lock (lock=NAME or the Fencing-Lock header)"},
        {"lock=inv", NULL, NULL, NULL, 0, "missing token (token=T or the Fencing-Token header)"},
        {"token=7", NULL, NULL, NULL, 0, "missing lock (lock=NAME or the Fencing-Lock header)"},
        {"lock=&token=7", NULL, NULL, NULL, 0,
         "missing lock (lock=NAME or the Fencing-Lock header)"},
        {"lock&token=7", NULL, NULL, NULL, 0,
         "missing lock (lock=NAME or the Fencing-Lock header)"},
        {"lock=inv&token=", NULL, NULL, NULL, 0,
         "missing token (token=T or the Fencing-Token header)"},
        {"", "", "7", NULL, 0, "missing lock (lock=NAME or the Fencing-Lock header)"},
        {"lock=&token=7", "", NULL, NULL, 0, "missing lock (lock=NAME or the Fencing-Lock header)"},
        /* the token is not a number */
        {"lock=inv&token=-1", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv&token=+7", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv&token=1x", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv&token=18446744073709551616", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv&token=%2B7", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv&token=0000000000000000000000000000007", NULL, NULL, NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        {"lock=inv", NULL, "abc", NULL, 0,
         "token: not a decimal number of at most 20 digits that fits 64 bits"},
        /* given twice: in the query (whatever the values), as a header */
        {"lock=inv&lock=inv&token=7", NULL, NULL, NULL, 0, "lock given twice"},
        {"lock=%zz&lock=inv&token=7", NULL, NULL, NULL, 0, "lock given twice"},
        {"lock=&lock=&token=7", NULL, NULL, NULL, 0, "lock given twice"},
        {"lock=inv&token=7&token=8", NULL, NULL, NULL, 0, "token given twice"},
        {"lock=inv&token=7", "TWICE", NULL, NULL, 0, "lock given twice"},
        {"lock=%zz&token=7", "TWICE", NULL, NULL, 0, "lock given twice"},
        {"lock=inv", NULL, "TWICE", NULL, 0, "token given twice"},
        /* bad percent-encoding, over-long values */
        {"lock=in%zzv&token=7", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"lock=inv%&token=7", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"lock=inv%4&token=7", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"lock=123456789&token=7", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"lock=inv&token=%zz", NULL, NULL, NULL, 0,
         "token: bad percent-encoding, or longer than 31 bytes"},
        {"lock=inv&token=00000000000000000000000000000007", NULL, NULL, NULL, 0,
         "token: bad percent-encoding, or longer than 31 bytes"},
        {"", "123456789", "7", NULL, 0, "Fencing-Lock: longer than 8 bytes"},
        {"", "inv", "00000000000000000000000000000007", NULL, 0,
         "Fencing-Token: longer than 31 bytes"},
        /* query and header differing */
        {"lock=inv&token=7", "other", NULL, NULL, 0,
         "lock: the query and the Fencing-Lock header differ"},
        {"lock=&token=7", "inv", NULL, NULL, 0,
         "lock: the query and the Fencing-Lock header differ"},
        {"lock=inv&token=7", "123456789", NULL, NULL, 0,
         "lock: the query and the Fencing-Lock header differ"},
        {"lock=inv&token=7", NULL, "8", NULL, 0,
         "token: the query and the Fencing-Token header differ"},
        /* which message when several apply: the lock's before the token's, then the order
         * above (twice, encoding, differing, header length), then missing, then the number */
        {"token=%zz&lock=%zz", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"token=7&token=8&lock=%zz", NULL, NULL, NULL, 0,
         "lock: bad percent-encoding, or longer than 8 bytes"},
        {"token=%zz&lock=a&lock=b", NULL, NULL, NULL, 0, "lock given twice"},
        {"lock=a&token=%zz", "b", NULL, NULL, 0,
         "lock: the query and the Fencing-Lock header differ"},
        {"token=x", "TWICE", NULL, NULL, 0, "lock given twice"},
        {"lock=&token=x", NULL, NULL, NULL, 0,
         "missing lock (lock=NAME or the Fencing-Lock header)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char name[8], err[256];
        bool twl = cases[i].hl && !strcmp(cases[i].hl, "TWICE");
        bool twt = cases[i].ht && !strcmp(cases[i].ht, "TWICE");
        struct hapi_fence f = {.query = cases[i].q,
                               .hlock = cases[i].hl,
                               .hlock_len = twl           ? OLD_TWICE
                                            : cases[i].hl ? strlen(cases[i].hl)
                                                          : 0,
                               .htoken = cases[i].ht,
                               .htoken_len = twt           ? OLD_TWICE
                                             : cases[i].ht ? strlen(cases[i].ht)
                                                           : 0,
                               .name = name,
                               .cap = sizeof(name)};
        err[0] = '\0';
        int rc = hapi_fence_args(&f, err, sizeof(err));
        size_t nl = cases[i].name ? (cases[i].name[0] ? strlen(cases[i].name) : 1) : 0;
        bool ok = cases[i].name ? rc == 0 && f.name_len == nl && !memcmp(name, cases[i].name, nl) &&
                                      f.token == cases[i].token
                                : rc == -1 && !strcmp(err, cases[i].err);
        if (!ok)
            fprintf(stderr, "  fence case %zu '%s': rc %d, err '%s'\n", i, cases[i].q, rc, err);
        CHECK(ok);
        CHECK(fence_agrees(&f));
    }
}

/* Many random requests built from the parameters' own pieces (names, '=', '&', good and bad
 * escapes, numbers, over-long values) with random headers: the old code and hapi_fence_args
 * agree on every one (seeded: a failure replays). */
TEST(test_fence_args_agree_with_the_old_parser)
{
    static const char *piece[] = {
        "lock",
        "token",
        "lock=",
        "token=",
        "Lock=",
        "lockx=",
        "lock==",
        "=",
        "&",
        "&&",
        "%",
        "%4",
        "%41",
        "%zz",
        "%3D",
        "%26",
        "%2B",
        "+",
        "1",
        "7",
        "0",
        "-",
        "inv",
        "abcdefghi",
        "x",
        "%31",
        "stale",
        "other=",
        "%00",
        "18446744073709551615",
        "18446744073709551616",
        "0000000000000000000000000000001",
        "00000000000000000000000000000001",
        " ",
    };
    static const char *hdr[] = {NULL,
                                NULL,
                                NULL,
                                "",
                                "inv",
                                "7",
                                "x",
                                "abc",
                                "1",
                                "a%41",
                                "123456789",
                                "TWICE",
                                "0000000000000000000000000000001",
                                "00000000000000000000000000000001"};
    const size_t np = sizeof(piece) / sizeof(piece[0]), nh = sizeof(hdr) / sizeof(hdr[0]);
    uint64_t x = 0x5eed0f1ce;
    size_t differ = 0, accepted = 0;
    for (int i = 0; i < 300000; i++) {
        char q[512] = "", name[8];
        size_t len = 0, k = test_rnd(&x) % 10;
        for (size_t j = 0; j < k; j++) {
            const char *p = piece[test_rnd(&x) % np];
            size_t pl = strlen(p);
            memcpy(q + len, p, pl + 1);
            len += pl;
        }
        const char *hl = hdr[test_rnd(&x) % nh], *ht = hdr[test_rnd(&x) % nh];
        bool twl = hl && !strcmp(hl, "TWICE"), twt = ht && !strcmp(ht, "TWICE");
        struct hapi_fence f = {.query = q,
                               .hlock = hl,
                               .hlock_len = twl  ? OLD_TWICE
                                            : hl ? strlen(hl)
                                                 : 0,
                               .htoken = ht,
                               .htoken_len = twt  ? OLD_TWICE
                                             : ht ? strlen(ht)
                                                  : 0,
                               .name = name,
                               .cap = sizeof(name)};
        char err[256];
        accepted += hapi_fence_args(&f, err, sizeof(err)) == 0;
        if (!fence_agrees(&f) && ++differ >= 10)
            break;
    }
    fprintf(stderr, "  300000 random requests, %zu accepted\n", accepted);
    CHECK_EQ_U64(differ, 0);
    CHECK(accepted > 1000); /* the pieces do make valid requests too */
}

/* The policy itself: HAPI_QM_IGNORE_UNKNOWN skips what HAPI_QM_STRICT refuses, and nothing else
 * differs between the two. */
TEST(test_query_mode_ignore_unknown)
{
    char r[8], err[128];
    struct hapi_query q = {.reason = r};
    CHECK(hapi_parse_query_mode("color=red&reason=x", HAPI_Q_REVOKE, HAPI_QM_STRICT, &q, sizeof(r),
                                err, sizeof(err)) == -1);
    CHECK(hapi_parse_query_mode("color=red&reason=x", HAPI_Q_REVOKE, HAPI_QM_IGNORE_UNKNOWN, &q,
                                sizeof(r), err, sizeof(err)) == 0);
    CHECK(q.reason_len == 1 && r[0] == 'x' && q.seen == HAPI_Q_REASON);
    /* a bare name is a parameter (empty value) under STRICT, skipped under IGNORE_UNKNOWN */
    CHECK(hapi_parse_query_mode("reason&reason=x", HAPI_Q_REVOKE, HAPI_QM_STRICT, &q, sizeof(r),
                                err, sizeof(err)) == -1);
    CHECK(strcmp(err, "reason given twice") == 0);
    CHECK(hapi_parse_query_mode("reason&reason=x", HAPI_Q_REVOKE, HAPI_QM_IGNORE_UNKNOWN, &q,
                                sizeof(r), err, sizeof(err)) == 0);
    CHECK(q.reason_len == 1 && r[0] == 'x');
    /* the rest is the same rule in both: twice, bad values, over-long texts */
    for (int m = HAPI_QM_STRICT; m <= HAPI_QM_IGNORE_UNKNOWN; m++) {
        const char *bad[] = {"reason=a&reason=b", "deadline=0", "reason=%zz", "reason=123456789",
                             "deadline=%31"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            CHECK(hapi_parse_query_mode(bad[i], HAPI_Q_REVOKE, (enum hapi_qmode)m, &q, sizeof(r),
                                        err, sizeof(err)) == -1);
        /* a repeated parameter is refused at its first pair, before its value is read */
        CHECK(hapi_parse_query_mode("deadline=0&deadline=1", HAPI_Q_REVOKE, (enum hapi_qmode)m, &q,
                                    sizeof(r), err, sizeof(err)) == -1);
        CHECK(strcmp(err, "deadline given twice") == 0);
    }
    /* a route's parameters only: another route's names are unknown to it */
    CHECK(hapi_parse_query_mode("lock=a", HAPI_Q_READS, HAPI_QM_STRICT, &q, sizeof(r), err,
                                sizeof(err)) == -1);
    char l[8];
    q.lock = l;
    CHECK(hapi_parse_query_mode("limit=0&lock=a&token=1", HAPI_Q_LOCK, HAPI_QM_IGNORE_UNKNOWN, &q,
                                sizeof(l), err, sizeof(err)) == 0);
    CHECK(q.lock_len == 1 && l[0] == 'a' && q.seen == HAPI_Q_LOCK && q.token_len == 0);
}

TEST(test_basic_credentials)
{
    char u[8], pw[8];
    size_t ul = 0, pl = 0;
    /* "al:se:c" -> user al, password se:c (the first colon splits) */
    CHECK(hapi_basic_decode("Basic YWw6c2U6Yw==", 18, u, sizeof(u), &ul, pw, sizeof(pw), &pl) == 0);
    CHECK(ul == 2 && memcmp(u, "al", 2) == 0 && pl == 4 && memcmp(pw, "se:c", 4) == 0);
    CHECK(hapi_basic_decode("bAsIc  YTo=", 11, u, sizeof(u), &ul, pw, sizeof(pw), &pl) == 0);
    CHECK(ul == 1 && pl == 0);
    const char *bad[] = {"Bearer YTpi", "Basic", "Basic ", "Basic YTpi=", "Basic Y*pi",
                         "Basic YWJj", "Basic OmI=", "Basic YT=i", "Basic =Tpi", "BasicYTpi",
                         "Basic YTpi YTpi",
                         /* a user over the cap (9 bytes: "123456789:") */
                         "Basic MTIzNDU2Nzg5Og=="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (hapi_basic_decode(bad[i], strlen(bad[i]), u, sizeof(u), &ul, pw, sizeof(pw), &pl) !=
            -1) {
            fprintf(stderr, "  accepted %s\n", bad[i]);
            CHECK(0);
        }
}

int main(void)
{
    RUN(test_routes_and_their_names);
    RUN(test_query_parameters);
    RUN(test_revoke_query_cases);
    RUN(test_fence_args_cases);
    RUN(test_fence_args_agree_with_the_old_parser);
    RUN(test_query_mode_ignore_unknown);
    RUN(test_basic_credentials);
    TEST_MAIN_END();
}
