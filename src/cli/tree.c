/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every process `fencelock lock` starts, and how all of them die: the command, whatever it
 * forks, and whatever those fork, also after they left the command's process group (setsid,
 * a job-control shell) and also when fencelock itself is killed with SIGKILL.
 *
 * Four nets, each catching what the one before misses:
 *   1. the process group of the command (kill(-pgid)): what stays in the group;
 *   2. fencelock is a child subreaper (PR_SET_CHILD_SUBREAPER): an orphaned descendant is
 *      re-parented to us, not to init, so walking /proc from our pid finds every descendant
 *      while we live (tree_kill_walk);
 *   3. a cgroup v2 of its own, when the machine allows (a cgroup2 mount we may write to): the
 *      child moves itself into it before exec, so every descendant is born inside, and one
 *      write to cgroup.kill ends them all, without a race against fork;
 *   4. a guard process, outside the cgroup and the command's group, that waits for EOF on a
 *      pipe only fencelock holds: when fencelock dies (even of SIGKILL) it kills the cgroup
 *      (or, without one, the command's process group) and removes the cgroup.
 * What still escapes is in docs/fencelock.1 (BUGS): a process that moves itself into another
 * cgroup, or, without a cgroup, one that left the group, once fencelock itself is SIGKILLed.
 *
 * Ownership: struct tree lives in struct run. Its fds are O_CLOEXEC; the cgroup directory is
 * removed by tree_finish (or by the guard when we die first).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/run.h"

/* ---- the cgroup ---- */

/* Copy src into out[n]; -1 (nothing copied) if it does not fit. */
static int copy_str(char *out, size_t n, const char *src)
{
    size_t len = strlen(src);
    if (len >= n)
        return -1;
    memcpy(out, src, len + 1);
    return 0;
}

/* The mount point of the cgroup2 hierarchy ("" if none), from /proc/self/mountinfo. */
static int cgroup2_mount(char *out, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024];
    int found = 0;
    if (f == NULL)
        return -1;
    while (!found && fgets(line, sizeof line, f)) {
        /* id parent maj:min root mountpoint options... - fstype source superoptions */
        char *dash = strstr(line, " - cgroup2 ");
        char mnt[PATH_MAX];
        if (dash && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
            found = copy_str(out, n, mnt) == 0;
    }
    fclose(f);
    return found ? 0 : -1;
}

/* Our own cgroup v2 path ("/..." from the "0::" line of /proc/self/cgroup). */
static int own_cgroup(char *out, size_t n)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[PATH_MAX + 8];
    int found = 0;
    if (f == NULL)
        return -1;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            found = copy_str(out, n, line + 3) == 0;
        }
    }
    fclose(f);
    return found ? 0 : -1;
}

static int open_in(const char *dir, const char *file, int flags)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p)
        return -1;
    return open(p, flags | O_CLOEXEC);
}

/* Make a cgroup for the command under our own. Any failure leaves k->cg[0] == 0. */
static void cgroup_make(struct tree *k)
{
    char mnt[PATH_MAX / 2], own[PATH_MAX / 2];
    if (cgroup2_mount(mnt, sizeof mnt) < 0 || own_cgroup(own, sizeof own) < 0)
        return;
    if (strcmp(own, "/") == 0)
        own[0] = '\0';
    if ((size_t)snprintf(k->cg, sizeof k->cg, "%s%s/fencelock-%ld", mnt, own, (long)getpid()) >=
            sizeof k->cg ||
        mkdir(k->cg, 0755) < 0) {
        k->cg[0] = '\0';
        return;
    }
    k->procs_fd = open_in(k->cg, "cgroup.procs", O_WRONLY);
    k->kill_fd = open_in(k->cg, "cgroup.kill", O_WRONLY); /* Linux 5.14 and later */
    if (k->procs_fd < 0) {
        rmdir(k->cg);
        k->cg[0] = '\0';
    }
}

void tree_init(struct tree *k)
{
    memset(k, 0, sizeof *k);
    k->procs_fd = k->kill_fd = k->guard_fd = -1;
    k->subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    const char *no = getenv("FENCELOCK_NO_CGROUP"); /* the fallback, on demand (and in tests) */
    if (no == NULL || no[0] == '\0' || strcmp(no, "0") == 0)
        cgroup_make(k);
}

/* In the forked child, before exec: async-signal-safe calls only. "0" is the writer. */
void tree_child_enter(const struct tree *k)
{
    if (k->procs_fd >= 0) {
        ssize_t n = write(k->procs_fd, "0", 1);
        (void)n; /* not allowed here: the subreaper and the group still catch it */
    }
}

/* SIGKILL everything in the cgroup. Async-signal-safe (the guard calls it too). */
static void cgroup_kill(int kill_fd)
{
    if (kill_fd >= 0) {
        ssize_t n = write(kill_fd, "1", 1);
        (void)n;
    }
}

