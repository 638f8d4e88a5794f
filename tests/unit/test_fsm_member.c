/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_member — the replicated member table: MEMBER_SET/MEMBER_DEL, its limits, its snapshot
 * form.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply apply_member_set(struct fsm *f, uint64_t id, const char *client,
                                         const char *raft)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_SET,
                        .member_set = {.id = id, .client_addr = S(client), .raft_addr = S(raft)}};
    return apply_cmd(f, &c);
}

static struct fsm_reply apply_member_del(struct fsm *f, uint64_t id)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = id}};
    return apply_cmd(f, &c);
}

/* 1 if member `id` exists with exactly these addresses. */
static int member_is(const struct fsm *f, uint64_t id, const char *client, const char *raft)
{
    struct fsm_member_view v;
    if (!fsm_member_get(f, id, &v))
        return 0;
    return v.id == id && v.client_addr.len == strlen(client) &&
           memcmp(v.client_addr.p, client, v.client_addr.len) == 0 &&
           v.raft_addr.len == strlen(raft) && memcmp(v.raft_addr.p, raft, v.raft_addr.len) == 0;
}

struct mids {
    uint64_t id[FSM_MAX_MEMBERS + 1];
    size_t n;
};

static void mids_cb(void *arg, const struct fsm_member_view *v)
{
    struct mids *m = arg;
    if (m->n <= FSM_MAX_MEMBERS)
        m->id[m->n] = v->id;
    m->n++;
}

TEST_F(fsm_fx, member_set_inserts_and_replaces_and_get_returns_the_entry)
{
    struct fsm *f = fx->f;
    CHECK(apply_member_set(f, 3, "c3:1", "r3:2").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 1, "c1:1", "r1:2").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 2, "c2:1", "r2:2").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 3);
    CHECK(EV.n == 0);
    struct mids m = {.n = 0};
    fsm_foreach_member(f, mids_cb, &m);
    CHECK(m.n == 3 && m.id[0] == 1 && m.id[1] == 2 && m.id[2] == 3);
    CHECK(member_is(f, 2, "c2:1", "r2:2"));
    /* replacing one address takes exactly one revision and changes only that entry */
    CHECK(apply_member_set(f, 2, "c2:9", "r2:2").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 4);
    CHECK(member_is(f, 2, "c2:9", "r2:2"));
    CHECK(apply_member_set(f, 2, "c2:9", "r2:8").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), 5);
    CHECK(member_is(f, 2, "c2:9", "r2:8"));
    CHECK(member_is(f, 1, "c1:1", "r1:2") && member_is(f, 3, "c3:1", "r3:2"));
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 4, &v) == 0 && fsm_member_get(f, 0, &v) == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, member_reannounce_of_the_identical_entry_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK(apply_member_set(f, 7, "host:6379", "host:7379").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 9, "other:6379", "other:7379").kind == FSM_REPLY_OK);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    for (int i = 0; i < 3; i++) {
        CHECK(apply_member_set(f, 7, "host:6379", "host:7379").kind == FSM_REPLY_OK);
        CHECK(EV.n == 0);
    }
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, member_del_removes_a_present_member_and_ignores_an_absent_one)
{
    struct fsm *f = fx->f;
    CHECK(apply_member_set(f, 1, "a", "b").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 2, "c", "d").kind == FSM_REPLY_OK);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_member_del(f, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 1, &v) == 0 && member_is(f, 2, "c", "d"));
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    r = apply_member_del(f, 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    r = apply_member_del(f, 99);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 0);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, member_table_full_rejects_a_new_id_and_changes_nothing)
{
    struct fsm *f = fx->f;
    char a[32];
    for (uint64_t i = 1; i <= FSM_MAX_MEMBERS; i++) {
        snprintf(a, sizeof(a), "n%llu:1", (unsigned long long)i);
        CHECK(apply_member_set(f, i * 10, a, a).kind == FSM_REPLY_OK);
    }
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = apply_member_set(f, 5, "new:1", "new:2"); /* would sort first */
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK(strcmp(r.err, "ERR member table full") == 0);
    r = apply_member_set(f, 10 * FSM_MAX_MEMBERS + 1, "new:1", "new:2"); /* would sort last */
    CHECK(r.kind == FSM_REPLY_ERR);
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 5, &v) == 0);
    buf_free(before);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, member_full_table_still_replaces_an_existing_id)
{
    struct fsm *f = fx->f;
    for (uint64_t i = 1; i <= FSM_MAX_MEMBERS; i++)
        CHECK(apply_member_set(f, i, "x", "y").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 17, "moved:1", "moved:2").kind == FSM_REPLY_OK);
    CHECK(member_is(f, 17, "moved:1", "moved:2"));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, decode_rejects_bad_member_entries)
{
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'h', sizeof(big));
    struct fsm_str max = {big, FSM_MAX_ADDR}, over = {big, FSM_MAX_ADDR + 1};
    struct fsm_cmd good = {.op = FSM_OP_MEMBER_SET,
                           .member_set = {.id = 1, .client_addr = max, .raft_addr = max}};
    struct fsm_cmd bad[] = {
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S(""), .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S("c"), .raft_addr = S("")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = over, .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 1, .client_addr = S("c"), .raft_addr = over}},
        {.op = FSM_OP_MEMBER_SET,
         .member_set = {.id = 0, .client_addr = S("c"), .raft_addr = S("r")}},
        {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 0}},
    };
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    CHECK(fsm_cmd_encode(&good, b) == 0 && decodes(b->p, b->len));
    for (size_t n = 0; n < b->len; n++)
        CHECK(!decodes(b->p, n));
    buf_put_u8(b, 0);
    CHECK(!decodes(b->p, b->len)); /* trailing byte */
    struct fsm *f = fx->f;
    CHECK(apply_member_set(f, 4, "c", "r").kind == FSM_REPLY_OK);
    struct buf *before = &fx->before;
    snapshot_into(f, before);
    uint64_t rev = fsm_revision(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        buf_reset(b);
        CHECK(fsm_cmd_encode(&bad[i], b) == 0);
        CHECK(!decodes(b->p, b->len));
        struct fsm_reply r;
        fsm_events_reset(&EV);
        fsm_apply(f, (const uint8_t *)b->p, b->len, &r, &EV);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "ERR bad entry: ");
    }
    const uint8_t noncanon_id[] = {1, FSM_OP_MEMBER_DEL, 0, 0, 0, 0x81, 0x00}; /* id 1, 2 bytes */
    CHECK(!decodes(noncanon_id, sizeof(noncanon_id)));
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, before));
    buf_free(before);
    buf_free(b);
}

