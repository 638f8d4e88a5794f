/* SPDX-License-Identifier: Apache-2.0 */
/* test_http_api.c — the HTTP API's pure parsing (server/obs/http_args.c): which route a path
 * names and the name or id it carries, percent-decoding, the query parameters (unknown, twice,
 * bad numbers refused), ?stale, POST .../revoke's parameters through the same parser (the table
 * of what revoke's own parser accepted and refused), and the HTTP Basic credentials (good, and
 * every malformed form refused). */
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
    RUN(test_basic_credentials);
    TEST_MAIN_END();
}
