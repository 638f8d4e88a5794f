/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history.c — `fencelock history NAME [--count N] [--before REV]`: who held a lock, semaphore
 * or election (LOCK.HISTORY), newest first, for an operator after an incident. Reads only;
 * owns nothing past the call.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/out.h"

enum { OPT_COUNT = 1, OPT_BEFORE };

const struct opt_spec cli_opts_history[] = {
    {"count", 0, 1, OPT_COUNT, "N"},
    {"before", 0, 1, OPT_BEFORE, "REV"},
    {NULL, 0, 0, 0, NULL},
};

static const char usage_history[] =
    "usage: fencelock history NAME [--count N] [--before REV]\n"
    "Print the grants of lock (semaphore, election) NAME, newest first: session and its name,\n"
    "token, when it was granted (the leader's clock), how long it was held and how it ended,\n"
    "how long the grantee waited, how many sessions were queued then and the lock's value at\n"
    "the grant (LOCK ... VALUE; '-' if none). --count: at most N\n"
    "(default 100); --before: only tokens below REV (the next page). Exit 1 with COMPACTED\n"
    "when that range was dropped. --json: an array of the protocol's fields.\n";

static void entry_json(struct jw *w, const struct fl_history_entry *e)
{
    jw_obj(w);
    jw_key(w, "kind");
    jw_str(w, e->kind);
    jw_key(w, "session");
    jw_u64(w, e->sid);
    jw_key(w, "session_name");
    jw_str(w, e->session_name);
    jw_key(w, "user");
    jw_str(w, e->user);
    jw_key(w, "value");
    jw_str(w, e->value);
    jw_key(w, "token");
    jw_u64(w, e->token);
    jw_key(w, "permits");
    jw_u64(w, e->permits);
    jw_key(w, "granted_ms");
    jw_u64(w, e->granted_ms);
    jw_key(w, "waited_ms");
    jw_u64(w, e->waited_ms);
    jw_key(w, "ended_rev");
    jw_u64(w, e->ended_rev);
    jw_key(w, "ended_ms");
    jw_u64(w, e->ended_ms);
    jw_key(w, "ended_by");
    jw_str(w, e->ended_by);
    jw_key(w, "held_ms");
    jw_u64(w, e->held_ms);
    jw_key(w, "waiters_total");
    jw_u64(w, e->waiters_total);
    jw_key(w, "waiters");
    jw_arr(w);
    for (size_t k = 0; k < e->n_waiters; k++) {
        jw_obj(w);
        jw_key(w, "session");
        jw_u64(w, e->waiters[k].sid);
        jw_key(w, "waited_ms");
        jw_u64(w, e->waiters[k].waited_ms);
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}

static void history_print(struct cli *c, const struct fl_history *h)
{
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    else
        printf("%20s %20s %-16s %15s %10s %-14s %10s %7s %s\n", "TOKEN", "SESSION", "NAME",
               "GRANTED_MS", "HELD_MS", "ENDED_BY", "WAITED_MS", "WAITERS", "VALUE");
    for (size_t i = 0; i < h->n; i++) {
        const struct fl_history_entry *e = &h->v[i];
        if (c->json) {
            entry_json(&w, e);
            continue;
        }
        printf("%20" PRIu64 " %20" PRIu64 " ", e->token, e->sid);
        out_pad(stdout, e->session_name[0] ? e->session_name : "-", 16);
        printf(" %15" PRIu64 " ", e->granted_ms);
        if (e->ended_rev)
            printf("%10" PRIu64 " %-14s", e->held_ms, e->ended_by);
        else
            printf("%10s %-14s", "-", "(held)");
        printf(" %10" PRIu64 " %7" PRIu64 " ", e->waited_ms, e->waiters_total);
        out_str(stdout, e->value[0] ? e->value : "-"); /* server text: escaped */
        putchar('\n');
    }
    if (c->json)
        jw_end(&w);
}

int cli_cmd_history(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    uint64_t count = 0, before = 0;
    sub_start(&a, argc, argv, 1, usage_history);
    while ((r = sub_next(c, &a, cli_opts_history, &id)) == SUB_OPT) {
        uint64_t *x = id == OPT_COUNT ? &count : &before;
        if (cli_parse_u64(a.it.v[0], x) || *x == 0)
            return sub_err(&a, "--%s: bad number '%s' (1 or more)",
                           id == OPT_COUNT ? "count" : "before", a.it.v[0]);
    }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1)
        return sub_err(&a, "NAME is required");
    if (!cli_client(c))
        return c->client_code;
    struct fl_history h;
    fl_err err = fl_lock_history(c->client, a.pos[0], (size_t)count, before, &h);
    if (err != FL_OK) {
        cli_fail(c, err, "history");
        return cli_exit_for(err);
    }
    history_print(c, &h);
    fl_history_free(&h);
    return EXIT_OK;
}
