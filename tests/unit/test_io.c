/* SPDX-License-Identifier: Apache-2.0 */
/* test_io.c — io_write_all (src/common/io.c): every byte reaches the descriptor, through a pipe
 * larger than its buffer too, and a failure is reported with errno, never as success. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/io.h"
#include "test.h"

#define BIG (1u << 20) /* 16 times a default pipe buffer: the writer must block and resume */

TEST(test_a_whole_buffer_reaches_a_file)
{
    char path[] = "/tmp/test_io_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    CHECK(io_write_all(fd, "hello", 5) == 0);
    CHECK(io_write_all(fd, "", 0) == 0);
    char got[8] = {0};
    CHECK(pread(fd, got, sizeof got, 0) == 5);
    close(fd);
    CHECK(memcmp(got, "hello", 5) == 0);
}

TEST(test_more_than_a_pipe_holds_arrives_in_order)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) { /* the reader: checks every byte, exit status 0 when all BIG arrived */
        close(p[1]);
        size_t n = 0;
        char b[4096];
        ssize_t r;
        while ((r = read(p[0], b, sizeof b)) > 0)
            for (ssize_t i = 0; i < r; i++, n++)
                if ((unsigned char)b[i] != (unsigned char)(n * 7))
                    _exit(2);
        _exit(n == BIG ? 0 : 1);
    }
    close(p[0]);
    unsigned char *buf = malloc(BIG);
    CHECK(buf);
    for (size_t i = 0; i < BIG; i++)
        buf[i] = (unsigned char)(i * 7);
    int rc = io_write_all(p[1], buf, BIG);
    close(p[1]);
    free(buf);
    int st = -1;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(rc == 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(test_a_bad_descriptor_is_an_error_with_errno)
{
    errno = 0;
    CHECK(io_write_all(-1, "x", 1) == -1);
    CHECK(errno == EBADF);
    int p[2];
    CHECK(pipe(p) == 0);
    close(p[0]); /* no reader: EPIPE (SIGPIPE ignored below) */
    CHECK(io_write_all(p[1], "x", 1) == -1);
    CHECK(errno == EPIPE);
    close(p[1]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_a_whole_buffer_reaches_a_file);
    RUN(test_more_than_a_pipe_holds_arrives_in_order);
    RUN(test_a_bad_descriptor_is_an_error_with_errno);
    TEST_MAIN_END();
}
