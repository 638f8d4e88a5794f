/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_multi — LOCK_MULTI (src/fsm/multi.c): all names in one entry or none, consecutive
 * tokens in name order, FIFO on every name, shared compatibility as the rw lock defines it,
 * leaving every queue at once (CANCEL_WAIT, UNLOCK, session end), fairness (nothing queued
 * later overtakes a waiting multi-request; the oldest waiting request is granted once the
 * holders let go, so no request waits behind a later one forever), no deadlock between
 * multi-requests, and snapshots of a waiting multi-request.
 *
 * Commands go through the real encoder and fsm_apply (fsm_fixture.h); every test ends with the
 * invariant audit, which checks that no queue head could be granted (no missed grant: for a
 * multi-request, that it is not at the head of all its queues or not grantable in one).
 */

#include <stdlib.h>
#include <string.h>

#include "fsm/waitgraph.h"
#include "fsm_fixture.h"

#define MAX_NAMES 8
#define WAIT 5000

/* `spec`: names separated by spaces, a trailing '*' asks that one shared ("b a* c"). The
 * helper sorts them as the server does (the entry carries them in byte order). */
static struct fsm_reply apply_multi_req(struct fsm *f, uint64_t sid, uint64_t wait,
                                        const char *spec, uint64_t req_seq)
{
    char buf[256], *names[MAX_NAMES], *save = NULL;
    size_t n = 0;
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *t = strtok_r(buf, " ", &save); t && n < MAX_NAMES; t = strtok_r(NULL, " ", &save))
        names[n++] = t;
    for (size_t i = 1; i < n; i++) /* insertion sort (the specs' names never tie) */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *x = names[j];
            names[j] = names[j - 1];
            names[j - 1] = x;
        }
    struct buf raw;
    buf_init(&raw);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        bool shared = names[i][len - 1] == '*';
        if (fsm_names_add(&raw, names[i], len - shared, shared))
            abort();
    }
    struct fsm_cmd c = {.op = FSM_OP_LOCK_MULTI,
                        .req_sid = req_seq ? sid : 0,
                        .req_seq = req_seq,
                        .lock_multi = {.sid = sid,
                                       .names = {(uint32_t)n, {raw.p, (uint32_t)raw.len}},
                                       .wait_ms = wait}};
    struct fsm_reply r = apply_cmd(f, &c);
    buf_free(&raw);
    return r;
}

static struct fsm_reply apply_multi(struct fsm *f, uint64_t sid, uint64_t wait, const char *spec)
{
    return apply_multi_req(f, sid, wait, spec, 0);
}

struct holder_find {
    uint64_t sid, token;
    bool shared;
};

static void holder_cb(void *arg, uint64_t sid, uint64_t token, bool shared)
{
    struct holder_find *h = arg;
    if (sid == h->sid) {
        h->token = token;
        h->shared = shared;
    }
}

/* The token `sid` holds `name` with (either mode), 0 if none; *shared its mode. */
static uint64_t token_held(const struct fsm *f, const char *name, uint64_t sid, bool *shared)
{
    struct holder_find h = {sid, 0, false};
    fsm_lock_holders(f, name, strlen(name), holder_cb, &h);
    if (shared)
        *shared = h.shared;
    return h.token;
}

static size_t waiters_of(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) ? v.n_waiters : 0;
}

static size_t waits_of(const struct fsm *f, uint64_t sid)
{
    struct fsm_session_view v;
    return fsm_session_info(f, sid, &v) ? v.n_waits : 0;
}

static size_t count_events(uint8_t type, uint64_t sid)
{
    size_t n = 0;
    for (size_t i = 0; i < EV.n; i++)
        n += EV.ev[i].type == type && (sid == 0 || EV.ev[i].sid == sid);
    return n;
}

