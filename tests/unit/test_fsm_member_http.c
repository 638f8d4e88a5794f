/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_member_http.c — the rules of MEMBER_HTTP (src/fsm/member_http.c): a member's HTTP
 * address on its existing entry, refusals that change nothing, MEMBER_SET keeping it and
 * MEMBER_DEL dropping it, and snapshot section 6.
 */
#include "fsm_fixture.h"

static struct fsm_reply member_set(struct fsm *f, uint64_t id, const char *client)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_SET,
                        .member_set = {.id = id, .client_addr = S(client), .raft_addr = S("r:1")}};
    return apply_cmd(f, &c);
}

static struct fsm_reply member_http(struct fsm *f, uint64_t id, const char *addr, uint64_t flags)
{
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_HTTP,
                        .member_http = {.id = id, .http_addr = S(addr), .flags = flags}};
    return apply_cmd(f, &c);
}

/* 1 if member id's HTTP address is `addr` with `flags` ("" : none). */
static int http_is(const struct fsm *f, uint64_t id, const char *addr, uint8_t flags)
{
    struct fsm_member_view v;
    return fsm_member_get(f, id, &v) && v.http_addr.len == strlen(addr) &&
           memcmp(v.http_addr.p, addr, v.http_addr.len) == 0 && v.http_flags == flags;
}

TEST_F(fsm_fx, member_http_sets_the_address_of_an_entry_and_the_same_again_takes_no_revision)
{
    struct fsm *f = fx->f;
    CHECK(member_set(f, 2, "h2:7480").kind == FSM_REPLY_OK);
    CHECK(http_is(f, 2, "", 0)); /* none until announced */
    uint64_t rev = fsm_revision(f);
    CHECK(member_http(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);
    CHECK(http_is(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS));
    CHECK(member_http(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS).kind == FSM_REPLY_OK);
    CHECK_EQ_U64(fsm_revision(f), rev + 1);                      /* the same: no revision */
    CHECK(member_http(f, 2, "h2:7482", 0).kind == FSM_REPLY_OK); /* TLS off is a change */
    CHECK_EQ_U64(fsm_revision(f), rev + 2);
    CHECK(http_is(f, 2, "h2:7482", 0));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, member_http_of_a_member_without_an_entry_or_with_unknown_flags_changes_nothing)
{
    struct fsm *f = fx->f;
    CHECK(member_set(f, 2, "h2:7480").kind == FSM_REPLY_OK);
    snapshot_into(f, &fx->before);
    struct fsm_reply r = member_http(f, 3, "h3:7482", 0);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "no entry"));
    r = member_http(f, 2, "h2:7482", 2);
    CHECK(r.kind == FSM_REPLY_ERR && strstr(r.err, "flags"));
    CHECK(snapshot_equals(f, &fx->before));
    CHECK(http_is(f, 2, "", 0));
    /* the decoder refuses an empty or over-long address and id 0 */
    struct fsm_cmd c = {.op = FSM_OP_MEMBER_HTTP,
                        .member_http = {.id = 2, .http_addr = S("h2:7482")}};
    struct buf b;
    buf_init(&b);
    CHECK(fsm_cmd_encode(&c, &b) == 0);
    CHECK(decodes(b.p, b.len));
    char big[FSM_MAX_ADDR + 1];
    memset(big, 'a', sizeof(big));
    for (int k = 0; k < 3; k++) {
        c.member_http.id = k == 0 ? 0 : 2;
        c.member_http.http_addr =
            k == 1 ? (struct fsm_str){"", 0} : (struct fsm_str){big, k == 2 ? FSM_MAX_ADDR + 1 : 3};
        buf_reset(&b);
        CHECK(fsm_cmd_encode(&c, &b) == 0);
        CHECK(!decodes(b.p, b.len));
    }
    buf_free(&b);
}

