/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_sem — counting semaphores: the limit and its mismatch, FIFO waiters, permits that
 * end with their session (close; expiry with lock-delay), release, wait cancel, WRONGTYPE
 * across kinds, fresh tokens, fencing by permit tokens, exactly-once retries and snapshots.
 *
 * One test per rule (src/fsm/sem.c); every test ends with the invariant audit (never more than
 * `limit` permits, no missed grant).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply sem_release(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_RELEASE, .sem_release = {.name = S(name), .sid = sid}};
    return apply_cmd(f, &c);
}

static size_t permits_of(const struct fsm *f, const char *name)
{
    struct fsm_sem_view v;
    return fsm_sem_info(f, name, strlen(name), &v) ? v.n_holders : 0;
}

static int put_fenced(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("k"),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(name), .fence_token = token}}};
    return apply_cmd(f, &c).kind == FSM_REPLY_INT;
}

static uint64_t granted_token(uint64_t sid)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == FSM_EV_GRANTED && EV.ev[i].sid == sid)
            return EV.ev[i].token;
    return 0;
}

TEST_F(fsm_fx, at_most_limit_permits_each_with_a_fresh_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_sem_acquire(f, "S", a, 2, 0));
    uint64_t tb = token_of(apply_sem_acquire(f, "S", b, 2, 0));
    CHECK(ta && tb > ta);
    CHECK(has_event(FSM_EV_GRANTED, b) && EV.ev[0].kind == FSM_KIND_SEM);
    CHECK(apply_sem_acquire(f, "S", c, 2, 0).kind == FSM_REPLY_NIL);
    CHECK_EQ_U64(permits_of(f, "S"), 2);
    CHECK_EQ_U64(token_of(apply_sem_acquire(f, "S", a, 2, 0)), ta); /* idempotent */
    struct fsm_sem_view v;
    CHECK(fsm_sem_info(f, "S", 1, &v) && v.limit == 2 && v.n_waiters == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_different_limit_is_refused_with_the_current_one_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 3, 0)));
    snapshot_into(f, &fx->before);
    struct fsm_reply r = apply_sem_acquire(f, "S", b, 4, 1000);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "limit 3"));
    CHECK(apply_sem_acquire(f, "S", b, 0, 0).kind == FSM_REPLY_ERR);
    CHECK(apply_sem_acquire(f, "T", b, FSM_MAX_SEM_LIMIT + 1ull, 0).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_limit_is_set_again_by_the_first_acquirer_after_the_semaphore_was_dropped)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    CHECK(fsm_kind_of(f, "S", 1) == -1);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 5, 0)));
    struct fsm_sem_view v;
    CHECK(fsm_sem_info(f, "S", 1, &v) && v.limit == 5);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, waiters_are_granted_in_fifo_order_as_permits_are_released)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0), d = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 2, 0)));
    CHECK(token_of(apply_sem_acquire(f, "S", b, 2, 0)));
    CHECK(apply_sem_acquire(f, "S", c, 2, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_sem_acquire(f, "S", d, 2, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_sem_acquire(f, "S", c, 2, 1000).kind == FSM_REPLY_QUEUED); /* keeps its place */
    CHECK(sem_release(f, "S", b).kind == FSM_REPLY_OK);
    CHECK(granted_token(c) && !granted_token(d));
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    CHECK(granted_token(d));
    CHECK_EQ_U64(permits_of(f, "S"), 2);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_newcomer_does_not_overtake_the_queue)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 50);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(apply_sem_acquire(f, "S", b, 1, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_sem_acquire(f, "S", c, 1, 0).kind == FSM_REPLY_NIL);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, close_ends_the_permit_and_grants_the_next_waiter_in_the_same_entry)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 500), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(apply_sem_acquire(f, "S", b, 1, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_RELEASED, a) && granted_token(b));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, expiry_starts_lockdelay_on_the_semaphore_and_grants_nothing_until_it_ends)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 500), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_sem_acquire(f, "S", a, 2, 0));
    CHECK(token_of(apply_sem_acquire(f, "S", b, 2, 0)));
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK(!put_fenced(f, "S", ta)); /* the expired permit's token is refused */
    CHECK(apply_sem_acquire(f, "S", c, 2, 0).kind == FSM_REPLY_NIL);
    CHECK(apply_sem_acquire(f, "S", c, 2, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lockdelay_end(f, "S").kind == FSM_REPLY_OK);
    CHECK(granted_token(c));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, fenced_writes_and_fence_check_accept_any_current_permit_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t ta = token_of(apply_sem_acquire(f, "S", a, 2, 0));
    uint64_t tb = token_of(apply_sem_acquire(f, "S", b, 2, 0));
    CHECK(put_fenced(f, "S", ta) && put_fenced(f, "S", tb));
    CHECK(fsm_fence_check(f, "S", 1, ta) == 0 && fsm_fence_check(f, "S", 1, tb) == 0);
    CHECK(!put_fenced(f, "S", tb + 1000));
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    CHECK(!put_fenced(f, "S", ta));
    CHECK(has_event(FSM_EV_FENCE_REJECTED, 0));
    CHECK(fsm_fence_check(f, "S", 1, ta) == -1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, release_by_a_waiter_leaves_the_queue_and_by_a_stranger_is_notholder)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(apply_sem_acquire(f, "S", b, 1, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(sem_release(f, "S", b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    struct fsm_reply r = sem_release(f, "S", c);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "NOTHOLDER", 9) == 0);
    r = sem_release(f, "nope", c);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "NOTHOLDER", 9) == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_wait_removes_a_waiter_or_answers_the_permit_that_won)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(apply_sem_acquire(f, "S", b, 1, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "S", b).kind == FSM_REPLY_NIL);
    CHECK(has_event(FSM_EV_WAIT_ENDED, b));
    CHECK(apply_sem_acquire(f, "S", b, 1, 1000).kind == FSM_REPLY_QUEUED);
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    uint64_t tb = granted_token(b);
    CHECK(tb && token_of(apply_cancel_wait(f, "S", b)) == tb);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_name_is_one_kind_and_other_kinds_get_wrongtype_changing_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    snapshot_into(f, &fx->before);
    struct fsm_reply r = apply_lock(f, "S", a, 0);
    CHECK(r.kind == FSM_REPLY_ERR && strcmp(r.err, "WRONGTYPE S is a semaphore") == 0);
    CHECK(apply_unlock(f, "S", a).kind == FSM_REPLY_ERR);
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("S"), .sid = a}};
    CHECK(apply_cmd(f, &sh).kind == FSM_REPLY_ERR);
    r = apply_sem_acquire(f, "L", a, 1, 0);
    CHECK(r.kind == FSM_REPLY_ERR && strcmp(r.err, "WRONGTYPE L is a lock") == 0);
    CHECK(sem_release(f, "L", a).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->before));
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "S", 1, &v) && v.kind == FSM_KIND_SEM);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_retried_acquire_after_queued_answers_the_current_truth)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 1, 0)));
    struct fsm_cmd c = {.op = FSM_OP_SEM_ACQUIRE,
                        .req_sid = b,
                        .req_seq = 1,
                        .sem_acquire = {.name = S("S"), .sid = b, .limit = 1, .wait_ms = 1000}};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    uint64_t tb = granted_token(b);
    CHECK(tb && token_of(apply_cmd(f, &c)) == tb);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, semaphores_snapshot_as_version_4_and_restore_identically)
{
    struct fsm *f = fx->f;
    uint64_t sids[6];
    build_rich(f, sids);
    snapshot_into(f, &fx->scratch[0]);
    CHECK(fx->scratch[0].p[4] < 4); /* no semaphore: an older version */
    CHECK(token_of(apply_sem_acquire(f, "S", sids[0], 2, 0)));
    CHECK(token_of(apply_sem_acquire(f, "S", sids[2], 2, 0)));
    CHECK(apply_sem_acquire(f, "S", sids[3], 2, 1000).kind == FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->scratch[1]);
    CHECK(fx->scratch[1].p[4] == 4);
    CHECK(restores_identically(f));
    for (int i = 0; i < 6; i++)
        if (sids[i] != sids[1])
            apply_close(f, sids[i]);
    CHECK(fsm_kind_of(f, "S", 1) == -1);
    snapshot_into(f, &fx->scratch[2]);
    CHECK(fx->scratch[2].p[4] < 4); /* back to the oldest version that holds the state */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_version_4_snapshot_over_the_limit_or_of_a_state_v2_can_hold_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(apply_sem_acquire(f, "S", a, 2, 0)));
    CHECK(token_of(apply_sem_acquire(f, "S", b, 2, 0)));
    snapshot_into(f, &fx->scratch[0]);
    struct buf *x = &fx->scratch[0];
    /* the limit byte follows "S" and the kind byte: make it 1 (two permits over a limit 1) */
    char *p = memmem(x->p, x->len, "\x01S\x01\x02", 4);
    CHECK(p != NULL);
    p[3] = 1;
    CHECK(!restores((const uint8_t *)x->p, x->len));
    p[3] = 2;
    CHECK(restores((const uint8_t *)x->p, x->len));
    CHECK(sem_release(f, "S", a).kind == FSM_REPLY_OK);
    CHECK(sem_release(f, "S", b).kind == FSM_REPLY_OK);
    snapshot_into(f, &fx->scratch[1]); /* v2 now; claim v4 */
    x = &fx->scratch[1];
    x->p[4] = 4;
    CHECK(!restores((const uint8_t *)x->p, x->len));
}

