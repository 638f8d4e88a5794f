/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock token [--ttl DUR]`: print a bearer token for the HTTP API (AUTH.TOKEN through
 * fl_auth_token) naming the user the CLI authenticates as, for
 * `curl -H "Authorization: Bearer $(fencelock token)" ...`.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/out.h"
#include "cli/run.h"

static const char usage_token[] =
    "usage: fencelock token [--ttl DUR]\n"
    "Print a bearer token for the HTTP API (AUTH.TOKEN) naming the user the CLI authenticates\n"
    "as (--user, FENCELOCK_USER): send it as `Authorization: Bearer TOKEN`. It has that user's\n"
    "rights until it expires, the user is removed or gets a new password, or the servers'\n"
    "--http-token-key changes. Needs servers with --acl-file. The token is a credential.\n"
    "  --ttl DUR    how long it is valid (e.g. 15m; default the servers' --http-token-ttl)\n";

enum { O_TTL = 1 };
const struct opt_spec cli_opts_token[] = {{"ttl", 0, 1, O_TTL, "DUR"}, {NULL, 0, 0, 0, NULL}};

int cli_cmd_token(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    uint64_t ttl_ms = 0;
    sub_start(&a, argc, argv, 0, usage_token);
    while ((r = sub_next(c, &a, cli_opts_token, &id)) == SUB_OPT) {
        if (parse_duration(a.it.v[0], &ttl_ms) || ttl_ms < 1000)
            return sub_err(&a, "--ttl: bad duration '%s' (e.g. 15m, 1h; at least 1s)", a.it.v[0]);
    }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 0)
        return sub_err(&a, "no arguments but --ttl");
    if (cli_client(c) == NULL)
        return c->client_code;
    char tok[FL_AUTH_TOKEN_MAX];
    fl_err e = fl_auth_token(c->client, ttl_ms, tok, sizeof tok);
    if (e != FL_OK) {
        cli_fail(c, e, "token");
        return cli_exit_for(e);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "token");
        jw_str(&w, tok);
        jw_end(&w);
    } else {
        printf("%s\n", tok);
    }
    return EXIT_OK;
}
