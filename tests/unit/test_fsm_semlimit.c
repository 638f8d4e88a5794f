/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_semlimit — an operator's semaphore limit as state (src/fsm/semlimit.c): SEM_LIMIT_SET
 * wins over the acquirers' limit (a differing one is accepted and ignored), is kept while the
 * semaphore is dropped and created again, keeps holders above a lower limit, is refused while a
 * queued request wants more than it, is removed by SEM_LIMIT_RESET (after which the acquirers'
 * rule is back), follows the old SEM_SETLIMIT op, and lives in snapshot section 5 (only while
 * one exists). Then a seeded random model of semaphore names with and without overrides.
 *
 * Every test ends with the invariant audit (a live semaphore with an override has its limit).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

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

static struct fsm_reply set(struct fsm *f, const char *name, uint64_t limit)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_LIMIT_SET,
                        .sem_limit_set = {.name = S(name), .limit = limit}};
    return apply_cmd(f, &c);
}

static struct fsm_reply reset(struct fsm *f, const char *name)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_LIMIT_RESET, .sem_limit_reset = {.name = S(name)}};
    return apply_cmd(f, &c);
}

static struct fsm_reply old_setlimit(struct fsm *f, const char *name, uint64_t limit)
{
    struct fsm_cmd c = {.op = FSM_OP_SEM_SETLIMIT,
                        .sem_setlimit = {.name = S(name), .limit = limit}};
    return apply_cmd(f, &c);
}

static struct fsm_sem_view info(const struct fsm *f, const char *name)
{
    struct fsm_sem_view v;
    if (!fsm_sem_info(f, name, strlen(name), &v))
        memset(&v, 0, sizeof(v));
    return v;
}

static bool sem_exists(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) != 0;
}

