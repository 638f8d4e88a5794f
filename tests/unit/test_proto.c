/* SPDX-License-Identifier: Apache-2.0 */
/* test_proto.c — the one "host:port" parser (src/common/addr.c). */
#include "common/proto.h"
#include "test.h"

static int parse(const char *s, char *host, int *port)
{
    return proto_addr_parse(s, strlen(s), host, PROTO_ADDR_BUF, port);
}

TEST(test_plain_and_bracketed_addresses_parse)
{
    char host[PROTO_ADDR_BUF];
    int port = 0;
    CHECK(parse("127.0.0.1:7000", host, &port) == 0);
    CHECK(strcmp(host, "127.0.0.1") == 0);
    CHECK_EQ_U64(port, 7000);
    CHECK(parse("localhost:1", host, &port) == 0 && port == 1 && strcmp(host, "localhost") == 0);
    CHECK(parse("h:65535", host, &port) == 0 && port == 65535);
    CHECK(parse("[::1]:6379", host, &port) == 0);
    CHECK(strcmp(host, "::1") == 0);
    CHECK_EQ_U64(port, 6379);
}

TEST(test_malformed_addresses_are_refused)
{
    static const char *bad[] = {
        "",          ":7000",    "host",     "host:",       "host:0",      "host:65536",
        "host:-1",   "host:+80", "host:8 0", "host:123456", "host:80a",    "::1:7000",
        "[::1:7000", "[]:7000",  "ho st:80", "host\t:80",   "[::1]x:7000", "a]:80",
    };
    char host[PROTO_ADDR_BUF];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int port = -7;
        if (parse(bad[i], host, &port) != -1) {
            fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
            CHECK(0);
        }
        CHECK(!proto_addr_valid(bad[i], strlen(bad[i])));
    }
}

TEST(test_length_is_respected_without_a_nul)
{
    const char s[] = "10.0.0.1:80XYZ";
    char host[PROTO_ADDR_BUF];
    int port;
    CHECK(proto_addr_parse(s, 11, host, sizeof(host), &port) == 0 && port == 80);
    CHECK(proto_addr_parse(s, 12, host, sizeof(host), &port) == -1);
}

TEST(test_host_must_fit_and_address_limit_holds)
{
    char host[8];
    int port;
    CHECK(proto_addr_parse("abcdefg:1", 9, host, sizeof(host), &port) == 0);
    CHECK(proto_addr_parse("abcdefgh:1", 10, host, sizeof(host), &port) == -1);
    char a[PROTO_ADDR_MAX + 2];
    memset(a, 'h', sizeof(a));
    memcpy(a + PROTO_ADDR_MAX - 3, ":99", 3); /* exactly PROTO_ADDR_MAX bytes */
    CHECK(proto_addr_valid(a, PROTO_ADDR_MAX));
    memcpy(a + PROTO_ADDR_MAX - 2, ":99", 3); /* one byte over */
    CHECK(!proto_addr_valid(a, PROTO_ADDR_MAX + 1));
}

TEST(test_format_is_the_inverse_of_parse)
{
    static const char *addrs[] = {"127.0.0.1:7480", "[::1]:6379", "[fe80::1%eth0]:1", "h:65535"};
    char host[PROTO_ADDR_BUF], out[PROTO_ADDR_BUF];
    for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
        int port;
        CHECK(parse(addrs[i], host, &port) == 0);
        int n = proto_addr_format(out, sizeof(out), host, port);
        CHECK(n == (int)strlen(addrs[i]) && strcmp(out, addrs[i]) == 0);
    }
    CHECK(proto_addr_format(out, 8, "abc", 7480) == -1); /* "abc:7480" needs 9 bytes */
    CHECK(proto_addr_format(out, 9, "abc", 7480) == 8 && strcmp(out, "abc:7480") == 0);
}

TEST(test_error_words_are_the_wire_spelling)
{
    /* clients and scripts match these bytes: a rename would break them */
    CHECK(strcmp(PROTO_NOTLEADER " x", "NOTLEADER x") == 0);
    CHECK(strcmp(PROTO_NOSESSION PROTO_STALE PROTO_NOTHOLDER PROTO_IFREV PROTO_NOSPACE,
                 "NOSESSIONSTALENOTHOLDERIFREVNOSPACE") == 0);
    CHECK(strcmp(PROTO_NOLEADER PROTO_UNKNOWN PROTO_TOOLARGE PROTO_NOPROTO PROTO_ERR,
                 "NOLEADERUNKNOWNTOOLARGENOPROTOERR") == 0);
}

int main(void)
{
    RUN(test_plain_and_bracketed_addresses_parse);
    RUN(test_malformed_addresses_are_refused);
    RUN(test_length_is_respected_without_a_nul);
    RUN(test_host_must_fit_and_address_limit_holds);
    RUN(test_format_is_the_inverse_of_parse);
    RUN(test_error_words_are_the_wire_spelling);
    TEST_MAIN_END();
}
