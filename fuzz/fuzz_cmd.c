/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cmd — libFuzzer target for the FSM: command decoding, apply, snapshot and restore.
 *
 * Input layout: byte 0 = number of entries N (1..32); then N-1 entries, each one length byte
 * and that many bytes, and a last entry taking the rest (shorter inputs just give fewer
 * entries). The entries are applied to a fresh FSM in which three sessions are already open
 * (sids 1, 2, 3; session 2 with a lock-delay), so short entries can reach every rule.
 *
 * Checks (any failure traps): an entry that decodes re-encodes to the same bytes; after every
 * apply the invariants hold, an ERR reply left the revision unchanged and every event name is
 * readable; snapshot -> restore -> snapshot is byte-identical and the restored copy answers the
 * entries, applied once more to both, exactly as the original does; fsm_restore of the raw
 * input and of a damaged snapshot either fails leaving the state unchanged or succeeds with a
 * state that holds the invariants and snapshots back to exactly the bytes it was given. The
 * queries agree with fsm_stats and with each other (full scan in strictly increasing order,
 * per-lock views for every name the entries mention; the member table iterates in strictly
 * increasing id order within its bounds, and fsm_member_get agrees with the iteration).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/fsm.h"

#define MAX_ENTRIES 32

struct entry {
    const uint8_t *p;
    size_t n;
};

static void must(int cond)
{
    if (!cond)
        __builtin_trap();
}

static size_t split(const uint8_t *data, size_t size, struct entry *e)
{
    if (size == 0)
        return 0;
    size_t want = 1 + data[0] % MAX_ENTRIES, n = 0, off = 1;
    while (n + 1 < want && off < size) {
        size_t len = data[off++];
        if (len > size - off)
            len = size - off;
        e[n++] = (struct entry){data + off, len};
        off += len;
    }
    e[n++] = (struct entry){data + off, size - off};
    return n;
}

static void check_roundtrip(const uint8_t *p, size_t n)
{
    struct fsm_cmd c;
    char err[128];
    if (fsm_cmd_decode(p, n, &c, err, sizeof(err)))
        return;
    struct buf b;
    buf_init(&b);
    must(fsm_cmd_encode(&c, &b) == 0);
    must(b.len == n && memcmp(b.p, p, n) == 0);
    buf_free(&b);
}

static void apply_checked(struct fsm *f, const uint8_t *p, size_t n, struct fsm_reply *r,
                          struct fsm_events *ev)
{
    char err[200];
    uint64_t rev = fsm_revision(f);
    fsm_events_reset(ev);
    fsm_apply(f, p, n, r, ev);
    must(fsm_check_invariants(f, err, sizeof(err)) == 0);
    must(r->kind <= FSM_REPLY_ERR);
    if (r->kind == FSM_REPLY_ERR)
        must(fsm_revision(f) == rev && memchr(r->err, '\0', sizeof(r->err)) != NULL);
    volatile char sink = 0;
    for (size_t i = 0; i < ev->n; i++)
        for (uint32_t j = 0; j < ev->ev[i].name.len; j++)
            sink ^= ev->ev[i].name.p[j];
    (void)sink;
}

static void open_sessions(struct fsm *f, struct fsm_events *ev)
{
    for (uint64_t i = 1; i <= 3; i++) { /* session 3 is reentrant: its re-locks count */
        struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN,
                            .session_open = {.ttl_ms = 1000, .lockdelay_ms = i == 2 ? 50 : 0}};
        if (i == 3)
            c = (struct fsm_cmd){.op = FSM_OP_SESSION_OPEN_REENTRANT,
                                 .session_open_reentrant = {.ttl_ms = 1000, .max_count = 4}};
        struct fsm_reply r;
        struct buf b;
        buf_init(&b);
        must(fsm_cmd_encode(&c, &b) == 0);
        apply_checked(f, (const uint8_t *)b.p, b.len, &r, ev);
        must(r.kind == FSM_REPLY_INT && r.value == i);
        buf_free(&b);
    }
}

static struct buf snap(const struct fsm *f)
{
    struct buf b;
    buf_init(&b);
    must(fsm_snapshot(f, &b) == 0);
    return b;
}

