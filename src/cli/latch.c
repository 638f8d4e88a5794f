/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock latch create NAME COUNT | countdown NAME | wait NAME [--wait DUR] | info NAME |
 * delete NAME`: a countdown latch from a shell (docs/protocol.md "Latches and barriers").
 *
 * `countdown` opens a session of its own for the one count-down and closes it (an anonymous
 * count-down: a count nobody promised). `join NAME -- CMD` binds a count to a session that
 * lives while CMD runs (lock.c and run.c: the machinery of `fencelock lock`), counting down
 * only if CMD exits 0; `fencelock barrier` likewise keeps its session inside the barrier while
 * CMD runs. No global state.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "cli/run.h"

#define LATCH_SESSION_TTL_MS 10000 /* countdown's own session: closed at once */

static const char usage_latch[] =
    "usage: fencelock latch create NAME COUNT | countdown NAME | wait NAME [--wait DUR] |\n"
    "       info NAME | delete NAME | join NAME [options] -- CMD [ARGS...]\n"
    "A countdown latch: create it with COUNT counts; count it down once (an anonymous count:\n"
    "one nobody joined for); wait until it is at zero (exit 0), --wait DUR at most (exit 3\n"
    "when it ran out; without --wait: check once); info prints 'TYPE STATE COUNT REMAINING\n"
    "JOINERS BROKEN_SID'; delete removes it (also a broken one). A latch a joined session could\n"
    "not count down (its session ended first) is broken: wait, countdown exit 4 and say so.\n"
    "join runs CMD with a session that promised one count-down and counts down only if CMD\n"
    "exits 0: if CMD fails or fencelock dies, the latch is BROKEN for its waiters\n"
    "(`fencelock latch join --help`).\n"
    "  --wait DUR  how long wait waits (ms, or 10s, 2m)\n"
    "  --json      JSON output\n"
    "Exit status: 0; 1 no such latch (info); 2 usage; 3 wait ran out; 4 other errors (broken).\n";

enum { O_WAIT = 1 };
const struct opt_spec cli_opts_latch[] = {{"wait", 0, 1, O_WAIT, "DUR"}, {NULL, 0, 0, 0, NULL}};

static int fail(struct cli *c, fl_err err, const char *what)
{
    cli_fail(c, err, what);
    return err == FL_ETIMEOUT ? EXIT_NOTGOT : cli_exit_for(err);
}

static int latch_info(struct cli *c, const char *name)
{
    static const char *const latch_states[] = {"counting", "zero", "broken"};
    static const char *const barrier_states[] = {"filling", "full", "broken"};
    struct fl_latch_info li;
    fl_err err = fl_latch_info(c->client, name, &li);
    if (err != FL_OK)
        return fail(c, err, "latch info");
    const char *type = li.barrier ? "barrier" : "latch";
    const char *state = (li.barrier ? barrier_states : latch_states)[li.state % 3];
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "type");
        jw_str(&w, type);
        jw_key(&w, "state");
        jw_str(&w, state);
        jw_key(&w, "count");
        jw_u64(&w, li.count);
        jw_key(&w, "remaining");
        jw_u64(&w, li.remaining);
        jw_key(&w, "joiners");
        jw_u64(&w, li.n_joiners);
        jw_key(&w, "broken_sid");
        jw_u64(&w, li.broken_sid);
        jw_end(&w);
    } else {
        printf("%s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", type, state, li.count,
               li.remaining, li.n_joiners, li.broken_sid);
    }
    return EXIT_OK;
}

static int latch_countdown(struct cli *c, const char *name)
{
    fl_session *s = NULL;
    uint64_t left = 0;
    fl_err err = fl_session_open(c->client, LATCH_SESSION_TTL_MS, 0, "latch countdown", &s);
    if (err != FL_OK)
        return fail(c, err, "latch countdown: session open");
    err = fl_latch_countdown(s, name, &left);
    fl_session_close(s); /* it promised nothing: its end breaks nothing */
    if (err != FL_OK)
        return fail(c, err, "latch countdown");
    if (c->json)
        printf("{\"remaining\":%" PRIu64 "}\n", left);
    else
        printf("%" PRIu64 "\n", left);
    return EXIT_OK;
}

int cli_cmd_latch(struct cli *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "join") == 0) /* runs a command: lock.c's machinery */
        return cli_latch_join(c, argc - 1, argv + 1);
    struct sub_args a;
    uint64_t wait_ms = 0, count = 0;
    int id, r;
    sub_start(&a, argc, argv, 3, usage_latch);
    while ((r = sub_next(c, &a, cli_opts_latch, &id)) == SUB_OPT)
        if (parse_duration(a.it.v[0], &wait_ms)) {
            opt_err(&a.it, "--wait: bad duration '%s'", a.it.v[0]);
            return sub_usage(&a);
        }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos < 2 || !a.pos[1][0])
        return sub_usage(&a);
    const char *op = a.pos[0], *name = a.pos[1];
    bool create = strcmp(op, "create") == 0;
    if (!create && strcmp(op, "countdown") && strcmp(op, "wait") && strcmp(op, "info") &&
        strcmp(op, "delete"))
        return sub_err(&a, "unknown operation '%s' (create, countdown, wait, info, delete or join)",
                       op);
    if (create ? a.n_pos != 3 : a.n_pos != 2)
        return sub_usage(&a);
    if (create && (cli_parse_u64(a.pos[2], &count) || count == 0 || count > (1u << 20)))
        return sub_err(&a, "create: bad COUNT '%s' (1..1048576)", a.pos[2]);
    if (wait_ms && strcmp(op, "wait"))
        return sub_err(&a, "--wait is for latch wait");
    if (!cli_client(c))
        return c->client_code;
    fl_err err = FL_OK;
    int deleted = 0;
    if (create)
        err = fl_latch_create(c->client, name, (uint32_t)count);
    else if (!strcmp(op, "countdown"))
        return latch_countdown(c, name);
    else if (!strcmp(op, "info"))
        return latch_info(c, name);
    else if (!strcmp(op, "wait"))
        err = fl_latch_wait(c->client, name, wait_ms);
    else
        err = fl_latch_delete(c->client, name, &deleted);
    char what[32];
    snprintf(what, sizeof what, "latch %s", op);
    if (err != FL_OK)
        return fail(c, err, what);
    if (!strcmp(op, "delete"))
        printf(c->json ? "{\"deleted\":%d}\n" : "%d\n", deleted);
    else
        printf(c->json ? "{\"ok\":true}\n" : "OK\n");
    return deleted || strcmp(op, "delete") ? EXIT_OK : EXIT_NO;
}
