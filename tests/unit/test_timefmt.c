/* SPDX-License-Identifier: Apache-2.0 */
/* test_timefmt.c — the one RFC 3339 formatter (src/common/timefmt.c): UTC, milliseconds, 'Z',
 * always 24 bytes; the bytes the audit log and the JSON log have always written. */
#include "common/timefmt.h"
#include "test.h"

#define IS(ms, want)                                                                               \
    do {                                                                                           \
        char t_[TIME_RFC3339_BUF];                                                                 \
        memset(t_, 'x', sizeof t_);                                                                \
        CHECK(time_rfc3339(t_, (ms)) == 0);                                                        \
        CHECK(strcmp(t_, (want)) == 0);                                                            \
    } while (0)

TEST(test_time_is_rfc3339_utc_with_milliseconds)
{
    IS(0, "1970-01-01T00:00:00.000Z");
    IS(1796446839123ull, "2026-12-05T05:00:39.123Z");
    IS(1, "1970-01-01T00:00:00.001Z");
}

TEST(test_leap_days_and_year_ends)
{
    IS(951782400007ull, "2000-02-29T00:00:00.007Z");  /* 2000 is a leap year (divisible by 400) */
    IS(4107542399999ull, "2100-02-28T23:59:59.999Z"); /* 2100 is not a leap year: */
    IS(4107542400000ull, "2100-03-01T00:00:00.000Z"); /* the next ms is March 1 */
    IS(1709164800000ull, "2024-02-29T00:00:00.000Z");
    IS(1735689599999ull, "2024-12-31T23:59:59.999Z");
    IS(1735689600000ull, "2025-01-01T00:00:00.000Z");
}

TEST(test_milliseconds_are_truncated_never_carried)
{
    IS(999, "1970-01-01T00:00:00.999Z"); /* not rounded up into the next second */
    IS(59999, "1970-01-01T00:00:59.999Z");
    IS(1000, "1970-01-01T00:00:01.000Z");
}

TEST(test_the_last_representable_year_and_past_it)
{
    IS(253402300799999ull, "9999-12-31T23:59:59.999Z");
    char t[TIME_RFC3339_BUF];
    CHECK(time_rfc3339(t, 253402300800000ull) == -1); /* year 10000 */
    CHECK(strcmp(t, TIME_RFC3339_NONE) == 0);
    CHECK(time_rfc3339(t, UINT64_MAX) == -1);
    CHECK(strcmp(t, TIME_RFC3339_NONE) == 0);
    CHECK(strlen(TIME_RFC3339_NONE) == TIME_RFC3339_LEN);
}

int main(void)
{
    RUN(test_time_is_rfc3339_utc_with_milliseconds);
    RUN(test_leap_days_and_year_ends);
    RUN(test_milliseconds_are_truncated_never_carried);
    RUN(test_the_last_representable_year_and_past_it);
    TEST_MAIN_END();
}
