/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_deadlock — the wait-for graph and deadlock detection (src/fsm/waitgraph.h): a wait
 * that would close a cycle is refused -DEADLOCK naming it, the request that closes it is the
 * victim, nothing else changes (one revision for the event), across exclusive locks, shared
 * locks (holders, upgrades, FIFO edges) and semaphores (OR edges); no refusal where a wait can
 * still be granted; the search limit; format 1 and limit 0 leave detection off.
 *
 * One test per rule; each ends with the invariant audit and, where state changed, a snapshot
 * round trip.
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

/* The cluster's limit, as the leader sets it: a DEADLOCK_LIMIT entry. */
static void set_limit(struct fsm *f, uint64_t limit)
{
    struct fsm_cmd c = {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = limit}};
    if (apply_cmd(f, &c).kind != FSM_REPLY_OK)
        abort();
}

static size_t waiters_of(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) ? v.n_waiters : 0;
}

static bool is_deadlock(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_ERR && strncmp(r.err, "DEADLOCK ", 9) == 0;
}

/* The value of the last apply's DEADLOCK event for sid, "" if none. */
static const char *cycle_of(uint64_t sid, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == FSM_EV_DEADLOCK && EV.ev[i].sid == sid)
            snprintf(out, cap, "%.*s", (int)EV.ev[i].value.len, EV.ev[i].value.p);
    return out;
}

/* The sessions `sid`'s request on `name` waits for, as "a,b," */
static void add_sid(void *arg, uint64_t sid, bool any)
{
    char *s = arg;
    size_t n = strlen(s);
    snprintf(s + n, 128 - n, "%llu%s,", (unsigned long long)sid, any ? "?" : "");
}

static const char *waits_for(const struct fsm *f, const char *name, uint64_t sid, char *out)
{
    out[0] = '\0';
    fsm_waiter_waits_for(f, name, strlen(name), sid, add_sid, out);
    return out;
}

/* Nothing changed but the revision, which moved by exactly one: the counts of f equal those
 * of `before` (restored into g). */
static int unchanged_but_one_revision(struct fsm_fx *fx, uint64_t rev0)
{
    if (fsm_revision(fx->f) != rev0 + 1)
        return 0;
    char err[128];
    if (fsm_restore(fx->g, (const uint8_t *)fx->before.p, fx->before.len, err, sizeof(err)))
        return 0;
    struct fsm_stats a, b;
    fsm_stats(fx->f, &a);
    fsm_stats(fx->g, &b);
    return a.sessions == b.sessions && a.locks_held == b.locks_held && a.waiters == b.waiters &&
           a.shared_holds == b.shared_holds && a.locks == b.locks && a.data_bytes == b.data_bytes;
}

