/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reads_fixture.c — barrier batching (src/server/reads.c), deterministically: the server's
 * own srv_enqueue_read and barrier callbacks, on the replication glue of a raft_fixture leader
 * (rn_fixture.h). The struct srv is a zeroed one with only what reads.c uses (the rn, the
 * loop, the idle handle, a ready leader); each read is a slot whose command records when it
 * ran. The property is the linearizability rule: a read is answered only after a barrier
 * appended after the read arrived has applied, so one barrier answers every read that arrived
 * before it was issued, and a read arriving while a barrier is in flight waits for the next.
 */
#include "rn_fixture.h"
#include "server/cmd/cmd.h"
#include "server/server.h"
#include "test.h"

#define RD_MAX 16

struct rd_rec {
    unsigned calls, order;
    raft_index arrived_last; /* the leader's last log index when the read arrived */
    raft_index applied;      /* the leader's applied index when it ran */
    uint64_t barriers;       /* read barriers issued when it ran */
};

struct rdt {
    struct rnfx fx;
    struct srv *s;
    bool idle_init;
    struct rd_rec rec[RD_MAX];
    unsigned answered;
};

static struct rdt *rd_cur; /* the command handler's way back to the test (one test at a time) */

/* The read command: runs once its barrier applied (srv_run_read). */
static void rd_cmd_fn(struct srv_req *r)
{
    struct rdt *t = rd_cur;
    struct rd_rec *rec = &t->rec[r->slot->wait_ms];
    rec->calls++;
    rec->order = t->answered++;
    rec->applied = raft_last_applied(rnfx_raft(&t->fx, 0));
    rec->barriers = t->s->m.read_barriers;
    resp_w_uint(r->out, r->slot->wait_ms);
}

static const struct srv_cmd rd_cmd = {
    .name = "TESTREAD", .len = 8, .arity = 1, .flags = CMD_READ, .fn = rd_cmd_fn};

static int rdt_setup(struct rdt *t)
{
    memset(t->rec, 0, sizeof(t->rec));
    t->answered = 0;
    t->idle_init = false;
    t->s = NULL;
    rd_cur = t;
    struct rn_config cfg = rnfx_config();
    if (rnfx_setup_with(&t->fx, 3, &cfg))
        return -1;
    t->s = calloc(1, sizeof(*t->s));
    if (!t->s)
        return -1;
    t->s->rn = t->fx.node[0].rn;
    t->s->loop = &t->fx.loop;
    t->s->cluster.lead = SRV_READY;
    uv_idle_init(&t->fx.loop, &t->s->cluster.reads_issue);
    t->s->cluster.reads_issue.data = t->s;
    t->idle_init = true;
    return 0;
}

static void rdt_teardown(struct rdt *t)
{
    if (t->s) {
        t->s->stopping = true;
        srv_fail_waiting_reads(t->s, RN_ERR);
        if (t->idle_init) {
            uv_idle_stop(&t->s->cluster.reads_issue);
            uv_close((uv_handle_t *)&t->s->cluster.reads_issue, NULL);
        }
    }
    rnfx_teardown(&t->fx);
    if (t->s) {
        srv_free_slots(t->s);
        free(t->s);
    }
    rd_cur = NULL;
}

/* A read from a client, as cmd.c queues one: read number i. */
static int rd_read(struct rdt *t, unsigned i)
{
    struct srv_slot *slot = calloc(1, sizeof(*slot));
    if (!slot)
        return -1;
    slot->srv = t->s;
    slot->kind = SLOT_READ;
    slot->cmd = &rd_cmd;
    slot->wait_ms = i;
    buf_init(&slot->out);
    buf_init(&slot->args);
    t->rec[i].arrived_last = raft_last_index(rnfx_raft(&t->fx, 0));
    srv_enqueue_read(t->s, slot);
    return 0;
}

struct rd_want {
    struct rdt *t;
    unsigned n;
};
static bool rd_answered(struct rnfx *x, void *arg)
{
    (void)x;
    struct rd_want *w = arg;
    return w->t->answered >= w->n;
}

/* Reads of one loop turn (any connections) share one barrier, issued on the next turn; each
 * is answered once, in arrival order, after that barrier applied. */
TEST_F(rdt, reads_before_a_barrier_share_it)
{
    struct rdt *t = fx;
    for (unsigned i = 0; i < 3; i++)
        CHECK(rd_read(t, i) == 0);
    CHECK_EQ_U64(t->s->m.read_barriers, 0); /* issued on the next turn, not per read */
    rnfx_pump(&t->fx);
    CHECK_EQ_U64(t->s->m.read_barriers, 1);
    struct rd_want w = {t, 3};
    CHECK(rnfx_step_until(&t->fx, rd_answered, &w));
    for (unsigned i = 0; i < 3; i++) {
        CHECK_EQ_U64(t->rec[i].calls, 1);
        CHECK_EQ_U64(t->rec[i].order, i);
        CHECK(t->rec[i].applied > t->rec[i].arrived_last);
    }
    CHECK_EQ_U64(t->s->m.read_barriers, 1);
    CHECK_EQ_U64(t->s->m.reads, 3);
    CHECK(!t->s->cluster.barrier_inflight);
}

/* A read that arrives while a barrier is in flight is not answered by it: that barrier was
 * appended before the read arrived, so it proves nothing about the read. It waits for the
 * next barrier, issued when the first completes. */
TEST_F(rdt, read_during_a_barrier_waits_for_the_next)
{
    struct rdt *t = fx;
    CHECK(rd_read(t, 0) == 0);
    rnfx_pump(&t->fx);
    CHECK(t->s->cluster.barrier_inflight);
    CHECK_EQ_U64(t->s->m.read_barriers, 1);
    CHECK(rd_read(t, 1) == 0); /* the barrier is appended, not applied */
    CHECK_EQ_U64(t->rec[0].calls, 0);
    struct rd_want w = {t, 1};
    CHECK(rnfx_step_until(&t->fx, rd_answered, &w));
    CHECK_EQ_U64(t->rec[0].calls, 1);
    CHECK_EQ_U64(t->rec[1].calls, 0); /* not by the first barrier */
    w.n = 2;
    CHECK(rnfx_step_until(&t->fx, rd_answered, &w));
    for (unsigned i = 0; i < 2; i++) {
        CHECK_EQ_U64(t->rec[i].calls, 1);
        CHECK_EQ_U64(t->rec[i].order, i);
        CHECK(t->rec[i].applied > t->rec[i].arrived_last);
    }
    CHECK_EQ_U64(t->rec[0].barriers, 1);
    CHECK_EQ_U64(t->rec[1].barriers, 2);
    CHECK_EQ_U64(t->s->m.read_barriers, 2);
}

int main(void)
{
    RUN_F(rdt, reads_before_a_barrier_share_it);
    RUN_F(rdt, read_during_a_barrier_waits_for_the_next);
    TEST_MAIN_END();
}
