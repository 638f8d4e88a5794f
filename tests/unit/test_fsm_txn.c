/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_txn — TXN (src/fsm/txn.c): every compare is read against the state before the
 * TXN, then all of one branch's ops apply, in order, one revision per change, or none of them:
 * a failing op anywhere in the branch (an INCR of a value that is not a counter, an overflow,
 * a key written twice), a stale FENCE or an IFREV change nothing (snapshot bytes compared, no
 * event). Each compare kind on both sides (REV, VALUE, EXISTS, MISSING, TOKEN, HOLDS on
 * exclusive, shared and semaphore holds); the per-op results; exactly-once retries; and the
 * codec: canonical entries only, and random bytes never crash the decoder or the apply.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

/* A TXN being built: items in order, cmp / then / else counts. */
struct tb {
    struct buf raw;
    uint32_t n[3];
    struct fsm_kv_cond cond;
};

static void tb_add(struct tb *t, int part, uint8_t type, uint8_t rel, const char *name, uint64_t n,
                   const char *value)
{
    struct fsm_txn_item x = {.type = type,
                             .rel = rel,
                             .name = S(name),
                             .n = n,
                             .value = value ? S(value) : (struct fsm_str){"", 0}};
    if (fsm_txn_add(&t->raw, &x))
        abort();
    t->n[part]++;
}

static struct fsm_cmd tb_cmd(struct tb *t)
{
    struct fsm_cmd c = {.op = FSM_OP_TXN};
    c.txn.txn = (struct fsm_txn){t->n[0], t->n[1], t->n[2], {t->raw.p, (uint32_t)t->raw.len}};
    c.txn.cond = t->cond;
    return c;
}

static struct fsm_reply tb_apply(struct fsm *f, struct tb *t)
{
    struct fsm_cmd c = tb_cmd(t);
    return apply_cmd(f, &c);
}

#define CMP 0
#define THEN 1
#define ELSE 2

static int value_is(const struct fsm *f, const char *key, const char *text)
{
    struct fsm_kv_meta m;
    return fsm_kv_get(f, key, strlen(key), &m) && m.value_len == strlen(text) &&
           memcmp(m.value, text, m.value_len) == 0;
}

static int absent(const struct fsm *f, const char *key)
{
    struct fsm_kv_meta m;
    return !fsm_kv_get(f, key, strlen(key), &m);
}

/* THEN: PUT, DEL, INCR in order, one revision per change; results; events in op order, each
 * with its change's revision as token. */
TEST_F(fsm_fx, then_applies_every_op_in_order_with_its_result)
{
    struct fsm *f = fx->f;
    struct tb t = {.raw = {0}};
    CHECK(token_of(apply_put(f, "gone", "x", 0)) == 1);
    CHECK(token_of(apply_put(f, "n", "41", 0)) == 2);
    tb_add(&t, CMP, FSM_TXN_EXISTS, 0, "n", 0, NULL);
    tb_add(&t, THEN, FSM_TXN_PUT, 0, "a", 0, "va");
    tb_add(&t, THEN, FSM_TXN_DEL, 0, "gone", 0, NULL);
    tb_add(&t, THEN, FSM_TXN_DEL, 0, "never", 0, NULL);
    tb_add(&t, THEN, FSM_TXN_INCR, 0, "n", (uint64_t)-43, NULL);
    tb_add(&t, ELSE, FSM_TXN_PUT, 0, "else", 0, "no");
    struct fsm_reply r = tb_apply(f, &t);
    buf_free(&t.raw);
    CHECK(r.kind == FSM_REPLY_INT && (r.value & 1) == 1 && (r.value >> 1) == 5);
    CHECK(r.txn_known && r.txn_n == 4);
    CHECK(r.txn[0] == 3 && r.txn[1] == 1 && r.txn[2] == 0 && (int64_t)r.txn[3] == -2);
    CHECK(fsm_revision(f) == 5 && value_is(f, "a", "va") && absent(f, "gone"));
    CHECK(value_is(f, "n", "-2") && absent(f, "else") && absent(f, "never"));
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "a", 1, &m) && m.create_rev == 3 && m.mod_rev == 3 && m.version == 1);
    CHECK(fsm_kv_get(f, "n", 1, &m) && m.create_rev == 2 && m.mod_rev == 5 && m.version == 2);
    CHECK(EV.n == 3 && EV.ev[0].type == FSM_EV_KEY_PUT && EV.ev[1].type == FSM_EV_KEY_DELETED &&
          EV.ev[2].type == FSM_EV_KEY_PUT);
    CHECK(EV.ev[0].name.len == 1 && EV.ev[0].name.p[0] == 'a' && EV.ev[2].value.len == 2);
    CHECK(EV.ev[0].token == 3 && EV.ev[1].token == 4 && EV.ev[2].token == 5); /* each change's */
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* A false compare runs ELSE (and no compare at all runs THEN); an empty branch changes nothing
 * and answers the current revision. */
