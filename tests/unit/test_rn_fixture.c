/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rn_fixture.c — the replication glue, deterministically, on libraft's raft_fixture
 * (rn_fixture.h): group commit and delivery (rn_batch.c), the membership repairs (rn_member.c
 * undoing an add whose catch-up failed, rn_tick.c repairing libraft's stale change
 * bookkeeping) and the snapshot guard (snapguard.c) with entries in flight. Each test builds
 * the situation it needs (a cut link, a slow disk, a lost leadership) on the virtual clock.
 */
#include "rn_fixture.h"
#include "test.h"

static bool all_told(struct rnfx *x, void *arg)
{
    return x->told >= *(unsigned *)arg;
}

/* ---- group commit ---- */

struct gc {
    struct rnfx fx;
};
static int gc_setup(struct gc *g)
{
    struct rn_config cfg = rnfx_config();
    return rnfx_setup_with(&g->fx, 3, &cfg);
}
static void gc_teardown(struct gc *g)
{
    rnfx_teardown(&g->fx);
}

/* The proposals of one loop turn go into one log entry, submitted by the prepare handle
 * (not by rn_propose); each proposal's callback gets its own reply, once, in order, and every
 * node applies the same commands. */
TEST_F(gc, group_commit_one_entry_per_turn)
{
    struct rnfx *x = &fx->fx;
    struct raft *leader = rnfx_raft(x, 0);
    raft_index before = raft_last_index(leader);
    for (unsigned k = 0; k < 3; k++)
        CHECK_EQ_U64(rnfx_propose(x, 0, k, 1000 + k), RN_OK);
    CHECK_EQ_U64(raft_last_index(leader), before); /* nothing appended inside rn_propose */
    rnfx_pump(x);
    CHECK_EQ_U64(raft_last_index(leader), before + 1); /* one entry for the three */
    unsigned want = 3;
    CHECK(rnfx_step_until(x, all_told, &want));
    for (unsigned k = 0; k < 3; k++) {
        struct rnfx_reply *r = &x->rep[k];
        CHECK_EQ_U64(r->calls, 1);
        CHECK_EQ_U64(r->status, RN_OK);
        CHECK_EQ_U64(r->order, k);
        CHECK_EQ_U64(r->reply.kind, FSM_REPLY_INT);
        if (k)
            CHECK(r->reply.value > x->rep[k - 1].reply.value); /* its own session id */
    }
    /* The entry: rn's envelope around the three commands as proposed. */
    struct rnfx_node *n0 = &x->node[0];
    CHECK_EQ_U64(n0->n_entries, 1);
    struct rnfx_envelope env;
    CHECK(rnfx_decode(&n0->entries[0], &env) == 0);
    CHECK_EQ_U64(env.version, RN_ENTRY_VERSION);
    CHECK_EQ_U64(env.origin, 1);
    CHECK_EQ_U64(env.n, 3);
    for (unsigned k = 0; k < 3; k++) {
        struct buf b;
        CHECK(rnfx_session_open(&b, 1000 + k) == 0);
        bool same = env.len[k] == b.len && memcmp(env.cmd[k], b.p, b.len) == 0;
        buf_free(&b);
        CHECK(same);
    }
    /* Every node applies the same entry: the same bytes, the same state. */
    raft_index idx = raft_last_index(leader);
    CHECK(raft_fixture_step_until_applied(&x->f, 3, idx, 10000));
    for (unsigned i = 1; i < 3; i++) {
        CHECK_EQ_U64(x->node[i].n_entries, 1);
        CHECK_EQ_U64(x->node[i].entries[0].len, n0->entries[0].len);
        CHECK(memcmp(x->node[i].entries[0].p, n0->entries[0].p, n0->entries[0].len) == 0);
        CHECK_EQ_U64(fsm_revision(x->node[i].fsm), fsm_revision(n0->fsm));
    }
}

/* More than RN_BATCH_MAX proposals in one turn: the 65th closes the first entry at once (64
 * commands), the rest share the next one; the replies still come once each, in order. */