TEST_F(fsm_fx, free_names_are_granted_in_one_entry_with_consecutive_tokens_in_name_order)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    uint64_t before = fsm_revision(f);
    struct fsm_reply r = apply_multi(f, s, 0, "c a* b");
    CHECK(r.kind == FSM_REPLY_INT);
    uint64_t first = r.value;
    bool shared;
    CHECK_EQ_U64(first, before + 1);
    CHECK_EQ_U64(token_held(f, "a", s, &shared), first);
    CHECK(shared);
    CHECK_EQ_U64(token_held(f, "b", s, &shared), first + 1);
    CHECK(!shared);
    CHECK_EQ_U64(token_held(f, "c", s, NULL), first + 2);
    CHECK_EQ_U64(fsm_revision(f), first + 2); /* one entry: three grants, nothing else */
    CHECK_EQ_U64(count_events(FSM_EV_GRANTED, s), 3);
    CHECK(EV.ev[0].name.len == 1 && EV.ev[0].name.p[0] == 'a'); /* name order */
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_busy_name_without_wait_answers_nil_and_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0), o = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "b", o, 0)));
    snapshot_into(f, &fx->before);
    CHECK(apply_multi(f, s, 0, "a b c").kind == FSM_REPLY_NIL);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(EV.n == 0);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, held_or_awaited_names_and_other_kinds_are_refused_and_change_nothing)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0), o = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "held", s, 0)));
    CHECK(token_of(apply_lock(f, "busy", o, 0)));
    CHECK(apply_lock(f, "busy", s, WAIT).kind == FSM_REPLY_QUEUED);
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("sem"), .sid = o, .limit = 2}};
    CHECK(token_of(apply_cmd(f, &sem)));
    snapshot_into(f, &fx->before);
    const char *bad[] = {"a held", "a busy", "a sem"};
    const char *want[] = {"ERR ", "ERR ", "WRONGTYPE "};
    for (size_t i = 0; i < 3; i++) {
        struct fsm_reply r = apply_multi(f, s, WAIT, bad[i]);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, want[i]);
        CHECK(snapshot_equals(f, &fx->before));
    }
    CHECK(apply_multi(f, 999999, WAIT, "a").kind == FSM_REPLY_ERR); /* NOSESSION */
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(invariants_hold(f));
}

/* A hand-built entry (the server never sends one) with names out of order or twice: the decoder
 * refuses it, so the FSM never sees a duplicate. */
TEST_F(fsm_fx, an_entry_with_a_name_twice_or_out_of_order_is_refused_by_the_decoder)
{
    struct fsm *f = fx->f;
    uint64_t s = open_session(f, 1000, 0);
    const char *lists[] = {"\x00\x01"
                           "a"
                           "\x00\x01"
                           "a",
                           "\x00\x01"
                           "b"
                           "\x00\x01"
                           "a",
                           "\x02\x01"
                           "a"};
    const uint32_t lens[] = {6, 6, 3}, counts[] = {2, 2, 1};
    snapshot_into(f, &fx->before);
    for (size_t i = 0; i < 3; i++) {
        struct fsm_cmd c = {.op = FSM_OP_LOCK_MULTI,
                            .lock_multi = {.sid = s, .names = {counts[i], {lists[i], lens[i]}}}};
        struct fsm_reply r = apply_cmd(f, &c);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "ERR bad entry: lock names");
        CHECK(snapshot_equals(f, &fx->before));
    }
}

/* FIFO on every name: while a multi-request waits, a later request on any of its names queues
 * behind it, even on a name that is free; the release of the last busy name grants every name
 * in that one entry. */
