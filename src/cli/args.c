/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing for every subcommand: options, numbers, durations. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"
#include "common/num.h"

/* Larger values are refused: no duration or id of ours comes near, and it keeps the
   arithmetic below free of overflow. */
#define NUM_MAX ((uint64_t)1 << 62)
#define MS_PER_S 1000ull
#define MS_PER_MIN (60 * MS_PER_S)
#define MS_PER_H (60 * MS_PER_MIN)
/* Fraction digits past this scale (nanoseconds) are read but ignored: far below 1 ms. */
#define FRAC_SCALE_MAX 1000000000ull
#define TIMEOUT_MAX_MS (24 * MS_PER_H) /* --timeout */
#define LIMIT_MAX 1000000000ull        /* --limit */
/* cli_shown keeps this many bytes of its buffer for "... (N bytes)". */
#define SHOWN_TAIL 24

int cli_parse_u64(const char *s, uint64_t *v)
{
    return num_parse_u64_str(s, 0, NUM_MAX, v);
}

/* The multiplier of a duration unit in milliseconds, 0 if the unit is unknown. */
static uint64_t unit_ms(const char *u)
{
    static const struct {
        const char *name;
        uint64_t ms;
    } units[] = {{"", MS_PER_S}, {"ms", 1}, {"s", MS_PER_S}, {"m", MS_PER_MIN}, {"h", MS_PER_H}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0)
            return units[i].ms;
    return 0;
}

/* Integer arithmetic only (no strtod): "1.5s" is exactly 1500 ms, and a fraction finer than a
   millisecond is rounded down. */
int parse_duration(const char *s, uint64_t *ms)
{
    uint64_t whole = 0, frac = 0, scale = 1;
    int digits = 0;
    if (s == NULL)
        return -1;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        whole = whole * 10 + (uint64_t)(*s - '0');
        if (whole > NUM_MAX / MS_PER_H) /* the largest unit */
            return -1;
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
            if (scale < FRAC_SCALE_MAX) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                scale *= 10;
            }
        }
    }
    uint64_t mult = unit_ms(s);
    if (digits == 0 || mult == 0)
        return -1;
    *ms = whole * mult + frac * mult / scale;
    return 0;
}

int parse_ttl(struct opt_iter *it, const char *opt, const char *s, uint64_t *ms)
{
    if (parse_duration(s, ms) != 0)
        return opt_err(it,
                       "--%s: bad duration '%s' (e.g. 30s, 1500ms, 2m; a bare number is "
                       "seconds)",
                       opt, s);
    if (*ms < CLI_MIN_TTL_MS)
        return opt_err(it,
                       "--%s %s: too short; a lease needs at least 1s (1000ms) to be kept "
                       "alive (a bare number is seconds)",
                       opt, s);
    cli_warn_long_ttl(opt, s, *ms);
    return EXIT_OK;
}

/* A lease of more than an hour written without a unit is far more often "--ttl 30000" meant
   as milliseconds than a real hour-long lease (whose holder, if it dies, keeps the lock that
   long): say how it was read, and how to write either. Only a warning: it may be meant. */
#define TTL_WARN_MS MS_PER_H

void cli_warn_long_ttl(const char *opt, const char *s, uint64_t ms)
{
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] < '0' || s[n - 1] > '9' || ms <= TTL_WARN_MS)
        return;
    cli_say("warning: --%s %s is %s seconds (over an hour: a bare number is seconds); for "
            "milliseconds write --%s %sms, and write --%s %ss to keep this TTL without "
            "this warning",
            opt, s, s, opt, s, opt, s);
}

const char *cli_shown(const char *s, char *buf, size_t n)
{
    size_t len = strlen(s);
    if (len < n)
        return s;
    snprintf(buf, n, "%.*s... (%zu bytes)", (int)(n > SHOWN_TAIL ? n - SHOWN_TAIL : 1), s, len);
    return buf;
}

