/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_wsem — weighted semaphores (src/fsm/sem.c): k permits in one acquisition with one
 * token, strict FIFO (a request for k at the head is never overtaken by a later one for fewer),
 * release of an acquisition's k, the operator's SEM_SETLIMIT (holders above a lower limit keep
 * their permits; no grant until the head fits), the weighted snapshot record, and the
 * deadlock rule with weights (a head request for k waits for holders whose permits add up to
 * in_use + k - limit).
 *
 * Every test ends with the invariant audit (in_use is the sum of the holds' permits).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/waitgraph.h"
#include "fsm_fixture.h"

static void format_2(struct fsm *f)
{
    struct fsm_cmd c = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = FSM_FORMAT_2}};
    if (apply_cmd(f, &c).kind != FSM_REPLY_OK)
        abort();
}

static struct fsm_reply acq(struct fsm *f, const char *name, uint64_t sid, uint64_t limit,
                            uint64_t permits, uint64_t wait)
{
    struct fsm_cmd c = {
        .op = FSM_OP_SEM_ACQUIRE_W,
        .sem_acquire_w = {
            .name = S(name), .sid = sid, .limit = limit, .permits = permits, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

static struct fsm_reply rel(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_RELEASE, .sem_release = {.name = S(name), .sid = sid}};
    return apply_cmd(f, &c);
}

static struct fsm_reply setlimit(struct fsm *f, const char *name, uint64_t limit)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_SETLIMIT,
                        .sem_setlimit = {.name = S(name), .limit = limit}};
    return apply_cmd(f, &c);
}

static uint64_t in_use(const struct fsm *f, const char *name)
{
    struct fsm_sem_view v;
    return fsm_sem_info(f, name, strlen(name), &v) ? v.in_use : 0;
}

static size_t n_waiters(const struct fsm *f, const char *name)
{
    struct fsm_sem_view v;
    return fsm_sem_info(f, name, strlen(name), &v) ? v.n_waiters : 0;
}

struct holds {
    uint64_t sid[8], token[8];
    uint32_t permits[8];
    size_t n;
};

static void hold_cb(void *arg, uint64_t sid, uint64_t token, uint32_t permits)
{
    struct holds *h = arg;
    if (h->n < 8) {
        h->sid[h->n] = sid;
        h->token[h->n] = token;
        h->permits[h->n++] = permits;
    }
}

/* The permits `sid` holds on `name` (0: none). */
static uint32_t permits_of(const struct fsm *f, const char *name, uint64_t sid)
{
    struct holds h = {.n = 0};
    fsm_sem_holders(f, name, strlen(name), hold_cb, &h);
    for (size_t i = 0; i < h.n; i++)
        if (h.sid[i] == sid)
            return h.permits[i];
    return 0;
}

static bool is_deadlock(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_ERR && strncmp(r.err, "DEADLOCK ", 9) == 0;
}

