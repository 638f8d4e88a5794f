/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_latch — countdown latches and double barriers (src/fsm/latch.c): the rules of its
 * header comment, one test each. A latch reaches zero only by its count of count-downs (one per
 * joined session at most, anonymous ones only with counts nobody promised); a joined session
 * that ends before it counted down breaks the latch (LATCH_BROKEN) and every later step
 * answers BROKEN until it is deleted; a barrier is full with `count` sessions inside, done when
 * they all left, broken when one ends inside. Refused steps change nothing (snapshot bytes
 * compared); every state restores identically (snapshot section 3).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply create(struct fsm *f, const char *name, uint64_t count)
{
    struct fsm_cmd c = {.op = FSM_OP_LATCH_CREATE, .latch_create = {S(name), count}};
    return apply_cmd(f, &c);
}

static struct fsm_reply join(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_LATCH_JOIN, .latch_join = {S(name), sid}};
    return apply_cmd(f, &c);
}

static struct fsm_reply countdown(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_LATCH_COUNTDOWN, .latch_countdown = {S(name), sid}};
    return apply_cmd(f, &c);
}

static struct fsm_reply del(struct fsm *f, const char *name)
{
    struct fsm_cmd c = {.op = FSM_OP_LATCH_DELETE, .latch_delete = {S(name)}};
    return apply_cmd(f, &c);
}

static struct fsm_reply barrier(struct fsm *f, const char *name, uint64_t sid, uint64_t count,
                                bool leave)
{
    struct fsm_cmd c = {.op = FSM_OP_BARRIER, .barrier = {S(name), sid, count, leave}};
    return apply_cmd(f, &c);
}

static bool is_ok(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_OK;
}

static bool is_int(struct fsm_reply r, uint64_t v)
{
    return r.kind == FSM_REPLY_INT && r.value == v;
}

static bool is_err(struct fsm_reply r, const char *word)
{
    return r.kind == FSM_REPLY_ERR && strncmp(r.err, word, strlen(word)) == 0;
}

static struct fsm_latch_view info(const struct fsm *f, const char *name)
{
    struct fsm_latch_view v;
    memset(&v, 0, sizeof(v));
    if (!fsm_latch_info(f, name, strlen(name), &v))
        v.count = 0;
    return v;
}

/* A refused step: an error of `word`, and the state byte for byte as before. */
static bool refused(struct fsm_fx *fx, struct fsm_reply (*step)(struct fsm_fx *), const char *word)
{
    buf_free(&fx->before);
    snapshot_into(fx->f, &fx->before);
    uint64_t rev = fsm_revision(fx->f);
    struct fsm_reply r = step(fx);
    if (!is_err(r, word))
        fprintf(stderr, "  got: %s\n", r.kind == FSM_REPLY_ERR ? r.err : "(not an error)");
    return is_err(r, word) && rev == fsm_revision(fx->f) && snapshot_equals(fx->f, &fx->before);
}

static uint64_t g_a, g_b, g_c; /* the sessions of the test running */

TEST_F(fsm_fx, latch_reaches_zero_after_its_count_of_countdowns)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(is_ok(create(f, "L", 2)) && is_ok(join(f, "L", a)) && is_ok(join(f, "L", b)));
    CHECK(invariants_hold(f) && restores_identically(f));
    CHECK(is_int(countdown(f, "L", a), 1) && EV.n == 0 && info(f, "L").state == FSM_LATCH_COUNTING);
    CHECK(is_int(countdown(f, "L", a), 1)); /* a joined session counts down once */
    CHECK(is_int(countdown(f, "L", b), 0) && has_event(FSM_EV_LATCH_ZERO, b));
    CHECK(info(f, "L").state == FSM_LATCH_ZERO && info(f, "L").remaining == 0);
    uint64_t rev = fsm_revision(f);
    CHECK(is_int(countdown(f, "L", b), 0) && fsm_revision(f) == rev && EV.n == 0);
    /* both counted down: their sessions may end freely */
    CHECK(is_ok(apply_expire(f, a)) && !has_event(FSM_EV_LATCH_BROKEN, 0));
    CHECK(info(f, "L").state == FSM_LATCH_ZERO);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, create_is_idempotent_for_the_same_count_only)
{
    struct fsm *f = fx->f;
    CHECK(is_ok(create(f, "L", 3)));
    uint64_t rev = fsm_revision(f);
    CHECK(is_ok(create(f, "L", 3)) && fsm_revision(f) == rev);
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(is_err(create(f, "L", 4), "ERR") && snapshot_equals(f, &fx->before));
    CHECK(is_err(create(f, "Z", 0), "ERR") &&
          is_err(create(f, "Z", FSM_MAX_LATCH_COUNT + 1), "ERR"));
    CHECK(snapshot_equals(f, &fx->before));
    uint64_t a = open_session(f, 10000, 0);
    CHECK(is_int(barrier(f, "B", a, 2, false), 1));
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(is_err(create(f, "B", 2), "WRONGTYPE") && snapshot_equals(f, &fx->before));
    CHECK(is_err(barrier(f, "L", a, 3, false), "WRONGTYPE") && snapshot_equals(f, &fx->before));
}

