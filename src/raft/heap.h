/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_heap — libraft's allocator (raft_heap_set), with realloc that grows large blocks
 * geometrically.
 *
 * Why: libraft 0.22.1 loads the log at start by growing one entry array with raft_realloc once
 * per stored batch (uv_segment.c, extendEntries): quadratic copying. glibc hides it for large
 * blocks (mremap), but under ASan every realloc is a fresh mapping plus a full copy, and a node
 * with 15,000 entries took 27 s to start (0.4 s in the release build): long enough for the
 * torture suite's restarted nodes to look dead. Growing by half again amortises the copies.
 *
 * How: blocks of at least RN_HEAP_BIG bytes that went through realloc are tracked in a small
 * table with the capacity really allocated; realloc within that capacity returns the block
 * itself. Everything else goes to libraft's default allocator (libc). A block is untracked when
 * raft_free or a shrinking realloc releases it. libc's malloc_usable_size tells whether a freed
 * block can be tracked at all, so small frees never look at the table. The table is guarded by a
 * mutex: libraft's disk I/O threads allocate and free too.
 *
 * Invariant: a tracked pointer is a live block of at least `cap` bytes obtained from libc's
 * realloc. Rule for callers: a block libraft reallocated must go back through raft_free (libraft
 * keeps such blocks to itself: log entry arrays, event and message queues, configurations).
 *
 * Ownership: struct rn_heap is owned by its creator and must outlive its installation; after
 * rn_heap_uninstall libraft uses its default heap again (tracked blocks are plain libc blocks, so
 * that is safe at any time).
 */
#ifndef FENCELOCK_RN_HEAP_H
#define FENCELOCK_RN_HEAP_H

#include <pthread.h>
#include <raft.h>
#include <stddef.h>
#include <stdint.h>

#define RN_HEAP_BIG (64u << 10) /* blocks below this are never tracked */
#define RN_HEAP_SLOTS 64        /* tracked blocks at once; past it realloc just copies */

struct rn_heap {
    struct raft_heap heap;        /* what raft_heap_set receives; data points back here */
    const struct raft_heap *base; /* libraft's heap when installed (its default) */
    pthread_mutex_t mu;
    struct {
        void *p;
        size_t cap;
    } slot[RN_HEAP_SLOTS];
    uint64_t grows; /* reallocs to RN_HEAP_BIG or more that had to allocate: for tests */
};

void rn_heap_init(struct rn_heap *h);
/* Make libraft allocate through `h` (process-wide, as raft_heap_set is). */
void rn_heap_install(struct rn_heap *h);
/* Give libraft its default heap back. */
void rn_heap_uninstall(struct rn_heap *h);
void rn_heap_destroy(struct rn_heap *h);

#endif
