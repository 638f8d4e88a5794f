/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_kv — the key-value store: PUT/DEL revisions and versions, leases, FENCE and IFREV, KEYS
 * scans.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

TEST_F(fsm_fx, put_sets_revisions_and_versions)
{
    struct fsm *f = fx->f;
    uint64_t r1 = token_of(apply_put(f, "k", "a", 0));
    CHECK_EQ_U64(r1, fsm_revision(f));
    uint64_t r2 = token_of(apply_put(f, "k", "bb", 0));
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m));
    CHECK(m.create_rev == r1 && m.mod_rev == r2 && m.version == 2 && m.value_len == 2);
    CHECK(!memcmp(m.value, "bb", 2) && m.lease_sid == 0);
    CHECK(token_of(apply_put(f, "e", "", 0)) && fsm_kv_get(f, "e", 1, &m) && m.value_len == 0);
}

TEST_F(fsm_fx, put_without_lease_detaches_the_key_from_its_session)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_put(f, "k", "v", a)));
    CHECK(token_of(apply_put(f, "k", "v", 0)));
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m) && m.lease_sid == 0);
}

TEST_F(fsm_fx, del_of_absent_key_returns_zero_and_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK(token_of(apply_put(f, "k", "v", 0)));
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_del(f, "nokey");
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    r = apply_del(f, "k");
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
}

static struct fsm_reply fenced_put(struct fsm *f, const char *key, const char *lock, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S(key),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(lock), .fence_token = token}}};
    return apply_cmd(f, &c);
}

TEST_F(fsm_fx, fenced_write_with_a_stale_token_fails_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t old = token_of(apply_lock(f, "L", a, 0));
    CHECK(apply_lock(f, "L", b, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK); /* b now holds it */
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = fenced_put(f, "k", "L", old);
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(r.err, "STALE");
    CHECK(EV.n == 1 && EV.ev[0].type == FSM_EV_FENCE_REJECTED && EV.ev[0].token == old);
    CHECK(EV.ev[0].name.len == 1 && EV.ev[0].name.p[0] == 'L');
    CHECK_STR_PREFIX(fenced_put(f, "k", "nolock", 1).err, "STALE");
    struct fsm_cmd d = {
        .op = FSM_OP_DEL,
        .del = {.key = S("k"),
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = old}}};
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "STALE");
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    CHECK(fsm_fence_check(f, "L", 1, old) == -1);
    buf_free(before);
}

TEST_F(fsm_fx, fenced_write_with_the_current_token_succeeds)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    CHECK(fsm_fence_check(f, "L", 1, t) == 0);
    struct fsm_reply r = fenced_put(f, "k", "L", t);
    CHECK(r.kind == FSM_REPLY_INT && r.value == fsm_revision(f));
    struct fsm_cmd d = {
        .op = FSM_OP_DEL,
        .del = {.key = S("k"),
                .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = t}}};
    r = apply_cmd(f, &d);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
}

static struct fsm_reply ifrev_put(struct fsm *f, const char *key, uint64_t ifrev)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S(key), .value = S("v"), .cond = {.has_ifrev = true, .ifrev = ifrev}}};
    return apply_cmd(f, &c);
}

TEST_F(fsm_fx, ifrev_mismatch_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t r1 = token_of(apply_put(f, "k", "v", 0));
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    CHECK_STR_PREFIX(ifrev_put(f, "k", r1 + 5).err, "IFREV");
    CHECK_STR_PREFIX(ifrev_put(f, "absent", 3).err, "IFREV");
    struct fsm_cmd d = {.op = FSM_OP_DEL,
                        .del = {.key = S("k"), .cond = {.has_ifrev = true, .ifrev = r1 + 1}}};
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "IFREV");
    d.del.key = S("absent");
    CHECK_STR_PREFIX(apply_cmd(f, &d).err, "IFREV");
    CHECK(snapshot_equals(f, before));
    CHECK(token_of(ifrev_put(f, "k", r1)) == fsm_revision(f));
    d.del.key = S("k");
    d.del.cond.ifrev = fsm_revision(f);
    CHECK(token_of(apply_cmd(f, &d)) == 1);
    buf_free(before);
}

