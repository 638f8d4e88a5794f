/* SPDX-License-Identifier: Apache-2.0 */
/* test_trace.c — the W3C traceparent parser and printer (src/common/trace.c): only the exact
 * version-00 text form is accepted, and what is accepted prints back byte for byte. */
#include "common/trace.h"
#include "test.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int parses(const char *s)
{
    struct trace_ctx t;
    return trace_parse(s, strlen(s), &t) == 0;
}

TEST(a_valid_traceparent_parses_and_prints_back_the_same)
{
    struct trace_ctx t;
    char out[TRACE_TEXT_LEN + 1];
    CHECK(trace_parse(GOOD, strlen(GOOD), &t) == 0);
    CHECK(t.b[0] == 0 && t.b[1] == 0x4b && t.b[16] == 0x36 && t.b[17] == 0x00 && t.b[25] == 1);
    trace_format(&t, out);
    CHECK(strcmp(out, GOOD) == 0);
    CHECK(trace_bin_valid(t.b));
    CHECK(parses("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")); /* not sampled */
}

TEST(anything_but_the_exact_form_is_refused_and_leaves_the_output_alone)
{
    static const char *const bad[] = {
        "",
        GOOD "-",
        " " GOOD,
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", /* upper case */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* another version */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* the invalid one */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", /* zero parent id */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* separator */
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", /* not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct trace_ctx t;
        memset(&t, 0xaa, sizeof(t));
        CHECK(trace_parse(bad[i], strlen(bad[i]), &t) == -1);
        CHECK(t.b[0] == 0xaa && t.b[25] == 0xaa);
    }
    uint8_t b[TRACE_BIN_LEN] = {0};
    CHECK(!trace_bin_valid(b));
    b[1] = 1;
    CHECK(!trace_bin_valid(b)); /* parent id still zero */
    b[17] = 1;
    CHECK(trace_bin_valid(b));
    b[0] = 1;
    CHECK(!trace_bin_valid(b));
}

int main(void)
{
    RUN(a_valid_traceparent_parses_and_prints_back_the_same);
    RUN(anything_but_the_exact_form_is_refused_and_leaves_the_output_alone);
    TEST_MAIN_END();
}
