/* SPDX-License-Identifier: Apache-2.0 */
/* `fencelock lock`, `sem` and `elect`: the command lines; the work is in run.c and acquire.c. */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "cli/run.h"

static const char usage_lock[] =
    "usage: fencelock lock NAME [--shared] [--also NAME]... [--also-shared NAME]...\n"
    "                      [--ttl DUR] [--wait DUR] [--lock-delay DUR] [--kill-grace DUR]\n"
    "                      [--name LABEL] [-E|--conflict-exit-code N] [--error-exit-code N]\n"
    "                      [--revoke-signal SIG] [--value V] [--max-hold DUR]\n"
    "                      [-- CMD [ARGS...]]\n"
    "Acquire lock NAME, run CMD with FENCELOCK_TOKEN, FENCELOCK_SESSION, FENCELOCK_NAME,\n"
    "FENCELOCK_ENDPOINTS and FENCELOCK_MODE in its environment, release the lock when it exits.\n"
    "Without CMD, print the token and hold the lock until SIGINT, SIGTERM, SIGHUP or SIGQUIT.\n"
    "CMD runs in a process group of its own, which has the terminal while it runs (input and\n"
    "Ctrl-C reach it); SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to fencelock\n"
    "are forwarded to it. If the session's lease is at risk, CMD and everything it started\n"
    "get SIGTERM when less than the kill grace is left and SIGKILL when the lease may have run\n"
    "out, so they are dead before the servers can give the lock to anyone else. When CMD\n"
    "exits, whatever it left running is killed before the lock is released.\n"
    "  --shared          take it as one of its readers (a read-write lock): any number of\n"
    "                    --shared holders run at once, a plain `lock` waits for all of them\n"
    "                    (and they queue behind it); FENCELOCK_MODE is shared, else exclusive.\n"
    "                    A shared token passes fence-check but not a fenced put/del\n"
    "  --also NAME       take lock NAME too, in the same request (LOCK.MULTI; repeat for more;\n"
    "                    --also-shared NAME: that one shared): every lock is granted at once or\n"
    "                    none is, waiting in line on every name, so `lock A --also B` and\n"
    "                    `lock B --also A` never deadlock. CMD also gets FENCELOCK_TOKENS (the\n"
    "                    tokens, space-separated), FENCELOCK_NAMES (one per line) and\n"
    "                    FENCELOCK_MODES, in the order given; FENCELOCK_TOKEN and _NAME are\n"
    "                    the first NAME's, FENCELOCK_MODE is multi\n"
    "  --ttl DUR         session TTL (default 10s; at least 1s)\n"
    "  --wait DUR        give up (exit 3) if not granted within DUR (default: wait for ever;\n"
    "                    0: try once)\n"
    "  --lock-delay DUR  keep the lock unavailable this long if the session expires (default 0)\n"
    "  --kill-grace DUR  SIGTERM this long before SIGKILL (default: the smaller of 2s and\n"
    "                    TTL/4; must be less than the TTL)\n"
    "  --name LABEL      session name shown by the servers (default: fencelock@HOST:PID)\n"
    "  --revoke-signal SIG  when someone revokes the lock (`fencelock revoke`), send CMD this\n"
    "                    signal (TERM, INT, HUP, QUIT, USR1, USR2 or a number; default TERM),\n"
    "                    and SIGKILL it and everything it started the kill grace before the\n"
    "                    revoke's deadline (one exclusive lock, no --also; the servers take\n"
    "                    the lock then)\n"
    "  --value V         the grant's value: who holds it and why (lock-info shows it)\n"
    "  --max-hold DUR    the servers end the grant DUR after it was made, even while the\n"
    "                    session lives; CMD gets SIGTERM the kill grace before that and\n"
    "                    SIGKILL (with everything it started) before it can have passed\n"
    "                    (one exclusive lock; measured from before the request was sent)\n"
    "  -E, --conflict-exit-code N\n"
    "                    exit N (0..255) instead of 3 when not obtained within --wait\n"
    "  --error-exit-code N\n"
    "                    exit N (0..255) instead of 4 and 5, fencelock's own failures\n"
    "Exit status: CMD's own: its status, 128+N if it died of signal N, 126/127 if it could not\n"
    "be run / was not found. fencelock's: 2 usage; 3 not obtained within --wait (or -E's N);\n"
    "4 cluster unreachable or other error (or --error-exit-code's N); 5 lock lost while CMD\n"
    "ran, CMD was killed (takes precedence; or --error-exit-code's N); 128+N if signal N\n"
    "ended the wait. Pick -E and --error-exit-code values that CMD never exits with.\n";

