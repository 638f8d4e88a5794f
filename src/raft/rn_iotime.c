/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_iotime.c — how long the disk takes: libraft's log appends (write and sync of each batch
 * of entries: the fsync every commit waits for) and snapshot writes, measured around
 * libraft's own raft_io, reported through rn_hooks.timed (the server's histograms).
 *
 * libraft hands io->append / io->snapshot_put a request and a callback; neither says which
 * rn it belongs to, and req->data is libraft's. So each call gets a request of our own that
 * wraps libraft's: the disk layer sees ours, and our callback records the time and answers
 * libraft's request with libraft's callback, exactly once, with the same status (a request
 * cancelled at close included). An allocation failure is RAFT_NOMEM, as the disk layer's own.
 */
#include <stdlib.h>

#include "raft/rn_internal.h"

struct timed_append {
    struct raft_io_append inner; /* first: the disk layer's request */
    struct raft_io_append *outer;
    raft_io_append_cb cb;
    struct rn *rn;
    uint64_t t0;
};

struct timed_put {
    struct raft_io_snapshot_put inner;
    struct raft_io_snapshot_put *outer;
    raft_io_snapshot_put_cb cb;
    struct rn *rn;
    uint64_t t0;
};

static void report(struct rn *rn, enum rn_timing kind, uint64_t t0)
{
    if (rn->hooks.timed)
        rn->hooks.timed(rn->hooks.arg, kind, (double)(uv_hrtime() - t0) / 1e9);
}

static void append_done(struct raft_io_append *inner, int status)
{
    struct timed_append *t = (struct timed_append *)inner;
    struct raft_io_append *outer = t->outer;
    raft_io_append_cb cb = t->cb;
    if (status == 0)
        report(t->rn, RN_TIME_APPEND, t->t0);
    free(t);
    outer->cb = cb;
    cb(outer, status);
}

static int timed_append(struct raft_io *io, struct raft_io_append *req,
                        const struct raft_entry entries[], unsigned n, raft_io_append_cb cb)
{
    struct rn *rn = (struct rn *)((char *)io - offsetof(struct rn, io));
    struct timed_append *t = calloc(1, sizeof(*t));
    if (!t)
        return RAFT_NOMEM;
    *t = (struct timed_append){.outer = req, .cb = cb, .rn = rn, .t0 = uv_hrtime()};
    req->cb = cb;
    int rv = rn->io_append(io, &t->inner, entries, n, append_done);
    if (rv)
        free(t);
    return rv;
}

static void put_done(struct raft_io_snapshot_put *inner, int status)
{
    struct timed_put *t = (struct timed_put *)inner;
    struct raft_io_snapshot_put *outer = t->outer;
    raft_io_snapshot_put_cb cb = t->cb;
    if (status == 0)
        report(t->rn, RN_TIME_SNAPSHOT_WRITE, t->t0);
    free(t);
    outer->cb = cb;
    cb(outer, status);
}

static int timed_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
                     const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
    struct rn *rn = (struct rn *)((char *)io - offsetof(struct rn, io));
    struct timed_put *t = calloc(1, sizeof(*t));
    if (!t)
        return RAFT_NOMEM;
    *t = (struct timed_put){.outer = req, .cb = cb, .rn = rn, .t0 = uv_hrtime()};
    req->cb = cb;
    int rv = rn->io_snapshot_put(io, trailing, &t->inner, snapshot, put_done);
    if (rv)
        free(t);
    return rv;
}

void rn_iotime_install(struct rn *rn)
{
    rn->io_append = rn->io.append;
    rn->io_snapshot_put = rn->io.snapshot_put;
    rn->io.append = timed_append;
    rn->io.snapshot_put = timed_put;
}
