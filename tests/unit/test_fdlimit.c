/* SPDX-License-Identifier: Apache-2.0 */
/* test_fdlimit.c — fitting --max-clients to RLIMIT_NOFILE (src/server/net/fdlimit.c). The tests
 * change this process's own limit, so they run in order: soft raised first, the hard limit
 * lowered (for good) last. */
#include <sys/resource.h>

#include "server/net/fdlimit.h"
#include "test.h"

static void set_limit(rlim_t soft, rlim_t hard)
{
    struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
}

TEST(test_reserve_counts_raft_connections_both_ways_and_http)
{
    CHECK_EQ_U64(fdlimit_reserve(16, 64), FDLIMIT_BASE_RESERVE + 32 + 64);
    CHECK_EQ_U64(fdlimit_reserve(3, 0), FDLIMIT_BASE_RESERVE + 6);
}

TEST(test_soft_limit_is_raised_up_to_what_is_needed)
{
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2000)
        return; /* this machine's hard limit is too low for the case */
    set_limit(200, rl.rlim_max);
    struct fdlimit f = {.wanted = 1000, .reserve = 100};
    CHECK(fdlimit_fit(&f) == 0);
    CHECK(f.raised);
    CHECK_EQ_U64(f.soft_before, 200);
    CHECK_EQ_U64(f.soft_after, 1100);
    CHECK_EQ_U64(f.effective, 1000);
}

TEST(test_enough_already_changes_nothing)
{
    struct fdlimit f = {.wanted = 10, .reserve = 10};
    CHECK(fdlimit_fit(&f) == 0);
    CHECK(!f.raised);
    CHECK_EQ_U64(f.effective, 10);
}

TEST(test_hard_limit_too_low_lowers_max_clients_to_what_fits)
{
    set_limit(150, 300);
    struct fdlimit f = {.wanted = 1000, .reserve = 100};
    CHECK(fdlimit_fit(&f) == 0);
    CHECK_EQ_U64(f.soft_after, 300);
    CHECK_EQ_U64(f.hard, 300);
    CHECK_EQ_U64(f.effective, 200);
}

TEST(test_no_room_for_one_client_is_an_error)
{
    struct fdlimit f = {.wanted = 1000, .reserve = 300};
    CHECK(fdlimit_fit(&f) == -1);
    CHECK_EQ_U64(f.effective, 0);
}

TEST(test_low_water_is_near_the_soft_limit_only)
{
    set_limit(100, 300);
    CHECK(!fdlimit_low(3));
    CHECK(!fdlimit_low(100 - FDLIMIT_LOW_WATER - 1));
    CHECK(fdlimit_low(100 - FDLIMIT_LOW_WATER));
    CHECK(fdlimit_low(99));
    CHECK(!fdlimit_low(-1));
}

int main(void)
{
    RUN(test_reserve_counts_raft_connections_both_ways_and_http);
    RUN(test_soft_limit_is_raised_up_to_what_is_needed);
    RUN(test_enough_already_changes_nothing);
    RUN(test_hard_limit_too_low_lowers_max_clients_to_what_fits);
    RUN(test_no_room_for_one_client_is_an_error);
    RUN(test_low_water_is_near_the_soft_limit_only);
    TEST_MAIN_END();
}