static const char usage_sem[] =
    "usage: fencelock sem NAME LIMIT [--permits K] [--ttl DUR] [--wait DUR] [--lock-delay DUR]\n"
    "                            [--kill-grace DUR] [--name LABEL] [-- CMD [ARGS...]]\n"
    "Take K permits (1 by default; 1..LIMIT) of semaphore NAME at once (at most LIMIT permits\n"
    "in use; the first acquirer sets the limit, another LIMIT is refused while the semaphore\n"
    "exists, unless an operator set the limit with SEM.SETLIMIT: then that one rules and LIMIT\n"
    "is ignored; waiters are served in order, a later one for fewer permits never goes first)\n"
    "and run CMD holding them,\n"
    "exactly as `fencelock lock` runs CMD (the same options, environment with FENCELOCK_MODE\n"
    "semaphore, signals, kill before the lease can lapse, and exit status).\n";

static const char usage_elect[] =
    "usage: fencelock elect NAME VALUE [--ttl DUR] [--wait DUR] [--lock-delay DUR]\n"
    "                              [--kill-grace DUR] [--name LABEL] [-- CMD [ARGS...]]\n"
    "Campaign in election NAME with VALUE; once leader, run CMD (FENCELOCK_TOKEN is the\n"
    "leader's fencing token, FENCELOCK_MODE leader), exactly as `fencelock lock` runs it: CMD\n"
    "is killed before the leadership's lease can lapse, and when it exits the session resigns\n"
    "(the next candidate leads). Options and exit status as for `fencelock lock`.\n";

static const char usage_latch_join[] =
    "usage: fencelock latch join NAME [--ttl DUR] [--lock-delay DUR] [--kill-grace DUR]\n"
    "                            [--name LABEL] [--error-exit-code N] -- CMD [ARGS...]\n"
    "Join latch NAME with a session of its own (a promise of one count-down; the latch must\n"
    "exist: `fencelock latch create`), run CMD (FENCELOCK_MODE latch, FENCELOCK_SESSION the\n"
    "session) as `fencelock lock` runs it, and count down only if CMD exits 0. If CMD fails,\n"
    "is killed, or fencelock itself dies (its session then expires), the session ends without\n"
    "counting down and the latch is BROKEN: every waiter (`fencelock latch wait`, LATCH.WAIT)\n"
    "gets BROKEN at once instead of waiting for a count that will never come, until the latch\n"
    "is deleted.\n"
    "Exit status: CMD's (the latch is then broken unless it is 0); 4 if the join or the\n"
    "count-down failed (a broken latch, or every count left already promised); 5 the session\n"
    "was lost while CMD ran (CMD was killed; the latch is broken).\n";

static const char usage_barrier[] =
    "usage: fencelock barrier NAME COUNT [--wait DUR] [--ttl DUR] [--lock-delay DUR]\n"
    "                                    [--kill-grace DUR] [--name LABEL] -- CMD [ARGS...]\n"
    "A double barrier of COUNT sessions: enter NAME with a session of its own, wait until COUNT\n"
    "sessions are inside, run CMD (FENCELOCK_MODE barrier) as `fencelock lock` runs it, then\n"
    "leave and wait until every session that entered has left. A session that ends inside (its\n"
    "fencelock killed, its lease lost) breaks the barrier for all (they fail with BROKEN, exit\n"
    "4); one that gives up before the barrier is full withdraws first and breaks nothing.\n"
    "  --wait DUR  the longest wait to enter (exit 3 if the barrier is not full by then), and\n"
    "              again to leave (default: wait for ever)\n"
    "Exit status: CMD's, once every session left; 3 not full within --wait; 4 broken, or the\n"
    "others did not leave within --wait (CMD had exited 0); 5 the session was lost while CMD\n"
    "ran (CMD was killed).\n";