TEST_F(fsm_fx, a_false_compare_runs_else_only)
{
    struct fsm *f = fx->f;
    struct tb t = {.raw = {0}};
    CHECK(token_of(apply_put(f, "k", "v", 0)) == 1);
    tb_add(&t, CMP, FSM_TXN_EXISTS, 0, "k", 0, NULL);
    tb_add(&t, CMP, FSM_TXN_VALUE, FSM_TXN_EQ, "k", 0, "other");
    tb_add(&t, THEN, FSM_TXN_PUT, 0, "then", 0, "1");
    tb_add(&t, ELSE, FSM_TXN_PUT, 0, "else", 0, "1");
    tb_add(&t, ELSE, FSM_TXN_INCR, 0, "cnt", 5, NULL);
    struct fsm_reply r = tb_apply(f, &t);
    buf_free(&t.raw);
    CHECK(r.kind == FSM_REPLY_INT && (r.value & 1) == 0 && (r.value >> 1) == 3);
    CHECK(r.txn_n == 2 && r.txn[0] == 2 && r.txn[1] == 5);
    CHECK(absent(f, "then") && value_is(f, "else", "1") && value_is(f, "cnt", "5"));
    struct tb e = {.raw = {0}};
    tb_add(&e, CMP, FSM_TXN_MISSING, 0, "k", 0, NULL);
    r = tb_apply(f, &e);
    buf_free(&e.raw);
    CHECK(r.kind == FSM_REPLY_INT && r.value == (3u << 1) && r.txn_n == 0 && EV.n == 0);
    CHECK(fsm_revision(f) == 3 && invariants_hold(f) && restores_identically(f));
}

/* One compare alone, THEN PUT x: 1 if THEN ran. */
static int holds(struct fsm *f, uint8_t type, uint8_t rel, const char *name, uint64_t n,
                 const char *value)
{
    struct tb t = {.raw = {0}};
    tb_add(&t, CMP, type, rel, name, n, value);
    tb_add(&t, THEN, FSM_TXN_DEL, 0, "scratch-never-there", 0, NULL);
    struct fsm_reply r = tb_apply(f, &t);
    buf_free(&t.raw);
    if (r.kind != FSM_REPLY_INT)
        abort();
    return (int)(r.value & 1);
}

