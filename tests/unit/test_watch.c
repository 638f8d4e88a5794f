/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_watch — the event history behind XREAD (src/server/watch/watch.c): ids, stream names, the
 * ring's bounds and floor (-COMPACTED instead of a gap), prefix filters and the entry shape.
 * Events come from the real FSM where their content matters (fsm_fixture.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"
#include "server/watch/watch.h"

/* One FSM event of `type` with a name; `ms` and `expired` as given. */
static struct fsm_events one_event(uint8_t type, const char *name, uint64_t sid, bool expired)
{
    static struct fsm_event e;
    memset(&e, 0, sizeof(e));
    e.type = type;
    e.sid = sid;
    e.expired = expired;
    e.name.p = name ? name : "";
    e.name.len = name ? (uint32_t)strlen(name) : 0;
    struct fsm_events ev = {.ev = &e, .n = 1, .cap = 1};
    return ev;
}

static void add_put(struct watch *w, uint64_t rev, const char *key, const char *val)
{
    struct fsm_events ev = one_event(FSM_EV_KEY_PUT, key, 0, false);
    ev.ev[0].value.p = val;
    ev.ev[0].value.len = (uint32_t)strlen(val);
    watch_add(w, rev, &ev);
}

/* Every test's ring (and the FSM fixture for the end-to-end one): torn down even when a CHECK
 * returns early. A test sets the bounds it needs with watch_init on `w`. */
struct wfx {
    struct fsm_fx fsm;
    struct watch w;
};

static int wfx_setup(struct wfx *fx)
{
    watch_init(&fx->w, 100, 1 << 20, 64);
    return fsm_fx_setup(&fx->fsm);
}

static void wfx_teardown(struct wfx *fx)
{
    watch_free(&fx->w);
    fsm_fx_teardown(&fx->fsm);
}

static int id_is(struct watch_id id, uint64_t rev, uint64_t n)
{
    return id.rev == rev && id.n == n;
}

TEST(ids_parse_like_redis_and_format_back)
{
    struct watch_id id;
    CHECK(watch_id_parse("12-3", 4, &id) == 0 && id_is(id, 12, 3));
    CHECK(watch_id_parse("12", 2, &id) == 0 && id_is(id, 12, 0)); /* as XREAD reads "12" */
    CHECK(watch_id_parse("0", 1, &id) == 0 && id_is(id, 0, 0));
    CHECK(watch_id_parse("18446744073709551615-18446744073709551615", 41, &id) == 0);
    CHECK(id_is(id, UINT64_MAX, UINT64_MAX));
    char out[WATCH_ID_BUF];
    CHECK(watch_id_format(id, out) == 41 &&
          strcmp(out, "18446744073709551615-18446744073709551615") == 0);
    const char *bad[] = {"",      "-", "1-", "-1", "a",  "1-a",
                         "1-2-3", "+", "$",  " 1", "1 ", "18446744073709551616"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(watch_id_parse(bad[i], strlen(bad[i]), &id) == -1);
    CHECK(watch_id_cmp((struct watch_id){1, 9}, (struct watch_id){2, 0}) < 0);
    CHECK(watch_id_cmp((struct watch_id){2, 1}, (struct watch_id){2, 0}) > 0);
}

TEST(stream_names_are_the_whole_stream_or_a_prefix)
{
    bool all;
    const char *p;
    size_t n;
    CHECK(watch_stream_parse("fencelock:events", 16, &all, &p, &n) == 0 && all && n == 0);
    CHECK(watch_stream_parse("fencelock:events:app/", 21, &all, &p, &n) == 0 && !all);
    CHECK(n == 4 && memcmp(p, "app/", 4) == 0);
    CHECK(watch_stream_parse("fencelock:events:", 17, &all, &p, &n) == 0 && !all && n == 0);
    CHECK(watch_stream_parse("fencelock:eventsx", 17, &all, &p, &n) == -1);
    CHECK(watch_stream_parse("mystream", 8, &all, &p, &n) == -1);
    CHECK(watch_stream_parse("fencelock:event", 15, &all, &p, &n) == -1);
}

TEST_F(wfx, events_of_one_command_share_its_revision_in_order)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    struct fsm_event e[3] = {
        {.type = FSM_EV_RELEASED, .sid = 4, .token = 7, .name = {"L", 1}},
        {.type = FSM_EV_GRANTED, .sid = 5, .token = 9, .name = {"L", 1}},
        {.type = FSM_EV_FENCE_REJECTED, .name = {"L", 1}}, /* changes nothing: not streamed */
    };
    struct fsm_events ev = {.ev = e, .n = 3, .cap = 3};
    watch_add(w, 9, &ev);
    add_put(w, 10, "k", "v");
    CHECK_EQ_U64(w->n, 3);
    CHECK(id_is(watch_at(w, 0)->id, 9, 0) && id_is(watch_at(w, 1)->id, 9, 1));
    CHECK(id_is(watch_at(w, 2)->id, 10, 0) && id_is(w->last, 10, 0));
    CHECK(strcmp(watch_kind_name(watch_at(w, 0)->kind), "release") == 0);
    CHECK(strcmp(watch_kind_name(watch_at(w, 1)->kind), "grant") == 0);
    CHECK_EQ_U64(watch_after(w, (struct watch_id){0, 0}), 0);
    CHECK_EQ_U64(watch_after(w, (struct watch_id){9, 0}), 1);
    CHECK_EQ_U64(watch_after(w, (struct watch_id){9, 5}), 2);
    CHECK_EQ_U64(watch_after(w, (struct watch_id){10, 0}), 3);
}

TEST_F(wfx, flags_choose_the_kind_release_or_expire_del_or_expire_key)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    struct fsm_events ev = one_event(FSM_EV_RELEASED, "L", 3, true);
    watch_add(w, 1, &ev);
    ev = one_event(FSM_EV_KEY_DELETED, "k", 0, false);
    watch_add(w, 2, &ev);
    ev = one_event(FSM_EV_KEY_DELETED, "k", 3, true);
    watch_add(w, 3, &ev);
    ev = one_event(FSM_EV_SESSION_ENDED, NULL, 3, true);
    watch_add(w, 3, &ev);
    const char *want[] = {"expire", "del", "expire-key", "session-end"};
    CHECK_EQ_U64(w->n, 4);
    for (size_t i = 0; i < 4; i++)
        CHECK(strcmp(watch_kind_name(watch_at(w, i)->kind), want[i]) == 0);
    CHECK(id_is(watch_at(w, 3)->id, 3, 1));
}