enum {
    O_TTL = 1,
    O_WAIT,
    O_LOCKDELAY,
    O_GRACE,
    O_NAME,
    O_SHARED,
    O_CONFLICT,
    O_ERRCODE,
    O_ALSO,
    O_ALSO_SHARED,
    O_REVOKE_SIGNAL,
    O_PERMITS,
    O_VALUE,
    O_MAX_HOLD
};

/* The options of lock, sem and elect (sem and elect: all but --shared and --also*). */
/* clang-format off */
#define RUN_OPTS                                                    \
    {"ttl", 0, 1, O_TTL, "DUR"},                                    \
    {"wait", 0, 1, O_WAIT, "DUR"},                                  \
    {"lock-delay", 0, 1, O_LOCKDELAY, "DUR"},                       \
    {"kill-grace", 0, 1, O_GRACE, "DUR"},                           \
    {"name", 0, 1, O_NAME, "LABEL"},                                \
    {"conflict-exit-code", 'E', 1, O_CONFLICT, "N"},                \
    {"error-exit-code", 0, 1, O_ERRCODE, "N"}
/* clang-format on */

const struct opt_spec cli_opts_lock[] = {
    RUN_OPTS,
    {"shared", 0, 0, O_SHARED, NULL},
    {"also", 0, 1, O_ALSO, "NAME"},
    {"also-shared", 0, 1, O_ALSO_SHARED, "NAME"},
    {"revoke-signal", 0, 1, O_REVOKE_SIGNAL, "SIG"},
    {"value", 0, 1, O_VALUE, "V"},
    {"max-hold", 0, 1, O_MAX_HOLD, "DUR"},
    {NULL, 0, 0, 0, NULL},
};
const struct opt_spec cli_opts_sem[] = {
    RUN_OPTS,
    {"permits", 0, 1, O_PERMITS, "K"},
    {NULL, 0, 0, 0, NULL},
};
/* latch join and barrier: the supervisor's options, no lock-specific ones */
const struct opt_spec cli_opts_run[] = {
    RUN_OPTS,
    {NULL, 0, 0, 0, NULL},
};

#define EXIT_CODE_MAX 255      /* what an exit status holds */
#define SEM_LIMIT_MAX 1048576u /* the servers' bound (docs/protocol.md) */

/* -E / --error-exit-code N: 0..255 into *code. EXIT_OK or EXIT_USAGE. */
static int exit_code_opt(struct opt_iter *it, const char *opt, int *code)
{
    uint64_t v;
    if (cli_parse_u64(it->v[0], &v) || v > EXIT_CODE_MAX)
        return opt_err(it, "--%s: bad exit code '%s' (0..%d)", opt, it->v[0], EXIT_CODE_MAX);
    *code = (int)v;
    return EXIT_OK;
}

