/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_restore_multi — restore refuses what no log can make, where the runtime would go
 * wrong on it: a multi-request group (waiters of one session sharing an enqueue revision)
 * that LOCK_MULTI never writes (an upgrade in it; a semaphore or election waiter in it;
 * different waits), and a semaphore whose permits in use pass FSM_MAX_SEM_LIMIT (the uint32
 * sum would wrap). The invariant audit refuses the same states.
 *
 * The snapshots are hand-built: a state made through the real ops, then changed in memory the
 * way no op can (fsm/internal.h), then written by the real writer and restored into a fresh
 * state, which must refuse it and stay empty.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm_fixture.h"

static struct waiter *waiter_of(const struct fsm *f, const char *name, uint64_t sid)
{
    struct lock *l = fsm_lock_find(f, name, strlen(name));
    struct sess *s = fsm_sess_find(f, sid);
    return l && s ? fsm_waiter_find(l, s) : NULL;
}

/* f's snapshot is refused by a fresh state with an error containing `why`. */
static int restore_refused(struct fsm_fx *fx, const char *why)
{
    char err[200];
    snapshot_into(fx->f, &fx->scratch[0]);
    struct fsm *g = fsm_new();
    int rc =
        g ? fsm_restore(g, (const uint8_t *)fx->scratch[0].p, fx->scratch[0].len, err, sizeof(err))
          : 0;
    fsm_free(g);
    if (rc == 0) {
        fprintf(stderr, "  restore accepted it\n");
        return 0;
    }
    if (!strstr(err, why)) {
        fprintf(stderr, "  restore refused it for: %s\n", err);
        return 0;
    }
    return 1;
}

/* S1 holds A shared with S2 and waits to upgrade it; it also waits for B. Giving the B wait
 * the upgrade's revision makes them one "multi-request" with an upgrade in it: restored, an
 * UNLOCK of B would grant A exclusively to S1 while its shared hold stays linked. */
TEST_F(fsm_fx, a_multi_request_group_with_an_upgrade_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0),
             s3 = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock_shared(f, "A", s1, 0)) && token_of(apply_lock_shared(f, "A", s2, 0)));
    CHECK(token_of(apply_lock(f, "B", s3, 0)));
    CHECK_EQ_U64(apply_lock(f, "A", s1, 5000).kind, FSM_REPLY_QUEUED); /* the upgrade */
    CHECK_EQ_U64(apply_lock(f, "B", s1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(restores_identically(f)); /* as the log made it: fine */
    struct waiter *up = waiter_of(f, "A", s1), *wb = waiter_of(f, "B", s1);
    CHECK(up && wb);
    wb->rev = up->rev;
    CHECK(restore_refused(fx, "upgrade"));
    CHECK(!invariants_hold(f));
}

/* Waiters of one session sharing a revision on a semaphore and a lock: LOCK_MULTI takes locks
 * only. */
TEST_F(fsm_fx, a_multi_request_group_with_a_semaphore_waiter_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0);
    CHECK(token_of(apply_sem_acquire(f, "Q", s2, 1, 0)) && token_of(apply_lock(f, "R", s2, 0)));
    CHECK_EQ_U64(apply_sem_acquire(f, "Q", s1, 1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "R", s1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(restores_identically(f));
    struct waiter *wq = waiter_of(f, "Q", s1), *wr = waiter_of(f, "R", s1);
    CHECK(wq && wr);
    wr->rev = wq->rev;
    CHECK(restore_refused(fx, "semaphore or election"));
    CHECK(!invariants_hold(f));
}

/* Two lock waiters of one revision with different waits: LOCK_MULTI has one WAIT. */
TEST_F(fsm_fx, a_multi_request_group_with_two_waits_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "a", s2, 0)) && token_of(apply_lock(f, "b", s2, 0)));
    CHECK_EQ_U64(apply_lock(f, "a", s1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "b", s1, 7000).kind, FSM_REPLY_QUEUED);
    struct waiter *wa = waiter_of(f, "a", s1), *wb = waiter_of(f, "b", s1);
    CHECK(wa && wb);
    wb->rev = wa->rev;
    CHECK(restore_refused(fx, "different waits"));
    wb->wait_ms = wa->wait_ms; /* now it is what LOCK_MULTI writes: accepted */
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Permits in use past FSM_MAX_SEM_LIMIT: no limit lets a grant reach it (a lowered limit
 * leaves in_use within the old one); two holds of the largest limit each are refused. */
TEST_F(fsm_fx, permits_in_use_over_the_largest_limit_are_refused)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0);
    CHECK(token_of(apply_sem_acquire(f, "Q", s1, 2, 0)) &&
          token_of(apply_sem_acquire(f, "Q", s2, 2, 0)));
    struct lock *q = fsm_lock_find(f, "Q", 1);
    CHECK(q && q->sh_head && q->sh_head->lnext);
    q->sh_head->permits = FSM_MAX_SEM_LIMIT;
    q->sh_head->lnext->permits = FSM_MAX_SEM_LIMIT;
    q->in_use = 2 * FSM_MAX_SEM_LIMIT;
    q->limit = FSM_MAX_SEM_LIMIT;
    CHECK(restore_refused(fx, "over the largest limit"));
    CHECK(!invariants_hold(f));
    q->sh_head->lnext->permits = 1; /* the most a log can make: the limit, all in use */
    q->sh_head->permits = FSM_MAX_SEM_LIMIT - 1;
    q->in_use = FSM_MAX_SEM_LIMIT;
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* A waiting LOCK_MULTI's records are what every other path and restore make (permits 1), so a
 * replica that applied the log holds what one that restored holds. */
TEST_F(fsm_fx, a_multi_requests_waiters_are_built_as_every_other_waiter)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "a", s2, 0)));
    struct buf raw;
    buf_init(&raw);
    CHECK(fsm_names_add(&raw, "a", 1, false) == 0 && fsm_names_add(&raw, "b", 1, false) == 0);
    struct fsm_cmd c = {
        .op = FSM_OP_LOCK_MULTI,
        .lock_multi = {.sid = s1, .names = {2, {raw.p, (uint32_t)raw.len}}, .wait_ms = 5000}};
    struct fsm_reply r = apply_cmd(f, &c);
    buf_free(&raw);
    CHECK_EQ_U64(r.kind, FSM_REPLY_QUEUED);
    struct waiter *wa = waiter_of(f, "a", s1), *wb = waiter_of(f, "b", s1);
    CHECK(wa && wb);
    CHECK_EQ_U64(wa->permits, 1);
    CHECK_EQ_U64(wb->permits, 1);
    snapshot_into(f, &fx->scratch[1]);
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)fx->scratch[1].p, fx->scratch[1].len, err,
                      sizeof(err)) == 0);
    struct waiter *ga = waiter_of(fx->g, "a", s1);
    CHECK(ga && ga->permits == wa->permits && ga->shared == wa->shared && ga->rev == wa->rev);
}

int main(void)
{
    RUN_F(fsm_fx, a_multi_requests_waiters_are_built_as_every_other_waiter);
    RUN_F(fsm_fx, a_multi_request_group_with_an_upgrade_is_refused);
    RUN_F(fsm_fx, a_multi_request_group_with_a_semaphore_waiter_is_refused);
    RUN_F(fsm_fx, a_multi_request_group_with_two_waits_is_refused);
    RUN_F(fsm_fx, permits_in_use_over_the_largest_limit_are_refused);
    TEST_MAIN_END();
}
