/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_inforows — the one read (src/server/cmd/inforows.h) of a semaphore's queue (SEM.INFO's and
 * GET /v1/semaphores' "waiters" and "wanted") and of a latch's participants (LATCH.INFO's
 * "joiners" and "counted"): one row per queued request (per participant), in the order of the
 * FSM's own walk, with the number the second list shows, so the two lists of one answer are
 * columns of the same rows.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"
#include "server/cmd/inforows.h"

/* The FSM fixture and the row sets, freed whatever a test did. */
struct ir_fx {
    struct fsm_fx fx;
    struct info_rows q, p; /* a semaphore's queue, a latch's participants */
};

static int ir_fx_setup(struct ir_fx *x)
{
    memset(&x->q, 0, sizeof(x->q));
    memset(&x->p, 0, sizeof(x->p));
    return fsm_fx_setup(&x->fx);
}

static void ir_fx_teardown(struct ir_fx *x)
{
    inforows_free(&x->q);
    inforows_free(&x->p);
    fsm_fx_teardown(&x->fx);
}

static void format_2(struct fsm *f) /* weighted acquisitions need log format 2 */
{
    struct fsm_cmd c = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = FSM_FORMAT_2}};
    if (apply_cmd(f, &c).kind != FSM_REPLY_OK)
        abort();
}

static struct fsm_reply acq(struct fsm *f, const char *name, uint64_t sid, uint64_t limit,
                            uint64_t permits)
{
    struct fsm_cmd c = {
        .op = FSM_OP_SEM_ACQUIRE_W,
        .sem_acquire_w = {
            .name = S(name), .sid = sid, .limit = limit, .permits = permits, .wait_ms = 5000}};
    return apply_cmd(f, &c);
}

/* What the two walks the answers made before gave: fsm_lock_waiters' sids (the HTTP "waiters")
 * and fsm_sem_waiters' sids and permits (SEM.INFO's "waiters", both answers' "wanted"). */
struct walk {
    uint64_t sid[16], lsid[16], permits[16];
    size_t n, ln;
};

static void walk_sem(void *arg, uint64_t sid, uint32_t permits)
{
    struct walk *w = arg;
    if (w->n < 16) {
        w->sid[w->n] = sid;
        w->permits[w->n++] = permits;
    }
}

static void walk_lock(void *arg, uint64_t sid, uint64_t wait_ms)
{
    struct walk *w = arg;
    (void)wait_ms;
    if (w->ln < 16)
        w->lsid[w->ln++] = sid;
}

/* The rows are the old walks' lists, row by row, and as many as the view's n_waiters. */
static int rows_are_the_walks(const struct fsm *f, const char *name, const struct info_rows *q)
{
    struct walk w = {.n = 0};
    struct fsm_sem_view v;
    fsm_sem_waiters(f, name, strlen(name), walk_sem, &w);
    fsm_lock_waiters(f, name, strlen(name), walk_lock, &w);
    if (!fsm_sem_info(f, name, strlen(name), &v) || q->failed || q->n != w.n || w.n != w.ln ||
        q->n != v.n_waiters)
        return 0;
    for (size_t i = 0; i < q->n; i++)
        if (q->r[i].sid != w.sid[i] || q->r[i].sid != w.lsid[i] || q->r[i].val != w.permits[i])
            return 0;
    return 1;
}

TEST_F(ir_fx, a_semaphores_rows_are_its_queue_in_fifo_order_with_each_ask)
{
    struct fsm *f = fx->fx.f;
    format_2(f);
    uint64_t h = open_session(f, 10000, 0), s[5];
    const uint64_t ask[5] = {1, 2, 3, 1, 2};
    CHECK(token_of(acq(f, "S", h, 3, 3))); /* full: everyone after it queues */
    for (int i = 0; i < 5; i++) {
        s[i] = open_session(f, 10000, 0);
        CHECK_EQ_U64(acq(f, "S", s[i], 3, ask[i]).kind, FSM_REPLY_QUEUED);
    }
    inforows_sem_queue(f, "S", 1, &fx->q);
    CHECK_EQ_U64(fx->q.n, 5);
    for (size_t i = 0; i < 5; i++) {
        CHECK_EQ_U64(fx->q.r[i].sid, s[i]);
        CHECK_EQ_U64(fx->q.r[i].val, ask[i]);
    }
    CHECK(rows_are_the_walks(f, "S", &fx->q));

    /* one leaves the middle: the rest keep their order and their asks */
    CHECK_EQ_U64(apply_cancel_wait(f, "S", s[2]).kind, FSM_REPLY_NIL); /* the wait cancelled */
    inforows_free(&fx->q);
    inforows_sem_queue(f, "S", 1, &fx->q);
    CHECK_EQ_U64(fx->q.n, 4);
    CHECK_EQ_U64(fx->q.r[2].sid, s[3]);
    CHECK_EQ_U64(fx->q.r[2].val, 1);
    CHECK(rows_are_the_walks(f, "S", &fx->q));
    CHECK(invariants_hold(f));
}

