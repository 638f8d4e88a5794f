/*
 * fdlimit — fit --max-clients to the process's open-file limit at start-up, as Redis does.
 *
 * Owns nothing at run time: one call before the loop starts. It may raise RLIMIT_NOFILE's soft
 * limit (never above the hard limit) and tells the caller the --max-clients that fits; the
 * caller logs the warning and stores the effective value. Every client connection is one fd;
 * the rest of the process (Raft peers, the HTTP endpoint, data files, libuv) gets a reserve.
 */
#ifndef FENCELOCK_FDLIMIT_H
#define FENCELOCK_FDLIMIT_H

#include <stdbool.h>
#include <stddef.h>

/* fds kept for everything but client connections and HTTP: stdio, listeners, libuv's epoll,
 * signal and async fds and its spare accept fd, the open log segments and a snapshot being
 * written or sent (libraft). Raft connections and HTTP are added on top (fdlimit_reserve). */
#define FDLIMIT_BASE_RESERVE 32

struct fdlimit {
    size_t wanted;    /* in: --max-clients as configured */
    size_t reserve;   /* in: fds for everything else (fdlimit_reserve) */
    size_t effective; /* out: --max-clients that fits (== wanted unless lowered) */
    unsigned long soft_before, soft_after, hard; /* out: RLIMIT_NOFILE */
    bool raised;                                 /* out: the soft limit was raised */
};

/* The reserve for a node with up to n_peers Raft members (a connection each way to each) and an
 * HTTP endpoint of http_conns connections (0 without one). */
size_t fdlimit_reserve(size_t n_peers, size_t http_conns);

/* Raise the soft limit towards wanted + reserve (up to the hard limit) and set f->effective.
 * 0 ok (effective may be lower than wanted: the caller warns); -1 if not even one client fits
 * or the limit cannot be read (f->effective is 0). */
int fdlimit_fit(struct fdlimit *f);

#endif
