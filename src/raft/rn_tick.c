/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_tick.c — rn_tick, the server's periodic call into rn: samples the commit index (for
 * rn_remove_check), notes when this leader settled, repairs libraft 0.22.1's stale "uncommitted
 * configuration" bookkeeping and hands leadership over when a change nobody here started stays
 * stuck (docs/server.md "libraft 0.22.1"). The only code that writes libraft's configuration
 * fields directly. Also rn_tick_wrap: every libraft tick sends a heartbeat, which keeps
 * followers in libraft's pipeline mode between writes.
 */
#include "raft/rn_internal.h"

#include <stddef.h>
#include <stdio.h>

/*
 * libraft 0.22.1's leader, at every tick, counts a follower as unreachable when nothing came
 * from it since the previous tick (checkContactQuorum in src/timeout.c: "recent" means
 * last_recv >= election_timer_start, and the timer restarts at every tick with a quorum), and
 * moves it from pipeline to probe. In probe it sends at most one message per heartbeat timeout
 * (progressShouldReplicate in src/progress.c), and only an answer that raises the match index
 * brings it back to pipeline. Its heartbeat goes out only when nothing was sent for a heartbeat
 * timeout. With the tick and the heartbeat timeout both --heartbeat-ms, one write shortly before
 * a tick makes the next tick skip the heartbeat; at the tick after that every follower is
 * "unreachable" and in probe, and the first write after the pause waits for a tick before it
 * is sent: up to --heartbeat-ms on a write that takes 0.4 ms (LIBRAFT_TRACE shows "probe server
 * 2 sending 1 entry" at the tick). W12 and every first write after an idle period paid it.
 *
 * So every tick sends a heartbeat: around libraft's tick callback the heartbeat timeout is 1 ms
 * (a follower that got nothing in the same millisecond gets one), and --heartbeat-ms again
 * after it. An answering follower is then heard between any two ticks and stays in pipeline; a
 * follower that really is slow or away still goes to probe, as designed. Only during the tick:
 * a heartbeat timeout of 1 ms at all times (tried first) also sent an empty AppendEntries to an
 * up-to-date follower at nearly every submit, +12 % of the leader's instructions per
 * LOCK+UNLOCK pair (bench/instr.sh: 73.6k -> 82.2k). The tick interval is the heartbeat timeout
 * of raft_start (the io's start), so --heartbeat-ms stays the tick.
 * Test: test_rn_fixture's first_write_after_idle_is_sent_at_once.
 */
static void tick_cb(struct raft_io *io)
{
    struct raft *r = io->data;
    /* raft->data is the snapshot guard (snapguard_init), which lives in struct rn */
    struct rn *rn = (struct rn *)(void *)((char *)r->data - offsetof(struct rn, guard));
    unsigned heartbeat = r->heartbeat_timeout;
    raft_set_heartbeat_timeout(r, 1);
    rn->libraft_tick(io);
    raft_set_heartbeat_timeout(r, heartbeat);
}

static int io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
    struct raft *r = io->data;
    struct rn *rn = (struct rn *)(void *)((char *)r->data - offsetof(struct rn, guard));
    rn->libraft_tick = tick;
    return rn->io_start_next(io, msecs, tick_cb, recv);
}

void rn_tick_wrap(struct rn *rn)
{
    rn->io_start_next = rn->raft->io->start;
    rn->raft->io->start = io_start;
}

static int config_copy(const struct raft_configuration *src, struct raft_configuration *dst)
{
    raft_configuration_init(dst);
    for (unsigned i = 0; i < src->n; i++)
        if (raft_configuration_add(dst, src->servers[i].id, src->servers[i].address,
                                   src->servers[i].role)) {
            raft_configuration_close(dst);
            return -1;
        }
    return 0;
}

/*
 * libraft 0.22.1 (and the cowsql fork's HEAD) records a configuration entry that a follower
 * receives behind other new entries of one AppendEntries at the index of the batch's *first*
 * new entry: replicationAppend (src/replication.c) calls membershipUncommittedChange(r, index,
 * entry) for every entry of the batch with the same `index`. When the real entry is applied,
 * replicationApplyConfigurationChange sees another index and ignores it, so
 * configuration_uncommitted_index stays set for good and configuration_committed stays the
 * configuration before the change. Once that node leads, membershipCanChangeConfiguration
 * refuses every change with RAFT_CANTCHANGE. (A restart from a snapshot taken meanwhile can
 * leave the same state: the snapshot carries the stale configuration index.)
 *
 * The state is recognisable: an "uncommitted" configuration at an index already applied, on a
 * node that knows every configuration entry it holds is committed -- a leader that applied its
 * own term's first entry (every configuration entry of an earlier term is before it; one of
 * this term has its index recorded right, above the applied index until it commits), or a
 * follower that applied past the whole batch that carried the entry. A follower cannot see
 * where that batch ended, but it was appended before the tick that first saw the index: the
 * last log index at that tick bounds it (stale_bound). A new term can truncate the log and
 * bring another batch, so the bound is taken again when the index or the term changes.
 * Waiting for the follower to apply its whole log instead could take for ever under steady
 * writes, and a --join node that cannot see its own committed promotion keeps asking to be
 * added. Then the current configuration is the committed one: record it as such, with the
 * applied index as its index (at or after the real entry, so a restart does not take the entry
 * for uncommitted again).
 */
