/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_codec — the entry codec and apply: round trips, strict decoding, bad entries, the
 * revision counter.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static int same_str(struct fsm_str a, struct fsm_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static int same_cond(const struct fsm_kv_cond *a, const struct fsm_kv_cond *b)
{
    return a->has_fence == b->has_fence && same_str(a->fence_name, b->fence_name) &&
           a->fence_token == b->fence_token && a->has_ifrev == b->has_ifrev && a->ifrev == b->ifrev;
}

static int same_lock_ref(const struct fsm_cmd_lock_ref *a, const struct fsm_cmd_lock_ref *b)
{
    return same_str(a->name, b->name) && a->sid == b->sid;
}

/* Every payload field of a's op equal in b (strings by content). */
static int same_payload(const struct fsm_cmd *a, const struct fsm_cmd *b)
{
    switch (a->op) {
    case FSM_OP_SESSION_OPEN:
        return a->session_open.ttl_ms == b->session_open.ttl_ms &&
               a->session_open.lockdelay_ms == b->session_open.lockdelay_ms &&
               same_str(a->session_open.name, b->session_open.name);
    case FSM_OP_SESSION_CLOSE:
        return a->session_close.sid == b->session_close.sid;
    case FSM_OP_SESSION_EXPIRE:
        return a->session_expire.sid == b->session_expire.sid;
    case FSM_OP_SESSION_CHECKPOINT:
        return a->session_checkpoint.sid == b->session_checkpoint.sid &&
               a->session_checkpoint.remaining_ms == b->session_checkpoint.remaining_ms;
    case FSM_OP_LOCK:
        return same_str(a->lock.name, b->lock.name) && a->lock.sid == b->lock.sid &&
               a->lock.wait_ms == b->lock.wait_ms;
    case FSM_OP_UNLOCK:
        return same_lock_ref(&a->unlock, &b->unlock);
    case FSM_OP_CANCEL_WAIT:
        return same_lock_ref(&a->cancel_wait, &b->cancel_wait);
    case FSM_OP_LOCKDELAY_END:
        return same_str(a->lockdelay_end.name, b->lockdelay_end.name);
    case FSM_OP_PUT:
        return same_str(a->put.key, b->put.key) && same_str(a->put.value, b->put.value) &&
               a->put.lease_sid == b->put.lease_sid && same_cond(&a->put.cond, &b->put.cond);
    case FSM_OP_DEL:
        return same_str(a->del.key, b->del.key) && same_cond(&a->del.cond, &b->del.cond);
    case FSM_OP_MEMBER_SET:
        return a->member_set.id == b->member_set.id &&
               same_str(a->member_set.client_addr, b->member_set.client_addr) &&
               same_str(a->member_set.raft_addr, b->member_set.raft_addr);
    case FSM_OP_MEMBER_DEL:
        return a->member_del.id == b->member_del.id;
    case FSM_OP_SEM_ACQUIRE:
        return same_str(a->sem_acquire.name, b->sem_acquire.name) &&
               a->sem_acquire.sid == b->sem_acquire.sid &&
               a->sem_acquire.limit == b->sem_acquire.limit &&
               a->sem_acquire.wait_ms == b->sem_acquire.wait_ms;
    case FSM_OP_SEM_RELEASE:
        return same_lock_ref(&a->sem_release, &b->sem_release);
    case FSM_OP_ELECT_CAMPAIGN:
        return same_str(a->elect_campaign.name, b->elect_campaign.name) &&
               a->elect_campaign.sid == b->elect_campaign.sid &&
               same_str(a->elect_campaign.value, b->elect_campaign.value) &&
               a->elect_campaign.wait_ms == b->elect_campaign.wait_ms;
    case FSM_OP_ELECT_PROCLAIM:
        return same_str(a->elect_proclaim.name, b->elect_proclaim.name) &&
               a->elect_proclaim.sid == b->elect_proclaim.sid &&
               a->elect_proclaim.token == b->elect_proclaim.token &&
               same_str(a->elect_proclaim.value, b->elect_proclaim.value);
    case FSM_OP_ELECT_RESIGN:
        return same_lock_ref(&a->elect_resign, &b->elect_resign);
    default:
        return 1;
    }
}

TEST_F(fsm_fx, encode_decode_round_trips_every_op)
{
    struct fsm_cmd cs[] = {
        {.op = FSM_OP_NOOP, .now_ms = 1},
        {.op = FSM_OP_SESSION_OPEN,
         .session_open = {.ttl_ms = 10, .lockdelay_ms = 3, .name = S("n")}},
        {.op = FSM_OP_SESSION_CLOSE,
         .req_sid = 300,
         .req_seq = 1ull << 63,
         .session_close = {.sid = 300}},
        {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = 4}},
        {.op = FSM_OP_LOCK,
         .now_ms = UINT64_MAX,
         .lock = {.name = S("lk"), .sid = 5, .wait_ms = 100}},
        {.op = FSM_OP_UNLOCK, .unlock = {.name = S("lk"), .sid = 5}},
        {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = S("lk"), .sid = 5}},
        {.op = FSM_OP_LOCKDELAY_END, .lockdelay_end = {.name = S("lk")}},
        {.op = FSM_OP_PUT,
         .put = {.key = S("k"),
                 .value = S(""),
                 .lease_sid = 9,
                 .cond = {.has_fence = true,
                          .fence_name = S("lk"),
                          .fence_token = 7,
                          .has_ifrev = true,
                          .ifrev = 0}}},
        {.op = FSM_OP_DEL, .del = {.key = S("k"), .cond = {.has_ifrev = true, .ifrev = 12}}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 3,
                        .client_addr = S("10.0.0.3:7000"),
                        .raft_addr = S("10.0.0.3:7001")}},
        {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 1ull << 40}},
        {.op = FSM_OP_SEM_ACQUIRE,
         .req_sid = 5,
         .req_seq = 2,
         .sem_acquire = {.name = S("sem"), .sid = 5, .limit = 4, .wait_ms = 1000}},
        {.op = FSM_OP_SEM_ACQUIRE, .sem_acquire = {.name = S("s"), .sid = 1, .limit = UINT64_MAX}},
        {.op = FSM_OP_SEM_RELEASE, .sem_release = {.name = S("sem"), .sid = 5}},
        {.op = FSM_OP_ELECT_CAMPAIGN,
         .elect_campaign = {.name = S("el"), .sid = 6, .value = S("10.0.0.1:80"), .wait_ms = 9}},
        {.op = FSM_OP_ELECT_CAMPAIGN, .elect_campaign = {.name = S("el"), .sid = 7}},
        {.op = FSM_OP_ELECT_PROCLAIM,
         .elect_proclaim = {.name = S("el"), .sid = 6, .token = UINT64_MAX, .value = S("v")}},
        {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.name = S("el"), .sid = 6}},
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        struct buf *b = &fx->scratch[0], *b2 = &fx->scratch[1];
        struct fsm_cmd d;
        char err[64];
        buf_init(b);
        buf_init(b2);
        CHECK(fsm_cmd_encode(&cs[i], b) == 0);
        CHECK(fsm_cmd_decode((const uint8_t *)b->p, b->len, &d, err, sizeof(err)) == 0);
        CHECK(d.op == cs[i].op && d.now_ms == cs[i].now_ms);
        CHECK(d.req_sid == cs[i].req_sid && d.req_seq == cs[i].req_seq);
        CHECK(same_payload(&d, &cs[i]));
        CHECK(fsm_cmd_encode(&d, b2) == 0);
        CHECK(b->len == b2->len && memcmp(b->p, b2->p, b->len) == 0);
        buf_free(b);
        buf_free(b2);
    }
}

