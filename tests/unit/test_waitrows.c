/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_waitrows — the one reader of the wait-for rows (src/server/cmd/waitrows.h) that LOCK.WAITS,
 * LOCK.INFO, GET /v1/waits and GET /v1/locks/{name} answer from: one row per queued request in
 * FIFO order with the sessions it waits for (the lists of fsm_waiter_waits_for, read in one pass),
 * a reply's budget of sids shared by its reads and only going down, the rows past it marked cut;
 * the rows' sids are the waiter list whatever the budget (LOCK.INFO's `waiters` come from them).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/waitgraph.h"
#include "fsm_fixture.h"
#include "server/cmd/waitrows.h"

/* The FSM fixture and two row sets, freed whatever a test did. */
struct wr_fx {
    struct fsm_fx fx;
    struct wait_rows w[2];
};

static int wr_fx_setup(struct wr_fx *x)
{
    memset(x->w, 0, sizeof(x->w));
    return fsm_fx_setup(&x->fx);
}

static void wr_fx_teardown(struct wr_fx *x)
{
    waitrows_free(&x->w[0]);
    waitrows_free(&x->w[1]);
    fsm_fx_teardown(&x->fx);
}

/* Row i's list is exactly want[0..n). */
static int row_is(const struct wait_rows *x, size_t i, const uint64_t *want, size_t n)
{
    if (i >= x->n || x->r[i].n != n)
        return 0;
    const uint64_t *v = waitrows_sids(x, i);
    for (size_t k = 0; k < n; k++)
        if (v[k] != want[k])
            return 0;
    return 1;
}

/* fsm_waiter_waits_for's answer for one waiter (the per-waiter reader: the oracle here). */
struct oracle {
    uint64_t v[32];
    size_t n;
    bool any;
};

static void oracle_add(void *arg, uint64_t sid, bool any)
{
    struct oracle *o = arg;
    if (o->n < 32)
        o->v[o->n++] = sid;
    o->any = o->any || any;
}

TEST_F(wr_fx, a_shared_run_lists_each_reader_once_and_the_writer_all_of_them)
{
    struct fsm *f = fx->fx.f;
    uint64_t h = open_session(f, 10000, 0), r[3], w = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "q", h, 0)));
    for (int i = 0; i < 3; i++) {
        r[i] = open_session(f, 10000, 0);
        CHECK_EQ_U64(apply_lock_shared(f, "q", r[i], 5000).kind, FSM_REPLY_QUEUED);
    }
    CHECK_EQ_U64(apply_lock(f, "q", w, 5000).kind, FSM_REPLY_QUEUED);
    uint64_t late = open_session(f, 10000, 0);
    CHECK_EQ_U64(apply_lock_shared(f, "q", late, 5000).kind, FSM_REPLY_QUEUED);
    size_t left = 100;
    waitrows_read(f, "q", 1, &left, &fx->w[0]);
    const struct wait_rows *x = &fx->w[0];
    CHECK_EQ_U64(x->n, 5);
    CHECK(row_is(x, 0, &h, 1) && row_is(x, 1, &h, 1) && row_is(x, 2, &h, 1));
    CHECK(row_is(x, 4, &w, 1));
    /* the writer: the holder, then the readers ahead of it (the walk goes back from it) */
    const uint64_t *v = waitrows_sids(x, 3);
    CHECK(x->r[3].n == 4 && v[0] == h);
    CHECK(v[1] + v[2] + v[3] == r[0] + r[1] + r[2] && v[1] != v[2] && v[2] != v[3] &&
          v[1] != v[3] && v[1] >= r[0] && v[1] <= r[2] && v[2] >= r[0] && v[2] <= r[2] &&
          v[3] >= r[0] && v[3] <= r[2]);
    CHECK(x->r[0].sid == r[0] && x->r[3].sid == w && x->r[4].sid == late);
    CHECK(!waitrows_cut(x) && !x->r[3].any);
    CHECK_EQ_U64(left, 100 - 8); /* the sids listed came off the budget */
}

TEST_F(wr_fx, the_budget_is_shared_by_the_reads_of_one_reply_and_marks_the_cut)
{
    struct fsm *f = fx->fx.f;
    uint64_t h = open_session(f, 10000, 0), g = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "L", h, 0)) && token_of(apply_lock(f, "M", g, 0)));
    for (int i = 0; i < 4; i++)
        CHECK_EQ_U64(apply_lock_shared(f, "L", open_session(f, 10000, 0), 5000).kind,
                     FSM_REPLY_QUEUED);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_U64(apply_lock_shared(f, "M", open_session(f, 10000, 0), 5000).kind,
                     FSM_REPLY_QUEUED);
    size_t left = 3;
    waitrows_read(f, "L", 1, &left, &fx->w[0]);
    waitrows_read(f, "M", 1, &left, &fx->w[1]);
    const struct wait_rows *l = &fx->w[0], *m = &fx->w[1];
    CHECK_EQ_U64(left, 0);
    CHECK(l->n == 4 && m->n == 2); /* a row per request, listed or not */
    CHECK(row_is(l, 0, &h, 1) && row_is(l, 1, &h, 1) && row_is(l, 2, &h, 1));
    CHECK(!l->r[0].cut && !l->r[2].cut && l->r[3].cut && l->r[3].n == 0);
    CHECK(m->r[0].cut && m->r[1].cut && m->r[0].n == 0 && m->r[1].n == 0);
    CHECK(waitrows_cut(l) && waitrows_cut(m));
    /* a reply of its own starts with a budget of its own */
    waitrows_free(&fx->w[1]);
    left = 3;
    waitrows_read(f, "M", 1, &left, &fx->w[1]);
    CHECK(row_is(&fx->w[1], 0, &g, 1) && row_is(&fx->w[1], 1, &g, 1) && !waitrows_cut(&fx->w[1]));
}

