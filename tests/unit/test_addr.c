/* SPDX-License-Identifier: Apache-2.0 */
/* test_addr.c — an IP-literal "host:port" as a socket address (src/common/addr.c): one IPv6
 * rule (bracketed in text, bare once split), ports 1..65535 in text, no name resolution. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/addr.h"
#include "test.h"

static int parse(const char *s, struct sockaddr_storage *ss)
{
    return addr_ip_parse(s, strlen(s), ss);
}

TEST(test_ipv4_host_port_is_an_inet_address)
{
    struct sockaddr_storage ss;
    CHECK(parse("127.0.0.1:80", &ss) == 0);
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
    CHECK(in4->sin_family == AF_INET);
    CHECK_EQ_U64(ntohs(in4->sin_port), 80);
    CHECK_EQ_U64(ntohl(in4->sin_addr.s_addr), 0x7f000001);
    CHECK(addr_ip_len(&ss) == sizeof(struct sockaddr_in));
    CHECK(parse("0.0.0.0:65535", &ss) == 0);
    CHECK_EQ_U64(ntohs(in4->sin_port), 65535);
}

TEST(test_bracketed_ipv6_is_an_inet6_address)
{
    struct sockaddr_storage ss;
    CHECK(parse("[::1]:80", &ss) == 0);
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    CHECK(in6->sin6_family == AF_INET6);
    CHECK_EQ_U64(ntohs(in6->sin6_port), 80);
    CHECK(memcmp(&in6->sin6_addr, &in6addr_loopback, sizeof in6addr_loopback) == 0);
    CHECK(addr_ip_len(&ss) == sizeof(struct sockaddr_in6));
    CHECK(parse("[fe80::1%1]:7000", &ss) == 0); /* a zone given as an index */
    CHECK_EQ_U64(in6->sin6_scope_id, 1);
}

TEST(test_unbracketed_ipv6_text_is_refused)
{
    struct sockaddr_storage ss;
    CHECK(parse("::1:80", &ss) == -1); /* which colon ends the host? the grammar says none */
    CHECK(parse("[::1:80", &ss) == -1);
}

TEST(test_names_are_not_resolved)
{
    struct sockaddr_storage ss;
    CHECK(parse("localhost:1", &ss) == -1);
    CHECK(addr_ip_sockaddr("localhost", 1, &ss) == -1);
    CHECK(addr_ip_sockaddr("not-an-ip", 0, &ss) == -1);
}

TEST(test_bad_ports_are_refused)
{
    struct sockaddr_storage ss;
    CHECK(parse("127.0.0.1:0", &ss) == -1); /* text: 1..65535 */
    CHECK(parse("127.0.0.1:65536", &ss) == -1);
    CHECK(parse("127.0.0.1:", &ss) == -1);
    CHECK(parse("127.0.0.1:-1", &ss) == -1);
    CHECK(parse("127.0.0.1:+80", &ss) == -1);
    CHECK(parse("127.0.0.1", &ss) == -1);
    CHECK(addr_ip_sockaddr("127.0.0.1", -1, &ss) == -1);
    CHECK(addr_ip_sockaddr("127.0.0.1", 65536, &ss) == -1);
}

TEST(test_a_split_host_is_ipv6_when_it_parses_as_one)
{
    struct sockaddr_storage ss;
    CHECK(addr_ip_sockaddr("::1", 0, &ss) == 0); /* port 0: any free port, for a listener */
    CHECK(ss.ss_family == AF_INET6);
    CHECK(addr_ip_sockaddr("127.0.0.1", 0, &ss) == 0);
    CHECK(ss.ss_family == AF_INET);
    CHECK(addr_ip_sockaddr("[::1]", 80, &ss) == -1); /* brackets belong to the text form */
    CHECK(addr_ip_sockaddr("", 80, &ss) == -1);
    CHECK(addr_ip_sockaddr(NULL, 80, &ss) == -1);
}

TEST(test_ip_bytes_count_a_mapped_ipv4_address_as_ipv4)
{
    unsigned char b[16];
    CHECK(addr_ip_bytes("10.1.2.3", b) == 4 && b[0] == 10 && b[3] == 3);
    CHECK(addr_ip_bytes("::ffff:127.0.0.9", b) == 4 && b[0] == 127 && b[3] == 9);
    CHECK(addr_ip_bytes("::1", b) == 16 && b[15] == 1 && b[0] == 0);
    CHECK(addr_ip_bytes("2001:db8::1", b) == 16 && b[0] == 0x20 && b[1] == 0x01);
    CHECK(addr_ip_bytes("localhost", b) == 0);
    CHECK(addr_ip_bytes("[::1]", b) == 0); /* text with brackets is not a bare literal */
    CHECK(addr_ip_bytes("", b) == 0);
}

int main(void)
{
    RUN(test_ipv4_host_port_is_an_inet_address);
    RUN(test_bracketed_ipv6_is_an_inet6_address);
    RUN(test_unbracketed_ipv6_text_is_refused);
    RUN(test_names_are_not_resolved);
    RUN(test_bad_ports_are_refused);
    RUN(test_a_split_host_is_ipv6_when_it_parses_as_one);
    RUN(test_ip_bytes_count_a_mapped_ipv4_address_as_ipv4);
    TEST_MAIN_END();
}