static int same(const struct buf *a, const struct buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static int same_events(const struct fsm_events *a, const struct fsm_events *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct fsm_event *x = &a->ev[i], *y = &b->ev[i];
        if (x->type != y->type || x->sid != y->sid || x->token != y->token || x->ms != y->ms ||
            x->expired != y->expired || x->name.len != y->name.len ||
            memcmp(x->name.p, y->name.p, x->name.len) != 0)
            return 0;
    }
    return 1;
}

struct scan_st {
    const char *prev;
    size_t prevlen, n;
};

static int scan_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    struct scan_st *st = arg;
    if (st->n) {
        size_t k = st->prevlen < keylen ? st->prevlen : keylen;
        int c = memcmp(st->prev, key, k);
        must(c < 0 || (c == 0 && st->prevlen < keylen));
    }
    must(m->create_rev && m->create_rev <= m->mod_rev && m->version);
    st->prev = key;
    st->prevlen = keylen;
    st->n++;
    return 0;
}

static void count_s(void *arg, uint64_t sid, uint64_t ms)
{
    (void)sid, (void)ms;
    ++*(uint64_t *)arg;
}

static void count_w(void *arg, const char *name, size_t len, uint64_t sid, uint64_t ms)
{
    (void)name, (void)len, (void)sid, (void)ms;
    ++*(uint64_t *)arg;
}

static void count_d(void *arg, const char *name, size_t len, uint64_t ms)
{
    (void)name, (void)len;
    must(ms > 0);
    ++*(uint64_t *)arg;
}

struct member_st {
    const struct fsm *f;
    uint64_t prev, n;
};

static void member_cb(void *arg, const struct fsm_member_view *v)
{
    struct member_st *st = arg;
    struct fsm_member_view g;
    must(v->id > st->prev);
    must(v->client_addr.len >= 1 && v->client_addr.len <= FSM_MAX_ADDR);
    must(v->raft_addr.len >= 1 && v->raft_addr.len <= FSM_MAX_ADDR);
    must(fsm_member_get(st->f, v->id, &g) == 1 && g.id == v->id);
    must(g.client_addr.len == v->client_addr.len &&
         memcmp(g.client_addr.p, v->client_addr.p, v->client_addr.len) == 0);
    must(g.raft_addr.len == v->raft_addr.len &&
         memcmp(g.raft_addr.p, v->raft_addr.p, v->raft_addr.len) == 0);
    st->prev = v->id;
    st->n++;
}

/* What an entry mentions, whatever its op: a name (lock, session or client address), a key
 * (or raft address) and an id (session or member); empty or 0 where it has none. */
struct entry_refs {
    struct fsm_str name, key;
    uint64_t sid;
};