TEST_F(fsm_fx, decode_rejects_truncated_unknown_and_trailing_entries)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("key"),
                .value = S("value"),
                .lease_sid = 300,
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = 1000}}};
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    CHECK(fsm_cmd_encode(&c, b) == 0);
    CHECK(decodes(b->p, b->len));
    for (size_t n = 0; n < b->len; n++)
        CHECK(!decodes(b->p, n));
    buf_put_u8(b, 0);
    CHECK(!decodes(b->p, b->len)); /* trailing byte */
    b->len--;
    b->p[0] = 2;
    CHECK(!decodes(b->p, b->len)); /* unknown version */
    b->p[0] = FSM_CMD_VERSION;
    b->p[1] = FSM_OP__COUNT;
    CHECK(!decodes(b->p, b->len));                       /* unknown op */
    const uint8_t noncanon[] = {1, 0, 0x80, 0x00, 0, 0}; /* now_ms 0 in two bytes */
    CHECK(!decodes(noncanon, sizeof(noncanon)));
    const uint8_t badflags[] = {1, FSM_OP_DEL, 0, 0, 0, 1, 'k', 4};
    CHECK(!decodes(badflags, sizeof(badflags)));
    const uint8_t emptyname[] = {1, FSM_OP_LOCKDELAY_END, 0, 0, 0, 0};
    CHECK(!decodes(emptyname, sizeof(emptyname)));
    buf_free(b);
}