TEST_F(fsm_fx, a_waiting_multi_request_blocks_its_free_names_and_nothing_overtakes_it)
{
    struct fsm *f = fx->f;
    uint64_t m = open_session(f, 1000, 0), o = open_session(f, 1000, 0),
             late = open_session(f, 1000, 0), reader = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "b", o, 0)));
    CHECK(apply_multi(f, m, WAIT, "a b").kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(count_events(FSM_EV_WAIT_STARTED, m), 2);
    CHECK_EQ_U64(holder_of(f, "a"), 0); /* "a" is free, and nobody gets it before m */
    CHECK(apply_lock(f, "a", late, WAIT).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "a", reader, WAIT).kind == FSM_REPLY_QUEUED);
    CHECK(invariants_hold(f) && restores_identically(f));
    uint64_t rev = fsm_revision(f);
    CHECK(apply_unlock(f, "b", o).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(token_held(f, "a", m, NULL), rev + 1);
    CHECK_EQ_U64(token_held(f, "b", m, NULL), rev + 2);
    CHECK_EQ_U64(count_events(FSM_EV_GRANTED, 0), 2); /* late and reader still wait */
    CHECK_EQ_U64(waits_of(f, m), 0);
    CHECK_EQ_U64(waiters_of(f, "a"), 2);
    CHECK(apply_unlock(f, "a", m).kind == FSM_REPLY_OK); /* plain UNLOCK: that name only */
    CHECK_EQ_U64(holder_of(f, "a"), late);
    CHECK_EQ_U64(token_held(f, "b", m, NULL), rev + 2);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Shared names follow the rw lock: granted beside shared holders, queued behind a writer; an
 * exclusive name waits for the shared holders. */
TEST_F(fsm_fx, shared_names_are_compatible_with_shared_holders_and_exclusive_ones_are_not)
{
    struct fsm *f = fx->f;
    uint64_t r1 = open_session(f, 1000, 0), m = open_session(f, 1000, 0),
             m2 = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock_shared(f, "a", r1, 0)));
    CHECK(token_of(apply_multi(f, m, 0, "a* b"))); /* a is read-locked: a shared name joins */
    CHECK(apply_multi(f, m2, 0, "a c").kind == FSM_REPLY_NIL);
    CHECK(apply_multi(f, m2, WAIT, "a c").kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "a", r1).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "c"), 0); /* m still reads a */
    CHECK(apply_unlock(f, "a", m).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "a"), m2);
    CHECK_EQ_U64(holder_of(f, "c"), m2);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* Granting a multi-request that reads a name lets the readers queued behind it there in, in the
 * same entry (no missed grant on the other names). */
TEST_F(fsm_fx, a_multi_grant_lets_the_readers_behind_its_shared_name_in)
{
    struct fsm *f = fx->f;
    uint64_t w = open_session(f, 1000, 0), m = open_session(f, 1000, 0),
             rd = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "x", w, 0)));
    CHECK(apply_multi(f, m, WAIT, "x y*").kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock_shared(f, "y", rd, WAIT).kind == FSM_REPLY_QUEUED); /* behind m on y */
    CHECK(apply_unlock(f, "x", w).kind == FSM_REPLY_OK);
    CHECK(token_held(f, "y", m, NULL) && token_held(f, "y", rd, NULL));
    CHECK_EQ_U64(holder_of(f, "x"), m);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* A wait timeout (CANCEL_WAIT of any one name), an UNLOCK of any one name and the end of the
 * session each remove the request from every queue in one entry. */
TEST_F(fsm_fx, cancel_unlock_or_session_end_leave_every_queue_at_once)
{
    struct fsm *f = fx->f;
    for (int how = 0; how < 3; how++) {
        uint64_t o = open_session(f, 1000, 0), m = open_session(f, 1000, 0);
        CHECK(token_of(apply_lock(f, "c", o, 0)));
        CHECK(apply_multi(f, m, WAIT, "a b c").kind == FSM_REPLY_QUEUED);
        CHECK_EQ_U64(waits_of(f, m), 3);
        struct fsm_reply r = how == 0   ? apply_cancel_wait(f, "b", m)
                             : how == 1 ? apply_unlock(f, "a", m)
                                        : apply_expire(f, m);
        CHECK(r.kind != FSM_REPLY_ERR);
        CHECK_EQ_U64(count_events(FSM_EV_WAIT_ENDED, m), 3);
        CHECK_EQ_U64(waits_of(f, m), 0);
        CHECK_EQ_U64(waiters_of(f, "a") + waiters_of(f, "b") + waiters_of(f, "c"), 0);
        CHECK(!fsm_lock_info(f, "a", 1, &(struct fsm_lock_view){0})); /* free locks dropped */
        CHECK(invariants_hold(f));
        apply_close(f, o);
        apply_close(f, m);
    }
}

/* Two multi-requests on overlapping sets (in any order the client gave them) cannot deadlock:
 * neither holds anything while it waits, and they are granted in enqueue order. */
