/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_trace.c — the rules of trace context in the state machine: a traceparent rides in a
 * checked entry's header (codec.c), changes nothing but what the lock history (history.c) and
 * the events record, is not part of a REQ's digest, and makes snapshot section 4's second
 * format only while some entry or pending wait holds one.
 */
#include "fsm_fixture.h"

#define TP_A "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP_B "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
#define TP_C "00-11111111111111111111111111111111-2222222222222222-01"

static struct trace_ctx tp(const char *s)
{
    struct trace_ctx t;
    if (trace_parse(s, strlen(s), &t))
        abort();
    return t;
}

static bool trace_is(const struct trace_ctx *t, const char *want)
{
    char out[TRACE_TEXT_LEN + 1];
    if (!t)
        return want == NULL;
    trace_format(t, out);
    return want && strcmp(out, want) == 0;
}

/* c, checked as alice, with traceparent `t` (NULL: none). */
static struct fsm_reply traced(struct fsm *f, struct fsm_cmd c, const char *t)
{
    c.checked = true;
    c.user = S("alice");
    if (t) {
        c.traced = true;
        c.trace = tp(t);
    }
    return apply_cmd(f, &c);
}

static uint64_t open_alice(struct fsm *f)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 60000}};
    return token_of(traced(f, c, NULL));
}

static struct fsm_cmd lock_cmd(const char *name, uint64_t sid, uint64_t wait)
{
    return (struct fsm_cmd){.op = FSM_OP_LOCK,
                            .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
}

static struct fsm_cmd unlock_cmd(const char *name, uint64_t sid)
{
    return (struct fsm_cmd){.op = FSM_OP_UNLOCK, .unlock = {.name = S(name), .sid = sid}};
}

static struct fsm_reply limits(struct fsm *f)
{
    struct fsm_cmd c = {.op = FSM_OP_HISTORY_LIMITS,
                        .history_limits = {.per_lock = 8, .max_entries = 100}};
    return apply_cmd(f, &c);
}

struct seen {
    int n;
    struct fsm_hist_entry v[8];
    struct trace_ctx t[8], et[8];
};

static void keep(void *arg, const struct fsm_hist_entry *e)
{
    struct seen *s = arg;
    if (s->n == 8)
        return;
    s->v[s->n] = *e;
    if (e->trace) {
        s->t[s->n] = *e->trace;
        s->v[s->n].trace = &s->t[s->n];
    }
    if (e->end_trace) {
        s->et[s->n] = *e->end_trace;
        s->v[s->n].end_trace = &s->et[s->n];
    }
    s->n++;
}

static struct seen *hist(const struct fsm *f, const char *name)
{
    static struct seen s;
    uint64_t compacted;
    memset(&s, 0, sizeof(s));
    fsm_lock_history(f, name, strlen(name), 0, 8, keep, &s, &compacted);
    return &s;
}

static const struct fsm_event *event_of(uint8_t type, uint64_t sid)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == type && EV.ev[i].sid == sid)
            return &EV.ev[i];
    return NULL;
}

TEST_F(fsm_fx, a_traceparent_round_trips_in_a_checked_header_and_a_bad_one_is_refused)
{
    struct fsm_cmd c = lock_cmd("L", 5, 0), d;
    c.checked = true;
    c.traced = true;
    c.trace = tp(TP_A);
    struct buf b;
    buf_init(&b);
    CHECK(fsm_cmd_encode(&c, &b) == 0);
    char err[64];
    CHECK(fsm_cmd_decode((const uint8_t *)b.p, b.len, &d, err, sizeof(err)) == 0);
    CHECK(d.checked && d.traced && memcmp(d.trace.b, c.trace.b, TRACE_BIN_LEN) == 0);
    /* the version-2 header: version, op, now, req sid, req seq, user "", flags, 26 bytes */
    uint8_t *p = (uint8_t *)b.p;
    CHECK(p[0] == FSM_CMD_VERSION_USER && p[6] == 2);
    p[7] = 1; /* version 01 of the traceparent: not the version-00 form */
    CHECK(!decodes(b.p, b.len));
    p[7] = 0;
    memset(p + 8, 0, 16); /* a zero trace id */
    CHECK(!decodes(b.p, b.len));
    CHECK(!decodes(b.p, 7 + 20)); /* truncated inside it */
    p[6] = 4;                     /* an unknown header flag */
    CHECK(!decodes(b.p, b.len));
    buf_free(&b);
}