TEST_F(ir_fx, an_absent_name_a_lock_or_a_semaphore_without_waiters_has_no_rows)
{
    struct fsm *f = fx->fx.f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    inforows_sem_queue(f, "none", 4, &fx->q);
    CHECK(fx->q.n == 0 && !fx->q.failed);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK_EQ_U64(apply_lock(f, "L", b, 5000).kind, FSM_REPLY_QUEUED);
    inforows_sem_queue(f, "L", 1, &fx->q); /* a lock's queue is not a semaphore's */
    CHECK(fx->q.n == 0 && !fx->q.failed);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 2, 0)));
    inforows_sem_queue(f, "S", 1, &fx->q);
    CHECK(fx->q.n == 0 && !fx->q.failed);
    CHECK(rows_are_the_walks(f, "S", &fx->q));
}

static struct fsm_reply latch_cmd(struct fsm *f, uint8_t op, const char *name, uint64_t x)
{
    struct fsm_cmd create = {.op = op, .latch_create = {S(name), x}};
    struct fsm_cmd join = {.op = op, .latch_join = {S(name), x}};
    struct fsm_cmd countdown = {.op = op, .latch_countdown = {S(name), x}};
    return apply_cmd(f, op == FSM_OP_LATCH_CREATE ? &create
                        : op == FSM_OP_LATCH_JOIN ? &join
                                                  : &countdown);
}

struct pwalk {
    uint64_t sid[8];
    bool done[8];
    size_t n;
};

static void walk_part(void *arg, uint64_t sid, bool done)
{
    struct pwalk *w = arg;
    if (w->n < 8) {
        w->sid[w->n] = sid;
        w->done[w->n++] = done;
    }
}

TEST_F(ir_fx, a_latchs_rows_are_its_participants_with_whether_they_counted)
{
    struct fsm *f = fx->fx.f;
    uint64_t s[3];
    CHECK_EQ_U64(latch_cmd(f, FSM_OP_LATCH_CREATE, "C", 3).kind, FSM_REPLY_OK);
    for (int i = 0; i < 3; i++) {
        s[i] = open_session(f, 10000, 0);
        CHECK(latch_cmd(f, FSM_OP_LATCH_JOIN, "C", s[i]).kind != FSM_REPLY_ERR);
    }
    CHECK(latch_cmd(f, FSM_OP_LATCH_COUNTDOWN, "C", s[1]).kind != FSM_REPLY_ERR);
    inforows_latch_parts(f, "C", 1, &fx->p);
    struct pwalk w = {.n = 0};
    fsm_latch_parts(f, "C", 1, walk_part, &w);
    struct fsm_latch_view v;
    CHECK(fsm_latch_info(f, "C", 1, &v));
    CHECK(!fx->p.failed);
    CHECK_EQ_U64(fx->p.n, 3);
    CHECK_EQ_U64(fx->p.n, v.n_parts);
    CHECK_EQ_U64(w.n, 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ_U64(fx->p.r[i].sid, w.sid[i]);
        CHECK_EQ_U64(fx->p.r[i].sid, s[i]); /* sid order: opened in that order */
        CHECK_EQ_U64(fx->p.r[i].val, i == 1);
        CHECK_EQ_U64(fx->p.r[i].val, w.done[i]);
    }
    inforows_free(&fx->p);
    inforows_latch_parts(f, "none", 4, &fx->p);
    CHECK(fx->p.n == 0 && !fx->p.failed);
}

int main(void)
{
    RUN_F(ir_fx, a_semaphores_rows_are_its_queue_in_fifo_order_with_each_ask);
    RUN_F(ir_fx, an_absent_name_a_lock_or_a_semaphore_without_waiters_has_no_rows);
    RUN_F(ir_fx, a_latchs_rows_are_its_participants_with_whether_they_counted);
    TEST_MAIN_END();
}