TEST_F(fsm_fx, overlapping_multi_requests_are_granted_one_after_the_other_in_enqueue_order)
{
    struct fsm *f = fx->f;
    uint64_t o = open_session(f, 1000, 0), m1 = open_session(f, 1000, 0),
             m2 = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "b", o, 0)));
    CHECK(apply_multi(f, m1, WAIT, "a b").kind == FSM_REPLY_QUEUED);
    CHECK(apply_multi(f, m2, WAIT, "b a").kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(holder_of(f, "a"), 0);
    CHECK(apply_close(f, o).kind == FSM_REPLY_OK);
    CHECK(holder_of(f, "a") == m1 && holder_of(f, "b") == m1);
    CHECK(apply_close(f, m1).kind == FSM_REPLY_OK);
    CHECK(holder_of(f, "a") == m2 && holder_of(f, "b") == m2);
    CHECK(invariants_hold(f));
}

/* The end of a session may hand its released lock to a multi-request whose shared grant lets
 * the ending session's own waiting request reach the head of all its queues: it is not granted
 * (a session that is ending gets nothing), its waits go with it. */
TEST_F(fsm_fx, an_ending_session_is_not_granted_its_own_multi_request_by_its_releases)
{
    struct fsm *f = fx->f;
    uint64_t s1 = open_session(f, 1000, 100), s2 = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "x", s1, 0)));
    CHECK(apply_multi(f, s2, WAIT, "x y*").kind == FSM_REPLY_QUEUED);
    CHECK(apply_multi(f, s1, WAIT, "y* z").kind == FSM_REPLY_QUEUED); /* behind s2 on y */
    CHECK(apply_close(f, s1).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(count_events(FSM_EV_GRANTED, s1), 0);
    CHECK(holder_of(f, "x") == s2 && token_held(f, "y", s2, NULL));
    CHECK_EQ_U64(holder_of(f, "z"), 0);
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* A retry (REQ, same seq) of a multi-request answered QUEUED answers the current truth: the
 * first token once granted. */
TEST_F(fsm_fx, a_retry_after_queued_answers_the_first_token_once_granted)
{
    struct fsm *f = fx->f;
    uint64_t o = open_session(f, 1000, 0), m = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "b", o, 0)));
    CHECK(apply_multi_req(f, m, WAIT, "a* b", 1).kind == FSM_REPLY_QUEUED);
    CHECK(apply_multi_req(f, m, WAIT, "a* b", 1).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(apply_unlock(f, "b", o).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(token_of(apply_multi_req(f, m, WAIT, "a* b", 1)), rev + 1);
    CHECK(invariants_hold(f));
}

static bool outcome_gone(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_ERR && strstr(r.err, "outcome of this LOCK.MULTI is gone");
}

/* A retry's truth walks every name, not the first alone: the multi-request's wait ended and a
 * single LOCK of the same session now waits on its first name: not QUEUED (the single LOCK's
 * grant would answer the retry with tokens for names it never got); granted, then one name
 * released: not NIL while the other stays held; a different multi-request of the session over
 * the first name is not this one either. Each such retry is an ERR saying the outcome is gone. */
TEST_F(fsm_fx, a_retry_answers_for_every_name_and_an_outcome_that_is_gone_is_an_error)
{
    struct fsm *f = fx->f;
    uint64_t o = open_session(f, 10000, 0), m = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "a", o, 0)));
    CHECK(apply_multi_req(f, m, WAIT, "a b", 1).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "a", m).kind == FSM_REPLY_NIL); /* the timer: both names */
    CHECK_EQ_U64(waiters_of(f, "b"), 0);
    CHECK(apply_lock(f, "a", m, WAIT).kind == FSM_REPLY_QUEUED); /* another thread, a alone */
    uint64_t rev = fsm_revision(f);
    CHECK(outcome_gone(apply_multi_req(f, m, WAIT, "a b", 1)));
    CHECK_EQ_U64(fsm_revision(f), rev); /* a replay: nothing changes */
    CHECK(apply_cancel_wait(f, "a", m).kind == FSM_REPLY_NIL);
    /* another multi-request over a (with c, not b) is not the retried one */
    CHECK(apply_multi_req(f, m, WAIT, "a c", 2).kind == FSM_REPLY_QUEUED);
    CHECK(apply_multi_req(f, m, WAIT, "a c", 2).kind == FSM_REPLY_QUEUED);
    CHECK(apply_cancel_wait(f, "a", m).kind == FSM_REPLY_NIL);
    /* granted from the queue, then a released: b alone is no answer to the request */
    CHECK(apply_multi_req(f, m, WAIT, "a b", 3).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "a", o).kind == FSM_REPLY_OK);
    uint64_t first = token_of(apply_multi_req(f, m, WAIT, "a b", 3));
    CHECK(first && holder_of(f, "a") == m && holder_of(f, "b") == m);
    CHECK(apply_unlock(f, "a", m).kind == FSM_REPLY_OK);
    CHECK(outcome_gone(apply_multi_req(f, m, WAIT, "a b", 3)));
    CHECK(invariants_hold(f) && restores_identically(f));
}