TEST_F(fsm_fx, ifrev_zero_is_create_only)
{
    struct fsm *f = fx->f;
    CHECK(token_of(ifrev_put(f, "k", 0)));
    uint64_t rev = fsm_revision(f);
    CHECK_STR_PREFIX(ifrev_put(f, "k", 0).err, "IFREV");
    CHECK_EQ_U64(fsm_revision(f), rev);
    struct fsm_cmd d = {.op = FSM_OP_DEL,
                        .del = {.key = S("absent"), .cond = {.has_ifrev = true, .ifrev = 0}}};
    struct fsm_reply r = apply_cmd(f, &d);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
}

struct scan_acc {
    char keys[16][8];
    int n;
};

static int scan_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    struct scan_acc *a = arg;
    (void)m;
    if (a->n < 16 && keylen < 8) {
        memcpy(a->keys[a->n], key, keylen);
        a->keys[a->n][keylen] = '\0';
    }
    a->n++;
    return 0;
}

TEST_F(fsm_fx, keys_scan_honours_prefix_limit_and_byte_order)
{
    struct fsm *f = fx->f;
    const char *ks[] = {"b2", "a", "b10", "b", "c", "b1", "ba", "\x7f"};
    for (int i = 0; i < 8; i++)
        CHECK(token_of(apply_put(f, ks[i], "v", 0)));
    struct scan_acc acc = {0};
    CHECK_EQ_U64(fsm_kv_scan(f, "b", 1, 0, scan_cb, &acc), 5);
    const char *want[] = {"b", "b1", "b10", "b2", "ba"};
    for (int i = 0; i < 5; i++)
        CHECK(strcmp(acc.keys[i], want[i]) == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "b", 1, 2, scan_cb, &acc), 2);
    CHECK(strcmp(acc.keys[1], "b1") == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "", 0, 0, scan_cb, &acc), 8);
    CHECK(strcmp(acc.keys[0], "a") == 0 && strcmp(acc.keys[7], "\x7f") == 0);
    memset(&acc, 0, sizeof(acc));
    CHECK_EQ_U64(fsm_kv_scan(f, "zz", 2, 0, scan_cb, &acc), 0);
    CHECK_EQ_U64(fsm_kv_scan(f, "b10x", 4, 0, scan_cb, &acc), 0);
}

static int stop_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    (void)key, (void)keylen, (void)m;
    return ++*(int *)arg >= 2;
}

TEST_F(fsm_fx, keys_scan_stops_when_the_callback_asks)
{
    struct fsm *f = fx->f;
    for (char k[2] = "a"; k[0] <= 'j'; k[0]++)
        CHECK(token_of(apply_put(f, k, "v", 0)));
    int calls = 0;
    CHECK_EQ_U64(fsm_kv_scan(f, "", 0, 0, stop_cb, &calls), 2);
}

int main(void)
{
    RUN_F(fsm_fx, put_sets_revisions_and_versions);
    RUN_F(fsm_fx, put_without_lease_detaches_the_key_from_its_session);
    RUN_F(fsm_fx, del_of_absent_key_returns_zero_and_changes_nothing);
    RUN_F(fsm_fx, fenced_write_with_a_stale_token_fails_and_changes_nothing);
    RUN_F(fsm_fx, fenced_write_with_the_current_token_succeeds);
    RUN_F(fsm_fx, ifrev_mismatch_changes_nothing);
    RUN_F(fsm_fx, ifrev_zero_is_create_only);
    RUN_F(fsm_fx, keys_scan_honours_prefix_limit_and_byte_order);
    RUN_F(fsm_fx, keys_scan_stops_when_the_callback_asks);
    TEST_MAIN_END();
}