static struct fsm_reply join_c(struct fsm_fx *fx)
{
    return join(fx->f, "L", g_c);
}

static struct fsm_reply anon_c(struct fsm_fx *fx)
{
    return countdown(fx->f, "L", g_c);
}

/* Promises never exceed the counts left, so the joiners alone can finish; an anonymous
 * count-down (a session that did not join) takes only a count nobody promised. */
TEST_F(fsm_fx, promises_never_exceed_the_counts_left)
{
    struct fsm *f = fx->f;
    g_a = open_session(f, 10000, 0);
    g_b = open_session(f, 10000, 0);
    g_c = open_session(f, 10000, 0);
    CHECK(is_ok(create(f, "L", 3)) && is_ok(join(f, "L", g_a)) && is_ok(join(f, "L", g_b)));
    CHECK(is_int(countdown(f, "L", g_c), 2)); /* anonymous: the third count */
    CHECK(refused(fx, anon_c, "ERR"));        /* the two left are promised */
    CHECK(refused(fx, join_c, "ERR"));        /* nothing left to promise */
    CHECK(is_ok(join(f, "L", g_a)));          /* joining twice: no change */
    CHECK(info(f, "L").n_parts == 2);
    CHECK(is_int(countdown(f, "L", g_a), 1) && is_int(countdown(f, "L", g_b), 0));
    CHECK(refused(fx, join_c, "ERR")); /* at zero */
    CHECK(invariants_hold(f) && restores_identically(f));
}

static struct fsm_reply countdown_a(struct fsm_fx *fx)
{
    return countdown(fx->f, "L", g_a);
}

static struct fsm_reply create_same(struct fsm_fx *fx)
{
    return create(fx->f, "L", 2);
}

/* The heart of it: a joined session that ends before counting down breaks the latch, by close,
 * expiry or revoke; every later step answers BROKEN (naming the session) until DELETE. */
TEST_F(fsm_fx, a_joined_session_that_ends_before_counting_down_breaks_the_latch)
{
    static const uint8_t ends[] = {FSM_OP_SESSION_CLOSE, FSM_OP_SESSION_EXPIRE,
                                   FSM_OP_SESSION_REVOKE};
    for (size_t i = 0; i < sizeof(ends); i++) {
        struct fsm *f = fx->f;
        g_a = open_session(f, 10000, 0);
        g_b = open_session(f, 10000, 0);
        CHECK(is_ok(create(f, "L", 2)) && is_ok(join(f, "L", g_a)) && is_ok(join(f, "L", g_b)));
        CHECK(is_int(countdown(f, "L", g_a), 1));
        struct fsm_cmd end = {.op = ends[i], .session_close = {g_b}};
        CHECK(is_ok(apply_cmd(f, &end)) && has_event(FSM_EV_LATCH_BROKEN, g_b));
        struct fsm_latch_view v = info(f, "L");
        CHECK(v.state == FSM_LATCH_BROKEN && v.broken_sid == g_b && v.remaining == 1);
        CHECK(invariants_hold(f) && restores_identically(f));
        CHECK(refused(fx, countdown_a, "BROKEN latch L: session"));
        CHECK(refused(fx, create_same, "BROKEN"));
        char want[64];
        snprintf(want, sizeof(want), "BROKEN latch L: session %llu ended before counting down",
                 (unsigned long long)g_b);
        CHECK(strcmp(countdown(f, "L", g_a).err, want) == 0);
        CHECK(is_int(del(f, "L"), 1) && has_event(FSM_EV_LATCH_DELETED, 0));
        CHECK(is_int(del(f, "L"), 0) && !fsm_latch_info(f, "L", 1, &v));
        CHECK(is_ok(create(f, "L", 2))); /* recreated, fresh */
        CHECK(info(f, "L").state == FSM_LATCH_COUNTING && info(f, "L").remaining == 2);
        CHECK(is_int(del(f, "L"), 1) && is_ok(apply_close(f, g_a)));
        CHECK(invariants_hold(f));
    }
}

