/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The controlling terminal of `fencelock lock`: while the command runs it is the terminal's
 * foreground process group, so typed input, Ctrl-C, Ctrl-\ and Ctrl-Z reach it as they would
 * without fencelock (as with flock(1), which never leaves the caller's process group).
 *
 * Why this is needed at all: the command runs in a process group of its own (so that the
 * whole group can be killed when the lease is at risk). A process group that is not the
 * terminal's foreground group is stopped by SIGTTIN when it reads the terminal, and Ctrl-C
 * goes to the foreground group only, so without the hand-over an interactive command hangs
 * with the lock held.
 *
 * Rules: the terminal is handed over only if fencelock's own group is the foreground group
 * when the command starts (a background `fencelock lock ... &` takes nothing from the shell).
 * The child takes it itself before exec (tty_child_take), so the command never runs a moment
 * in the background; the parent takes it back after the command ended or stopped
 * (tty_take_back). tcsetpgrp from a background group raises SIGTTOU unless SIGTTOU is blocked:
 * run.c blocks SIGTTOU and SIGTTIN in the whole process, and the child inherits that mask
 * until just before exec.
 * Ownership: struct tty lives in struct run; fd is ours (O_CLOEXEC) and closed by tty_close.
 */
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/run.h"

void tty_open(struct tty *t)
{
    t->given = 0;
    t->fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    t->fg = t->fd >= 0 && tcgetpgrp(t->fd) == getpgrp();
}

void tty_close(struct tty *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    t->fg = t->given = 0;
}

/* Is our own group the foreground group now (it may have changed: Ctrl-Z, then `bg`)? */
int tty_we_are_fg(struct tty *t)
{
    t->fg = t->fd >= 0 && tcgetpgrp(t->fd) == getpgrp();
    return t->fg;
}

/* In the forked child, after setpgid(0, 0): async-signal-safe calls only. */
void tty_child_take(const struct tty *t)
{
    if (t->fd >= 0 && t->fg)
        tcsetpgrp(t->fd, getpgrp());
}

/* In the parent once the child has exec'd: the terminal went to it (the command may have
   passed it on since, as an interactive shell does; it is still ours to take back). */
void tty_note_given(struct tty *t)
{
    t->given = t->fd >= 0 && t->fg;
}

/* Give the terminal to pgid again (after a stop, when we are continued in the foreground). */
void tty_give(struct tty *t, pid_t pgid)
{
    if (t->fd >= 0 && tty_we_are_fg(t) && tcsetpgrp(t->fd, pgid) == 0)
        t->given = 1;
}

void tty_take_back(struct tty *t)
{
    if (t->fd >= 0 && t->given)
        tcsetpgrp(t->fd, getpgrp());
    t->given = 0;
}