static struct entry_refs refs_of(const struct fsm_cmd *c)
{
    switch (c->op) {
    case FSM_OP_SESSION_OPEN:
        return (struct entry_refs){.name = c->session_open.name};
    case FSM_OP_SESSION_OPEN_REENTRANT:
        return (struct entry_refs){.name = c->session_open_reentrant.name};
    case FSM_OP_SESSION_CLOSE:
        return (struct entry_refs){.sid = c->session_close.sid};
    case FSM_OP_SESSION_EXPIRE:
        return (struct entry_refs){.sid = c->session_expire.sid};
    case FSM_OP_SESSION_REVOKE:
        return (struct entry_refs){.sid = c->session_revoke.sid};
    case FSM_OP_SESSION_CHECKPOINT:
        return (struct entry_refs){.sid = c->session_checkpoint.sid};
    case FSM_OP_LOCK:
        return (struct entry_refs){.name = c->lock.name, .sid = c->lock.sid};
    case FSM_OP_LOCK_SHARED:
        return (struct entry_refs){.name = c->lock_shared.name, .sid = c->lock_shared.sid};
    case FSM_OP_UNLOCK:
        return (struct entry_refs){.name = c->unlock.name, .sid = c->unlock.sid};
    case FSM_OP_CANCEL_WAIT:
        return (struct entry_refs){.name = c->cancel_wait.name, .sid = c->cancel_wait.sid};
    case FSM_OP_LOCKDELAY_END:
        return (struct entry_refs){.name = c->lockdelay_end.name};
    case FSM_OP_PUT:
        return (struct entry_refs){.key = c->put.key};
    case FSM_OP_DEL:
        return (struct entry_refs){.key = c->del.key};
    case FSM_OP_INCR:
        return (struct entry_refs){.key = c->incr.key};
    case FSM_OP_MEMBER_SET:
        return (struct entry_refs){.name = c->member_set.client_addr,
                                   .key = c->member_set.raft_addr,
                                   .sid = c->member_set.id};
    case FSM_OP_MEMBER_DEL:
        return (struct entry_refs){.sid = c->member_del.id};
    case FSM_OP_MEMBER_HTTP:
        return (struct entry_refs){.name = c->member_http.http_addr, .sid = c->member_http.id};
    case FSM_OP_SEM_ACQUIRE:
        return (struct entry_refs){.name = c->sem_acquire.name, .sid = c->sem_acquire.sid};
    case FSM_OP_SEM_RELEASE:
        return (struct entry_refs){.name = c->sem_release.name, .sid = c->sem_release.sid};
    case FSM_OP_ELECT_CAMPAIGN:
        return (struct entry_refs){.name = c->elect_campaign.name, .sid = c->elect_campaign.sid};
    case FSM_OP_ELECT_PROCLAIM:
        return (struct entry_refs){.name = c->elect_proclaim.name, .sid = c->elect_proclaim.sid};
    case FSM_OP_ELECT_RESIGN:
        return (struct entry_refs){.name = c->elect_resign.name, .sid = c->elect_resign.sid};
    case FSM_OP_LOCK_MULTI: { /* its first name */
        struct fsm_wait_ref w;
        return fsm_cmd_wait_of(c, &w) ? (struct entry_refs){.name = w.name, .sid = w.sid}
                                      : (struct entry_refs){.sid = c->lock_multi.sid};
    }
    case FSM_OP_LOCK_REVOKE:
        return (struct entry_refs){.name = c->lock_revoke.name};
    case FSM_OP_REVOKE_END:
        return (struct entry_refs){.name = c->revoke_end.name};
    case FSM_OP_LOCK_NOTIFY:
        return (struct entry_refs){.name = c->lock_notify.name, .sid = c->lock_notify.sid};
    case FSM_OP_SEM_ACQUIRE_W:
        return (struct entry_refs){.name = c->sem_acquire_w.name, .sid = c->sem_acquire_w.sid};
    case FSM_OP_SEM_SETLIMIT:
        return (struct entry_refs){.name = c->sem_setlimit.name};
    case FSM_OP_SEM_LIMIT_SET:
        return (struct entry_refs){.name = c->sem_limit_set.name};
    case FSM_OP_SEM_LIMIT_RESET:
        return (struct entry_refs){.name = c->sem_limit_reset.name};
    case FSM_OP_LOCK_META:
        return (struct entry_refs){.name = c->lock_meta.name, .sid = c->lock_meta.sid};
    case FSM_OP_MAXHOLD_END:
        return (struct entry_refs){.name = c->maxhold_end.name};
    default:
        return (struct entry_refs){.sid = 0};
    }
}

/* The names one entry mentions: per-lock, per-key and per-session views must be coherent. */
static void query_entry(const struct fsm *f, const struct entry *e)
{
    struct fsm_cmd cmd;
    char err[128];
    if (fsm_cmd_decode(e->p, e->n, &cmd, err, sizeof(err)))
        return;
    struct entry_refs c = refs_of(&cmd);
    struct fsm_lock_view v;
    if (fsm_lock_info(f, c.name.p, c.name.len, &v)) {
        uint64_t n = 0;
        fsm_lock_waiters(f, c.name.p, c.name.len, count_s, &n);
        /* a free lock exists only while a waiting multi-request blocks it (its waiters) */
        must(n == v.n_waiters && (v.holder_sid || v.n_shared || v.in_lockdelay || n));
        must((fsm_fence_check(f, c.name.p, c.name.len, v.token) == 0) == (v.holder_sid != 0));
    }
    struct fsm_kv_meta m;
    if (fsm_kv_get(f, c.key.p, c.key.len, &m)) {
        struct scan_st st = {0};
        must(fsm_kv_scan(f, c.key.p, c.key.len, 1, scan_cb, &st) == 1);
        must(st.prevlen == c.key.len && memcmp(st.prev, c.key.p, c.key.len) == 0);
    }
    struct fsm_session_view sv;
    if (fsm_session_info(f, c.sid, &sv))
        must(sv.sid == c.sid && sv.ttl_ms > 0);
    struct fsm_member_view mv;
    if (fsm_member_get(f, c.sid, &mv))
        must(mv.id == c.sid && mv.client_addr.len && mv.raft_addr.len &&
             mv.http_addr.len <= FSM_MAX_ADDR && (mv.http_addr.len || !mv.http_flags));
}