/* A session in several latches breaks each it promised, in name order, and no other. */
TEST_F(fsm_fx, an_ending_session_breaks_only_the_latches_it_still_owes)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    CHECK(is_ok(create(f, "Y", 1)) && is_ok(create(f, "X", 1)) && is_ok(create(f, "W", 2)));
    CHECK(is_ok(join(f, "Y", a)) && is_ok(join(f, "X", a)) && is_ok(join(f, "W", a)));
    CHECK(is_int(countdown(f, "W", a), 1));
    CHECK(is_ok(apply_expire(f, a)));
    CHECK(info(f, "X").state == FSM_LATCH_BROKEN && info(f, "Y").state == FSM_LATCH_BROKEN);
    CHECK(info(f, "W").state == FSM_LATCH_COUNTING && info(f, "W").n_parts == 0);
    size_t x = EV.n, y = EV.n;
    for (size_t i = 0; i < EV.n; i++) {
        if (EV.ev[i].type == FSM_EV_LATCH_BROKEN && EV.ev[i].name.p[0] == 'X')
            x = i;
        if (EV.ev[i].type == FSM_EV_LATCH_BROKEN && EV.ev[i].name.p[0] == 'Y')
            y = i;
    }
    CHECK(x < y && y < EV.n);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Curator's double barrier: enter returns when count are inside, leave when all left. */
