/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_lease.c — the leader's read lease, and the two follower rules it rests on.
 *
 * What it proves. A read barrier proves that no other leader had been elected when a read or
 * keepalive arrived: an entry appended after the arrival committed in this leader's term. The
 * lease proves the same from an entry appended *before* the arrival, for a short time:
 *
 *   An entry this leader appended at time s (its monotonic clock) and applied in the same term,
 *   still leader, was accepted by a majority, each voter through an AppendEntries of ours sent
 *   at or after s. libraft 0.22's vote guard (recv_request_vote.c) makes such a voter refuse
 *   every vote and pre-vote, and stay a follower, until its own election timer (at least
 *   --election-ms, restarted by that message) runs out. A new leader needs one of them. So none
 *   can exist before s + lease, lease < --election-ms, and a read that arrives before then
 *   reads what a barrier would have let it read.
 *
 * The guard has three holes, each closed here or where it is:
 *   - A restarted voter has forgotten the leader and would vote at once: a node drops every
 *     RequestVote (vote and pre-vote) during the follower hold (below) after it started
 *     (rn_lease_vote_dropped, called by rn_heard.c for every message). A vote request lost is
 *     one Raft already copes with: the candidate asks again at its next timeout.
 *   - rn_gone.c clears the guard when the leader's process is gone. It waits until the
 *     follower hold has passed since the last message from that leader
 *     (rn_lease_gone_wait_ms), in case the process was not gone after all (a network that
 *     resets connections and refuses connects for a live leader).
 *   - A leadership transfer (TimeoutNow) lets its target campaign with disrupt_leader, which
 *     the guard lets through. The leader drops its lease for the rest of the term the moment
 *     it asks for a transfer (rn_lease_drop), before libraft can send TimeoutNow.
 *
 * Lengths. The leader's lease is --read-lease-ms, at most RN_LEASE_MAX_MS and a quarter of
 * --election-ms. The follower rules do not read --read-lease-ms (a node's own setting says
 * nothing about the leader's): they hold twice the longest lease any leader may take,
 * 2 x min(RN_LEASE_MAX_MS, --election-ms / 4), so the same --election-ms on every node is all
 * they assume, as Raft's timeouts do anyway.
 *
 * Clocks. Only durations on each node's monotonic clock are compared, never two clocks'
 * readings. The factor 2 of the follower rules is safe while any two nodes' clocks advance at
 * rates within a factor 2 of each other (CLOCK_MONOTONIC is slewed by NTP by at most 0.05 %);
 * the guard's own timeout keeps a factor 4. The readings are uv_hrtime (CLOCK_MONOTONIC), not the
 * loop's cached time, which can lag the truth by a loop turn: a stale "now" would stretch the
 * lease. On a glue made with rn_glue_new (the fixture's virtual clock) the io's time is used
 * instead.
 *
 * Owns: rn->lease_* fields (rn_internal.h). Renewed by rn_batch.c when an entry or barrier it
 * submitted applies; read by the server (rn_lease_held) before it answers a read without a
 * barrier.
 */
#include "raft/rn_internal.h"

#define NS_PER_MS 1000000ull

uint64_t rn_lease_now_ns(struct rn *rn)
{
    if (rn->attached && rn->raft && rn->raft->io)
        return (uint64_t)rn->raft->io->time(rn->raft->io) * NS_PER_MS;
    return uv_hrtime();
}

/* The longest lease any leader of this cluster may take. */
static unsigned lease_cap_ms(const struct rn *rn)
{
    unsigned cap = rn->cfg.election_ms / RN_LEASE_ELECTION_SHARE;
    return cap < RN_LEASE_MAX_MS ? cap : RN_LEASE_MAX_MS;
}

void rn_lease_init(struct rn *rn)
{
    unsigned ms = rn->cfg.read_lease_ms;
    if (ms > lease_cap_ms(rn))
        ms = lease_cap_ms(rn);
    rn->lease_ns = (uint64_t)ms * NS_PER_MS;
    rn->lease_hold_ns = (uint64_t)RN_LEASE_FOLLOWER_HOLDS * lease_cap_ms(rn) * NS_PER_MS;
    rn->lease_started_ns = rn_lease_now_ns(rn);
}

unsigned rn_lease_ms(const struct rn *rn)
{
    return (unsigned)(rn->lease_ns / NS_PER_MS);
}

void rn_lease_renew(struct rn *rn, uint64_t term, uint64_t submit_ns)
{
    if (!rn->lease_ns || !rn->raft || raft_state(rn->raft) != RAFT_LEADER ||
        rn->raft->current_term != term || rn->lease_dropped_term == term)
        return;
    uint64_t until = submit_ns + rn->lease_ns;
    if (rn->lease_term != term || until > rn->lease_until_ns) {
        rn->lease_term = term;
        rn->lease_until_ns = until;
    }
}

void rn_lease_drop(struct rn *rn)
{
    if (rn->raft)
        rn->lease_dropped_term = rn->raft->current_term;
    rn->lease_until_ns = 0;
}

bool rn_lease_held(struct rn *rn)
{
    return rn->lease_ns && rn_running(rn) && raft_state(rn->raft) == RAFT_LEADER &&
           rn->lease_term == rn->raft->current_term &&
           rn->lease_dropped_term != rn->raft->current_term &&
           rn_lease_now_ns(rn) < rn->lease_until_ns;
}

bool rn_lease_vote_dropped(struct rn *rn, const struct raft_message *msg)
{
    if (msg->type != RAFT_REQUEST_VOTE)
        return false;
    if (rn_lease_now_ns(rn) - rn->lease_started_ns >= rn->lease_hold_ns)
        return false;
    if (!rn->lease_vote_logged) {
        rn->lease_vote_logged = true;
        LOGI(rn->log,
             "raft: not answering vote requests for %llu ms after start (a leader may still hold "
             "a read lease on this node's earlier acknowledgement)",
             (unsigned long long)(rn->lease_hold_ns / NS_PER_MS));
    }
    return true;
}

uint64_t rn_lease_gone_wait_ms(struct rn *rn, uint64_t leader_id)
{
    uint64_t now = rn_lease_now_ns(rn);
    uint64_t last = rn_heard_ns(rn, leader_id);
    if (!last)
        last = now; /* not remembered: it may have been just now */
    uint64_t until = last + rn->lease_hold_ns;
    /* rounded up: the wait must not end before `until` */
    return now >= until ? 0 : (until - now + NS_PER_MS - 1) / NS_PER_MS;
}