/* Without cgroup.kill: SIGKILL every pid listed in cgroup.procs (the walk catches forks). */
static void cgroup_kill_listed(const struct tree *k)
{
    if (k->cg[0] == '\0' || k->kill_fd >= 0)
        return;
    int fd = open_in(k->cg, "cgroup.procs", O_RDONLY);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    long pid;
    if (f == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while (fscanf(f, "%ld", &pid) == 1)
        kill((pid_t)pid, SIGKILL);
    fclose(f);
}

/* ---- the walk over /proc ---- */

struct proc {
    pid_t pid, ppid;
    char state;
};

/* Every process in /proc with its parent and state; *n entries, malloc'ed (NULL: none). */
static struct proc *procs_read(size_t *n)
{
    DIR *d = opendir("/proc");
    struct proc *v = NULL;
    size_t cap = 0;
    struct dirent *e;
    *n = 0;
    if (d == NULL)
        return NULL;
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        char *rp = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
        char state;
        long ppid;
        if (rp == NULL || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2)
            continue;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct proc *nv = realloc(v, ncap * sizeof *nv);
            if (nv == NULL)
                break;
            v = nv;
            cap = ncap;
        }
        v[(*n)++] = (struct proc){(pid_t)atol(e->d_name), (pid_t)ppid, state};
    }
    closedir(d);
    return v;
}

/* Signal every live descendant of ours except the guard; returns how many were signalled.
   A process is a descendant if its parent is us or a descendant: marked to a fixed point over
   one snapshot of /proc. A process born after the snapshot is caught by the caller's next
   round (tree_kill_all repeats until a round signals nobody). */
static int walk_signal(const struct tree *k, int sig)
{
    size_t n;
    struct proc *v = procs_read(&n);
    if (v == NULL)
        return 0;
    unsigned char *mark = calloc(n ? n : 1, 1);
    int hit = 0;
    if (mark == NULL) {
        free(v);
        return 0;
    }
    pid_t self = getpid();
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (mark[i] || v[i].pid == k->guard)
                continue;
            int child = v[i].ppid == self;
            for (size_t j = 0; !child && j < n; j++)
                child = mark[j] && v[j].pid == v[i].ppid;
            if (child) {
                mark[i] = changed = 1;
                if (v[i].state != 'Z' && v[i].state != 'X' && kill(v[i].pid, sig) == 0)
                    hit++;
            }
        }
    }
    free(mark);
    free(v);
    return hit;
}

/* ---- what run.c calls ---- */

void tree_signal_all(struct tree *k, pid_t pgid, int sig)
{
    if (pgid > 0)
        kill(-pgid, sig);
    if (sig == SIGKILL) {
        cgroup_kill(k->kill_fd);
        cgroup_kill_listed(k);
    }
    walk_signal(k, sig);
    if (sig != SIGKILL && sig != SIGCONT && pgid > 0)
        kill(-pgid, SIGCONT); /* a stopped command must run to see its SIGTERM */
}

/* Reap every child that has exited (WNOHANG), noting the guard's death. */
static void reap_others(struct tree *k)
{
    pid_t p;
    int st;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == k->guard)
            k->guard = 0;
}

void tree_kill_all(struct tree *k, pid_t pgid)
{
    struct timespec pause = {0, 2 * 1000 * 1000};
    if (pgid > 0)
        kill(-pgid, SIGKILL);
    cgroup_kill(k->kill_fd);
    /* Until a round finds no live descendant: a process forking as fast as we kill is caught
       in the next round, its children being re-parented to us once it dies. */
    for (int round = 0; round < 1000; round++) {
        cgroup_kill_listed(k);
        int hit = walk_signal(k, SIGKILL);
        reap_others(k);
        if (hit == 0)
            break;
        nanosleep(&pause, NULL);
    }
    reap_others(k);
}

/* ---- the guard ---- */

/* The guard's whole life (a forked child of a threaded process: async-signal-safe calls
   only). A byte on the pipe: fencelock is done and killed everything itself. EOF without it:
   fencelock died, so the guard kills what it can reach. */
static void guard_main(const struct tree *k, int rfd, pid_t pgid)
{
    char b;
    ssize_t n;
    for (int fd = 0; fd < 1024; fd++)
        if (fd != rfd && fd != k->kill_fd)
            close(fd);
    while ((n = read(rfd, &b, 1)) < 0 && errno == EINTR)
        ;
    if (n == 1)
        _exit(0); /* fencelock ended everything itself and said so */
    kill(-pgid, SIGKILL);
    cgroup_kill(k->kill_fd);
    if (k->cg[0]) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        /* rmdir fails with EBUSY while a killed process is still being torn down. */
        for (int i = 0; i < 500 && rmdir(k->cg) < 0 && errno == EBUSY; i++)
            nanosleep(&pause, NULL);
    }
    _exit(0);
}

int tree_guard_start(struct tree *k, pid_t pgid)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        guard_main(k, p[0], pgid);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -1;
    }
    k->guard = pid;
    k->guard_fd = p[1];
    return 0;
}

/* A waitpid(-1) elsewhere reaped the guard: it is gone. */
void tree_note_reaped(struct tree *k, pid_t pid)
{
    if (pid == k->guard)
        k->guard = 0;
}

void tree_finish(struct tree *k)
{
    if (k->guard_fd >= 0) {
        ssize_t n = write(k->guard_fd, "q", 1); /* "all done": the guard exits quietly */
        (void)n; /* failing, the guard kills a group and a cgroup that are empty already */
        close(k->guard_fd);
    }
    k->guard_fd = -1;
    if (k->guard > 0)
        while (waitpid(k->guard, NULL, 0) < 0 && errno == EINTR)
            ;
    k->guard = 0;
    if (k->procs_fd >= 0)
        close(k->procs_fd);
    if (k->kill_fd >= 0)
        close(k->kill_fd);
    k->procs_fd = k->kill_fd = -1;
    if (k->cg[0])
        rmdir(k->cg); /* the guard may have removed it already */
    k->cg[0] = '\0';
}
