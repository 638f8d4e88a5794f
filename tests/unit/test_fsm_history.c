/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_history.c — the rules of the lock history (src/fsm/history.c): what a grant records,
 * every way a grant ends, the waiters at a grant, the bounds per lock and in total (oldest
 * first), COMPACTED, the replicated limits, and snapshot section 4.
 */
#include "fsm_fixture.h"

#define T0 1700000000000ull /* a leader's wall clock, ms */

static struct fsm_reply limits(struct fsm *f, uint64_t per, uint64_t max)
{
    struct fsm_cmd c = {.op = FSM_OP_HISTORY_LIMITS,
                        .history_limits = {.per_lock = per, .max_entries = max}};
    return apply_cmd(f, &c);
}

/* `c` at leader time `ms`, as user `user` (NULL: unchecked). */
static struct fsm_reply at(struct fsm *f, struct fsm_cmd c, uint64_t ms, const char *user)
{
    c.now_ms = ms;
    if (user) {
        c.checked = true;
        c.user = S(user);
    }
    return apply_cmd(f, &c);
}

static uint64_t open_named(struct fsm *f, const char *name, const char *user, uint64_t ms)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = 10000, .name = S(name)}};
    return token_of(at(f, c, ms, user));
}

static struct fsm_reply lock_at(struct fsm *f, const char *name, uint64_t sid, uint64_t wait,
                                uint64_t ms)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return at(f, c, ms, NULL);
}

static struct fsm_reply unlock_at(struct fsm *f, const char *name, uint64_t sid, uint64_t ms)
{
    struct fsm_cmd c = {.op = FSM_OP_UNLOCK, .unlock = {.name = S(name), .sid = sid}};
    return at(f, c, ms, NULL);
}

#define MAXV 64
struct hv {
    struct fsm_hist_entry v[MAXV];
    struct fsm_hist_waiter w[MAXV][FSM_HIST_WAITERS];
    char names[MAXV][64];
    int n, rc;
    uint64_t compacted;
};

static void keep(void *arg, const struct fsm_hist_entry *e)
{
    struct hv *h = arg;
    if (h->n == MAXV)
        return;
    h->v[h->n] = *e;
    memcpy(h->w[h->n], e->waiters, e->n_shown * sizeof(*e->waiters));
    h->v[h->n].waiters = h->w[h->n];
    size_t n = e->session_name.len < 63 ? e->session_name.len : 63;
    memcpy(h->names[h->n], e->session_name.p, n);
    h->names[h->n][n] = '\0';
    h->n++;
}

static struct hv *hist(const struct fsm *f, const char *name, uint64_t before, size_t count)
{
    static struct hv h;
    memset(&h, 0, sizeof(h));
    h.rc = fsm_lock_history(f, name, strlen(name), before, count, keep, &h, &h.compacted);
    return &h;
}

TEST_F(fsm_fx, the_history_is_off_until_a_limits_entry_turns_it_on)
{
    uint64_t a = open_session(fx->f, 1000, 0);
    CHECK(token_of(apply_lock(fx->f, "L", a, 0)));
    CHECK_EQ_U64((uint64_t)hist(fx->f, "L", 0, 10)->rc, (uint64_t)FSM_HIST_OFF);
    uint64_t rev = fsm_revision(fx->f);
    CHECK(limits(fx->f, 4, 100).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1);
    CHECK(limits(fx->f, 4, 100).kind == FSM_REPLY_OK); /* the same: no revision */
    CHECK_EQ_U64(fsm_revision(fx->f), rev + 1);
    CHECK(hist(fx->f, "L", 0, 10)->rc == 0); /* the grant before it is not known */
    snapshot_into(fx->f, &fx->before);
    CHECK(limits(fx->f, FSM_HIST_PER_LOCK_MAX + 1, 100).kind == FSM_REPLY_ERR);
    CHECK(limits(fx->f, 4, (uint64_t)FSM_HIST_ENTRIES_MAX + 1).kind == FSM_REPLY_ERR);
    CHECK(snapshot_equals(fx->f, &fx->before)); /* an ERR changes nothing */
    CHECK(invariants_hold(fx->f));
}

