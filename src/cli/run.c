/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor of `fencelock lock`: start the command under the lock, watch the lease, kill
 * the command before the lease can run out on the servers, forward signals, release.
 *
 * Why the deadlines are safe: fl_session_safe_until() is the send time of the last
 * acknowledged keepalive plus the TTL, less a drift margin, on our monotonic clock. The
 * servers count the TTL from when they received that keepalive, so they cannot expire the
 * session (and hand the lock to someone else) before it. The command gets SIGTERM when less
 * than the kill grace is left and SIGKILL at the deadline; the poll below wakes up at each
 * deadline (never more than TICK_MS late), so the kill is not late by more than scheduling.
 *
 * Revocation (an exclusive lock only): a watcher (fl_revoke_watch) hears `fencelock revoke`
 * and writes the local time to kill by into a pipe. The command gets --revoke-signal at once
 * and SIGKILL (with everything it started) the kill grace before the revoke's deadline, which
 * the servers count from when the request applied, a little before we heard of it: the kill
 * comes before the servers take the lock unless the news took longer than the grace. Holding
 * without a command, a revoke request releases the lock at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/out.h"
#include "cli/run.h"

extern char **environ;

#define TICK_MS 50              /* the longest poll sleep while something runs */
#define CLOSE_BOUND_MS 1000     /* the one close attempted after the lease was at risk */
#define FD_TRACKED 1024         /* fds below this that were open at startup are the user's */
#define ENV_OURS 5              /* FENCELOCK_TOKEN, _SESSION, _NAME, _ENDPOINTS, _MODE */
#define ENV_SIG ENV_OURS        /* then FENCELOCK_TOKEN_SIG when the grant was signed */
#define ENV_MULTI (ENV_SIG + 1) /* then, for several names, FENCELOCK_TOKENS, _NAMES, _MODES */
#define ENV_N_MULTI 3
#define HOLD_SLICE_MS 1000  /* the longest sleep of `lock NAME` without a command (hold) */
#define LEAVE_SLICE_MS 1000 /* a barrier's leave waits in slices, reading signals between */

/* Everything the supervisor works with; lives on run_locked's stack. */
struct run {
    struct cli *c;
    const struct run_opts *o;
    int sigfd;                           /* signalfd of RUN_FORWARDED + SIGCHLD */
    int lost_pipe[2];                    /* on_lost writes to [1]; we poll [0] */
    sigset_t oldmask;                    /* the mask to give back to the command */
    unsigned char inherited[FD_TRACKED]; /* 1: fd was open when we started (pass it on) */
    struct acquired a;
    pid_t pid;          /* the command (its process group id too), 0 if none */
    int reaped, status; /* waitpid status once reaped */
    struct tty tty;     /* the terminal the command gets while it runs */
    struct tree tree;   /* every process the command starts */
    int lost;           /* the session is lost, or its safe deadline passed */
    int sent_term, sent_kill;
    int revoke_pipe[2];  /* on_revoke writes the local kill time (int64_t) to [1] */
    fl_watcher *revoker; /* the watcher of revoke requests, NULL if none */
    int64_t revoke_kill; /* SIGKILL the command at this fl_now_ms (0: no revoke deadline) */
    int revoked;         /* a revoke request arrived (the command got --revoke-signal) */
    int revoke_killed;   /* the command was killed for the revoke's deadline */
    int maxhold_term;    /* the SIGTERM was for the grant's max hold (--max-hold) */
    int maxhold_killed;  /* the command was killed at the max hold's local deadline */
    int cmd_code;        /* the exit code is the command's (its status, 128+N, 126/127), not ours */
    int cmd_ok;          /* the command ran and exited 0 (latch join counts down only then) */
    fl_err let_go_err;   /* a latch's count-down or a barrier's leave failed (release) */
};

static void signal_group(struct run *r, int sig);

/* ---- the lease ---- */