TEST_F(wr_fx, an_absent_name_or_an_empty_queue_has_no_rows)
{
    struct fsm *f = fx->fx.f;
    uint64_t h = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "held", h, 0)));
    size_t left = 5;
    waitrows_read(f, "nope", 4, &left, &fx->w[0]);
    CHECK(fx->w[0].n == 0 && !waitrows_cut(&fx->w[0]));
    waitrows_read(f, "held", 4, &left, &fx->w[1]);
    CHECK(fx->w[1].n == 0 && left == 5);
    waitrows_free(&fx->w[0]); /* free twice: the fixture frees again */
}

TEST_F(wr_fx, every_row_is_what_the_per_waiter_reader_answers)
{
    struct fsm *f = fx->fx.f;
    uint64_t s[12];
    for (int i = 0; i < 12; i++)
        s[i] = open_session(f, 10000, 0);
    /* lock q: shared holders, then readers, a writer, readers, a writer */
    CHECK(token_of(apply_lock_shared(f, "q", s[0], 0)) &&
          token_of(apply_lock_shared(f, "q", s[1], 0)));
    CHECK_EQ_U64(apply_lock(f, "q", s[2], 5000).kind, FSM_REPLY_QUEUED);
    for (int i = 3; i < 6; i++)
        CHECK_EQ_U64(apply_lock_shared(f, "q", s[i], 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "q", s[6], 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock_shared(f, "q", s[7], 5000).kind, FSM_REPLY_QUEUED);
    /* a full semaphore: OR edges */
    CHECK(token_of(apply_sem_acquire(f, "pool", s[8], 2, 0)) &&
          token_of(apply_sem_acquire(f, "pool", s[9], 2, 0)));
    CHECK_EQ_U64(apply_sem_acquire(f, "pool", s[10], 2, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_sem_acquire(f, "pool", s[11], 2, 5000).kind, FSM_REPLY_QUEUED);
    const char *names[] = {"q", "pool"};
    for (int k = 0; k < 2; k++) {
        size_t left = 1000;
        struct wait_rows *x = &fx->w[k];
        waitrows_read(f, names[k], strlen(names[k]), &left, x);
        CHECK(x->n == (k ? 2u : 6u) && !waitrows_cut(x));
        for (size_t i = 0; i < x->n; i++) {
            struct oracle o = {.n = 0};
            fsm_waiter_waits_for(f, names[k], strlen(names[k]), x->r[i].sid, oracle_add, &o);
            CHECK(o.n > 0 && row_is(x, i, o.v, o.n) && x->r[i].any == o.any);
        }
    }
    CHECK(fx->w[1].r[0].any); /* the semaphore's head waits for any of its holders */
}

static void waiter_list_add(void *arg, uint64_t sid, uint64_t wait_ms)
{
    struct oracle *o = arg;
    (void)wait_ms;
    if (o->n < 32)
        o->v[o->n++] = sid;
}

/* LOCK.INFO and /v1/locks/{name} take their `waiters` from the rows (one read of the queue per
 * answer): the rows' sids are the waiter list (fsm_lock_waiters) in its order, whatever the
 * budget, one left or none. */
TEST_F(wr_fx, the_rows_sids_are_the_waiter_list_whatever_the_budget)
{
    struct fsm *f = fx->fx.f;
    uint64_t h = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "q", h, 0)));
    for (int i = 0; i < 7; i++) {
        uint64_t s = open_session(f, 10000, 0);
        CHECK_EQ_U64(
            (i % 3 ? apply_lock_shared(f, "q", s, 5000) : apply_lock(f, "q", s, 5000)).kind,
            FSM_REPLY_QUEUED);
    }
    struct oracle want = {.n = 0};
    fsm_lock_waiters(f, "q", 1, waiter_list_add, &want);
    CHECK_EQ_U64(want.n, 7);
    size_t budgets[] = {1000, 1, 0};
    for (size_t b = 0; b < 3; b++) {
        size_t left = budgets[b];
        waitrows_free(&fx->w[0]);
        waitrows_read(f, "q", 1, &left, &fx->w[0]);
        CHECK_EQ_U64(fx->w[0].n, want.n);
        for (size_t i = 0; i < want.n; i++)
            CHECK_EQ_U64(fx->w[0].r[i].sid, want.v[i]);
        CHECK(b == 0 ? !waitrows_cut(&fx->w[0]) : waitrows_cut(&fx->w[0]));
    }
}

int main(void)
{
    RUN_F(wr_fx, a_shared_run_lists_each_reader_once_and_the_writer_all_of_them);
    RUN_F(wr_fx, the_budget_is_shared_by_the_reads_of_one_reply_and_marks_the_cut);
    RUN_F(wr_fx, an_absent_name_or_an_empty_queue_has_no_rows);
    RUN_F(wr_fx, every_row_is_what_the_per_waiter_reader_answers);
    RUN_F(wr_fx, the_rows_sids_are_the_waiter_list_whatever_the_budget);
    TEST_MAIN_END();
}
