/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_ops — the op descriptor (src/fsm/ops.h) walked row by row: every op goes through
 * the codec, session ownership (the FSM's rule and the server's REQ rule, one answer), the
 * server's quota reservation and its upgrade gate. The loops iterate the descriptor, so an op
 * added as a row is covered without touching this file.
 *
 * Each property is checked against something the row does not say: a payload field named
 * "...sid" must be the op's acting session; what applying an op really adds to the state must
 * be covered by what the quota check reserves for it; the gate must let through exactly the
 * entries whose format (as every node reads it: fsm_entry_format) the cluster has reached.
 */

#include <stdlib.h>
#include <string.h>

#include "fsm_fixture.h"
#include "server/server.h"

#define OP_NEVER 19    /* fsm.h: the value no op ever had */
#define OP_FREE 28     /* ops.h: no op has it yet (the rows jump from 27 to 29) */
#define OP_FREE_TXN 43 /* handed to TXN beside 42, which needed one value only: no row */
/* Values handed to features built side by side (a value, a latch...): a value in this range
   may have no row until its feature is merged; every other value below FSM_OP__COUNT has one. */
#define OP_PENDING_LO 31
#define OP_PENDING_HI 35    /* 33 and 35: handed out, unused */
#define LAST_FORMAT_1_OP 13 /* the previous release reads ops 0..13 */
#define WAIT_MS 1000        /* every WAIT field: a busy object queues */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Does op's payload have a member named like a session id ("sid", "lease_sid")? The test's own
 * reading of "this op names a session", independent of the field kinds. */
static bool names_a_session(const struct fsm_op_desc *d)
{
    for (size_t i = 0; i < d->nfields; i++)
        if (ends_with(d->fields[i].member, "sid"))
            return true;
    return false;
}

/* A command of `op` with every field filled: `sid` in the SID field, a WAIT, short valid
 * strings, and 1 in every other number (a TTL, a limit, a member id...). */
static struct fsm_cmd filled(unsigned op, uint64_t sid)
{
    struct fsm_cmd c;
    memset(&c, 0, sizeof(c));
    c.op = (uint8_t)op;
    const struct fsm_op_desc *d = fsm_op_desc(op);
    char *payload = (char *)&c.noop;
    for (size_t i = 0; i < d->nfields; i++) {
        char *p = payload + d->fields[i].off;
        switch ((enum fsm_field_kind)d->fields[i].kind) {
        case FSM_F_U64:
        case FSM_F_ID:
            *(uint64_t *)p = 1;
            break;
        case FSM_F_SID:
            *(uint64_t *)p = sid;
            break;
        case FSM_F_WAIT:
            *(uint64_t *)p = WAIT_MS;
            break;
        case FSM_F_NAME:
            *(struct fsm_str *)p = S("n");
            break;
        case FSM_F_LABEL:
        case FSM_F_VALUE:
        case FSM_F_EVALUE:
            *(struct fsm_str *)p = S("value");
            break;
        case FSM_F_ADDR:
            *(struct fsm_str *)p = S("127.0.0.1:7480");
            break;
        case FSM_F_COND:
            break;        /* no condition */
        case FSM_F_NAMES: /* "n" exclusive, "o" shared */
            *(struct fsm_names *)p = (struct fsm_names){2, {"\x00\x01n\x01\x01o", 6}};
            break;
        case FSM_F_TXN: /* IF MISSING n THEN PUT n v */
            *(struct fsm_txn *)p =
                (struct fsm_txn){1, 1, 0, {"\x04\x00\x01n\x00\x00\x10\x00\x01n\x00\x01v", 13}};
            break;
        }
    }
    return c;
}

static struct fsm_reply as_user(struct fsm *f, struct fsm_cmd c, const char *user, bool admin)
{
    c.checked = true;
    c.user = S(user);
    c.admin = admin;
    return apply_cmd(f, &c);
}

static uint64_t open_as(struct fsm *f, const char *user)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 1000}};
    return token_of(as_user(f, c, user, false));
}

