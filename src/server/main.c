/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fencelockd — entry point: flags, the open-file limit, the loop, signals. All state lives in
 * struct srv.
 */
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/net/fdlimit.h"
#include "server/server.h"

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/*
 * Make --max-clients fit RLIMIT_NOFILE before anything opens a file (as Redis does): raise the
 * soft limit if the hard one allows, else lower the effective --max-clients, which INFO's
 * maxclients and the connection check then use. Past the fd limit accept() would fail and libuv
 * close the waiting connections unanswered; within it, the extra client gets the -ERR reply
 * (and conn.c refuses the same way if the limit is lowered later: fdlimit_low).
 * 0 ok, -1 if not even one client fits (the message says what to do).
 */
static int fit_fd_limit(struct srv_config *cfg)
{
    const struct logger lg = {.level = cfg->log_level,
                              .id = (int)cfg->id,
                              .format = cfg->log_format,
                              .journal = log_stderr_is_journal(getenv("JOURNAL_STREAM"))};
    /* Membership may grow at run time, so the reserve covers the largest one. */
    struct fdlimit f = {
        .wanted = cfg->max_clients,
        .reserve = fdlimit_reserve(RN_MAX_PEERS, cfg->http_port ? cfg->http_max_conns : 0),
    };
    if (fdlimit_fit(&f)) {
        LOGE(&lg,
             "open-file limit %lu (hard %lu) leaves no fd for clients: fencelockd needs %zu for "
             "itself plus one per client; raise it (ulimit -n %zu) and restart",
             f.soft_after, f.hard, f.reserve, f.wanted + f.reserve);
        return -1;
    }
    if (f.raised)
        LOGI(&lg, "open-file limit raised from %lu to %lu (hard limit %lu)", f.soft_before,
             f.soft_after, f.hard);
    if (f.effective < f.wanted)
        LOGW(&lg,
             "--max-clients %zu lowered to %zu: the open-file limit is %lu (hard %lu) and "
             "fencelockd keeps %zu fds for raft peers, HTTP and files; to allow %zu clients "
             "raise it (ulimit -n %zu, or LimitNOFILE= under systemd) and restart",
             f.wanted, f.effective, f.soft_after, f.hard, f.reserve, f.wanted,
             f.wanted + f.reserve);
    cfg->max_clients = f.effective;
    return 0;
}

/* The longest password --hash-password reads. */
#define HASH_PW_MAX 1024

/*
 * fencelockd --hash-password: a password from stdin (one line, its newline not part of it)
 * to the HASH field of an --acl-file line on stdout. Nothing else runs. 0, or 1 with the
 * reason on stderr.
 */
static int hash_password_main(void)
{
    char pw[HASH_PW_MAX + 2], hash[ACL_HASH_BUF];
    size_t n = fread(pw, 1, sizeof pw, stdin);
    if (n && pw[n - 1] == '\n')
        n--;
    if (n && pw[n - 1] == '\r')
        n--;
    if (n == 0 || n > HASH_PW_MAX || memchr(pw, '\n', n)) {
        fprintf(stderr,
                "fencelockd --hash-password: give one password of 1..%d bytes on "
                "stdin (one line)\n",
                HASH_PW_MAX);
        return 1;
    }
    int rc = acl_hash_password(pw, n, hash);
    sodium_memzero(pw, sizeof pw);
    if (rc) {
        fprintf(stderr, "fencelockd --hash-password: out of memory\n");
        return 1;
    }
    printf("%s\n", hash);
    return 0;
}

int main(int argc, char **argv)
{
    /* Neither libraft nor libuv ignores SIGPIPE: a killed peer would kill us with it. */
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && !strcmp(argv[1], "--hash-password"))
        return hash_password_main();
    if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
        printf("fencelockd %s\n", FENCELOCK_VERSION);
        return 0;
    }
    struct srv_config cfg;
    srv_config_defaults(&cfg);
    int rc = srv_config_parse(&cfg, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (fit_fd_limit(&cfg))
        return 1;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct srv *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    int status = 0;
    if (cfg.recover || cfg.restore[0]) {
        status =
            srv_init(s, &loop, &cfg) || (cfg.recover ? srv_recover(s) : srv_restore(s)) ? 1 : 0;
        if (s->rn)
            srv_stop(s);
    } else if (srv_init(s, &loop, &cfg) || srv_start(s)) {
        status = 1;
        if (s->rn)
            srv_stop(s);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_walk(&loop, close_walk_cb, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (s->cluster.halted) /* a newer log format than this binary reads: not a clean exit */
        status = 3;
    srv_free(s);
    free(s);
    return status;
}
