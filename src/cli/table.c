/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command table: one row per subcommand (cli.h, struct cli_command). main.c dispatches
 * through it, `fencelock --help` prints its command list from it, and complete.c makes the
 * bash and zsh completion scripts from it and from the option tables the rows point at.
 */
#include <string.h>

#include "cli/cli.h"

const struct cli_command cli_commands[] = {
    {"lock", cli_cmd_lock,
     "NAME [--shared] [--ttl DUR] [--wait DUR] [--lock-delay DUR] [--kill-grace DUR]\n"
     "[--name LABEL] [-E N] [--error-exit-code N] [--revoke-signal SIG]\n"
     "[--value V] [--max-hold DUR] [-- CMD [ARGS...]]",
     "run CMD while holding lock NAME (or hold it until signalled);\n"
     "--shared: as one of its readers (a read-write lock)",
     cli_opts_lock, NULL, CLI_RUNS_CMD},
    {"get", cli_cmd_get, "KEY | --prefix PREFIX [--limit N]",
     "print a key's value, or every key with PREFIX and its value", cli_opts_get, NULL, 0},
    {"put", cli_cmd_put, "KEY [VALUE] [--fence NAME TOKEN] [--ifrev REV] [--lease SID]",
     "write a key (VALUE omitted or '-': read stdin)", cli_opts_put, NULL, 0},
    {"del", cli_cmd_del, "KEY [--fence NAME TOKEN] [--ifrev REV]", "delete a key", cli_opts_del,
     NULL, 0},
    {"incr", cli_cmd_incr, "KEY [--by N] [--fence NAME TOKEN]",
     "add 1 (or N, may be negative) to a counter key; print its new value", cli_opts_incr, NULL, 0},
    {"txn", cli_cmd_txn, "[--fence NAME TOKEN] [IF COMPARE]... THEN [OP]... [ELSE [OP]...]",
     "compares, then every op of one branch in one entry (no words: read stdin)", cli_opts_txn,
     NULL, 0},
    {"keys", cli_cmd_keys, "[PREFIX] [--limit N]", "list keys", cli_opts_limit, NULL, 0},
    {"lock-info", cli_cmd_lock_info, "NAME", "holder, token and waiters of a lock", NULL, NULL, 0},
    {"locks", cli_cmd_locks, "[PREFIX] [--limit N]", "existing locks", cli_opts_limit, NULL, 0},
    {"waits", cli_cmd_waits, "[PREFIX]", "who waits for whom (queued requests and their blockers)",
     NULL, NULL, 0},
    {"history", cli_cmd_history, "NAME [--count N] [--before REV]",
     "who held lock NAME: grants newest first, with tokens, hold and wait times", cli_opts_history,
     NULL, 0},
    {"fence-check", cli_cmd_fence_check, "NAME TOKEN",
     "exit 0 if TOKEN is current for NAME, 1 if stale", NULL, NULL, 0},
    {"sign", cli_cmd_sign, "NAME TOKEN",
     "print TOKEN's signature (servers with --token-key), 1 if stale", NULL, NULL, 0},
    {"revoke", cli_cmd_revoke, "NAME [--deadline DUR] [--reason TEXT]",
     "ask the holder of lock NAME to let go (and take it at DUR)", cli_opts_revoke, NULL, 0},
    {"token", cli_cmd_token, "[--ttl DUR]",
     "print a bearer token for the HTTP API (Authorization: Bearer)", cli_opts_token, NULL, 0},
    {"status", cli_cmd_status, "", "cluster members, leader, term, indexes", NULL, NULL, 0},
    {"members", cli_cmd_members, "list | add ID RAFT_ADDR | remove ID [--force] | transfer [ID]",
     "every member's health (list), or change the membership", cli_opts_members,
     "list add remove transfer", 0},
    {"session", cli_cmd_session,
     "list [--limit N] | info SID | open [--ttl DUR] [--lock-delay DUR]\n"
     "[--name LABEL] | keepalive SID | close SID | revoke SID",
     "sessions: list them, show one, or open and end them from a script", cli_opts_session,
     "list info open keepalive close revoke", 0},
    {"watch", cli_cmd_watch, "[PREFIX] [--from ID] [--count N]",
     "print events (keys, locks, sessions) as they happen", cli_opts_watch, NULL, 0},
    {"sem", cli_cmd_sem, "NAME LIMIT [lock's options] [-- CMD [ARGS...]]",
     "run CMD holding one of LIMIT permits of semaphore NAME", cli_opts_sem, NULL, CLI_RUNS_CMD},
    {"elect", cli_cmd_elect, "NAME VALUE [lock's options] [-- CMD [ARGS...]]",
     "run CMD only while leader of election NAME", cli_opts_sem, NULL, CLI_RUNS_CMD},
    {"latch", cli_cmd_latch,
     "create NAME COUNT | countdown NAME | wait NAME [--wait DUR] | info NAME |\n"
     "delete NAME | join NAME [lock's options] -- CMD [ARGS...]",
     "a countdown latch: create, count down, wait for zero, show, delete;\n"
     "join: run CMD, count down only if it exits 0 (else the latch breaks)",
     cli_opts_latch, "create countdown wait info delete join", CLI_RUNS_CMD},
    {"barrier", cli_cmd_barrier, "NAME COUNT [--wait DUR] [lock's options] -- CMD [ARGS...]",
     "run CMD once COUNT sessions entered barrier NAME; leave, wait for all", cli_opts_run, NULL,
     CLI_RUNS_CMD},
    {"leader", cli_cmd_leader, "NAME [--observe]",
     "print the leader (--observe: one line per change)", cli_opts_leader, NULL, 0},
    {"snapshot", cli_cmd_snapshot, "save FILE", "an online backup of the whole state (admin)", NULL,
     "save", CLI_FILE_ARG},
    {"completion", cli_cmd_completion, "bash | zsh",
     "print the shell completion script (made from this table)", NULL, "bash zsh", 0},
    {"help", NULL, "[COMMAND]", "this text, or a command's", NULL, "@commands", 0},
};
const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];

const struct cli_command *cli_command_find(const char *name)
{
    for (size_t i = 0; i < cli_n_commands; i++)
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    return NULL;
}

/* The summary starts in this column when the name and synopsis leave room for it. */
#define SUMMARY_COL 29
#define INDENT 2      /* of a command's line */
#define CONT_INDENT 7 /* of a synopsis's continuation lines */

/* Text with its "\n" continuations each indented by `indent` spaces; returns the column the
   last line ends at. */
static int put_lines(FILE *f, const char *s, int indent, int col)
{
    for (;;) {
        size_t n = strcspn(s, "\n");
        fprintf(f, "%.*s", (int)n, s);
        col += (int)n;
        if (s[n] == '\0')
            return col;
        fprintf(f, "\n%*s", indent, "");
        col = indent;
        s += n + 1;
    }
}

void cli_print_commands(FILE *f)
{
    for (size_t i = 0; i < cli_n_commands; i++) {
        const struct cli_command *k = &cli_commands[i];
        fprintf(f, "%*s%s%s", INDENT, "", k->name, k->synopsis[0] ? " " : "");
        int col = put_lines(f, k->synopsis, CONT_INDENT,
                            INDENT + (int)strlen(k->name) + (k->synopsis[0] != 0));
        if (col < SUMMARY_COL)
            fprintf(f, "%*s", SUMMARY_COL - col, "");
        else
            fprintf(f, "\n%*s", SUMMARY_COL, "");
        put_lines(f, k->summary, SUMMARY_COL, SUMMARY_COL);
        fputc('\n', f);
    }
}
