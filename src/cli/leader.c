/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock leader NAME [--observe]`: print an election's leader (fl_leader), or with
 * --observe one line per change (fl_observe, passing back the revision of each answer, so no
 * change is missed and no older leader is printed after a newer one) until a signal.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP are blocked while observing and looked for between two
 * observe slices (sigtimedwait with no wait), so an exit takes at most one slice. No handler,
 * no global state.
 */
#include <inttypes.h>
#include <signal.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/out.h"

#define OBSERVE_SLICE_MS 500 /* how long one ELECT.OBSERVE waits: the latency of a SIGINT */

static const char usage_leader[] =
    "usage: fencelock leader NAME [--observe] [--json]\n"
    "Print the leader of election NAME: 'SID TOKEN VALUE' (its session, its fencing token, its\n"
    "campaign value). With --observe, print the current state and then one line per change\n"
    "(a new leader, a new value, or 'none REV' when nobody leads) until SIGINT or SIGTERM;\n"
    "across a leader change of the servers it resumes where it was.\n"
    "  --json      one JSON object per line: sid, token, value, since_rev, rev\n"
    "Exit status: 0 (a leader was printed, or --observe ended by a signal); 1 nobody leads;\n"
    "2 usage; 4 other errors.\n";

enum { O_OBSERVE = 1 };
const struct opt_spec cli_opts_leader[] = {{"observe", 0, 0, O_OBSERVE, NULL},
                                           {NULL, 0, 0, 0, NULL}};

static void print_leader(const struct cli *c, const struct fl_leader_info *l)
{
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "sid");
        jw_u64(&w, l->sid);
        jw_key(&w, "token");
        jw_u64(&w, l->token);
        jw_bytes(&w, "value", l->value, l->value_len);
        jw_key(&w, "since_rev");
        jw_u64(&w, l->since_rev);
        jw_key(&w, "rev");
        jw_u64(&w, l->rev);
        jw_end(&w);
    } else if (l->sid == 0) {
        printf("none %" PRIu64 "\n", l->rev);
    } else {
        printf("%" PRIu64 " %" PRIu64 " ", l->sid, l->token);
        out_esc(stdout, l->value, l->value_len, 0);
        putchar('\n');
    }
    fflush(stdout);
}

/* Observe until a terminating signal (EXIT_OK) or an error. */
static int observe(struct cli *c, const char *name)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uint64_t after = 0;
    int rc = EXIT_OK;
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) < 0) {
        struct fl_leader_info l;
        fl_err e = fl_observe(c->client, name, after, after ? OBSERVE_SLICE_MS : 0, &l);
        if (e == FL_ETIMEOUT)
            continue;
        if (e == FL_EUNAVAILABLE)
            continue; /* the servers are changing leader or away: keep trying, same `after` */
        if (e != FL_OK) {
            cli_fail(c, e, "observe");
            rc = cli_exit_for(e) == EXIT_NO ? EXIT_ERROR : cli_exit_for(e);
            break;
        }
        print_leader(c, &l);
        after = l.rev ? l.rev : after;
        fl_leader_info_free(&l);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int cli_cmd_leader(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r, observing = 0;
    sub_start(&a, argc, argv, 1, usage_leader);
    while ((r = sub_next(c, &a, cli_opts_leader, &id)) == SUB_OPT)
        observing = 1;
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1 || a.pos[0][0] == '\0')
        return sub_err(&a, "one election NAME needed");
    if (cli_client(c) == NULL)
        return c->client_code;
    if (observing)
        return observe(c, a.pos[0]);
    struct fl_leader_info l;
    fl_err e = fl_leader(c->client, a.pos[0], &l);
    if (e != FL_OK) {
        cli_fail(c, e, "leader");
        return cli_exit_for(e);
    }
    print_leader(c, &l);
    fl_leader_info_free(&l);
    return EXIT_OK;
}
