/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waits.c — `fencelock waits [PREFIX]`: who waits for whom (LOCK.WAITS), for operators
 * looking at a stuck queue. Reads only; owns nothing past the call.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/out.h"

static const char usage_waits[] =
    "usage: fencelock waits [PREFIX]\n"
    "Print who waits for whom on the locks, semaphores and elections whose names start with\n"
    "PREFIX: one line per queued request, its session and the sessions it waits for (all of\n"
    "them, or any one of them for a full semaphore). A wait that would close a cycle is\n"
    "refused by the servers (-DEADLOCK), so what this shows has none. --json: an array of\n"
    "{lock, object, sid, waits_for, any}.\n";

static void waits_print(struct cli *c, const struct fl_wait_list *l)
{
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    else
        printf("%-24s %-9s %20s %s\n", "NAME", "OBJECT", "SESSION", "WAITS FOR");
    for (size_t i = 0; i < l->n; i++) {
        const struct fl_wait_entry *e = &l->v[i];
        if (!c->json) {
            out_pad(stdout, e->lock, 24);
            printf(" %-9s %20" PRIu64 " %s", e->object, e->sid,
                   e->any && e->n_waits_for > 1 ? "any of " : "");
            for (size_t k = 0; k < e->n_waits_for; k++)
                printf("%s%" PRIu64, k ? "," : "", e->waits_for[k]);
            printf("%s\n", e->n_waits_for ? "" : "-");
            continue;
        }
        jw_obj(&w);
        jw_key(&w, "lock");
        jw_str(&w, e->lock);
        jw_key(&w, "object");
        jw_str(&w, e->object);
        jw_key(&w, "sid");
        jw_u64(&w, e->sid);
        jw_key(&w, "waits_for");
        jw_arr(&w);
        for (size_t k = 0; k < e->n_waits_for; k++)
            jw_u64(&w, e->waits_for[k]);
        jw_end(&w);
        jw_key(&w, "any");
        jw_bool(&w, e->any);
        jw_end(&w);
    }
    if (c->json)
        jw_end(&w);
}

int cli_cmd_waits(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    sub_start(&a, argc, argv, 1, usage_waits);
    while ((r = sub_next(c, &a, NULL, &id)) == SUB_OPT)
        ;
    if (r == SUB_STOP)
        return a.code;
    if (!cli_client(c))
        return c->client_code;
    struct fl_wait_list l;
    fl_err err = fl_lock_waits(c->client, a.n_pos ? a.pos[0] : "", &l);
    if (err != FL_OK) {
        cli_fail(c, err, "waits");
        return cli_exit_for(err);
    }
    waits_print(c, &l);
    fl_wait_list_free(&l);
    return EXIT_OK;
}