TEST_F(fsm_fx, each_compare_on_both_sides)
{
    struct fsm *f = fx->f;
    CHECK(token_of(apply_put(f, "k", "v", 0)) == 1);
    CHECK(token_of(apply_put(f, "k", "w", 0)) == 2); /* mod_rev 2 */
    CHECK(holds(f, FSM_TXN_REV, FSM_TXN_EQ, "k", 2, NULL));
    CHECK(!holds(f, FSM_TXN_REV, FSM_TXN_EQ, "k", 1, NULL));
    CHECK(holds(f, FSM_TXN_REV, FSM_TXN_NE, "k", 1, NULL));
    CHECK(holds(f, FSM_TXN_REV, FSM_TXN_LT, "k", 3, NULL));
    CHECK(!holds(f, FSM_TXN_REV, FSM_TXN_LT, "k", 2, NULL));
    CHECK(holds(f, FSM_TXN_REV, FSM_TXN_GT, "k", 1, NULL));
    CHECK(holds(f, FSM_TXN_REV, FSM_TXN_EQ, "absent", 0, NULL)); /* an absent key: mod_rev 0 */
    CHECK(holds(f, FSM_TXN_VALUE, FSM_TXN_EQ, "k", 0, "w"));
    CHECK(!holds(f, FSM_TXN_VALUE, FSM_TXN_EQ, "k", 0, "v"));
    CHECK(holds(f, FSM_TXN_VALUE, FSM_TXN_NE, "k", 0, "v"));
    CHECK(!holds(f, FSM_TXN_VALUE, FSM_TXN_EQ, "absent", 0, ""));
    CHECK(holds(f, FSM_TXN_VALUE, FSM_TXN_NE, "absent", 0, ""));
    CHECK(holds(f, FSM_TXN_EXISTS, 0, "k", 0, NULL) && !holds(f, FSM_TXN_EXISTS, 0, "a", 0, NULL));
    CHECK(holds(f, FSM_TXN_MISSING, 0, "a", 0, NULL) &&
          !holds(f, FSM_TXN_MISSING, 0, "k", 0, NULL));
    uint64_t s1 = open_session(f, 1000, 0), s2 = open_session(f, 1000, 0);
    uint64_t tok = token_of(apply_lock(f, "L", s1, 0));
    CHECK(tok && holds(f, FSM_TXN_TOKEN, FSM_TXN_EQ, "L", tok, NULL));
    CHECK(!holds(f, FSM_TXN_TOKEN, FSM_TXN_EQ, "L", tok - 1, NULL));
    CHECK(holds(f, FSM_TXN_TOKEN, FSM_TXN_NE, "L", tok - 1, NULL));
    CHECK(!holds(f, FSM_TXN_TOKEN, FSM_TXN_EQ, "nolock", tok, NULL));
    CHECK(holds(f, FSM_TXN_HOLDS, 0, "L", s1, NULL) && !holds(f, FSM_TXN_HOLDS, 0, "L", s2, NULL));
    CHECK(!holds(f, FSM_TXN_HOLDS, 0, "L", 999, NULL) &&
          !holds(f, FSM_TXN_HOLDS, 0, "x", s1, NULL));
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("R"), .sid = s2}};
    CHECK(token_of(apply_cmd(f, &sh)));
    CHECK(holds(f, FSM_TXN_HOLDS, 0, "R", s2, NULL) && !holds(f, FSM_TXN_HOLDS, 0, "R", s1, NULL));
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("S"), .sid = s1, .limit = 2}};
    uint64_t permit = token_of(apply_cmd(f, &sem));
    CHECK(permit && holds(f, FSM_TXN_HOLDS, 0, "S", s1, NULL));
    CHECK(holds(f, FSM_TXN_TOKEN, FSM_TXN_EQ, "S", permit, NULL)); /* FENCE's rule */
    /* the holder's session expired: it holds nothing, its token is no longer current */
    CHECK(apply_expire(f, s1).kind == FSM_REPLY_OK);
    CHECK(!holds(f, FSM_TXN_HOLDS, 0, "L", s1, NULL));
    CHECK(!holds(f, FSM_TXN_TOKEN, FSM_TXN_EQ, "L", tok, NULL));
    CHECK(invariants_hold(f));
}

/* A bad op late in the branch: ERR naming it, nothing changed (bytes), no event. */
TEST_F(fsm_fx, a_failing_op_anywhere_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK(token_of(apply_put(f, "text", "abc", 0)));
    CHECK(token_of(apply_put(f, "max", "9223372036854775807", 0)));
    for (int kind = 0; kind < 3; kind++) {
        struct tb t = {.raw = {0}};
        tb_add(&t, THEN, FSM_TXN_PUT, 0, "a", 0, "1");
        tb_add(&t, THEN, FSM_TXN_DEL, 0, "max", 0, NULL);
        tb_add(&t, THEN, FSM_TXN_INCR, 0, "c", 1, NULL);
        if (kind == 0)
            tb_add(&t, THEN, FSM_TXN_INCR, 0, "text", 1, NULL);
        else if (kind == 1)
            tb_add(&t, THEN, FSM_TXN_PUT, 0, "a", 0, "twice");
        else
            tb_add(&t, THEN, FSM_TXN_INCR, 0, "max2", 1, NULL);
        if (kind == 2)
            CHECK(token_of(apply_put(f, "max2", "9223372036854775807", 0)));
        snapshot_into(f, &fx->before);
        uint64_t rev = fsm_revision(f);
        struct fsm_reply r = tb_apply(f, &t);
        buf_free(&t.raw);
        CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "TXN op 4"));
        CHECK(kind != 0 || strstr(r.err, "not a signed 64-bit"));
        CHECK(kind != 1 || strstr(r.err, "written twice"));
        CHECK(kind != 2 || strstr(r.err, "overflow"));
        CHECK(snapshot_equals(f, &fx->before) && EV.n == 0 && fsm_revision(f) == rev);
        buf_free(&fx->before);
    }
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_stale_fence_or_an_ifrev_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    uint64_t tok = token_of(apply_lock(f, "L", s, 0));
    CHECK(apply_unlock(f, "L", s).kind == FSM_REPLY_OK);
    uint64_t now = token_of(apply_lock(f, "L", s, 0));
    CHECK(now > tok);
    struct tb t = {.raw = {0}};
    tb_add(&t, THEN, FSM_TXN_PUT, 0, "a", 0, "1");
    t.cond = (struct fsm_kv_cond){.has_fence = true, .fence_name = S("L"), .fence_token = tok};
    snapshot_into(f, &fx->before);
    struct fsm_reply r = tb_apply(f, &t);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "STALE", 5) == 0);
    CHECK(EV.n == 1 && EV.ev[0].type == FSM_EV_FENCE_REJECTED);
    CHECK(snapshot_equals(f, &fx->before));
    t.cond = (struct fsm_kv_cond){.has_ifrev = true, .ifrev = 0};
    r = tb_apply(f, &t);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "IFREV") && snapshot_equals(f, &fx->before));
    t.cond = (struct fsm_kv_cond){.has_fence = true, .fence_name = S("L"), .fence_token = now};
    r = tb_apply(f, &t);
    buf_free(&t.raw);
    CHECK(r.kind == FSM_REPLY_INT && (r.value & 1) && value_is(f, "a", "1"));
}

