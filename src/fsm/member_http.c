/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/member_http.c — where each member's HTTP port is reached: MEMBER_HTTP and snapshot
 * section 6.
 *
 * Owns the http/http_len/http_flags fields of the member-table entries (struct member; the
 * entries themselves are member.c's). A follower's read-only HTTP API answers 307 to the
 * leader's HTTP address, which only the leader's node knows first-hand: so each node's address
 * is replicated, as its client address is for -NOTLEADER. MEMBER_HTTP sets it on an existing
 * entry (MEMBER_SET first: an address for a node the table does not hold would outlive any
 * MEMBER_DEL); MEMBER_SET keeps it, MEMBER_DEL drops it with the entry. Setting what is already
 * there takes no revision, as re-announcing an identical entry does not.
 *
 * Why a section and not the member records: the snapshot's member records (snapshot.c) have
 * no room for a field, and a new snapshot version for one string per node would rewrite every
 * other feature's bytes. Snapshot section 6 (FSM_SNAP_SECTIONS, written while some entry has an
 * HTTP address):
 *   varint n (1..FSM_MAX_MEMBERS), per entry with an HTTP address in increasing id order:
 *     varint id (an entry of the member table), str http_addr (1..FSM_MAX_ADDR),
 *     u8 flags (FSM_MEMBER_HTTP_TLS or 0)
 */
#include <string.h>

#include "fsm/internal.h"

void fsm_op_member_http(struct actx *a, const struct fsm_cmd_member_http *c, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    /* the decoder guarantees the id and the address's length; stay total if it ever did not */
    if (c->id == 0 || c->http_addr.len == 0 || c->http_addr.len > FSM_MAX_ADDR) {
        fsm_reply_err(r, PROTO_ERR " bad member http entry");
        return;
    }
    if (c->flags & ~(uint64_t)FSM_MEMBER_HTTP_TLS) {
        fsm_reply_err(r, PROTO_ERR " unknown member http flags");
        return;
    }
    long i = fsm_member_find(f, c->id);
    if (i < 0) {
        fsm_reply_err(r, PROTO_ERR " member %llu has no entry", (unsigned long long)c->id);
        return;
    }
    struct member *m = &f->members[i];
    r->kind = FSM_REPLY_OK;
    if (m->http_len == c->http_addr.len && m->http_flags == c->flags &&
        memcmp(m->http, c->http_addr.p, c->http_addr.len) == 0)
        return;
    memcpy(m->http, c->http_addr.p, c->http_addr.len);
    m->http_len = (uint16_t)c->http_addr.len;
    m->http_flags = (uint8_t)c->flags;
    fsm_next_rev(a);
}

/* ---- snapshot section 6 ---- */

bool fsm_member_http_present(const struct fsm *f)
{
    for (uint32_t i = 0; i < f->n_members; i++)
        if (f->members[i].http_len)
            return true;
    return false;
}

int fsm_member_http_emit(const struct fsm *f, struct buf *b)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < f->n_members; i++)
        n += f->members[i].http_len ? 1 : 0;
    int rc = buf_put_varint(b, n);
    for (uint32_t i = 0; i < f->n_members && !rc; i++) {
        const struct member *m = &f->members[i];
        if (m->http_len)
            rc = buf_put_varint(b, m->id) || buf_put_bytes(b, m->http, m->http_len) ||
                 buf_put_u8(b, m->http_flags);
    }
    return rc ? -1 : 0;
}

const char *fsm_member_http_restore(struct fsm *nf, struct rd *r)
{
    uint64_t n, prev = 0;
    if (fsm_rd_varint(r, &n) || n == 0 || n > nf->n_members)
        return "bad entry count";
    for (uint64_t k = 0; k < n; k++) {
        uint64_t id;
        const char *p;
        uint32_t len;
        uint8_t flags;
        if (fsm_rd_varint(r, &id) || fsm_rd_str(r, &p, &len, FSM_MAX_ADDR) || len == 0 ||
            rd_u8(r, &flags))
            return "truncated or malformed entry";
        if (id <= prev)
            return "ids not in strictly increasing order";
        prev = id;
        if (flags & ~FSM_MEMBER_HTTP_TLS)
            return "unknown flags";
        long i = fsm_member_find(nf, id);
        if (i < 0)
            return "an address for a member the table does not hold";
        struct member *m = &nf->members[i];
        memcpy(m->http, p, len);
        m->http_len = (uint16_t)len;
        m->http_flags = flags;
    }
    return NULL;
}