/* The HTTP stream's per-user filter (http_events.c) asks which globs an entry's name is under:
 * key events are keys, every other named kind a lock name, session events have none. */
TEST_F(wfx, each_kind_names_a_key_a_lock_or_nothing)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    static const struct {
        uint8_t type;
        const char *name;
        uint64_t sid;
        bool expired;
        enum watch_ns ns;
    } rows[] = {
        {FSM_EV_KEY_PUT, "k", 0, false, WATCH_NS_KEY},
        {FSM_EV_KEY_DELETED, "k", 0, false, WATCH_NS_KEY},
        {FSM_EV_KEY_DELETED, "k", 3, true, WATCH_NS_KEY},
        {FSM_EV_GRANTED, "L", 3, false, WATCH_NS_LOCK},
        {FSM_EV_RELEASED, "L", 3, true, WATCH_NS_LOCK},
        {FSM_EV_WAIT_STARTED, "L", 3, false, WATCH_NS_LOCK},
        {FSM_EV_LEADER, "E", 3, false, WATCH_NS_LOCK},
        {FSM_EV_DEADLOCK, "L", 3, false, WATCH_NS_LOCK},
        {FSM_EV_LATCH_ZERO, "latch", 3, false, WATCH_NS_LOCK},
        {FSM_EV_SESSION_OPENED, NULL, 3, false, WATCH_NS_NONE},
        {FSM_EV_SESSION_ENDED, NULL, 3, true, WATCH_NS_NONE},
    };
    size_t n = sizeof(rows) / sizeof(rows[0]);
    for (size_t i = 0; i < n; i++) {
        struct fsm_events ev = one_event(rows[i].type, rows[i].name, rows[i].sid, rows[i].expired);
        watch_add(w, i + 1, &ev);
    }
    CHECK_EQ_U64(w->n, n);
    for (size_t i = 0; i < n; i++)
        CHECK(watch_entry_ns(watch_at(w, i)) == rows[i].ns);
}