TEST_F(gc, group_commit_cut_at_limit)
{
    struct rnfx *x = &fx->fx;
    struct raft *leader = rnfx_raft(x, 0);
    raft_index before = raft_last_index(leader);
    unsigned total = RN_BATCH_MAX + 3;
    for (unsigned k = 0; k < RN_BATCH_MAX; k++)
        CHECK_EQ_U64(rnfx_propose(x, 0, k, 1000), RN_OK);
    CHECK_EQ_U64(raft_last_index(leader), before);
    CHECK_EQ_U64(rnfx_propose(x, 0, RN_BATCH_MAX, 1000), RN_OK);
    CHECK_EQ_U64(raft_last_index(leader), before + 1); /* the full batch went at once */
    for (unsigned k = RN_BATCH_MAX + 1; k < total; k++)
        CHECK_EQ_U64(rnfx_propose(x, 0, k, 1000), RN_OK);
    rnfx_pump(x);
    CHECK_EQ_U64(raft_last_index(leader), before + 2);
    CHECK(rnfx_step_until(x, all_told, &total));
    for (unsigned k = 0; k < total; k++) {
        CHECK_EQ_U64(x->rep[k].calls, 1);
        CHECK_EQ_U64(x->rep[k].status, RN_OK);
        CHECK_EQ_U64(x->rep[k].order, k);
    }
    struct rnfx_node *n0 = &x->node[0];
    CHECK_EQ_U64(n0->n_entries, 2);
    struct rnfx_envelope a, b;
    CHECK(rnfx_decode(&n0->entries[0], &a) == 0);
    CHECK(rnfx_decode(&n0->entries[1], &b) == 0);
    CHECK_EQ_U64(a.n, RN_BATCH_MAX);
    CHECK_EQ_U64(b.n, 3);
    CHECK_EQ_U64(b.first_pid, a.first_pid + RN_BATCH_MAX);
}

static bool stepped_down(struct rnfx *x, void *arg)
{
    return raft_state(rnfx_raft(x, *(unsigned *)arg)) != RAFT_LEADER;
}

/* Appended, then the leader is cut off and steps down before the entry commits: the outcome
 * is unknown (RN_UNKNOWN), told once; never RN_OK, never RN_NOTLEADER. */
TEST_F(gc, leadership_lost_after_append_is_unknown)
{
    struct rnfx *x = &fx->fx;
    struct raft *leader = rnfx_raft(x, 0);
    raft_index before = raft_last_index(leader);
    rnfx_cut(x, 0, 1);
    rnfx_cut(x, 0, 2);
    CHECK_EQ_U64(rnfx_propose(x, 0, 0, 1000), RN_OK);
    CHECK_EQ_U64(rnfx_propose(x, 0, 1, 1000), RN_OK);
    rnfx_pump(x);
    CHECK_EQ_U64(raft_last_index(leader), before + 1); /* appended */
    unsigned leader_i = 0;
    CHECK(rnfx_step_until(x, stepped_down, &leader_i));
    unsigned want = 2;
    CHECK(rnfx_step_until(x, all_told, &want));
    for (unsigned k = 0; k < 2; k++) {
        CHECK_EQ_U64(x->rep[k].calls, 1);
        CHECK_EQ_U64(x->rep[k].status, RN_UNKNOWN);
        CHECK_EQ_U64(x->rep[k].order, k);
    }
    rnfx_join(x, 0, 1);
    rnfx_join(x, 0, 2);
    for (unsigned k = 0; k < 20; k++) /* later events tell nobody again */
        raft_fixture_step(&x->f), rnfx_pump(x);
    CHECK_EQ_U64(x->told, 2);
}

/* Proposed while leading, leadership lost before the loop turn submitted the batch: never
 * appended, so RN_NOTLEADER, told from the prepare handle (not from inside rn_propose). A
 * follower refuses at once and never calls back. */
TEST_F(gc, never_appended_is_notleader)
{
    struct rnfx *x = &fx->fx;
    CHECK_EQ_U64(rnfx_propose(x, 0, 0, 1000), RN_OK);
    CHECK_EQ_U64(rnfx_propose(x, 0, 1, 1000), RN_OK);
    raft_index before = raft_last_index(rnfx_raft(x, 0));
    raft_fixture_depose(&x->f); /* steps the fixture only: the loop did not turn */
    CHECK_EQ_U64(x->told, 0);
    rnfx_pump(x);
    CHECK_EQ_U64(x->told, 2);
    for (unsigned k = 0; k < 2; k++) {
        CHECK_EQ_U64(x->rep[k].calls, 1);
        CHECK_EQ_U64(x->rep[k].status, RN_NOTLEADER);
        CHECK_EQ_U64(x->rep[k].order, k);
    }
    CHECK_EQ_U64(raft_last_index(rnfx_raft(x, 0)), before);
    CHECK_EQ_U64(rnfx_propose(x, 1, 2, 1000), RN_NOTLEADER);
    for (unsigned k = 0; k < 20; k++)
        raft_fixture_step(&x->f), rnfx_pump(x);
    CHECK_EQ_U64(x->rep[2].calls, 0);
    CHECK_EQ_U64(x->told, 2);
}

int main(void)
{
    RUN_F(gc, group_commit_one_entry_per_turn);
    RUN_F(gc, group_commit_cut_at_limit);
    RUN_F(gc, leadership_lost_after_append_is_unknown);
    RUN_F(gc, never_appended_is_notleader);
    TEST_MAIN_END();
}
