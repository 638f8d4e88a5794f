/* SPDX-License-Identifier: Apache-2.0 */
/* test_env.c — env_take (src/common/env.c): copied whole or not at all, and always gone. */
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "test.h"

TEST(a_taken_value_is_copied_and_the_variable_is_gone)
{
    char out[16];
    setenv("FL_TEST_SECRET", "hunter2", 1);
    char *raw = getenv("FL_TEST_SECRET");
    CHECK_EQ_U64(env_take("FL_TEST_SECRET", out, sizeof out), 7);
    CHECK(strcmp(out, "hunter2") == 0);
    CHECK(getenv("FL_TEST_SECRET") == NULL);
    CHECK(raw[0] == '\0'); /* setenv's copy: its bytes were zeroed in place */
}

TEST(a_value_that_does_not_fit_is_not_copied_but_still_removed)
{
    char out[4] = "old";
    setenv("FL_TEST_SECRET", "four", 1);
    CHECK(env_take("FL_TEST_SECRET", out, sizeof out) == -2);
    CHECK(strcmp(out, "old") == 0);
    CHECK(getenv("FL_TEST_SECRET") == NULL);
    setenv("FL_TEST_SECRET", "abc", 1); /* exactly cap - 1 bytes fits */
    CHECK_EQ_U64(env_take("FL_TEST_SECRET", out, sizeof out), 3);
    CHECK(strcmp(out, "abc") == 0);
}

TEST(an_unset_variable_is_minus_one)
{
    char out[4] = "x";
    unsetenv("FL_TEST_SECRET");
    CHECK(env_take("FL_TEST_SECRET", out, sizeof out) == -1);
    CHECK(strcmp(out, "x") == 0);
}

int main(void)
{
    RUN(a_taken_value_is_copied_and_the_variable_is_gone);
    RUN(a_value_that_does_not_fit_is_not_copied_but_still_removed);
    RUN(an_unset_variable_is_minus_one);
    TEST_MAIN_END();
}
