/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_counter — INCR (src/fsm/counter.c): a key's value as a signed 64-bit decimal,
 * created at 0, stepped by any int64_t; a value that is not the canonical decimal text, an
 * overflow, a stale FENCE or a failed IFREV change nothing (revision and snapshot bytes
 * compared); a counter keeps its lease; a KEY_PUT event carries the new text.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h" /* fsm_counter_text: INCR and TXN INCR write it */
#include "fsm_fixture.h"

static struct fsm_reply incr(struct fsm *f, const char *key, int64_t by)
{
    struct fsm_cmd c = {.op = FSM_OP_INCR, .incr = {.key = S(key), .by = (uint64_t)by}};
    return apply_cmd(f, &c);
}

static int value_is(const struct fsm *f, const char *key, const char *text)
{
    struct fsm_kv_meta m;
    return fsm_kv_get(f, key, strlen(key), &m) && m.value_len == strlen(text) &&
           memcmp(m.value, text, m.value_len) == 0;
}

/* The reply is the new value in two's complement; the value is its decimal text. */
TEST_F(fsm_fx, incr_counts_from_zero_as_decimal_text)
{
    struct fsm *f = fx->f;
    struct fsm_reply r = incr(f, "n", 1);
    CHECK(r.kind == FSM_REPLY_INT && r.value == 1 && value_is(f, "n", "1"));
    CHECK(has_event(FSM_EV_KEY_PUT, 0) && EV.ev[0].value.len == 1);
    r = incr(f, "n", -11);
    CHECK(r.kind == FSM_REPLY_INT && (int64_t)r.value == -10 && value_is(f, "n", "-10"));
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "n", 1, &m) && m.version == 2 && m.mod_rev == fsm_revision(f));
    CHECK(token_of(apply_put(f, "p", "41", 0)));
    CHECK(token_of(incr(f, "p", 1)) == 42 && value_is(f, "p", "42"));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, incr_of_a_value_that_is_not_an_integer_changes_nothing)
{
    struct fsm *f = fx->f;
    static const char *bad[] = {"",
                                "x",
                                "007",
                                "-0",
                                "+1",
                                " 1",
                                "1 ",
                                "1.0",
                                "--1",
                                "-",
                                "9223372036854775808",
                                "-9223372036854775809"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(token_of(apply_put(f, "k", bad[i], 0)));
        struct buf before;
        snapshot_into(f, &before);
        struct fsm_reply r = incr(f, "k", 1);
        int same = snapshot_equals(f, &before);
        buf_free(&before);
        CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "ERR value of key k is not"));
        CHECK(same && EV.n == 0);
    }
    CHECK(token_of(apply_put(f, "k", "-9223372036854775808", 0)));
    CHECK(incr(f, "k", 0).kind == FSM_REPLY_INT && value_is(f, "k", "-9223372036854775808"));
}

TEST_F(fsm_fx, incr_that_would_overflow_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK((int64_t)token_of(incr(f, "k", INT64_MAX)) == INT64_MAX);
    struct buf before;
    snapshot_into(f, &before);
    struct fsm_reply r = incr(f, "k", 1);
    int same = snapshot_equals(f, &before);
    buf_free(&before);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "overflow"));
    CHECK(same);
    CHECK(incr(f, "m", INT64_MIN).kind == FSM_REPLY_INT &&
          value_is(f, "m", "-9223372036854775808"));
    CHECK(incr(f, "m", -1).kind == FSM_REPLY_ERR && value_is(f, "m", "-9223372036854775808"));
    r = incr(f, "m", INT64_MAX);
    CHECK(r.kind == FSM_REPLY_INT && (int64_t)r.value == -1 && value_is(f, "m", "-1"));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, fenced_incr_with_a_stale_token_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t t1 = token_of(apply_lock(f, "L", a, 0));
    struct fsm_cmd c = {
        .op = FSM_OP_INCR,
        .incr = {.key = S("k"),
                 .by = 2,
                 .cond = {.has_fence = true, .fence_name = S("L"), .fence_token = t1}}};
    CHECK(token_of(apply_cmd(f, &c)) == 2);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK(token_of(apply_lock(f, "L", b, 0)));
    struct buf before;
    snapshot_into(f, &before);
    struct fsm_reply r = apply_cmd(f, &c);
    int same = snapshot_equals(f, &before);
    buf_free(&before);
    CHECK(r.kind == FSM_REPLY_ERR && !strncmp(r.err, "STALE", 5));
    CHECK(has_event(FSM_EV_FENCE_REJECTED, 0) && same);
    c.incr.cond = (struct fsm_kv_cond){.has_ifrev = true, .ifrev = 0};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_ERR && value_is(f, "k", "2"));
}