/* --limit N of keys and locks. */
int parse_limit(struct opt_iter *it, const char *s, size_t *limit)
{
    uint64_t v;
    if (cli_parse_u64(s, &v) || v == 0 || v > LIMIT_MAX)
        return opt_err(it, "--limit: bad number '%s' (1 or more)", s);
    *limit = (size_t)v;
    return EXIT_OK;
}

/* ---- options ---- */

const struct opt_spec cli_global_opts[] = {
    {"help", 'h', 0, G_HELP, NULL},
    {"endpoints", 0, 1, G_ENDPOINTS, "H:P,..."},
    {"timeout", 0, 1, G_TIMEOUT, "DUR"},
    {"json", 0, 0, G_JSON, NULL},
    {"version", 0, 0, G_VERSION, NULL},
    {"user", 0, 1, G_USER, "NAME"},
    {"password-file", 0, 1, G_PASSWORD_FILE, "FILE"},
    {"tls", 0, 0, G_TLS, NULL},
    {"tls-ca", 0, 1, G_TLS_CA, "FILE"},
    {"tls-cert", 0, 1, G_TLS_CERT, "FILE"},
    {"tls-key", 0, 1, G_TLS_KEY, "FILE"},
    {"tls-server-name", 0, 1, G_TLS_SERVER_NAME, "NAME"},
    {"traceparent", 0, 1, G_TRACEPARENT, "TP"},
    {NULL, 0, 0, 0, NULL},
};

int opt_err(struct opt_iter *it, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->err, sizeof it->err, fmt, ap);
    va_end(ap);
    return EXIT_USAGE;
}

void opt_start(struct opt_iter *it, int argc, char **argv)
{
    memset(it, 0, sizeof *it);
    it->argc = argc;
    it->argv = argv;
    it->i = 1; /* argv[0] is the program or subcommand name */
    it->dashdash = -1;
}

/* The spec for "--name" (len bytes of name) or "-x" in specs, then in the global table. */
static const struct opt_spec *find_spec(const struct opt_spec *specs, const char *name, size_t len,
                                        char letter)
{
    const struct opt_spec *tables[2] = {specs, cli_global_opts};
    for (int t = 0; t < 2; t++) {
        for (const struct opt_spec *o = tables[t]; o && o->name; o++) {
            if (letter ? o->letter == letter
                       : (strlen(o->name) == len && strncmp(o->name, name, len) == 0))
                return o;
        }
    }
    return NULL;
}

/* Take the values of option o: the "=value" part (inline, may be NULL), then the next args. */
static int take_values(struct opt_iter *it, const struct opt_spec *o, const char *inl)
{
    int k = 0;
    if (inl != NULL) {
        if (o->nargs == 0) {
            opt_err(it, "option --%s takes no value", o->name);
            return OPT_BAD;
        }
        it->v[k++] = inl;
    }
    for (; k < o->nargs; k++) {
        if (it->i >= it->argc) {
            opt_err(it, "option --%s needs %d value%s", o->name, o->nargs, o->nargs > 1 ? "s" : "");
            return OPT_BAD;
        }
        it->v[k] = it->argv[it->i++];
    }
    return o->id;
}

int opt_next(struct opt_iter *it, const struct opt_spec *specs)
{
    if (it->dashdash >= 0 || it->i >= it->argc)
        return OPT_END;
    const char *a = it->argv[it->i++];
    it->v[0] = it->v[1] = NULL;
    if (strcmp(a, "--") == 0) {
        it->dashdash = it->i;
        return OPT_END;
    }
    if (a[0] != '-' || a[1] == '\0') { /* "-" alone is a positional (stdin, by convention) */
        it->v[0] = a;
        return OPT_POSITIONAL;
    }
    const struct opt_spec *o;
    const char *inl = NULL;
    if (a[1] == '-') {
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        o = find_spec(specs, a + 2, len, 0);
        inl = eq ? eq + 1 : NULL;
    } else {
        o = a[2] == '\0' ? find_spec(specs, "", 0, a[1]) : NULL;
    }
    if (o == NULL) {
        opt_err(it, "unknown option '%s'", a);
        return OPT_BAD;
    }
    return take_values(it, o, inl);
}

