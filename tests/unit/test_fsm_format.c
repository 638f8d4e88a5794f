/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_format — the cluster's log format (src/fsm/format.c): CLUSTER_FORMAT only raises
 * it, snapshots carry it (version 5), and what an entry or a snapshot needs a node to read.
 *
 * An entry or snapshot of a format this code does not know must be recognisable before it is
 * applied (src/raft/rn_fsm.c stops the node there), and applying one anyway changes nothing.
 */
#include "fsm_fixture.h"

static struct fsm_reply apply_format(struct fsm *f, uint64_t format)
{
    struct fsm_cmd c = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = format}};
    return apply_cmd(f, &c);
}

static unsigned format_of_cmd(const struct fsm_cmd *c)
{
    struct buf b;
    buf_init(&b);
    if (fsm_cmd_encode(c, &b))
        abort();
    unsigned v = fsm_entry_format((const uint8_t *)b.p, b.len);
    buf_free(&b);
    return v;
}

TEST(a_new_state_is_at_format_1_and_cluster_format_raises_it_once)
{
    struct fsm_fx fx;
    CHECK(fsm_fx_setup(&fx) == 0);
    CHECK_EQ_U64(fsm_format(fx.f), FSM_FORMAT_1);
    struct fsm_reply r = apply_format(fx.f, FSM_FORMAT_2);
    CHECK_EQ_U64(r.kind, FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_format(fx.f), FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_revision(fx.f), 1);
    r = apply_format(fx.f, FSM_FORMAT_2); /* a new leader repeating it: no change */
    CHECK_EQ_U64(r.kind, FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(fx.f), 1);
    fsm_fx_teardown(&fx);
}

TEST(the_format_never_goes_back_and_an_unknown_one_changes_nothing)
{
    struct fsm_fx fx;
    CHECK(fsm_fx_setup(&fx) == 0);
    struct fsm_reply r = apply_format(fx.f, FSM_FORMAT_1); /* 1 is no CLUSTER_FORMAT value */
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    apply_format(fx.f, FSM_FORMAT_2);
    snapshot_into(fx.f, &fx.before);
    r = apply_format(fx.f, FSM_FORMAT_1);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR the cluster's log format is 2 and never goes back");
    r = apply_format(fx.f, FSM_FORMAT_MAX + 1);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    r = apply_format(fx.f, UINT64_MAX);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    CHECK(snapshot_equals(fx.f, &fx.before));
    CHECK_EQ_U64(fsm_format(fx.f), FSM_FORMAT_2);
    fsm_fx_teardown(&fx);
}

