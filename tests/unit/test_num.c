/* SPDX-License-Identifier: Apache-2.0 */
/* test_num.c — the one decimal parser (src/common/num.c): every byte a digit, the whole
 * string, no sign or space, no wrap-around, bounds inclusive; and the callers' bounds that
 * wrap it (resp_parse_u64). */
#include "common/num.h"
#include "common/resp.h"
#include "test.h"

static int parse(const char *s, uint64_t *v)
{
    return num_parse_u64(s, strlen(s), v);
}

TEST(test_plain_digits_are_read_whole)
{
    uint64_t v = 7;
    CHECK(parse("0", &v) == 0);
    CHECK_EQ_U64(v, 0);
    CHECK(parse("1", &v) == 0);
    CHECK_EQ_U64(v, 1);
    CHECK(parse("1234567890", &v) == 0);
    CHECK_EQ_U64(v, 1234567890);
}

TEST(test_leading_zeros_are_read)
{
    uint64_t v = 0;
    CHECK(parse("007", &v) == 0);
    CHECK_EQ_U64(v, 7);
    CHECK(parse("0000000000000000000000000018446744073709551615", &v) == 0);
    CHECK_EQ_U64(v, UINT64_MAX);
}

TEST(test_the_largest_u64_is_read_and_one_more_is_refused)
{
    uint64_t v = 0;
    CHECK(parse("18446744073709551615", &v) == 0);
    CHECK_EQ_U64(v, UINT64_MAX);
    v = 5;
    CHECK(parse("18446744073709551616", &v) == -1);
    CHECK(parse("18446744073709551620", &v) == -1);
    CHECK(parse("99999999999999999999", &v) == -1);
    CHECK(parse("184467440737095516150", &v) == -1);
    CHECK_EQ_U64(v, 5); /* untouched on error */
}

TEST(test_anything_but_digits_is_refused)
{
    static const char *const bad[] = {"",    "-1",  "+1",  " 1", "1 ", "\t1", "1\n", "0x10",
                                      "1e3", "1.0", "1_0", "a",  "1a", "-0",  "+0",  "١"};
    uint64_t v = 5;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(bad[i], &v) == -1);
    CHECK_EQ_U64(v, 5);
    CHECK(num_parse_u64(NULL, 0, &v) == -1);
    CHECK(num_parse_u64_str(NULL, 0, UINT64_MAX, &v) == -1);
}

TEST(test_length_not_nul_ends_the_number)
{
    uint64_t v = 0;
    CHECK(num_parse_u64("123456", 3, &v) == 0);
    CHECK_EQ_U64(v, 123);
    CHECK(num_parse_u64("12\0"
                        "3",
                        4, &v) == -1); /* a NUL inside is not a digit */
}

TEST(test_bounds_are_inclusive)
{
    uint64_t v = 0;
    CHECK(num_parse_u64_str("1", 1, 10, &v) == 0);
    CHECK_EQ_U64(v, 1);
    CHECK(num_parse_u64_str("10", 1, 10, &v) == 0);
    CHECK_EQ_U64(v, 10);
    v = 5;
    CHECK(num_parse_u64_str("0", 1, 10, &v) == -1);
    CHECK(num_parse_u64_str("11", 1, 10, &v) == -1);
    CHECK(num_parse_u64_str("18446744073709551616", 0, UINT64_MAX, &v) == -1);
    CHECK_EQ_U64(v, 5);
    CHECK(num_parse_u64_in("42", 2, 42, 42, &v) == 0);
    CHECK_EQ_U64(v, 42);
}

TEST(test_a_resp_integer_stops_at_int64_max)
{
    uint64_t v = 0;
    CHECK(resp_parse_u64("9223372036854775807", 19, &v) == 0);
    CHECK_EQ_U64(v, INT64_MAX);
    CHECK(resp_parse_u64("9223372036854775808", 19, &v) == -1);
    CHECK(resp_parse_u64("-1", 2, &v) == -1);
    CHECK(resp_parse_u64("", 0, &v) == -1);
}

int main(void)
{
    RUN(test_plain_digits_are_read_whole);
    RUN(test_leading_zeros_are_read);
    RUN(test_the_largest_u64_is_read_and_one_more_is_refused);
    RUN(test_anything_but_digits_is_refused);
    RUN(test_length_not_nul_ends_the_number);
    RUN(test_bounds_are_inclusive);
    RUN(test_a_resp_integer_stops_at_int64_max);
    TEST_MAIN_END();
}
