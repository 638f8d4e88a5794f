/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_sesslist — fsm_sessions_after (SESSION.LIST's page of live sessions): id order,
 * AFTER a live or an ended session, LIMIT, nothing changed. The fixture is fsm_fixture.h.
 */

#include <string.h>

#include "fsm_fixture.h"

struct page {
    uint64_t sid[16];
    size_t n;   /* sessions the callback saw */
    size_t ret; /* what fsm_sessions_after returned: must be n */
};

static void collect(void *arg, uint64_t sid)
{
    struct page *p = arg;
    if (p->n < sizeof p->sid / sizeof p->sid[0])
        p->sid[p->n++] = sid;
}

static struct page page_after(const struct fsm *f, uint64_t after, size_t limit)
{
    struct page p;
    memset(&p, 0, sizeof p);
    p.ret = fsm_sessions_after(f, after, limit, collect, &p);
    return p;
}

TEST_F(fsm_fx, sessions_after_pages_live_sessions_in_id_order)
{
    struct fsm *f = fx->f;
    uint64_t s[5];
    for (int i = 0; i < 5; i++)
        s[i] = open_session(f, 1000, 0);
    struct buf before;
    buf_init(&before);
    snapshot_into(f, &before);
    struct page p = page_after(f, 0, 10);
    CHECK(p.n == 5 && p.ret == 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_U64(p.sid[i], s[i]);
    CHECK(snapshot_equals(f, &before)); /* a read changes nothing */
    buf_free(&before);
    p = page_after(f, 0, 2); /* LIMIT */
    CHECK(p.n == 2 && p.ret == 2 && p.sid[0] == s[0] && p.sid[1] == s[1]);
    p = page_after(f, s[1], 2); /* the next page, after a live id */
    CHECK(p.n == 2 && p.sid[0] == s[2] && p.sid[1] == s[3]);
    CHECK(apply_close(f, s[2]).kind == FSM_REPLY_OK);
    CHECK(apply_expire(f, s[3]).kind == FSM_REPLY_OK);
    p = page_after(f, s[2], 10); /* after an ended id: the first live one above it */
    CHECK(p.n == 1 && p.sid[0] == s[4]);
    p = page_after(f, s[1], 10);
    CHECK(p.n == 1 && p.sid[0] == s[4]);
    CHECK(page_after(f, s[4], 10).n == 0);
    CHECK(page_after(f, 0, 0).n == 0);
    CHECK(invariants_hold(f));
}

int main(void)
{
    RUN_F(fsm_fx, sessions_after_pages_live_sessions_in_id_order);
    TEST_MAIN_END();
}