TEST_F(fsm_fx, a_grant_records_its_own_requests_traceparent_and_the_end_the_ending_ones)
{
    struct fsm *f = fx->f;
    CHECK(limits(f).kind == FSM_REPLY_OK);
    uint64_t a = open_alice(f), b = open_alice(f);
    uint64_t t1 = token_of(traced(f, lock_cmd("L", a, 0), TP_A));
    CHECK(t1);
    const struct fsm_event *g = event_of(FSM_EV_GRANTED, a);
    CHECK(g && g->traced && trace_is(&g->trace, TP_A));
    CHECK(traced(f, lock_cmd("L", b, 60000), TP_B).kind == FSM_REPLY_QUEUED);
    const struct fsm_event *w = event_of(FSM_EV_WAIT_STARTED, b);
    CHECK(w && w->traced && trace_is(&w->trace, TP_B));
    /* a's UNLOCK (traced C) grants b: b's grant carries b's own LOCK's, the end carries C */
    CHECK(traced(f, unlock_cmd("L", a), TP_C).kind == FSM_REPLY_OK);
    g = event_of(FSM_EV_GRANTED, b);
    CHECK(g && g->traced && trace_is(&g->trace, TP_B));
    const struct fsm_event *rel = event_of(FSM_EV_RELEASED, a);
    CHECK(rel && rel->traced && trace_is(&rel->trace, TP_C));
    CHECK(traced(f, unlock_cmd("L", b), NULL).kind == FSM_REPLY_OK); /* untraced end */
    struct seen *h = hist(f, "L");
    CHECK(h->n == 2);
    CHECK(trace_is(h->v[0].trace, TP_B) && trace_is(h->v[0].end_trace, NULL));
    CHECK(h->v[1].token == t1 && trace_is(h->v[1].trace, TP_A));
    CHECK(trace_is(h->v[1].end_trace, TP_C));
    CHECK(invariants_hold(f) && restores_identically(f));
}

TEST_F(fsm_fx, a_traceparent_is_not_part_of_the_request_digest_and_changes_nothing_else)
{
    struct fsm *f = fx->f, *g = fx->g;
    uint64_t a = open_alice(f);
    CHECK(open_alice(g) == a);
    struct fsm_cmd c = lock_cmd("L", a, 0);
    c.req_sid = a;
    c.req_seq = 1;
    uint64_t t = token_of(traced(f, c, TP_A));
    CHECK(t);
    /* a retry of the same request with another traceparent is answered as the same one */
    CHECK(token_of(traced(f, c, TP_B)) == t);
    /* without history the state is the one an untraced LOCK makes */
    CHECK(token_of(traced(g, c, NULL)) == t);
    snapshot_into(g, &fx->scratch[0]);
    CHECK(snapshot_equals(f, &fx->scratch[0]));
}

TEST_F(fsm_fx, section_4_uses_its_traceparent_format_only_while_one_is_kept)
{
    struct fsm *f = fx->f;
    CHECK(limits(f).kind == FSM_REPLY_OK);
    uint64_t a = open_alice(f), b = open_alice(f);
    CHECK(token_of(traced(f, lock_cmd("L", a, 0), NULL)));
    snapshot_into(f, &fx->scratch[0]); /* no traceparent: the first format */
    CHECK(traced(f, lock_cmd("L", b, 60000), TP_B).kind == FSM_REPLY_QUEUED);
    snapshot_into(f, &fx->scratch[1]); /* a pending wait's traceparent: the second */
    CHECK(fx->scratch[1].len > fx->scratch[0].len + TRACE_BIN_LEN);
    CHECK(restores_identically(f));
    char err[128];
    /* the wait's traceparent survives a restore: the grant after it carries it */
    CHECK(fsm_restore(fx->g, (const uint8_t *)fx->scratch[1].p, fx->scratch[1].len, err,
                      sizeof(err)) == 0);
    CHECK(traced(fx->g, unlock_cmd("L", a), NULL).kind == FSM_REPLY_OK);
    CHECK(traced(f, unlock_cmd("L", a), NULL).kind == FSM_REPLY_OK);
    CHECK(trace_is(hist(fx->g, "L")->v[0].trace, TP_B));
    snapshot_into(fx->g, &fx->scratch[2]);
    CHECK(snapshot_equals(f, &fx->scratch[2]));
    /* the wait's traced byte: 0 or 1 only */
    uint8_t *p = (uint8_t *)fx->scratch[1].p;
    size_t n = fx->scratch[1].len, at = 0;
    struct trace_ctx want = tp(TP_B);
    for (size_t i = 1; i + TRACE_BIN_LEN <= n && !at; i++)
        if (p[i - 1] == 1 && memcmp(p + i, want.b, TRACE_BIN_LEN) == 0)
            at = i - 1;
    CHECK(at);
    p[at] = 2;
    CHECK(fsm_restore(fx->g, p, n, err, sizeof(err)) == -1);
    p[at] = 1;
    CHECK(fsm_restore(fx->g, p, n, err, sizeof(err)) == 0);
}

int main(void)
{
    RUN_F(fsm_fx, a_traceparent_round_trips_in_a_checked_header_and_a_bad_one_is_refused);
    RUN_F(fsm_fx, a_grant_records_its_own_requests_traceparent_and_the_end_the_ending_ones);
    RUN_F(fsm_fx, a_traceparent_is_not_part_of_the_request_digest_and_changes_nothing_else);
    RUN_F(fsm_fx, section_4_uses_its_traceparent_format_only_while_one_is_kept);
    TEST_MAIN_END();
}
