/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdlimit — fit --max-clients to the process's open-file limit at start-up, as Redis does.
 *
 * Owns nothing at run time: fdlimit_fit once before the loop starts, fdlimit_low per accepted
 * client. fdlimit_fit may raise RLIMIT_NOFILE's soft
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

/* A client accepted with fewer than this many fds left is refused at once (fdlimit_low), so that
 * accept() itself does not reach EMFILE, where libuv closes the waiting clients unanswered.
 * Part of FDLIMIT_BASE_RESERVE. */
#define FDLIMIT_LOW_WATER 8

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

/* True if fewer than FDLIMIT_LOW_WATER fds are left now that the kernel handed out `fd` (it
 * gives the lowest free number, so every fd below `fd` is in use). Reads the limit each time:
 * it may have been lowered since start-up (prlimit --pid). */
bool fdlimit_low(int fd);

#endif