static void check_queries(const struct fsm *f, const struct entry *e, size_t n)
{
    struct fsm_stats st;
    struct scan_st sc = {0};
    uint64_t ns = 0, nw = 0, nd = 0;
    fsm_stats(f, &st);
    must(fsm_kv_scan(f, "", 0, 0, scan_cb, &sc) == st.keys && sc.n == st.keys);
    fsm_foreach_session(f, count_s, &ns);
    fsm_foreach_waiter(f, count_w, &nw);
    fsm_foreach_lockdelay(f, count_d, &nd);
    must(ns == st.sessions && nw == st.waiters && nd == st.locks_in_delay);
    struct member_st ms = {.f = f};
    fsm_foreach_member(f, member_cb, &ms);
    must(ms.n <= FSM_MAX_MEMBERS);
    for (size_t i = 0; i < n; i++)
        query_entry(f, &e[i]);
}

/* Restore `p`: on failure `f` must be unchanged; on success the bytes must be canonical. */
static void check_restore(struct fsm *f, const uint8_t *p, size_t n)
{
    char err[200];
    struct buf before = snap(f);
    if (fsm_restore(f, p, n, err, sizeof(err)) != 0) {
        struct buf after = snap(f);
        must(same(&before, &after) && err[0] != '\0');
        buf_free(&after);
    } else {
        struct buf after = snap(f);
        must(fsm_check_invariants(f, err, sizeof(err)) == 0);
        must(after.len == n && memcmp(after.p, p, n) == 0);
        buf_free(&after);
    }
    buf_free(&before);
}

/* Apply every entry once more to the original and its restored copy: same answers. */
static void check_replica(struct fsm *f, const struct entry *e, size_t n, struct fsm_events *ev)
{
    struct fsm *g = fsm_new();
    struct fsm_events gev;
    struct buf s1 = snap(f);
    char err[200];
    must(g != NULL);
    must(fsm_restore(g, (const uint8_t *)s1.p, s1.len, err, sizeof(err)) == 0);
    struct buf s2 = snap(g);
    must(same(&s1, &s2));
    fsm_events_init(&gev);
    for (size_t i = 0; i < n; i++) {
        struct fsm_reply r1, r2;
        apply_checked(f, e[i].p, e[i].n, &r1, ev);
        apply_checked(g, e[i].p, e[i].n, &r2, &gev);
        must(r1.kind == r2.kind && r1.value == r2.value && strcmp(r1.err, r2.err) == 0);
        must(same_events(ev, &gev));
    }
    buf_free(&s1);
    buf_free(&s2);
    s1 = snap(f);
    s2 = snap(g);
    must(same(&s1, &s2));
    buf_free(&s1);
    buf_free(&s2);
    fsm_events_free(&gev);
    fsm_free(g);
}

/* A snapshot with one byte changed or cut short, chosen by the input. */
static void check_damaged_snapshot(struct fsm *f, const uint8_t *data, size_t size)
{
    struct buf s = snap(f);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    if (s.len) {
        if (h & 1)
            s.p[(h >> 8) % s.len] ^= (char)(1 + (h >> 40) % 255);
        else
            s.len = (h >> 8) % s.len;
    }
    struct fsm *g = fsm_new();
    must(g != NULL);
    check_restore(g, (const uint8_t *)s.p, s.len);
    fsm_free(g);
    buf_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct entry e[MAX_ENTRIES];
    struct fsm_events ev;
    struct fsm_reply r;
    size_t n = split(data, size, e);
    check_roundtrip(data, size);
    struct fsm *f = fsm_new();
    must(f != NULL);
    fsm_events_init(&ev);
    open_sessions(f, &ev);
    for (size_t i = 0; i < n; i++) {
        check_roundtrip(e[i].p, e[i].n);
        apply_checked(f, e[i].p, e[i].n, &r, &ev);
    }
    check_queries(f, e, n);
    check_replica(f, e, n, &ev);
    check_damaged_snapshot(f, data, size);
    check_restore(f, data, size);
    fsm_events_free(&ev);
    fsm_free(f);
    return 0;
}
