/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_elect — leader election: campaign, FIFO hand-over, PROCLAIM and STALE, RESIGN,
 * the leader's session end handing over in the same entry (close) or after lock-delay
 * (expiry), LEADER/PROCLAIM events, fencing by the leader's token, WRONGTYPE, exactly-once
 * retries and snapshots (values of the leader and of queued candidates).
 *
 * One test per rule (src/fsm/elect.c); every test ends with the invariant audit (at most one
 * leader, no missed grant).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply campaign(struct fsm *f, const char *name, uint64_t sid, const char *value,
                                 uint64_t wait)
{
    struct fsm_cmd c = {
        .op = FSM_OP_ELECT_CAMPAIGN,
        .elect_campaign = {.name = S(name), .sid = sid, .value = S(value), .wait_ms = wait}};
    return apply_cmd(f, &c);
}

static struct fsm_reply proclaim(struct fsm *f, const char *name, uint64_t sid, uint64_t token,
                                 const char *value)
{
    struct fsm_cmd c = {
        .op = FSM_OP_ELECT_PROCLAIM,
        .elect_proclaim = {.name = S(name), .sid = sid, .token = token, .value = S(value)}};
    return apply_cmd(f, &c);
}

static struct fsm_reply resign(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.name = S(name), .sid = sid}};
    return apply_cmd(f, &c);
}

/* 1 if the leader of `name` is sid with `value`. */
static int leads(const struct fsm *f, const char *name, uint64_t sid, const char *value)
{
    struct fsm_elect_view v;
    if (!fsm_elect_leader(f, name, strlen(name), &v))
        return sid == 0;
    return v.sid == sid && v.value.len == strlen(value) &&
           memcmp(v.value.p, value, v.value.len) == 0;
}

/* The LEADER event of the last apply: its sid (0 = leaderless), or -1 if there is none. */
static int64_t leader_event(const char **value)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == FSM_EV_LEADER) {
            if (value)
                *value = EV.ev[i].value.p;
            return (int64_t)EV.ev[i].sid;
        }
    return -1;
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

