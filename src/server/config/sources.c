/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sources.c — where each setting's value comes from, and --print-config.
 *
 * Three sources apply in order, each overriding the one before: --config FILE (or the file
 * FENCELOCK_CONFIG names), FENCELOCK_<FLAG> variables, the command line (`--flag value` or
 * `--flag=value`; a flag without a value is a boolean row, `--flag=false` allowed). Every value
 * goes through the same cfg_set (value.c), so a bad one is refused the same way wherever it is
 * written, naming its file and line or its variable. The keys and variables are the table's
 * names (table.c). The record of each setting's source lives only during srv_config_parse and is
 * freed there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "raft/rn.h"
#include "server/config/config_int.h"
#include "server/server.h"

#define CFG_LINE_MAX 8192       /* longest line of a config file */
#define CFG_WHERE_MAX 600       /* "FILE:LINE: " or "FENCELOCK_X: " */
#define ENV_PREFIX "FENCELOCK_" /* then the flag's name upper-cased, '-' as '_' */
#define ENV_NAME_MAX 64

enum src_kind { SRC_DEFAULT, SRC_FILE, SRC_ENV, SRC_FLAG };

struct src {
    enum src_kind kind;
    unsigned line; /* SRC_FILE */
    char *given;   /* owned: the text the source gave */
};

struct sources {
    struct src *v;    /* cfg_n_rows entries, indexed like cfg_rows */
    const char *file; /* the config file, borrowed from argv or the environment; NULL none */
    bool print;       /* --print-config */
};

/* FENCELOCK_ variables that are not settings but are known: FENCELOCK_CONFIG (the file),
 * FENCELOCK_PEER_PASSWORD (the peer password itself), test and debugging switches, and the
 * fencelock CLI's. */
static const char *const env_known[] = {"CONFIG",    "PEER_PASSWORD", "NO_CONFIG_REPAIR",
                                        "NO_CGROUP", "RAFT_CAPTURE",  "ENDPOINTS",
                                        "USER",      "PASSWORD",      "NAME",
                                        "SESSION",   "TOKEN",         "MODE"};

static int record(struct sources *S, size_t id, enum src_kind kind, unsigned line, const char *v)
{
    char *dup = strdup(v);
    if (!dup) {
        fprintf(stderr, "fencelockd: out of memory\n");
        return -1;
    }
    free(S->v[id].given);
    S->v[id] = (struct src){.kind = kind, .line = line, .given = dup};
    return 0;
}

static int set_from(struct srv_config *c, struct sources *S, size_t id, const char *v,
                    enum src_kind kind, unsigned line, const char *where)
{
    return cfg_set(c, &cfg_rows[id], v, where) || record(S, id, kind, line, v) ? -1 : 0;
}

