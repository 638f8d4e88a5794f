/* SPDX-License-Identifier: Apache-2.0 */
/* test_notify.c — sd_notify's parts that need no server (src/server/obs/notify.c): which
 * $WATCHDOG_USEC / $WATCHDOG_PID pairs turn the watchdog on, a STATUS line sent only when it
 * changes; and the journal test of the log (src/common/log.c): $JOURNAL_STREAM must name the
 * file stderr is. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "server/obs/notify.h"
#include "test.h"

TEST(test_watchdog_usec_for_this_pid_only)
{
    CHECK_EQ_U64(notify_watchdog_usec("30000000", NULL, 42), 30000000);
    CHECK_EQ_U64(notify_watchdog_usec("30000000", "", 42), 30000000);
    CHECK_EQ_U64(notify_watchdog_usec("30000000", "42", 42), 30000000);
    CHECK_EQ_U64(notify_watchdog_usec("30000000", "43", 42), 0); /* inherited by a child */
    CHECK_EQ_U64(notify_watchdog_usec(NULL, NULL, 42), 0);
    CHECK_EQ_U64(notify_watchdog_usec("0", NULL, 42), 0);
    CHECK_EQ_U64(notify_watchdog_usec("-1", NULL, 42), 0);
    CHECK_EQ_U64(notify_watchdog_usec("30s", NULL, 42), 0);
    CHECK_EQ_U64(notify_watchdog_usec("30000000", "x", 42), 0);
}

/* A bound datagram socket under /tmp and a notify aimed at it. */
struct nfx {
    int fd;
    char path[64];
    struct notify n;
};

static int nfx_setup(struct nfx *f)
{
    notify_init(&f->n);
    snprintf(f->path, sizeof f->path, "/tmp/fl-notify-test-%ld", (long)getpid());
    unlink(f->path);
    f->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", f->path);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof a))
        return -1;
    return notify_open(&f->n, f->path);
}

static void nfx_teardown(struct nfx *f)
{
    notify_close(&f->n);
    if (f->fd >= 0)
        close(f->fd);
    unlink(f->path);
}

/* The next datagram as a string ("" when none is queued). */
static const char *next(struct nfx *f)
{
    static char buf[512];
    ssize_t n = recv(f->fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

TEST_F(nfx, test_status_is_sent_when_it_changes)
{
    CHECK(notify_status(&fx->n, "waiting for a quorum") == 0);
    CHECK(!strcmp(next(fx), "STATUS=waiting for a quorum\n"));
    CHECK(notify_status(&fx->n, "waiting for a quorum") == 0);
    CHECK(!strcmp(next(fx), ""));
    CHECK(notify_ready(&fx->n, "ready, leader is node 2") == 0);
    CHECK(!strcmp(next(fx), "READY=1\nSTATUS=ready, leader is node 2\n"));
    CHECK(notify_status(&fx->n, "ready, leader is node 2") == 0); /* READY's counts */
    CHECK(!strcmp(next(fx), ""));
    CHECK(notify_watchdog(&fx->n) == 0);
    CHECK(!strcmp(next(fx), "WATCHDOG=1\n"));
}

TEST(test_off_notify_sends_nothing)
{
    struct notify n;
    CHECK(notify_open(&n, NULL) == 0);
    CHECK(notify_status(&n, "x") == 0);
    CHECK(notify_watchdog(&n) == 0);
}

TEST(test_journal_stream_must_name_stderr)
{
    char path[] = "/tmp/fl-journal-test-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    int saved = dup(STDERR_FILENO);
    CHECK(saved >= 0 && dup2(fd, STDERR_FILENO) >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    char good[64], other[64];
    snprintf(good, sizeof good, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    snprintf(other, sizeof other, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + 1);
    bool is = log_stderr_is_journal(good), not_other = !log_stderr_is_journal(other),
         not_null = !log_stderr_is_journal(NULL), not_junk = !log_stderr_is_journal("12"),
         not_sign = !log_stderr_is_journal("-1:2");
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    unlink(path);
    CHECK(is);
    CHECK(not_other);
    CHECK(not_null);
    CHECK(not_junk);
    CHECK(not_sign);
}

int main(void)
{
    RUN(test_watchdog_usec_for_this_pid_only);
    RUN_F(nfx, test_status_is_sent_when_it_changes);
    RUN(test_off_notify_sends_nothing);
    RUN(test_journal_stream_must_name_stderr);
    TEST_MAIN_END();
}
