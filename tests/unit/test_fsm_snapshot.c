/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_snapshot — snapshots: byte-identical snapshot/restore, refused snapshots, name-ordered
 * structures.
 *
 * One test per rule of the fencelock state machine (src/fsm/fsm.h); the fixture and helpers
 * are in fsm_fixture.h. Commands go through the real encoder and fsm_apply; "changes nothing"
 * is asserted by comparing the revision and the snapshot bytes before and after, and most tests
 * end with the invariant audit (fsm_check_invariants).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/snap_sect.h"
#include "fsm/waitgraph.h"
#include "fsm_fixture.h"

TEST_F(fsm_fx, snapshot_restore_snapshot_is_byte_identical)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t sids[6];
    build_rich(f, sids);
    CHECK(invariants_hold(f));
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(st.sessions == 5 && st.locks_held > 0 && st.waiters > 0 && st.locks_in_delay > 0);
    struct buf *b = &fx->scratch[0];
    char err[128];
    snapshot_into(f, b);
    CHECK(fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0);
    CHECK(invariants_hold(g));
    CHECK(snapshot_equals(g, b));
    CHECK_EQ_U64(fsm_revision(g), fsm_revision(f));
    /* the copy behaves the same: close every session on both, compare replies and events */
    for (int i = 0; i < 6; i++) {
        struct fsm_reply r1 = apply_close(f, sids[i]);
        size_t n1 = EV.n;
        struct fsm_reply r2 = apply_close(g, sids[i]);
        CHECK(r1.kind == r2.kind && r1.value == r2.value && n1 == EV.n);
    }
    buf_free(b);
    snapshot_into(f, b);
    CHECK(snapshot_equals(g, b));
    buf_free(b);
}

TEST_F(fsm_fx, restore_of_garbage_or_truncated_snapshot_fails_and_leaves_state_unchanged)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t sids[6];
    build_rich(f, sids);
    open_session(g, 500, 0);
    struct buf *b = &fx->scratch[0], *gb = &fx->scratch[2];
    char err[128];
    snapshot_into(f, b);
    snapshot_into(g, gb);
    for (size_t n = 0; n < b->len; n++) {
        CHECK(fsm_restore(g, (const uint8_t *)b->p, n, err, sizeof(err)) == -1);
        CHECK(err[0] != '\0');
    }
    buf_put_u8(b, 0);
    CHECK(fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof(err)) == -1);
    b->len--;
    /* flip every byte: whatever is accepted must be self-consistent */
    for (size_t i = 0; i < b->len; i++) {
        b->p[i] ^= 0x5a;
        struct fsm *h = fx->h = fsm_new();
        if (fsm_restore(h, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0) {
            CHECK(invariants_hold(h));
            CHECK(snapshot_equals(h, b));
        }
        fsm_free(h);
        fx->h = NULL;
        b->p[i] ^= 0x5a;
    }
    CHECK(fsm_restore(g, (const uint8_t *)"garbage!", 8, err, sizeof(err)) == -1);
    CHECK(snapshot_equals(g, gb));
    CHECK(invariants_hold(g));
    buf_free(b);
    buf_free(gb);
}

/* Hand-made snapshots that parse but break a rule must be refused. */
TEST_F(fsm_fx, restore_rejects_snapshots_that_break_a_rule)
{
    /* header, rev 5, one session sid 1 ttl 1 (lockdelay, checkpoint, name, req seq: 0) */
#define HDR 'F', 'L', 'S', 'M', 2, 5, 1, 1, 1, 0, 0, 0, 0
    const uint8_t ok[] = {HDR, 1, 1, 'L', 1, 2, 0, 0, 0, 0, 0};          /* L held by 1, token 2 */
    const uint8_t dead_holder[] = {HDR, 1, 1, 'L', 7, 2, 0, 0, 0, 0, 0}; /* held by sid 7 */
    const uint8_t free_lock[] = {HDR, 1, 1, 'L', 0, 0, 0, 0, 0};         /* stored free lock */
    const uint8_t big_token[] = {HDR, 1, 1, 'L', 1, 9, 0, 0, 0, 0, 0};   /* token > revision */
    const uint8_t dup_rev[] = {HDR, 1, 1, 'L', 1, 1, 0, 0, 0, 0, 0};     /* token == sid */
    const uint8_t self_wait[] = {HDR, 1, 1, 'L', 1, 2, 0, 0, 1, 1, 5, 3, 0, 0};
    const uint8_t dup_sess[] = {'F', 'L', 'S', 'M', 2, 5, 2, 1, 1, 0, 0, 0,
                                0,   1,   1,   0,   0, 0, 0, 0, 0, 0, 0};
    CHECK(restores(ok, sizeof(ok)));
    CHECK(!restores(dead_holder, sizeof(dead_holder)));
    CHECK(!restores(free_lock, sizeof(free_lock)));
    CHECK(!restores(big_token, sizeof(big_token)));
    CHECK(!restores(dup_rev, sizeof(dup_rev)));
    CHECK(!restores(self_wait, sizeof(self_wait)));
    CHECK(!restores(dup_sess, sizeof(dup_sess)));
#undef HDR
}

