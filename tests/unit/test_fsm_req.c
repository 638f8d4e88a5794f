/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_req — exactly-once requests (REQ sid seq): cached replies, superseded seqs, the LOCK
 * retry truth.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply apply_with_req(struct fsm *f, struct fsm_cmd c, uint64_t sid, uint64_t seq)
{
    c.req_sid = sid;
    c.req_seq = seq;
    return apply_cmd(f, &c);
}

TEST_F(fsm_fx, repeated_req_returns_the_cached_reply_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .put = {.key = S("k"), .value = S("v")}};
    struct fsm_reply r1 = apply_with_req(f, p, a, 5);
    CHECK(r1.kind == FSM_REPLY_INT);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    struct fsm_reply r2 = apply_with_req(f, p, a, 5);
    CHECK(r2.kind == FSM_REPLY_INT && r2.value == r1.value);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m) && m.version == 1);
    CHECK(snapshot_equals(f, before) && EV.n == 0);
    buf_free(before);
}

TEST_F(fsm_fx, req_caches_error_replies_too)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd u = {.op = FSM_OP_UNLOCK, .unlock = {.name = S("L"), .sid = a}};
    struct fsm_reply r1 = apply_with_req(f, u, a, 1);
    CHECK(r1.kind == FSM_REPLY_ERR);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    struct fsm_reply r2 = apply_with_req(f, u, a, 1); /* replayed, not applied: a keeps the lock */
    CHECK(r2.kind == FSM_REPLY_ERR && strcmp(r1.err, r2.err) == 0);
    CHECK_EQ_U64(holder_of(f, "L"), a);
}

TEST_F(fsm_fx, superseded_req_seq_is_rejected)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .put = {.key = S("k"), .value = S("v")}};
    CHECK(token_of(apply_with_req(f, p, a, 10)));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_with_req(f, p, a, 9);
    CHECK(r.kind == FSM_REPLY_ERR && strcmp(r.err, "ERR request seq already superseded") == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(token_of(apply_with_req(f, p, a, 12)) == rev + 1); /* seqs need not be contiguous */
}

TEST_F(fsm_fx, lock_retry_with_cached_queued_answers_the_current_truth)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    struct fsm_cmd l = {.op = FSM_OP_LOCK, .lock = {.name = S("L"), .sid = b, .wait_ms = 5000}};
    CHECK(apply_with_req(f, l, b, 1).kind == FSM_REPLY_QUEUED);
    CHECK(apply_with_req(f, l, b, 1).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "L", 1, &v));
    struct fsm_reply r = apply_with_req(f, l, b, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == v.token);
    /* and NIL once the wait ended without a grant */
    uint64_t c = open_session(f, 1000, 0);
    l.lock.sid = c;
    CHECK(apply_with_req(f, l, c, 1).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "L", c).kind == FSM_REPLY_NIL);
    CHECK(apply_with_req(f, l, c, 1).kind == FSM_REPLY_NIL);
}

TEST_F(fsm_fx, req_with_only_one_of_sid_and_seq_is_a_bad_entry)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd p = {.op = FSM_OP_PUT, .req_sid = a, .put = {.key = S("k"), .value = S("v")}};
    struct fsm_reply r = apply_cmd(f, &p);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "ERR bad entry");
    p.req_sid = 0;
    p.req_seq = 3;
    CHECK_STR_PREFIX(apply_cmd(f, &p).err, "ERR bad entry");
}

TEST_F(fsm_fx, close_of_the_req_session_itself_records_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd c = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = a}};
    CHECK(apply_with_req(f, c, a, 1).kind == FSM_REPLY_OK);
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK_EQ_U64(st.sessions, 0);
    CHECK_STR_PREFIX(apply_with_req(f, c, a, 1).err, "NOSESSION");
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, repeated_req_returns_the_cached_reply_and_changes_nothing);
    RUN_F(fsm_fx, req_caches_error_replies_too);
    RUN_F(fsm_fx, superseded_req_seq_is_rejected);
    RUN_F(fsm_fx, lock_retry_with_cached_queued_answers_the_current_truth);
    RUN_F(fsm_fx, req_with_only_one_of_sid_and_seq_is_a_bad_entry);
    RUN_F(fsm_fx, close_of_the_req_session_itself_records_nothing);
    TEST_MAIN_END();
}