TEST_F(fsm_fx, a_grant_records_session_name_user_token_and_the_entrys_times)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_named(f, "worker-a", "alice", T0);
    uint64_t t = token_of(lock_at(f, "L", a, 0, T0 + 10));
    CHECK(t);
    struct hv *h = hist(f, "L", 0, 10);
    CHECK(h->rc == 1);
    CHECK_EQ_U64(h->v[0].sid, a);
    CHECK_EQ_U64(h->v[0].token, t);
    CHECK_EQ_U64(h->v[0].granted_ms, T0 + 10);
    CHECK_EQ_U64(h->v[0].ended_rev, 0); /* still held */
    CHECK(strcmp(h->v[0].ended_by, "") == 0);
    CHECK(strcmp(h->names[0], "worker-a") == 0);
    CHECK(h->v[0].user.len == 5 && memcmp(h->v[0].user.p, "alice", 5) == 0);
    CHECK(h->v[0].kind == FSM_KIND_LOCK && h->v[0].permits == 1 && h->v[0].value.len == 0);
    CHECK(unlock_at(f, "L", a, T0 + 260).kind == FSM_REPLY_OK);
    h = hist(f, "L", 0, 10);
    CHECK_EQ_U64(h->v[0].ended_rev, fsm_revision(f));
    CHECK_EQ_U64(h->v[0].ended_ms, T0 + 260);
    CHECK_EQ_U64(h->v[0].held_ms, 250);
    CHECK(strcmp(h->v[0].ended_by, "unlock") == 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, the_waiters_at_a_grant_are_kept_with_how_long_each_had_waited)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1000).kind == FSM_REPLY_OK);
    uint64_t s[12];
    for (int i = 0; i < 12; i++)
        s[i] = open_session(f, 100000, 0);
    CHECK(token_of(lock_at(f, "L", s[0], 0, T0)));
    for (int i = 1; i < 12; i++)
        CHECK(lock_at(f, "L", s[i], 60000, T0 + 100 * (uint64_t)i).kind == FSM_REPLY_QUEUED);
    CHECK(unlock_at(f, "L", s[0], T0 + 5000).kind == FSM_REPLY_OK); /* s[1] gets it */
    struct hv *h = hist(f, "L", 0, 10);
    CHECK(h->rc == 2);
    CHECK_EQ_U64(h->v[0].sid, s[1]);
    CHECK_EQ_U64(h->v[0].waited_ms, 5000 - 100);
    CHECK_EQ_U64(h->v[0].n_waiters, 10); /* s[2..11] still queued */
    CHECK_EQ_U64(h->v[0].n_shown, FSM_HIST_WAITERS);
    for (unsigned i = 0; i < FSM_HIST_WAITERS; i++) {
        CHECK_EQ_U64(h->v[0].waiters[i].sid, s[2 + i]);
        CHECK_EQ_U64(h->v[0].waiters[i].waited_ms, 5000 - 100 * (2 + i));
    }
    CHECK_EQ_U64(h->v[1].sid, s[0]);
    CHECK_EQ_U64(h->v[1].waited_ms, 0); /* granted at once */
    CHECK_EQ_U64(h->v[1].n_waiters, 0);
    /* a wait that ends without a grant is forgotten: no waiter on the next grant */
    for (int i = 2; i < 12; i++)
        CHECK(apply_cancel_wait(f, "L", s[i]).kind == FSM_REPLY_NIL);
    CHECK(unlock_at(f, "L", s[1], T0 + 6000).kind == FSM_REPLY_OK);
    CHECK(token_of(lock_at(f, "L", s[2], 0, T0 + 7000)));
    h = hist(f, "L", 0, 1);
    CHECK_EQ_U64(h->v[0].sid, s[2]);
    CHECK_EQ_U64(h->v[0].waited_ms, 0);
    CHECK_EQ_U64(h->v[0].n_waiters, 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

static const char *ended_by(struct fsm *f, const char *name, uint64_t token)
{
    struct hv *h = hist(f, name, 0, MAXV);
    for (int i = 0; i < h->n; i++)
        if (h->v[i].token == token)
            return h->v[i].ended_by;
    return "(none)";
}

TEST_F(fsm_fx, every_way_a_grant_ends_is_named)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_at(f, "unlock", a, 0, T0));
    CHECK(unlock_at(f, "unlock", a, T0).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "unlock", t), "unlock") == 0);

    uint64_t b = open_session(f, 10000, 0);
    t = token_of(lock_at(f, "expiry", b, 0, T0));
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "expiry", t), "expiry") == 0);

    uint64_t c = open_session(f, 10000, 0);
    t = token_of(lock_at(f, "close", c, 0, T0));
    CHECK(apply_close(f, c).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "close", t), "session-close") == 0);

    uint64_t d = open_session(f, 10000, 0);
    t = token_of(lock_at(f, "srevoke", d, 0, T0));
    struct fsm_cmd sr = {.op = FSM_OP_SESSION_REVOKE, .session_revoke = {.sid = d}};
    CHECK(apply_cmd(f, &sr).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "srevoke", t), "session-revoke") == 0);

    uint64_t e = open_session(f, 10000, 0);
    t = token_of(lock_at(f, "revoke", e, 0, T0));
    struct fsm_cmd rv = {.op = FSM_OP_LOCK_REVOKE,
                         .lock_revoke = {.name = S("revoke"), .deadline_ms = 100}};
    CHECK(token_of(apply_cmd(f, &rv)) == t);
    struct fsm_cmd re = {.op = FSM_OP_REVOKE_END, .revoke_end = {.name = S("revoke"), .token = t}};
    CHECK(apply_cmd(f, &re).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "revoke", t), "revoke") == 0);

    uint64_t g = open_session(f, 10000, 0);
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("up"), .sid = g}};
    t = token_of(apply_cmd(f, &sh));
    uint64_t t2 = token_of(lock_at(f, "up", g, 0, T0)); /* the only reader: upgraded at once */
    CHECK(t && t2 > t);
    CHECK(strcmp(ended_by(f, "up", t), "upgrade") == 0);
    CHECK(strcmp(ended_by(f, "up", t2), "") == 0);

    struct fsm_cmd sa = {.op = FSM_OP_SEM_ACQUIRE,
                         .sem_acquire = {.name = S("sem"), .sid = g, .limit = 3}};
    t = token_of(apply_cmd(f, &sa));
    struct fsm_cmd sl = {.op = FSM_OP_SEM_RELEASE, .sem_release = {.name = S("sem"), .sid = g}};
    CHECK(apply_cmd(f, &sl).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "sem", t), "release") == 0);
    CHECK(hist(f, "sem", 0, 1)->v[0].kind == FSM_KIND_SEM);

    struct fsm_cmd ec = {.op = FSM_OP_ELECT_CAMPAIGN,
                         .elect_campaign = {.name = S("el"), .sid = g, .value = S("me")}};
    t = token_of(apply_cmd(f, &ec));
    struct fsm_cmd er = {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.name = S("el"), .sid = g}};
    CHECK(apply_cmd(f, &er).kind == FSM_REPLY_OK);
    CHECK(strcmp(ended_by(f, "el", t), "resign") == 0);
    CHECK(hist(f, "el", 0, 1)->v[0].kind == FSM_KIND_ELECT);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_semaphore_records_each_acquisition_with_its_permits)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    struct fsm_cmd w = {.op = FSM_OP_SEM_ACQUIRE_W,
                        .sem_acquire_w = {.name = S("S"), .sid = a, .limit = 5, .permits = 3}};
    CHECK(token_of(apply_cmd(f, &w)));
    w.sem_acquire_w.sid = b;
    w.sem_acquire_w.permits = 2;
    CHECK(token_of(apply_cmd(f, &w)));
    struct hv *h = hist(f, "S", 0, 10);
    CHECK(h->rc == 2);
    CHECK(h->v[0].sid == b && h->v[0].permits == 2);
    CHECK(h->v[1].sid == a && h->v[1].permits == 3);
    CHECK(restores_identically(f));
}