/* Clients that pass the old limit still acquire, up to the operator's new one. */
TEST_F(fsm_fx, an_operators_limit_wins_over_the_acquirers_argument)
{
    uint64_t s[6];
    for (int i = 0; i < 6; i++)
        s[i] = open_session(fx->f, 1000, 0);
    CHECK(token_of(acq(fx->f, "pool", s[0], 3, 1, 0)));
    CHECK(set(fx->f, "pool", 5).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(info(fx->f, "pool").limit, 5);
    CHECK(info(fx->f, "pool").by_operator);
    /* the old limit 3, and another one, are accepted and ignored: 5 permits in all */
    CHECK(token_of(acq(fx->f, "pool", s[1], 3, 1, 0)));
    CHECK(token_of(acq(fx->f, "pool", s[2], 3, 1, 0)));
    CHECK(token_of(acq(fx->f, "pool", s[3], 7, 1, 0)));
    CHECK(token_of(acq(fx->f, "pool", s[4], 3, 1, 0)));
    CHECK_EQ_U64(info(fx->f, "pool").in_use, 5);
    CHECK(acq(fx->f, "pool", s[5], 3, 1, 0).kind == FSM_REPLY_NIL); /* full at 5 */
    /* PERMITS are checked against the operator's limit, not the argument */
    CHECK(acq(fx->f, "pool", s[5], 3, 6, 0).kind == FSM_REPLY_ERR);
    CHECK(acq(fx->f, "pool", s[5], 1, 1, 0).kind == FSM_REPLY_NIL);
    /* an invalid argument is still refused */
    CHECK(acq(fx->f, "pool", s[5], 0, 1, 0).kind == FSM_REPLY_ERR);
    CHECK(acq(fx->f, "pool", s[5], FSM_MAX_SEM_LIMIT + 1ull, 1, 0).kind == FSM_REPLY_ERR);
    CHECK(invariants_hold(fx->f));
    CHECK(restores_identically(fx->f));
}

TEST_F(fsm_fx, the_override_survives_the_semaphore_being_dropped_and_set_before_it_exists)
{
    uint64_t a = open_session(fx->f, 1000, 0), b = open_session(fx->f, 1000, 0);
    CHECK(set(fx->f, "early", 2).kind == FSM_REPLY_OK); /* no semaphore yet */
    CHECK(!sem_exists(fx->f, "early"));
    CHECK_EQ_U64(info(fx->f, "early").limit, 2);
    CHECK(info(fx->f, "early").by_operator);
    CHECK_EQ_U64(fsm_semlim_get(fx->f, "early", 5), 2);
    /* the first acquirer's limit 9 does not set it: the operator's 2 does */
    CHECK(token_of(acq(fx->f, "early", a, 9, 2, 0)));
    CHECK_EQ_U64(info(fx->f, "early").limit, 2);
    CHECK(acq(fx->f, "early", b, 9, 1, 0).kind == FSM_REPLY_NIL);
    CHECK(rel(fx->f, "early", a).kind == FSM_REPLY_OK);
    CHECK(!sem_exists(fx->f, "early")); /* dropped: nothing holds or waits */
    CHECK_EQ_U64(info(fx->f, "early").limit, 2);
    CHECK(token_of(acq(fx->f, "early", b, 4, 1, 0)));
    CHECK_EQ_U64(info(fx->f, "early").limit, 2);
    CHECK(invariants_hold(fx->f));
}

TEST_F(fsm_fx, holders_above_a_lower_limit_keep_their_permits_and_a_bigger_request_refuses_it)
{
    uint64_t a = open_session(fx->f, 1000, 0), b = open_session(fx->f, 1000, 0),
             c = open_session(fx->f, 1000, 0);
    uint64_t ta = token_of(acq(fx->f, "s", a, 4, 3, 0));
    CHECK(ta);
    CHECK(acq(fx->f, "s", b, 4, 2, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(set(fx->f, "s", 1).kind == FSM_REPLY_ERR); /* b's 2 could never be granted */
    CHECK(!fsm_semlim_get(fx->f, "s", 1));           /* nothing changed */
    CHECK_EQ_U64(info(fx->f, "s").limit, 4);
    uint64_t rev = fsm_revision(fx->f);
    CHECK(set(fx->f, "s", 2).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1);
    CHECK_EQ_U64(info(fx->f, "s").in_use, 3); /* a keeps its 3 over the limit 2 */
    CHECK(set(fx->f, "s", 2).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1); /* the same again: no revision */
    CHECK(acq(fx->f, "s", c, 4, 1, 0).kind == FSM_REPLY_NIL);
    CHECK(rel(fx->f, "s", a).kind == FSM_REPLY_OK); /* b's 2 fit now */
    CHECK(has_event(FSM_EV_GRANTED, b));
    CHECK_EQ_U64(info(fx->f, "s").in_use, 2);
    /* a higher limit grants the head at once */
    CHECK(acq(fx->f, "s", c, 4, 1, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(set(fx->f, "s", 3).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, c));
    CHECK(invariants_hold(fx->f));
    CHECK(restores_identically(fx->f));
}

TEST_F(fsm_fx, reset_removes_the_override_and_the_acquirers_rule_is_back)
{
    uint64_t a = open_session(fx->f, 1000, 0), b = open_session(fx->f, 1000, 0);
    CHECK(set(fx->f, "r", 3).kind == FSM_REPLY_OK);
    CHECK(token_of(acq(fx->f, "r", a, 5, 1, 0)));
    uint64_t rev = fsm_revision(fx->f);
    struct fsm_reply x = reset(fx->f, "r");
    CHECK(x.kind == FSM_REPLY_INT && x.value == 1);
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1);
    x = reset(fx->f, "r");
    CHECK(x.kind == FSM_REPLY_INT && x.value == 0); /* none: no revision */
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1);
    CHECK_EQ_U64(info(fx->f, "r").limit, 3); /* the live one keeps the limit it has */
    CHECK(!info(fx->f, "r").by_operator);
    CHECK(acq(fx->f, "r", b, 5, 1, 0).kind == FSM_REPLY_ERR); /* differs: refused again */
    CHECK(rel(fx->f, "r", a).kind == FSM_REPLY_OK);
    CHECK(token_of(acq(fx->f, "r", b, 5, 1, 0))); /* the next first acquirer sets it */
    CHECK_EQ_U64(info(fx->f, "r").limit, 5);
    CHECK(invariants_hold(fx->f));
}

TEST_F(fsm_fx, wrong_kinds_and_bad_limits_change_nothing)
{
    uint64_t a = open_session(fx->f, 1000, 0);
    CHECK(token_of(apply_lock(fx->f, "lk", a, 0)));
    snapshot_into(fx->f, &fx->before);
    struct fsm_reply x = set(fx->f, "lk", 3);
    CHECK(x.kind == FSM_REPLY_ERR);
    CHECK_STR_PREFIX(x.err, "WRONGTYPE ");
    CHECK(set(fx->f, "n", 0).kind == FSM_REPLY_ERR);
    CHECK(set(fx->f, "n", FSM_MAX_SEM_LIMIT + 1ull).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(fx->f, &fx->before));
    /* an override outlives its semaphore; the name may become a lock's: both coexist, and the
       override still binds a semaphore of that name later */
    CHECK(set(fx->f, "x", 2).kind == FSM_REPLY_OK);
    CHECK(token_of(apply_lock(fx->f, "x", a, 0)));
    CHECK(invariants_hold(fx->f));
    CHECK(restores_identically(fx->f));
    CHECK(apply_unlock(fx->f, "x", a).kind == FSM_REPLY_OK);
    CHECK(token_of(acq(fx->f, "x", a, 7, 1, 0)));
    CHECK_EQ_U64(info(fx->f, "x").limit, 2);
    CHECK(invariants_hold(fx->f));
}

TEST_F(fsm_fx, the_old_setlimit_op_moves_the_override_with_it)
{
    uint64_t a = open_session(fx->f, 1000, 0);
    CHECK(set(fx->f, "o", 3).kind == FSM_REPLY_OK);
    CHECK(token_of(acq(fx->f, "o", a, 1, 1, 0)));
    CHECK(old_setlimit(fx->f, "o", 6).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_semlim_get(fx->f, "o", 1), 6);
    CHECK_EQ_U64(info(fx->f, "o").limit, 6);
    CHECK(invariants_hold(fx->f));
}

/* SEM_SETLIMIT and SEM_LIMIT_SET are one rule (sem.c's fsm_sem_limit_refused and
 * fsm_sem_limit_apply): the same refusals with the same text, changing nothing, and the same
 * effect on a live semaphore (holders keep permits over a lower limit, a higher one grants the
 * queue's head). */
TEST_F(fsm_fx, setlimit_and_limit_set_are_one_rule_for_a_live_semaphore)
{
    uint64_t a = open_session(fx->f, 1000, 0), b = open_session(fx->f, 1000, 0);
    CHECK(token_of(apply_lock(fx->f, "lk", a, 0)));
    CHECK(token_of(acq(fx->f, "s", a, 4, 3, 0)));
    CHECK(acq(fx->f, "s", b, 4, 2, 5000).kind == FSM_REPLY_QUEUED);
    static const struct {
        const char *name;
        uint64_t limit;
    } refused[] = {{"s", 0}, {"s", FSM_MAX_SEM_LIMIT + 1ull}, {"lk", 3}, {"s", 1}};
    snapshot_into(fx->f, &fx->before);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        struct fsm_reply x = old_setlimit(fx->f, refused[i].name, refused[i].limit);
        struct fsm_reply y = set(fx->f, refused[i].name, refused[i].limit);
        CHECK(x.kind == FSM_REPLY_ERR && y.kind == FSM_REPLY_ERR);
        CHECK(strcmp(x.err, y.err) == 0);
    }
    CHECK(snapshot_equals(fx->f, &fx->before));
    /* lower by the old op: a keeps its 3 over 2; then higher by the new one: b's 2 fit once a
       released, and 5 grants nothing more (nobody queued) */
    CHECK(old_setlimit(fx->f, "s", 2).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(info(fx->f, "s").in_use, 3);
    CHECK(rel(fx->f, "s", a).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, b));
    CHECK(acq(fx->f, "s", a, 2, 1, 5000).kind == FSM_REPLY_QUEUED);
    CHECK(set(fx->f, "s", 3).kind == FSM_REPLY_OK);
    CHECK(has_event(FSM_EV_GRANTED, a));
    CHECK_EQ_U64(info(fx->f, "s").limit, 3);
    CHECK_EQ_U64(fsm_semlim_get(fx->f, "s", 1), 3);
    CHECK(invariants_hold(fx->f));
    CHECK(restores_identically(fx->f));
}

TEST_F(fsm_fx, snapshot_section_5_only_while_an_override_exists_and_restore_checks_it)
{
    uint64_t a = open_session(fx->f, 1000, 0);
    CHECK(token_of(acq(fx->f, "s1", a, 4, 1, 0)));
    struct buf *none = &fx->scratch[0], *with = &fx->scratch[1];
    snapshot_into(fx->f, none);
    CHECK(set(fx->f, "s1", 4).kind == FSM_REPLY_OK);
    CHECK(set(fx->f, "s0", 9).kind == FSM_REPLY_OK);
    snapshot_into(fx->f, with);
    CHECK(with->len > none->len);
    CHECK(restores((const uint8_t *)with->p, with->len));
    CHECK(fsm_restore(fx->g, (const uint8_t *)with->p, with->len, NULL, 0) == 0);
    CHECK_EQ_U64(fsm_semlim_get(fx->g, "s0", 2), 9);
    CHECK_EQ_U64(fsm_semlim_get(fx->g, "s1", 2), 4);
    CHECK(snapshot_equals(fx->g, with));
    /* the section is the snapshot's last bytes: "s0" 9, "s1" 4. An override that disagrees
       with the live semaphore's limit is refused, and so are other changes of its bytes. */
    const uint8_t tail[] = {5, 9, 2, 2, 's', '0', 9, 2, 's', '1', 4};
    CHECK(with->len > sizeof(tail) &&
          memcmp(with->p + with->len - sizeof(tail), tail, sizeof(tail)) == 0);
    uint8_t *p = (uint8_t *)with->p + with->len - 1;
    *p = 5; /* s1's override 5, the semaphore's limit 4 */
    CHECK(!restores((const uint8_t *)with->p, with->len));
    *p = 0; /* limit 0 */
    CHECK(!restores((const uint8_t *)with->p, with->len));
    *p = 4;
    p[-1] = '0'; /* "s0" twice: not strictly increasing */
    CHECK(!restores((const uint8_t *)with->p, with->len));
    p[-1] = '1';
    CHECK(restores((const uint8_t *)with->p, with->len));
    /* reset both: the snapshot is the one without a section again, byte for byte */
    CHECK(token_of(reset(fx->f, "s0")) == 1 && token_of(reset(fx->f, "s1")) == 1);
    struct buf *again = &fx->scratch[2];
    snapshot_into(fx->f, again);
    CHECK(again->len == none->len);
    CHECK(invariants_hold(fx->f));
}

/* ---- the random model ----
 * Three semaphore names, a few sessions; ops: acquire (random limit and permits, try or wait),
 * release, SEM_LIMIT_SET, SEM_LIMIT_RESET, the old SEM_SETLIMIT, session close. The model keeps
 * per name the override (0 = none) and, while the semaphore exists, its limit; it predicts
 * exactly when an acquire is refused for its limit, what SET / RESET answer, and the limit
 * SEM.INFO shows; the FSM keeps the grants (checked: no grant leaves in_use over the limit, a
 * refused op changes nothing). Every 50 steps: restores identically. */

#define RN 3
#define RS 5
static const char *RNAME[RN] = {"ra", "rb", "rc"};

struct rmodel {
    uint32_t over[RN];
};

static bool rnd_step(struct fsm *f, struct rmodel *m, uint64_t *sids, unsigned *seed)
{
    int n = (int)(rand_r(seed) % RN), k = (int)(rand_r(seed) % 8);
    const char *name = RNAME[n];
    uint64_t sid = sids[rand_r(seed) % RS];
    struct fsm_sem_view before = info(f, name);
    bool existed = sem_exists(f, name);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r;
    if (k < 3) { /* acquire */
        uint64_t limit = 1 + rand_r(seed) % 4, permits = 1 + rand_r(seed) % 3;
        uint64_t wait = rand_r(seed) % 2 ? 1000 : 0;
        uint64_t eff = m->over[n] ? m->over[n] : existed ? before.limit : limit;
        struct buf snap;
        snapshot_into(f, &snap);
        r = acq(f, name, sid, limit, permits, wait);
        bool refused_limit = !m->over[n] && existed && before.limit != limit;
        if (refused_limit || permits > eff) {
            bool same = snapshot_equals(f, &snap);
            buf_free(&snap);
            if (r.kind != FSM_REPLY_ERR || !same) {
                fprintf(stderr, "  acquire %s limit %llu permits %llu: want ERR\n", name,
                        (unsigned long long)limit, (unsigned long long)permits);
                return false;
            }
        } else {
            buf_free(&snap);
            if (r.kind == FSM_REPLY_ERR && strncmp(r.err, "NOSESSION", 9) != 0) {
                fprintf(stderr, "  acquire %s: unexpected %s\n", name, r.err);
                return false;
            }
        }
    } else if (k < 5) {
        rel(f, name, sid);
    } else if (k == 5) {
        uint64_t limit = rand_r(seed) % 6; /* 0 is refused */
        bool queued_more = false;
        /* a queued request for more than the new limit refuses the change: the model cannot
           see the queue's permits cheaply, so it reads the answer and checks nothing changed */
        struct buf snap;
        snapshot_into(f, &snap);
        r = set(f, name, limit);
        if (limit == 0) {
            bool same = snapshot_equals(f, &snap);
            buf_free(&snap);
            if (r.kind != FSM_REPLY_ERR || !same)
                return false;
        } else if (r.kind == FSM_REPLY_ERR) {
            queued_more = strstr(r.err, "queued") != NULL;
            bool same = snapshot_equals(f, &snap);
            buf_free(&snap);
            if (!queued_more || !same || !existed || before.n_waiters == 0)
                return false;
        } else {
            buf_free(&snap);
            if (r.kind != FSM_REPLY_OK)
                return false;
            bool changed = m->over[n] != limit || (existed && before.limit != limit);
            uint64_t grants = 0; /* a higher limit grants the queue's head run: a token each */
            for (size_t i = 0; i < EV.n; i++)
                grants += EV.ev[i].type == FSM_EV_GRANTED;
            if (fsm_revision(f) != rev + (changed ? 1 : 0) + grants) {
                fprintf(stderr, "  set %s %llu: revision %llu -> %llu\n", name,
                        (unsigned long long)limit, (unsigned long long)rev,
                        (unsigned long long)fsm_revision(f));
                return false;
            }
            m->over[n] = (uint32_t)limit;
        }
    } else if (k == 6) {
        r = reset(f, name);
        if (r.kind != FSM_REPLY_INT || r.value != (m->over[n] ? 1u : 0u) ||
            fsm_revision(f) != rev + (m->over[n] ? 1 : 0))
            return false;
        m->over[n] = 0;
    } else if (rand_r(seed) % 4 == 0) {
        uint64_t limit = 1 + rand_r(seed) % 5;
        r = old_setlimit(f, name, limit);
        if (r.kind == FSM_REPLY_OK && existed && m->over[n])
            m->over[n] = (uint32_t)limit;
    } else { /* a session ends: its permits and waits go; a new one replaces it */
        int i = (int)(rand_r(seed) % RS);
        apply_close(f, sids[i]);
        sids[i] = open_session(f, 1000, 0);
    }
    for (int i = 0; i < RN; i++) {
        struct fsm_sem_view v = info(f, RNAME[i]);
        bool live = sem_exists(f, RNAME[i]);
        if (fsm_semlim_get(f, RNAME[i], 2) != m->over[i] || v.by_operator != (m->over[i] != 0) ||
            (m->over[i] && v.limit != m->over[i]) || (!live && !m->over[i] && v.limit)) {
            fprintf(stderr, "  %s: override %u, model %u, shown %llu\n", RNAME[i],
                    fsm_semlim_get(f, RNAME[i], 2), m->over[i], (unsigned long long)v.limit);
            return false;
        }
    }
    /* a grant never leaves in_use over the limit (holders above a lowered one are older) */
    for (size_t i = 0; i < EV.n; i++) {
        if (EV.ev[i].type != FSM_EV_GRANTED)
            continue;
        struct fsm_sem_view v;
        const struct fsm_event *e = &EV.ev[i];
        if (fsm_sem_info(f, e->name.p, e->name.len, &v) && v.in_use > v.limit) {
            fprintf(stderr, "  grant over the limit: %llu > %llu\n", (unsigned long long)v.in_use,
                    (unsigned long long)v.limit);
            return false;
        }
    }
    return invariants_hold(f);
}

TEST_F(fsm_fx, a_random_model_of_overrides_acquirers_and_resets)
{
    unsigned seeds = getenv("SEMLIMIT_SEEDS") ? (unsigned)atoi(getenv("SEMLIMIT_SEEDS")) : 8;
    for (unsigned seed = 1; seed <= seeds; seed++) {
        fsm_free(fx->h);
        fx->h = fsm_new();
        CHECK(fx->h);
        struct rmodel m = {{0}};
        uint64_t sids[RS];
        for (int i = 0; i < RS; i++)
            sids[i] = open_session(fx->h, 1000, 0);
        unsigned st = seed;
        for (int step = 0; step < 1500; step++) {
            if (!rnd_step(fx->h, &m, sids, &st)) {
                fprintf(stderr, "  seed %u step %d\n", seed, step);
                CHECK(0);
            }
            if (step % 50 == 49)
                CHECK(restores_identically(fx->h));
        }
    }
}

int main(void)
{
    RUN_F(fsm_fx, an_operators_limit_wins_over_the_acquirers_argument);
    RUN_F(fsm_fx, the_override_survives_the_semaphore_being_dropped_and_set_before_it_exists);
    RUN_F(fsm_fx, holders_above_a_lower_limit_keep_their_permits_and_a_bigger_request_refuses_it);
    RUN_F(fsm_fx, reset_removes_the_override_and_the_acquirers_rule_is_back);
    RUN_F(fsm_fx, wrong_kinds_and_bad_limits_change_nothing);
    RUN_F(fsm_fx, the_old_setlimit_op_moves_the_override_with_it);
    RUN_F(fsm_fx, setlimit_and_limit_set_are_one_rule_for_a_live_semaphore);
    RUN_F(fsm_fx, snapshot_section_5_only_while_an_override_exists_and_restore_checks_it);
    RUN_F(fsm_fx, a_random_model_of_overrides_acquirers_and_resets);
    TEST_MAIN_END();
}