TEST_F(fsm_fx, member_set_keeps_the_http_address_and_member_del_drops_it)
{
    struct fsm *f = fx->f;
    CHECK(member_set(f, 2, "h2:7480").kind == FSM_REPLY_OK);
    CHECK(member_http(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS).kind == FSM_REPLY_OK);
    CHECK(member_set(f, 2, "h2:7490").kind == FSM_REPLY_OK); /* a new client address */
    CHECK(http_is(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS));
    CHECK(member_set(f, 1, "h1:7480").kind == FSM_REPLY_OK); /* inserted before it */
    CHECK(member_set(f, 3, "h3:7480").kind == FSM_REPLY_OK); /* and after it */
    CHECK(http_is(f, 1, "", 0) && http_is(f, 3, "", 0));
    CHECK(http_is(f, 2, "h2:7482", FSM_MEMBER_HTTP_TLS));
    struct fsm_cmd del = {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 2}};
    CHECK(apply_cmd(f, &del).value == 1);
    CHECK(member_set(f, 2, "h2:7480").kind == FSM_REPLY_OK); /* back, without it */
    CHECK(http_is(f, 2, "", 0));
    CHECK(invariants_hold(f));
}

TEST_F(fsm_fx, the_snapshot_carries_http_addresses_in_section_6_only_while_one_is_known)
{
    struct fsm *f = fx->f;
    CHECK(member_set(f, 2, "h2:7480").kind == FSM_REPLY_OK);
    CHECK(member_set(f, 5, "h5:7480").kind == FSM_REPLY_OK);
    snapshot_into(f, &fx->scratch[0]);
    CHECK(((uint8_t *)fx->scratch[0].p)[4] < 8); /* none: no section, an older version */
    CHECK(member_http(f, 5, "h5:7482", FSM_MEMBER_HTTP_TLS).kind == FSM_REPLY_OK);
    snapshot_into(f, &fx->scratch[1]);
    CHECK_EQ_U64(((uint8_t *)fx->scratch[1].p)[4], 8);
    CHECK(restores_identically(f));
    char err[128];
    CHECK(fsm_restore(fx->g, (const uint8_t *)fx->scratch[1].p, fx->scratch[1].len, err,
                      sizeof(err)) == 0);
    CHECK(http_is(fx->g, 5, "h5:7482", FSM_MEMBER_HTTP_TLS) && http_is(fx->g, 2, "", 0));
    /* the section's last bytes: tag 6, len, n 1, id 5, str "h5:7482", flags 1 */
    uint8_t *p = (uint8_t *)fx->scratch[1].p;
    size_t n = fx->scratch[1].len;
    CHECK(n > 12 && p[n - 13] == 6 && p[n - 11] == 1 && p[n - 10] == 5 && p[n - 1] == 1);
    p[n - 1] = 2; /* an unknown flag */
    CHECK(fsm_restore(fx->g, p, n, err, sizeof(err)) == -1 && strstr(err, "unknown flags"));
    p[n - 1] = 1;
    p[n - 10] = 4; /* a member the table does not hold */
    CHECK(fsm_restore(fx->g, p, n, err, sizeof(err)) == -1 && strstr(err, "does not hold"));
    p[n - 10] = 5;
    for (size_t cut = 1; cut < 10; cut++) /* truncated: refused */
        CHECK(fsm_restore(fx->g, p, n - cut, err, sizeof(err)) == -1);
    CHECK(fsm_restore(fx->g, p, n, err, sizeof(err)) == 0);
    CHECK(snapshot_equals(fx->g, &fx->scratch[1]));
}

int main(void)
{
    RUN_F(fsm_fx, member_http_sets_the_address_of_an_entry_and_the_same_again_takes_no_revision);
    RUN_F(fsm_fx, member_http_of_a_member_without_an_entry_or_with_unknown_flags_changes_nothing);
    RUN_F(fsm_fx, member_set_keeps_the_http_address_and_member_del_drops_it);
    RUN_F(fsm_fx, the_snapshot_carries_http_addresses_in_section_6_only_while_one_is_known);
    TEST_MAIN_END();
}
