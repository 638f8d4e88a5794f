/*
 * fencelockd — entry point: flags, the loop, signals. All state lives in struct srv.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/server.h"

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int main(int argc, char **argv)
{
    /* Neither libraft nor libuv ignores SIGPIPE: a killed peer would kill us with it. */
    signal(SIGPIPE, SIG_IGN);
    struct srv_config cfg;
    srv_config_defaults(&cfg);
    int rc = srv_config_parse(&cfg, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct srv *s = calloc(1, sizeof(*s));
    if (!s)
        return 1;
    int status = 0;
    if (cfg.recover) {
        status = srv_init(s, &loop, &cfg) || srv_recover(s) ? 1 : 0;
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
    srv_free(s);
    free(s);
    return status;
}