/* The file's first line (without its line end) into out[cap]; -1 if unreadable or empty. */
static int read_password_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *got = fgets(out, (int)cap, f);
    fclose(f);
    if (!got)
        return -1;
    out[strcspn(out, "\r\n")] = '\0';
    return out[0] ? 0 : -1;
}

int cli_global(struct cli *c, int id, struct opt_iter *it)
{
    uint64_t ms;
    switch (id) {
    case G_ENDPOINTS:
        if (it->v[0][0] == '\0')
            return opt_err(it, "--endpoints: empty list (e.g. --endpoints 127.0.0.1:7480)");
        c->endpoints = it->v[0];
        return EXIT_OK;
    case G_TIMEOUT:
        if (parse_duration(it->v[0], &ms) || ms == 0 || ms > TIMEOUT_MAX_MS)
            return opt_err(it, "--timeout: bad duration '%s' (e.g. 500ms, 5s; between 1ms and 24h)",
                           it->v[0]);
        c->timeout_ms = (int)ms;
        return EXIT_OK;
    case G_JSON:
        c->json = 1;
        return EXIT_OK;
    case G_USER:
        c->user = it->v[0];
        return EXIT_OK;
    case G_PASSWORD_FILE:
        if (read_password_file(it->v[0], c->password, sizeof c->password))
            return opt_err(it, "--password-file %s: cannot read a password from it", it->v[0]);
        return EXIT_OK;
    case G_TLS:
        c->tls = 1;
        return EXIT_OK;
    case G_TLS_CA:
        c->tls_ca = it->v[0];
        return EXIT_OK;
    case G_TLS_CERT:
        c->tls_cert = it->v[0];
        return EXIT_OK;
    case G_TLS_KEY:
        c->tls_key = it->v[0];
        return EXIT_OK;
    case G_TLS_SERVER_NAME:
        c->tls_server_name = it->v[0];
        return EXIT_OK;
    case G_TRACEPARENT: /* this thread's, for every LOCK, UNLOCK and fenced write */
        if (fl_trace_set(it->v[0]) != FL_OK)
            return opt_err(it,
                           "--traceparent: not a W3C traceparent '%s' (00-<32 hex>-<16 hex>-"
                           "<2 hex>, lowercase, ids not all zeros)",
                           it->v[0]);
        c->traced = 1;
        return EXIT_OK;
    default:
        return opt_err(it, "option %s is not valid here", it->argv[it->i - 1]);
    }
}

void cli_usage(FILE *f, const char *usage)
{
    fputs(usage, f);
    if (f == stdout)
        fputs("\nGlobal options (anywhere before --): --endpoints H:P[,H:P...], --timeout DUR, "
              "--json, -h/--help.\nDurations: 10 (seconds), 1500ms, 10s, 2m, 1h, 1.5s. See "
              "fencelock(1).\n",
              f);
}

void sub_start(struct sub_args *a, int argc, char **argv, int max_pos, const char *usage)
{
    memset(a, 0, sizeof *a);
    opt_start(&a->it, argc, argv);
    a->max_pos = max_pos;
    a->usage = usage;
    a->dash_positional = 1;
}

/* One positional too many. The subcommand that runs a command (lock) is told how to. */
static int too_many(struct sub_args *a, const char *arg)
{
    const char *sub = a->it.argv[0];
    if (!a->dash_positional && a->n_pos > 0)
        opt_err(&a->it,
                "unexpected argument '%s'; to run a command, put it after '--': "
                "fencelock %s NAME -- %s ...",
                arg, sub, arg);
    else
        opt_err(&a->it, "unexpected argument '%s'", arg);
    return sub_stop(a, EXIT_USAGE);
}

