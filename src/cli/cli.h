/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fencelock CLI — what every subcommand shares: the global settings (struct cli), the exit
 * codes, the option parser, number and duration parsing, and error reporting.
 *
 * Ownership: main() owns the one struct cli (on its stack) and the fl_client in it; a
 * subcommand borrows both and frees only what it allocated itself. Strings in struct cli
 * point into argv or the environment (never freed).
 *
 * Invariants: a subcommand returns an exit code from enum cli_exit (or a child's status);
 * it prints results to stdout and diagnostics to stderr, nothing else.
 */
#ifndef FENCELOCK_CLI_H
#define FENCELOCK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fencelock.h"

/* Exit codes, documented in --help and docs/fencelock.1 (EXIT STATUS). */
enum cli_exit {
    EXIT_OK = 0,
    EXIT_NO = 1,        /* a negative answer: not found, stale token, condition failed */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_NOTGOT = 3,    /* lock: not obtained within --wait */
    EXIT_ERROR = 4,     /* cluster unreachable, request refused, or another failure */
    EXIT_LOST = 5,      /* lock: the lock was lost while held (the command was killed) */
    EXIT_NOEXEC = 126,  /* lock: the command was found but could not be executed */
    EXIT_NOTFOUND = 127 /* lock: the command was not found */
};

#define CLI_DEFAULT_ENDPOINTS "127.0.0.1:7480"
/* How long refused connections are retried before "nothing listens" (fl_options.refused_ms). */
#define CLI_REFUSED_MS 1500

struct cli {
    const char *endpoints; /* from --endpoints, FENCELOCK_ENDPOINTS, or the default */
    int timeout_ms;        /* --timeout; 0 = the library's default */
    int json;              /* --json */
    fl_client *client;     /* made lazily by cli_client() */
    int client_code;       /* when cli_client() failed: EXIT_USAGE (bad list) or EXIT_ERROR */
    const char *user;      /* --user, else FENCELOCK_USER; NULL: "default" */
    char password[1025];   /* --password-file's first line, else FENCELOCK_PASSWORD; "": none */
    /* TLS: --tls, and the files of --tls-ca/--tls-cert/--tls-key, else FENCELOCK_TLS_CA/
     * CERT/KEY (NULL: none); any of them turns TLS on (fl_options.tls*) */
    int tls;
    const char *tls_ca, *tls_cert, *tls_key, *tls_server_name;
    int traced; /* --traceparent given (fl_trace_set done); else $TRACEPARENT is used */
};

/* The client for c->endpoints, made on first use. NULL (after printing why) on failure. */
fl_client *cli_client(struct cli *c);
/* The same without the message. */
fl_client *cli_client_quiet(struct cli *c);
/* A client of its own (the caller frees it) for `endpoints`, with c's options and
   credentials: `members list` asks each member on its own. NULL if the list is bad. */
fl_client *cli_client_new(struct cli *c, const char *endpoints);

/* Print "fencelock: <what>: <fl_strerror(err)>[: <detail>]" to stderr. */
void cli_fail(struct cli *c, fl_err err, const char *what);

/* Print "fencelock: <fmt...>" to stderr (usage and local errors). */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The exit code for an error of the library: EXIT_NO for negative answers, EXIT_USAGE for
   FL_EINVAL, EXIT_ERROR otherwise. */
int cli_exit_for(fl_err err);

/* ---- parsing ---- */

struct opt_iter;

/* "1500ms", "10s", "2m", "1h", "1.5s"; a bare number is seconds, as for flock -w, timeout(1)
   and sleep(1). 0 on success. */
int parse_duration(const char *s, uint64_t *ms);
/* The shortest TTL the CLI accepts: below it, keepalives every TTL/3 leave no room for one
   slow round trip, and the drift margin eats the rest. */
#define CLI_MIN_TTL_MS 1000
/* A --ttl value (option name opt, without "--"): a duration of at least CLI_MIN_TTL_MS.
   EXIT_OK, or EXIT_USAGE with why in it->err. */
int parse_ttl(struct opt_iter *it, const char *opt, const char *s, uint64_t *ms);
/* At most n-1 bytes of s for a message: a long name is cut, with its length said. */
const char *cli_shown(const char *s, char *buf, size_t n);
/* An unsigned decimal integer, whole string, at most 2^62 (common/num.h's parser with the CLI's
   bound). 0 on success. */
int cli_parse_u64(const char *s, uint64_t *v);
/* The value of --limit (1 or more). EXIT_OK, or EXIT_USAGE with why in it->err. */
int parse_limit(struct opt_iter *it, const char *s, size_t *limit);

/*
 * A small option parser (no global state, unlike getopt): options may come before, between
 * and after the positional arguments; "--" ends the options. An option is "--name value",
 * "--name=value" or, if it has a short letter, "-x value"; nargs values follow it (0..2).
 */
struct opt_spec {
    const char *name; /* without the leading "--" */
    char letter;      /* short form, or 0 */
    int nargs;        /* values that follow */
    int id;           /* returned by opt_next; must be > 0 */
    /* What the values are (the usage's words: "DUR", "N", "NAME TOKEN"); shell completion
       offers file names for a value named FILE and nothing for the others. NULL: no value. */
    const char *arg;
};

enum { OPT_POSITIONAL = -1, OPT_END = 0, OPT_BAD = -2 };

struct opt_iter {
    int argc;
    char **argv;
    int i;            /* next argument to look at */
    int dashdash;     /* index just after "--", or -1 if none was seen */
    const char *v[2]; /* the option's values, or v[0] = the positional argument */
    char err[320];    /* why the command line is wrong (OPT_BAD, a usage error), or "" */
};

void opt_start(struct opt_iter *it, int argc, char **argv);
/* The next option's id (from specs, which ends with a NULL name and may be NULL, or a global
   one), OPT_POSITIONAL, OPT_END (no more, or "--" seen) or OPT_BAD (why is in it->err). */
int opt_next(struct opt_iter *it, const struct opt_spec *specs);

/* Ids of the global options, which every subcommand accepts too (opt_next looks them up
   after the subcommand's own table). */
enum {
    G_HELP = 1000,
    G_ENDPOINTS,
    G_TIMEOUT,
    G_JSON,
    G_USER,
    G_PASSWORD_FILE,
    G_TLS,
    G_TLS_CA,
    G_TLS_CERT,
    G_TLS_KEY,
    G_TLS_SERVER_NAME,
    G_TRACEPARENT,
    G_VERSION,
};
/* Apply a global option (G_ENDPOINTS, G_TIMEOUT or G_JSON). EXIT_OK, or EXIT_USAGE with
   why in it->err. */
int cli_global(struct cli *c, int id, struct opt_iter *it);
/* Format why the command line is wrong into it->err; returns EXIT_USAGE. */
int opt_err(struct opt_iter *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The loop every subcommand runs over its arguments: handles global options and --help
 * (printing `usage`), collects positionals into pos[0..max_pos), and hands each of the
 * subcommand's own options to the caller (*id, values in a->it.v). Returns SUB_OPT for such
 * an option, SUB_END at the end (with dash_positional 0, a->it.dashdash tells whether "--"
 * ended it and where the rest starts), or SUB_STOP when the subcommand must return a->code at
 * once (after --help, or a usage error already printed).
 */
enum { SUB_STOP = -1, SUB_END = 0, SUB_OPT = 1 };
struct sub_args {
    struct opt_iter it;
    const char *pos[4];
    int n_pos;
    int max_pos;
    int code;
    int dash_positional; /* 1 (default): arguments after "--" are positionals; 0: the caller's */
    const char *usage;
};
void sub_start(struct sub_args *a, int argc, char **argv, int max_pos, const char *usage);
int sub_next(struct cli *c, struct sub_args *a, const struct opt_spec *specs, int *id);
/* Report a usage error (if code is EXIT_USAGE); set a->code; return SUB_STOP. */
int sub_stop(struct sub_args *a, int code);
/* Report the usage error on one line of stderr: a->it.err (set by sub_err or the parser) or,
   if none, the usage's first line; then where the help is. Returns EXIT_USAGE. */
int sub_usage(struct sub_args *a);
/* Format a usage error into a->it.err and report it (sub_usage). Returns EXIT_USAGE. */
int sub_err(struct sub_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The arguments `[PREFIX] [--limit N]` (keys, locks) and the client: SUB_GO with *prefix
   ("" if none) and *limit (0 if none), else the exit code to return at once (after --help
   or a usage error). */
enum { SUB_GO = -1 };

/* A subcommand with no options of its own and exactly n_pos positionals (in a->pos), and the
   client: SUB_GO, else the exit code to return at once. */
int sub_fixed(struct cli *c, struct sub_args *a, int argc, char **argv, int n_pos,
              const char *usage);
int sub_prefix_limit(struct cli *c, int argc, char **argv, const char *usage, const char **prefix,
                     size_t *limit);

/* Warn on stderr (once per option) when a --ttl written as a bare number is over an hour:
   likely milliseconds meant as seconds. */
void cli_warn_long_ttl(const char *opt, const char *s, uint64_t ms);

/* Print usage to f (stdout for --help, stderr for errors). */
void cli_usage(FILE *f, const char *usage);

/*
 * ---- the command table (table.c) ----
 * One row per subcommand: its name, handler, synopsis and summary (the command list of
 * `fencelock --help`), its option table (the one opt_next parses with) and the operations its
 * first argument names. Dispatch, the --help command list and the completion scripts of
 * `fencelock completion bash|zsh` are all made from these rows and the option tables, so a
 * new command or option appears everywhere at once. Read-only, compiled in: nothing to free.
 */
enum {
    CLI_RUNS_CMD = 1, /* takes `-- CMD [ARGS...]`: the word after "--" is a command */
    CLI_FILE_ARG = 2, /* the argument after its operation is a file (snapshot save FILE) */
};
struct cli_command {
    const char *name;
    int (*fn)(struct cli *c, int argc, char **argv);
    const char *synopsis;        /* the arguments; "\n" continues on an indented line */
    const char *summary;         /* what it does; "\n" continues on an indented line */
    const struct opt_spec *opts; /* its options, ending with a NULL name; NULL: none */
    const char *ops;             /* the operations its first argument names ("open close"), or
                                    NULL; "@commands": the command names (help) */
    int flags;                   /* CLI_RUNS_CMD, CLI_FILE_ARG */
};
extern const struct cli_command cli_commands[];
extern const size_t cli_n_commands;
/* The global options (args.c), accepted before the command and by every subcommand. */
extern const struct opt_spec cli_global_opts[];
/* The row of command `name`, or NULL. */
const struct cli_command *cli_command_find(const char *name);
/* The command list of `fencelock --help`, made from the rows. */
void cli_print_commands(FILE *f);

/* Each subcommand's option table (the rows point at them). */
extern const struct opt_spec cli_opts_lock[], cli_opts_sem[], cli_opts_get[], cli_opts_put[],
    cli_opts_del[], cli_opts_incr[], cli_opts_txn[], cli_opts_limit[], cli_opts_members[],
    cli_opts_session[], cli_opts_watch[], cli_opts_leader[], cli_opts_revoke[], cli_opts_latch[],
    cli_opts_history[], cli_opts_run[], cli_opts_token[];

/* ---- subcommands: (c, argc, argv) with argv[0] the subcommand's name; return an exit code ---- */
int cli_cmd_lock(struct cli *c, int argc, char **argv);
int cli_cmd_get(struct cli *c, int argc, char **argv);
int cli_cmd_put(struct cli *c, int argc, char **argv);
int cli_cmd_del(struct cli *c, int argc, char **argv);
int cli_cmd_incr(struct cli *c, int argc, char **argv);
int cli_cmd_txn(struct cli *c, int argc, char **argv); /* txn.c */
int cli_cmd_keys(struct cli *c, int argc, char **argv);
int cli_cmd_lock_info(struct cli *c, int argc, char **argv);
int cli_cmd_locks(struct cli *c, int argc, char **argv);
int cli_cmd_waits(struct cli *c, int argc, char **argv);
int cli_cmd_history(struct cli *c, int argc, char **argv);
int cli_cmd_fence_check(struct cli *c, int argc, char **argv);
int cli_cmd_sign(struct cli *c, int argc, char **argv);
int cli_cmd_status(struct cli *c, int argc, char **argv);
int cli_cmd_members(struct cli *c, int argc, char **argv);
int cli_cmd_session(struct cli *c, int argc, char **argv);
int cli_cmd_watch(struct cli *c, int argc, char **argv);
int cli_cmd_sem(struct cli *c, int argc, char **argv);
int cli_cmd_elect(struct cli *c, int argc, char **argv);
int cli_cmd_leader(struct cli *c, int argc, char **argv);
int cli_cmd_latch(struct cli *c, int argc, char **argv);
int cli_cmd_barrier(struct cli *c, int argc, char **argv);
int cli_cmd_snapshot(struct cli *c, int argc, char **argv);
int cli_cmd_completion(struct cli *c, int argc, char **argv);
int cli_cmd_revoke(struct cli *c, int argc, char **argv);
int cli_cmd_token(struct cli *c, int argc, char **argv);

#endif