TEST_F(wfx, the_count_bound_evicts_the_oldest_and_moves_the_floor)
{
    struct watch *w = &fx->w;
    watch_init(w, 3, 1 << 20, 64);
    for (uint64_t r = 1; r <= 5; r++)
        add_put(w, r, "k", "v");
    CHECK_EQ_U64(w->n, 3);
    CHECK(id_is(watch_oldest(w), 3, 0) && id_is(w->floor, 2, 0));
    CHECK(watch_check(w, (struct watch_id){2, 0}) == 0);  /* saw 2-0: 3-0 on are all here */
    CHECK(watch_check(w, (struct watch_id){1, 0}) == -1); /* 2-0 is gone */
    CHECK(watch_check(w, (struct watch_id){0, 0}) == 0);  /* "0": from the oldest retained */
    CHECK(watch_check(w, (struct watch_id){9, 0}) == 0);  /* the future is never compacted */
    CHECK_EQ_U64(w->dropped, 2);
}

TEST_F(wfx, the_byte_bound_holds_and_long_values_keep_only_their_length)
{
    struct watch *w = &fx->w;
    watch_init(w, 1000, 4096, 8);
    char big[100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    add_put(w, 1, "k", big);
    CHECK(w->n == 1 && !watch_at(w, 0)->value_kept && watch_at(w, 0)->value_len == 99);
    for (uint64_t r = 2; r < 200; r++)
        add_put(w, r, "key", "12345678");
    CHECK(w->bytes <= 4096 && w->n > 10 && w->n < 200);
    CHECK(watch_at(w, 0)->value_kept);
    CHECK(watch_check(w, w->floor) == 0 && watch_id_cmp(watch_oldest(w), w->floor) > 0);
}

TEST_F(wfx, a_restored_snapshot_forgets_everything_up_to_its_revision)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    add_put(w, 4, "k", "v");
    watch_forget(w, 20);
    CHECK(w->n == 0 && id_is(w->floor, 20, UINT64_MAX) && id_is(w->last, 20, UINT64_MAX));
    CHECK(id_is(watch_oldest(w), 21, 0));
    CHECK(watch_check(w, (struct watch_id){20, 3}) == -1); /* more of 20 may have been */
    CHECK(watch_check(w, (struct watch_id){4, 0}) == -1);
    add_put(w, 21, "k", "v");
    CHECK(w->n == 1 && id_is(watch_at(w, 0)->id, 21, 0));
    CHECK(watch_check(w, (struct watch_id){21, 0}) == 0);
}

TEST_F(wfx, an_event_the_fsm_lost_becomes_a_floor_not_a_gap)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    add_put(w, 1, "a", "v");
    struct fsm_events ev = one_event(FSM_EV_KEY_PUT, "b", 0, false);
    ev.lost = true;
    watch_add(w, 2, &ev);
    CHECK(w->n == 0 && watch_check(w, (struct watch_id){1, 0}) == -1);
    add_put(w, 3, "c", "v");
    CHECK(w->n == 1 && id_is(watch_at(w, 0)->id, 3, 0));
}

TEST_F(wfx, a_prefix_stream_sees_exactly_the_named_events_under_it)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    add_put(w, 1, "app/x", "v");
    add_put(w, 2, "ap", "v");
    add_put(w, 3, "other", "v");
    struct fsm_events ev = one_event(FSM_EV_SESSION_OPENED, NULL, 4, false);
    watch_add(w, 4, &ev);
    ev = one_event(FSM_EV_GRANTED, "app/lock", 4, false);
    watch_add(w, 5, &ev);
    size_t n_app = 0, n_all = 0, n_empty = 0;
    for (size_t i = 0; i < w->n; i++) {
        n_app += watch_match(watch_at(w, i), false, "app/", 4);
        n_all += watch_match(watch_at(w, i), true, NULL, 0);
        n_empty += watch_match(watch_at(w, i), false, "", 0);
    }
    CHECK(n_app == 2 && n_all == 5 && n_empty == 4); /* sessions have no name */
}