/* Names built to hit every case of the snapshot's radix sort on 8-byte chunks: long shared
 * prefixes (runs recursing past bytes 8, 16, 24), names ending inside or exactly at a chunk,
 * NUL and 0xff bytes (padding ties), runs below and above the insertion-sort cut-off. Restore
 * accepts only names in strictly increasing byte order, so a mis-sorted snapshot fails it. */
TEST_F(fsm_fx, snapshot_orders_adversarial_lock_names)
{
    struct fsm *f = fx->f;
    uint64_t sid = open_session(f, 1000, 0);
    static const char alphabet[4] = {'\0', 'a', 'b', '\xff'};
    unsigned seed = 7;
    char name[48];
    size_t made = 0;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 8) % 40;
        size_t shared = (seed >> 16) % 4 * 8; /* 0, 8, 16 or 24 bytes of "/shared/" */
        for (size_t k = 0; k < len; k++) {
            seed = seed * 1103515245u + 12345u;
            name[k] = k < shared ? "/shared/"[k % 8] : alphabet[(seed >> 16) % 4];
        }
        struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = {name, (uint32_t)len}, .sid = sid}};
        struct fsm_reply r = apply_cmd(f, &c);
        made += r.kind == FSM_REPLY_INT;
    }
    struct fsm_stats st;
    fsm_stats(f, &st);
    CHECK(made >= 2000 && st.locks_held > 1500); /* many distinct names, some repeated */
    CHECK(restores_identically(f));
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Locks are also kept in a tree ordered by name and sessions in a list ordered by sid, so that
 * LOCKS and snapshots need no sort. Thousands of creates and drops in random order: the
 * invariants (which walk both structures) hold throughout, LOCKS under several prefixes
 * returns exactly the live names with the prefix in byte order, and a restored copy's snapshot
 * matches byte for byte. */
TEST_F(fsm_fx, lock_name_tree_and_session_list_follow_creates_and_drops)
{
    enum { NS = 40, NL = 600 };
    struct fsm *f = fx->f;
    uint64_t sid[NS];
    static char names[NL][16];
    int owner[NL]; /* index into sid[] of the holder, or -1 */
    unsigned seed = 11;
    for (int i = 0; i < NS; i++)
        sid[i] = open_session(f, 1000, 0);
    for (int i = 0; i < NL; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(names[i], sizeof(names[i]), "%c/%u", "abc"[(seed >> 16) % 3], (seed >> 8) % 9973);
        owner[i] = -1;
    }
    for (int step = 0; step < 6000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % NL), k = (int)((seed >> 20) % NS);
        if ((seed >> 4) % 50 == 0) { /* a session ends; a new one (newest sid) takes its slot */
            CHECK(apply_close(f, sid[k]).kind == FSM_REPLY_OK);
            for (int j = 0; j < NL; j++)
                if (owner[j] == k)
                    owner[j] = -1;
            sid[k] = open_session(f, 1000, 0);
        } else if (owner[i] < 0) {
            struct fsm_reply r = apply_lock(f, names[i], sid[k], 0);
            if (r.kind == FSM_REPLY_INT) /* names repeat: it may be held under another index */
                owner[i] = k;
            for (int j = 0; j < NL && r.kind == FSM_REPLY_INT; j++)
                if (j != i && strcmp(names[j], names[i]) == 0)
                    owner[j] = k;
        } else {
            CHECK(apply_unlock(f, names[i], sid[owner[i]]).kind == FSM_REPLY_OK);
            for (int j = 0; j < NL; j++)
                if (strcmp(names[j], names[i]) == 0)
                    owner[j] = -1;
        }
        if (step % 500 == 0)
            CHECK(invariants_hold(f));
    }
    CHECK(invariants_hold(f));
    const char *held[NL];
    static struct fsm_lock_item it[NL];
    const char *prefixes[] = {"", "a", "b/", "c/1", "c/99", "zz"};
    for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
        size_t want = 0, plen = strlen(prefixes[p]);
        for (int i = 0; i < NL; i++) {
            bool dup = false;
            for (size_t j = 0; j < want; j++)
                dup |= strcmp(held[j], names[i]) == 0;
            if (owner[i] >= 0 && !dup && strncmp(names[i], prefixes[p], plen) == 0)
                held[want++] = names[i];
        }
        qsort(held, want, sizeof(held[0]), cmp_cstr);
        size_t n = fsm_locks_list(f, prefixes[p], plen, NL, it);
        CHECK_EQ_U64(n, want);
        for (size_t j = 0; j < n && j < want; j++)
            CHECK(it[j].name.len == strlen(held[j]) &&
                  !memcmp(it[j].name.p, held[j], it[j].name.len));
        if (want > 3) /* a limit cuts the same run */
            CHECK(fsm_locks_list(f, prefixes[p], plen, 3, it) == 3 &&
                  it[2].name.len == strlen(held[2]) &&
                  !memcmp(it[2].name.p, held[2], it[2].name.len));
    }
    CHECK(restores_identically(f));
}