/* REQ: a retry answers the same branch, revision and results, and applies nothing again; a
 * node that restored the session from a snapshot answers the same INT without the results. */
TEST_F(fsm_fx, a_retried_txn_applies_once_with_the_same_results)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    struct tb t = {.raw = {0}};
    tb_add(&t, THEN, FSM_TXN_INCR, 0, "n", 7, NULL);
    tb_add(&t, THEN, FSM_TXN_PUT, 0, "p", 0, "x");
    struct fsm_cmd c = tb_cmd(&t);
    c.req_sid = s;
    c.req_seq = 1;
    c.checked = true;
    struct fsm_reply r1 = apply_cmd(f, &c);
    uint64_t v0 = r1.txn[0], v1 = r1.txn[1];
    CHECK(r1.kind == FSM_REPLY_INT && r1.txn_known && v0 == 7);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r2 = apply_cmd(f, &c);
    CHECK(r2.kind == FSM_REPLY_INT && r2.value == r1.value && r2.txn_known && r2.txn_n == 2);
    CHECK(r2.txn[0] == v0 && r2.txn[1] == v1 && fsm_revision(f) == rev && value_is(f, "n", "7"));
    /* restored elsewhere: the same INT, the results not kept */
    struct buf snap;
    char err[128];
    snapshot_into(f, &snap);
    CHECK(fsm_restore(fx->g, (const uint8_t *)snap.p, snap.len, err, sizeof(err)) == 0);
    buf_free(&snap);
    struct fsm_reply r3 = apply_cmd(fx->g, &c);
    CHECK(r3.kind == FSM_REPLY_INT && r3.value == r1.value && !r3.txn_known && r3.txn_n == 0);
    CHECK(fsm_revision(fx->g) == rev);
    /* the same seq with other ops is refused */
    tb_add(&t, THEN, FSM_TXN_DEL, 0, "p", 0, NULL);
    struct fsm_cmd d = tb_cmd(&t);
    d.req_sid = s;
    d.req_seq = 1;
    d.checked = true;
    struct fsm_reply r4 = apply_cmd(f, &d);
    buf_free(&t.raw);
    CHECK(r4.kind == FSM_REPLY_ERR && strstr(r4.err, "different command") && value_is(f, "p", "x"));
}

/* ---- codec ---- */

static size_t encode_txn(struct tb *t, struct buf *out)
{
    struct fsm_cmd c = tb_cmd(t);
    buf_init(out);
    if (fsm_cmd_encode(&c, out))
        abort();
    return out->len;
}

/* Entries the decoder refuses: a compare among the ops (and back), a relation its type does
 * not take, a number or value its type does not use, no entry at all, too many. */