/* A waiting multi-request survives a snapshot: the restored state is the same bytes, and it is
 * granted there exactly as in the original. */
TEST_F(fsm_fx, a_snapshot_keeps_a_waiting_multi_request_and_it_is_granted_the_same_after)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t o = open_session(f, 1000, 0), m = open_session(f, 1000, 0),
             m2 = open_session(f, 1000, 0), s = open_session(f, 1000, 0);
    CHECK(token_of(apply_lock(f, "c", o, 0)));
    CHECK(apply_multi(f, m, WAIT, "a b* c").kind == FSM_REPLY_QUEUED);
    CHECK(apply_multi(f, m2, WAIT, "b* d").kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "a", s, WAIT).kind == FSM_REPLY_QUEUED);
    CHECK(restores_identically(f));
    struct buf *snap = &fx->scratch[0];
    char err[128];
    snapshot_into(f, snap);
    CHECK(fsm_restore(g, (const uint8_t *)snap->p, snap->len, err, sizeof(err)) == 0);
    CHECK(apply_unlock(f, "c", o).kind == FSM_REPLY_OK);
    size_t nf = EV.n;
    CHECK(apply_unlock(g, "c", o).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(EV.n, nf);
    CHECK(holder_of(g, "a") == m && holder_of(g, "c") == m && token_held(g, "b", m, NULL));
    CHECK(token_held(g, "b", m2, NULL) && holder_of(g, "d") == m2);
    buf_free(&fx->before);
    snapshot_into(f, &fx->before);
    CHECK(snapshot_equals(g, &fx->before));
    CHECK(invariants_hold(g));
}

/* Liveness: after any mix of waiting single, shared and multi requests, once every holder lets
 * go the oldest waiting request is granted, in full; repeating that empties every queue. So no
 * request waits behind a later one forever, whatever the mix (the proof: docs/protocol.md). */
TEST_F(fsm_fx, the_oldest_waiting_request_is_granted_once_the_holders_let_go)
{
    struct fsm *f = fx->f;
    enum { NS = 8, NL = 5 };
    static const char *const names[NL] = {"a", "b", "c", "d", "e"};
    uint32_t seed = 12345;
    for (int round = 0; round < 40; round++) {
        fsm_free(f);
        f = fx->f = fsm_new();
        CHECK(f);
        uint64_t sid[NS], order[NS];
        char spec[NS][32];
        size_t nq = 0;
        for (int i = 0; i < NS; i++)
            sid[i] = open_session(f, 1000, 0);
        for (int i = 0; i < NS; i++) {
            spec[i][0] = '\0';
            for (int k = 0; k < NL; k++) {
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) % 3 == 0) {
                    strcat(spec[i], names[k]);
                    if ((seed >> 20) % 3 == 0)
                        strcat(spec[i], "*");
                    strcat(spec[i], " ");
                }
            }
            if (!spec[i][0])
                strcpy(spec[i], names[i % NL]);
            struct fsm_reply r = apply_multi(f, sid[i], WAIT, spec[i]);
            CHECK(r.kind == FSM_REPLY_INT || r.kind == FSM_REPLY_QUEUED);
            if (r.kind == FSM_REPLY_QUEUED)
                order[nq++] = sid[i];
            CHECK(invariants_hold(f));
        }
        /* each pass: the oldest request still waiting, then every holder (a session without
           a wait that holds something) lets go; that request must now hold all it asked for */
        for (size_t next = 0; next < nq; next++) {
            if (waits_of(f, order[next]) == 0)
                continue; /* granted in an earlier pass beside an older one */
            uint64_t oldest = order[next];
            bool holds[NS];
            for (int i = 0; i < NS; i++) {
                struct fsm_session_view v;
                holds[i] = fsm_session_info(f, sid[i], &v) && !v.n_waits && v.n_locks + v.n_shared;
            }
            for (int i = 0; i < NS; i++)
                for (int k = 0; k < NL && holds[i]; k++)
                    if (holder_of(f, names[k]) == sid[i] || token_held(f, names[k], sid[i], NULL))
                        CHECK(apply_unlock(f, names[k], sid[i]).kind == FSM_REPLY_OK);
            CHECK(invariants_hold(f));
            struct fsm_session_view v;
            CHECK_EQ_U64(waits_of(f, oldest), 0);
            CHECK(fsm_session_info(f, oldest, &v) && v.n_locks + v.n_shared > 0);
        }
        for (int i = 0; i < NS; i++)
            CHECK_EQ_U64(waits_of(f, sid[i]), 0);
    }
}