TEST_F(fsm_fx, the_bound_per_lock_drops_the_oldest_and_compacted_says_so)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 3, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    uint64_t tok[6];
    for (int i = 0; i < 6; i++) {
        tok[i] = token_of(lock_at(f, "L", a, 0, T0 + (uint64_t)i));
        CHECK(unlock_at(f, "L", a, T0 + (uint64_t)i).kind == FSM_REPLY_OK);
    }
    struct hv *h = hist(f, "L", 0, 10);
    CHECK(h->rc == 3);
    CHECK(h->v[0].token == tok[5] && h->v[1].token == tok[4] && h->v[2].token == tok[3]);
    CHECK_EQ_U64(h->compacted, tok[2]);
    h = hist(f, "L", tok[4], 10); /* paging: older than tok[4] */
    CHECK(h->rc == 1 && h->v[0].token == tok[3]);
    h = hist(f, "L", tok[3], 10); /* all of it was dropped */
    CHECK(h->rc == FSM_HIST_COMPACTED);
    CHECK_EQ_U64(h->compacted, tok[2]);
    h = hist(f, "L", 0, 2); /* COUNT */
    CHECK(h->rc == 2 && h->v[1].token == tok[4]);
    CHECK(hist(f, "never", 0, 10)->rc == FSM_HIST_COMPACTED); /* something was dropped somewhere */
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, the_total_bound_drops_the_oldest_over_all_locks)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 4).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    const char *names[] = {"a", "b", "c", "a", "b", "c"};
    uint64_t tok[6];
    for (int i = 0; i < 6; i++) {
        tok[i] = token_of(lock_at(f, names[i], a, 0, T0));
        CHECK(unlock_at(f, names[i], a, T0).kind == FSM_REPLY_OK);
    }
    struct fsm_hist_stats st;
    fsm_history_stats(f, &st);
    CHECK_EQ_U64(st.entries, 4);
    CHECK_EQ_U64(st.compacted, tok[1]);
    CHECK(hist(f, "a", 0, 10)->rc == 1 && hist(f, "a", 0, 10)->v[0].token == tok[3]);
    CHECK(hist(f, "b", 0, 10)->rc == 1 && hist(f, "b", 0, 10)->v[0].token == tok[4]);
    CHECK(hist(f, "c", 0, 10)->rc == 2);
    CHECK(hist(f, "a", tok[3], 10)->rc == FSM_HIST_COMPACTED);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_name_whose_record_was_dropped_still_answers_compacted_for_its_past)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t1 = token_of(lock_at(f, "x", a, 0, T0));
    CHECK(unlock_at(f, "x", a, T0).kind == FSM_REPLY_OK);
    CHECK(token_of(lock_at(f, "y", a, 0, T0))); /* the total bound drops x's grant and record */
    uint64_t t2 = token_of(lock_at(f, "x", a, 0, T0)); /* a new record for x */
    struct hv *h = hist(f, "x", 0, 10);
    CHECK(h->rc == 1 && h->v[0].token == t2);
    CHECK(t1 < t2);
    CHECK(hist(f, "x", t2, 10)->rc == FSM_HIST_COMPACTED); /* t1 was there, and is gone */
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, lower_limits_trim_at_once_and_zero_turns_the_history_off)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 8, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    uint64_t last = 0;
    for (int i = 0; i < 5; i++) {
        last = token_of(lock_at(f, "L", a, 0, T0));
        CHECK(unlock_at(f, "L", a, T0).kind == FSM_REPLY_OK);
        token_of(lock_at(f, "M", a, 0, T0));
        CHECK(unlock_at(f, "M", a, T0).kind == FSM_REPLY_OK);
    }
    CHECK(limits(f, 2, 1000).kind == FSM_REPLY_OK);
    CHECK(hist(f, "L", 0, 10)->rc == 2 && hist(f, "L", 0, 10)->v[0].token == last);
    CHECK(hist(f, "M", 0, 10)->rc == 2);
    CHECK(limits(f, 2, 3).kind == FSM_REPLY_OK); /* the oldest of both: L's */
    CHECK(hist(f, "L", 0, 10)->rc == 1 && hist(f, "M", 0, 10)->rc == 2);
    CHECK(invariants_hold(f) && restores_identically(f));
    CHECK(limits(f, 0, 3).kind == FSM_REPLY_OK); /* either 0: off */
    uint64_t per, max;
    fsm_history_limits(f, &per, &max);
    CHECK(per == 0 && max == 0);
    CHECK(hist(f, "M", 0, 10)->rc == FSM_HIST_OFF);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, the_history_outlives_the_lock_record)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 4, 100).kind == FSM_REPLY_OK);
    uint64_t a = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_at(f, "gone", a, 0, T0));
    CHECK(unlock_at(f, "gone", a, T0 + 5).kind == FSM_REPLY_OK);
    struct fsm_lock_view v;
    CHECK(fsm_lock_info(f, "gone", 4, &v) == 0); /* the free lock was dropped */
    struct hv *h = hist(f, "gone", 0, 10);
    CHECK(h->rc == 1 && h->v[0].token == t && h->v[0].held_ms == 5);
}

