/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/member.c — the replicated member table: MEMBER_SET / MEMBER_DEL and its queries.
 *
 * Owns the ops and queries over fsm.members, a small array sorted by id (at most
 * FSM_MAX_MEMBERS entries, addresses stored inline). Re-announcing an identical entry is not a
 * state change: it takes no revision. An entry's HTTP address is member_http.c's (MEMBER_HTTP):
 * MEMBER_SET keeps it, MEMBER_DEL drops it with the entry.
 */
#include <string.h>

#include "fsm/internal.h"

long fsm_member_find(const struct fsm *f, uint64_t id)
{
    size_t lo = 0, hi = f->n_members;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->members[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->n_members && f->members[lo].id == id)
        return (long)lo;
    return -1 - (long)lo;
}

static int member_equal(const struct member *m, const struct fsm_cmd_member_set *c)
{
    return m->client_len == c->client_addr.len && m->raft_len == c->raft_addr.len &&
           memcmp(m->client, c->client_addr.p, c->client_addr.len) == 0 &&
           memcmp(m->raft, c->raft_addr.p, c->raft_addr.len) == 0;
}

/* A new entry, or new addresses for one: its HTTP address (MEMBER_HTTP) stays. */
static void member_fill(struct member *m, const struct fsm_cmd_member_set *c)
{
    uint16_t http_len = m->id == c->id ? m->http_len : 0;
    uint8_t http_flags = m->id == c->id ? m->http_flags : 0;
    char http[FSM_MAX_ADDR];
    memcpy(http, m->http, http_len);
    memset(m, 0, sizeof(*m));
    m->http_len = http_len;
    m->http_flags = http_flags;
    memcpy(m->http, http, http_len);
    m->id = c->id;
    m->client_len = (uint16_t)c->client_addr.len;
    m->raft_len = (uint16_t)c->raft_addr.len;
    memcpy(m->client, c->client_addr.p, c->client_addr.len);
    memcpy(m->raft, c->raft_addr.p, c->raft_addr.len);
}

static int addr_len_ok(struct fsm_str a)
{
    return a.len > 0 && a.len <= FSM_MAX_ADDR;
}

void fsm_op_member_set(struct actx *a, const struct fsm_cmd_member_set *c, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    /* the decoder guarantees these; stay total if it ever did not */
    if (c->id == 0 || !addr_len_ok(c->client_addr) || !addr_len_ok(c->raft_addr)) {
        fsm_reply_err(r, PROTO_ERR " bad member entry");
        return;
    }
    long i = fsm_member_find(f, c->id);
    if (i >= 0) {
        if (!member_equal(&f->members[i], c)) {
            member_fill(&f->members[i], c);
            fsm_next_rev(a);
        }
        r->kind = FSM_REPLY_OK;
        return;
    }
    if (f->n_members >= FSM_MAX_MEMBERS) {
        fsm_reply_err(r, PROTO_ERR " member table full");
        return;
    }
    size_t at = (size_t)(-1 - i);
    memmove(&f->members[at + 1], &f->members[at], (f->n_members - at) * sizeof(f->members[0]));
    member_fill(&f->members[at], c);
    f->n_members++;
    fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

void fsm_op_member_del(struct actx *a, const struct fsm_cmd_member_del *c, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    long i = fsm_member_find(f, c->id);
    r->kind = FSM_REPLY_INT;
    r->value = 0;
    if (i < 0)
        return;
    size_t at = (size_t)i;
    memmove(&f->members[at], &f->members[at + 1], (f->n_members - at - 1) * sizeof(f->members[0]));
    f->n_members--;
    memset(&f->members[f->n_members], 0, sizeof(f->members[0]));
    fsm_next_rev(a);
    r->value = 1;
}

static void member_view(const struct member *m, struct fsm_member_view *v)
{
    v->id = m->id;
    v->client_addr.p = m->client;
    v->client_addr.len = m->client_len;
    v->raft_addr.p = m->raft;
    v->raft_addr.len = m->raft_len;
    v->http_addr.p = m->http;
    v->http_addr.len = m->http_len;
    v->http_flags = m->http_flags;
}

int fsm_member_get(const struct fsm *f, uint64_t id, struct fsm_member_view *v)
{
    long i = fsm_member_find(f, id);
    if (i < 0)
        return 0;
    member_view(&f->members[i], v);
    return 1;
}

void fsm_foreach_member(const struct fsm *f, void (*cb)(void *arg, const struct fsm_member_view *v),
                        void *arg)
{
    for (uint32_t i = 0; i < f->n_members; i++) {
        struct fsm_member_view v;
        member_view(&f->members[i], &v);
        cb(arg, &v);
    }
}

void fsm_forget_members(struct fsm *f)
{
    memset(f->members, 0, sizeof(f->members));
    f->n_members = 0;
}
