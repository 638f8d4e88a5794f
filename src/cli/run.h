/*
 * `fencelock lock`: take a lock, run a command under it, and kill the command before the lock
 * can have passed to anyone else.
 *
 * Flow (one direction only):  acquire (acquire.c)  ->  supervise (run.c)  ->  release (run.c)
 *   acquire   open a session and fl_lock on a worker thread, while the main thread reads
 *             signals from a signalfd: SIGINT/TERM/HUP/QUIT end the wait (the session is
 *             closed on the servers, which answers the blocked LOCK).
 *   supervise fork+exec the command in a process group of its own; forward signals to the
 *             group; SIGTERM the group when less than the kill grace is left before
 *             fl_session_safe_until(), SIGKILL it at that deadline or when the session is
 *             reported lost; reap it.
 *   release   fl_unlock + fl_session_close (no lock-delay), or fl_session_abandon if lost.
 *
 * Signals: the caller blocks the forwarded signals and SIGCHLD in every thread (before any
 * thread exists) and reads them from one signalfd; no handler, no global state. The on_lost
 * callback (keepalive thread) only writes a byte to a pipe the supervisor polls.
 * Ownership: struct run_opts borrows argv; the session belongs to struct acquired until
 * release frees it.
 */
#ifndef FENCELOCK_CLI_RUN_H
#define FENCELOCK_CLI_RUN_H

#include <signal.h>
#include <stdint.h>

#include "cli/cli.h"

struct run_opts {
    const char *name;      /* the lock */
    const char *label;     /* session name (NULL: none) */
    uint64_t ttl_ms;       /* session TTL */
    uint64_t lockdelay_ms; /* lock-delay after an expiry */
    uint64_t wait_ms;      /* how long to wait for the lock (when !wait_forever) */
    int wait_forever;      /* no --wait given */
    uint64_t grace_ms;     /* SIGTERM this long before the safe deadline */
    char **cmd;            /* NULL-terminated argv of the command; NULL: hold until signalled */
};

/* The signals forwarded to the command (and that end a wait or a hold). */
#define RUN_FORWARDED SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2

/* What acquire() got. */
struct acquired {
    fl_session *s;  /* NULL if no session was opened; else the caller releases it */
    uint64_t token; /* valid when err == FL_OK */
    fl_err err;     /* of the open (what = "open session") or of the lock */
    const char *what;
    char msg[256]; /* fl_client_errmsg of the worker thread (the message is per thread) */
    int signo;     /* a signal that ended the wait (then err is meaningless), or 0 */
};

/*
 * Open a session and wait for the lock; a terminating signal read from sigfd (SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT) cancels. Returns 0, or -1 if no thread could be made (errno).
 */
int acquire(fl_client *cl, const struct run_opts *o, int sigfd, struct acquired *out);

/* 1 for the signals that end a wait or a hold (as their default action would end us). */
int run_is_terminating(int signo);

/* The whole of `fencelock lock` once the options are parsed. Returns the exit code. */
int run_locked(struct cli *c, const struct run_opts *o);

#endif