TEST_F(fsm_fx, the_snapshot_carries_the_history_in_section_4_only_while_it_is_on)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(((uint8_t *)fx->scratch[0].p)[4] < 8); /* off: no section, an older version */
    CHECK(limits(f, 4, 100).kind == FSM_REPLY_OK);
    CHECK(lock_at(f, "L", b, 60000, T0).kind == FSM_REPLY_QUEUED); /* a pending wait */
    snapshot_into(f, &fx->scratch[1]);
    CHECK_EQ_U64(((uint8_t *)fx->scratch[1].p)[4], 8);
    CHECK(restores_identically(f));
    /* the pending wait survives the restore: the grant after it knows how long b waited */
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)fx->scratch[1].p, fx->scratch[1].len, err,
                      sizeof(err)) == 0);
    CHECK(unlock_at(fx->g, "L", a, T0 + 700).kind == FSM_REPLY_OK);
    CHECK(unlock_at(f, "L", a, T0 + 700).kind == FSM_REPLY_OK);
    struct hv *h = hist(fx->g, "L", 0, 10);
    CHECK(h->rc == 1 && h->v[0].sid == b && h->v[0].waited_ms == 700);
    snapshot_into(fx->g, &fx->scratch[2]);
    CHECK(snapshot_equals(f, &fx->scratch[2])); /* the same history as the replica that applied */
    /* a non-canonical section is refused: limits of 0 with the section written */
    uint8_t *p = (uint8_t *)fx->scratch[1].p;
    size_t at = 0;
    for (size_t i = fx->scratch[1].len - 3; i > 5 && !at; i--)
        if (p[i - 2] == 4 /* tag */ && p[i] == 4 && p[i + 1] == 100) /* per_lock 4, max 100 */
            at = i;
    CHECK(at);
    p[at] = 0;
    CHECK(fsm_restore(fx->g, p, fx->scratch[1].len, err, sizeof(err)) == -1);
    CHECK(strstr(err, "history limits out of range") != NULL);
    p[at] = 4;
    /* a truncated section is refused and changes nothing */
    snapshot_into(fx->g, &fx->before);
    for (size_t cut = 1; cut < 12; cut++)
        CHECK(fsm_restore(fx->g, (const uint8_t *)fx->scratch[1].p, fx->scratch[1].len - cut, err,
                          sizeof(err)) == -1);
    CHECK(snapshot_equals(fx->g, &fx->before));
}