TEST(every_value_is_an_op_with_a_row_but_19_and_28)
{
    for (unsigned op = 0; op < 256; op++) {
        const struct fsm_op_desc *d = fsm_op_desc(op);
        if (op < OP_PENDING_LO || op > OP_PENDING_HI)
            CHECK((d != NULL) ==
                  (op < FSM_OP__COUNT && op != OP_NEVER && op != OP_FREE && op != OP_FREE_TXN));
        if (!d)
            continue;
        CHECK(d->name && d->name[0]);
        CHECK(strcmp(fsm_op_name(op), d->name) == 0);
        CHECK(d->format >= FSM_FORMAT_1 && d->format <= FSM_FORMAT_MAX);
        /* An op the previous release does not read must say so, or a leader would write it to
         * nodes that stop at it. */
        CHECK_EQ_U64(d->format, op <= LAST_FORMAT_1_OP ? FSM_FORMAT_1 : FSM_FORMAT_2);
        for (unsigned o = 0; o < op; o++)
            CHECK(!fsm_op_desc(o) || strcmp(fsm_op_desc(o)->name, d->name) != 0);
    }
    CHECK(strcmp(fsm_op_name(OP_NEVER), "?") == 0);
    CHECK_EQ_U64(fsm_op_format(OP_NEVER), FSM_FORMAT_MAX + 1);
    CHECK(strcmp(fsm_op_name(OP_FREE), "?") == 0);
    CHECK_EQ_U64(fsm_op_format(OP_FREE), FSM_FORMAT_MAX + 1);
}

TEST(a_payload_names_its_session_in_its_one_SID_field_and_its_wait_last)
{
    for (unsigned op = 0; op < FSM_OP__COUNT; op++) {
        const struct fsm_op_desc *d = fsm_op_desc(op);
        if (!d)
            continue;
        size_t sids = 0, names = 0;
        for (size_t i = 0; i < d->nfields; i++) {
            const struct fsm_field *fl = &d->fields[i];
            if (ends_with(fl->member, "sid") != (fl->kind == FSM_F_SID))
                fprintf(stderr, "  %s.%s: a session id must be the SID field\n", d->name,
                        fl->member);
            CHECK(ends_with(fl->member, "sid") == (fl->kind == FSM_F_SID));
            sids += fl->kind == FSM_F_SID;
            names += fl->kind == FSM_F_NAME || fl->kind == FSM_F_NAMES;
            /* the digest drops a trailing wait (a resend asks for the wait that is left) */
            CHECK(fl->kind != FSM_F_WAIT || i + 1 == d->nfields);
        }
        CHECK(sids <= 1);
        struct fsm_cmd c = filled(op, 7);
        struct fsm_wait_ref w;
        if (fsm_cmd_wait_of(&c, &w)) {
            CHECK(sids == 1 && names >= 1);
            CHECK_EQ_U64(w.sid, 7);
            CHECK_EQ_U64(w.wait_ms, WAIT_MS);
        }
        CHECK_EQ_U64(fsm_cmd_acting_sid(&c), sids ? 7 : 0);
    }
}

TEST_F(fsm_fx, every_op_round_trips_through_the_codec_and_a_cut_entry_is_refused)
{
    for (unsigned op = 0; op < FSM_OP__COUNT; op++) {
        if (!fsm_op_desc(op))
            continue;
        struct fsm_cmd c = filled(op, 7), back;
        struct buf *b = &fx->scratch[0], *again = &fx->scratch[1];
        char err[96];
        buf_reset(b);
        buf_reset(again);
        c.checked = op % 2; /* both header versions */
        c.user = S(c.checked ? "bob" : "");
        CHECK(fsm_cmd_encode(&c, b) == 0);
        CHECK(fsm_cmd_decode((const uint8_t *)b->p, b->len, &back, err, sizeof(err)) == 0);
        CHECK(fsm_cmd_encode(&back, again) == 0);
        CHECK(again->len == b->len && memcmp(again->p, b->p, b->len) == 0);
        CHECK(fsm_cmd_decode((const uint8_t *)b->p, b->len - 1, &back, err, sizeof(err)) == -1);
    }
}

/* Ownership: bob names alice's session in every op. The FSM refuses exactly the ops that name a
 * session (as a missing one: NOSESSION, nothing changes), and the server's REQ rule (REQ must
 * name the acting session) reads the same field. An admin is let through only where the row
 * says so. */
TEST_F(fsm_fx, every_op_naming_another_users_session_is_refused)
{
    uint64_t alice = open_as(fx->f, "alice");
    CHECK(alice && open_as(fx->f, "bob"));
    for (unsigned op = 0; op < FSM_OP__COUNT; op++) {
        const struct fsm_op_desc *d = fsm_op_desc(op);
        if (!d)
            continue;
        struct fsm_cmd c = filled(op, alice);
        bool names = names_a_session(d);
        c.checked = true;
        c.user = S("bob");
        if (fsm_cmd_check_owner(fx->f, &c) != (names ? alice : 0))
            fprintf(stderr, "  %s: ownership does not see the session it names\n", d->name);
        CHECK_EQ_U64(fsm_cmd_check_owner(fx->f, &c), names ? alice : 0);
        CHECK_EQ_U64(fsm_cmd_acting_sid(&c), names ? alice : 0); /* the server's REQ rule */
        c.admin = true;
        CHECK_EQ_U64(fsm_cmd_check_owner(fx->f, &c), names && !d->admin ? alice : 0);
        if (!names)
            continue;
        buf_free(&fx->before); /* snapshot_into starts a new buffer */
        snapshot_into(fx->f, &fx->before);
        struct fsm_reply r = as_user(fx->f, filled(op, alice), "bob", false);
        CHECK(r.kind == FSM_REPLY_ERR);
        CHECK_STR_PREFIX(r.err, "NOSESSION ");
        CHECK(snapshot_equals(fx->f, &fx->before));
    }
}