#define SEM_SEEDS 30
#define SEM_STEPS 600
#define SEM_SESS 6
#define SEM_TWIN_EVERY 100

static uint64_t sem_rng;
static uint64_t sem_rnd(uint64_t n)
{
    sem_rng ^= sem_rng >> 12;
    sem_rng ^= sem_rng << 25;
    sem_rng ^= sem_rng >> 27;
    return (sem_rng * 2685821657736338717ull) % n;
}

/* Semaphores, locks and elections on a few shared names (so WRONGTYPE is exercised too). */
static void sem_step(struct fsm *f, uint64_t *sids)
{
    static const char *const names[] = {"a", "b", "c"};
    int i = (int)sem_rnd(SEM_SESS);
    const char *n = names[sem_rnd(3)];
    uint64_t wait = sem_rnd(3) ? 1000 : 0;
    struct fsm_session_view v;
    if (!fsm_session_info(f, sids[i], &v)) {
        sids[i] = open_session(f, 1000, sem_rnd(2) ? 50 : 0);
        return;
    }
    struct fsm_cmd c = {
        .op = FSM_OP_ELECT_CAMPAIGN,
        .elect_campaign = {.name = S(n), .sid = sids[i], .value = S("v"), .wait_ms = wait}};
    switch (sem_rnd(10)) {
    case 0:
    case 1:
        apply_sem_acquire(f, n, sids[i], sem_rnd(8) ? 2 : 3, wait); /* 3: a mismatch */
        break;
    case 2: { /* weighted: 1..3 permits (3: over the limit 2), or the operator's limit */
        struct fsm_cmd w = {.op = FSM_OP_SEM_ACQUIRE_W,
                            .sem_acquire_w = {.name = S(n),
                                              .sid = sids[i],
                                              .limit = 2,
                                              .permits = 1 + sem_rnd(3),
                                              .wait_ms = wait}};
        struct fsm_cmd l = {.op = FSM_OP_SEM_SETLIMIT,
                            .sem_setlimit = {.name = S(n), .limit = 1 + sem_rnd(3)}};
        struct fsm_sem_view sv;
        if (sem_rnd(4) == 0) { /* and back to 2 soon, so acquirers naming 2 go on */
            apply_cmd(f, &l);
        } else {
            if (fsm_sem_info(f, n, 1, &sv) && sv.limit != 2 && sem_rnd(2)) {
                l.sem_setlimit.limit = 2;
                apply_cmd(f, &l);
            }
            apply_cmd(f, &w);
        }
        break;
    }
    case 3:
    case 4:
        sem_release(f, n, sids[i]);
        break;
    case 5:
        if (sem_rnd(2))
            apply_lock(f, n, sids[i], wait);
        else
            apply_cmd(f, &c);
        break;
    case 6:
        apply_cancel_wait(f, n, sids[i]);
        break;
    case 7:
        apply_lockdelay_end(f, n);
        break;
    case 8:
        apply_unlock(f, n, sids[i]);
        break;
    default:
        if (sem_rnd(2))
            apply_expire(f, sids[i]);
        else
            apply_close(f, sids[i]);
        break;
    }
}