static struct fsm_reply lock_value_at(struct fsm *f, const char *name, uint64_t sid,
                                      const char *value, uint64_t wait, uint64_t ms)
{
    struct fsm_cmd c = {
        .op = FSM_OP_LOCK_META,
        .lock_meta = {.name = S(name), .sid = sid, .value = S(value), .wait_ms = wait}};
    return at(f, c, ms, NULL);
}

static bool value_is(const struct fsm_hist_entry *e, const char *v)
{
    return e->value.len == strlen(v) && memcmp(e->value.p, v, e->value.len) == 0;
}

TEST_F(fsm_fx, a_lock_grant_records_its_value_and_a_waiter_its_own_when_granted)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 16, 1000).kind == FSM_REPLY_OK);
    uint64_t a = open_named(f, "a", "alice", T0), b = open_named(f, "b", "bob", T0);
    uint64_t t1 = token_of(lock_value_at(f, "L", a, "job=1", 0, T0 + 1));
    CHECK(t1);
    CHECK(lock_value_at(f, "L", b, "job=2", 60000, T0 + 2).kind == FSM_REPLY_QUEUED);
    CHECK(unlock_at(f, "L", a, T0 + 3).kind == FSM_REPLY_OK); /* b granted with its value */
    CHECK(unlock_at(f, "L", b, T0 + 4).kind == FSM_REPLY_OK);
    uint64_t t3 = token_of(lock_at(f, "L", a, 0, T0 + 5)); /* a plain LOCK: no value */
    CHECK(t3);
    struct hv *h = hist(f, "L", 0, 10);
    CHECK(h->rc == 3);
    CHECK(h->v[0].token == t3 && value_is(&h->v[0], ""));
    CHECK(h->v[1].sid == b && value_is(&h->v[1], "job=2"));
    CHECK(h->v[2].token == t1 && value_is(&h->v[2], "job=1"));
    /* the values go into section 4 (its value flag) and come back from it */
    CHECK(invariants_hold(f) && restores_identically(f));
    struct buf *s = &fx->scratch[0];
    char err[128];
    snapshot_into(f, s);
    CHECK(fsm_restore(fx->g, (const uint8_t *)s->p, s->len, err, sizeof(err)) == 0);
    h = hist(fx->g, "L", 0, 10);
    CHECK(h->rc == 3 && value_is(&h->v[1], "job=2") && value_is(&h->v[2], "job=1"));
    /* a semaphore's or an election's grant carries none */
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("S"), .sid = b, .limit = 2}};
    CHECK(token_of(at(f, sem, T0 + 6, NULL)));
    h = hist(f, "S", 0, 10);
    CHECK(h->rc == 1 && value_is(&h->v[0], ""));
}

