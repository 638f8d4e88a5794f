/* `fencelock lock`: the command line; the work is in run.c and acquire.c. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli/run.h"

static const char usage_lock[] =
    "usage: fencelock lock NAME [--shared] [--ttl DUR] [--wait DUR] [--lock-delay DUR]\n"
    "                      [--kill-grace DUR] [--name LABEL] [-- CMD [ARGS...]]\n"
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
    "  --ttl DUR         session TTL (default 10s; at least 1s)\n"
    "  --wait DUR        give up (exit 3) if not granted within DUR (default: wait for ever;\n"
    "                    0: try once)\n"
    "  --lock-delay DUR  keep the lock unavailable this long if the session expires (default 0)\n"
    "  --kill-grace DUR  SIGTERM this long before SIGKILL (default: the smaller of 2s and\n"
    "                    TTL/4; must be less than the TTL)\n"
    "  --name LABEL      session name shown by the servers (default: fencelock@HOST:PID)\n"
    "Exit status: CMD's status, 128+N if it died of signal N; 2 usage; 3 not obtained within\n"
    "--wait; 4 cluster unreachable or other error before CMD ran; 5 lock lost while CMD ran\n"
    "(it was killed; takes precedence); 126/127 CMD could not be run / was not found;\n"
    "128+N if signal N ended the wait.\n";

enum { O_TTL = 1, O_WAIT, O_LOCKDELAY, O_GRACE, O_NAME, O_SHARED };

static const struct opt_spec lock_opts[] = {
    {"ttl", 0, 1, O_TTL},
    {"wait", 0, 1, O_WAIT},
    {"lock-delay", 0, 1, O_LOCKDELAY},
    {"kill-grace", 0, 1, O_GRACE},
    {"name", 0, 1, O_NAME},
    {"shared", 0, 0, O_SHARED},
    {NULL, 0, 0, 0},
};

/* One option into o; `grace_set` records an explicit --kill-grace. EXIT_OK or EXIT_USAGE. */
static int lock_opt(int id, struct opt_iter *it, struct run_opts *o, int *grace_set)
{
    static const char *const names[] = {"", "ttl", "wait", "lock-delay", "kill-grace"};
    uint64_t *dst[] = {NULL, &o->ttl_ms, &o->wait_ms, &o->lockdelay_ms, &o->grace_ms};
    if (id == O_NAME) {
        o->label = it->v[0];
        return EXIT_OK;
    }
    if (id == O_SHARED) {
        o->shared = 1;
        return EXIT_OK;
    }
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

int cmd_lock(struct cli *c, int argc, char **argv)
{
    struct run_opts o = {.ttl_ms = LOCK_DEFAULT_TTL_MS, .wait_forever = 1};
    struct sub_args a;
    int id, r, grace_set = 0;
    char label[128];
    sub_start(&a, argc, argv, 1, usage_lock);
    a.dash_positional = 0; /* after "--" comes the command */
    while ((r = sub_next(c, &a, lock_opts, &id)) == SUB_OPT)
        if (lock_opt(id, &a.it, &o, &grace_set) != EXIT_OK)
            return sub_usage(&a);
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos == 0)
        return sub_err(&a, "no lock name given (fencelock lock NAME [-- CMD ...])");
    if (a.pos[0][0] == '\0')
        return sub_err(&a, "the lock name is empty");
    if (settle_grace(&a.it, &o, grace_set) != EXIT_OK)
        return sub_usage(&a);
    o.name = a.pos[0];
    o.shown = cli_shown(o.name, o.shown_buf, sizeof o.shown_buf);
    if (a.it.dashdash >= 0) {
        if (a.it.dashdash >= argc)
            return sub_err(&a, "no command after '--'");
        o.cmd = argv + a.it.dashdash; /* argv is NULL-terminated, as main's is */
    }
    if (o.label == NULL) {
        char host[HOST_NAME_MAX + 1] = "";
        gethostname(host, sizeof host - 1);
        snprintf(label, sizeof label, "fencelock@%.64s:%ld", host, (long)getpid());
        o.label = label;
    }
    return run_locked(c, &o);
}
