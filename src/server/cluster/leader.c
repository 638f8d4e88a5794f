/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader.c — the leadership state machine (server.h has the moves).
 *
 * Polled from the tick and before every command: libraft has no state-change callback.
 *   NOT_LEADER --raft says leader--> READY_PENDING (barrier of this term proposed)
 *   READY_PENDING --barrier applied, same term--> READY (the lease restarts every deadline)
 *   READY_PENDING --barrier failed or term moved on--> NOT_LEADER (the next poll tries again)
 *   READY --raft says not leader / term changed--> NOT_LEADER (parked and waiting requests are
 *   answered -NOTLEADER / -NOLEADER; their sessions keep their queue places in the log)
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/obs/status.h"
#include "server/server.h"

const char *srv_role_name(int role)
{
    switch (role) {
    case RN_LEADER:
        return "leader";
    case RN_FOLLOWER:
        return "follower";
    case RN_CANDIDATE:
        return "candidate";
    default:
        return "unavailable";
    }
}

static bool lead_move_legal(enum srv_lead from, enum srv_lead to)
{
    switch (from) {
    case SRV_NOT_LEADER:
        return to == SRV_READY_PENDING;
    case SRV_READY_PENDING:
        return to == SRV_READY || to == SRV_NOT_LEADER;
    case SRV_READY:
        return to == SRV_NOT_LEADER;
    }
    return false;
}

void srv_lead_set(struct srv *s, enum srv_lead to)
{
    assert(lead_move_legal(s->cluster.lead, to));
    s->cluster.lead = to;
}

static void ready_cb(void *ctx, int status)
{
    struct srv *s = ctx;
    if (s->stopping || status != RN_OK || rn_role(s->rn) != RN_LEADER ||
        rn_term(s->rn) != s->cluster.ready_term) {
        srv_lead_set(s, SRV_NOT_LEADER);
        return; /* the next tick tries again if still leader */
    }
    srv_lead_set(s, SRV_READY);
    lease_takeover(&s->lease.rules, clock_ms(), srv_checkpoint_of, s);
    srv_format_on_ready(s);
    srv_settings_tick(s); /* after the format raise of a new cluster, in the same order */
    srv_members_on_ready(s);
    LOGI(&s->log, "leader ready in term %llu (applied index %llu, revision %llu)",
         (unsigned long long)s->cluster.ready_term, (unsigned long long)rn_applied_index(s->rn),
         (unsigned long long)fsm_revision(s->fsm));
}

static void step_down(struct srv *s)
{
    srv_lead_set(s, SRV_NOT_LEADER);
    lease_step_down(&s->lease.rules);
    srv_fail_parked(s, RN_NOTLEADER);
    srv_fail_waiting_reads(s, RN_NOTLEADER);
    srv_watch_fail(s, RN_NOTLEADER, false); /* READONLY readers keep this node's stream */
    srv_observe_fail(s, RN_NOTLEADER, false);
    srv_latch_fail(s, RN_NOTLEADER); /* latch waits: ask the new leader */
    /* reads in flight are answered by their barrier's failure callback */
}

static bool deposed(struct srv *s, int role, uint64_t term)
{
    return srv_ready(s) && (role != RN_LEADER || term != s->cluster.ready_term);
}

/*
 * A leader frozen (SIGSTOP, a long pause) wakes up, is told of a newer term and applies the new
 * leader's entries before the next tick has noticed: its parked requests must be failed
 * (-NOTLEADER) before any of those entries could wake them. Only the step-down half of
 * srv_poll_leadership runs here: no libraft call from inside its apply callback.
 */
void srv_check_deposed(struct srv *s)
{
    if (deposed(s, rn_role(s->rn), rn_term(s->rn))) {
        s->cluster.role = rn_role(s->rn);
        step_down(s);
    }
}

/* Count and log, once each, a new term and a new leader: the events an operator reads first
 * when clients saw -NOLEADER or -UNKNOWN. */
static void note_term_and_leader(struct srv *s, int role, uint64_t term)
{
    if (term > s->cluster.seen_term) {
        if (s->cluster.seen_term)
            s->m.elections += term - s->cluster.seen_term;
        LOGI(&s->log, "term %llu began (%s here; previous term %llu, leader was node %llu)",
             (unsigned long long)term, srv_role_name(role),
             (unsigned long long)s->cluster.seen_term, (unsigned long long)s->cluster.seen_leader);
        s->cluster.seen_term = term;
    }
    uint64_t id = 0;
    const char *addr = NULL;
    rn_leader(s->rn, &id, &addr);
    if (id && id != s->cluster.seen_leader) {
        if (s->cluster.seen_leader)
            s->m.leader_changes++;
        LOGI(&s->log, "leader is now node %llu at %s (term %llu)", (unsigned long long)id,
             addr ? addr : "?", (unsigned long long)term);
        s->cluster.seen_leader = id;
    }
}

/*
 * Tell systemd (Type=notify) the node serves: a ready leader, or a follower that knows its
 * leader and so can redirect clients (-NOTLEADER with its address). Once per process: a later
 * election does not make the unit "not ready" again (the STATUS line says it: obs/status.c).
 */
static void notify_if_serving(struct srv *s)
{
    if (s->notify.ready_sent || s->stopping)
        return;
    if (!srv_ready(s) && !(s->cluster.role == RN_FOLLOWER && s->cluster.seen_leader))
        return;
    char status[NOTIFY_STATUS_MAX];
    srv_status_text(s, status, sizeof status);
    if (notify_ready(&s->notify, status))
        LOGW(&s->log, "NOTIFY_SOCKET: READY=1 not sent: %s", strerror(errno));
}

void srv_poll_leadership(struct srv *s)
{
    int role = rn_role(s->rn);
    uint64_t term = rn_term(s->rn);
    if (role != s->cluster.role)
        LOGI(&s->log, "raft role %s -> %s (term %llu)", srv_role_name(s->cluster.role),
             srv_role_name(role), (unsigned long long)term);
    s->cluster.role = role;
    note_term_and_leader(s, role, term);
    if (deposed(s, role, term))
        step_down(s);
    if (role == RN_LEADER && s->cluster.lead == SRV_NOT_LEADER) {
        s->cluster.ready_term = term;
        srv_lead_set(s, SRV_READY_PENDING); /* before the call: its callback may not wait */
        if (rn_barrier(s->rn, ready_cb, s) != RN_OK)
            srv_lead_set(s, SRV_NOT_LEADER);
    }
    notify_if_serving(s);
    srv_noleader_poll(s);
}

bool srv_ready(const struct srv *s)
{
    return s->cluster.lead == SRV_READY;
}