TEST_F(wfx, an_entry_renders_as_a_redis_stream_entry)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 2);
    add_put(w, 7, "k", "hi");
    add_put(w, 8, "k", "long");
    struct fsm_events ev = one_event(FSM_EV_GRANTED, "L", 5, false);
    ev.ev[0].token = 9;
    watch_add(w, 9, &ev);
    struct buf b;
    buf_init(&b);
    watch_render(&b, watch_at(w, 0));
    const char *put =
        "*2\r\n$3\r\n7-0\r\n*8\r\n$4\r\ntype\r\n$3\r\nput\r\n$4\r\nname\r\n$1\r\nk\r\n"
        "$5\r\nvalue\r\n$2\r\nhi\r\n$7\r\nmod_rev\r\n$1\r\n7\r\n";
    CHECK(b.len == strlen(put) && memcmp(b.p, put, b.len) == 0);
    buf_reset(&b);
    watch_render(&b, watch_at(w, 1));
    CHECK(strstr(b.p, "$9\r\nvalue_len\r\n$1\r\n4\r\n") != NULL);
    buf_reset(&b);
    watch_render(&b, watch_at(w, 2));
    const char *grant = "*2\r\n$3\r\n9-0\r\n*8\r\n$4\r\ntype\r\n$5\r\ngrant\r\n$4\r\nname\r\n"
                        "$1\r\nL\r\n$5\r\ntoken\r\n$1\r\n9\r\n$3\r\nsid\r\n$1\r\n5\r\n";
    CHECK(b.len == strlen(grant) && memcmp(b.p, grant, b.len) == 0);
    buf_free(&b);
}

TEST_F(wfx, elections_and_semaphores_render_leader_proclaim_and_the_object)
{
    struct watch *w = &fx->w;
    watch_init(w, 100, 1 << 20, 64);
    struct fsm_events ev = one_event(FSM_EV_GRANTED, "S", 5, false);
    ev.ev[0].token = 9;
    ev.ev[0].kind = FSM_KIND_SEM;
    watch_add(w, 9, &ev);
    ev = one_event(FSM_EV_LEADER, "E", 6, false);
    ev.ev[0].token = 10;
    ev.ev[0].kind = FSM_KIND_ELECT;
    ev.ev[0].value = (struct fsm_str){"v1", 2};
    watch_add(w, 10, &ev);
    ev = one_event(FSM_EV_PROCLAIM, "E", 6, false);
    ev.ev[0].value = (struct fsm_str){"v2", 2};
    watch_add(w, 11, &ev);
    ev = one_event(FSM_EV_LEADER, "E", 0, false);
    watch_add(w, 12, &ev);
    const char *want[] = {"grant", "leader", "proclaim", "leader"};
    const uint8_t types[] = {FSM_EV_GRANTED, FSM_EV_LEADER, FSM_EV_PROCLAIM, FSM_EV_LEADER};
    CHECK_EQ_U64(w->n, 4);
    for (size_t i = 0; i < 4; i++) {
        CHECK(strcmp(watch_kind_name(watch_at(w, i)->kind), want[i]) == 0);
        CHECK_EQ_U64(watch_entry_type(watch_at(w, i)), types[i]); /* what ELECT.OBSERVE reads */
    }
    struct buf b;
    buf_init(&b);
    watch_render(&b, watch_at(w, 0));
    const char *grant = "*2\r\n$3\r\n9-0\r\n*10\r\n$4\r\ntype\r\n$5\r\ngrant\r\n$4\r\nname\r\n"
                        "$1\r\nS\r\n$5\r\ntoken\r\n$1\r\n9\r\n$3\r\nsid\r\n$1\r\n5\r\n"
                        "$6\r\nobject\r\n$9\r\nsemaphore\r\n";
    CHECK(b.len == strlen(grant) && memcmp(b.p, grant, b.len) == 0);
    buf_reset(&b);
    watch_render(&b, watch_at(w, 1));
    const char *leader = "*2\r\n$4\r\n10-0\r\n*10\r\n$4\r\ntype\r\n$6\r\nleader\r\n"
                         "$4\r\nname\r\n$1\r\nE\r\n$5\r\nvalue\r\n$2\r\nv1\r\n$5\r\ntoken\r\n"
                         "$2\r\n10\r\n$3\r\nsid\r\n$1\r\n6\r\n";
    CHECK(b.len == strlen(leader) && memcmp(b.p, leader, b.len) == 0);
    buf_reset(&b);
    watch_render(&b, watch_at(w, 3));
    CHECK(strstr(b.p, "$3\r\nsid\r\n$1\r\n0\r\n") != NULL);
    buf_free(&b);
}

