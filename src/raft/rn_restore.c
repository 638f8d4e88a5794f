/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_restore.c — `fencelockd --restore`: a new cluster's data directory whose first state is a
 * backup (docs/operations.md "Back up and restore").
 *
 * Instead of bootstrapping (a configuration entry at index 1), the empty data directory gets a
 * Raft snapshot at index 1, term 1, holding the bootstrap configuration and the restored FSM
 * bytes, written through libraft's own raft_io (snapshot_put with trailing 0: the path that
 * stores an InstallSnapshot). raft_start then loads it like any snapshot: the FSM is restored
 * through the normal callback, the configuration comes from it, and the log continues at 2.
 * Every node of a new --initial-cluster restored from the same file starts from the same state
 * at the same index, exactly as if they had all applied one identical entry; a node that
 * --join's later receives it by InstallSnapshot. The revision inside the bytes keeps counting,
 * so tokens keep rising after a restore.
 */
#include <stdio.h>
#include <string.h>

#include "raft/rn_internal.h"

struct put_wait {
    bool done;
    int status;
};

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
    struct put_wait *w = req->data;
    w->status = status;
    w->done = true;
}

/* 0 if the data directory holds no Raft state at all. */
static int check_empty(struct rn *rn, char *err, size_t errlen)
{
    raft_term term;
    raft_id vote;
    struct raft_snapshot *snap = NULL;
    raft_index start;
    struct raft_entry *entries = NULL;
    size_t n = 0;
    int rv = rn->io.load(&rn->io, &term, &vote, &snap, &start, &entries, &n);
    if (rv) {
        snprintf(err, errlen, "cannot read %s: %s", rn->data_dir, raft_strerror(rv));
        return -1;
    }
    bool empty = term == 0 && !snap && n == 0;
    if (snap) {
        for (unsigned i = 0; i < snap->n_bufs; i++)
            raft_free(snap->bufs[i].base);
        raft_free(snap->bufs);
        raft_configuration_close(&snap->configuration);
        raft_free(snap);
    }
    for (size_t i = 0; i < n; i++) {
        /* entries loaded from one segment share a batch; a NULL batch owns its buffer */
        if (!entries[i].batch)
            raft_free(entries[i].buf.base);
        else if (i == 0 || entries[i].batch != entries[i - 1].batch)
            raft_free(entries[i].batch);
    }
    raft_free(entries);
    if (!empty) {
        snprintf(err, errlen,
                 "%s already holds Raft data (term %llu, %zu entries%s): restore only into an "
                 "empty data directory",
                 rn->data_dir, (unsigned long long)term, n, snap ? ", a snapshot" : "");
        return -1;
    }
    return 0;
}

static int bootstrap_conf(struct rn *rn, struct raft_configuration *conf)
{
    raft_configuration_init(conf);
    if (rn->cfg.n_peers == 0)
        return raft_configuration_add(conf, rn->cfg.id, rn->raft_address, RAFT_VOTER);
    for (size_t i = 0; i < rn->cfg.n_peers; i++) {
        int rv = raft_configuration_add(conf, rn->cfg.peers[i].id, rn->cfg.peers[i].raft_address,
                                        RAFT_VOTER);
        if (rv)
            return rv;
    }
    return 0;
}

int rn_restore(struct rn *rn, const uint8_t *data, size_t len, char *err, size_t errlen)
{
    if (check_empty(rn, err, errlen))
        return -1;
    struct raft_configuration conf;
    int rv = bootstrap_conf(rn, &conf);
    if (rv == 0)
        rv = rn->io.set_term(&rn->io, 1);
    struct raft_buffer buf = {.base = (void *)data, .len = len};
    struct raft_snapshot snap = {.index = 1,
                                 .term = 1,
                                 .configuration = conf,
                                 .configuration_index = 1,
                                 .bufs = &buf,
                                 .n_bufs = 1};
    struct put_wait w = {false, 0};
    struct raft_io_snapshot_put req = {.data = &w};
    if (rv == 0)
        rv = rn->io.snapshot_put(&rn->io, 0, &req, &snap, put_cb);
    while (rv == 0 && !w.done)
        uv_run(rn->loop, UV_RUN_ONCE);
    if (rv == 0)
        rv = w.status;
    raft_configuration_close(&conf);
    if (rv) {
        snprintf(err, errlen, "writing the snapshot into %s: %s", rn->data_dir, raft_strerror(rv));
        return -1;
    }
    LOGI(rn->log, "raft: %s now starts a new %u-node cluster from the restored state", rn->data_dir,
         rn->cfg.n_peers ? (unsigned)rn->cfg.n_peers : 1u);
    return 0;
}
