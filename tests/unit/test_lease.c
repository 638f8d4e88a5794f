/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lease — the leader's deadline rules (src/server/lease/lease.c) with a fake clock: every test
 * passes `now` by hand and asserts the exact deadlines and actions.
 */
#include <stdlib.h>

#include "server/lease/lease.h"
#include "test.h"

#define CK_MIN 1000 /* sessions with a TTL of at least this get checkpoints */

static struct lease L; /* set up and freed around each test by RUN_LEASE */

#define RUN_LEASE(name)                                                                            \
    do {                                                                                           \
        lease_init(&L, CK_MIN);                                                                    \
        RUN(name);                                                                                 \
        lease_free(&L);                                                                            \
    } while (0)

static uint64_t ck_value; /* what the fake FSM reports as a session's checkpoint */

static uint64_t fake_checkpoint(void *arg, uint64_t sid)
{
    (void)arg;
    (void)sid;
    return ck_value;
}

static void take_over(uint64_t now)
{
    lease_takeover(&L, now, fake_checkpoint, NULL);
}

/* The next due action at `now`, which must exist and be of `kind`. */
#define EXPECT_ACTION(now, k, a)                                                                   \
    do {                                                                                           \
        CHECK(lease_next(&L, (now), &(a)));                                                        \
        CHECK_EQ_U64((a).kind, (k));                                                               \
    } while (0)

TEST(test_nothing_fires_before_takeover)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 7, 100, 0) == 0);
    CHECK(!lease_next(&L, 1000, &a));
    CHECK_EQ_U64(lease_next_deadline(&L), 100);
}

TEST(test_fresh_ttl_at_takeover)
{
    struct lease_action a;
    ck_value = 0;
    CHECK(lease_session_opened(&L, 7, 100, 0) == 0);
    take_over(5000); /* the old deadline (100) has long passed: it restarts at full length */
    CHECK_EQ_U64(lease_next_deadline(&L), 5100);
    CHECK(!lease_next(&L, 5099, &a));
    EXPECT_ACTION(5100, LEASE_SESSION, a);
    CHECK_EQ_U64(a.sid, 7);
    CHECK(!lease_session_live(&L, 7)); /* its expiry is in flight */
}

TEST(test_checkpoint_half_way_through_idle_lease)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 3, 2000, 0) == 0);
    take_over(0);
    CHECK(!lease_next(&L, 999, &a));
    EXPECT_ACTION(1000, LEASE_CHECKPOINT, a);
    CHECK_EQ_U64(a.sid, 3);
    CHECK_EQ_U64(a.remaining_ms, 1000);
    CHECK(lease_session_live(&L, 3)); /* a checkpoint does not end anything */
    CHECK_EQ_U64(lease_next_deadline(&L), 2000);
}

TEST(test_short_ttl_gets_no_checkpoint)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 3, CK_MIN - 1, 0) == 0);
    take_over(0);
    EXPECT_ACTION(CK_MIN - 1, LEASE_SESSION, a);
    CHECK(!lease_next(&L, 100000, &a));
}

TEST(test_checkpointed_remainder_at_takeover)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 9, 4000, 0) == 0);
    ck_value = 600; /* an earlier leader measured 600 ms left */
    take_over(10000);
    ck_value = 0;
    EXPECT_ACTION(10300, LEASE_CHECKPOINT, a); /* half of the remainder */
    CHECK_EQ_U64(a.remaining_ms, 300);
    CHECK(!lease_next(&L, 10599, &a));
    EXPECT_ACTION(10600, LEASE_SESSION, a);
}

TEST(test_checkpoint_longer_than_ttl_is_ignored)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 9, 2000, 0) == 0);
    ck_value = 5000;
    take_over(100);
    ck_value = 0;
    EXPECT_ACTION(1100, LEASE_CHECKPOINT, a);
    EXPECT_ACTION(2100, LEASE_SESSION, a);
}

TEST(test_keepalive_restarts_the_lease)
{
    struct lease_action a;
    uint64_t ttl = 0;
    CHECK(lease_session_opened(&L, 4, 2000, 0) == 0);
    take_over(0);
    CHECK_EQ_U64(lease_keepalive(&L, 4, false, 900, &ttl), LEASE_KA_ANSWER);
    CHECK_EQ_U64(ttl, 2000);
    CHECK_EQ_U64(lease_session_remaining(&L, 4, 900), 2000);
    CHECK(!lease_next(&L, 1899, &a)); /* the checkpoint moved to 900 + 1000 */
    EXPECT_ACTION(1900, LEASE_CHECKPOINT, a);
    CHECK_EQ_U64(a.remaining_ms, 1000);
    EXPECT_ACTION(2900, LEASE_SESSION, a);
}