/* One option into o; `grace_set` records an explicit --kill-grace. EXIT_OK or EXIT_USAGE. */
static int lock_opt(int id, struct opt_iter *it, struct run_opts *o, int *grace_set)
{
    static const char *const names[] = {"", "ttl", "wait", "lock-delay", "kill-grace"};
    uint64_t *dst[] = {NULL, &o->ttl_ms, &o->wait_ms, &o->lockdelay_ms, &o->grace_ms};
    if (id == O_CONFLICT)
        return exit_code_opt(it, "conflict-exit-code", &o->conflict_code);
    if (id == O_ERRCODE)
        return exit_code_opt(it, "error-exit-code", &o->error_code);
    if (id == O_NAME) {
        o->label = it->v[0];
        return EXIT_OK;
    }
    if (id == O_PERMITS) { /* checked against LIMIT once it is read */
        uint64_t k;
        if (cli_parse_u64(it->v[0], &k) || k == 0 || k > SEM_LIMIT_MAX)
            return opt_err(it, "--permits: bad number '%s' (1..%u)", it->v[0], SEM_LIMIT_MAX);
        o->permits = (uint32_t)k;
        return EXIT_OK;
    }
    if (id == O_SHARED) {
        o->shared = 1;
        return EXIT_OK;
    }
    if (id == O_REVOKE_SIGNAL)
        return run_parse_signal(it->v[0], &o->revoke_signal)
                   ? opt_err(it, "--revoke-signal: unknown signal '%s' (e.g. TERM, USR1, 15)",
                             it->v[0])
                   : EXIT_OK;
    if (id == O_VALUE) {
        o->lock_value = it->v[0];
        return EXIT_OK;
    }
    if (id == O_MAX_HOLD)
        return parse_duration(it->v[0], &o->maxhold_ms) || o->maxhold_ms == 0
                   ? opt_err(it, "--max-hold: bad duration '%s' (e.g. 30s, 2m; more than 0)",
                             it->v[0])
                   : EXIT_OK;
    if (id == O_TTL)
        return parse_ttl(it, "ttl", it->v[0], &o->ttl_ms);
    if (parse_duration(it->v[0], dst[id]))
        return opt_err(it,
                       "--%s: bad duration '%s' (e.g. 30s, 500ms, 2m; a bare number is "
                       "seconds)",
                       names[id], it->v[0]);
    if (id == O_WAIT)
        o->wait_forever = 0;
    if (id == O_GRACE)
        *grace_set = 1;
    return EXIT_OK;
}

#define LOCK_DEFAULT_TTL_MS 10000
#define GRACE_MAX_MS 2000 /* default --kill-grace: at most this, */
#define GRACE_TTL_DIV 4   /* and at most a quarter of the TTL */

/* The smaller of 2 s and TTL/4, unless given; it must leave the command some lease. */
static int settle_grace(struct opt_iter *it, struct run_opts *o, int grace_set)
{
    uint64_t quarter = o->ttl_ms / GRACE_TTL_DIV;
    if (!grace_set)
        o->grace_ms = quarter < GRACE_MAX_MS ? quarter : GRACE_MAX_MS;
    if (o->grace_ms >= o->ttl_ms)
        return opt_err(it, "--kill-grace must be less than --ttl");
    return EXIT_OK;
}

/* --also / --also-shared NAME: one more lock of the same request (LOCK.MULTI). */
static int add_also(struct sub_args *a, struct run_opts *o, const char *name, bool shared)
{
    if (o->n_names == 0)
        o->n_names = 1; /* names[0] is the positional NAME, set once it is known */
    if (o->n_names == FL_LOCK_MULTI_MAX)
        return sub_err(a, "at most %d lock names", FL_LOCK_MULTI_MAX);
    if (!name[0])
        return sub_err(a, "a lock name is empty");
    for (size_t i = 1; i < o->n_names; i++)
        if (strcmp(o->names[i], name) == 0)
            return sub_err(a, "lock name '%s' given twice", name);
    o->names[o->n_names] = name;
    o->shared_of[o->n_names++] = shared;
    return EXIT_OK;
}