/* Section 4's first byte per entry is the kind with the value flag (0x80): a flag on another
 * kind, an unknown bit, or a flagged empty value is not what emit writes: refused. */
TEST_F(fsm_fx, section_4_refuses_a_value_flag_that_emit_would_not_write)
{
    struct fsm *f = fx->f;
    CHECK(limits(f, 4, 100).kind == FSM_REPLY_OK);
    uint64_t a = open_named(f, "", "", T0);
    uint64_t t = token_of(lock_value_at(f, "V", a, "x", 0, T0 + 1));
    CHECK(t);
    struct buf *s = &fx->scratch[0];
    snapshot_into(f, s);
    uint8_t *p = (uint8_t *)s->p;
    /* the entry: u8 kind|0x80, varint token, ... ; find kind 0x80 followed by the token */
    size_t at = 0;
    for (size_t i = 0; i + 1 < s->len && !at; i++)
        if (p[i] == 0x80 && p[i + 1] == (uint8_t)t && t < 128)
            at = i;
    CHECK(at);
    char err[128];
    CHECK(fsm_restore(fx->g, p, s->len, err, sizeof(err)) == 0);
    p[at] = 0x80 | FSM_KIND_SEM;
    CHECK(fsm_restore(fx->g, p, s->len, err, sizeof(err)) == -1);
    p[at] = 0x40;
    CHECK(fsm_restore(fx->g, p, s->len, err, sizeof(err)) == -1 && strstr(err, "kind"));
    p[at] = 0x80;
    CHECK(fsm_restore(fx->g, p, s->len, err, sizeof(err)) == 0);
}

int main(void)
{
    RUN_F(fsm_fx, the_history_is_off_until_a_limits_entry_turns_it_on);
    RUN_F(fsm_fx, a_grant_records_session_name_user_token_and_the_entrys_times);
    RUN_F(fsm_fx, the_waiters_at_a_grant_are_kept_with_how_long_each_had_waited);
    RUN_F(fsm_fx, every_way_a_grant_ends_is_named);
    RUN_F(fsm_fx, a_semaphore_records_each_acquisition_with_its_permits);
    RUN_F(fsm_fx, the_bound_per_lock_drops_the_oldest_and_compacted_says_so);
    RUN_F(fsm_fx, the_total_bound_drops_the_oldest_over_all_locks);
    RUN_F(fsm_fx, a_name_whose_record_was_dropped_still_answers_compacted_for_its_past);
    RUN_F(fsm_fx, lower_limits_trim_at_once_and_zero_turns_the_history_off);
    RUN_F(fsm_fx, the_history_outlives_the_lock_record);
    RUN_F(fsm_fx, the_snapshot_carries_the_history_in_section_4_only_while_it_is_on);
    RUN_F(fsm_fx, a_lock_grant_records_its_value_and_a_waiter_its_own_when_granted);
    RUN_F(fsm_fx, section_4_refuses_a_value_flag_that_emit_would_not_write);
    TEST_MAIN_END();
}
