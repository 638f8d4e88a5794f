/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock lock`: take a lock, run a command under it, and kill the command before the lock
 * can have passed to anyone else.
 *
 * Flow (one direction only):  acquire (acquire.c)  ->  supervise (run.c)  ->  release (run.c)
 *   acquire   open a session and fl_lock on a worker thread, while the main thread reads
 *             signals from a signalfd: SIGINT/TERM/HUP/QUIT end the wait (the session is
 *             closed on the servers, which answers the blocked LOCK).
 *   supervise fork+exec the command in a process group of its own, which becomes the
 *             terminal's foreground group (tty.c); forward signals to the group; SIGTERM
 *             every descendant when less than the kill grace is left before
 *             fl_session_safe_until(), SIGKILL them all at that deadline or when the session
 *             is reported lost; reap it, then kill and reap whatever it left (tree.c).
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
#include <sys/types.h>

#include "cli/cli.h"

struct run_opts {
    const char *name;                     /* the lock (the first of names[]) */
    const char *names[FL_LOCK_MULTI_MAX]; /* RUN_LOCK: every lock, n_names of them (LOCK.MULTI
                                             when more than one) */
    uint8_t shared_of[FL_LOCK_MULTI_MAX]; /* names[i] is taken shared (--shared, --also-shared) */
    size_t n_names;
    const char *shown; /* the lock's name for messages (cut if long): name or shown_buf */
    char shown_buf[80];
    const char *label;     /* session name (NULL: none) */
    uint64_t ttl_ms;       /* session TTL */
    uint64_t lockdelay_ms; /* lock-delay after an expiry */
    uint64_t wait_ms;      /* how long to wait for the lock (when !wait_forever) */
    int wait_forever;      /* no --wait given */
    uint64_t grace_ms;     /* SIGTERM this long before the safe deadline */
    char **cmd;            /* NULL-terminated argv of the command; NULL: hold until signalled */
    int shared;            /* --shared: take the lock as one of its readers (fl_lock_shared) */
    /* lock, sem, elect, latch join (RUN_LATCH: join, count down only if CMD exits 0) or
       barrier (RUN_BARRIER: enter, run CMD once full, leave and wait for every session) */
    enum run_kind { RUN_LOCK, RUN_SEM, RUN_ELECT, RUN_LATCH, RUN_BARRIER } kind;
    uint32_t limit;    /* RUN_SEM: the semaphore's limit; RUN_BARRIER: its count */
    uint32_t permits;  /* RUN_SEM: permits to take at once (--permits; 0 = 1) */
    const char *value; /* RUN_ELECT: the campaign value */
    /* fencelock's own exit codes in place of the defaults, so they cannot be mistaken for the
       command's: conflict_code for EXIT_NOTGOT (-E; EXIT_NOTGOT by default), error_code for
       EXIT_ERROR and EXIT_LOST (--error-exit-code; -1: keep them). */
    int conflict_code, error_code;
    int revoke_signal;      /* sent to the command when its exclusive lock is revoked (SIGTERM) */
    const char *lock_value; /* --value: the grant's value (NULL: none) */
    uint64_t maxhold_ms;    /* --max-hold: the grant's max hold (0: none) */
};

/* --revoke-signal's value: TERM, SIGTERM, INT, HUP, QUIT, USR1, USR2 or a number (not KILL or
   STOP). 0 with *sig, or -1 (revoke.c). */
int run_parse_signal(const char *s, int *sig);

/* FENCELOCK_MODE and --json "mode": exclusive, shared, semaphore, leader, latch or barrier. */
const char *run_mode(const struct run_opts *o);

/* Messages name what is held: "lock NAME: lost the lock", "semaphore NAME: lost the permit",
   "election NAME: lost leadership", "latch NAME: lost the session" (a barrier's likewise). */
const char *run_noun(const struct run_opts *o);
const char *run_holding(const struct run_opts *o);

/* The signals forwarded to the command (and that end a wait or a hold). */
#define RUN_FORWARDED SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2

/* What acquire() got. */
struct acquired {
    fl_session *s;  /* NULL if no session was opened; else the caller releases it */
    uint64_t token; /* valid when err == FL_OK (several names: the first one's) */
    uint64_t tokens[FL_LOCK_MULTI_MAX]; /* several names: each one's, in the order given */
    char sig[65]; /* the grant's FENCE.SIGN (FENCELOCK_TOKEN_SIG), "" without --token-key */
    fl_err err;   /* of the open (what = "open session") or of the lock */
    const char *what;
    char msg[256]; /* fl_client_errmsg of the worker thread (the message is per thread) */
    int signo;     /* a signal that ended the wait (then err is meaningless), or 0 */
    int64_t maxhold_deadline; /* fl_lock_with's: the max hold cannot have passed before this
                                 fl_now_ms (INT64_MAX: no max hold) */
};

/*
 * Open a session and wait for the lock; a terminating signal read from sigfd (SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT) cancels. Returns 0, or -1 if no thread could be made (errno).
 */
int acquire(fl_client *cl, const struct run_opts *o, int sigfd, struct acquired *out);

/* 1 for the signals that end a wait or a hold (as their default action would end us). */
int run_is_terminating(int signo);

/* ---- the controlling terminal (tty.c) ---- */

struct tty {
    int fd;    /* /dev/tty (O_CLOEXEC), or -1 when there is no controlling terminal */
    int fg;    /* our process group was the terminal's foreground group when last checked */
    int given; /* the terminal is with the command's group, by our doing */
};
void tty_open(struct tty *t);
void tty_close(struct tty *t);
int tty_we_are_fg(struct tty *t);
/* In the child before exec: make its (new) process group the foreground group, if ours was. */
void tty_child_take(const struct tty *t);
/* In the parent after the child exec'd. */
void tty_note_given(struct tty *t);
/* Give the terminal to pgid if we are in the foreground (after we were continued). */
void tty_give(struct tty *t, pid_t pgid);
/* Make our group the foreground group again, if we had given the terminal away. */
void tty_take_back(struct tty *t);

/* ---- the command's processes (tree.c) ---- */

struct tree {
    int subreaper; /* PR_SET_CHILD_SUBREAPER took effect */
    char cg[4096]; /* the command's cgroup v2 directory, "" when none could be made */
    int procs_fd;  /* its cgroup.procs (write "0" to enter), or -1 */
    int kill_fd;   /* its cgroup.kill, or -1 (Linux before 5.14, or no cgroup) */
    pid_t guard;   /* the guard process, 0 if none */
    int guard_fd;  /* our end of the guard's pipe, or -1 */
};
/* Become a subreaper and make the cgroup (both best effort). */
void tree_init(struct tree *k);
/* In the child before exec: move into the cgroup. Async-signal-safe. */
void tree_child_enter(const struct tree *k);
/* Start the guard that kills group pgid and the cgroup if we die. 0 or -1 (errno). */
int tree_guard_start(struct tree *k, pid_t pgid);
/* Send sig to group pgid, the cgroup (SIGKILL only) and every descendant; SIGCONT after. */
void tree_signal_all(struct tree *k, pid_t pgid, int sig);
/* SIGKILL and reap every descendant (the guard aside) until none is left. */
void tree_kill_all(struct tree *k, pid_t pgid);
/* waitpid(-1) returned pid: forget the guard if it was it. */
void tree_note_reaped(struct tree *k, pid_t pid);
/* Dismiss the guard, reap it, remove the cgroup. */
void tree_finish(struct tree *k);

/* The whole of `fencelock lock` once the options are parsed. Returns the exit code. */
int run_locked(struct cli *c, const struct run_opts *o);
/* `fencelock latch join NAME ... -- CMD` (lock.c): argv[0] is "join". */
int cli_latch_join(struct cli *c, int argc, char **argv);

#endif