TEST_F(fsm_fx, a_two_session_cycle_is_refused_naming_it_and_the_other_wait_completes_later)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)) && token_of(apply_lock(f, "y", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "y", a, 5000).kind, FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->before);
    uint64_t rev0 = fsm_revision(f);
    struct fsm_reply r = apply_lock(f, "x", b, 5000);
    CHECK(is_deadlock(r));
    char want[128], ev[256];
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -x-> %llu -y-> %llu",
             (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
    CHECK(strcmp(r.err, want) == 0);
    CHECK(strcmp(cycle_of(b, ev, sizeof(ev)), want + strlen("DEADLOCK cycle of 2: ")) == 0);
    CHECK(unchanged_but_one_revision(fx, rev0));
    CHECK_EQ_U64(waiters_of(f, "x"), 0); /* the victim's wait was not queued */
    CHECK_EQ_U64(waiters_of(f, "y"), 1); /* the other wait is untouched */
    CHECK(invariants_hold(f) && restores_identically(f));
    /* the victim lets go: the other wait completes */
    CHECK_EQ_U64(apply_unlock(f, "y", b).kind, FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "y"), a);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_three_session_cycle_is_refused_and_a_chain_without_one_queues)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0),
             s3 = open_session(f, 10000, 0), s4 = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "a", s1, 0)) && token_of(apply_lock(f, "b", s2, 0)) &&
          token_of(apply_lock(f, "c", s3, 0)) && token_of(apply_lock(f, "d", s4, 0)));
    CHECK_EQ_U64(apply_lock(f, "b", s1, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "c", s2, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "d", s3, 5000).kind, FSM_REPLY_QUEUED); /* s4 waits for nobody */
    struct fsm_reply r = apply_lock(f, "a", s3, 5000);                 /* s3 -> s1 -> s2 -> s3 */
    CHECK(is_deadlock(r));
    char want[128];
    snprintf(want, sizeof(want), "DEADLOCK cycle of 3: %llu -a-> %llu -b-> %llu -c-> %llu",
             (unsigned long long)s3, (unsigned long long)s1, (unsigned long long)s2,
             (unsigned long long)s3);
    CHECK(strcmp(r.err, want) == 0);
    CHECK(has_event(FSM_EV_DEADLOCK, s3) && !has_event(FSM_EV_WAIT_STARTED, 0));
    uint64_t s5 = open_session(f, 10000, 0); /* holds nothing: nobody waits for it */
    CHECK_EQ_U64(apply_lock(f, "a", s5, 5000).kind, FSM_REPLY_QUEUED);
    /* s4 holds d, which s3 waits for: its wait for a closes s4 -> s1 -> s2 -> s3 -> s4 */
    CHECK(is_deadlock(apply_lock(f, "a", s4, 5000)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, format_1_and_a_limit_of_0_queue_as_before)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)) && token_of(apply_lock(f, "y", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "y", a, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "x", b, 5000).kind, FSM_REPLY_QUEUED); /* format 1 */
    CHECK_EQ_U64(apply_close(f, b).kind, FSM_REPLY_OK);
    format_2(f);
    set_limit(f, 0);
    uint64_t c = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "z", c, 0)));
    CHECK_EQ_U64(apply_lock(f, "z", a, 5000).kind, FSM_REPLY_QUEUED);
    CHECK_EQ_U64(apply_lock(f, "y", c, 5000).kind, FSM_REPLY_QUEUED); /* off */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_cycle_through_a_shared_holder_and_an_upgrade_is_refused)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock_shared(f, "r", a, 0)) && token_of(apply_lock_shared(f, "r", b, 0)));
    CHECK(token_of(apply_lock(f, "m", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "m", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    /* b upgrades r: it waits for the other shared holder, a, which waits for b */
    struct fsm_reply r = apply_lock(f, "r", b, 5000);
    CHECK(is_deadlock(r));
    CHECK_EQ_U64(waiters_of(f, "r"), 0);
    char w[128];
    CHECK(strcmp(waits_for(f, "m", a, w), "") != 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_compatible_reader_is_granted_and_a_writer_behind_the_readers_queues)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock_shared(f, "r", a, 0)) && token_of(apply_lock(f, "m", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "m", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    /* b reads r while its holder a waits for b: compatible, granted, no edge */
    CHECK(token_of(apply_lock_shared(f, "r", b, 5000)));
    /* c waits for r exclusively: for both readers; nobody waits for c */
    CHECK_EQ_U64(apply_lock(f, "r", c, 5000).kind, FSM_REPLY_QUEUED);
    char w[128];
    char want[64];
    snprintf(want, sizeof(want), "%llu,%llu,", (unsigned long long)a, (unsigned long long)b);
    CHECK(strcmp(waits_for(f, "r", c, w), want) == 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, fifo_edges_a_request_waits_for_the_earlier_conflicting_ones)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t x = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0), d = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "l", x, 0)) && token_of(apply_lock(f, "m", c, 0)));
    CHECK_EQ_U64(apply_lock(f, "l", b, 5000).kind, FSM_REPLY_QUEUED);        /* b -> x (holder) */
    CHECK_EQ_U64(apply_lock_shared(f, "l", d, 5000).kind, FSM_REPLY_QUEUED); /* d -> b (FIFO) */
    CHECK_EQ_U64(apply_lock(f, "l", c, 5000).kind, FSM_REPLY_QUEUED);        /* c -> d, b */
    char w[128], want[64];
    snprintf(want, sizeof(want), "%llu,", (unsigned long long)x);
    CHECK(strcmp(waits_for(f, "l", b, w), want) == 0);
    snprintf(want, sizeof(want), "%llu,", (unsigned long long)b);
    CHECK(strcmp(waits_for(f, "l", d, w), want) == 0);
    snprintf(want, sizeof(want), "%llu,%llu,", (unsigned long long)b, (unsigned long long)d);
    CHECK(strcmp(waits_for(f, "l", c, w), want) == 0);
    /* b also waits for m (held by c, queued behind b on l): the FIFO edge closes the cycle */
    struct fsm_reply r = apply_lock(f, "m", b, 5000);
    CHECK(is_deadlock(r));
    char want2[128];
    snprintf(want2, sizeof(want2), "DEADLOCK cycle of 2: %llu -m-> %llu -l-> %llu",
             (unsigned long long)b, (unsigned long long)c, (unsigned long long)b);
    CHECK(strcmp(r.err, want2) == 0);
    /* l's holder x waiting for m: m's holder c is queued behind b, which waits for x */
    CHECK(is_deadlock(apply_lock(f, "m", x, 5000)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_full_semaphore_is_a_cycle_only_when_every_permit_holder_is_in_it)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(apply_sem_acquire(f, "p", a, 2, 0)) &&
          token_of(apply_sem_acquire(f, "p", c, 2, 0)));
    CHECK(token_of(apply_lock(f, "l", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "l", a, 5000).kind, FSM_REPLY_QUEUED); /* a -> b */
    /* b waits for any permit: c's may end, so no deadlock */
    CHECK_EQ_U64(apply_sem_acquire(f, "p", b, 2, 5000).kind, FSM_REPLY_QUEUED);
    char w[128], want[64];
    snprintf(want, sizeof(want), "%llu?,%llu?,", (unsigned long long)a, (unsigned long long)c);
    CHECK(strcmp(waits_for(f, "p", b, w), want) == 0);
    /* c now waits for l behind a: every permit holder waits for b: b's wait is doomed, so
       c's wait (which closes that) is refused */
    struct fsm_reply r = apply_lock(f, "l", c, 5000);
    CHECK(is_deadlock(r));
    CHECK_EQ_U64(waiters_of(f, "l"), 1);
    /* a limit-1 semaphore held by the waiter's blocker: refused at once */
    uint64_t d = open_session(f, 10000, 0), e = open_session(f, 10000, 0);
    CHECK(token_of(apply_sem_acquire(f, "q", d, 1, 0)) && token_of(apply_lock(f, "n", e, 0)));
    CHECK_EQ_U64(apply_lock(f, "n", d, 5000).kind, FSM_REPLY_QUEUED);
    CHECK(is_deadlock(apply_sem_acquire(f, "q", e, 1, 5000)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* s[i] holds l<i> and waits for l<i+1>; the last one's request for l0 closes the cycle. */
static int chain(struct fsm *f, uint64_t *s, size_t n)
{
    char nm[32];
    for (size_t i = 0; i < n; i++) {
        s[i] = open_session(f, 100000, 0);
        snprintf(nm, sizeof(nm), "l%zu", i);
        if (!token_of(apply_lock(f, nm, s[i], 0)))
            return -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        snprintf(nm, sizeof(nm), "l%zu", i + 1);
        if (apply_lock(f, nm, s[i], 5000).kind != FSM_REPLY_QUEUED)
            return -1;
    }
    return 0;
}

/* One encoded entry applied to both states: their replies (kind, value, text) must match. */
static int apply_both(struct fsm *f, struct fsm *g, const struct fsm_cmd *c, struct fsm_reply *r)
{
    struct fsm_reply rg = apply_cmd(g, c);
    *r = apply_cmd(f, c);
    if (r->kind != rg.kind || r->value != rg.value)
        return -1;
    return r->kind != FSM_REPLY_ERR || strcmp(r->err, rg.err) == 0 ? 0 : -1;
}

static int lock_both(struct fsm *f, struct fsm *g, const char *name, uint64_t sid, uint64_t wait,
                     struct fsm_reply *r)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return apply_both(f, g, &c, r);
}

/* Two nodes started with different --deadlock-search-limit flags apply one log: neither flag
 * decides a reply. Both search with the replicated default until a DEADLOCK_LIMIT entry, then
 * both with its value; the states stay byte-identical all along. */
TEST_F(fsm_fx, two_fsms_with_different_flags_apply_one_log_and_answer_alike)
{
    struct fsm *f = fx->f, *g = fx->g;
    fsm_set_deadlock_limit(f, 2); /* this node's flag: a search of 2 steps gives up */
    fsm_set_deadlock_limit(g, 0); /* this one's: detection off */
    CHECK(fsm_deadlock_flag(f) == 2 && fsm_deadlock_flag(g) == 0);
    struct fsm_cmd fmt = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 2}};
    struct fsm_reply r;
    CHECK(apply_both(f, g, &fmt, &r) == 0);
    /* a chain of 3: s0 waits for s1, s1 for s2; s2's wait for l0 closes a cycle of 3 */
    uint64_t s[3];
    char nm[32];
    for (int i = 0; i < 3; i++) {
        struct fsm_cmd open = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 100000}};
        CHECK(apply_both(f, g, &open, &r) == 0);
        s[i] = r.value;
        snprintf(nm, sizeof(nm), "l%d", i);
        CHECK(lock_both(f, g, nm, s[i], 0, &r) == 0 && r.kind == FSM_REPLY_INT);
    }
    CHECK(lock_both(f, g, "l1", s[0], 5000, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    CHECK(lock_both(f, g, "l2", s[1], 5000, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    CHECK(fsm_deadlock_limit(f) == FSM_DEADLOCK_LIMIT_DEFAULT &&
          fsm_deadlock_limit(g) == FSM_DEADLOCK_LIMIT_DEFAULT);
    CHECK(lock_both(f, g, "l0", s[2], 5000, &r) == 0 && is_deadlock(r)); /* both refuse */
    snapshot_into(f, &fx->scratch[0]);
    CHECK(snapshot_equals(g, &fx->scratch[0]));
    /* the leader's entry: from here both give up after 2 steps and queue the wait */
    struct fsm_cmd lim = {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = 2}};
    CHECK(apply_both(f, g, &lim, &r) == 0 && r.kind == FSM_REPLY_OK);
    CHECK(fsm_deadlock_limit(f) == 2 && fsm_deadlock_limit(g) == 2);
    CHECK(lock_both(f, g, "l0", s[2], 5000, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    CHECK(has_event(FSM_EV_DEADLOCK_LIMIT, s[2]));
    snapshot_into(f, &fx->scratch[1]);
    CHECK(snapshot_equals(g, &fx->scratch[1]));
    CHECK(fsm_deadlock_flag(f) == 2 && fsm_deadlock_flag(g) == 0); /* the flags are untouched */
    CHECK(invariants_hold(f) && invariants_hold(g));
}

/* Over the maximum: ERR, nothing changes; the value in force again: OK without a revision; a
 * new value: one revision, a version-7 snapshot, and back at the default a version-6 or older
 * one (the version only a non-default limit needs). */
TEST_F(fsm_fx, the_limit_entry_is_checked_and_its_repeat_changes_nothing)
{
    struct fsm *f = fx->f;
    format_2(f);
    snapshot_into(f, &fx->before);
    uint64_t rev = fsm_revision(f);
    struct fsm_cmd c = {.op = FSM_OP_DEADLOCK_LIMIT,
                        .deadlock_limit = {.limit = FSM_DEADLOCK_LIMIT_MAX + 1}};
    struct fsm_reply r = apply_cmd(f, &c);
    CHECK_EQ_U64(r.kind, FSM_REPLY_ERR);
    CHECK(strstr(r.err, "deadlock search limit") != NULL);
    c.deadlock_limit.limit = FSM_DEADLOCK_LIMIT_DEFAULT;
    CHECK_EQ_U64(apply_cmd(f, &c).kind, FSM_REPLY_OK);
    CHECK(snapshot_equals(f, &fx->before) && fsm_revision(f) == rev);
    c.deadlock_limit.limit = 5;
    CHECK_EQ_U64(apply_cmd(f, &c).kind, FSM_REPLY_OK);
    CHECK(fsm_revision(f) == rev + 1 && fsm_deadlock_limit(f) == 5);
    snapshot_into(f, &fx->scratch[0]);
    CHECK(fx->scratch[0].p[4] == 7);
    c.deadlock_limit.limit = FSM_DEADLOCK_LIMIT_DEFAULT;
    CHECK_EQ_U64(apply_cmd(f, &c).kind, FSM_REPLY_OK);
    snapshot_into(f, &fx->scratch[1]);
    CHECK(fx->scratch[1].p[4] < 7 && fsm_deadlock_limit(f) == FSM_DEADLOCK_LIMIT_DEFAULT);
}

#define CHAIN 2000

TEST_F(fsm_fx, a_long_chain_is_searched_without_recursion_and_the_limit_lets_the_wait_queue)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t *s = fx->mem = calloc(CHAIN, sizeof(*s));
    CHECK(s && chain(f, s, CHAIN) == 0);
    CHECK(fsm_deadlock_limit(f) == FSM_DEADLOCK_LIMIT_DEFAULT);
    struct fsm_reply r = apply_lock(f, "l0", s[CHAIN - 1], 5000);
    CHECK(is_deadlock(r));
    CHECK(strncmp(r.err, "DEADLOCK cycle of 2000: ", 24) == 0);
    CHECK_EQ_U64(strlen(r.err), FSM_ERR_LEN - 1); /* cut ... */
    CHECK(strcmp(r.err + FSM_ERR_LEN - 4, "...") == 0);
    /* the event names the first 64 hops with whole names, then "... -> victim": bounded */
    enum { EV_CAP = 8192 };
    char *ev = malloc(EV_CAP);
    CHECK(ev != NULL);
    cycle_of(s[CHAIN - 1], ev, EV_CAP);
    size_t hops = 0, n = strlen(ev);
    for (const char *p = ev; (p = strstr(p, "-> ")); p += 3)
        hops++;
    bool ends = strstr(ev, " ... -> ") != NULL;
    free(ev);
    CHECK(ends && hops == 65 && n < EV_CAP - 1); /* 64 hops, then "... -> victim" */
    /* under a limit the search gives up, the wait is queued and the event says so */
    set_limit(f, 100);
    r = apply_lock(f, "l0", s[CHAIN - 1], 5000);
    CHECK_EQ_U64(r.kind, FSM_REPLY_QUEUED);
    CHECK(has_event(FSM_EV_DEADLOCK_LIMIT, s[CHAIN - 1]) && !has_event(FSM_EV_DEADLOCK, 0));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, restore_keeps_the_limit_and_a_refused_retry_answers_the_same)
{
    struct fsm *f = fx->f;
    format_2(f);
    set_limit(f, 77);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    struct buf snap;
    snapshot_into(f, &snap);
    char err[128];
    int rc = fsm_restore(f, (const uint8_t *)snap.p, snap.len, err, sizeof(err));
    buf_free(&snap);
    CHECK(rc == 0 && fsm_deadlock_limit(f) == 77);
    snapshot_into(f, &snap);
    rc = fsm_restore(fx->g, (const uint8_t *)snap.p, snap.len, err, sizeof(err));
    CHECK(rc == 0 && fsm_deadlock_limit(fx->g) == 77 && snap.p[4] == 7); /* a fresh node too */
    buf_free(&snap);
    CHECK(token_of(apply_lock(f, "x", a, 0)) && token_of(apply_lock(f, "y", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "y", a, 5000).kind, FSM_REPLY_QUEUED);
    struct fsm_cmd c = {.op = FSM_OP_LOCK,
                        .req_sid = b,
                        .req_seq = 1,
                        .lock = {.name = S("x"), .sid = b, .wait_ms = 5000}};
    struct fsm_reply r1 = apply_cmd(f, &c);
    uint64_t rev = fsm_revision(f);
    struct fsm_reply r2 = apply_cmd(f, &c);
    CHECK(is_deadlock(r1) && is_deadlock(r2) && strcmp(r1.err, r2.err) == 0);
    CHECK_EQ_U64(fsm_revision(f), rev); /* the retry replays: no second refusal */
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, an_election_candidate_that_would_close_a_cycle_is_refused)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    struct fsm_cmd lead = {.op = FSM_OP_ELECT_CAMPAIGN,
                           .elect_campaign = {.name = S("e"), .sid = a, .wait_ms = 0}};
    CHECK(token_of(apply_cmd(f, &lead)));
    CHECK(token_of(apply_lock(f, "x", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "x", a, 5000).kind, FSM_REPLY_QUEUED); /* the leader waits on b */
    struct fsm_cmd cand = {.op = FSM_OP_ELECT_CAMPAIGN,
                           .elect_campaign = {.name = S("e"), .sid = b, .wait_ms = 5000}};
    CHECK(is_deadlock(apply_cmd(f, &cand)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* The brief's shape: W holds L and waits for M, which V holds; 100 sessions queue for L shared
 * behind W; V's wait for L closes V -> W -> V. 102 sessions and about 200 edges: well inside
 * the default limit of 10,000 sessions + edges, however long the shared run before V (a walk
 * back over the run per shared waiter cost k^2 steps and let the wait in). */
#define SHARED_RUN 100

TEST_F(fsm_fx, a_cycle_behind_a_long_shared_run_is_found_inside_the_limit)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t w = open_session(f, 10000, 0), v = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "L", w, 0)) && token_of(apply_lock(f, "M", v, 0)));
    CHECK_EQ_U64(apply_lock(f, "M", w, 60000).kind, FSM_REPLY_QUEUED);
    for (int i = 0; i < SHARED_RUN; i++) {
        uint64_t ri = open_session(f, 10000, 0);
        CHECK_EQ_U64(apply_lock_shared(f, "L", ri, 60000).kind, FSM_REPLY_QUEUED);
        CHECK(!has_event(FSM_EV_DEADLOCK_LIMIT, 0));
    }
    CHECK(fsm_deadlock_limit(f) == FSM_DEADLOCK_LIMIT_DEFAULT);
    struct fsm_reply r = apply_lock(f, "L", v, 60000);
    CHECK(is_deadlock(r));
    CHECK(!has_event(FSM_EV_DEADLOCK_LIMIT, 0));
    char want[128];
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -L-> %llu -M-> %llu",
             (unsigned long long)v, (unsigned long long)w, (unsigned long long)v);
    CHECK(strcmp(r.err, want) == 0);
    CHECK_EQ_U64(waiters_of(f, "L"), SHARED_RUN); /* V was not queued */
    char wf[128], one[32];
    snprintf(one, sizeof(one), "%llu,", (unsigned long long)v);
    CHECK(strcmp(waits_for(f, "M", w, wf), one) == 0); /* W waits for V only */
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Over the limit the search stops expanding; the sessions not expanded count as free. A victim
 * still stuck then is in a real cycle of expanded sessions: refused (never a false refusal);
 * one that is free in that picture is queued with the LIMIT event. Both answers are the same
 * on a twin that applies the same log. */
TEST_F(fsm_fx, a_search_over_its_limit_still_refuses_a_cycle_it_read_and_never_a_false_one)
{
    struct fsm *f = fx->f, *g = fx->g;
    struct fsm_reply r;
    struct fsm_cmd fmt = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 2}};
    CHECK(apply_both(f, g, &fmt, &r) == 0);
    uint64_t s[12]; /* s[0] = W holds L, waits for M; s[1] = V holds M; s[2..11] read-wait L */
    for (int i = 0; i < 12; i++) {
        struct fsm_cmd open = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 100000}};
        CHECK(apply_both(f, g, &open, &r) == 0);
        s[i] = r.value;
    }
    uint64_t w = s[0], v = s[1];
    CHECK(lock_both(f, g, "L", w, 0, &r) == 0 && r.kind == FSM_REPLY_INT);
    CHECK(lock_both(f, g, "M", v, 0, &r) == 0 && r.kind == FSM_REPLY_INT);
    CHECK(lock_both(f, g, "M", w, 60000, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    for (int i = 2; i < 12; i++) {
        struct fsm_cmd c = {.op = FSM_OP_LOCK_SHARED,
                            .lock_shared = {.name = S("L"), .sid = s[i], .wait_ms = 60000}};
        CHECK(apply_both(f, g, &c, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    }
    /* V's search: V (1) + its 11 edges and 11 sessions = 23; W's edge to V = 24; each reader's
     * edge to W one more. A limit of 26 stops at the third reader: W is expanded, the cycle
     * V -> W -> V is read, readers 3.. count as free, V is stuck: refused, no LIMIT event
     * needed to say so (the answer stands whatever the unread part holds). */
    struct fsm_cmd lim = {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = 26}};
    CHECK(apply_both(f, g, &lim, &r) == 0 && r.kind == FSM_REPLY_OK);
    CHECK(lock_both(f, g, "L", v, 60000, &r) == 0 && is_deadlock(r));
    CHECK(!has_event(FSM_EV_DEADLOCK_LIMIT, 0));
    /* A limit that stops inside V's own expansion: V keeps no request, so it is free: queued,
     * and the LIMIT event says the search stopped. */
    lim.deadlock_limit.limit = 10;
    CHECK(apply_both(f, g, &lim, &r) == 0 && r.kind == FSM_REPLY_OK);
    CHECK(lock_both(f, g, "L", v, 60000, &r) == 0 && r.kind == FSM_REPLY_QUEUED);
    CHECK(has_event(FSM_EV_DEADLOCK_LIMIT, v) && !has_event(FSM_EV_DEADLOCK, 0));
    snapshot_into(f, &fx->scratch[0]);
    CHECK(snapshot_equals(g, &fx->scratch[0]));
    CHECK(invariants_hold(f) && invariants_hold(g));
}

int main(void)
{
    RUN_F(fsm_fx, a_two_session_cycle_is_refused_naming_it_and_the_other_wait_completes_later);
    RUN_F(fsm_fx, a_three_session_cycle_is_refused_and_a_chain_without_one_queues);
    RUN_F(fsm_fx, format_1_and_a_limit_of_0_queue_as_before);
    RUN_F(fsm_fx, a_cycle_through_a_shared_holder_and_an_upgrade_is_refused);
    RUN_F(fsm_fx, a_compatible_reader_is_granted_and_a_writer_behind_the_readers_queues);
    RUN_F(fsm_fx, fifo_edges_a_request_waits_for_the_earlier_conflicting_ones);
    RUN_F(fsm_fx, a_full_semaphore_is_a_cycle_only_when_every_permit_holder_is_in_it);
    RUN_F(fsm_fx, a_long_chain_is_searched_without_recursion_and_the_limit_lets_the_wait_queue);
    RUN_F(fsm_fx, restore_keeps_the_limit_and_a_refused_retry_answers_the_same);
    RUN_F(fsm_fx, a_cycle_behind_a_long_shared_run_is_found_inside_the_limit);
    RUN_F(fsm_fx, a_search_over_its_limit_still_refuses_a_cycle_it_read_and_never_a_false_one);
    RUN_F(fsm_fx, two_fsms_with_different_flags_apply_one_log_and_answer_alike);
    RUN_F(fsm_fx, the_limit_entry_is_checked_and_its_repeat_changes_nothing);
    RUN_F(fsm_fx, an_election_candidate_that_would_close_a_cycle_is_refused);
    TEST_MAIN_END();
}