/* ---- deadlock detection (waitgraph.h) at log format 2 ---- */

static void format_2(struct fsm *f)
{
    struct fsm_cmd c = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = FSM_FORMAT_2}};
    if (apply_cmd(f, &c).kind != FSM_REPLY_OK)
        abort();
}

static bool is_deadlock(struct fsm_reply r, const char *want)
{
    return r.kind == FSM_REPLY_ERR && strcmp(r.err, want) == 0;
}

/* The DEADLOCK event of the last apply: its lock name into out ("" if none). */
static const char *deadlock_lock(char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == FSM_EV_DEADLOCK)
            snprintf(out, cap, "%.*s", (int)EV.ev[i].name.len, EV.ev[i].name.p);
    return out;
}

static void add_sid(void *arg, uint64_t sid, bool any)
{
    char *s = arg;
    size_t n = strlen(s);
    snprintf(s + n, 128 - n, "%llu%s,", (unsigned long long)sid, any ? "?" : "");
}

/* The sessions `sid`'s request on `name` waits for, as "a,b," (out: 128 bytes). */
static const char *waits_for(const struct fsm *f, const char *name, uint64_t sid, char *out)
{
    out[0] = '\0';
    fsm_waiter_waits_for(f, name, strlen(name), sid, add_sid, out);
    return out;
}

static const char *sids(char *out, uint64_t a, uint64_t b)
{
    if (b)
        snprintf(out, 128, "%llu,%llu,", (unsigned long long)a, (unsigned long long)b);
    else
        snprintf(out, 128, "%llu,", (unsigned long long)a);
    return out;
}

/* Nothing changed but the revision, which moved by exactly one: f's counts equal those of
 * fx->before (restored into fx->g). */
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

