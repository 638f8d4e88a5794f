/* SPDX-License-Identifier: Apache-2.0 */
/* fencelock: the command-line tool. Global flags, dispatch to a subcommand, error reporting. */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "cli/cli.h"
#include "cli/out.h"
#include "common/proto.h"

/* The command list between these two comes from the command table (table.c). */
static const char usage_head[] =
    "usage: fencelock [--endpoints H:P,...] [--timeout DUR] [--json] COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n";

static const char usage_tail[] =
    "\n"
    "Options:\n"
    "  --endpoints H:P[,H:P...]  servers to ask (default: $FENCELOCK_ENDPOINTS, else\n"
    "                            " CLI_DEFAULT_ENDPOINTS ")\n"
    "  --timeout DUR             deadline of each call to the cluster (default 5s)\n"
    "  --json                    machine-readable output\n"
    "  --user NAME               user for servers with --acl-file (default: $FENCELOCK_USER,\n"
    "                            else \"default\")\n"
    "  --password-file FILE      its password: FILE's first line (default:\n"
    "                            $FENCELOCK_PASSWORD; none: no AUTH)\n"
    "  --tls                     connect with TLS (implied by the three below)\n"
    "  --tls-ca FILE             CA the server's certificate must chain to (default:\n"
    "                            $FENCELOCK_TLS_CA, else the system's CAs)\n"
    "  --tls-cert FILE --tls-key FILE\n"
    "                            client certificate and key (default: $FENCELOCK_TLS_CERT,\n"
    "                            $FENCELOCK_TLS_KEY)\n"
    "  --tls-server-name NAME    name the server's certificate must have (default: the\n"
    "                            endpoint's host)\n"
    "  --traceparent TP          W3C trace context for LOCK, UNLOCK and fenced writes\n"
    "                            (default: $TRACEPARENT)\n"
    "  -h, --help                help (also after any command)\n"
    "  --version                 print the version\n"
    "\n"
    "Durations: 10 (seconds), 1500ms, 10s, 2m, 1h, 1.5s; a bare number is seconds.\n"
    "\n"
    "Exit status: 0 success; 1 negative answer (not found, stale token, condition failed);\n"
    "2 usage error; 3 lock not obtained within --wait; 4 cluster unreachable or other error;\n"
    "5 lock lost while held (the command was killed); lock: otherwise the command's status,\n"
    "128+N if it died of signal N, 126/127 if it could not be executed / was not found\n"
    "(lock -E N and --error-exit-code N move 3, and 4 and 5, out of the command's way).\n";

static void usage_main(void)
{
    fputs(usage_head, stdout);
    cli_print_commands(stdout);
    fputs(usage_tail, stdout);
}

void cli_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fencelock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_fail(struct cli *c, fl_err err, const char *what)
{
    const char *detail = c->client ? fl_client_errmsg(c->client) : "";
    if (detail && *detail) { /* the server's words: escaped like every server string */
        fprintf(stderr, "fencelock: %s: %s: ", what, fl_strerror(err));
        out_str(stderr, detail);
        fputc('\n', stderr);
    } else
        fprintf(stderr, "fencelock: %s: %s\n", what, fl_strerror(err));
}

int cli_exit_for(fl_err err)
{
    switch (err) {
    case FL_OK:
        return EXIT_OK;
    case FL_ENOTFOUND:
    case FL_ESTALE:
    case FL_EIFREV:
    case FL_EBUSY:
    case FL_ESESSION:
    case FL_ENOTHOLDER:
        return EXIT_NO;
    case FL_EINVAL:
        return EXIT_USAGE;
    default:
        return EXIT_ERROR;
    }
}

/* Which entry of a list the library refused, said on one line (each entry alone is tried). */
static int say_bad_endpoints(const char *list)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        char one[PROTO_ADDR_BUF];
        if (n < sizeof one) {
            memcpy(one, p, n);
            one[n] = '\0';
            fl_client *t = fl_client_new(one, NULL, NULL);
            if (t == NULL) {
                cli_say("endpoints: '%s' is not HOST:PORT (e.g. 127.0.0.1:7480; set with "
                        "--endpoints or FENCELOCK_ENDPOINTS)",
                        one);
                return EXIT_USAGE;
            }
            fl_client_free(t);
        } else {
            cli_say("endpoints: an entry of %zu bytes is too long for HOST:PORT", n);
            return EXIT_USAGE;
        }
        p += n + (p[n] == ',');
    }
    cli_say("endpoints '%s': no client could be made (out of memory?)", list);
    return EXIT_ERROR;
}

fl_client *cli_client(struct cli *c)
{
    if (c->client == NULL && cli_client_quiet(c) == NULL)
        c->client_code = say_bad_endpoints(c->endpoints);
    return c->client;
}

