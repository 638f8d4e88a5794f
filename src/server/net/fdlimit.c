/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdlimit.c — see fdlimit.h. Past the fd limit accept() fails with EMFILE and libuv closes the
 * waiting connections without a word (its spare-fd trick), so the only way to give the client
 * "-ERR max number of clients reached" is to never let accept() get there: --max-clients fitted
 * to the limit at start-up, and a client accepted near the limit refused at once (fdlimit_low).
 */
#include "server/net/fdlimit.h"

#include <sys/resource.h>

size_t fdlimit_reserve(size_t n_peers, size_t http_conns)
{
    return FDLIMIT_BASE_RESERVE + 2 * n_peers + http_conns;
}

/* Ask for `want` fds; on refusal keep what we have (the hard limit may be lower than asked, and
 * setrlimit can fail even below it, e.g. under a container's policy). */
static void try_raise(struct rlimit *rl, rlim_t want)
{
    if (want <= rl->rlim_cur)
        return;
    if (rl->rlim_max != RLIM_INFINITY && want > rl->rlim_max)
        want = rl->rlim_max;
    struct rlimit nl = {.rlim_cur = want, .rlim_max = rl->rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
        rl->rlim_cur = want;
}

int fdlimit_fit(struct fdlimit *f)
{
    struct rlimit rl;
    f->effective = 0;
    f->raised = false;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return -1;
    f->soft_before = (unsigned long)rl.rlim_cur;
    f->hard = (unsigned long)rl.rlim_max;
    rlim_t need = (rlim_t)(f->wanted + f->reserve);
    try_raise(&rl, need);
    f->soft_after = (unsigned long)rl.rlim_cur;
    f->raised = rl.rlim_cur > (rlim_t)f->soft_before;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        f->effective = f->wanted;
        return 0;
    }
    if (rl.rlim_cur <= (rlim_t)f->reserve)
        return -1;
    f->effective = (size_t)(rl.rlim_cur - f->reserve);
    return 0;
}

bool fdlimit_low(int fd)
{
    struct rlimit rl;
    if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
        return false;
    return (rlim_t)fd + FDLIMIT_LOW_WATER >= rl.rlim_cur;
}