TEST(snapshots_carry_the_format_as_version_5_and_older_ones_stay_as_they_were)
{
    struct fsm_fx fx;
    uint64_t sids[6];
    CHECK(fsm_fx_setup(&fx) == 0);
    build_rich(fx.f, sids);
    snapshot_into(fx.f, &fx.before);
    CHECK(fx.before.p[4] == 2); /* format 1, nothing newer used: still version 2 */
    apply_format(fx.f, FSM_FORMAT_2);
    snapshot_into(fx.f, &fx.scratch[0]);
    CHECK(fx.scratch[0].p[4] == 5);
    CHECK_EQ_U64(fsm_snapshot_format((const uint8_t *)fx.scratch[0].p, fx.scratch[0].len),
                 FSM_FORMAT_2);
    char err[128];
    CHECK(fsm_restore(fx.g, (const uint8_t *)fx.scratch[0].p, fx.scratch[0].len, err,
                      sizeof(err)) == 0);
    CHECK_EQ_U64(fsm_format(fx.g), FSM_FORMAT_2);
    CHECK(snapshot_equals(fx.g, &fx.scratch[0]));
    CHECK(invariants_hold(fx.g));
    /* an older snapshot puts the format back to 1: the restored state is that older one */
    CHECK(fsm_restore(fx.g, (const uint8_t *)fx.before.p, fx.before.len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(fsm_format(fx.g), FSM_FORMAT_1);
    fsm_fx_teardown(&fx);
}

TEST(a_snapshot_of_an_unknown_version_or_format_is_refused_and_changes_nothing)
{
    struct fsm_fx fx;
    char err[128];
    CHECK(fsm_fx_setup(&fx) == 0);
    open_session(fx.g, 1000, 0);
    snapshot_into(fx.g, &fx.before);
    apply_format(fx.f, FSM_FORMAT_2);
    snapshot_into(fx.f, &fx.scratch[0]);
    uint8_t *p = (uint8_t *)fx.scratch[0].p;
    size_t n = fx.scratch[0].len;
    p[5 + 1] = FSM_FORMAT_MAX + 1; /* after "FLSM", version and revision (1): the format */
    CHECK(fsm_restore(fx.g, p, n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "unsupported log format") && strstr(err, "upgrade this node"));
    p[5 + 1] = FSM_FORMAT_1; /* a version 5 snapshot never holds format 1 */
    CHECK(fsm_restore(fx.g, p, n, err, sizeof(err)) == -1);
    p[5 + 1] = FSM_FORMAT_2;
    p[4] = 9; /* a version from a newer release (8: the tagged sections) */
    CHECK_EQ_U64(fsm_snapshot_format(p, n), FSM_FORMAT_MAX + 1);
    CHECK(fsm_restore(fx.g, p, n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "unsupported version") && strstr(err, "upgrade this node"));
    CHECK(snapshot_equals(fx.g, &fx.before));
    fsm_fx_teardown(&fx);
}

TEST(entry_format_is_1_for_the_previous_release_and_2_for_this_one)
{
    struct fsm_cmd lock = {.op = FSM_OP_LOCK, .lock = {.name = S("a"), .sid = 1}};
    CHECK_EQ_U64(format_of_cmd(&lock), FSM_FORMAT_1);
    lock.checked = true; /* a version-2 header */
    CHECK_EQ_U64(format_of_cmd(&lock), FSM_FORMAT_2);
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("s"), .sid = 1, .limit = 1}};
    CHECK_EQ_U64(format_of_cmd(&sem), FSM_FORMAT_2);
    struct fsm_cmd revoke = {.op = FSM_OP_SESSION_REVOKE, .session_revoke = {.sid = 1}};
    CHECK_EQ_U64(format_of_cmd(&revoke), FSM_FORMAT_2);
    struct fsm_cmd fmt = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 2}};
    CHECK_EQ_U64(format_of_cmd(&fmt), FSM_FORMAT_2);
    fmt.cluster_format.format = FSM_FORMAT_MAX + 1;
    CHECK_EQ_U64(format_of_cmd(&fmt), FSM_FORMAT_MAX + 1);
    CHECK_EQ_U64(fsm_entry_format((const uint8_t *)"", 0), FSM_FORMAT_1);
}

TEST(an_entry_of_an_unknown_version_or_op_is_recognised_and_applies_as_nothing)
{
    struct fsm_fx fx;
    CHECK(fsm_fx_setup(&fx) == 0);
    uint64_t sid = open_session(fx.f, 1000, 0);
    snapshot_into(fx.f, &fx.before);
    /* header version 3: a LOCK of "a" by `sid` as a newer release might write it */
    const uint8_t v3[] = {3, FSM_OP_LOCK, 0, 0, 0, 1, 'a', (uint8_t)sid, 0};
    const uint8_t op19[] = {1, 19, 0, 0, 0};
    const uint8_t op99[] = {1, 99, 0, 0, 0};
    const uint8_t v2_user[] = {2, FSM_OP_LOCK, 0, 0, 0, 0, 0, 1, 'a', (uint8_t)sid, 0};
    CHECK_EQ_U64(fsm_entry_format(v3, sizeof(v3)), FSM_FORMAT_MAX + 1);
    CHECK_EQ_U64(fsm_entry_format(op19, sizeof(op19)), FSM_FORMAT_MAX + 1);
    CHECK_EQ_U64(fsm_entry_format(op99, sizeof(op99)), FSM_FORMAT_MAX + 1);
    CHECK_EQ_U64(fsm_entry_format(v2_user, sizeof(v2_user)), FSM_FORMAT_2);
    struct fsm_reply r;
    fsm_apply(fx.f, v3, sizeof(v3), &r, &EV);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR bad entry: version unsupported");
    fsm_apply(fx.f, op99, sizeof(op99), &r, &EV);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    CHECK(snapshot_equals(fx.f, &fx.before));
    fsm_fx_teardown(&fx);
}

int main(void)
{
    RUN(a_new_state_is_at_format_1_and_cluster_format_raises_it_once);
    RUN(the_format_never_goes_back_and_an_unknown_one_changes_nothing);
    RUN(snapshots_carry_the_format_as_version_5_and_older_ones_stay_as_they_were);
    RUN(a_snapshot_of_an_unknown_version_or_format_is_refused_and_changes_nothing);
    RUN(entry_format_is_1_for_the_previous_release_and_2_for_this_one);
    RUN(an_entry_of_an_unknown_version_or_op_is_recognised_and_applies_as_nothing);
    TEST_MAIN_END();
}