fl_client *cli_client_new(struct cli *c, const char *endpoints)
{
    struct fl_options opt;
    fl_options_init(&opt);
    /* A refused connection means nothing listens: say so after a short retry (a node that
       is restarting comes back within it), not after the whole --timeout. */
    opt.refused_ms = CLI_REFUSED_MS;
    if (c->timeout_ms > 0) {
        opt.timeout_ms = c->timeout_ms;
        /* One slow connection attempt must not use up the whole call. */
        if (opt.connect_timeout_ms <= 0 || opt.connect_timeout_ms > c->timeout_ms)
            opt.connect_timeout_ms = c->timeout_ms;
    }
    opt.user = c->user;
    opt.password = c->password[0] ? c->password : NULL;
    opt.tls = c->tls;
    opt.tls_ca = c->tls_ca;
    opt.tls_cert = c->tls_cert;
    opt.tls_key = c->tls_key;
    opt.tls_server_name = c->tls_server_name;
    return fl_client_new(endpoints, &opt, NULL);
}

fl_client *cli_client_quiet(struct cli *c)
{
    if (c->client == NULL)
        c->client = cli_client_new(c, c->endpoints);
    return c->client;
}

/* Global options before the command. Returns -1 with *first the index of the command, or the
   exit code when there is nothing to run (--help, --version, a usage error). */
static int parse_globals(struct cli *c, int argc, char **argv, int *first)
{
    struct opt_iter it;
    opt_start(&it, argc, argv);
    for (;;) {
        int before = it.i;
        int r = opt_next(&it, NULL);
        if (r == OPT_POSITIONAL) {
            *first = before;
            return -1;
        }
        if (r == G_HELP || r == G_VERSION) {
            if (r == G_HELP)
                usage_main();
            else
                printf("fencelock %s\n", FL_VERSION);
            return EXIT_OK;
        }
        if (r == OPT_END) {
            cli_say("no command given (see 'fencelock --help')");
            return EXIT_USAGE;
        }
        if (r == OPT_BAD || cli_global(c, r, &it) != EXIT_OK) {
            cli_say("%s (see 'fencelock --help')", it.err);
            return EXIT_USAGE;
        }
    }
}

static int dispatch(struct cli *c, int argc, char **argv)
{
    if (strcmp(argv[0], "help") == 0) {
        if (argc < 2) {
            usage_main();
            return EXIT_OK;
        }
        char flag[] = "--help";
        char *help[] = {argv[1], flag, NULL};
        return dispatch(c, 2, help);
    }
    const struct cli_command *k = cli_command_find(argv[0]);
    if (k && k->fn)
        return k->fn(c, argc, argv);
    cli_say("unknown command '%s' (see 'fencelock --help' for the commands)", argv[0]);
    return EXIT_USAGE;
}

/* An environment variable, NULL when unset or empty. */
static const char *cli_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int main(int argc, char **argv)
{
    /* A server that goes away mid-write must be an error reply, not a silent death. */
    signal(SIGPIPE, SIG_IGN);

    struct cli c = {0};
    c.endpoints = getenv("FENCELOCK_ENDPOINTS");
    if (c.endpoints == NULL || *c.endpoints == '\0')
        c.endpoints = CLI_DEFAULT_ENDPOINTS;
    /* The credentials are copied and then removed from our environment, so that nothing we
       start (the command of `fencelock lock -- CMD`, a pager) inherits them. */
    static char user_env[1025];
    const char *u = getenv("FENCELOCK_USER");
    if (u) {
        snprintf(user_env, sizeof user_env, "%s", u);
        c.user = user_env;
    }
    if (env_take("FENCELOCK_PASSWORD", c.password, sizeof c.password) == -2) {
        cli_say("FENCELOCK_PASSWORD is longer than %zu bytes", sizeof c.password - 1);
        return EXIT_USAGE;
    }
    unsetenv("FENCELOCK_USER");
    c.tls_ca = cli_env("FENCELOCK_TLS_CA");
    c.tls_cert = cli_env("FENCELOCK_TLS_CERT");
    c.tls_key = cli_env("FENCELOCK_TLS_KEY");

    int first = 0;
    int done = parse_globals(&c, argc, argv, &first);
    if (done >= 0)
        return done;
    const char *tp = cli_env("TRACEPARENT"); /* as OpenTelemetry's tools pass it on */
    if (!c.traced && tp && fl_trace_set(tp) != FL_OK) {
        cli_say("TRACEPARENT: not a W3C traceparent '%s' (00-<32 hex>-<16 hex>-<2 hex>)", tp);
        return EXIT_USAGE;
    }
    int rc = dispatch(&c, argc - first, argv + first);
    if (c.client)
        fl_client_free(c.client);
    if (fflush(stdout) != 0 && rc == EXIT_OK) {
        cli_say("writing the output failed");
        rc = EXIT_ERROR;
    }
    return rc;
}