/* After "--": everything left is positional ("put k -- -5" stores "-5"). */
static int rest_positional(struct sub_args *a)
{
    for (int i = a->it.dashdash; i >= 0 && i < a->it.argc; i++) {
        if (a->n_pos >= a->max_pos)
            return too_many(a, a->it.argv[i]);
        a->pos[a->n_pos++] = a->it.argv[i];
    }
    return SUB_END;
}

int sub_stop(struct sub_args *a, int code)
{
    if (code == EXIT_USAGE)
        sub_usage(a);
    a->code = code;
    return SUB_STOP;
}

/* The first line of a usage text, without "usage: " and the newline: "%.*s" arguments. */
static int usage_line(const char *usage, const char **start)
{
    const char *p = strncmp(usage, "usage: ", 7) == 0 ? usage + 7 : usage;
    *start = p;
    return (int)strcspn(p, "\n");
}

int sub_usage(struct sub_args *a)
{
    const char *sub = a->it.argv[0], *line;
    int n = usage_line(a->usage, &line);
    if (a->it.err[0])
        fprintf(stderr, "fencelock %s: %s (see 'fencelock %s --help')\n", sub, a->it.err, sub);
    else
        fprintf(stderr, "fencelock %s: wrong arguments; usage: %.*s (see 'fencelock %s --help')\n",
                sub, n, line, sub);
    return EXIT_USAGE;
}

int sub_err(struct sub_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->it.err, sizeof a->it.err, fmt, ap);
    va_end(ap);
    return sub_usage(a);
}

int sub_next(struct cli *c, struct sub_args *a, const struct opt_spec *specs, int *id)
{
    for (;;) {
        int r = opt_next(&a->it, specs);
        if (r == OPT_END)
            return a->dash_positional ? rest_positional(a) : SUB_END;
        if (r == OPT_BAD)
            return sub_stop(a, EXIT_USAGE);
        if (r == G_HELP) {
            cli_usage(stdout, a->usage);
            a->code = EXIT_OK;
            return SUB_STOP;
        }
        if (r == OPT_POSITIONAL) {
            if (a->n_pos >= a->max_pos)
                return too_many(a, a->it.v[0]);
            a->pos[a->n_pos++] = a->it.v[0];
            continue;
        }
        if (r >= G_HELP) {
            if (cli_global(c, r, &a->it) != EXIT_OK)
                return sub_stop(a, EXIT_USAGE);
            continue;
        }
        *id = r;
        return SUB_OPT;
    }
}

const struct opt_spec cli_opts_limit[] = {
    {"limit", 0, 1, 1, "N"},
    {NULL, 0, 0, 0, NULL},
};

int sub_prefix_limit(struct cli *c, int argc, char **argv, const char *usage, const char **prefix,
                     size_t *limit)
{
    struct sub_args a;
    int id, r;
    *limit = 0;
    sub_start(&a, argc, argv, 1, usage);
    while ((r = sub_next(c, &a, cli_opts_limit, &id)) == SUB_OPT)
        if (parse_limit(&a.it, a.it.v[0], limit) != EXIT_OK)
            return sub_usage(&a);
    if (r == SUB_STOP)
        return a.code;
    *prefix = a.n_pos ? a.pos[0] : "";
    return cli_client(c) ? SUB_GO : c->client_code;
}

int sub_fixed(struct cli *c, struct sub_args *a, int argc, char **argv, int n_pos,
              const char *usage)
{
    int id, r;
    sub_start(a, argc, argv, n_pos, usage);
    while ((r = sub_next(c, a, NULL, &id)) == SUB_OPT)
        ;
    if (r == SUB_STOP)
        return a->code;
    if (a->n_pos != n_pos)
        return sub_usage(a);
    return cli_client(c) ? SUB_GO : c->client_code;
}