TEST_F(fsm_fx, snapshot_restore_snapshot_with_members_is_byte_identical)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t sids[6];
    build_rich(f, sids);
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'z', FSM_MAX_ADDR);
    big[FSM_MAX_ADDR] = '\0';
    CHECK(apply_member_set(f, 5, "10.0.0.5:6379", "10.0.0.5:7379").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 1ull << 50, big, "r").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 2, "c", big).kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 9, "gone", "gone").kind == FSM_REPLY_OK);
    CHECK(apply_member_del(f, 9).value == 1);
    CHECK(invariants_hold(f));
    struct buf *b = &fx->scratch[0];
    char err[128];
    snapshot_into(f, b);
    CHECK(fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0);
    CHECK(invariants_hold(g));
    CHECK(snapshot_equals(g, b));
    CHECK_EQ_U64(fsm_revision(g), fsm_revision(f));
    CHECK(member_is(g, 5, "10.0.0.5:6379", "10.0.0.5:7379"));
    CHECK(member_is(g, 1ull << 50, big, "r") && member_is(g, 2, "c", big));
    struct mids m = {.n = 0};
    fsm_foreach_member(g, mids_cb, &m);
    CHECK(m.n == 3 && m.id[0] == 2 && m.id[1] == 5 && m.id[2] == 1ull << 50);
    /* the copy behaves the same */
    CHECK(apply_member_set(g, 5, "10.0.0.5:6379", "10.0.0.5:7379").kind == FSM_REPLY_OK);
    CHECK(snapshot_equals(g, b));
    buf_free(b);
}