TEST(test_keepalive_after_checkpoint_waits_for_clearing_checkpoint)
{
    uint64_t ttl = 0;
    CHECK(lease_session_opened(&L, 4, 2000, 0) == 0);
    take_over(0);
    /* the FSM holds a checkpoint: a clearing one must commit before the answer */
    CHECK_EQ_U64(lease_keepalive(&L, 4, true, 10, &ttl), LEASE_KA_CLEAR);
    CHECK_EQ_U64(ttl, 2000);
    /* a checkpoint in flight (not yet in the FSM) counts the same */
    lease_checkpoint_proposed(&L, 4);
    CHECK_EQ_U64(lease_keepalive(&L, 4, false, 20, &ttl), LEASE_KA_CLEAR);
    lease_checkpoint_done(&L, 4);
    CHECK_EQ_U64(lease_keepalive(&L, 4, false, 30, &ttl), LEASE_KA_ANSWER);
    CHECK_EQ_U64(lease_session_remaining(&L, 4, 30), 2000);
}

TEST(test_keepalive_of_unknown_or_expiring_session_is_refused)
{
    struct lease_action a;
    uint64_t ttl = 0;
    CHECK_EQ_U64(lease_keepalive(&L, 99, false, 0, &ttl), LEASE_KA_NOSESSION);
    CHECK(lease_session_opened(&L, 5, 100, 0) == 0);
    take_over(0);
    EXPECT_ACTION(100, LEASE_SESSION, a);
    CHECK_EQ_U64(lease_keepalive(&L, 5, false, 100, &ttl), LEASE_KA_NOSESSION);
    CHECK_EQ_U64(lease_session_remaining(&L, 5, 100), 0);
}

TEST(test_expiry_retried_after_failed_proposal)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 5, 100, 0) == 0);
    take_over(0);
    EXPECT_ACTION(100, LEASE_SESSION, a);
    lease_duty_failed(&L, LEASE_SESSION, 5, NULL, 0, 103);
    CHECK(lease_session_live(&L, 5)); /* no longer in flight */
    CHECK(!lease_next(&L, 103 + LEASE_RETRY_MS - 1, &a));
    EXPECT_ACTION(103 + LEASE_RETRY_MS, LEASE_SESSION, a);
    CHECK_EQ_U64(a.sid, 5);
}

TEST(test_expiry_retried_when_proposal_cannot_be_made)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 5, 100, 0) == 0);
    take_over(0);
    EXPECT_ACTION(100, LEASE_SESSION, a);
    lease_propose_failed(&L, &a, 100);
    CHECK(!lease_session_live(&L, 5)); /* still counts as expiring meanwhile */
    CHECK(!lease_next(&L, 100 + LEASE_RETRY_MS - 1, &a));
    EXPECT_ACTION(100 + LEASE_RETRY_MS, LEASE_SESSION, a);
}

TEST(test_session_end_drops_its_deadlines)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 5, 2000, 0) == 0);
    take_over(0);
    lease_session_ended(&L, 5);
    CHECK(!lease_next(&L, 100000, &a));
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);
    lease_duty_failed(&L, LEASE_SESSION, 5, NULL, 0, 10); /* a late failure finds nothing */
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);
}

TEST(test_wait_bound)
{
    struct lease_action a;
    take_over(0);
    CHECK(lease_wait_started(&L, "job", 3, 8, 500, 100) == 0);
    CHECK(!lease_next(&L, 599, &a));
    EXPECT_ACTION(600, LEASE_WAIT, a);
    CHECK_EQ_U64(a.sid, 8);
    CHECK_EQ_U64(a.namelen, 3);
    CHECK(memcmp(a.name, "job", 3) == 0);
    CHECK_EQ_U64(a.keylen, 3 + 8);
    /* the cancel failed: tried again, as for an expiry */
    lease_duty_failed(&L, LEASE_WAIT, a.sid, a.key, a.keylen, 601);
    EXPECT_ACTION(601 + LEASE_RETRY_MS, LEASE_WAIT, a);
    CHECK_EQ_U64(lease_wait_ended(&L, "job", 3, 8, 700), 600); /* waited since 100 */
    CHECK_EQ_U64((uint64_t)lease_wait_ended(&L, "job", 3, 8, 700), (uint64_t)-1);
}

