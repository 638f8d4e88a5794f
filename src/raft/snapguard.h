/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapguard — keeps libraft 0.22.1 from receiving an InstallSnapshot while it writes a snapshot
 * of its own (docs/server.md "libraft 0.22.1"; found by the snapshot-heavy torture).
 *
 * The bug it contains: libraft's legacy layer parks an InstallSnapshot that arrives while the
 * node's own snapshot is being written (r->legacy.snapshot_pending), and the completion of that
 * write (takeSnapshotCb in libraft's legacy.c) clears the pointer before reading it, then starts
 * persisting a NULL request: SIGSEGV reading address 0x48. A deposed leader that snapshots as it
 * wakes from a pause and then gets InstallSnapshot from the new leader hits it.
 *
 * The guard sits between libraft and the receive callback of its raft_io: an InstallSnapshot
 * that arrives while raft->legacy.snapshot_taking is set is held back, and handed to libraft
 * from a libuv check handle once that flag is clear (the write completed). Only the newest one
 * is held (a newer one replaces it: libraft would ignore a second while installing the first).
 * While one is held, snapguard_holding() is true and the FSM's snapshot callback must refuse,
 * so no new write can start before the held message is delivered. A delayed message is
 * something Raft tolerates by design; the leader waits for the answer to its InstallSnapshot.
 *
 * A second libraft 0.22.1 defect on the same path: an InstallSnapshot that arrives while
 * libraft installs one is ignored and its data and configuration leak (a whole snapshot per
 * resent copy). The guard frees them and passes the emptied message on (its term and leader
 * still count).
 *
 * Owns: the held message (its snapshot data, configuration and a copy of the sender's address)
 * until it is delivered or snapguard_close frees it. Uses raft->data (libraft leaves it to the
 * user) to find itself from the raft_io callbacks.
 */
#ifndef FENCELOCK_SNAPGUARD_H
#define FENCELOCK_SNAPGUARD_H

#include <raft.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/log.h"

struct snapguard {
    struct raft *raft;
    const struct logger *log; /* borrowed */
    int (*io_start)(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
                    raft_io_recv_cb recv); /* the raft_io's own start */
    raft_io_recv_cb recv;                  /* libraft's receive callback */
    uv_check_t check;                      /* delivers the held message */
    struct raft_message held;
    char *held_address; /* owned copy: libuv's receiver frees its own when the peer hangs up */
    bool holding, closing;
    uint64_t held_total;     /* InstallSnapshots ever held back */
    uint64_t replaced_total; /* held ones superseded by a newer one before delivery */
    uint64_t stripped_total; /* arrived while libraft installed one: payload freed here */
    void (*closed)(struct snapguard *g);
};

/* After raft_init (raft->io set), before raft_start: wraps raft->io->start so that the receive
 * callback goes through the guard, and takes raft->data. The guard must not move afterwards. */
void snapguard_init(struct snapguard *g, uv_loop_t *loop, struct raft *raft,
                    const struct logger *log);
/* An InstallSnapshot is held: the FSM must not start a snapshot now. */
bool snapguard_holding(const struct snapguard *g);
/* Free a held message, close the check handle; `closed` fires once libuv released it. Later
 * receives pass straight to libraft (which drops them while it is closing). */
void snapguard_close(struct snapguard *g, void (*closed)(struct snapguard *g));

#endif
