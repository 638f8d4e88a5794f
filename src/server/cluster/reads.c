/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reads.c — linearizable reads: one barrier answers every read that arrived before it was
 * issued; under the leader's read lease (srv_read_lease, raft/rn_lease.c) a read with nothing
 * unanswered ahead of it on its connection is answered at once instead, with no barrier.
 *
 * `reads_waiting` join the next barrier, `reads_inflight` await the current one; at most one
 * read barrier is in flight. A read that finds none in flight starts the idle handle, which
 * issues the barrier on the next loop turn, before the loop blocks: every read of this turn
 * (all connections) shares it. The barrier's callback answers its reads and at once issues the
 * next barrier for the reads that arrived meanwhile.
 *
 * Why no deferral of the answer: libraft 0.22's legacy API never runs a barrier callback from
 * inside raft_step; completed requests are queued and fired from its own uv_prepare and
 * uv_check handles (LegacyFireCompletedRequests, libraft src/uv.c). The reads are answered
 * right there. They used to be answered from a uv_check handle of ours started inside that
 * callback: a check handle started during the check phase only runs on the next loop turn,
 * after a poll that blocks until the next timer (the 5 ms tick), so every read and keepalive
 * took about 5 ms (docs/performance.md, "The cause of the 5 ms reads").
 */
#include "server/server.h"

static void fail_reads(struct srv *s, struct srv_read_list *l, int status)
{
    struct srv_slot *slot = l->head;
    l->head = l->tail = NULL;
    while (slot) {
        struct srv_slot *next = slot->lnext;
        slot->lnext = NULL;
        srv_reply_status(s, &slot->out, status);
        srv_slot_done(slot);
        slot = next;
    }
}

void srv_fail_waiting_reads(struct srv *s, int status)
{
    fail_reads(s, &s->cluster.reads_waiting, status);
}

static void read_barrier_cb(void *ctx, int status);

static void issue_read_barrier(struct srv *s)
{
    if (s->cluster.barrier_inflight || !s->cluster.reads_waiting.head)
        return;
    s->cluster.reads_inflight = s->cluster.reads_waiting;
    s->cluster.reads_waiting.head = s->cluster.reads_waiting.tail = NULL;
    int rc = rn_barrier(s->rn, read_barrier_cb, s);
    if (rc != RN_OK) {
        fail_reads(s, &s->cluster.reads_inflight, rc);
        return;
    }
    s->cluster.barrier_inflight = true;
    s->m.read_barriers++;
}

/* The next loop turn, before the loop blocks: an active idle handle makes libuv poll without
 * waiting, whichever phase started it. */
static void reads_issue_cb(uv_idle_t *h)
{
    struct srv *s = h->data;
    uv_idle_stop(h);
    if (!s->stopping)
        issue_read_barrier(s);
}

/* Answer the reads the completed barrier covers, then issue the next barrier for the reads
 * that arrived meanwhile (including those parsed while answering: a connection resumes
 * parsing once its reads are answered). */
static void answer_reads(struct srv *s, int status)
{
    s->cluster.barrier_inflight = false;
    if (status != RN_OK || !srv_ready(s)) {
        fail_reads(s, &s->cluster.reads_inflight, status != RN_OK ? status : RN_NOTLEADER);
    } else {
        struct srv_slot *slot = s->cluster.reads_inflight.head;
        s->cluster.reads_inflight.head = s->cluster.reads_inflight.tail = NULL;
        while (slot) {
            struct srv_slot *next = slot->lnext;
            slot->lnext = NULL;
            s->m.reads++;
            if (!srv_run_read(s, slot))
                srv_slot_done(slot);
            slot = next;
        }
    }
    if (!s->stopping)
        issue_read_barrier(s);
}

static void read_barrier_cb(void *ctx, int status)
{
    answer_reads(ctx, status);
}

bool srv_read_lease(const struct srv *s)
{
    return !s->stopping && srv_ready(s) && rn_lease_held(s->rn);
}

/* Nothing of slot's connection is unanswered ahead of it: a write proposed before the read on
 * the same connection is not applied yet, and the read must show it, as one answered after a
 * barrier (issued after that write's entry) would. */
static bool first_unanswered(const struct srv_slot *slot)
{
    const struct srv_conn *c = slot->conn;
    if (!c)
        return false;
    for (const struct srv_slot *o = c->head; o && o != slot; o = o->next)
        if (o->state != SLOT_DONE)
            return false;
    return true;
}

void srv_enqueue_read(struct srv *s, struct srv_slot *slot)
{
    slot->lnext = NULL;
    if (srv_read_lease(s) && first_unanswered(slot)) {
        s->m.lease_reads++;
        if (!srv_run_read(s, slot))
            srv_slot_done(slot);
        return;
    }
    if (s->cluster.reads_waiting.tail)
        s->cluster.reads_waiting.tail->lnext = slot;
    else
        s->cluster.reads_waiting.head = slot;
    s->cluster.reads_waiting.tail = slot;
    if (!s->cluster.barrier_inflight && !uv_is_active((uv_handle_t *)&s->cluster.reads_issue))
        uv_idle_start(&s->cluster.reads_issue, reads_issue_cb);
}