/* Runs on the library's keepalive thread: only a write to a pipe (async-safe by design). */
static void on_lost(fl_session *s, void *ctx)
{
    (void)s;
    struct run *r = ctx;
    char b = 1;
    while (write(r->lost_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
}

/* Update r->lost from the library; returns the safe deadline (0 once lost). */
static int64_t check_lease(struct run *r, int64_t now)
{
    int64_t safe = r->lost ? 0 : fl_session_safe_until(r->a.s);
    if (safe == 0 || now >= safe || fl_session_is_lost(r->a.s))
        r->lost = 1;
    return r->lost ? 0 : safe;
}

/* Runs on the revoke watcher's thread: say who asked, then hand the kill time to the
   supervisor through the pipe (a write of 8 bytes to a pipe is atomic). */
static void on_revoke(const struct fl_revoke *rv, void *ctx)
{
    struct run *r = ctx;
    int64_t kill_at = rv->deadline_ms ? fl_now_ms() + (int64_t)rv->deadline_ms : INT64_MAX;
    /* who asked and why are any client's text: escaped for the terminal (out_esc) */
    flockfile(stderr);
    fprintf(stderr, "fencelock: %s %s: revoke requested by ", run_noun(r->o), r->o->shown);
    out_esc(stderr, rv->by, rv->by_len, 0);
    if (rv->reason_len) {
        fputs(": ", stderr);
        out_esc(stderr, rv->reason, rv->reason_len, 0);
    }
    fprintf(stderr, " (deadline %" PRIu64 " ms)\n", rv->deadline_ms);
    funlockfile(stderr);
    while (write(r->revoke_pipe[1], &kill_at, sizeof kill_at) < 0 && errno == EINTR)
        ;
}

/* The earliest kill time the watcher sent; the first request signals the command. */
static void read_revokes(struct run *r)
{
    int64_t at;
    while (read(r->revoke_pipe[0], &at, sizeof at) == (ssize_t)sizeof at) {
        if (at != INT64_MAX && (r->revoke_kill == 0 || at < r->revoke_kill))
            r->revoke_kill = at;
        if (!r->revoked)
            signal_group(r, r->o->revoke_signal);
        r->revoked = 1;
    }
}

static void drain(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

/* ---- the command ---- */

/* Which fds the user gave us (they go on to the command; the library's sockets do not). */
static void note_inherited(struct run *r)
{
    for (int fd = 0; fd < FD_TRACKED; fd++)
        r->inherited[fd] = fcntl(fd, F_GETFD) != -1;
}

/* "KEY=value" in a malloc'ed string, NULL if out of memory. */
static char *env_entry(const char *key, const char *value)
{
    size_t n = strlen(key) + strlen(value) + 2;
    char *e = malloc(n);
    if (e)
        snprintf(e, n, "%s=%s", key, value);
    return e;
}

static int is_ours(const char *e)
{
    static const char *const keys[] = {
        "FENCELOCK_TOKEN=", "FENCELOCK_SESSION=", "FENCELOCK_NAME=", "FENCELOCK_ENDPOINTS=",
        "FENCELOCK_MODE=", "FENCELOCK_TOKEN_SIG=", "FENCELOCK_TOKENS=", "FENCELOCK_NAMES=",
        "FENCELOCK_MODES=",
        /* credentials: main() already unset them; never hand them to the command */
        "FENCELOCK_PASSWORD=", "FENCELOCK_USER="};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strncmp(e, keys[i], strlen(keys[i])) == 0)
            return 1;
    return 0;
}

/* Several names (LOCK.MULTI): FENCELOCK_TOKENS (the tokens, space-separated), FENCELOCK_NAMES
   (the names, one per line: a name may hold spaces) and FENCELOCK_MODES (exclusive or shared,
   space-separated), each in the order the names were given; FENCELOCK_TOKEN and _NAME are the
   first name's. 0, or -1 out of memory (the caller frees what was made). */
static int env_multi(const struct run *r, char **env)
{
    size_t names = 1, n = r->o->n_names;
    for (size_t i = 0; i < n; i++)
        names += strlen(r->o->names[i]) + 1;
    char *tok = malloc(n * 21 + 1), *nm = malloc(names), *md = malloc(n * 10 + 1);
    if (tok && nm && md) {
        size_t t = 0, a = 0, m = 0;
        for (size_t i = 0; i < n; i++) {
            t += (size_t)sprintf(tok + t, "%s%" PRIu64, i ? " " : "", r->a.tokens[i]);
            a += (size_t)sprintf(nm + a, "%s%s", i ? "\n" : "", r->o->names[i]);
            m += (size_t)sprintf(md + m, "%s%s", i ? " " : "",
                                 r->o->shared_of[i] ? "shared" : "exclusive");
        }
        env[0] = env_entry("FENCELOCK_TOKENS", tok);
        env[1] = env_entry("FENCELOCK_NAMES", nm);
        env[2] = env_entry("FENCELOCK_MODES", md);
    }
    free(tok);
    free(nm);
    free(md);
    return env[0] && env[1] && env[2] ? 0 : -1;
}

/* The command's environment: ours with FENCELOCK_* replaced. Built before fork (the child
   may only make async-signal-safe calls). Entries [0..ENV_OURS) are malloc'ed, and
   env[ENV_SIG] when the grant was signed (an inherited FENCELOCK_TOKEN_SIG is dropped in any
   case); free with env_free. */
static char **env_build(const struct run *r)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + ENV_MULTI + ENV_N_MULTI + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    char tok[32], sid[32];
    snprintf(tok, sizeof tok, "%" PRIu64, r->a.token);
    snprintf(sid, sizeof sid, "%" PRIu64, fl_session_id(r->a.s));
    env[0] = env_entry("FENCELOCK_TOKEN", tok);
    env[1] = env_entry("FENCELOCK_SESSION", sid);
    env[2] = env_entry("FENCELOCK_NAME", r->o->name);
    env[3] = env_entry("FENCELOCK_ENDPOINTS", r->c->endpoints);
    env[4] = env_entry("FENCELOCK_MODE", run_mode(r->o));
    if (r->a.sig[0])
        env[ENV_SIG] = env_entry("FENCELOCK_TOKEN_SIG", r->a.sig);
    bool multi_ok = r->o->n_names <= 1 || env_multi(r, env + ENV_MULTI) == 0;
    if (!env[0] || !env[1] || !env[2] || !env[3] || !env[4] || (r->a.sig[0] && !env[ENV_SIG]) ||
        !multi_ok) {
        for (int i = 0; i < ENV_MULTI + ENV_N_MULTI; i++)
            free(env[i]);
        free(env);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < ENV_MULTI + ENV_N_MULTI; i++) /* ours first, no gap */
        if (env[i])
            env[k++] = env[i];
    for (size_t i = k; i < ENV_MULTI + ENV_N_MULTI; i++)
        env[i] = NULL;
    for (size_t i = 0; i < n; i++)
        if (!is_ours(environ[i]))
            env[k++] = environ[i];
    return env;
}

/* How many of env's first entries are ours (malloc'ed): as env_build made them. */
static size_t env_ours(const struct run *r)
{
    return ENV_OURS + (r->a.sig[0] ? 1 : 0) + (r->o->n_names > 1 ? ENV_N_MULTI : 0);
}

static void env_free(const struct run *r, char **env)
{
    for (size_t i = 0; i < env_ours(r); i++)
        free(env[i]);
    free(env);
}

/* In the forked child: async-signal-safe calls only, then exec. Reports errno on errfd. */
static void child_exec(const struct run *r, char **env, int errfd, pid_t parent)
{
    setpgid(0, 0);
    tree_child_enter(&r->tree);
    tty_child_take(&r->tty); /* SIGTTOU is blocked (the parent's mask) until the exec */
    /* If the supervisor dies (kill -9), nobody would kill the command when the lease ends. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(EXIT_LOST);
    for (int fd = 3; fd < FD_TRACKED; fd++)
        if (!r->inherited[fd] && fd != errfd)
            close(fd);
    signal(SIGPIPE, SIG_DFL); /* ignored by us; an ignored disposition survives exec */
    sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
    execvpe(r->o->cmd[0], r->o->cmd, env);
    int e = errno;
    while (write(errfd, &e, sizeof e) < 0 && errno == EINTR)
        ;
    _exit(e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* Fork and exec the command. Returns EXIT_OK, or the exit code if it could not start. */
static int spawn(struct run *r)
{
    char **env = env_build(r);
    int errp[2];
    if (env == NULL || pipe2(errp, O_CLOEXEC) < 0) {
        cli_say("%s %s: cannot start '%s': %s", run_noun(r->o), r->o->shown, r->o->cmd[0],
                strerror(errno));
        if (env)
            env_free(r, env);
        return EXIT_ERROR;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(r, env, errp[1], parent);
    int fork_errno = errno;
    close(errp[1]);
    env_free(r, env);
    if (pid < 0) {
        close(errp[0]);
        cli_say("%s %s: fork: %s", run_noun(r->o), r->o->shown, strerror(fork_errno));
        return EXIT_ERROR;
    }
    setpgid(pid, pid); /* also here: no race with a signal sent before the child did it */
    r->pid = pid;
    int e = 0;
    ssize_t n;
    while ((n = read(errp[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(errp[0]);
    tty_note_given(&r->tty);
    if (n == (ssize_t)sizeof e) {
        cli_say("%s %s: cannot run '%s': %s", run_noun(r->o), r->o->shown, r->o->cmd[0],
                strerror(e));
        while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
            ;
        r->reaped = 1;
        tty_take_back(&r->tty);
        r->cmd_code = 1; /* as a shell says it: 126/127 are the command's, not fencelock's */
        return e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
    }
    if (tree_guard_start(&r->tree, pid) < 0)
        cli_say("%s %s: no guard process (%s): if fencelock is killed, what '%s' started "
                "outside its process group keeps running",
                run_noun(r->o), r->o->shown, strerror(errno), r->o->cmd[0]);
    return EXIT_OK;
}

/* Signal the command's process group (grandchildren included). */
static void signal_group(struct run *r, int sig)
{
    if (r->pid > 0 && !r->reaped)
        kill(-r->pid, sig);
}

/* The command stopped on a terminal signal (Ctrl-Z, or SIGTTIN when it read the terminal in
   the background): stop ourselves too, so the shell sees the job stop and gets the terminal
   back; once continued, give the terminal back to the command (if we are in the foreground)
   and continue it. Our keepalives stop with us: a stop longer than the lease loses the lock,
   and the command is killed when we continue. */
static void job_stopped(struct run *r, int sig)
{
    if (r->tty.fd < 0 || (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU))
        return; /* no job control to take part in (a SIGSTOP from someone else) */
    tty_take_back(&r->tty);
    kill(getpid(), SIGSTOP);
    tty_give(&r->tty, r->pid);
    kill(-r->pid, SIGCONT);
}

/* Reap the command and any orphaned descendant re-parented to us (we are a subreaper). */
static void try_reap(struct run *r)
{
    if (r->reaped || r->pid <= 0)
        return;
    pid_t p;
    int st;
    while ((p = waitpid(-1, &st, WNOHANG | WUNTRACED)) != 0) {
        if (p < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        tree_note_reaped(&r->tree, p);
        if (p != r->pid)
            continue;
        if (WIFSTOPPED(st)) {
            job_stopped(r, WSTOPSIG(st));
            continue;
        }
        r->status = st;
        r->reaped = 1;
        return;
    }
}

/* Read every pending signal; forward the forwardable ones. Returns the last terminating
   signal seen (for the hold mode), or 0. */
static int read_signals(struct run *r)
{
    struct signalfd_siginfo si;
    int term = 0;
    while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue; /* the caller reaps after every wake-up */
        if (run_is_terminating(sig))
            term = sig;
        signal_group(r, sig);
    }
    return term;
}

/* Enforce the lease on the command; returns the poll timeout until the next deadline. */
static int enforce(struct run *r)
{
    int64_t now = fl_now_ms();
    int64_t safe = check_lease(r, now);
    if (r->lost) {
        if (!r->sent_kill) {
            tree_signal_all(&r->tree, r->pid, SIGKILL);
            r->sent_kill = 1;
        }
        return TICK_MS;
    }
    if (r->revoke_kill && now >= r->revoke_kill - (int64_t)r->o->grace_ms) {
        if (!r->revoke_killed)
            tree_signal_all(&r->tree, r->pid, SIGKILL);
        r->revoke_killed = 1;
        return TICK_MS;
    }
    /* --max-hold: its local deadline (fl_lock_with) bounds the work as the lease's does: SIGTERM
       the kill grace before, SIGKILL at it, before the servers can end the grant */
    int64_t mh = r->a.maxhold_deadline ? r->a.maxhold_deadline : INT64_MAX;
    if (now >= mh) {
        if (!r->maxhold_killed)
            tree_signal_all(&r->tree, r->pid, SIGKILL);
        r->maxhold_killed = 1;
        return TICK_MS;
    }
    bool by_maxhold = mh < safe;
    if (by_maxhold)
        safe = mh;
    int64_t term_at = safe - (int64_t)r->o->grace_ms;
    if (!r->sent_term && now >= term_at) {
        tree_signal_all(&r->tree, r->pid, SIGTERM);
        r->sent_term = 1;
        r->maxhold_term = by_maxhold;
    }
    int64_t next = r->sent_term ? safe : term_at;
    int64_t wait = next - now;
    return wait < 0 ? 0 : wait > TICK_MS ? TICK_MS : (int)wait;
}

/* Run until the command is reaped. */
static void supervise(struct run *r)
{
    for (;;) {
        try_reap(r);
        if (r->reaped)
            return;
        int timeout = enforce(r);
        struct pollfd p[3] = {{.fd = r->sigfd, .events = POLLIN},
                              {.fd = r->lost_pipe[0], .events = POLLIN},
                              {.fd = r->revoke_pipe[0], .events = POLLIN}};
        int n = poll(p, 3, timeout); /* n < 0 (EINTR): just go round again */
        if (n > 0 && p[0].revents)
            read_signals(r);
        if (n > 0 && p[1].revents) {
            drain(r->lost_pipe[0]);
            r->lost = 1;
        }
        if (n > 0 && p[2].revents)
            read_revokes(r);
    }
}

/* No command: print the token and hold the lock until a terminating signal or the loss. */
static int hold(struct run *r)
{
    if (r->c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "name");
        jw_str(&w, r->o->name);
        jw_key(&w, "token");
        jw_u64(&w, r->a.token);
        jw_key(&w, "session");
        jw_u64(&w, fl_session_id(r->a.s));
        jw_key(&w, "mode");
        jw_str(&w, run_mode(r->o));
        if (r->o->n_names > 1) { /* every name's token, in the order given */
            jw_key(&w, "tokens");
            jw_arr(&w);
            for (size_t i = 0; i < r->o->n_names; i++)
                jw_u64(&w, r->a.tokens[i]);
            jw_end(&w);
        }
        jw_end(&w);
    } else if (r->o->n_names > 1) {
        for (size_t i = 0; i < r->o->n_names; i++)
            printf("%s%" PRIu64, i ? " " : "", r->a.tokens[i]);
        printf("\n");
    } else {
        printf("%" PRIu64 "\n", r->a.token);
    }
    fflush(stdout);
    for (;;) {
        int64_t now = fl_now_ms();
        int64_t safe = check_lease(r, now);
        if (r->lost) {
            cli_say("%s %s: lost %s: the servers did not renew the lease in time or "
                    "ended the session",
                    run_noun(r->o), r->o->shown, run_holding(r->o));
            return EXIT_LOST;
        }
        int64_t wait = safe - now;
        struct pollfd p[3] = {{.fd = r->sigfd, .events = POLLIN},
                              {.fd = r->lost_pipe[0], .events = POLLIN},
                              {.fd = r->revoke_pipe[0], .events = POLLIN}};
        int n = poll(p, 3, wait > HOLD_SLICE_MS ? HOLD_SLICE_MS : (int)wait);
        if (n > 0 && p[0].revents && read_signals(r))
            return EXIT_OK;
        if (n > 0 && p[1].revents)
            r->lost = 1;
        if (n > 0 && p[2].revents) { /* revoked: let go at once (release unlocks) */
            read_revokes(r);
            return EXIT_OK;
        }
    }
}

/* ---- release ---- */

/* One SESSION.CLOSE by id that gives up after CLOSE_BOUND_MS, on a client of its own (the
   main one waits --timeout): the servers are not answering, so a long wait buys nothing. */
static void close_briefly(struct run *r, uint64_t sid)
{
    struct fl_options opt;
    fl_options_init(&opt);
    opt.timeout_ms = CLOSE_BOUND_MS;
    opt.connect_timeout_ms = CLOSE_BOUND_MS / 2;
    opt.user = r->c->user;
    opt.password = r->c->password[0] ? r->c->password : NULL;
    fl_client *cl = fl_client_new(r->c->endpoints, &opt, NULL);
    if (cl != NULL) {
        fl_session_close_id(cl, sid);
        fl_client_free(cl);
    }
}

/* Give the lock back at once (no lock-delay) if we still can; otherwise let it lapse.
   Once the lease is lost there is nothing left to unlock or close: exit at once. When it was
   only at risk (the command got SIGTERM because no keepalive was acknowledged in time), a
   close is still worth one short try: it spares the next holder the lease's run-out and any
   lock-delay, and it releases the lock as UNLOCK would. */
static void stop_revoker(struct run *r)
{
    if (r->revoker == NULL)
        return;
    char msg[256];
    fl_watch_stop(r->revoker);
    fl_err e = fl_watch_join(r->revoker, NULL, msg, sizeof msg);
    r->revoker = NULL;
    if (e != FL_OK)
        cli_say("%s %s: revoke requests were not watched: %s: %s", run_noun(r->o), r->o->shown,
                fl_strerror(e), msg);
}

/* A terminating signal arrived (read from the signalfd, which is non-blocking). */
static int terminating_signal(struct run *r)
{
    struct signalfd_siginfo si;
    int got = 0;
    while (read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        got |= run_is_terminating((int)si.ssi_signo);
    return got;
}

/* A barrier's leave: this session leaves at once, then waits (--wait, else for ever) until
   every session that entered has left, in slices so that SIGINT/TERM/HUP/QUIT end the wait
   (the session has left all the same: nobody is broken by its end). */
static fl_err barrier_leave(struct run *r, fl_session *s)
{
    uint64_t left = r->o->wait_ms;
    for (;;) {
        uint64_t slice = r->o->wait_forever || left > LEAVE_SLICE_MS ? LEAVE_SLICE_MS : left;
        fl_err e = fl_barrier_leave(s, r->o->name, slice);
        if (e != FL_ETIMEOUT || terminating_signal(r))
            return e;
        if (!r->o->wait_forever && (left -= slice) == 0)
            return FL_ETIMEOUT;
    }
}

/* What the command's end means for a latch or a barrier (before the session closes). A latch:
   count down only when CMD exited 0; otherwise the session's close breaks the latch for its
   waiters, which is the point (they must not go on as if the work were done). A barrier
   entered: leave and wait for the others; one not entered in time: withdraw, so that ending
   the session breaks nothing. */
static void let_go(struct run *r, fl_session *s)
{
    const struct run_opts *o = r->o;
    fl_err err = FL_OK;
    if (o->kind == RUN_LATCH && r->a.err == FL_OK && r->a.signo == 0) {
        if (!r->cmd_ok) {
            cli_say("latch %s: '%s' did not succeed: the session ends without counting down, "
                    "so the latch is broken for its waiters",
                    o->shown, o->cmd[0]);
            return;
        }
        err = fl_latch_countdown(s, o->name, NULL);
    } else if (o->kind == RUN_BARRIER && r->a.signo == 0) {
        if (r->a.err == FL_OK)
            err = barrier_leave(r, s);
        else if (r->a.err == FL_ETIMEOUT)
            fl_barrier_leave(s, o->name, 0); /* withdraw while it fills */
    }
    if (err != FL_OK) {
        r->let_go_err = err;
        cli_fail(r->c, err, o->kind == RUN_LATCH ? "latch countdown" : "barrier leave");
    }
}

static void release(struct run *r)
{
    stop_revoker(r);
    fl_session *s = r->a.s;
    r->a.s = NULL;
    if (s == NULL)
        return;
    if (r->lost || fl_session_is_lost(s)) {
        fl_session_abandon(s);
        return;
    }
    if (r->sent_term) {
        uint64_t sid = fl_session_id(s);
        close_briefly(r, sid);
        fl_session_abandon(s); /* waits for a keepalive in flight: up to the safe deadline */
        return;
    }
    fl_err err = FL_OK;
    if (r->o->kind == RUN_LATCH || r->o->kind == RUN_BARRIER)
        let_go(r, s);
    else if (r->a.err == FL_OK && r->a.signo == 0)
        err = r->o->kind == RUN_SEM     ? fl_sem_release(s, r->o->name)
              : r->o->kind == RUN_ELECT ? fl_resign(s, r->o->name)
              : r->o->n_names > 1       ? fl_unlock_multi(s, r->o->n_names, r->o->names)
                                        : fl_unlock(s, r->o->name);
    if (err != FL_OK && !(r->revoked && err == FL_ENOTHOLDER)) /* a revoke may have taken it */
        cli_fail(r->c, err, "unlock");
    err = fl_session_close(s);
    if (err != FL_OK && r->a.signo == 0) /* after a signal it was closed by id already */
        cli_fail(r->c, err, "close session");
}

/* The exit code once the command is done: lease trouble first, then its own status. */
static int command_status(struct run *r)
{
    if (r->lost) {
        cli_say("%s %s: lost %s while '%s' ran: the servers did not renew the lease in "
                "time or ended the session, so '%s' and everything it started were killed",
                run_noun(r->o), r->o->shown, run_holding(r->o), r->o->cmd[0], r->o->cmd[0]);
        return EXIT_LOST;
    }
    if (r->maxhold_killed || r->maxhold_term) {
        cli_say("%s %s: reached its max hold while '%s' ran: '%s' was stopped before the servers "
                "could end the grant",
                run_noun(r->o), r->o->shown, r->o->cmd[0], r->o->cmd[0]);
        return EXIT_LOST;
    }
    if (r->sent_kill || r->sent_term) {
        cli_say("%s %s: gave up %s while '%s' ran: the servers did not renew the lease "
                "in time, so '%s' was stopped (SIGTERM) before the lease could run out",
                run_noun(r->o), r->o->shown, run_holding(r->o), r->o->cmd[0], r->o->cmd[0]);
        return EXIT_LOST;
    }
    if (r->revoke_killed) {
        cli_say("%s %s: revoked while '%s' ran: it was killed before the revoke's deadline",
                run_noun(r->o), r->o->shown, r->o->cmd[0]);
        return EXIT_LOST;
    }
    r->cmd_code = WIFEXITED(r->status) || WIFSIGNALED(r->status);
    if (WIFEXITED(r->status))
        return WEXITSTATUS(r->status);
    if (WIFSIGNALED(r->status))
        return 128 + WTERMSIG(r->status);
    return EXIT_ERROR;
}

/* fencelock's own codes as -E and --error-exit-code asked; the command's are left alone. */
static int own_code(const struct run *r, int rc)
{
    if (r->cmd_code)
        return rc;
    if (rc == EXIT_NOTGOT)
        return r->o->conflict_code;
    if ((rc == EXIT_ERROR || rc == EXIT_LOST) && r->o->error_code >= 0)
        return r->o->error_code;
    return rc;
}

/* ---- setup ---- */

static int setup_signals(struct run *r)
{
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = {RUN_FORWARDED, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    /* Blocked before the library starts any thread, so every thread inherits the mask and
       the signals reach only the signalfd. SIGTTOU and SIGTTIN are blocked too (never read):
       then tcsetpgrp from the background works, and so do our writes to a terminal with
       TOSTOP set while the command has it (tty.c). */
    sigset_t block = set;
    sigaddset(&block, SIGTTOU);
    sigaddset(&block, SIGTTIN);
    if (pthread_sigmask(SIG_BLOCK, &block, &r->oldmask) != 0)
        return -1;
    r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return r->sigfd < 0 ? -1 : 0;
}

/* The signals stay blocked: the process is about to exit, and unblocking would let a signal
   that arrived during the release kill it with a status that hides the command's. */
static void teardown(struct run *r)
{
    if (r->sigfd >= 0)
        close(r->sigfd);
    for (int i = 0; i < 2; i++) {
        if (r->lost_pipe[i] >= 0)
            close(r->lost_pipe[i]);
        if (r->revoke_pipe[i] >= 0)
            close(r->revoke_pipe[i]);
    }
}

/* Map what acquire() got to an exit code (EXIT_OK: we hold the lock). */
static int acquired_code(struct run *r)
{
    if (r->a.signo) {
        cli_say("%s %s: interrupted by signal %d while acquiring", run_noun(r->o), r->o->shown,
                r->a.signo);
        return 128 + r->a.signo;
    }
    if (r->a.err == FL_OK)
        return EXIT_OK;
    if (r->a.s && (r->a.err == FL_ETIMEOUT || r->a.err == FL_EBUSY)) {
        cli_say("%s %s: not obtained within the wait", run_noun(r->o), r->o->shown);
        return EXIT_NOTGOT;
    }
    if (r->a.msg[0])
        cli_say("%s %s: %s: %s: %s", run_noun(r->o), r->o->shown, r->a.what, fl_strerror(r->a.err),
                r->a.msg);
    else
        cli_say("%s %s: %s: %s", run_noun(r->o), r->o->shown, r->a.what, fl_strerror(r->a.err));
    return EXIT_ERROR;
}

/* Start and supervise the command (or hold); EXIT_* or the command's status. */
static int run_held(struct run *r)
{
    fl_session_on_lost(r->a.s, on_lost, r);
    if (r->o->kind == RUN_LOCK && !r->o->shared && r->o->n_names <= 1 &&
        fl_revoke_watch(r->a.s, r->o->name, r->a.token, on_revoke, r, &r->revoker) != FL_OK)
        cli_say("%s %s: revoke requests will not be heard: %s", run_noun(r->o), r->o->shown,
                fl_client_errmsg(r->c->client));
    if (r->o->cmd == NULL)
        return hold(r);
    if (check_lease(r, fl_now_ms()) == 0) {
        cli_say("%s %s: the session was lost before the command started", run_noun(r->o),
                r->o->shown);
        return EXIT_LOST;
    }
    tty_open(&r->tty);
    tree_init(&r->tree);
    int rc = spawn(r);
    if (rc == EXIT_OK) {
        supervise(r);
        tty_take_back(&r->tty);
        rc = command_status(r);
        r->cmd_ok = rc == EXIT_OK && r->cmd_code;
    }
    /* Before the lock goes: nothing the command started may outlive it. */
    tree_kill_all(&r->tree, r->pid);
    tree_finish(&r->tree);
    tty_close(&r->tty);
    return rc;
}

int run_locked(struct cli *c, const struct run_opts *o)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.o = o;
    r.sigfd = r.lost_pipe[0] = r.lost_pipe[1] = r.revoke_pipe[0] = r.revoke_pipe[1] = -1;
    r.tty.fd = -1;
    note_inherited(&r);
    if (setup_signals(&r) < 0 || pipe2(r.lost_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
        pipe2(r.revoke_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        cli_say("%s %s: setup: %s", run_noun(o), o->shown, strerror(errno));
        teardown(&r);
        return own_code(&r, EXIT_ERROR);
    }
    int rc = EXIT_ERROR;
    if (cli_client(c) == NULL) {
        teardown(&r);
        return own_code(&r, c->client_code);
    }
    if (acquire(c->client, o, r.sigfd, &r.a) < 0) {
        cli_say("%s %s: cannot start a thread: %s", run_noun(o), o->shown, strerror(errno));
    } else {
        rc = acquired_code(&r);
        if (rc == EXIT_OK)
            rc = run_held(&r);
    }
    release(&r);
    teardown(&r);
    if (rc == EXIT_OK && r.let_go_err != FL_OK) { /* CMD succeeded, the count-down or leave not */
        r.cmd_code = 0;
        rc = EXIT_ERROR;
    }
    return own_code(&r, rc);
}