static void note_stale_bound(struct rn *rn, struct raft *r, raft_index u)
{
    if (rn->stale_u != u || rn->stale_term != r->current_term) {
        rn->stale_u = u;
        rn->stale_term = r->current_term;
        rn->stale_bound = raft_last_index(r);
    }
}

static void repair_stale_config(struct rn *rn)
{
    struct raft *r = rn->raft;
    raft_index u = r->configuration_uncommitted_index, applied = raft_last_applied(r);
    if (u == 0 || rn->no_repair)
        return;
    note_stale_bound(rn, r, u); /* from the first tick that sees u, even before it applies */
    if (u > applied)
        return;
    int st = raft_state(r);
    bool settled = st == RAFT_LEADER ? rn->lead_term == r->current_term && applied >= rn->lead_first
                                     : st == RAFT_FOLLOWER && applied >= rn->stale_bound;
    struct raft_configuration copy;
    if (!settled || config_copy(&r->configuration, &copy))
        return; /* not yet known to be committed, or no memory: the next tick looks again */
    raft_configuration_close(&r->configuration_committed);
    r->configuration_committed = copy;
    r->configuration_committed_index = applied;
    r->configuration_uncommitted_index = 0;
    LOGW(rn->log,
         "raft: libraft still counted the configuration entry it noted at index %llu as "
         "uncommitted although index %llu is applied (libraft 0.22.1 records a change received "
         "in a batch at the batch's first index): marked committed, changes possible again",
         (unsigned long long)u, (unsigned long long)applied);
}

static void watchdog_transfer_done(void *ctx, int status, const char *msg)
{
    struct rn *rn = ctx;
    if (status != RN_OK)
        LOGW(rn->log, "raft: handing over leadership to clear a stuck change failed: %s",
             msg ? msg : "unknown");
}

/*
 * A change libraft reports in progress (an uncommitted configuration entry, a promotion's
 * catch-up) that no rn call started: normally an earlier leader's, which the first entry of a
 * new term commits within an election timeout. If it stays put on a leader for
 * RN_STUCK_TIMEOUTS election timeouts, libraft will not let it go by itself: hand leadership to
 * another voter (it has its own bookkeeping, and the next leader change is what clears the
 * promotion state), with a log line. Again after as long if it is still there.
 */
#define RN_STUCK_TIMEOUTS 20

static void watch_lib_change(struct rn *rn, uint64_t now)
{
    struct raft *r = rn->raft;
    bool leader = raft_state(r) == RAFT_LEADER;
    uint64_t u = r->configuration_uncommitted_index;
    uint64_t p = leader ? r->leader_state.promotee_id : 0;
    if (rn->changes || (u == 0 && p == 0)) {
        rn->lib_since_ms = 0;
        return;
    }
    if (!rn->lib_since_ms || u != rn->lib_index || p != rn->lib_promotee) {
        rn->lib_since_ms = RN_MS_NONZERO(now);
        rn->lib_index = u;
        rn->lib_promotee = p;
        return;
    }
    /* Only a settled leader's own wait counts: before its term's first entry applied, an
     * earlier leader's change is legitimately pending, and time spent as a follower or
     * candidate says nothing about this leader. */
    if (!leader || !rn->settled_ms)
        return;
    uint64_t from = rn->lib_since_ms > rn->settled_ms ? rn->lib_since_ms : rn->settled_ms;
    uint64_t age = now - from;
    if (age < (uint64_t)RN_STUCK_TIMEOUTS * rn->cfg.election_ms)
        return;
    char what[RN_REASON_BUF];
    if (p)
        snprintf(what, sizeof(what), "the promotion of server %llu", (unsigned long long)p);
    else
        snprintf(what, sizeof(what), "the configuration entry at index %llu",
                 (unsigned long long)u);
    LOGW(rn->log,
         "raft: a configuration change nobody here started (%s) has been in progress for %llu "
         "ms: handing leadership to another voter",
         what, (unsigned long long)age);
    rn->lib_since_ms = rn->settled_ms = now; /* the next attempt, if needed, as long after */
    /* Out of memory or refused: said in the log, and tried again after as long. */
    if (rn_member_transfer(rn, 0, watchdog_transfer_done, rn) != RN_OK)
        watchdog_transfer_done(rn, RN_ERR, rn->errmsg);
}

