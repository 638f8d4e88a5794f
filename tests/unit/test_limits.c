/* SPDX-License-Identifier: Apache-2.0 */
/* test_limits.c — the network an address's AUTH failures are also counted under
 * (srv_addr_prefix, src/server/security/limits.c), and the -WRONGPASS delay (auth_delay_ms). */
#include <string.h>

#include "server/server.h"
#include "test.h"

static void check_prefix(const char *addr, const char *want)
{
    char out[SRV_ADDR_BUF];
    srv_addr_prefix(addr, out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "  %s -> %s, want %s\n", addr, out, want);
    CHECK(strcmp(out, want) == 0);
}

TEST(test_ipv4_addresses_of_one_24_share_a_network)
{
    check_prefix("127.0.0.2", "127.0.0.0/24");
    check_prefix("127.0.0.3", "127.0.0.0/24");
    check_prefix("10.1.2.255", "10.1.2.0/24");
    check_prefix("10.1.3.1", "10.1.3.0/24");
}

TEST(test_ipv6_addresses_of_one_64_share_a_network)
{
    check_prefix("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64");
    check_prefix("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64");
    check_prefix("::1", "0:0:0:0::/64");
}

TEST(test_ipv4_mapped_ipv6_is_counted_as_its_ipv4_24)
{
    check_prefix("::ffff:192.0.2.7", "192.0.2.0/24");
}

TEST(test_text_that_is_no_address_is_its_own_key)
{
    check_prefix("?", "?");
    check_prefix("", "");
}

TEST(test_wrongpass_delay_doubles_up_to_its_cap)
{
    CHECK_EQ_U64(auth_delay_ms(1), AUTH_DELAY_MIN_MS);
    CHECK_EQ_U64(auth_delay_ms(2), 2 * AUTH_DELAY_MIN_MS);
    CHECK_EQ_U64(auth_delay_ms(100), AUTH_DELAY_MAX_MS);
}

int main(void)
{
    RUN(test_ipv4_addresses_of_one_24_share_a_network);
    RUN(test_ipv6_addresses_of_one_64_share_a_network);
    RUN(test_ipv4_mapped_ipv6_is_counted_as_its_ipv4_24);
    RUN(test_text_that_is_no_address_is_its_own_key);
    RUN(test_wrongpass_delay_doubles_up_to_its_cap);
    TEST_MAIN_END();
}