TEST_F(fsm_fx, decode_enforces_name_and_value_limits)
{
    char *big = fx->mem = malloc(FSM_MAX_NAME + 1);
    CHECK(big);
    memset(big, 'x', FSM_MAX_NAME + 1);
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.sid = 1, .name = {big, FSM_MAX_NAME}}};
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    CHECK(fsm_cmd_encode(&c, b) == 0 && decodes(b->p, b->len));
    buf_reset(b);
    c.lock.name.len = FSM_MAX_NAME + 1;
    CHECK(fsm_cmd_encode(&c, b) == 0 && !decodes(b->p, b->len));
    buf_free(b);
}

TEST_F(fsm_fx, decode_enforces_the_election_value_limit)
{
    char *big = fx->mem = malloc(FSM_MAX_ELECT_VALUE + 1);
    CHECK(big);
    memset(big, 'v', FSM_MAX_ELECT_VALUE + 1);
    struct fsm_cmd c = {
        .op = FSM_OP_ELECT_CAMPAIGN,
        .elect_campaign = {.name = S("e"), .sid = 1, .value = {big, FSM_MAX_ELECT_VALUE}}};
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    CHECK(fsm_cmd_encode(&c, b) == 0 && decodes(b->p, b->len));
    buf_reset(b);
    c.elect_campaign.value.len = FSM_MAX_ELECT_VALUE + 1;
    CHECK(fsm_cmd_encode(&c, b) == 0 && !decodes(b->p, b->len));
    buf_free(b);
}

TEST_F(fsm_fx, apply_of_garbage_replies_bad_entry_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    const char *garbage[] = {
        "", "\x01", "\x01\x04", "\x02\x00\x00\x00\x00", "hello world", "\x01\x05\x00\x00\x00\x01L"};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        struct fsm_reply r;
        fsm_events_reset(&EV);
        fsm_apply(f, (const uint8_t *)garbage[i], strlen(garbage[i]), &r, &EV);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "ERR bad entry: ");
        CHECK(EV.n == 0);
    }
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
}

TEST_F(fsm_fx, noop_and_no_op_outcomes_do_not_bump_the_revision)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    uint64_t rev = fsm_revision(f);
    struct fsm_cmd n = {.op = FSM_OP_NOOP};
    CHECK(apply_cmd(f, &n).kind == FSM_REPLY_OK);
    CHECK(apply_cancel_wait(f, "L", a).kind == FSM_REPLY_NIL);
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK(apply_del(f, "k").value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
}

TEST_F(fsm_fx, revision_counter_never_wraps)
{
    /* a snapshot at revision 2^64-2 with no sessions, locks, keys or members */
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    buf_append(b, "FLSM\x02", 5);
    buf_put_varint(b, UINT64_MAX - 1);
    buf_append(b, "\0\0\0\0", 4);
    struct fsm *f = fx->f;
    char err[128];
    CHECK(fsm_restore(f, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0);
    buf_free(b);
    CHECK_EQ_U64(fsm_revision(f), UINT64_MAX - 1);
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 5}};
    struct fsm_reply r = apply_cmd(f, &c);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_EQ_U64(fsm_revision(f), UINT64_MAX - 1);
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, encode_decode_round_trips_every_op);
    RUN_F(fsm_fx, decode_rejects_truncated_unknown_and_trailing_entries);
    RUN_F(fsm_fx, decode_enforces_name_and_value_limits);
    RUN_F(fsm_fx, decode_enforces_the_election_value_limit);
    RUN_F(fsm_fx, apply_of_garbage_replies_bad_entry_and_changes_nothing);
    RUN_F(fsm_fx, noop_and_no_op_outcomes_do_not_bump_the_revision);
    RUN_F(fsm_fx, revision_counter_never_wraps);
    TEST_MAIN_END();
}
