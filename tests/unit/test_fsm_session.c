/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_session — sessions: ids, TTL, close and expiry (what a session owns goes with it), lease
 * checkpoints.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

TEST_F(fsm_fx, session_ids_are_unique_and_increasing)
{
    struct fsm *f = fx->f;
    uint64_t prev = 0;
    for (int i = 0; i < 50; i++) {
        uint64_t sid = open_session(f, 1000, 0);
        CHECK(sid > prev);
        CHECK_EQ_U64(sid, fsm_revision(f));
        prev = sid;
        if (i % 3 == 0)
            CHECK(apply_close(f, sid).kind == FSM_REPLY_OK);
    }
}

TEST_F(fsm_fx, session_open_requires_a_ttl)
{
    struct fsm *f = fx->f;
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 0}};
    struct fsm_reply r = apply_cmd(f, &c);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR");
    CHECK_EQ_U64(fsm_revision(f), 0);
    struct fsm_cmd d = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = 1, .lockdelay_ms = 7, .name = S("worker")}};
    uint64_t sid = token_of(apply_cmd(f, &d));
    struct fsm_session_view v;
    CHECK(fsm_session_info(f, sid, &v));
    CHECK(v.ttl_ms == 1 && v.lockdelay_ms == 7 && v.name.len == 6 &&
          !memcmp(v.name.p, "worker", 6));
    CHECK(has_event(FSM_EV_SESSION_OPENED, sid) && EV.ev[0].ms == 1);
}

TEST_F(fsm_fx, close_releases_everything_the_session_owns)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L1", a, 0)) && token_of(apply_lock(f, "L2", a, 0)) &&
          token_of(apply_lock(f, "M", b, 0)));
    CHECK(apply_lock(f, "M", a, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(apply_put(f, "k", "v", a)));
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(st.sessions == 1 && st.locks_held == 1 && st.waiters == 0 && st.keys == 0);
    struct fsm_session_view v;
    CHECK(!fsm_session_info(f, a, &v));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, close_hands_on_locks_in_grant_order)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    const char *names[] = {"zz", "aa", "mm"};
    for (int i = 0; i < 3; i++) {
        CHECK(token_of(apply_lock(f, names[i], a, 0)));
        CHECK(apply_lock(f, names[i], b, 5000).kind == FSM_REPLY_QUEUED);
    }
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    int k = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < EV.n; i++) {
        if (EV.ev[i].type != FSM_EV_GRANTED)
            continue;
        CHECK(EV.ev[i].name.len == 2 && !memcmp(EV.ev[i].name.p, names[k], 2));
        CHECK(EV.ev[i].token > prev);
        prev = EV.ev[i].token;
        k++;
    }
    CHECK_EQ_U64(k, 3);
}

TEST_F(fsm_fx, keys_leased_to_a_session_vanish_when_it_expires)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_put(f, "k1", "v", a)) && token_of(apply_put(f, "k2", "v", a)) &&
          token_of(apply_put(f, "k3", "v", 0)));
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(!fsm_kv_get(f, "k1", 2, &m) && !fsm_kv_get(f, "k2", 2, &m) && fsm_kv_get(f, "k3", 2, &m));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, keys_leased_to_a_session_vanish_when_it_closes)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_put(f, "k1", "v", a)) && token_of(apply_put(f, "k2", "v", b)));
    CHECK(token_of(apply_put(f, "k2", "v2", a))); /* re-leased: moves from b to a */
    CHECK(apply_close(f, b).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k2", 2, &m) && m.lease_sid == a);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(!fsm_kv_get(f, "k1", 2, &m) && !fsm_kv_get(f, "k2", 2, &m));
    CHECK(invariants_hold(f));
}

static struct fsm_reply apply_checkpoint(struct fsm *f, uint64_t sid, uint64_t remaining)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_CHECKPOINT,
                        .session_checkpoint = {.sid = sid, .remaining_ms = remaining}};
    return apply_cmd(f, &c);
}

static uint64_t checkpoint_of(const struct fsm *f, uint64_t sid)
{
    struct fsm_session_view v;
    return fsm_session_info(f, sid, &v) ? v.checkpoint_ms : UINT64_MAX;
}

TEST_F(fsm_fx, checkpoint_records_the_remaining_lease_without_a_revision)
{
    struct fsm *f = fx->f;
    uint64_t sid = open_session(f, 10000, 0);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_checkpoint(f, sid, 4000).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 4000);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(apply_checkpoint(f, sid, 0).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, checkpoint_at_or_above_the_ttl_means_a_full_ttl)
{
    struct fsm *f = fx->f;
    uint64_t sid = open_session(f, 1000, 0);
    CHECK(apply_checkpoint(f, sid, 300).kind == FSM_REPLY_OK);
    CHECK(apply_checkpoint(f, sid, 1000).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(checkpoint_of(f, sid), 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, checkpoint_of_a_dead_session_is_nosession_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t sid = open_session(f, 1000, 0);
    apply_close(f, sid);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    struct fsm_reply r = apply_checkpoint(f, sid, 10);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "NOSESSION");
    CHECK(snapshot_equals(f, before));
    buf_free(before);
}

TEST_F(fsm_fx, checkpoint_survives_snapshot_and_restore)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t sid = open_session(f, 5000, 0);
    apply_checkpoint(f, sid, 1234);
    struct buf *b = &fx->scratch[0];
    char err[160];
    snapshot_into(f, b);
    CHECK(fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0);
    CHECK_EQ_U64(checkpoint_of(g, sid), 1234);
    CHECK(snapshot_equals(g, b));
    buf_free(b);
}

int main(void)
{
    RUN_F(fsm_fx, session_ids_are_unique_and_increasing);
    RUN_F(fsm_fx, session_open_requires_a_ttl);
    RUN_F(fsm_fx, close_releases_everything_the_session_owns);
    RUN_F(fsm_fx, close_hands_on_locks_in_grant_order);
    RUN_F(fsm_fx, keys_leased_to_a_session_vanish_when_it_expires);
    RUN_F(fsm_fx, keys_leased_to_a_session_vanish_when_it_closes);
    RUN_F(fsm_fx, checkpoint_records_the_remaining_lease_without_a_revision);
    RUN_F(fsm_fx, checkpoint_at_or_above_the_ttl_means_a_full_ttl);
    RUN_F(fsm_fx, checkpoint_of_a_dead_session_is_nosession_and_changes_nothing);
    RUN_F(fsm_fx, checkpoint_survives_snapshot_and_restore);
    TEST_MAIN_END();
}