TEST_F(fsm_fx, k_permits_are_one_acquisition_with_one_token_and_never_over_the_limit)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(acq(f, "W", a, 5, 3, 0));
    CHECK(ta);
    CHECK_EQ_U64(in_use(f, "W"), 3);
    CHECK_EQ_U64(permits_of(f, "W", a), 3);
    CHECK(has_event(FSM_EV_GRANTED, a) && EV.n == 1);     /* one grant for the 3 permits */
    CHECK(acq(f, "W", b, 5, 3, 0).kind == FSM_REPLY_NIL); /* 3 + 3 > 5 */
    CHECK_EQ_U64(token_of(acq(f, "W", a, 5, 1, 0)), ta);  /* idempotent: the same acquisition */
    CHECK_EQ_U64(permits_of(f, "W", a), 3);
    uint64_t tc = token_of(acq(f, "W", c, 5, 2, 0));
    CHECK(tc > ta);
    CHECK_EQ_U64(in_use(f, "W"), 5);
    CHECK(rel(f, "W", a).kind == FSM_REPLY_OK); /* frees the acquisition's 3 */
    CHECK_EQ_U64(in_use(f, "W"), 2);
    CHECK(token_of(acq(f, "W", b, 5, 3, 0)));
    CHECK_EQ_U64(in_use(f, "W"), 5);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, permits_outside_1_to_the_limit_are_refused_and_change_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    snapshot_into(f, &fx->before);
    struct fsm_reply r = acq(f, "W", a, 2, 3, 1000);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "permits must be 1..2"));
    CHECK(acq(f, "W", a, 2, 0, 0).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(token_of(acq(f, "W", a, 2, 2, 0)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(acq(f, "W", b, 2, 3, 1000).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->scratch[0]));
    CHECK(invariants_hold(f));
}

/* THE FIFO RULE: only the queue's head is ever granted; a later request for fewer permits
 * waits behind it even while its own permits are free, so a large request is not starved. */
TEST_F(fsm_fx, a_head_request_for_k_is_never_overtaken_by_later_requests_for_fewer)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0), d = open_session(f, 1000, 0),
             e = open_session(f, 1000, 0);
    CHECK(token_of(acq(f, "W", a, 4, 2, 0)) && token_of(acq(f, "W", b, 4, 1, 0)));
    CHECK_EQ_U64(acq(f, "W", c, 4, 3, 5000).kind, FSM_REPLY_QUEUED); /* 3 > 1 free */
    CHECK_EQ_U64(acq(f, "W", d, 4, 1, 5000).kind, FSM_REPLY_QUEUED); /* 1 free, but c first */
    CHECK(acq(f, "W", e, 4, 1, 0).kind == FSM_REPLY_NIL);            /* nor a try */
    CHECK_EQ_U64(in_use(f, "W"), 3);
    CHECK(rel(f, "W", b).kind == FSM_REPLY_OK); /* 2 free: still not c's 3, and d waits */
    CHECK(!has_event(FSM_EV_GRANTED, c) && !has_event(FSM_EV_GRANTED, d));
    CHECK_EQ_U64(n_waiters(f, "W"), 2);
    CHECK(rel(f, "W", a).kind == FSM_REPLY_OK); /* 4 free: c (3), then d (1), in one entry */
    CHECK(has_event(FSM_EV_GRANTED, c) && has_event(FSM_EV_GRANTED, d));
    CHECK_EQ_U64(permits_of(f, "W", c), 3);
    CHECK_EQ_U64(permits_of(f, "W", d), 1);
    CHECK_EQ_U64(in_use(f, "W"), 4);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_queued_request_leaving_lets_the_next_one_in)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(acq(f, "W", a, 3, 2, 0)));
    CHECK_EQ_U64(acq(f, "W", b, 3, 3, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(acq(f, "W", c, 3, 1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(rel(f, "W", b).kind == FSM_REPLY_OK); /* b leaves the queue: c's 1 fits */
    CHECK(has_event(FSM_EV_GRANTED, c));
    CHECK_EQ_U64(in_use(f, "W"), 3);
    apply_close(f, a); /* a's 2 end with its session */
    CHECK_EQ_U64(in_use(f, "W"), 1);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_lower_limit_keeps_the_holders_permits_and_grants_nothing_until_the_head_fits)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(acq(f, "W", a, 4, 2, 0)) && token_of(acq(f, "W", b, 4, 2, 0)));
    CHECK_EQ_U64(acq(f, "W", c, 4, 1, 5000).kind, FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(setlimit(f, "W", 2).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK_EQ_U64(in_use(f, "W"), 4); /* nobody lost a permit */
    CHECK(rel(f, "W", a).kind == FSM_REPLY_OK);
    CHECK(!has_event(FSM_EV_GRANTED, c)); /* 2 in use, limit 2: c's 1 does not fit */
    CHECK(rel(f, "W", b).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, c));
    CHECK_EQ_U64(in_use(f, "W"), 1);
    /* an acquirer must now name the new limit */
    CHECK(acq(f, "W", a, 4, 1, 0).kind == FSM_REPLY_ERR);
    CHECK(token_of(acq(f, "W", a, 2, 1, 0)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_higher_limit_grants_the_queue_head_run_at_once)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(acq(f, "W", a, 2, 2, 0)));
    CHECK_EQ_U64(acq(f, "W", b, 2, 2, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(acq(f, "W", c, 2, 1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(setlimit(f, "W", 5).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, b) && has_event(FSM_EV_GRANTED, c));
    CHECK_EQ_U64(in_use(f, "W"), 5);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, setlimit_refuses_what_it_cannot_do_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(setlimit(f, "none", 3).kind == FSM_REPLY_NIL);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(acq(f, "W", a, 4, 3, 0).kind == FSM_REPLY_INT);
    CHECK_EQ_U64(acq(f, "W", b, 4, 4, 5000).kind, FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r = setlimit(f, "L", 3);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "WRONGTYPE", 9) == 0);
    r = setlimit(f, "W", 3); /* b's queued 4 could never be granted */
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "4 permits"));
    CHECK(setlimit(f, "W", 0).kind == FSM_REPLY_ERR);
    CHECK(setlimit(f, "W", FSM_MAX_SEM_LIMIT + 1ull).kind == FSM_REPLY_ERR);
    CHECK(setlimit(f, "W", 4).kind == FSM_REPLY_OK); /* the same: no revision */
    CHECK_EQ_U64(fsm_revision(f), rev);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

/* The weighted record: kind byte 3, permits after each hold and waiter; an unweighted
 * semaphore keeps the old bytes; restore takes only the canonical form. */
TEST_F(fsm_fx, the_weighted_snapshot_record_restores_identically_and_only_when_needed)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(acq(f, "W", a, 3, 1, 0)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(memmem(fx->scratch[0].p, fx->scratch[0].len, "\x01W\x01\x03", 4)); /* kind 1 */
    CHECK_EQ_U64(acq(f, "W", b, 3, 3, 5000).kind, FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->scratch[1]);
    struct buf *x = &fx->scratch[1];
    char *p = memmem(x->p, x->len, "\x01W\x03\x03", 4); /* kind 3, limit 3 */
    CHECK(p != NULL);
    CHECK(restores_identically(f));
    if (p) {
        p[2] = 1; /* claim the unweighted form: the permits bytes then do not parse */
        CHECK(!restores((const uint8_t *)x->p, x->len));
        p[2] = 3;
        p[3] = 2; /* limit 2 < b's queued 3 */
        CHECK(!restores((const uint8_t *)x->p, x->len));
        p[3] = 3;
        CHECK(restores((const uint8_t *)x->p, x->len));
    }
    CHECK(rel(f, "W", b).kind == FSM_REPLY_OK); /* all permits 1 again: the old form */
    snapshot_into(f, &fx->scratch[2]);
    x = &fx->scratch[2];
    p = memmem(x->p, x->len, "\x01W\x01\x03", 4);
    CHECK(p != NULL);
    if (p) { /* the weighted kind for an unweighted state: not canonical */
        p[2] = 3;
        CHECK(!restores((const uint8_t *)x->p, x->len));
    }
    CHECK(invariants_hold(f));
}

/* Deadlock with weights: b heads W's queue for 2 of limit 2 while a and c hold 1 each, so b
 * needs both released. a waits for b (lock l): only c can let go, which is not enough. */
TEST_F(fsm_fx, a_head_request_for_k_needs_holders_worth_k_so_one_free_holder_is_not_enough)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(acq(f, "W", a, 2, 1, 0)) && token_of(acq(f, "W", c, 2, 1, 0)));
    CHECK(token_of(apply_lock(f, "l", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "l", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    struct fsm_reply r = acq(f, "W", b, 2, 2, 5000);                  /* b -> a AND c */
    CHECK(is_deadlock(r));
    CHECK_EQ_U64(n_waiters(f, "W"), 0);
    /* for 1 permit, c's release is enough: no deadlock */
    CHECK_EQ_U64(acq(f, "W", b, 2, 1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_free_holder_with_enough_permits_alone_keeps_a_weighted_wait_legal)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(acq(f, "W", a, 4, 1, 0)) && token_of(acq(f, "W", c, 4, 3, 0)));
    CHECK(token_of(apply_lock(f, "l", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "l", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    /* b wants 3: need 3 + 4 - 4 = 3; c (free) holds 3: it can be granted once c lets go */
    CHECK_EQ_U64(acq(f, "W", b, 4, 3, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Over a lowered limit the need grows: limit 1 with 2 in use (a 1, c 1), b wants 1: need 2. */
TEST_F(fsm_fx, over_a_lowered_limit_the_head_needs_every_excess_permit_released)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(acq(f, "W", a, 2, 1, 0)) && token_of(acq(f, "W", c, 2, 1, 0)));
    CHECK(setlimit(f, "W", 1).kind == FSM_REPLY_OK);
    CHECK(token_of(apply_lock(f, "l", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "l", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    CHECK(is_deadlock(acq(f, "W", b, 1, 1, 5000)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Random steps on one semaphore: after every step the permits in use never exceed the limit
 * once a grant happened (a lowered limit aside: then no grant until it fits), only the head
 * is granted, and every invariant holds; a snapshot twin restores identically. */
#define W_SEEDS 20
#define W_STEPS 400
#define W_SESS 5

static uint64_t w_rng;
static uint64_t w_rnd(uint64_t n)
{
    w_rng = w_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (w_rng >> 33) % n;
}

TEST_F(fsm_fx, random_weighted_steps_never_grant_over_the_limit)
{
    for (uint64_t seed = 1; seed <= W_SEEDS; seed++) {
        struct fsm *f = fsm_new();
        w_rng = seed;
        format_2(f);
        uint64_t s[W_SESS], limit = 4;
        for (int i = 0; i < W_SESS; i++)
            s[i] = open_session(f, 100000, 0);
        for (int step = 0; step < W_STEPS; step++) {
            uint64_t who = s[w_rnd(W_SESS)];
            uint64_t before = in_use(f, "W");
            switch (w_rnd(5)) {
            case 0:
            case 1:
                acq(f, "W", who, limit, 1 + w_rnd(limit), w_rnd(2) ? 5000 : 0);
                break;
            case 2:
                rel(f, "W", who);
                break;
            case 3:
                if (setlimit(f, "W", 1 + w_rnd(6)).kind == FSM_REPLY_OK) {
                    struct fsm_sem_view v;
                    if (fsm_sem_info(f, "W", 1, &v))
                        limit = v.limit;
                }
                break;
            default:
                apply_close(f, who);
                for (int i = 0; i < W_SESS; i++)
                    if (s[i] == who)
                        s[i] = open_session(f, 100000, 0);
            }
            struct fsm_sem_view v;
            if (fsm_sem_info(f, "W", 1, &v)) {
                limit = v.limit;
                /* a step that granted left in_use within the limit */
                for (size_t i = 0; i < EV.n; i++)
                    if (EV.ev[i].type == FSM_EV_GRANTED)
                        CHECK(v.in_use <= v.limit);
                if (v.in_use > before)
                    CHECK(v.in_use <= v.limit);
            } else {
                limit = 1 + w_rnd(4);
            }
            if (!invariants_hold(f)) {
                CHECK(0);
                break;
            }
            if (step % 100 == 99)
                CHECK(restores_identically(f));
        }
        fsm_free(f);
    }
}

int main(void)
{
    RUN_F(fsm_fx, k_permits_are_one_acquisition_with_one_token_and_never_over_the_limit);
    RUN_F(fsm_fx, permits_outside_1_to_the_limit_are_refused_and_change_nothing);
    RUN_F(fsm_fx, a_head_request_for_k_is_never_overtaken_by_later_requests_for_fewer);
    RUN_F(fsm_fx, a_queued_request_leaving_lets_the_next_one_in);
    RUN_F(fsm_fx, a_lower_limit_keeps_the_holders_permits_and_grants_nothing_until_the_head_fits);
    RUN_F(fsm_fx, a_higher_limit_grants_the_queue_head_run_at_once);
    RUN_F(fsm_fx, setlimit_refuses_what_it_cannot_do_and_changes_nothing);
    RUN_F(fsm_fx, the_weighted_snapshot_record_restores_identically_and_only_when_needed);
    RUN_F(fsm_fx, a_head_request_for_k_needs_holders_worth_k_so_one_free_holder_is_not_enough);
    RUN_F(fsm_fx, a_free_holder_with_enough_permits_alone_keeps_a_weighted_wait_legal);
    RUN_F(fsm_fx, over_a_lowered_limit_the_head_needs_every_excess_permit_released);
    RUN_F(fsm_fx, random_weighted_steps_never_grant_over_the_limit);
    TEST_MAIN_END();
}
