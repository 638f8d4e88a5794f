/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_mem — what a lock record costs (docs/server.md "Memory"): the fields every record
 * needs stay in struct lock, within the budget the documented formula states; the rarely used
 * ones (an election's value, a pending revoke, lock metadata, a reentrant holder's count) live in
 * a struct lock_x that a plain lock never gets, and that a record which needs one gets before
 * anything changes and keeps, through a snapshot too, until it is dropped (ASan: no leak, no
 * use after free on each path).
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm_fixture.h"

static const struct lock *rec(const struct fsm *f, const char *name)
{
    return fsm_lock_find((struct fsm *)f, name, strlen(name));
}

TEST(the_lock_record_fits_the_documented_budget)
{
    /* docs/server.md "Memory": a lock record is 154 bytes plus its name (one malloc), the name
     * tree's node 24 of them; a W4 record (12-byte name) then takes a 176-byte malloc chunk */
    CHECK(sizeof(struct onode) <= 24);
    CHECK(offsetof(struct lock, name) <= 154);
}

TEST_F(fsm_fx, plain_exclusive_and_shared_locks_get_no_side_record)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)));
    CHECK(apply_lock(f, "x", b, 5000).kind == FSM_REPLY_QUEUED);
    struct fsm_cmd c = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("s"), .sid = a}};
    CHECK(token_of(apply_cmd(f, &c)));
    CHECK(rec(f, "x") && rec(f, "x")->x == NULL);
    CHECK(rec(f, "s") && rec(f, "s")->x == NULL);
    CHECK(apply_unlock(f, "x", a).kind != FSM_REPLY_ERR && holder_of(f, "x") == b);
    CHECK(rec(f, "x")->x == NULL);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_revoke_gives_the_record_one_that_outlives_the_grant_and_the_snapshot)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)));
    CHECK(apply_lock(f, "x", b, 5000).kind == FSM_REPLY_QUEUED);
    struct fsm_cmd c = {.op = FSM_OP_LOCK_REVOKE,
                        .lock_revoke = {.name = S("x"), .deadline_ms = 100, .reason = S("r")}};
    CHECK(token_of(apply_cmd(f, &c)));
    CHECK(rec(f, "x")->x != NULL && rec(f, "x")->x->rv_token != 0);
    CHECK(restores_identically(f));
    CHECK(apply_unlock(f, "x", a).kind != FSM_REPLY_ERR && holder_of(f, "x") == b);
    CHECK(rec(f, "x")->x != NULL && rec(f, "x")->x->rv_token == 0);
    CHECK(invariants_hold(f));
    CHECK(apply_unlock(f, "x", b).kind != FSM_REPLY_ERR); /* the record goes, its lock_x with it */
    CHECK(rec(f, "x") == NULL);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, an_election_has_one_from_its_creation_and_through_a_snapshot)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    struct fsm_cmd c = {.op = FSM_OP_ELECT_CAMPAIGN,
                        .elect_campaign = {.name = S("e"), .sid = a, .value = S("me")}};
    CHECK(token_of(apply_cmd(f, &c)));
    CHECK(rec(f, "e")->x != NULL && rec(f, "e")->x->value_len == 2);
    CHECK(restores_identically(f));
    CHECK(apply_close(f, a).kind != FSM_REPLY_ERR);
    CHECK(rec(f, "e") == NULL);
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN(the_lock_record_fits_the_documented_budget);
    RUN_F(fsm_fx, plain_exclusive_and_shared_locks_get_no_side_record);
    RUN_F(fsm_fx, a_revoke_gives_the_record_one_that_outlives_the_grant_and_the_snapshot);
    RUN_F(fsm_fx, an_election_has_one_from_its_creation_and_through_a_snapshot);
    TEST_MAIN_END();
}
