/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_heard.c — which voters this node heard from lately: libraft's raft_io `start` is wrapped
 * so that every message libraft receives first stamps its sender (uv_now, ms) in rn->heard,
 * then goes to libraft's own callback unchanged.
 *
 * Why: a node that waits for a quorum (a candidate whose peers are not up yet, a follower cut
 * off from the leader) can only say *why* it waits by naming how many voters answer; libraft
 * keeps no such count (a candidate's votes are reset at every election). Every live peer talks
 * to a candidate at least once per election timeout (its vote or pre-vote answer) and to a
 * follower through the leader's heartbeats, so "a message within a few election timeouts" is
 * a live peer. At most RN_HEARD_MAX servers are tracked (the oldest stamp is replaced):
 * clusters are far smaller. The ms stamps feed only the status line the server reports
 * (sd_notify) and X-Fencelock-Last-Contact. The precise ns stamps are what rn_gone.c waits
 * out before it clears the vote guard (rn_lease_gone_wait_ms). The same wrapper drops vote
 * requests during the hold after start (rn_lease_vote_dropped): both rules of the read lease,
 * rn_lease.c. After libraft has handled a message, the role and leader are sampled for the
 * election line (rn_tick.c rn_note_election), which a tick alone can miss.
 */
#include "raft/rn_internal.h"

#include <stddef.h>

static struct rn *rn_of_io(struct raft_io *io)
{
    return (struct rn *)(void *)((char *)io - offsetof(struct rn, io));
}

static void stamp(struct rn *rn, uint64_t id)
{
    uint64_t now = uv_now(rn->loop), ns = rn_lease_now_ns(rn);
    size_t oldest = 0;
    for (size_t i = 0; i < RN_HEARD_MAX; i++) {
        if (rn->heard[i].id == id || rn->heard[i].id == 0) {
            rn->heard[i].id = id;
            rn->heard[i].ms = now;
            rn->heard[i].ns = ns;
            return;
        }
        if (rn->heard[i].ms < rn->heard[oldest].ms)
            oldest = i;
    }
    rn->heard[oldest].id = id;
    rn->heard[oldest].ms = now;
    rn->heard[oldest].ns = ns;
}

static void heard_recv(struct raft_io *io, struct raft_message *msg)
{
    struct rn *rn = rn_of_io(io);
    if (msg->server_id)
        stamp(rn, msg->server_id);
    if (rn_lease_vote_dropped(rn, msg))
        return; /* a vote request carries no memory libraft would free */
    rn->io_recv(io, msg);
    /* libraft handled it synchronously: a leader's first AppendEntries and a TimeoutNow right
     * after it are each seen here, so the election line can name the leader that asked. */
    if (rn->raft)
        rn_note_election(rn, uv_now(rn->loop));
}

static int heard_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick,
                       raft_io_recv_cb recv)
{
    struct rn *rn = rn_of_io(io);
    rn->io_recv = recv;
    return rn->io_start(io, msecs, tick, heard_recv);
}

void rn_heard_install(struct rn *rn)
{
    rn->io_start = rn->io.start;
    rn->io.start = heard_start;
}

void rn_voters_heard(struct rn *rn, uint64_t within_ms, unsigned *voters, unsigned *heard)
{
    *voters = *heard = 0;
    if (!rn->raft)
        return;
    uint64_t now = uv_now(rn->loop);
    const struct raft_configuration *c = &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].role != RAFT_VOTER)
            continue;
        (*voters)++;
        uint64_t id = c->servers[i].id;
        if (id == rn->raft->id) {
            (*heard)++;
            continue;
        }
        for (size_t j = 0; j < RN_HEARD_MAX; j++)
            if (rn->heard[j].id == id && now - rn->heard[j].ms <= within_ms) {
                (*heard)++;
                break;
            }
    }
}

uint64_t rn_heard_ago(struct rn *rn, uint64_t id)
{
    uint64_t now = uv_now(rn->loop);
    for (size_t j = 0; id && j < RN_HEARD_MAX; j++)
        if (rn->heard[j].id == id)
            return now >= rn->heard[j].ms ? now - rn->heard[j].ms : 0;
    return UINT64_MAX;
}

uint64_t rn_heard_ns(struct rn *rn, uint64_t id)
{
    for (size_t j = 0; id && j < RN_HEARD_MAX; j++)
        if (rn->heard[j].id == id)
            return rn->heard[j].ns;
    return 0;
}