TEST_F(fsm_fx, incr_keeps_the_keys_lease)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_put(f, "k", "5", a)));
    CHECK(token_of(incr(f, "k", 1)) == 6 && has_event(FSM_EV_KEY_PUT, a));
    struct fsm_kv_meta m;
    CHECK(fsm_kv_get(f, "k", 1, &m) && m.lease_sid == a);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK && !fsm_kv_get(f, "k", 1, &m));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, incr_with_req_applies_once)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    struct fsm_cmd c = {
        .op = FSM_OP_INCR, .req_sid = a, .req_seq = 1, .incr = {.key = S("k"), .by = 3}};
    CHECK(token_of(apply_cmd(f, &c)) == 3);
    uint64_t rev = fsm_revision(f);
    CHECK(token_of(apply_cmd(f, &c)) == 3 && fsm_revision(f) == rev && value_is(f, "k", "3"));
    c.req_seq = 2;
    CHECK(token_of(apply_cmd(f, &c)) == 6);
}

TEST_F(fsm_fx, counter_parse_takes_only_the_canonical_text)
{
    int64_t v;
    CHECK(fsm_counter_parse("0", 1, &v) == 0 && v == 0);
    CHECK(fsm_counter_parse("-1", 2, &v) == 0 && v == -1);
    CHECK(fsm_counter_parse("9223372036854775807", 19, &v) == 0 && v == INT64_MAX);
    CHECK(fsm_counter_parse("-9223372036854775808", 20, &v) == 0 && v == INT64_MIN);
    CHECK(fsm_counter_parse("12", 1, &v) == 0 && v == 1); /* the length bounds it */
    CHECK(fsm_counter_parse("01", 2, &v) && fsm_counter_parse("-0", 2, &v));
    CHECK(fsm_counter_parse("", 0, &v) && fsm_counter_parse("-", 1, &v));
}

/* The one writer of a counter's text (INCR's and TXN's INCR): the canonical form at the edges,
 * and what fsm_counter_parse reads back as the same value. */
TEST(counter_text_is_the_canonical_text_parse_reads)
{
    static const struct {
        int64_t v;
        const char *text;
    } cases[] = {{0, "0"},
                 {1, "1"},
                 {-1, "-1"},
                 {10, "10"},
                 {-10, "-10"},
                 {INT64_MAX, "9223372036854775807"},
                 {INT64_MIN, "-9223372036854775808"},
                 {INT64_MIN + 1, "-9223372036854775807"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t len = 0;
        int64_t back = 0;
        char *p = fsm_counter_text(cases[i].v, &len);
        CHECK(p && len == strlen(cases[i].text) && len <= FSM_COUNTER_DIGITS &&
              memcmp(p, cases[i].text, len) == 0);
        CHECK(p && fsm_counter_parse(p, len, &back) == 0 && back == cases[i].v);
        free(p);
    }
}

int main(void)
{
    RUN_F(fsm_fx, incr_counts_from_zero_as_decimal_text);
    RUN_F(fsm_fx, incr_of_a_value_that_is_not_an_integer_changes_nothing);
    RUN_F(fsm_fx, incr_that_would_overflow_changes_nothing);
    RUN_F(fsm_fx, fenced_incr_with_a_stale_token_changes_nothing);
    RUN_F(fsm_fx, incr_keeps_the_keys_lease);
    RUN_F(fsm_fx, incr_with_req_applies_once);
    RUN_F(fsm_fx, counter_parse_takes_only_the_canonical_text);
    RUN(counter_text_is_the_canonical_text_parse_reads);
    TEST_MAIN_END();
}