TEST_F(fsm_fx, random_sequences_keep_every_invariant_and_restore_identically)
{
    for (uint64_t seed = 1; seed <= SEM_SEEDS; seed++) {
        struct fsm *f = fsm_new();
        uint64_t sids[SEM_SESS] = {0};
        sem_rng = seed * 0x9e3779b97f4a7c15ull;
        int ok = f != NULL;
        for (int step = 0; ok && step < SEM_STEPS; step++) {
            sem_step(f, sids);
            for (size_t e = 0; e < EV.n; e++) { /* a grant never leaves a semaphore over */
                struct fsm_sem_view sv;
                if (EV.ev[e].type == FSM_EV_GRANTED && EV.ev[e].kind == FSM_KIND_SEM &&
                    fsm_sem_info(f, EV.ev[e].name.p, EV.ev[e].name.len, &sv) &&
                    sv.in_use > sv.limit)
                    ok = 0;
            }
            ok = ok && invariants_hold(f) && (step % SEM_TWIN_EVERY || restores_identically(f));
            if (!ok)
                fprintf(stderr, "  seed %llu step %d\n", (unsigned long long)seed, step);
        }
        fsm_free(f);
        CHECK(ok);
    }
}

int main(void)
{
    RUN_F(fsm_fx, at_most_limit_permits_each_with_a_fresh_token);
    RUN_F(fsm_fx, a_different_limit_is_refused_with_the_current_one_and_changes_nothing);
    RUN_F(fsm_fx, the_limit_is_set_again_by_the_first_acquirer_after_the_semaphore_was_dropped);
    RUN_F(fsm_fx, waiters_are_granted_in_fifo_order_as_permits_are_released);
    RUN_F(fsm_fx, a_newcomer_does_not_overtake_the_queue);
    RUN_F(fsm_fx, close_ends_the_permit_and_grants_the_next_waiter_in_the_same_entry);
    RUN_F(fsm_fx, expiry_starts_lockdelay_on_the_semaphore_and_grants_nothing_until_it_ends);
    RUN_F(fsm_fx, fenced_writes_and_fence_check_accept_any_current_permit_token);
    RUN_F(fsm_fx, release_by_a_waiter_leaves_the_queue_and_by_a_stranger_is_notholder);
    RUN_F(fsm_fx, cancel_wait_removes_a_waiter_or_answers_the_permit_that_won);
    RUN_F(fsm_fx, a_name_is_one_kind_and_other_kinds_get_wrongtype_changing_nothing);
    RUN_F(fsm_fx, a_retried_acquire_after_queued_answers_the_current_truth);
    RUN_F(fsm_fx, semaphores_snapshot_as_version_4_and_restore_identically);
    RUN_F(fsm_fx, a_version_4_snapshot_over_the_limit_or_of_a_state_v2_can_hold_is_refused);
    RUN_F(fsm_fx, random_sequences_keep_every_invariant_and_restore_identically);
    TEST_MAIN_END();
}