/* lock, sem and elect: n_pos positionals (the name, then the limit or the value). */
static int lock_like(struct cli *c, int argc, char **argv, const char *usage, enum run_kind kind)
{
    struct run_opts o = {.ttl_ms = LOCK_DEFAULT_TTL_MS,
                         .wait_forever = 1,
                         .kind = kind,
                         .conflict_code = EXIT_NOTGOT,
                         .error_code = -1,
                         .revoke_signal = SIGTERM};
    int n_pos = kind == RUN_LOCK || kind == RUN_LATCH ? 1 : 2;
    const struct opt_spec *specs = kind == RUN_LOCK                           ? cli_opts_lock
                                   : kind == RUN_LATCH || kind == RUN_BARRIER ? cli_opts_run
                                                                              : cli_opts_sem;
    struct sub_args a;
    int id, r, grace_set = 0;
    char label[128];
    sub_start(&a, argc, argv, n_pos, usage);
    a.dash_positional = 0; /* after "--" comes the command */
    while ((r = sub_next(c, &a, specs, &id)) == SUB_OPT) {
        if (id == O_ALSO || id == O_ALSO_SHARED) {
            if (add_also(&a, &o, a.it.v[0], id == O_ALSO_SHARED) != EXIT_OK)
                return EXIT_USAGE;
        } else if (lock_opt(id, &a.it, &o, &grace_set) != EXIT_OK) {
            return sub_usage(&a);
        }
    }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos < n_pos)
        return sub_err(&a, "%s",
                       kind == RUN_LOCK ? "no lock name given (fencelock lock NAME [-- CMD ...])"
                       : kind == RUN_SEM
                           ? "fencelock sem NAME LIMIT [-- CMD ...]: NAME and LIMIT needed"
                       : kind == RUN_LATCH ? "fencelock latch join NAME -- CMD ...: NAME needed"
                       : kind == RUN_BARRIER
                           ? "fencelock barrier NAME COUNT -- CMD ...: NAME and COUNT needed"
                           : "fencelock elect NAME VALUE [-- CMD ...]: NAME and VALUE needed");
    if (a.pos[0][0] == '\0')
        return sub_err(&a, "the name is empty");
    if ((o.lock_value || o.maxhold_ms) && (o.shared || o.n_names > 1))
        return sub_err(&a, "--value and --max-hold are for one exclusive lock (no --shared, "
                           "no --also)");
    o.names[0] = a.pos[0];
    o.shared_of[0] = (uint8_t)(o.shared != 0);
    for (size_t i = 1; i < o.n_names; i++)
        if (strcmp(o.names[i], a.pos[0]) == 0)
            return sub_err(&a, "lock name '%s' given twice", a.pos[0]);
    uint64_t lim = 0;
    if (kind == RUN_SEM && (cli_parse_u64(a.pos[1], &lim) || lim == 0 || lim > SEM_LIMIT_MAX))
        return sub_err(&a, "bad LIMIT '%s' (1..%u)", a.pos[1], SEM_LIMIT_MAX);
    if (kind == RUN_BARRIER && (cli_parse_u64(a.pos[1], &lim) || lim == 0 || lim > SEM_LIMIT_MAX))
        return sub_err(&a, "bad COUNT '%s' (1..%u)", a.pos[1], SEM_LIMIT_MAX);
    o.limit = (uint32_t)lim;
    if (kind == RUN_SEM && o.permits > o.limit)
        return sub_err(&a, "--permits %u is over LIMIT %u", o.permits, o.limit);
    if (kind == RUN_ELECT)
        o.value = a.pos[1];
    if (settle_grace(&a.it, &o, grace_set) != EXIT_OK)
        return sub_usage(&a);
    o.name = a.pos[0];
    o.shown = cli_shown(o.name, o.shown_buf, sizeof o.shown_buf);
    if (a.it.dashdash >= 0) {
        if (a.it.dashdash >= argc)
            return sub_err(&a, "no command after '--'");
        o.cmd = argv + a.it.dashdash; /* argv is NULL-terminated, as main's is */
    }
    if ((kind == RUN_LATCH || kind == RUN_BARRIER) && o.cmd == NULL)
        return sub_err(&a, "a command is needed: fencelock %s ... -- CMD [ARGS...]",
                       kind == RUN_LATCH ? "latch join NAME" : "barrier NAME COUNT");
    if (o.label == NULL) {
        char host[HOST_NAME_MAX + 1] = "";
        gethostname(host, sizeof host - 1);
        snprintf(label, sizeof label, "fencelock@%.64s:%ld", host, (long)getpid());
        o.label = label;
    }
    return run_locked(c, &o);
}

int cli_cmd_lock(struct cli *c, int argc, char **argv)
{
    return lock_like(c, argc, argv, usage_lock, RUN_LOCK);
}

int cli_cmd_sem(struct cli *c, int argc, char **argv)
{
    return lock_like(c, argc, argv, usage_sem, RUN_SEM);
}

int cli_cmd_elect(struct cli *c, int argc, char **argv)
{
    return lock_like(c, argc, argv, usage_elect, RUN_ELECT);
}

int cli_latch_join(struct cli *c, int argc, char **argv)
{
    return lock_like(c, argc, argv, usage_latch_join, RUN_LATCH);
}

int cli_cmd_barrier(struct cli *c, int argc, char **argv)
{
    return lock_like(c, argc, argv, usage_barrier, RUN_BARRIER);
}