/* The FSM's own events, end to end: a session with a leased key and a lock expires. */
TEST_F(wfx, fsm_events_become_stream_entries_in_log_order)
{
    struct fsm *f = fx->fsm.f;
    struct watch *w = &fx->w;
    uint64_t a = open_session(f, 1000, 0);
    watch_add(w, fsm_revision(f), &EV);
    CHECK(token_of(apply_lock(f, "L", a, 0)));
    watch_add(w, fsm_revision(f), &EV);
    CHECK(apply_put(f, "kb", "2", a).kind == FSM_REPLY_INT);
    watch_add(w, fsm_revision(f), &EV);
    CHECK(apply_put(f, "ka", "1", a).kind == FSM_REPLY_INT);
    watch_add(w, fsm_revision(f), &EV);
    CHECK(apply_expire(f, a).kind == FSM_REPLY_OK);
    watch_add(w, fsm_revision(f), &EV);
    const char *want[] = {"session-open", "grant",      "put",        "put",
                          "expire",       "expire-key", "expire-key", "session-end"};
    CHECK_EQ_U64(w->n, 8);
    for (size_t i = 0; i < 8; i++)
        CHECK(strcmp(watch_kind_name(watch_at(w, i)->kind), want[i]) == 0);
    CHECK(memcmp(watch_at(w, 5)->data, "ka", 2) == 0); /* key order, on every replica */
    CHECK(id_is(watch_at(w, 7)->id, fsm_revision(f), 3));
}

/* ---- the name index against a scan of the ring (random histories, many seeds) ---- */

/* One command at `rev` with 1..4 events: puts, grants (named) and session-opens (unnamed). */
static void rnd_command(struct watch *w, uint64_t *x, uint64_t rev)
{
    static const uint8_t types[] = {FSM_EV_KEY_PUT, FSM_EV_GRANTED, FSM_EV_SESSION_OPENED};
    struct fsm_event e[4];
    char names[4][4];
    size_t n = 1 + test_rnd(x) % 4;
    memset(e, 0, sizeof(e));
    for (size_t i = 0; i < n; i++) {
        e[i].type = types[test_rnd(x) % 3];
        e[i].sid = 1 + test_rnd(x) % 3;
        e[i].name.p = names[i];
        e[i].name.len = (uint32_t)test_rnd_name(x, names[i]);
        e[i].value = (struct fsm_str){"vvvvvvvv", (uint32_t)(test_rnd(x) % 9)};
    }
    struct fsm_events ev = {.ev = e, .n = n, .cap = 4, .lost = test_rnd(x) % 50 == 0};
    watch_add(w, rev, &ev);
}

/* The answer by definition: matching entries after `after`, oldest first, at most max. */
static size_t brute_read(const struct watch *w, bool all, const char *p, size_t plen,
                         struct watch_id after, size_t max, const struct watch_entry **out)
{
    size_t k = 0;
    for (size_t i = 0; i < w->n && k < max; i++) {
        const struct watch_entry *e = watch_at(w, i);
        if (watch_id_cmp(e->id, after) > 0 && watch_match(e, all, p, plen))
            out[k++] = e;
    }
    return k;
}

/* An id to read after: 0-0, a retained entry's, the floor, the last, or one in between. */
static struct watch_id rnd_after(const struct watch *w, uint64_t *x)
{
    switch (test_rnd(x) % 5) {
    case 0:
        return (struct watch_id){0, 0};
    case 1:
        return w->n ? watch_at(w, test_rnd(x) % w->n)->id : w->floor;
    case 2:
        return w->floor;
    case 3:
        return w->last;
    default:
        return (struct watch_id){w->last.rev ? test_rnd(x) % (w->last.rev + 1) : 0,
                                 test_rnd(x) % 3};
    }
}

/* One query: XREAD by each path and XLEN / XINFO against the brute force. 0 if they agree. */
static int check_query(struct watch *w, uint64_t *x)
{
    char p[4];
    bool all = test_rnd(x) % 6 == 0;
    size_t plen = all ? 0 : test_rnd_name(x, p);
    struct watch_id after = rnd_after(w, x);
    size_t max = test_rnd(x) % 3 ? 1 + test_rnd(x) % 6 : SIZE_MAX;
    const struct watch_entry **want = malloc((w->n + 1) * sizeof(*want));
    if (!want)
        return -1;
    size_t k = brute_read(w, all, p, plen, after, max, want);
    int bad = 0;
    for (int how = WATCH_AUTO; how <= WATCH_INDEX && !bad; how++) {
        struct watch_iter it;
        watch_iter_start(&it, w, all, p, plen, after, (enum watch_how)how);
        size_t got = 0;
        const struct watch_entry *e = NULL;
        while (got < max && (e = watch_iter_next(&it)) != NULL)
            bad |= got >= k || e != want[got++];
        bad |= got != k;
        watch_iter_end(&it);
    }
    size_t n = brute_read(w, all, p, plen, (struct watch_id){0, 0}, SIZE_MAX, want);
    struct watch_span sp;
    watch_span(w, all, p, plen, &sp);
    bad |= sp.n != n || sp.first != (n ? want[0] : NULL) || sp.last != (n ? want[n - 1] : NULL);
    free(want);
    return bad ? -1 : 0;
}