TEST(test_wait_refresh_takes_the_new_bound)
{
    struct lease_action a;
    take_over(0);
    CHECK(lease_wait_started(&L, "job", 3, 8, 500, 0) == 0);
    CHECK(lease_wait_refresh(&L, "job", 3, 8, 2000, 400) == 0);
    CHECK(!lease_next(&L, 2399, &a));
    EXPECT_ACTION(2400, LEASE_WAIT, a);
    /* a refresh of an unknown wait starts one */
    CHECK(lease_wait_refresh(&L, "other", 5, 1, 50, 3000) == 0);
    EXPECT_ACTION(3050, LEASE_WAIT, a);
    CHECK_EQ_U64(a.sid, 1);
}

TEST(test_lockdelay_lifted)
{
    struct lease_action a;
    take_over(0);
    CHECK(lease_delay_started(&L, "res", 3, 300, 50) == 0);
    CHECK(!lease_next(&L, 349, &a));
    EXPECT_ACTION(350, LEASE_DELAY, a);
    CHECK_EQ_U64(a.namelen, 3);
    CHECK(memcmp(a.name, "res", 3) == 0);
    lease_propose_failed(&L, &a, 350);
    EXPECT_ACTION(350 + LEASE_RETRY_MS, LEASE_DELAY, a);
    lease_delay_ended(&L, "res", 3);
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);
}

TEST(test_step_down_stops_actions_and_retries)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 5, 100, 0) == 0);
    CHECK(lease_delay_started(&L, "res", 3, 300, 0) == 0);
    take_over(0);
    EXPECT_ACTION(100, LEASE_SESSION, a);
    lease_step_down(&L);
    CHECK(!lease_next(&L, 100000, &a)); /* the lock-delay is due but nothing fires */
    lease_duty_failed(&L, LEASE_SESSION, 5, NULL, 0, 101);
    CHECK(!lease_session_live(&L, 5)); /* not retried: the next takeover restarts it */
    take_over(200000);
    CHECK(lease_session_live(&L, 5));
    CHECK(!lease_next(&L, 200099, &a));
    EXPECT_ACTION(200100, LEASE_SESSION, a);
    EXPECT_ACTION(200300, LEASE_DELAY, a);
}

TEST(test_checkpoint_skipped_when_expiry_due)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 6, 2000, 0) == 0);
    take_over(0);
    /* both are due at 2500: the checkpoint (1000) would record nothing left, so only the
     * expiry is proposed */
    EXPECT_ACTION(2500, LEASE_SESSION, a);
    CHECK(!lease_next(&L, 2500, &a));
}

TEST(test_repair_requeues_at_full_length)
{
    struct lease_action a;
    CHECK(lease_session_opened(&L, 6, 500, 0) == 0);
    take_over(0);
    /* as if arming had failed: the entry is known but its deadline is not queued */
    struct lease_sess *e = (struct lease_sess *)lease_session(&L, 6);
    heap_remove(&L.timers, &e->t);
    L.damaged = true;
    CHECK(lease_damaged(&L));
    lease_repair(&L, 1000);
    CHECK(!lease_damaged(&L));
    CHECK(!lease_next(&L, 1499, &a)); /* later than the lost deadline (500), never earlier */
    EXPECT_ACTION(1500, LEASE_SESSION, a);
    CHECK(lease_session_ensure(&L, 6, 500, 2000) == 0); /* known: unchanged */
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);  /* (its expiry is in flight) */
    CHECK(lease_session_ensure(&L, 7, 500, 2000) == 0); /* missing: added */
    EXPECT_ACTION(2500, LEASE_SESSION, a);
    CHECK_EQ_U64(a.sid, 7);
}

/* A revoke deadline proposes the end of its grant; the leader reads what is left of it (what it
 * merges a second revoke with); a second revoke of the same grant restarts it at the FSM's new
 * deadline; the end of the grant drops it; a new leader restarts it at the stored length. */
