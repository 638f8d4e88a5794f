/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapguard.c — see snapguard.h for the libraft bug and the containment.
 *
 * Held message life cycle (at most one):
 *   NONE --InstallSnapshot received while snapshot_taking: hold()--> HELD
 *   HELD --another InstallSnapshot received: hold() frees the older--> HELD
 *   HELD --check handle sees snapshot_taking clear: deliver()--> NONE (libraft owns it)
 *   HELD --snapguard_close: drop()--> NONE (freed here)
 * An InstallSnapshot received while libraft installs one is never held: strip() empties it
 * and it goes on at once. (Nothing is held then: an install starts only from a delivery.)
 * Invariant: g->holding == (check handle active) outside these functions.
 */
#include "raft/snapguard.h"

#include <stdlib.h>
#include <string.h>

/* The data and configuration of an InstallSnapshot libraft will never see. */
static void drop(struct snapguard *g)
{
    if (!g->holding)
        return;
    raft_configuration_close(&g->held.install_snapshot.conf);
    raft_free(g->held.install_snapshot.data.base);
    free(g->held_address);
    g->held_address = NULL;
    g->holding = false;
    uv_check_stop(&g->check);
}

/* Every received message enters libraft here, in a frame of its own: tests/lsan.supp names it
 * to suppress a leak libraft 0.22.1 makes while it processes a message (see there). */
__attribute__((noinline)) static void
snapguard_into_libraft(struct snapguard *g, struct raft_io *io, struct raft_message *m)
{
    g->recv(io, m);
}

static void deliver_cb(uv_check_t *h)
{
    struct snapguard *g = h->data;
    if (!g->holding || g->raft->legacy.snapshot_taking)
        return;
    struct raft_message m = g->held;
    char *address = g->held_address;
    g->held_address = NULL;
    g->holding = false;
    uv_check_stop(&g->check);
    LOGI(g->log,
         "raft: delivering the InstallSnapshot (index %llu) from %llu held back (%llu copies "
         "superseded so far)",
         (unsigned long long)m.install_snapshot.last_index, (unsigned long long)m.server_id,
         (unsigned long long)g->replaced_total);
    /* From a check handle, outside every libraft callback: as if it had just arrived. */
    snapguard_into_libraft(g, g->raft->io, &m);
    free(address);
}

/* Keep `m` (its data and configuration are now ours) until libraft's write completed. */
static void hold(struct snapguard *g, struct raft_message *m)
{
    char *address = strdup(m->server_address ? m->server_address : "");
    if (!address) {
        /* Out of memory: lose the message (the leader resends after its install timeout)
         * rather than let libraft park it. */
        raft_configuration_close(&m->install_snapshot.conf);
        raft_free(m->install_snapshot.data.base);
        return;
    }
    /* A leader resends on every rejected heartbeat: one line per wait, not per copy. */
    log_msg(g->log, g->holding ? LOG_DEBUG : LOG_INFO,
            "raft: InstallSnapshot (index %llu, term %llu) from %llu held back until our own "
            "snapshot write completes (libraft 0.22.1 crashes on it otherwise)",
            (unsigned long long)m->install_snapshot.last_index,
            (unsigned long long)m->install_snapshot.term, (unsigned long long)m->server_id);
    if (g->holding)
        g->replaced_total++;
    drop(g);
    g->held = *m;
    g->held.server_address = address;
    g->held_address = address;
    g->holding = true;
    g->held_total++;
    uv_check_start(&g->check, deliver_cb);
}

/*
 * While libraft installs a snapshot it ignores another InstallSnapshot (the leader resends one
 * on every rejected heartbeat) and never frees its data and configuration
 * (replicationInstallSnapshot returns early): a whole snapshot leaked per copy. Its term and
 * leader still count, so the message goes on, emptied; nothing reads the payload on that path.
 */
static void strip(struct snapguard *g, struct raft_message *m)
{
    raft_configuration_close(&m->install_snapshot.conf);
    raft_configuration_init(&m->install_snapshot.conf);
    raft_free(m->install_snapshot.data.base);
    m->install_snapshot.data.base = NULL;
    m->install_snapshot.data.len = 0;
    g->stripped_total++;
}

static void recv_cb(struct raft_io *io, struct raft_message *m)
{
    struct raft *r = io->data;
    struct snapguard *g = r->data;
    if (m->type == RAFT_INSTALL_SNAPSHOT && r->snapshot.installing && !r->legacy.closing)
        strip(g, m);
    else if (m->type == RAFT_INSTALL_SNAPSHOT && !g->closing && !r->legacy.closing &&
             (r->legacy.snapshot_taking || g->holding)) {
        hold(g, m);
        return;
    }
    snapguard_into_libraft(g, io, m);
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
    struct raft *r = io->data;
    struct snapguard *g = r->data;
    g->recv = recv;
    return g->io_start(io, msecs, tick, recv_cb);
}

void snapguard_init(struct snapguard *g, uv_loop_t *loop, struct raft *raft,
                    const struct logger *log)
{
    memset(g, 0, sizeof(*g));
    g->raft = raft;
    g->log = log;
    raft->data = g;
    g->io_start = raft->io->start;
    raft->io->start = io_start;
    uv_check_init(loop, &g->check);
    g->check.data = g;
    uv_unref((uv_handle_t *)&g->check);
}

bool snapguard_holding(const struct snapguard *g)
{
    return g->holding;
}

static void check_closed(uv_handle_t *h)
{
    struct snapguard *g = h->data;
    if (g->closed)
        g->closed(g);
}

void snapguard_close(struct snapguard *g, void (*closed)(struct snapguard *g))
{
    g->closing = true;
    drop(g);
    g->closed = closed;
    uv_close((uv_handle_t *)&g->check, check_closed);
}