TEST_F(fsm_fx, the_first_campaign_leads_at_once_with_its_value)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t ta = token_of(campaign(f, "E", a, "host-a", 0));
    const char *v = NULL;
    CHECK(ta && leader_event(&v) == (int64_t)a && v && memcmp(v, "host-a", 6) == 0);
    CHECK(leads(f, "E", a, "host-a"));
    struct fsm_elect_view ev;
    CHECK(fsm_elect_leader(f, "E", 1, &ev) && ev.token == ta && ev.rev == ta);
    CHECK(campaign(f, "E", b, "host-b", 0).kind == FSM_REPLY_NIL);
    CHECK_EQ_U64(token_of(campaign(f, "E", a, "other", 0)), ta); /* idempotent, value kept */
    CHECK(leads(f, "E", a, "host-a"));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, candidates_lead_in_fifo_order_with_their_own_values)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    uint64_t ta = token_of(campaign(f, "E", a, "A", 0));
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(campaign(f, "E", c, "C", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(resign(f, "E", a).kind == FSM_REPLY_OK);
    CHECK(leader_event(NULL) == (int64_t)b && leads(f, "E", b, "B"));
    struct fsm_elect_view v;
    CHECK(fsm_elect_leader(f, "E", 1, &v) && v.token > ta && v.n_candidates == 1);
    uint64_t tb = v.token;
    CHECK(resign(f, "E", b).kind == FSM_REPLY_OK);
    CHECK(leads(f, "E", c, "C"));
    CHECK(fsm_elect_leader(f, "E", 1, &v) && v.token > tb);
    CHECK(resign(f, "E", c).kind == FSM_REPLY_OK);
    CHECK(leader_event(NULL) == 0); /* leaderless, told */
    CHECK(fsm_kind_of(f, "E", 1) == -1);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, proclaim_by_the_leader_changes_the_value_and_a_stale_token_is_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t ta = token_of(campaign(f, "E", a, "v1", 0));
    uint64_t rev = token_of(proclaim(f, "E", a, ta, "v2"));
    CHECK(rev > ta && has_event(FSM_EV_PROCLAIM, a) && leads(f, "E", a, "v2"));
    struct fsm_elect_view v;
    CHECK(fsm_elect_leader(f, "E", 1, &v) && v.rev == rev && v.token == ta);
    CHECK(token_of(proclaim(f, "E", a, ta, "")) > rev && leads(f, "E", a, ""));
    snapshot_into(f, &fx->before);
    struct fsm_reply r = proclaim(f, "E", a, ta + 100, "x");
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "STALE", 5) == 0);
    r = proclaim(f, "E", b, ta, "x");
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "STALE", 5) == 0);
    r = proclaim(f, "nope", a, ta, "x");
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "STALE", 5) == 0);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_deposed_leaders_token_fails_fenced_writes_and_proclaim)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    uint64_t ta = token_of(campaign(f, "E", a, "A", 0));
    CHECK(put_fenced(f, "E", ta) && fsm_fence_check(f, "E", 1, ta) == 0);
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK(leader_event(NULL) == (int64_t)b); /* handed over in the same entry */
    struct fsm_elect_view v;
    CHECK(fsm_elect_leader(f, "E", 1, &v) && v.sid == b);
    CHECK(!put_fenced(f, "E", ta) && fsm_fence_check(f, "E", 1, ta) == -1);
    CHECK(put_fenced(f, "E", v.token));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_leader_whose_session_expires_leaves_it_leaderless_through_lockdelay)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 300), b = open_session(f, 1000, 0);
    CHECK(token_of(campaign(f, "E", a, "A", 0)));
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    CHECK(leader_event(NULL) == 0 && has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    CHECK(leads(f, "E", 0, ""));
    CHECK(apply_lockdelay_end(f, "E").kind == FSM_REPLY_OK);
    CHECK(leader_event(NULL) == (int64_t)b && leads(f, "E", b, "B"));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, resign_by_a_candidate_withdraws_and_by_a_stranger_is_notholder)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0),
             c = open_session(f, 1000, 0);
    CHECK(token_of(campaign(f, "E", a, "A", 0)));
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(resign(f, "E", b).kind == FSM_REPLY_OK && has_event(FSM_EV_WAIT_ENDED, b));
    struct fsm_reply r = resign(f, "E", c);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "NOTHOLDER", 9) == 0);
    CHECK(resign(f, "E", a).kind == FSM_REPLY_OK && leader_event(NULL) == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, cancel_of_a_campaign_wait_removes_the_candidate_or_answers_its_token)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(campaign(f, "E", a, "A", 0)));
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "E", b).kind == FSM_REPLY_NIL);
    CHECK(campaign(f, "E", b, "B", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(resign(f, "E", a).kind == FSM_REPLY_OK);
    struct fsm_elect_view v;
    CHECK(fsm_elect_leader(f, "E", 1, &v) && token_of(apply_cancel_wait(f, "E", b)) == v.token);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, election_names_refuse_the_other_kinds_with_wrongtype)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0);
    uint64_t ta = token_of(campaign(f, "E", a, "A", 0));
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    snapshot_into(f, &fx->before);
    struct fsm_reply r = apply_lock(f, "E", a, 0);
    CHECK(r.kind == FSM_REPLY_ERR && strcmp(r.err, "WRONGTYPE E is an election") == 0);
    r = campaign(f, "L", a, "x", 0);
    CHECK(r.kind == FSM_REPLY_ERR && strncmp(r.err, "WRONGTYPE", 9) == 0);
    CHECK(proclaim(f, "L", a, ta, "x").kind == FSM_REPLY_ERR);
    CHECK(resign(f, "L", a).kind == FSM_REPLY_ERR);
    struct fsm_cmd s = {.op = FSM_OP_SEM_ACQUIRE,
                        .sem_acquire = {.name = S("E"), .sid = a, .limit = 1}};
    CHECK(apply_cmd(f, &s).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_retried_campaign_after_queued_answers_the_current_truth)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 1000, 0), b = open_session(f, 1000, 0);
    CHECK(token_of(campaign(f, "E", a, "A", 0)));
    struct fsm_cmd c = {
        .op = FSM_OP_ELECT_CAMPAIGN,
        .req_sid = b,
        .req_seq = 1,
        .elect_campaign = {.name = S("E"), .sid = b, .value = S("B"), .wait_ms = 1000}};
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cmd(f, &c).kind == FSM_REPLY_QUEUED);
    CHECK(resign(f, "E", a).kind == FSM_REPLY_OK);
    struct fsm_elect_view v;
    CHECK(fsm_elect_leader(f, "E", 1, &v) && token_of(apply_cmd(f, &c)) == v.token);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, elections_snapshot_with_values_as_version_4_and_restore_identically)
{
    struct fsm *f = fx->f;
    uint64_t sids[6];
    build_rich(f, sids);
    uint64_t t = token_of(campaign(f, "E", sids[0], "leader", 0));
    CHECK(t && token_of(proclaim(f, "E", sids[0], t, "leader-2")));
    CHECK(campaign(f, "E", sids[2], "cand-2", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(campaign(f, "E", sids[3], "", 1000).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(campaign(f, "F", sids[4], "", 0)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(fx->scratch[0].p[4] == 4);
    CHECK(restores_identically(f));
    struct buf *x = &fx->scratch[0];
    char *p = memmem(x->p, x->len, "leader-2", 8);
    CHECK(p != NULL);
    p[-1] = 9; /* the value's length byte: the record no longer parses */
    CHECK(!restores((const uint8_t *)x->p, x->len));
    p[-1] = 8;
    CHECK(restores((const uint8_t *)x->p, x->len));
    char *k = memmem(x->p, x->len,
                     "\x01"
                     "F\x02",
                     3); /* election F: name, kind 2 */
    CHECK(k != NULL);
    k[2] = 3; /* an unknown kind */
    CHECK(!restores((const uint8_t *)x->p, x->len));
    k[2] = 1; /* a semaphore: the next bytes are no limit */
    CHECK(!restores((const uint8_t *)x->p, x->len));
    k[2] = 0; /* a lock: the leader's value is then trailing garbage */
    CHECK(!restores((const uint8_t *)x->p, x->len));
    CHECK(invariants_hold(f));
}

#define EL_SEEDS 30
#define EL_STEPS 600
#define EL_SESS 6
#define EL_TWIN_EVERY 100

static uint64_t el_rng;
static uint64_t el_rnd(uint64_t n)
{
    el_rng ^= el_rng >> 12;
    el_rng ^= el_rng << 25;
    el_rng ^= el_rng >> 27;
    return (el_rng * 2685821657736338717ull) % n;
}

/* Campaigns, proclaims (right and stale tokens), resigns, cancels, ends, lock-delay ends. */
static void el_step(struct fsm *f, uint64_t *sids)
{
    static const char *const names[] = {"a", "b"};
    static const char *const values[] = {"", "x", "longer value"};
    int i = (int)el_rnd(EL_SESS);
    const char *n = names[el_rnd(2)];
    struct fsm_session_view v;
    struct fsm_elect_view ev;
    if (!fsm_session_info(f, sids[i], &v)) {
        sids[i] = open_session(f, 1000, el_rnd(2) ? 50 : 0);
        return;
    }
    switch (el_rnd(9)) {
    case 0:
    case 1:
    case 2:
        campaign(f, n, sids[i], values[el_rnd(3)], el_rnd(3) ? 1000 : 0);
        break;
    case 3:
        if (fsm_elect_leader(f, n, 1, &ev))
            proclaim(f, n, el_rnd(2) ? ev.sid : sids[i], ev.token + el_rnd(2), values[el_rnd(3)]);
        break;
    case 4:
    case 5:
        resign(f, n, sids[i]);
        break;
    case 6:
        apply_cancel_wait(f, n, sids[i]);
        break;
    case 7:
        apply_lockdelay_end(f, n);
        break;
    default:
        if (el_rnd(2))
            apply_expire(f, sids[i]);
        else
            apply_close(f, sids[i]);
        break;
    }
}

TEST_F(fsm_fx, random_sequences_keep_one_leader_with_increasing_tokens_and_restore_identically)
{
    for (uint64_t seed = 1; seed <= EL_SEEDS; seed++) {
        struct fsm *f = fsm_new();
        uint64_t sids[EL_SESS] = {0}, last[2] = {0, 0};
        el_rng = seed * 0x9e3779b97f4a7c15ull;
        int ok = f != NULL;
        for (int step = 0; ok && step < EL_STEPS; step++) {
            el_step(f, sids);
            for (int k = 0; k < 2 && ok; k++) { /* leaders' tokens only ever grow */
                struct fsm_elect_view ev;
                if (fsm_elect_leader(f, k ? "b" : "a", 1, &ev)) {
                    ok = ev.token >= last[k];
                    last[k] = ev.token;
                }
            }
            ok = ok && invariants_hold(f) && (step % EL_TWIN_EVERY || restores_identically(f));
            if (!ok)
                fprintf(stderr, "  seed %llu step %d\n", (unsigned long long)seed, step);
        }
        fsm_free(f);
        CHECK(ok);
    }
}

int main(void)
{
    RUN_F(fsm_fx, the_first_campaign_leads_at_once_with_its_value);
    RUN_F(fsm_fx, candidates_lead_in_fifo_order_with_their_own_values);
    RUN_F(fsm_fx, proclaim_by_the_leader_changes_the_value_and_a_stale_token_is_refused);
    RUN_F(fsm_fx, a_deposed_leaders_token_fails_fenced_writes_and_proclaim);
    RUN_F(fsm_fx, a_leader_whose_session_expires_leaves_it_leaderless_through_lockdelay);
    RUN_F(fsm_fx, resign_by_a_candidate_withdraws_and_by_a_stranger_is_notholder);
    RUN_F(fsm_fx, cancel_of_a_campaign_wait_removes_the_candidate_or_answers_its_token);
    RUN_F(fsm_fx, election_names_refuse_the_other_kinds_with_wrongtype);
    RUN_F(fsm_fx, a_retried_campaign_after_queued_answers_the_current_truth);
    RUN_F(fsm_fx, elections_snapshot_with_values_as_version_4_and_restore_identically);
    RUN_F(fsm_fx, random_sequences_keep_one_leader_with_increasing_tokens_and_restore_identically);
    TEST_MAIN_END();
}