TEST(test_revoke_deadline_left_restart_and_of_its_grant)
{
    struct lease_action a;
    uint64_t left = 0;
    take_over(0);
    CHECK(lease_revoke_started(&L, "L", 1, 42, 1000, 0) == 0);
    CHECK(lease_revoke_left(&L, "L", 1, 42, 400, &left) && left == 600);
    CHECK(!lease_revoke_left(&L, "L", 1, 41, 400, &left)); /* another grant's */
    CHECK(!lease_revoke_left(&L, "M", 1, 42, 400, &left));
    CHECK(lease_revoke_started(&L, "L", 1, 42, 600, 400) == 0); /* merged: what was left */
    CHECK_EQ_U64(lease_next_deadline(&L), 1000);
    CHECK(lease_revoke_started(&L, "L", 1, 42, 300, 500) == 0); /* shorter: from its apply */
    CHECK_EQ_U64(lease_next_deadline(&L), 800);
    lease_revoke_ended(&L, "L", 1, 41); /* another grant's release leaves it */
    CHECK(!lease_next(&L, 799, &a));
    EXPECT_ACTION(800, LEASE_REVOKE, a);
    CHECK_EQ_U64(a.token, 42);
    CHECK(a.namelen == 1 && a.name[0] == 'L');
    CHECK(!lease_revoke_left(&L, "L", 1, 42, 800, &left)); /* its end is in flight */
    lease_step_down(&L);
    CHECK(!lease_revoke_left(&L, "L", 1, 42, 800, &left)); /* not leading */
    take_over(10000); /* a new leader: the stored length from now */
    CHECK_EQ_U64(lease_next_deadline(&L), 10300);
    CHECK(lease_revoke_left(&L, "L", 1, 42, 10100, &left) && left == 200);
    CHECK(lease_revoke_left(&L, "L", 1, 42, 10900, &left) && left == 1); /* due: at least 1 */
    lease_revoke_ended(&L, "L", 1, 42);
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);
}

/* A max hold is armed when the grant applies on this node and a takeover keeps that deadline:
 * the new leader never ends the grant later than the deadline it armed as a follower (nor
 * earlier). One already popped while this node led before is due at once (harmless if stale);
 * the grant's end drops it; a re-derivation (restore, repair) arms the full length from then. */
TEST(test_maxhold_deadline_kept_across_takeover)
{
    struct lease_action a;
    CHECK(lease_maxhold_started(&L, "M", 1, 42, 5000, 1000) == 0); /* applied as a follower */
    CHECK(!lease_next(&L, 9000, &a));                              /* nothing fires until leading */
    take_over(4000);
    CHECK_EQ_U64(lease_next_deadline(&L), 6000); /* not 9000: the bound is not extended */
    CHECK(!lease_next(&L, 5999, &a));
    EXPECT_ACTION(6000, LEASE_MAXHOLD, a);
    CHECK_EQ_U64(a.token, 42);
    CHECK(a.namelen == 1 && a.name[0] == 'M');
    lease_step_down(&L); /* its MAXHOLD_END was in flight when this node lost leadership */
    take_over(7000);
    EXPECT_ACTION(7000, LEASE_MAXHOLD, a); /* due at once */
    lease_maxhold_ended(&L, "M", 1, 42);
    CHECK_EQ_U64(lease_next_deadline(&L), UINT64_MAX);
    CHECK(lease_maxhold_ensure(&L, "N", 1, 50, 3000, 8000) == 0);
    CHECK(lease_maxhold_ensure(&L, "N", 1, 50, 3000, 9000) == 0); /* known: unchanged */
    CHECK_EQ_U64(lease_next_deadline(&L), 11000);
    lease_maxhold_ended(&L, "N", 1, 49); /* another grant's end: not this one */
    CHECK_EQ_U64(lease_next_deadline(&L), 11000);
}

int main(void)
{
    RUN_LEASE(test_nothing_fires_before_takeover);
    RUN_LEASE(test_fresh_ttl_at_takeover);
    RUN_LEASE(test_checkpoint_half_way_through_idle_lease);
    RUN_LEASE(test_short_ttl_gets_no_checkpoint);
    RUN_LEASE(test_checkpointed_remainder_at_takeover);
    RUN_LEASE(test_checkpoint_longer_than_ttl_is_ignored);
    RUN_LEASE(test_keepalive_restarts_the_lease);
    RUN_LEASE(test_keepalive_after_checkpoint_waits_for_clearing_checkpoint);
    RUN_LEASE(test_keepalive_of_unknown_or_expiring_session_is_refused);
    RUN_LEASE(test_expiry_retried_after_failed_proposal);
    RUN_LEASE(test_expiry_retried_when_proposal_cannot_be_made);
    RUN_LEASE(test_session_end_drops_its_deadlines);
    RUN_LEASE(test_wait_bound);
    RUN_LEASE(test_wait_refresh_takes_the_new_bound);
    RUN_LEASE(test_lockdelay_lifted);
    RUN_LEASE(test_step_down_stops_actions_and_retries);
    RUN_LEASE(test_checkpoint_skipped_when_expiry_due);
    RUN_LEASE(test_repair_requeues_at_full_length);
    RUN_LEASE(test_revoke_deadline_left_restart_and_of_its_grant);
    RUN_LEASE(test_maxhold_deadline_kept_across_takeover);
    TEST_MAIN_END();
}
