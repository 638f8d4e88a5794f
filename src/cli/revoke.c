/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock revoke NAME [--deadline DUR] [--reason TEXT]`: ask the holder of a lock to let go
 * (LOCK.REVOKE through fl_lock_revoke), and the parsing of `lock`'s --revoke-signal.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/out.h"
#include "cli/run.h"

static const char usage_revoke[] =
    "usage: fencelock revoke NAME [--deadline DUR] [--reason TEXT]\n"
    "Ask the holder of lock NAME to let go (LOCK.REVOKE) and print the token of the grant\n"
    "asked. The holder is told who asked and why (`fencelock lock -- CMD` sends CMD its\n"
    "--revoke-signal). With --deadline, the servers release that grant if it still holds\n"
    "the lock DUR after the request (as an expiry would: lock-delay, then the next waiter);\n"
    "without, the holder is only asked. Needs the revoke permission on NAME, or admin.\n"
    "Exit 1 if nobody holds the lock exclusively.\n"
    "  --deadline DUR    take the lock from the holder after DUR (e.g. 10s)\n"
    "  --reason TEXT     shown to the holder\n";

enum { O_DEADLINE = 1, O_REASON };
const struct opt_spec cli_opts_revoke[] = {{"deadline", 0, 1, O_DEADLINE, "DUR"},
                                           {"reason", 0, 1, O_REASON, "TEXT"},
                                           {NULL, 0, 0, 0, NULL}};

int cli_cmd_revoke(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    uint64_t deadline_ms = 0;
    const char *reason = NULL;
    sub_start(&a, argc, argv, 1, usage_revoke);
    while ((r = sub_next(c, &a, cli_opts_revoke, &id)) == SUB_OPT) {
        if (id == O_REASON) {
            reason = a.it.v[0];
        } else if (parse_duration(a.it.v[0], &deadline_ms) || deadline_ms == 0) {
            return sub_err(&a, "--deadline: bad duration '%s' (e.g. 10s, 500ms; more than 0)",
                           a.it.v[0]);
        }
    }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1 || a.pos[0][0] == '\0')
        return sub_err(&a, "one lock NAME needed");
    if (cli_client(c) == NULL)
        return c->client_code;
    uint64_t token = 0;
    fl_err e = fl_lock_revoke(c->client, a.pos[0], deadline_ms, reason, &token);
    if (e == FL_ENOTHOLDER) {
        cli_say("revoke %s: nobody holds it exclusively", a.pos[0]);
        return EXIT_NO;
    }
    if (e != FL_OK) {
        cli_fail(c, e, "revoke");
        return cli_exit_for(e);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "name");
        jw_str(&w, a.pos[0]);
        jw_key(&w, "token");
        jw_u64(&w, token);
        jw_key(&w, "deadline_ms");
        jw_u64(&w, deadline_ms);
        jw_end(&w);
    } else {
        printf("%" PRIu64 "\n", token);
    }
    return EXIT_OK;
}

int run_parse_signal(const char *s, int *sig)
{
    static const struct {
        const char *name;
        int sig;
    } names[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},
                 {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
    const char *n = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(n, names[i].name) == 0) {
            *sig = names[i].sig;
            return 0;
        }
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && *end == '\0' && v > 0 && v < NSIG && v != SIGKILL && v != SIGSTOP) {
        *sig = (int)v;
        return 0;
    }
    return -1;
}