TEST_F(fsm_fx, barrier_fills_then_empties)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t c = open_session(f, 10000, 0);
    CHECK(is_int(barrier(f, "B", a, 2, false), 1) && EV.n == 0);
    CHECK(is_int(barrier(f, "B", a, 2, false), 1)); /* again: no change */
    CHECK(invariants_hold(f) && restores_identically(f));
    CHECK(is_ok(barrier(f, "B", b, 2, false)) && has_event(FSM_EV_BARRIER_FULL, b));
    CHECK(info(f, "B").state == FSM_LATCH_ZERO && info(f, "B").remaining == 2);
    CHECK(is_ok(barrier(f, "B", a, 2, false)));         /* inside, full: OK */
    CHECK(is_err(barrier(f, "B", c, 2, false), "ERR")); /* full: no newcomer */
    uint64_t rev = fsm_revision(f); /* not inside: answered as a leave, nothing changes */
    CHECK(is_int(barrier(f, "B", c, 0, true), 2) && fsm_revision(f) == rev);
    CHECK(invariants_hold(f) && restores_identically(f));
    CHECK(is_int(barrier(f, "B", a, 0, true), 1) && EV.n == 0); /* b is still inside */
    CHECK(is_ok(apply_expire(f, a)) && !has_event(FSM_EV_BARRIER_BROKEN, 0)); /* a left */
    CHECK(is_ok(barrier(f, "B", b, 0, true)) && has_event(FSM_EV_BARRIER_DONE, b));
    CHECK(has_event(FSM_EV_LATCH_DELETED, 0) && info(f, "B").count == 0);
    CHECK(is_ok(barrier(f, "B", b, 0, true))); /* a retry after everybody left */
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, leaving_a_filling_barrier_withdraws)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(is_int(barrier(f, "B", a, 3, false), 2) && is_int(barrier(f, "B", b, 3, false), 1));
    CHECK(is_ok(barrier(f, "B", a, 0, true)) && info(f, "B").remaining == 2);
    CHECK(is_ok(apply_close(f, a)) && info(f, "B").state == FSM_LATCH_COUNTING);
    CHECK(is_ok(barrier(f, "B", b, 0, true)) && has_event(FSM_EV_LATCH_DELETED, 0));
    CHECK(!has_event(FSM_EV_BARRIER_DONE, 0) && info(f, "B").count == 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_session_that_ends_inside_breaks_the_barrier)
{
    struct fsm *f = fx->f;
    /* while filling */
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(is_int(barrier(f, "F", a, 3, false), 2) && is_int(barrier(f, "F", b, 3, false), 1));
    CHECK(is_ok(apply_expire(f, a)) && has_event(FSM_EV_BARRIER_BROKEN, a));
    CHECK(is_err(barrier(f, "F", b, 0, true), "BROKEN barrier F"));
    uint64_t c = open_session(f, 10000, 0);
    CHECK(is_err(barrier(f, "F", c, 3, false), "BROKEN"));
    CHECK(invariants_hold(f) && restores_identically(f));
    /* while full */
    CHECK(is_int(barrier(f, "G", b, 2, false), 1) && is_ok(barrier(f, "G", c, 2, false)));
    CHECK(is_ok(apply_close(f, c)) && has_event(FSM_EV_BARRIER_BROKEN, c));
    CHECK(info(f, "G").state == FSM_LATCH_BROKEN && info(f, "G").broken_sid == c);
    CHECK(is_err(barrier(f, "G", b, 0, true), "BROKEN"));
    CHECK(is_int(del(f, "G"), 1) && is_int(del(f, "F"), 1));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, steps_of_a_session_that_does_not_exist_change_nothing)
{
    struct fsm *f = fx->f;
    CHECK(is_ok(create(f, "L", 1)));
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(is_err(join(f, "L", 999), "NOSESSION") && is_err(countdown(f, "L", 999), "NOSESSION"));
    CHECK(is_err(barrier(f, "B", 999, 1, false), "NOSESSION"));
    uint64_t a = open_session(f, 10000, 0);
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(is_err(join(f, "M", a), "ERR") && is_err(barrier(f, "B", a, 1, 7), "ERR"));
    CHECK(is_ok(barrier(f, "B", a, 0, true)) && snapshot_equals(f, &fx->before));
}

/* The section is written only while a latch or barrier exists (else the snapshot is as
 * before, version 7 or older); restore refuses what emit cannot write. */
TEST_F(fsm_fx, snapshot_section_only_while_latches_exist)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(is_ok(create(f, "L", 2)) && is_ok(join(f, "L", a)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(fx->scratch[0].len > fx->before.len && restores_identically(f));
    CHECK(is_int(del(f, "L"), 1));
    snapshot_into(f, &fx->scratch[1]);
    /* the version byte: 8 only while the section is there, the base version before and after */
    CHECK(fx->before.p[4] < 8 && fx->scratch[0].p[4] == 8 &&
          fx->scratch[1].p[4] == fx->before.p[4]);
    /* every truncation of the section refuses (the restore is total) */
    for (size_t n = fx->before.len; n < fx->scratch[0].len; n++)
        CHECK(!restores((const uint8_t *)fx->scratch[0].p, n));
}

int main(void)
{
    RUN_F(fsm_fx, latch_reaches_zero_after_its_count_of_countdowns);
    RUN_F(fsm_fx, create_is_idempotent_for_the_same_count_only);
    RUN_F(fsm_fx, promises_never_exceed_the_counts_left);
    RUN_F(fsm_fx, a_joined_session_that_ends_before_counting_down_breaks_the_latch);
    RUN_F(fsm_fx, an_ending_session_breaks_only_the_latches_it_still_owes);
    RUN_F(fsm_fx, barrier_fills_then_empties);
    RUN_F(fsm_fx, leaving_a_filling_barrier_withdraws);
    RUN_F(fsm_fx, a_session_that_ends_inside_breaks_the_barrier);
    RUN_F(fsm_fx, steps_of_a_session_that_does_not_exist_change_nothing);
    RUN_F(fsm_fx, snapshot_section_only_while_latches_exist);
    TEST_MAIN_END();
}
