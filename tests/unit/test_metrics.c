/* SPDX-License-Identifier: Apache-2.0 */
/* test_metrics.c — the pure parts of /metrics: per-command reply counts (src/server/cmd/cmdstat.c)
 * and the process_* figures parsed from /proc/self/stat text (src/server/obs/procstat.c). */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmdstat.h"
#include "server/obs/procstat.h"
#include "test.h"

static const char *names[] = {"PING", "LOCK"};
static const char *name_of(size_t i)
{
    return names[i];
}

TEST(test_a_reply_is_ok_unless_it_is_an_error_and_errors_go_by_their_word)
{
    CHECK_EQ_U64(cmdstat_result("+OK\r\n", 5), 0);
    CHECK_EQ_U64(cmdstat_result(":5\r\n", 4), 0);
    CHECK_EQ_U64(cmdstat_result("$-1\r\n", 5), 0);
    CHECK_EQ_U64(cmdstat_result("", 0), 0);
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-STALE token 3\r\n", 16)), "STALE") == 0);
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-NOTLEADER 1.2.3.4:5\r\n", 22)),
                 "NOTLEADER") == 0);
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-NOAUTH\r\n", 9)), "NOAUTH") == 0);
    /* a prefix of a word is not the word; an unknown word is "other" */
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-NOT x\r\n", 8)), "other") == 0);
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-ERRX\r\n", 7)), "other") == 0);
    CHECK(strcmp(cmdstat_result_name(cmdstat_result("-", 1)), "other") == 0);
}

TEST(test_counts_render_every_command_ok_and_errors_once_seen)
{
    struct cmdstat cs;
    CHECK(cmdstat_init(&cs, 2) == 0);
    cmdstat_count(&cs, 1, ":7\r\n", 4);
    cmdstat_count(&cs, 1, ":8\r\n", 4);
    cmdstat_count(&cs, 1, "-NOSESSION session 9 is not alive\r\n", 35);
    cmdstat_count(&cs, 2, "-ERR unknown command 'X'\r\n", 26);
    cmdstat_count(&cs, 99, "+OK\r\n", 5); /* out of range: counted as unknown */
    struct buf b;
    buf_init(&b);
    cmdstat_render(&cs, &b, name_of);
    CHECK(buf_put_u8(&b, 0) == 0);
    const char *t = b.p;
    CHECK(strstr(t, "fencelock_commands_total{command=\"PING\",result=\"ok\"} 0\n"));
    CHECK(strstr(t, "fencelock_commands_total{command=\"LOCK\",result=\"ok\"} 2\n"));
    CHECK(strstr(t, "fencelock_commands_total{command=\"LOCK\",result=\"NOSESSION\"} 1\n"));
    CHECK(strstr(t, "fencelock_commands_total{command=\"unknown\",result=\"ERR\"} 1\n"));
    CHECK(strstr(t, "fencelock_commands_total{command=\"unknown\",result=\"ok\"} 1\n"));
    CHECK(!strstr(t, "command=\"PING\",result=\"ERR\""));
    CHECK(strstr(t, "# TYPE fencelock_commands_total counter\n"));
    buf_free(&b);
    cmdstat_free(&cs);
}

TEST(test_proc_stat_fields_after_a_name_with_spaces_and_parens)
{
    /* pid (comm) state ppid ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24) ... */
    const char *stat = "42 (fence lockd) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 "
                       "1000 123456789 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1";
    struct procstat ps;
    CHECK(procstat_parse(stat, 1700000000, 100, 4096, &ps) == 0);
    CHECK(ps.cpu_seconds > 2.999 && ps.cpu_seconds < 3.001); /* (250 + 50) / 100 */
    CHECK(ps.start_seconds > 1700000009.999 && ps.start_seconds < 1700000010.001);
    CHECK_EQ_U64(ps.vsize, 123456789);
    CHECK_EQ_U64(ps.rss, 300 * 4096);
}

TEST(test_proc_stat_that_is_cut_short_or_has_no_name_is_refused)
{
    struct procstat ps;
    CHECK(procstat_parse("42 (x) S 1 2 3", 0, 100, 4096, &ps) == -1);
    CHECK(procstat_parse("42 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", 0, 100,
                         4096, &ps) == -1);
    CHECK(procstat_parse("1 (a) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 x 1", 0, 100, 4096,
                         &ps) == -1);
}

TEST(test_render_of_this_process_has_every_process_metric)
{
    struct buf b;
    buf_init(&b);
    procstat_render(&b);
    CHECK(buf_put_u8(&b, 0) == 0);
    const char *t = b.p;
    CHECK(strstr(t, "\nprocess_cpu_seconds_total "));
    CHECK(strstr(t, "\nprocess_resident_memory_bytes "));
    CHECK(strstr(t, "\nprocess_open_fds "));
    CHECK(strstr(t, "\nprocess_max_fds "));
    CHECK(strstr(t, "\nprocess_start_time_seconds "));
    buf_free(&b);
}

int main(void)
{
    RUN(test_a_reply_is_ok_unless_it_is_an_error_and_errors_go_by_their_word);
    RUN(test_counts_render_every_command_ok_and_errors_once_seen);
    RUN(test_proc_stat_fields_after_a_name_with_spaces_and_parens);
    RUN(test_proc_stat_that_is_cut_short_or_has_no_name_is_refused);
    RUN(test_render_of_this_process_has_every_process_metric);
    TEST_MAIN_END();
}