/* Version 8's framing (src/fsm/snap_sect.c), on the bytes of a version-7 state: a version-8
 * snapshot must carry at least one section, each known, in tag order, consumed exactly; every
 * other form is refused and leaves the state as it was. */
TEST_F(fsm_fx, version_8_sections_are_framed_canonically)
{
    struct fsm *f = fx->f, *g = fx->g;
    struct fsm_cmd fc = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = FSM_FORMAT_2}};
    struct fsm_cmd lc = {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = 5}};
    CHECK(apply_cmd(f, &fc).kind == FSM_REPLY_OK && apply_cmd(f, &lc).kind == FSM_REPLY_OK);
    open_session(f, 1000, 0);
    open_session(g, 500, 0);
    struct buf *b = &fx->scratch[0], *gb = &fx->scratch[2];
    char err[160];
    snapshot_into(f, b);
    snapshot_into(g, gb);
    CHECK(b->len > 5 && (uint8_t)b->p[4] == 7); /* a limit that is not the default: version 7 */
    CHECK(fsm_restore(g, (const uint8_t *)b->p, b->len, err, sizeof(err)) == 0);
    CHECK(snapshot_equals(g, b));
    buf_free(gb);
    snapshot_into(g, gb);
    const struct fsm_snap_section *rows = fsm_snap_section_rows();
    uint64_t unknown = 1;
    for (const struct fsm_snap_section *r = rows; r->name; r++)
        unknown = r->tag >= unknown ? r->tag + 1 : unknown;
    /* the version-7 bytes relabelled 8, then a sections part */
    const uint8_t tails[][4] = {
        {0},                         /* no sections: not canonical */
        {1, (uint8_t)unknown, 1, 0}, /* a tag no row has: a newer release wrote it */
    };
    const size_t tail_len[] = {1, 4};
    const char *why[] = {"without sections", "unknown section"};
    for (size_t i = 0; i < 3; i++) {
        struct buf t;
        buf_init(&t);
        CHECK(buf_append(&t, b->p, b->len) == 0);
        t.p[4] = 8;
        if (i < 2)
            CHECK(buf_append(&t, tails[i], tail_len[i]) == 0);
        CHECK(fsm_restore(g, (const uint8_t *)t.p, t.len, err, sizeof(err)) == -1);
        CHECK(i == 2 ? strstr(err, "truncated") != NULL : strstr(err, why[i]) != NULL);
        CHECK(snapshot_equals(g, gb)); /* refused: nothing changed */
        buf_free(&t);
    }
    /* and a version-7 snapshot of a state at the default limit is not canonical either */
    struct fsm_cmd dc = {.op = FSM_OP_DEADLOCK_LIMIT,
                         .deadlock_limit = {.limit = FSM_DEADLOCK_LIMIT_DEFAULT}};
    CHECK(apply_cmd(f, &dc).kind == FSM_REPLY_OK);
    buf_free(b);
    snapshot_into(f, b);
    CHECK((uint8_t)b->p[4] < 7);
    buf_free(b);
    buf_free(gb);
}

int main(void)
{
    RUN_F(fsm_fx, snapshot_orders_adversarial_lock_names);
    RUN_F(fsm_fx, lock_name_tree_and_session_list_follow_creates_and_drops);
    RUN_F(fsm_fx, snapshot_restore_snapshot_is_byte_identical);
    RUN_F(fsm_fx, restore_of_garbage_or_truncated_snapshot_fails_and_leaves_state_unchanged);
    RUN_F(fsm_fx, restore_rejects_snapshots_that_break_a_rule);
    RUN_F(fsm_fx, version_8_sections_are_framed_canonically);
    TEST_MAIN_END();
}