/* "--max-clients" -> "FENCELOCK_MAX_CLIENTS". */
static void env_name(const char *flag, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s%s", ENV_PREFIX, flag + 2);
    for (char *p = out + sizeof(ENV_PREFIX) - 1; n > 0 && *p; p++)
        *p = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* A comment after a value starts at a '#' that follows a blank (so a '#' inside a path stays). */
static void cut_comment(char *v)
{
    for (char *p = v; *p; p++)
        if (*p == '#' && p > v && (p[-1] == ' ' || p[-1] == '\t')) {
            *p = 0;
            return;
        }
}

/* One line of the config file: blank, a # comment, or `key = value`. */
static int file_line(struct srv_config *c, struct sources *S, char *line, size_t n, unsigned ln)
{
    char where[CFG_WHERE_MAX], flag[CFG_LINE_MAX + 3];
    snprintf(where, sizeof where, "%.500s:%u: ", S->file, ln);
    if (n > CFG_LINE_MAX || memchr(line, 0, n)) {
        fprintf(stderr, "fencelockd: %sline longer than %d bytes or with a NUL byte\n", where,
                CFG_LINE_MAX);
        return -1;
    }
    char *s = trim(line);
    if (!*s || *s == '#')
        return 0;
    char *eq = strchr(s, '=');
    if (!eq) {
        fprintf(stderr, "fencelockd: %sexpected `key = value`, got '%s'\n", where, s);
        return -1;
    }
    *eq = 0;
    char *key = trim(s), *v = eq + 1;
    cut_comment(v);
    v = trim(v);
    snprintf(flag, sizeof flag, "--%s", key);
    int id = *key == '-' ? -1 : cfg_id(flag, strlen(flag));
    if (id < 0) {
        fprintf(stderr,
                "fencelockd: %sunknown key '%s' (keys are the long flags of --help without "
                "their dashes)\n",
                where, key);
        return -1;
    }
    if (S->v[id].kind == SRC_FILE) {
        fprintf(stderr, "fencelockd: %s%s given twice (first on line %u)\n", where, key,
                S->v[id].line);
        return -1;
    }
    return set_from(c, S, (size_t)id, v, SRC_FILE, ln, where);
}

static int load_file(struct srv_config *c, struct sources *S)
{
    FILE *f = fopen(S->file, "r");
    if (!f) {
        fprintf(stderr, "fencelockd: cannot read config file %s: %s\n", S->file, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned ln = 0;
    int rc = 0;
    while (!rc && (n = getline(&line, &cap, f)) >= 0)
        rc = file_line(c, S, line, (size_t)n, ++ln);
    if (!rc && ferror(f)) {
        fprintf(stderr, "fencelockd: error reading config file %s\n", S->file);
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* A FENCELOCK_ variable that names no setting is most likely a typo: say so, but start (the
 * CLI's variables may share the environment, and later versions may add more). */
static void warn_unknown_env(void)
{
    const size_t pl = sizeof(ENV_PREFIX) - 1;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, ENV_PREFIX, pl))
            continue;
        size_t n = strcspn(*e, "=");
        bool known = false;
        for (size_t i = 0; !known && i < sizeof(env_known) / sizeof(env_known[0]); i++)
            known = n - pl == strlen(env_known[i]) && !strncmp(*e + pl, env_known[i], n - pl);
        for (size_t id = 0; !known && id < cfg_n_rows; id++) {
            char name[ENV_NAME_MAX];
            env_name(cfg_rows[id].name, name, sizeof name);
            known = n == strlen(name) && !strncmp(*e, name, n);
        }
        if (!known)
            fprintf(stderr, "fencelockd: warning: %.*s is not a setting; ignored\n",
                    (int)(n < 100 ? n : 100), *e);
    }
}

/* The variable's name onto the list the start's log line shows ("..." once it is full). */
static void note_env(struct srv_config *c, const char *name)
{
    size_t n = strlen(c->config_env), cap = sizeof c->config_env;
    if (n && !strcmp(c->config_env + n - 3, "..."))
        return;
    if (n + 2 + strlen(name) + 4 < cap)
        snprintf(c->config_env + n, cap - n, "%s%s", n ? ", " : "", name);
    else
        snprintf(c->config_env + n, cap - n, "%s", n ? ", ..." : "...");
}

/* An empty variable counts as unset (as an EnvironmentFile's `FENCELOCK_X=` placeholder). */
static int load_env(struct srv_config *c, struct sources *S)
{
    for (size_t id = 0; id < cfg_n_rows; id++) {
        char name[ENV_NAME_MAX], where[CFG_WHERE_MAX];
        env_name(cfg_rows[id].name, name, sizeof name);
        const char *v = getenv(name);
        if (!v || !*v)
            continue;
        snprintf(where, sizeof where, "environment %s: ", name);
        if (set_from(c, S, id, v, SRC_ENV, 0, where))
            return -1;
        note_env(c, name);
    }
    warn_unknown_env();
    return 0;
}

static bool is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* One command-line argument: "--name" or "--name=value" (the value after the first '='). */
struct arg {
    const char *name; /* the whole argument */
    size_t len;       /* of the name, without "=value" */
    const char *eq;   /* the value after '=', or NULL */
};

static struct arg arg_split(const char *a)
{
    const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
    return (struct arg){a, eq ? (size_t)(eq - a) : strlen(a), eq ? eq + 1 : NULL};
}

static bool arg_is(const struct arg *a, const char *name)
{
    return a->len == strlen(name) && !strncmp(a->name, name, a->len);
}

/* A boolean row written without '=' takes no value from the next argument. */
static bool is_bare_bool(const struct arg *a)
{
    int id = cfg_id(a->name, a->len);
    return !a->eq && id >= 0 && cfg_rows[id].type == CFG_BOOL;
}

/* First pass over argv: --help, --print-config and --config, which decide what else is read.
 * 1 if --help was printed. Unknown flags are left to apply_argv. */
static int scan_argv(int argc, char **argv, struct sources *S)
{
    for (int i = 1; i < argc; i++) {
        struct arg a = arg_split(argv[i]);
        if (is_help(argv[i])) {
            srv_config_usage(stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--print-config"))
            S->print = true;
        else if (arg_is(&a, "--config") && a.eq)
            S->file = a.eq;
        else if (arg_is(&a, "--config") && i + 1 < argc)
            S->file = argv[++i];
        else if (!a.eq && !is_bare_bool(&a) && i + 1 < argc)
            i++; /* its value */
    }
    return 0;
}

static int apply_argv(struct srv_config *c, struct sources *S, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct arg a = arg_split(argv[i]);
        int id = cfg_id(a.name, a.len);
        if (!strcmp(argv[i], "--print-config"))
            continue;
        if (is_bare_bool(&a)) {
            if (set_from(c, S, (size_t)id, "true", SRC_FLAG, 0, ""))
                return -1;
            continue;
        }
        if (id < 0 && !arg_is(&a, "--config")) {
            fprintf(stderr, "fencelockd: unknown flag %s (see --help)\n", argv[i]);
            return -1;
        }
        const char *v = a.eq;
        if (!v && i + 1 >= argc) {
            fprintf(stderr, "fencelockd: %s needs a value (see --help)\n", argv[i]);
            return -1;
        }
        if (!v)
            v = argv[++i];
        if (id >= 0 && set_from(c, S, (size_t)id, v, SRC_FLAG, 0, ""))
            return -1;
    }
    return 0;
}

/* One `key = value  # source` line per setting; unset ones commented out, so the output is
 * itself a valid config file. Secrets are never printed: a password is only ever named by its
 * file (or said to be in the environment). */
static void print_config(const struct srv_config *c, const struct sources *S)
{
    if (S->file)
        printf("# fencelockd %s, config file %s\n", FENCELOCK_VERSION, S->file);
    else
        printf("# fencelockd %s, no config file\n", FENCELOCK_VERSION);
    for (size_t id = 0; id < cfg_n_rows; id++) {
        char val[CFG_LINE_MAX], src[CFG_WHERE_MAX];
        const struct src *x = &S->v[id];
        cfg_show(c, &cfg_rows[id], x->given, val, sizeof val);
        if (x->kind == SRC_FILE)
            snprintf(src, sizeof src, "file:%u", x->line);
        else if (x->kind == SRC_ENV) {
            char name[ENV_NAME_MAX];
            env_name(cfg_rows[id].name, name, sizeof name);
            snprintf(src, sizeof src, "env %s", name);
        } else
            snprintf(src, sizeof src, "%s", x->kind == SRC_FLAG ? "flag" : "default");
        if (*val)
            printf("%s = %s  # %s\n", cfg_rows[id].name + 2, val, src);
        else
            printf("# %s =  # %s (unset)\n", cfg_rows[id].name + 2, src);
    }
    const char *pw = getenv(ENV_PREFIX "PEER_PASSWORD");
    if (pw && *pw)
        printf("# " ENV_PREFIX "PEER_PASSWORD is set (not shown)\n");
}

int srv_config_parse(struct srv_config *c, int argc, char **argv)
{
    struct sources S = {.v = calloc(cfg_n_rows, sizeof(struct src))};
    if (!S.v)
        return -1;
    int rc = scan_argv(argc, argv, &S);
    const char *env_file = getenv(ENV_PREFIX "CONFIG");
    if (!rc && !S.file && env_file && *env_file)
        S.file = env_file;
    if (!rc && S.file) {
        rc = load_file(c, &S);
        snprintf(c->config_file, sizeof c->config_file, "%s", S.file);
    }
    if (!rc)
        rc = load_env(c, &S);
    if (!rc)
        rc = apply_argv(c, &S, argc, argv);
    if (!rc)
        rc = cfg_rules_check(c);
    if (!rc && S.print) {
        print_config(c, &S);
        fflush(stdout);
        rc = 1;
    }
    for (size_t id = 0; id < cfg_n_rows; id++)
        free(S.v[id].given);
    free(S.v);
    return rc;
}