/*
 * Say why this node started an election: a follower that hears nothing from a leader for its
 * (randomized) election timeout becomes a candidate, and an operator reading "elected" lines
 * wants to know what it stopped hearing. libraft has no callback for it, so the tick watches
 * the role: from follower to candidate, or to a new term as candidate or leader (a quick
 * election can finish between two ticks). A lone voter that leads from its start has nothing to
 * explain (its role change is logged) and is skipped. With pre-vote the term is only raised once a
 * majority would vote, so this is logged once per run of candidacy, not per attempt.
 */
/* A leadership transfer (CLUSTER.TRANSFER, or a leader handing over) starts an election
 * without any timeout: libraft marks it (disrupt_leader) while the node is a candidate, and a
 * node that heard from its leader less than an election timeout ago can have no other reason. */
static void log_election(struct rn *rn, uint64_t now, bool disrupt)
{
    uint64_t quiet = now - rn->contact_ms, term = rn->raft->current_term;
    if (rn_gone_take(rn) && !disrupt)
        LOGI(rn->log,
             "raft: starting an election: the leader (node %llu, term %llu) is gone, its raft "
             "port refuses connections; term now %llu",
             (unsigned long long)rn->known_leader, (unsigned long long)rn->known_leader_term,
             (unsigned long long)term);
    else if (rn->known_leader && (disrupt || quiet < rn->cfg.election_ms))
        LOGI(rn->log,
             "raft: starting an election at the leader's request (leadership transfer from "
             "node %llu, term %llu); term now %llu",
             (unsigned long long)rn->known_leader, (unsigned long long)rn->known_leader_term,
             (unsigned long long)term);
    else if (rn->known_leader)
        LOGI(rn->log,
             "raft: starting an election: no message from the leader (node %llu, term %llu) "
             "for %llu ms, past the election timeout (%u ms, randomized up to twice that); "
             "term now %llu",
             (unsigned long long)rn->known_leader, (unsigned long long)rn->known_leader_term,
             (unsigned long long)quiet, rn->cfg.election_ms, (unsigned long long)term);
    else
        LOGI(rn->log,
             "raft: starting an election: no leader heard from since this node started "
             "(election timeout %u ms); term now %llu",
             rn->cfg.election_ms, (unsigned long long)term);
}

void rn_note_election(struct rn *rn, uint64_t now)
{
    struct raft *r = rn->raft;
    int st = raft_state(r);
    uint64_t term = r->current_term;
    if (st == RAFT_FOLLOWER) {
        raft_id id = 0;
        const char *addr = NULL;
        raft_leader(r, &id, &addr);
        if (id) {
            rn->known_leader = id;
            rn->known_leader_term = term;
        }
        rn->contact_ms = r->election_timer_start;
    }
    bool started = rn->seen_state == RAFT_FOLLOWER &&
                   (st == RAFT_CANDIDATE || (st == RAFT_LEADER && term > rn->seen_term));
    if (started)
        log_election(rn, now, st == RAFT_CANDIDATE && r->candidate_state.disrupt_leader);
    rn->seen_state = st;
    rn->seen_term = term;
}

void rn_tick(struct rn *rn)
{
    if (!rn_running(rn))
        return;
    struct raft *r = rn->raft;
    uint64_t now = uv_now(rn->loop);
    if (now - rn->commit_mark_ms >= rn->cfg.election_ms) {
        rn->commit_prev = rn->commit_mark;
        rn->commit_mark = r->commit_index;
        rn->commit_mark_ms = now;
    }
    if (raft_state(r) == RAFT_LEADER && r->current_term != rn->lead_term) {
        rn->lead_term = r->current_term;
        rn->lead_first = raft_last_index(r);
        rn->settled_ms = 0;
    }
    if (raft_state(r) != RAFT_LEADER)
        rn->settled_ms = 0;
    else if (!rn->settled_ms && raft_last_applied(r) >= rn->lead_first)
        rn->settled_ms = RN_MS_NONZERO(now);
    rn_note_election(rn, now);
    repair_stale_config(rn);
    watch_lib_change(rn, now);
}