TEST_F(fsm_fx, a_multi_request_closing_a_two_session_cycle_is_refused_and_queued_on_no_name)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)) && token_of(apply_lock(f, "y", b, 0)));
    CHECK_EQ_U64(apply_lock(f, "y", a, WAIT).kind, FSM_REPLY_QUEUED); /* a -> b */
    CHECK(token_of(apply_lock(f, "w", a, 0)));
    snapshot_into(f, &fx->before);
    uint64_t rev0 = fsm_revision(f);
    /* b asks for w (shared), x and a free z: its wait for x closes b -> a -> b */
    struct fsm_reply r = apply_multi(f, b, WAIT, "w* x z");
    char want[128], nm[16];
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -w-> %llu -y-> %llu",
             (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
    CHECK(is_deadlock(r, want)); /* the shortest cycle, through its first name */
    CHECK(strcmp(deadlock_lock(nm, sizeof(nm)), "w") == 0);
    CHECK(has_event(FSM_EV_DEADLOCK, b) && !has_event(FSM_EV_WAIT_STARTED, 0));
    CHECK(unchanged_but_one_revision(fx, rev0)); /* the event's revision, nothing else */
    CHECK_EQ_U64(waiters_of(f, "w") + waiters_of(f, "x") + waits_of(f, b), 0);
    struct fsm_lock_view v;
    CHECK(!fsm_lock_info(f, "z", 1, &v)); /* not even created */
    CHECK_EQ_U64(waiters_of(f, "y"), 1);  /* the other wait is untouched */
    /* refused in exclusive mode alone too: b's wait for x */
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -x-> %llu -y-> %llu",
             (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
    CHECK(is_deadlock(apply_multi(f, b, WAIT, "x z"), want));
    /* the victim lets go of y: a gets it, and b's multi-request can now queue */
    CHECK_EQ_U64(apply_unlock(f, "y", b).kind, FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "y"), a);
    CHECK_EQ_U64(apply_multi(f, b, WAIT, "w* x z").kind, FSM_REPLY_QUEUED);
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_single_lock_closing_a_cycle_through_a_queued_multi_request_is_refused)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "x", a, 0)) && token_of(apply_lock(f, "y", b, 0)));
    /* a waits for y (held by b) and z (free: a heads its queue, in shared mode) */
    CHECK_EQ_U64(apply_multi(f, a, WAIT, "y z*").kind, FSM_REPLY_QUEUED);
    char w[128], want[128];
    CHECK(strcmp(waits_for(f, "y", a, w), sids(want, b, 0)) == 0); /* blockers per name */
    CHECK(strcmp(waits_for(f, "z", a, w), "") == 0);
    /* b's exclusive wait for x, held by a */
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -x-> %llu -y-> %llu",
             (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
    CHECK(is_deadlock(apply_lock(f, "x", b, WAIT), want));
    /* b's shared wait for z: a shared request never waits for a shared one, but a waiting
       multi-request blocks the queue until all its names can be granted: b -> a */
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -z-> %llu -y-> %llu",
             (unsigned long long)b, (unsigned long long)a, (unsigned long long)b);
    CHECK(is_deadlock(apply_lock_shared(f, "z", b, WAIT), want));
    CHECK_EQ_U64(waiters_of(f, "z") + waiters_of(f, "x"), 1);
    /* a third reader of z queues behind a's multi-request and says whom it waits for */
    uint64_t c = open_session(f, 10000, 0);
    CHECK_EQ_U64(apply_lock_shared(f, "z", c, WAIT).kind, FSM_REPLY_QUEUED);
    CHECK(strcmp(waits_for(f, "z", c, w), sids(want, a, 0)) == 0);
    CHECK(invariants_hold(f) && restores_identically(f));
    /* b lets go: a gets y and z, c reads z beside it */
    CHECK_EQ_U64(apply_unlock(f, "y", b).kind, FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "y"), a);
    CHECK(token_held(f, "z", a, NULL) && token_held(f, "z", c, NULL));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, readers_in_a_multi_request_are_no_cycle_but_a_reader_it_blocks_can_be)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0), d = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock_shared(f, "r", a, 0)) && token_of(apply_lock_shared(f, "r", b, 0)));
    CHECK(token_of(apply_lock(f, "x", c, 0)) && token_of(apply_lock(f, "y", d, 0)));
    CHECK_EQ_U64(apply_lock(f, "x", a, WAIT).kind, FSM_REPLY_QUEUED); /* a -> c */
    /* c reads r beside a and b (no edge to them) and waits for y (d waits for nobody) */
    CHECK_EQ_U64(apply_multi(f, c, WAIT, "r* y").kind, FSM_REPLY_QUEUED);
    char w[128], want[128];
    CHECK(strcmp(waits_for(f, "r", c, w), "") == 0);
    CHECK(strcmp(waits_for(f, "y", c, w), sids(want, d, 0)) == 0);
    /* e reads r behind c's multi-request: e -> c -> d, no cycle */
    uint64_t e = open_session(f, 10000, 0);
    CHECK_EQ_U64(apply_lock_shared(f, "r", e, WAIT).kind, FSM_REPLY_QUEUED);
    /* d reads r: it would wait for c's multi-request, which waits for d's y */
    snprintf(want, sizeof(want), "DEADLOCK cycle of 2: %llu -r-> %llu -y-> %llu",
             (unsigned long long)d, (unsigned long long)c, (unsigned long long)d);
    CHECK(is_deadlock(apply_lock_shared(f, "r", d, WAIT), want));
    CHECK(invariants_hold(f) && restores_identically(f));
    /* d lets go: c gets r and y together, e reads r with it */
    CHECK_EQ_U64(apply_unlock(f, "y", d).kind, FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "y"), c);
    CHECK(token_held(f, "r", c, NULL) && token_held(f, "r", e, NULL));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_three_party_cycle_closed_by_one_name_of_a_multi_request_is_refused)
{
    struct fsm *f = fx->f;
    format_2(f);
    uint64_t s1 = open_session(f, 10000, 0), s2 = open_session(f, 10000, 0),
             s3 = open_session(f, 10000, 0), s4 = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "a", s1, 0)) && token_of(apply_lock(f, "b", s2, 0)) &&
          token_of(apply_lock(f, "c", s3, 0)) && token_of(apply_lock(f, "d", s4, 0)));
    CHECK_EQ_U64(apply_lock(f, "b", s1, WAIT).kind, FSM_REPLY_QUEUED); /* s1 -> s2 */
    CHECK_EQ_U64(apply_lock(f, "c", s2, WAIT).kind, FSM_REPLY_QUEUED); /* s2 -> s3 */
    /* s3 asks for d (s4 waits for nobody) and a: a closes s3 -> s1 -> s2 -> s3 */
    char want[128];
    snprintf(want, sizeof(want), "DEADLOCK cycle of 3: %llu -a-> %llu -b-> %llu -c-> %llu",
             (unsigned long long)s3, (unsigned long long)s1, (unsigned long long)s2,
             (unsigned long long)s3);
    CHECK(is_deadlock(apply_multi(f, s3, WAIT, "d a"), want));
    CHECK_EQ_U64(waits_of(f, s3) + waiters_of(f, "d") + waiters_of(f, "a"), 0);
    /* the same names with s3 in the middle: s1's multi-request for b and d queues (s2 and s4
       let go in time), then s3's wait for a closes s3 -> s1 -b-> s2 -> s3 through it */
    CHECK_EQ_U64(apply_cancel_wait(f, "b", s1).kind, FSM_REPLY_NIL);
    CHECK_EQ_U64(apply_multi(f, s1, WAIT, "b d").kind, FSM_REPLY_QUEUED);
    CHECK(is_deadlock(apply_lock(f, "a", s3, WAIT), want));
    CHECK(invariants_hold(f) && restores_identically(f));
}

