/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_lockmeta — lock metadata (src/fsm/lockmeta.c): LOCK_META's value and max hold ride
 * on the exclusive grant (at once, or kept by the waiter until its grant), a retry changes
 * neither, MAXHOLD_END releases only that grant as an expiry does, the transitions count the
 * ended grants of the record, and the snapshot's section 1 carries all of it only while some
 * lock has any.
 *
 * One test per rule; every test ends with the invariant audit.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"

static struct fsm_reply lock_meta(struct fsm *f, const char *name, uint64_t sid, const char *value,
                                  uint64_t maxhold_ms, uint64_t wait_ms, uint64_t flags)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK_META,
                        .lock_meta = {.name = S(name),
                                      .sid = sid,
                                      .flags = flags,
                                      .value = S(value),
                                      .maxhold_ms = maxhold_ms,
                                      .wait_ms = wait_ms}};
    return apply_cmd(f, &c);
}

static struct fsm_reply maxhold_end(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {.op = FSM_OP_MAXHOLD_END, .maxhold_end = {.name = S(name), .token = token}};
    return apply_cmd(f, &c);
}

static int fenced_put(struct fsm *f, const char *name, uint64_t token)
{
    struct fsm_cmd c = {
        .op = FSM_OP_PUT,
        .put = {.key = S("k"),
                .value = S("v"),
                .cond = {.has_fence = true, .fence_name = S(name), .fence_token = token}}};
    return apply_cmd(f, &c).kind == FSM_REPLY_INT;
}

static const struct fsm_event *event_of(uint8_t type)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == type)
            return &EV.ev[i];
    return NULL;
}

static int same(struct fsm_str a, const char *b)
{
    return a.len == strlen(b) && (a.len == 0 || memcmp(a.p, b, a.len) == 0);
}

static struct fsm_lock_view info(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    memset(&v, 0, sizeof(v));
    fsm_lock_info(f, name, strlen(name), &v);
    return v;
}

static uint8_t snapshot_version(const struct fsm *f)
{
    struct buf b;
    snapshot_into(f, &b);
    uint8_t v = (uint8_t)b.p[4];
    buf_free(&b);
    return v;
}

static uint64_t data_bytes(const struct fsm *f)
{
    struct fsm_stats st;
    fsm_stats(f, &st);
    return st.data_bytes;
}

TEST_F(fsm_fx, a_grant_carries_the_value_and_max_hold_and_the_acquired_event_the_value)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    uint64_t before = data_bytes(f);
    uint64_t t = token_of(lock_meta(f, "L", a, "host=h1 job=7", 30000, 0, 0));
    CHECK(t != 0);
    const struct fsm_event *e = event_of(FSM_EV_GRANTED);
    CHECK(e != NULL && e->token == t && same(e->value, "host=h1 job=7"));
    struct fsm_lock_view v = info(f, "L");
    CHECK_EQ_U64(v.holder_sid, a);
    CHECK(same(v.value, "host=h1 job=7"));
    CHECK_EQ_U64(v.maxhold_ms, 30000);
    CHECK_EQ_U64(v.transitions, 0);
    CHECK_EQ_U64(data_bytes(f), before + FSM_RECORD_BYTES + 1 + strlen("host=h1 job=7"));
    CHECK(fenced_put(f, "L", t));
    CHECK(invariants_hold(f));
    CHECK(restores_identically(f));
}