TEST_F(fsm_fx, restore_rejects_bad_member_tables)
{
    /* rev 0, no sessions, locks or keys, then the member table */
#define MHDR 'F', 'L', 'S', 'M', 2, 0, 0, 0, 0
    const uint8_t ok[] = {MHDR, 2, 1, 1, 'c', 1, 'r', 3, 1, 'c', 1, 'r'};
    const uint8_t v1[] = {'F', 'L', 'S', 'M', 1,   0, 0, 0,   0, 2,
                          1,   1,   'c', 1,   'r', 3, 1, 'c', 1, 'r'};
    const uint8_t unsorted[] = {MHDR, 2, 3, 1, 'c', 1, 'r', 1, 1, 'c', 1, 'r'};
    const uint8_t dup[] = {MHDR, 2, 1, 1, 'c', 1, 'r', 1, 1, 'c', 1, 'r'};
    const uint8_t id0[] = {MHDR, 1, 0, 1, 'c', 1, 'r'};
    const uint8_t empty_client[] = {MHDR, 1, 1, 0, 1, 'r'};
    const uint8_t empty_raft[] = {MHDR, 1, 1, 1, 'c', 0};
    CHECK(restores(ok, sizeof(ok)));
    CHECK(!restores(v1, sizeof(v1)));
    CHECK(!restores(unsorted, sizeof(unsorted)));
    CHECK(!restores(dup, sizeof(dup)));
    CHECK(!restores(id0, sizeof(id0)));
    CHECK(!restores(empty_client, sizeof(empty_client)));
    CHECK(!restores(empty_raft, sizeof(empty_raft)));
#undef MHDR
    /* an address over FSM_MAX_ADDR, and more than FSM_MAX_MEMBERS entries */
    struct buf *b = &fx->scratch[0];
    buf_init(b);
    buf_append(b, "FLSM\x02\0\0\0\0", 9);
    buf_put_varint(b, 1);
    buf_put_varint(b, 1);
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'a', sizeof(big));
    buf_put_bytes(b, big, FSM_MAX_ADDR);
    buf_put_bytes(b, "r", 1);
    CHECK(restores((const uint8_t *)b->p, b->len));
    buf_reset(b);
    buf_append(b, "FLSM\x02\0\0\0\0", 9);
    buf_put_varint(b, 1);
    buf_put_varint(b, 1);
    buf_put_bytes(b, big, FSM_MAX_ADDR + 1);
    buf_put_bytes(b, "r", 1);
    CHECK(!restores((const uint8_t *)b->p, b->len));
    for (int full = 0; full < 2; full++) {
        uint64_t n = FSM_MAX_MEMBERS + (uint64_t)!full;
        buf_reset(b);
        buf_append(b, "FLSM\x02\0\0\0\0", 9);
        buf_put_varint(b, n);
        for (uint64_t i = 1; i <= n; i++) {
            buf_put_varint(b, i);
            buf_put_bytes(b, "c", 1);
            buf_put_bytes(b, "r", 1);
        }
        CHECK(restores((const uint8_t *)b->p, b->len) == full);
    }
    buf_free(b);
}

TEST_F(fsm_fx, forget_members_empties_the_table_and_keeps_everything_else)
{
    /* fencelockd --restore: the old cluster's addresses go, sessions, locks, keys and the
     * revision (hence the next token) stay. */
    struct fsm *f = fx->f;
    CHECK(apply_member_set(f, 1, "a:1", "b:1").kind == FSM_REPLY_OK);
    CHECK(apply_member_set(f, 2, "c:1", "d:1").kind == FSM_REPLY_OK);
    uint64_t sid = open_session(f, 60000, 0);
    uint64_t token = token_of(apply_lock(f, "inv", sid, 0));
    CHECK(apply_put(f, "k", "v", 0).kind == FSM_REPLY_INT);
    uint64_t rev = fsm_revision(f);
    struct fsm_stats before, after;
    fsm_stats(f, &before);
    fsm_forget_members(f);
    struct fsm_member_view v;
    CHECK(fsm_member_get(f, 1, &v) == 0 && fsm_member_get(f, 2, &v) == 0);
    CHECK_EQ_U64(fsm_revision(f), rev);
    fsm_stats(f, &after);
    CHECK_EQ_U64(after.sessions, before.sessions);
    CHECK_EQ_U64(after.locks_held, before.locks_held);
    CHECK_EQ_U64(after.keys, before.keys);
    struct fsm_lock_view lv;
    CHECK(fsm_lock_info(f, "inv", 3, &lv) && lv.holder_sid == sid && lv.token == token);
    CHECK(invariants_hold(f));
    /* a snapshot of the result restores to the same state, still without members */
    struct buf *b = &fx->before;
    snapshot_into(f, b);
    struct fsm *g = fsm_new();
    char err[128];
    CHECK(g && fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof err) == 0);
    CHECK(g && fsm_member_get(g, 1, &v) == 0 && fsm_revision(g) == rev);
    CHECK(g && token_of(apply_lock(g, "other", sid, 0)) > rev);
    fsm_free(g);
    buf_free(b);
}

int main(void)
{
    RUN_F(fsm_fx, member_set_inserts_and_replaces_and_get_returns_the_entry);
    RUN_F(fsm_fx, forget_members_empties_the_table_and_keeps_everything_else);
    RUN_F(fsm_fx, member_reannounce_of_the_identical_entry_changes_nothing);
    RUN_F(fsm_fx, member_del_removes_a_present_member_and_ignores_an_absent_one);
    RUN_F(fsm_fx, member_table_full_rejects_a_new_id_and_changes_nothing);
    RUN_F(fsm_fx, member_full_table_still_replaces_an_existing_id);
    RUN_F(fsm_fx, decode_rejects_bad_member_entries);
    RUN_F(fsm_fx, snapshot_restore_snapshot_with_members_is_byte_identical);
    RUN_F(fsm_fx, restore_rejects_bad_member_tables);
    TEST_MAIN_END();
}