/* What one apply of `c` adds, per quota measure, must not pass what the server reserves. */
static int reservation_covers(struct fsm *f, const struct fsm_cmd *c, const char *user)
{
    uint64_t g[SRV_QUOTA_N];
    struct fsm_stats a, b;
    srv_quota_growth(f, c, g);
    fsm_stats(f, &a);
    as_user(f, *c, user, false);
    fsm_stats(f, &b);
    uint64_t before[SRV_QUOTA_N] = {a.sessions, a.locks, a.keys, a.waiters, a.data_bytes};
    uint64_t after[SRV_QUOTA_N] = {b.sessions, b.locks, b.keys, b.waiters, b.data_bytes};
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        if (after[q] > before[q] && after[q] - before[q] > g[q]) {
            fprintf(stderr, "  %s grew %s by %llu, reserved %llu\n", fsm_op_name(c->op),
                    srv_quota_name(q), (unsigned long long)(after[q] - before[q]),
                    (unsigned long long)g[q]);
            return -1;
        }
    }
    return 0;
}

/* Quotas: every op applied on its own (on a fresh object), and again by a second session
 * while the first holds the object (a waiter), adds no more than its growth kind reserves. */
TEST_F(fsm_fx, what_every_op_adds_is_reserved_by_the_quota_check)
{
    for (unsigned op = 0; op < FSM_OP__COUNT; op++) {
        if (!fsm_op_desc(op))
            continue;
        fsm_free(fx->h);
        fx->h = fsm_new();
        CHECK(fx->h);
        uint64_t alice = open_as(fx->h, "alice"), bob = open_as(fx->h, "bob");
        struct fsm_cmd first = filled(op, alice), second = filled(op, bob);
        CHECK(reservation_covers(fx->h, &first, "alice") == 0);
        CHECK(reservation_covers(fx->h, &second, "bob") == 0);
        CHECK(invariants_hold(fx->h));
    }
}

/* The upgrade gate: at each cluster format the leader writes exactly the entries every node
 * reads (fsm_entry_format <= the cluster's format), whatever the op. */
TEST_F(fsm_fx, the_leader_writes_an_op_only_once_every_node_reads_its_format)
{
    struct srv *s = calloc(1, sizeof(*s));
    CHECK(s);
    fx->mem = s;
    s->fsm = fx->f;
    for (unsigned format = FSM_FORMAT_1; format <= FSM_FORMAT_MAX; format++) {
        if (format > FSM_FORMAT_1) {
            struct fsm_cmd raise = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {format}};
            CHECK(apply_cmd(fx->f, &raise).kind == FSM_REPLY_OK);
        }
        CHECK_EQ_U64(fsm_format(fx->f), format);
        for (unsigned op = 0; op < FSM_OP__COUNT; op++) {
            if (!fsm_op_desc(op))
                continue;
            struct fsm_cmd c = filled(op, 1);
            struct buf *b = &fx->scratch[0];
            buf_reset(b);
            c.checked = format >= FSM_FORMAT_2; /* the gate writes version 1 below format 2 */
            c.user = S(c.checked ? "bob" : "");
            CHECK(fsm_cmd_encode(&c, b) == 0);
            unsigned reads = fsm_entry_format((const uint8_t *)b->p, b->len);
            if (srv_format_refuses(s, (uint8_t)op) != (reads > format))
                fprintf(stderr, "  %s at format %u: the gate and the readers disagree\n",
                        fsm_op_name(op), format);
            CHECK(srv_format_refuses(s, (uint8_t)op) == (reads > format));
        }
    }
    CHECK(srv_format_refuses(s, OP_NEVER));
    CHECK(srv_format_refuses(s, OP_FREE));
}

int main(void)
{
    RUN(every_value_is_an_op_with_a_row_but_19_and_28);
    RUN(a_payload_names_its_session_in_its_one_SID_field_and_its_wait_last);
    RUN_F(fsm_fx, every_op_round_trips_through_the_codec_and_a_cut_entry_is_refused);
    RUN_F(fsm_fx, every_op_naming_another_users_session_is_refused);
    RUN_F(fsm_fx, what_every_op_adds_is_reserved_by_the_quota_check);
    RUN_F(fsm_fx, the_leader_writes_an_op_only_once_every_node_reads_its_format);
    TEST_MAIN_END();
}