TEST_F(wfx, the_name_index_answers_like_a_scan_of_the_ring_with_evictions)
{
    struct watch *w = &fx->w;
    char why[128];
    for (uint64_t seed = 1; seed <= 300; seed++) {
        uint64_t x = seed * 0x9e3779b97f4a7c15ull;
        watch_free(w);
        watch_init(w, 1 + test_rnd(&x) % 48, 512 + test_rnd(&x) % 8192, test_rnd(&x) % 6);
        watch_seed(w, seed);
        uint64_t rev = 1;
        for (int step = 0; step < 200; step++) {
            if (test_rnd(&x) % 40 == 0)
                watch_forget(w, rev + test_rnd(&x) % 3);
            else
                rnd_command(w, &x, rev += (test_rnd(&x) % 4 != 0));
            if (watch_audit(w, why, sizeof(why))) {
                fprintf(stderr, "seed %llu step %d: %s\n", (unsigned long long)seed, step, why);
                CHECK(0);
            }
            for (int q = 0; q < 4; q++)
                CHECK(check_query(w, &x) == 0);
        }
        CHECK(w->n <= w->max_n && w->bytes <= w->max_bytes);
    }
}

/* A prefix read costs O(log n) nodes, not the history: 20,000 entries under b/, 10 under a/. */
TEST_F(wfx, a_prefix_read_examines_log_n_not_the_history)
{
    struct watch *w = &fx->w;
    watch_init(w, 100000, 1u << 30, 8);
    char name[32];
    for (uint64_t r = 1; r <= 20000; r++) {
        snprintf(name, sizeof(name), "b/%llu", (unsigned long long)r);
        add_put(w, r, name, "v");
    }
    for (uint64_t r = 20001; r <= 20010; r++) {
        snprintf(name, sizeof(name), "a/%llu", (unsigned long long)r);
        add_put(w, r, name, "v");
    }
    struct watch_span sp;
    uint64_t before = w->scanned;
    watch_span(w, false, "a/", 2, &sp);
    CHECK(sp.n == 10 && id_is(sp.first->id, 20001, 0) && id_is(sp.last->id, 20010, 0));
    CHECK(w->scanned - before < 200);
    before = w->scanned;
    struct watch_iter it;
    watch_iter_start(&it, w, false, "a/", 2, (struct watch_id){0, 0}, WATCH_AUTO);
    size_t k = 0;
    while (watch_iter_next(&it))
        k++;
    watch_iter_end(&it);
    CHECK(k == 10 && w->scanned - before < 2000);
}

int main(void)
{
    RUN(ids_parse_like_redis_and_format_back);
    RUN(stream_names_are_the_whole_stream_or_a_prefix);
    RUN_F(wfx, events_of_one_command_share_its_revision_in_order);
    RUN_F(wfx, flags_choose_the_kind_release_or_expire_del_or_expire_key);
    RUN_F(wfx, each_kind_names_a_key_a_lock_or_nothing);
    RUN_F(wfx, elections_and_semaphores_render_leader_proclaim_and_the_object);
    RUN_F(wfx, the_count_bound_evicts_the_oldest_and_moves_the_floor);
    RUN_F(wfx, the_byte_bound_holds_and_long_values_keep_only_their_length);
    RUN_F(wfx, a_restored_snapshot_forgets_everything_up_to_its_revision);
    RUN_F(wfx, an_event_the_fsm_lost_becomes_a_floor_not_a_gap);
    RUN_F(wfx, a_prefix_stream_sees_exactly_the_named_events_under_it);
    RUN_F(wfx, an_entry_renders_as_a_redis_stream_entry);
    RUN_F(wfx, fsm_events_become_stream_entries_in_log_order);
    RUN_F(wfx, the_name_index_answers_like_a_scan_of_the_ring_with_evictions);
    RUN_F(wfx, a_prefix_read_examines_log_n_not_the_history);
    TEST_MAIN_END();
}