TEST_F(fsm_fx, a_lock_by_the_holder_or_a_queued_session_changes_neither_value_nor_max_hold)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_meta(f, "L", a, "first", 5000, 0, 0));
    CHECK(lock_meta(f, "L", b, "b1", 7000, 60000, 0).kind == FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->before);
    CHECK_EQ_U64(token_of(lock_meta(f, "L", a, "second", 999999, 0, 0)), t);
    CHECK_EQ_U64(token_of(apply_lock(f, "L", a, 0)), t);
    CHECK(lock_meta(f, "L", b, "b2", 1000, 60000, 0).kind == FSM_REPLY_QUEUED);
    CHECK(snapshot_equals(f, &fx->before)); /* nothing changed: not the value, not the bound */
    struct fsm_lock_view v = info(f, "L");
    CHECK(same(v.value, "first") && v.maxhold_ms == 5000);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK); /* b is granted with ITS first ask */
    v = info(f, "L");
    CHECK_EQ_U64(v.holder_sid, b);
    CHECK(same(v.value, "b1") && v.maxhold_ms == 7000);
    CHECK(same(event_of(FSM_EV_GRANTED)->value, "b1"));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_waiter_keeps_its_value_and_max_hold_until_granted_and_through_a_snapshot)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0),
             c = open_session(f, 10000, 0);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK(lock_meta(f, "L", b, "vb", 0, 60000, 0).kind == FSM_REPLY_QUEUED);
    CHECK(apply_lock(f, "L", c, 60000).kind == FSM_REPLY_QUEUED);
    CHECK_EQ_U64(snapshot_version(f), 8);
    CHECK(restores_identically(f));
    struct fsm_lock_view v = info(f, "L");
    CHECK(same(v.value, "") && v.maxhold_ms == 0); /* the holder's own: none */
    /* restored, the waiter's value still reaches its grant */
    struct fsm *g = fsm_new();
    struct buf snap;
    char err[128];
    snapshot_into(f, &snap);
    CHECK(fsm_restore(g, (const uint8_t *)snap.p, snap.len, err, sizeof(err)) == 0);
    buf_free(&snap);
    CHECK(apply_unlock(g, "L", a).kind == FSM_REPLY_OK);
    v = info(g, "L");
    CHECK(v.holder_sid == b && same(v.value, "vb") && v.transitions == 1);
    CHECK(apply_unlock(g, "L", b).kind == FSM_REPLY_OK);
    v = info(g, "L");
    CHECK(v.holder_sid == c && same(v.value, "") && v.transitions == 2);
    CHECK(invariants_hold(g));
    fsm_free(g);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, max_hold_end_releases_as_an_expiry_lockdelay_then_a_larger_token_stale_old)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 500), b = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_meta(f, "L", a, "", 2000, 0, 0));
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    uint64_t rev = fsm_revision(f);
    CHECK(maxhold_end(f, "L", t).kind == FSM_REPLY_OK);
    CHECK(fsm_revision(f) > rev);
    const struct fsm_event *e = event_of(FSM_EV_RELEASED);
    CHECK(e && e->token == t && e->sid == a && e->expired && e->maxhold && e->ms == 2000);
    CHECK(has_event(FSM_EV_LOCKDELAY_STARTED, 0));
    struct fsm_lock_view v = info(f, "L");
    CHECK(v.holder_sid == 0 && v.in_lockdelay && v.maxhold_ms == 0);
    CHECK_EQ_U64(v.transitions, 1);
    CHECK(!fenced_put(f, "L", t)); /* the old token is stale at once */
    CHECK(apply_lockdelay_end(f, "L").kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "L"), b);
    uint64_t t2 = info(f, "L").token;
    CHECK(t2 > t);
    CHECK(fenced_put(f, "L", t2) && !fenced_put(f, "L", t));
    CHECK(fsm_session_info(f, a, &(struct fsm_session_view){0})); /* the session lives on */
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, max_hold_end_of_another_grant_or_of_a_grant_without_max_hold_changes_nothing)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t t = token_of(lock_meta(f, "L", a, "x", 2000, 0, 0));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    uint64_t t2 = token_of(apply_lock(f, "L", b, 0)); /* a later grant, no max hold */
    snapshot_into(f, &fx->before);
    CHECK(maxhold_end(f, "L", t).kind == FSM_REPLY_OK);  /* a stale timer */
    CHECK(maxhold_end(f, "L", t2).kind == FSM_REPLY_OK); /* no max hold on this grant */
    CHECK(maxhold_end(f, "nobody", 1).kind == FSM_REPLY_OK);
    CHECK(snapshot_equals(f, &fx->before));
    CHECK_EQ_U64(holder_of(f, "L"), b);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, transitions_count_ended_grants_once_a_lock_meta_reached_the_record_while_it_lives)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    /* plain LOCK only: no metadata, the state and its snapshot as the previous release's */
    CHECK(token_of(apply_lock(f, "P", a, 0)));
    CHECK(apply_lock(f, "P", b, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "P", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(holder_of(f, "P"), b);
    CHECK_EQ_U64(info(f, "P").transitions, 0);
    CHECK(snapshot_version(f) < 8); /* the oldest version that holds the state */
    CHECK(apply_unlock(f, "P", b).kind == FSM_REPLY_OK);
    /* a LOCK_META reaches L: its record counts from then on */
    CHECK(token_of(lock_meta(f, "L", a, "", 0, 0, 0)));
    CHECK_EQ_U64(info(f, "L").transitions, 0);
    CHECK_EQ_U64(snapshot_version(f), 8);
    CHECK(apply_lock(f, "L", b, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(info(f, "L").transitions, 1);
    CHECK(apply_lock(f, "L", a, 60000).kind == FSM_REPLY_QUEUED);
    CHECK(apply_expire(f, b).kind == FSM_REPLY_OK); /* an expiry is an ended grant too */
    CHECK_EQ_U64(info(f, "L").transitions, 2);
    CHECK_EQ_U64(holder_of(f, "L"), a);
    CHECK(restores_identically(f));
    CHECK(apply_unlock(f, "L", a).kind == FSM_REPLY_OK); /* free, nobody waits: dropped */
    CHECK(!fsm_lock_info(f, "L", 1, &(struct fsm_lock_view){0}));
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    CHECK_EQ_U64(info(f, "L").transitions, 0); /* a new record, no LOCK_META yet */
    CHECK(snapshot_version(f) < 8);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, notify_combines_and_unknown_flags_or_too_long_max_hold_are_refused)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    uint64_t t = token_of(apply_lock(f, "L", a, 0));
    snapshot_into(f, &fx->before);
    CHECK_STR_PREFIX(lock_meta(f, "L", b, "v", 0, 1000, 2).err, "ERR");
    CHECK_STR_PREFIX(lock_meta(f, "L", b, "v", FSM_MAX_MAXHOLD_MS + 1, 1000, 0).err, "ERR");
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(lock_meta(f, "L", b, "v", 3000, 1000, 1).kind == FSM_REPLY_QUEUED);
    const struct fsm_event *e = event_of(FSM_EV_WAIT_NOTIFY);
    CHECK(e && e->sid == b && e->token == t);
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, a_shared_holders_upgrade_takes_the_value_and_a_semaphore_name_is_wrongtype)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    struct fsm_cmd sh = {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = S("R"), .sid = a}};
    CHECK(token_of(apply_cmd(f, &sh)));
    CHECK(token_of(lock_meta(f, "R", a, "up", 4000, 0, 0)));
    struct fsm_lock_view v = info(f, "R");
    CHECK(v.holder_sid == a && same(v.value, "up") && v.maxhold_ms == 4000);
    struct fsm_cmd sem = {.op = FSM_OP_SEM_ACQUIRE,
                          .sem_acquire = {.name = S("S"), .sid = a, .limit = 2}};
    CHECK(token_of(apply_cmd(f, &sem)));
    CHECK_STR_PREFIX(lock_meta(f, "S", a, "v", 0, 0, 0).err, "WRONGTYPE");
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_end_of_a_session_frees_its_values_held_and_queued)
{
    struct fsm *f = fx->f;
    uint64_t before = data_bytes(f);
    uint64_t a = open_session(f, 10000, 0), b = open_session(f, 10000, 0);
    CHECK(token_of(lock_meta(f, "L", a, "held-value", 0, 0, 0)));
    CHECK(lock_meta(f, "L", b, "queued-value", 0, 60000, 0).kind == FSM_REPLY_QUEUED);
    CHECK(token_of(lock_meta(f, "M", b, "other", 0, 0, 0)));
    CHECK(apply_close(f, b).kind == FSM_REPLY_OK);
    CHECK(apply_close(f, a).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(data_bytes(f), before);
    CHECK(invariants_hold(f));
}

/* Restore refuses what emit cannot write: a section naming no lock, an empty entry. */
TEST_F(fsm_fx, the_section_refuses_metadata_of_no_lock_and_empty_entries)
{
    struct fsm *f = fx->f;
    uint64_t a = open_session(f, 10000, 0);
    CHECK(token_of(lock_meta(f, "L", a, "v", 0, 0, 0)));
    struct buf snap;
    snapshot_into(f, &snap);
    CHECK(restores((const uint8_t *)snap.p, snap.len));
    /* the section is the tail: n=1, tag 1, len, payload {n=1, "L", 0, 0, "v", 0} */
    static const uint8_t tail[] = {1, 1, 8, 1, 1, 'L', 0, 0, 1, 'v', 0};
    CHECK(snap.len > sizeof(tail) &&
          memcmp(snap.p + snap.len - sizeof(tail), tail, sizeof(tail)) == 0);
    uint8_t *p = (uint8_t *)snap.p + snap.len - sizeof(tail);
    p[5] = 'M'; /* no such lock */
    CHECK(!restores((const uint8_t *)snap.p, snap.len));
    p[5] = 'L';
    p[8] = 0; /* an empty value, then a stray byte: empty entry and trailing bytes */
    CHECK(!restores((const uint8_t *)snap.p, snap.len));
    buf_free(&snap);
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, a_grant_carries_the_value_and_max_hold_and_the_acquired_event_the_value);
    RUN_F(fsm_fx, a_lock_by_the_holder_or_a_queued_session_changes_neither_value_nor_max_hold);
    RUN_F(fsm_fx, a_waiter_keeps_its_value_and_max_hold_until_granted_and_through_a_snapshot);
    RUN_F(fsm_fx, max_hold_end_releases_as_an_expiry_lockdelay_then_a_larger_token_stale_old);
    RUN_F(fsm_fx, max_hold_end_of_another_grant_or_of_a_grant_without_max_hold_changes_nothing);
    RUN_F(fsm_fx,
          transitions_count_ended_grants_once_a_lock_meta_reached_the_record_while_it_lives);
    RUN_F(fsm_fx, notify_combines_and_unknown_flags_or_too_long_max_hold_are_refused);
    RUN_F(fsm_fx, a_shared_holders_upgrade_takes_the_value_and_a_semaphore_name_is_wrongtype);
    RUN_F(fsm_fx, the_end_of_a_session_frees_its_values_held_and_queued);
    RUN_F(fsm_fx, the_section_refuses_metadata_of_no_lock_and_empty_entries);
    TEST_MAIN_END();
}