TEST_F(fsm_fx, the_decoder_takes_canonical_entries_only)
{
    static const struct {
        int part;
        uint8_t type, rel;
        uint64_t n;
        const char *value;
    } bad[] = {
        {THEN, FSM_TXN_EXISTS, 0, 0, NULL},
        {CMP, FSM_TXN_PUT, 0, 0, "v"},
        {CMP, FSM_TXN_VALUE, FSM_TXN_LT, 0, "v"},
        {CMP, FSM_TXN_TOKEN, FSM_TXN_GT, 1, NULL},
        {CMP, FSM_TXN_EXISTS, FSM_TXN_NE, 0, NULL},
        {CMP, FSM_TXN_EXISTS, 0, 1, NULL},
        {THEN, FSM_TXN_DEL, 0, 0, "v"},
        {THEN, FSM_TXN_PUT, 0, 3, "v"},
        {CMP, 7, 0, 0, NULL},
        {THEN, 19, 0, 0, NULL},
        {THEN, FSM_TXN_PUT, 4, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tb t = {.raw = {0}};
        tb_add(&t, bad[i].part, bad[i].type, bad[i].rel, "k", bad[i].n, bad[i].value);
        size_t n = encode_txn(&t, &fx->scratch[0]);
        CHECK(!decodes(fx->scratch[0].p, n));
        buf_free(&fx->scratch[0]);
        buf_free(&t.raw);
    }
    struct tb e = {.raw = {0}};
    size_t n = encode_txn(&e, &fx->scratch[0]);
    CHECK(!decodes(fx->scratch[0].p, n)); /* no entry */
    buf_free(&fx->scratch[0]);
    struct tb many = {.raw = {0}};
    for (int i = 0; i <= FSM_MAX_TXN_ITEMS; i++)
        tb_add(&many, THEN, FSM_TXN_DEL, 0, "k", 0, NULL);
    n = encode_txn(&many, &fx->scratch[0]);
    CHECK(!decodes(fx->scratch[0].p, n));
    buf_free(&fx->scratch[0]);
    buf_free(&many.raw);
}

/* Random bytes: a valid TXN with bytes flipped, cut or appended. Whatever decodes re-encodes to
 * the same bytes, and applying any of it (decoded or not) leaves a state that passes the audit
 * and restores identically; nothing crashes (ASan). */
TEST_F(fsm_fx, random_bytes_never_crash_and_what_decodes_is_canonical)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "L", s, 0)));
    CHECK(token_of(apply_put(f, "n", "1", 0)));
    struct tb t = {.raw = {0}};
    tb_add(&t, CMP, FSM_TXN_REV, FSM_TXN_GT, "n", 0, NULL);
    tb_add(&t, CMP, FSM_TXN_HOLDS, 0, "L", s, NULL);
    tb_add(&t, CMP, FSM_TXN_VALUE, FSM_TXN_NE, "n", 0, "zz");
    tb_add(&t, THEN, FSM_TXN_INCR, 0, "n", 2, NULL);
    tb_add(&t, THEN, FSM_TXN_PUT, 0, "p", 0, "value");
    tb_add(&t, ELSE, FSM_TXN_DEL, 0, "n", 0, NULL);
    size_t len = encode_txn(&t, &fx->scratch[0]);
    buf_free(&t.raw);
    uint8_t *m = fx->mem = malloc(len + 8);
    CHECK(m);
    uint32_t seed = 2024;
    int decoded = 0;
    for (int round = 0; round < 20000; round++) {
        memcpy(m, fx->scratch[0].p, len);
        size_t n = len;
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            m[at] = (uint8_t)(seed >> 16);
        }
        seed = seed * 1103515245u + 12345u;
        if ((seed >> 12) % 5 == 0)
            n = (seed >> 16) % len; /* cut */
        else if ((seed >> 12) % 5 == 1)
            m[n++] = (uint8_t)(seed >> 20); /* a trailing byte */
        struct fsm_cmd c;
        char err[128];
        if (fsm_cmd_decode(m, n, &c, err, sizeof(err)) == 0) {
            decoded++;
            struct buf re;
            buf_init(&re);
            CHECK(fsm_cmd_encode(&c, &re) == 0);
            int same = re.len == n && memcmp(re.p, m, n) == 0;
            buf_free(&re);
            CHECK(same);
        }
        struct fsm_reply r;
        fsm_events_reset(&EV);
        fsm_apply(f, m, n, &r, &EV);
        CHECK(r.kind <= FSM_REPLY_ERR);
        if (round % 1000 == 0)
            CHECK(invariants_hold(f) && restores_identically(f));
    }
    CHECK(decoded > 0 && invariants_hold(f) && restores_identically(f));
}

int main(void)
{
    RUN_F(fsm_fx, then_applies_every_op_in_order_with_its_result);
    RUN_F(fsm_fx, a_false_compare_runs_else_only);
    RUN_F(fsm_fx, each_compare_on_both_sides);
    RUN_F(fsm_fx, a_failing_op_anywhere_changes_nothing);
    RUN_F(fsm_fx, a_stale_fence_or_an_ifrev_changes_nothing);
    RUN_F(fsm_fx, a_retried_txn_applies_once_with_the_same_results);
    RUN_F(fsm_fx, the_decoder_takes_canonical_entries_only);
    RUN_F(fsm_fx, random_bytes_never_crash_and_what_decodes_is_canonical);
    TEST_MAIN_END();
}
