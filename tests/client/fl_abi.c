/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_abi: an application of libfencelock.so as a user builds one (the public header only,
 * linked against the shared library), for tests/integration/test_abi.py. Each mode prints its
 * lines flushed at once; "FAIL ..." lines are checks it made itself that failed.
 *
 * fl_abi version
 *     the header's FL_VERSION_* and FL_VERSION against fl_version() of the library loaded:
 *     "header X.Y.Z library X.Y.Z"; exit 0 when they agree
 * fl_abi sigpipe EP BYTES
 *     SIGPIPE at its default action (this program never ignores it): fl_put of a small value,
 *     "ready ERR"; on a stdin line fl_put of BYTES bytes without a session: "put ERR MSG".
 *     The test's proxy closes the connection while that put is being written; the program
 *     must live to print the error and exit 0
 * fl_abi fork EP
 *     fork() with a session's keepalive thread running and a lock held: the child makes a
 *     client and session of its own (the parent's lock is busy to it, a lock of its own is
 *     granted) and execs `fl_abi fds`; the parent's lock and keepalives go on: "fork ok"
 * fl_abi fds
 *     "sockets N": the sockets this process has open (after exec: none may have leaked)
 * FL_ABI_TLS_CA in the environment: connect with TLS (the server's CA certificate).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fencelock.h>

static int failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failed++;                                                                              \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                                 \
        }                                                                                          \
    } while (0)

static fl_client *client(const char *endpoints)
{
    struct fl_options o;
    fl_options_init(&o);
    o.timeout_ms = 10000; /* ASan and a loaded machine: generous */
    o.tls_ca = getenv("FL_ABI_TLS_CA");
    fl_err e;
    fl_client *c = fl_client_new(endpoints, &o, &e);
    if (!c) {
        printf("FAIL fl_client_new: %s\n", fl_strerror(e));
        exit(1);
    }
    return c;
}

static int mode_version(void)
{
    int ma = -1, mi = -1, pa = -1;
    const char *lib = fl_version(&ma, &mi, &pa);
    char hdr[64];
    snprintf(hdr, sizeof hdr, "%d.%d.%d", FL_VERSION_MAJOR, FL_VERSION_MINOR, FL_VERSION_PATCH);
    printf("header %s library %s\n", FL_VERSION, lib);
    CHECK(strcmp(hdr, FL_VERSION) == 0);
    CHECK(strcmp(lib, FL_VERSION) == 0);
    CHECK(ma == FL_VERSION_MAJOR && mi == FL_VERSION_MINOR && pa == FL_VERSION_PATCH);
    CHECK(fl_version(NULL, NULL, NULL) == lib);
    return failed ? 1 : 0;
}

static int mode_sigpipe(const char *ep, size_t bytes)
{
    /* as a host program that never thought about SIGPIPE: the default action, unblocked */
    signal(SIGPIPE, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    fl_client *c = client(ep);
    fl_err e = fl_put(c, NULL, "abi/small", "x", 1, NULL, NULL);
    printf("ready %s\n", fl_strerror(e));
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 1;
    char *big = malloc(bytes);
    if (!big)
        return 1;
    memset(big, 'v', bytes);
    e = fl_put(c, NULL, "abi/big", big, bytes, NULL, NULL);
    printf("put %s %s\n", fl_strerror(e), fl_client_errmsg(c));
    fflush(stdout);
    free(big);
    fl_client_free(c);
    return 0;
}

static int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = 0;
            n += strncmp(target, "socket:", 7) == 0;
        }
    }
    closedir(d);
    return n;
}

/* The child of mode_fork: nothing of the parent's is touched. */
static void fork_child(const char *ep)
{
    fl_client *c = client(ep);
    fl_session *s;
    fl_err e = fl_session_open(c, 5000, 0, "abi-fork-child", &s);
    printf("child session %s\n", fl_strerror(e));
    if (e == FL_OK) {
        uint64_t t;
        printf("child trylock-parents %s\n", fl_strerror(fl_trylock(s, "abi/fork", &t)));
        printf("child lock-own %s\n", fl_strerror(fl_lock(s, "abi/fork-child", 0, &t)));
        fl_session_close(s);
    }
    fflush(stdout);
    /* sockets are close-on-exec: the exec'd program sees none of the parent's nor ours */
    execl("/proc/self/exe", "fl_abi", "fds", (char *)NULL);
    printf("FAIL exec: %s\n", strerror(errno));
    fflush(stdout);
    _exit(1);
}

static int mode_fork(const char *ep)
{
    fl_client *c = client(ep);
    fl_session *s;
    uint64_t token = 0;
    fl_err e = fl_session_open(c, 3000, 0, "abi-fork-parent", &s);
    CHECK(e == FL_OK);
    if (e != FL_OK)
        return 1;
    CHECK(fl_lock(s, "abi/fork", 0, &token) == FL_OK);
    int64_t before = fl_session_safe_until(s);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        fork_child(ep);
    CHECK(pid > 0);
    /* A child that hangs (a lock some parent thread held at the fork, never released in the
     * child) is killed with SIGABRT after 60 s instead of hanging the test: with ASan's
     * handle_abort (the test sets it) the child's stack then says where it waited. */
    int st = 0;
    pid_t w = 0;
    for (int64_t end = fl_now_ms() + 60000; pid > 0 && (w = waitpid(pid, &st, WNOHANG)) == 0;) {
        if (fl_now_ms() > end) {
            printf("FAIL child %d still running after 60 s: SIGABRT\n", (int)pid);
            kill(pid, SIGABRT);
            w = waitpid(pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    CHECK(w == pid);
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* the parent's session and lock are untouched, and its keepalive thread still renews
     * the lease: the safe deadline moves past where it was at the fork (TTL/3 per keepalive;
     * bounded by 4 TTLs) */
    int64_t end = fl_now_ms() + 12000;
    while (fl_session_safe_until(s) <= before && fl_now_ms() < end && !fl_session_is_lost(s))
        usleep(20000);
    CHECK(fl_session_safe_until(s) > before);
    CHECK(!fl_session_is_lost(s));
    CHECK(fl_fence_check(c, "abi/fork", token) == FL_OK);
    CHECK(fl_unlock(s, "abi/fork") == FL_OK);
    CHECK(fl_session_close(s) == FL_OK);
    fl_client_free(c);
    printf(failed ? "fork failed\n" : "fork ok\n");
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "version") == 0)
        return mode_version();
    if (argc == 4 && strcmp(argv[1], "sigpipe") == 0)
        return mode_sigpipe(argv[2], (size_t)strtoull(argv[3], NULL, 10));
    if (argc == 3 && strcmp(argv[1], "fork") == 0)
        return mode_fork(argv[2]);
    if (argc == 2 && strcmp(argv[1], "fds") == 0) {
        int n = count_sockets();
        printf("sockets %d\n", n);
        return n == 0 ? 0 : 1;
    }
    fprintf(stderr, "usage: fl_abi version | sigpipe EP BYTES | fork EP | fds\n");
    return 2;
}