int main(void)
{
    RUN_F(fsm_fx, free_names_are_granted_in_one_entry_with_consecutive_tokens_in_name_order);
    RUN_F(fsm_fx, a_busy_name_without_wait_answers_nil_and_changes_nothing);
    RUN_F(fsm_fx, held_or_awaited_names_and_other_kinds_are_refused_and_change_nothing);
    RUN_F(fsm_fx, an_entry_with_a_name_twice_or_out_of_order_is_refused_by_the_decoder);
    RUN_F(fsm_fx, a_waiting_multi_request_blocks_its_free_names_and_nothing_overtakes_it);
    RUN_F(fsm_fx, shared_names_are_compatible_with_shared_holders_and_exclusive_ones_are_not);
    RUN_F(fsm_fx, a_multi_grant_lets_the_readers_behind_its_shared_name_in);
    RUN_F(fsm_fx, cancel_unlock_or_session_end_leave_every_queue_at_once);
    RUN_F(fsm_fx, overlapping_multi_requests_are_granted_one_after_the_other_in_enqueue_order);
    RUN_F(fsm_fx, an_ending_session_is_not_granted_its_own_multi_request_by_its_releases);
    RUN_F(fsm_fx, a_retry_after_queued_answers_the_first_token_once_granted);
    RUN_F(fsm_fx, a_snapshot_keeps_a_waiting_multi_request_and_it_is_granted_the_same_after);
    RUN_F(fsm_fx, the_oldest_waiting_request_is_granted_once_the_holders_let_go);
    RUN_F(fsm_fx, a_multi_request_closing_a_two_session_cycle_is_refused_and_queued_on_no_name);
    RUN_F(fsm_fx, a_single_lock_closing_a_cycle_through_a_queued_multi_request_is_refused);
    RUN_F(fsm_fx, readers_in_a_multi_request_are_no_cycle_but_a_reader_it_blocks_can_be);
    RUN_F(fsm_fx, a_three_party_cycle_closed_by_one_name_of_a_multi_request_is_refused);
    RUN_F(fsm_fx, a_retry_answers_for_every_name_and_an_outcome_that_is_gone_is_an_error);
    TEST_MAIN_END();
}
