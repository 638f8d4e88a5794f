/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.c — the event history ring, stream ids and names, and entry rendering (watch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/num.h"
#include "common/resp.h"
#include "server/watch/watch.h"

#define WATCH_MIN_CAP 16

/* Fields an entry carries, in the order they are written after `type`. */
enum {
    WF_NAME = 1,         /* name: the key or lock */
    WF_VALUE = 2,        /* value, or value_len when the value was over --event-value-max */
    WF_TOKEN = 4,        /* token */
    WF_SID = 8,          /* sid */
    WF_SID_OPT = 16,     /* sid, only when non-zero (a PUT's lease session) */
    WF_MOD_REV = 32,     /* mod_rev: the revision of the change (the id's rev, or the event's
                            token when set: a TXN's changes each have their own, fsm/txn.c) */
    WF_MS = 64,          /* ms_field: ttl_ms, wait_ms or delay_ms */
    WF_REASON = 128,     /* reason: close, expire or revoke */
    WF_OBJECT = 256,     /* object: semaphore or election, only when not a lock */
    WF_REVOKE = 512,     /* reason (the text; its bytes in the value's place) and by: who asked */
    WF_VALUE_OPT = 1024, /* value (or value_len, as WF_VALUE), only when not empty: a lock
                            grant's LOCK ... VALUE */
    WF_MAXHOLD = 2048,   /* reason max-hold and max_hold_ms, only when a max hold ended the
                            grant (ms != 0: fsm/lockmeta.c's MAXHOLD_END) */
    WF_KEY = 4096        /* the name is a key (keys= globs); a named row without it names a
                            lock, semaphore, election, latch or barrier (locks= globs) */
};

/* Which FSM events a row takes: all of its type, or only with / without `expired` or `sid`. */
enum when { W_ANY, W_EXPIRED, W_NOT_EXPIRED, W_SID, W_NO_SID };

struct kind {
    const char *name;
    uint8_t fsm_type;
    enum when when;
    unsigned fields;
    const char *ms_field;
};

/* The event kinds (docs/protocol.md "Watch" lists them). The first row that matches an FSM
 * event gives its kind; an FSM event no row takes (a rejected fence: no state changed) is not
 * part of the stream. */
static const struct kind kinds[] = {
    {"put", FSM_EV_KEY_PUT, W_ANY, WF_NAME | WF_KEY | WF_VALUE | WF_SID_OPT | WF_MOD_REV, NULL},
    {"del", FSM_EV_KEY_DELETED, W_NO_SID, WF_NAME | WF_KEY | WF_MOD_REV, NULL},
    {"expire-key", FSM_EV_KEY_DELETED, W_SID, WF_NAME | WF_KEY | WF_SID | WF_MOD_REV | WF_REASON,
     NULL},
    {"grant", FSM_EV_GRANTED, W_ANY, WF_NAME | WF_VALUE_OPT | WF_TOKEN | WF_SID | WF_OBJECT, NULL},
    {"release", FSM_EV_RELEASED, W_NOT_EXPIRED, WF_NAME | WF_TOKEN | WF_SID | WF_OBJECT, NULL},
    {"expire", FSM_EV_RELEASED, W_EXPIRED, WF_NAME | WF_TOKEN | WF_SID | WF_OBJECT | WF_MAXHOLD,
     NULL},
    {"wait", FSM_EV_WAIT_STARTED, W_ANY, WF_NAME | WF_SID | WF_MS | WF_OBJECT, "wait_ms"},
    {"wait-end", FSM_EV_WAIT_ENDED, W_ANY, WF_NAME | WF_SID | WF_OBJECT, NULL},
    {"lockdelay", FSM_EV_LOCKDELAY_STARTED, W_ANY, WF_NAME | WF_MS | WF_OBJECT, "delay_ms"},
    {"lockdelay-end", FSM_EV_LOCKDELAY_ENDED, W_ANY, WF_NAME | WF_OBJECT, NULL},
    {"leader", FSM_EV_LEADER, W_ANY, WF_NAME | WF_VALUE | WF_TOKEN | WF_SID, NULL},
    {"proclaim", FSM_EV_PROCLAIM, W_ANY, WF_NAME | WF_VALUE | WF_TOKEN | WF_SID, NULL},
    {"deadlock", FSM_EV_DEADLOCK, W_ANY, WF_NAME | WF_VALUE | WF_SID | WF_OBJECT, NULL},
    {"session-open", FSM_EV_SESSION_OPENED, W_ANY, WF_SID | WF_MS, "ttl_ms"},
    {"session-end", FSM_EV_SESSION_ENDED, W_ANY, WF_SID | WF_REASON, NULL},
    {"revoke-requested", FSM_EV_REVOKE_REQUESTED, W_ANY,
     WF_NAME | WF_TOKEN | WF_SID | WF_MS | WF_REVOKE, "deadline_ms"},
    {"wait-notify", FSM_EV_WAIT_NOTIFY, W_ANY, WF_NAME | WF_TOKEN | WF_SID | WF_MS, "wait_ms"},
    /* latches and barriers (src/fsm/latch.c) */
    {"latch-zero", FSM_EV_LATCH_ZERO, W_ANY, WF_NAME | WF_SID | WF_MS, "count"},
    {"latch-broken", FSM_EV_LATCH_BROKEN, W_ANY, WF_NAME | WF_SID, NULL},
    {"barrier-full", FSM_EV_BARRIER_FULL, W_ANY, WF_NAME | WF_SID | WF_MS, "count"},
    {"barrier-done", FSM_EV_BARRIER_DONE, W_ANY, WF_NAME | WF_SID, NULL},
    {"barrier-broken", FSM_EV_BARRIER_BROKEN, W_ANY, WF_NAME | WF_SID, NULL},
    {"latch-deleted", FSM_EV_LATCH_DELETED, W_ANY, WF_NAME | WF_MS, "barrier"},
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static bool when_holds(enum when w, const struct fsm_event *e)
{
    switch (w) {
    case W_EXPIRED:
        return e->expired;
    case W_NOT_EXPIRED:
        return !e->expired;
    case W_SID:
        return e->sid != 0;
    case W_NO_SID:
        return e->sid == 0;
    case W_ANY:
        return true;
    }
    return true;
}

/* The kind of an FSM event, or -1 when it is not part of the stream. */
static int kind_of(const struct fsm_event *e)
{
    for (size_t k = 0; k < N_KINDS; k++)
        if (kinds[k].fsm_type == e->type && when_holds(kinds[k].when, e))
            return (int)k;
    return -1;
}

const char *watch_kind_name(uint8_t kind)
{
    return kind < N_KINDS ? kinds[kind].name : "?";
}

uint8_t watch_entry_type(const struct watch_entry *e)
{
    return e->kind < N_KINDS ? kinds[e->kind].fsm_type : 0;
}

/* ---- ids ---- */

int watch_id_cmp(struct watch_id a, struct watch_id b)
{
    if (a.rev != b.rev)
        return a.rev < b.rev ? -1 : 1;
    return a.n < b.n ? -1 : a.n > b.n;
}

int watch_id_format(struct watch_id id, char *out)
{
    return snprintf(out, WATCH_ID_BUF, "%llu-%llu", (unsigned long long)id.rev,
                    (unsigned long long)id.n);
}

int watch_id_parse(const char *p, size_t len, struct watch_id *id)
{
    const char *dash = memchr(p, '-', len);
    size_t first = dash ? (size_t)(dash - p) : len;
    if (num_parse_u64(p, first, &id->rev))
        return -1;
    id->n = 0;
    if (dash && num_parse_u64(dash + 1, len - first - 1, &id->n))
        return -1;
    return 0;
}

int watch_stream_parse(const char *p, size_t len, bool *all, const char **prefix, size_t *plen)
{
    size_t sl = sizeof(WATCH_STREAM) - 1;
    if (len < sl || memcmp(p, WATCH_STREAM, sl) != 0)
        return -1;
    if (len == sl) {
        *all = true;
        *prefix = p + sl;
        *plen = 0;
        return 0;
    }
    if (p[sl] != ':')
        return -1;
    *all = false;
    *prefix = p + sl + 1;
    *plen = len - sl - 1;
    return 0;
}

/* ---- the ring ---- */

void watch_init(struct watch *w, size_t max_n, size_t max_bytes, size_t value_max)
{
    memset(w, 0, sizeof(*w));
    w->max_n = max_n;
    w->max_bytes = max_bytes;
    w->value_max = value_max;
    w->next_seq = 1;
    w->rng = 0x9e3779b97f4a7c15ull;
}

void watch_seed(struct watch *w, uint64_t seed)
{
    w->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static size_t entry_bytes(const struct watch_entry *e)
{
    return sizeof(*e) + sizeof(e) + e->name_len + (e->value_kept ? e->value_len : 0) + e->by_len +
           (e->traced ? TRACE_BIN_LEN : 0);
}

/* Where a traced entry keeps its traceparent's bytes. */
static const char *trace_at(const struct watch_entry *e)
{
    return e->data + e->name_len + (e->value_kept ? e->value_len : 0) + e->by_len;
}

static struct watch_entry **slot_at(const struct watch *w, size_t i)
{
    return &w->ring[(w->head + i) % w->cap];
}

/* ---- the name index: a treap on (name, seq) (watch.h) ---- */

/* Key order: (name, seq) against the node t; names compare as bytes, a prefix first. */
static int key_cmp(const char *name, size_t len, uint64_t seq, const struct watch_entry *t)
{
    size_t m = len < t->name_len ? len : t->name_len;
    int c = m ? memcmp(name, t->data, m) : 0;
    if (c)
        return c;
    if (len != t->name_len)
        return len < t->name_len ? -1 : 1;
    return seq < t->seq ? -1 : seq > t->seq;
}

/* Where t's name lies against the names starting with prefix: -1 before, 0 in, 1 after. */
static int prefix_cmp(const struct watch_entry *t, const char *prefix, size_t plen)
{
    size_t m = plen < t->name_len ? plen : t->name_len;
    int c = m ? memcmp(t->data, prefix, m) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return t->name_len < plen ? -1 : 0;
}

static uint32_t tsize(const struct watch_entry *t)
{
    return t ? t->size : 0;
}

/* Recompute t's subtree fields from its children. */
static void pull(struct watch_entry *t)
{
    t->size = 1 + tsize(t->l) + tsize(t->r);
    t->lo = t->hi = t->seq;
    if (t->l) {
        t->lo = t->l->lo < t->lo ? t->l->lo : t->lo;
        t->hi = t->l->hi > t->hi ? t->l->hi : t->hi;
    }
    if (t->r) {
        t->lo = t->r->lo < t->lo ? t->r->lo : t->lo;
        t->hi = t->r->hi > t->hi ? t->r->hi : t->hi;
    }
}

/* Split t into the nodes with key < (name, seq) and the rest. */
static void split(struct watch_entry *t, const char *name, size_t len, uint64_t seq,
                  struct watch_entry **lt, struct watch_entry **ge)
{
    if (!t) {
        *lt = *ge = NULL;
    } else if (key_cmp(name, len, seq, t) > 0) {
        split(t->r, name, len, seq, &t->r, ge);
        pull(t);
        *lt = t;
    } else {
        split(t->l, name, len, seq, lt, &t->l);
        pull(t);
        *ge = t;
    }
}

/* Join two treaps, every key of a before every key of b. */
static struct watch_entry *merge(struct watch_entry *a, struct watch_entry *b)
{
    if (!a || !b)
        return a ? a : b;
    if (a->prio >= b->prio) {
        a->r = merge(a->r, b);
        pull(a);
        return a;
    }
    b->l = merge(a, b->l);
    pull(b);
    return b;
}

static uint32_t next_prio(struct watch *w)
{
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->rng = x;
    return (uint32_t)(x >> 32);
}

static void tree_insert(struct watch *w, struct watch_entry *e)
{
    struct watch_entry *lt, *ge;
    e->l = e->r = NULL;
    e->prio = next_prio(w);
    pull(e);
    split(w->root, e->data, e->name_len, e->seq, &lt, &ge);
    w->root = merge(merge(lt, e), ge);
}

/* t without the node e (which is in it). */
static struct watch_entry *tree_del(struct watch_entry *t, struct watch_entry *e)
{
    if (!t)
        return NULL;
    if (t == e)
        return merge(t->l, t->r);
    if (key_cmp(e->data, e->name_len, e->seq, t) < 0)
        t->l = tree_del(t->l, e);
    else
        t->r = tree_del(t->r, e);
    pull(t);
    return t;
}

static void drop_oldest(struct watch *w)
{
    struct watch_entry *e = *slot_at(w, 0);
    if (watch_id_cmp(e->id, w->floor) > 0)
        w->floor = e->id;
    if (watch_named(e))
        w->root = tree_del(w->root, e);
    w->bytes -= entry_bytes(e);
    free(e);
    w->head = (w->head + 1) % w->cap;
    w->n--;
    w->dropped++;
}

/* Evict what the bounds and the floor say must go. */
static void trim(struct watch *w)
{
    while (w->n && (w->n > w->max_n || w->bytes > w->max_bytes ||
                    watch_id_cmp((*slot_at(w, 0))->id, w->floor) <= 0))
        drop_oldest(w);
}

void watch_free(struct watch *w)
{
    while (w->n)
        drop_oldest(w);
    free(w->ring);
    w->ring = NULL;
    w->cap = 0;
}

/* Room for one more entry: grow (up to max_n) or make room by evicting the oldest. */
static int make_room(struct watch *w)
{
    if (w->n < w->cap)
        return 0;
    size_t cap = w->cap ? w->cap * 2 : WATCH_MIN_CAP;
    if (cap > w->max_n)
        cap = w->max_n;
    struct watch_entry **r = cap > w->cap ? malloc(cap * sizeof(*r)) : NULL;
    if (!r) {
        if (!w->n)
            return -1;
        drop_oldest(w);
        return 0;
    }
    for (size_t i = 0; i < w->n; i++)
        r[i] = *slot_at(w, i);
    free(w->ring);
    w->ring = r;
    w->cap = cap;
    w->head = 0;
    return 0;
}

static struct watch_entry *entry_new(const struct watch *w, int kind, const struct fsm_event *ev)
{
    bool revoke = (kinds[kind].fields & WF_REVOKE) != 0; /* texts bounded by --max-key */
    bool keep =
        ((kinds[kind].fields & (WF_VALUE | WF_VALUE_OPT)) && ev->value.len <= w->value_max) ||
        revoke;
    size_t vlen = keep ? ev->value.len : 0, blen = revoke ? ev->by.len : 0;
    size_t tlen = ev->traced ? TRACE_BIN_LEN : 0;
    struct watch_entry *e = malloc(sizeof(*e) + ev->name.len + vlen + blen + tlen);
    if (!e)
        return NULL;
    e->traced = ev->traced;
    e->kind = (uint8_t)kind;
    e->object = (kinds[kind].fields & WF_OBJECT) ? ev->kind : 0;
    e->value_kept = keep;
    e->sid = ev->sid;
    e->token = ev->token;
    /* the reason of a session-end / expire-key rides in ms (0 close, 1 expire, 2 revoke) */
    e->ms = (kinds[kind].fields & WF_REASON) ? (ev->revoked ? 2u : ev->expired) : ev->ms;
    e->name_len = ev->name.len;
    e->value_len = (kinds[kind].fields & (WF_VALUE | WF_REVOKE | WF_VALUE_OPT)) ? ev->value.len : 0;
    e->by_len = (uint16_t)blen;
    if (ev->name.len)
        memcpy(e->data, ev->name.p, ev->name.len);
    if (vlen)
        memcpy(e->data + ev->name.len, ev->value.p, vlen);
    if (blen)
        memcpy(e->data + ev->name.len + vlen, ev->by.p, blen);
    if (tlen)
        memcpy(e->data + ev->name.len + vlen + blen, ev->trace.b, tlen);
    return e;
}

/* One event: an id, then the ring; a lost one moves the floor past it. */
static void add_one(struct watch *w, uint64_t rev, int kind, const struct fsm_event *ev)
{
    struct watch_id id = {rev, 0};
    if (rev == w->last.rev) {
        if (w->last.n == UINT64_MAX)
            return; /* inside a revision already forgotten: keep the floor's promise */
        id.n = w->last.n + 1;
    } else if (rev < w->last.rev) {
        return; /* never from a total FSM; ids must not go back */
    }
    w->last = id;
    struct watch_entry *e = make_room(w) ? NULL : entry_new(w, kind, ev);
    if (!e) {
        w->floor = id;
        w->dropped++;
        trim(w);
        return;
    }
    e->id = id;
    e->seq = w->next_seq++;
    if (watch_named(e))
        tree_insert(w, e);
    *slot_at(w, w->n) = e;
    w->n++;
    w->bytes += entry_bytes(e);
    trim(w);
}

void watch_add(struct watch *w, uint64_t rev, const struct fsm_events *ev)
{
    for (size_t i = 0; i < ev->n; i++) {
        int kind = kind_of(&ev->ev[i]);
        if (kind >= 0)
            add_one(w, rev, kind, &ev->ev[i]);
    }
    if (ev->lost)
        watch_forget(w, rev);
}

void watch_forget(struct watch *w, uint64_t rev)
{
    struct watch_id end = {rev, UINT64_MAX};
    if (watch_id_cmp(end, w->floor) > 0)
        w->floor = end;
    if (watch_id_cmp(end, w->last) > 0)
        w->last = end;
    trim(w);
}

int watch_check(const struct watch *w, struct watch_id after)
{
    if (after.rev == 0 && after.n == 0)
        return 0;
    return watch_id_cmp(after, w->floor) >= 0 ? 0 : -1;
}

struct watch_id watch_oldest(const struct watch *w)
{
    if (w->n)
        return (*slot_at(w, 0))->id;
    struct watch_id id = w->floor;
    if (id.n == UINT64_MAX) {
        id.rev++;
        id.n = 0;
    } else {
        id.n++;
    }
    return id;
}

size_t watch_after(const struct watch *w, struct watch_id after)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (watch_id_cmp((*slot_at(w, mid))->id, after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct watch_entry *watch_at(const struct watch *w, size_t i)
{
    return *slot_at(w, i);
}

bool watch_match(const struct watch_entry *e, bool all, const char *prefix, size_t plen)
{
    if (all)
        return true;
    if (!(kinds[e->kind].fields & WF_NAME))
        return false;
    return e->name_len >= plen && (plen == 0 || memcmp(e->data, prefix, plen) == 0);
}

bool watch_named(const struct watch_entry *e)
{
    return (kinds[e->kind].fields & WF_NAME) != 0;
}

enum watch_ns watch_entry_ns(const struct watch_entry *e)
{
    unsigned f = kinds[e->kind].fields;
    return !(f & WF_NAME) ? WATCH_NS_NONE : (f & WF_KEY) ? WATCH_NS_KEY : WATCH_NS_LOCK;
}

/* ---- reads by prefix ---- */

/* The entry with sequence number seq (retained). */
static const struct watch_entry *by_seq(const struct watch *w, uint64_t seq)
{
    return watch_at(w, (size_t)(seq - (w->next_seq - w->n)));
}

struct agg {
    size_t n;
    uint64_t lo, hi;
};

static void agg_one(struct agg *a, uint64_t lo, uint64_t hi, size_t n)
{
    if (!a->n || lo < a->lo)
        a->lo = lo;
    if (!a->n || hi > a->hi)
        a->hi = hi;
    a->n += n;
}

static void agg_node(struct agg *a, const struct watch_entry *t)
{
    agg_one(a, t->seq, t->seq, 1);
}

static void agg_tree(struct agg *a, const struct watch_entry *t)
{
    if (t)
        agg_one(a, t->lo, t->hi, t->size);
}

/* Count, smallest and largest seq of the names under the prefix: down to the first node inside
 * the range, then along the range's two edges below it, adding the subtrees between the edges
 * whole. O(depth) nodes. */
static struct agg range_agg(struct watch *w, const char *prefix, size_t plen)
{
    struct agg a = {0, 0, 0};
    const struct watch_entry *t = w->root;
    int c = 1;
    while (t && (c = prefix_cmp(t, prefix, plen)) != 0) {
        w->scanned++;
        t = c < 0 ? t->r : t->l;
    }
    if (!t)
        return a;
    w->scanned++;
    agg_node(&a, t);
    for (const struct watch_entry *x = t->l; x; w->scanned++) {
        if (prefix_cmp(x, prefix, plen) == 0) {
            agg_node(&a, x);
            agg_tree(&a, x->r);
            x = x->l;
        } else {
            x = x->r;
        }
    }
    for (const struct watch_entry *x = t->r; x; w->scanned++) {
        if (prefix_cmp(x, prefix, plen) == 0) {
            agg_node(&a, x);
            agg_tree(&a, x->l);
            x = x->r;
        } else {
            x = x->l;
        }
    }
    return a;
}

void watch_span(struct watch *w, bool all, const char *prefix, size_t plen, struct watch_span *sp)
{
    if (all) {
        sp->n = w->n;
        sp->first = w->n ? watch_at(w, 0) : NULL;
        sp->last = w->n ? watch_at(w, w->n - 1) : NULL;
        return;
    }
    struct agg a = range_agg(w, prefix, plen);
    sp->n = a.n;
    sp->first = a.n ? by_seq(w, a.lo) : NULL;
    sp->last = a.n ? by_seq(w, a.hi) : NULL;
}

/* The node with the smallest key >= (name, seq) among those with seq >= from, or NULL. Along
 * the search path for the key; a subtree whose largest seq is below `from` is skipped whole,
 * and one wholly after the key holds an answer as soon as its hi allows: O(depth). */
static const struct watch_entry *first_ge(struct watch *w, const struct watch_entry *t,
                                          const char *name, size_t len, uint64_t seq, uint64_t from)
{
    while (t) {
        w->scanned++;
        if (t->hi < from)
            return NULL;
        if (key_cmp(name, len, seq, t) > 0) {
            t = t->r;
            continue;
        }
        const struct watch_entry *l = first_ge(w, t->l, name, len, seq, from);
        if (l)
            return l;
        if (t->seq >= from)
            return t;
        t = t->r;
    }
    return NULL;
}

/* The merge heap: a min-heap of each name's next entry, by seq. */
static void heap_up(const struct watch_entry **h, size_t i)
{
    while (i) {
        size_t p = (i - 1) / 2;
        if (h[p]->seq <= h[i]->seq)
            break;
        const struct watch_entry *t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static void heap_down(const struct watch_entry **h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && h[l]->seq < h[m]->seq)
            m = l;
        if (r < n && h[r]->seq < h[m]->seq)
            m = r;
        if (m == i)
            return;
        const struct watch_entry *t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
}

static int heap_push(struct watch_iter *it, const struct watch_entry *e)
{
    if (it->hn == it->hcap) {
        size_t cap = it->hcap ? it->hcap * 2 : 16;
        const struct watch_entry **h = realloc(it->heap, cap * sizeof(*h));
        if (!h)
            return -1;
        it->heap = h;
        it->hcap = cap;
    }
    it->heap[it->hn] = e;
    heap_up(it->heap, it->hn++);
    return 0;
}

/* Seed the heap with the first entry at or after it->from of every name under the prefix. */
static int index_start(struct watch_iter *it)
{
    struct watch *w = it->w;
    const char *name = it->prefix;
    size_t len = it->plen;
    uint64_t seq = 0; /* (prefix, 0): before every name under it */
    for (;;) {
        const struct watch_entry *e = first_ge(w, w->root, name, len, seq, it->from);
        if (!e || prefix_cmp(e, it->prefix, it->plen) != 0)
            return 0;
        if (heap_push(it, e))
            return -1;
        name = e->data; /* then the first name after this one */
        len = e->name_len;
        seq = UINT64_MAX;
    }
}

void watch_iter_start(struct watch_iter *it, struct watch *w, bool all, const char *prefix,
                      size_t plen, struct watch_id after, enum watch_how how)
{
    memset(it, 0, sizeof(*it));
    it->w = w;
    it->all = all;
    it->prefix = prefix;
    it->plen = plen;
    size_t lo = 0, hi = w->n; /* watch_after, counting what it looks at */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        w->scanned++;
        if (watch_id_cmp(watch_at(w, mid)->id, after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    it->pos = lo;
    if (all || how == WATCH_RING || lo == w->n)
        return;
    if (how == WATCH_AUTO && w->n - lo <= range_agg(w, prefix, plen).n)
        return; /* the tail is no longer than the prefix's own entries: walk it */
    it->from = w->next_seq - w->n + lo;
    it->index = true;
    if (index_start(it) == 0)
        return;
    free(it->heap); /* no memory for the heap: the ring walk gives the same answer */
    it->heap = NULL;
    it->hn = it->hcap = 0;
    it->index = false;
}

const struct watch_entry *watch_iter_next(struct watch_iter *it)
{
    struct watch *w = it->w;
    if (!it->index) {
        while (it->pos < w->n) {
            const struct watch_entry *e = watch_at(w, it->pos++);
            w->scanned++;
            if (watch_match(e, it->all, it->prefix, it->plen))
                return e;
        }
        return NULL;
    }
    if (!it->hn)
        return NULL;
    const struct watch_entry *e = it->heap[0];
    const struct watch_entry *next =
        first_ge(w, w->root, e->data, e->name_len, e->seq + 1, it->from);
    if (next && next->name_len == e->name_len && memcmp(next->data, e->data, e->name_len) == 0) {
        it->heap[0] = next; /* the same name's next entry */
    } else {
        it->heap[0] = it->heap[--it->hn];
    }
    heap_down(it->heap, it->hn, 0);
    return e;
}

void watch_iter_end(struct watch_iter *it)
{
    free(it->heap);
    it->heap = NULL;
    it->hn = it->hcap = 0;
}

/* ---- the index's audit ---- */

struct audit {
    const struct watch *w;
    const struct watch_entry *prev; /* in-order predecessor */
    size_t nodes;
    const char *why;
};

static int audit_fail(struct audit *a, const char *why)
{
    a->why = why;
    return -1;
}

static int audit_node(struct audit *a, const struct watch_entry *t, int depth)
{
    if (!t)
        return 0;
    if (depth > 4096)
        return audit_fail(a, "the tree is deeper than 4096");
    if ((t->l && t->l->prio > t->prio) || (t->r && t->r->prio > t->prio))
        return audit_fail(a, "a child's priority is above its parent's");
    if (audit_node(a, t->l, depth + 1))
        return -1;
    const struct watch *w = a->w;
    uint64_t base = w->next_seq - w->n;
    if (t->seq < base || t->seq >= w->next_seq || by_seq(w, t->seq) != t)
        return audit_fail(a, "a node is not the ring's entry of its seq");
    if (!watch_named(t))
        return audit_fail(a, "an entry without a name is in the index");
    if (a->prev && key_cmp(a->prev->data, a->prev->name_len, a->prev->seq, t) >= 0)
        return audit_fail(a, "keys are not in (name, seq) order");
    a->prev = t;
    a->nodes++;
    if (audit_node(a, t->r, depth + 1))
        return -1;
    struct watch_entry copy = *t;
    pull(&copy);
    if (copy.size != t->size || copy.lo != t->lo || copy.hi != t->hi)
        return audit_fail(a, "a subtree's size, lo or hi is wrong");
    return 0;
}

int watch_audit(const struct watch *w, char *why, size_t whylen)
{
    struct audit a = {w, NULL, 0, NULL};
    size_t named = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct watch_entry *e = watch_at(w, i);
        named += watch_named(e);
        if (e->seq != w->next_seq - w->n + i) {
            a.why = "ring seqs are not consecutive";
            break;
        }
    }
    if (!a.why && audit_node(&a, w->root, 0) == 0 && a.nodes != named)
        a.why = "the index does not hold every named entry";
    if (!a.why)
        return 0;
    snprintf(why, whylen, "%s", a.why);
    return -1;
}

/* ---- rendering ---- */

static void field_u64(struct buf *out, const char *name, uint64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    resp_w_bulk_str(out, name);
    resp_w_bulk(out, num, (size_t)n);
}

static size_t field_count(const struct kind *k, const struct watch_entry *e)
{
    unsigned f = k->fields;
    size_t n = 1; /* type */
    n += !!(f & WF_NAME) + !!(f & WF_VALUE) + !!(f & WF_TOKEN) + !!(f & WF_SID);
    n += (f & WF_SID_OPT) && e->sid;
    n += !!(f & WF_MOD_REV) + !!(f & WF_MS) + !!(f & WF_REASON) + 2 * !!(f & WF_REVOKE);
    n += ((f & WF_VALUE_OPT) && e->value_len) + 2 * ((f & WF_MAXHOLD) && e->ms);
    n += e->object != 0;
    n += e->traced;
    return n;
}

/* The entry's traceparent as text (common/trace.h) into out. */
static void trace_text(const struct watch_entry *e, char out[TRACE_TEXT_LEN + 1])
{
    struct trace_ctx t;
    memcpy(t.b, trace_at(e), TRACE_BIN_LEN);
    trace_format(&t, out);
}

void watch_render(struct buf *out, const struct watch_entry *e)
{
    const struct kind *k = &kinds[e->kind];
    char id[WATCH_ID_BUF];
    int idlen = watch_id_format(e->id, id);
    resp_w_array(out, 2);
    resp_w_bulk(out, id, (size_t)idlen);
    resp_w_array(out, 2 * field_count(k, e));
    resp_w_bulk_str(out, "type");
    resp_w_bulk_str(out, k->name);
    if (k->fields & WF_NAME) {
        resp_w_bulk_str(out, "name");
        resp_w_bulk(out, e->data, e->name_len);
    }
    if ((k->fields & WF_VALUE) && e->value_kept) {
        resp_w_bulk_str(out, "value");
        resp_w_bulk(out, e->data + e->name_len, e->value_len);
    } else if (k->fields & WF_VALUE) {
        field_u64(out, "value_len", e->value_len);
    }
    if ((k->fields & WF_VALUE_OPT) && e->value_len && e->value_kept) {
        resp_w_bulk_str(out, "value");
        resp_w_bulk(out, e->data + e->name_len, e->value_len);
    } else if ((k->fields & WF_VALUE_OPT) && e->value_len) {
        field_u64(out, "value_len", e->value_len);
    }
    if (k->fields & WF_TOKEN)
        field_u64(out, "token", e->token);
    if ((k->fields & WF_SID) || ((k->fields & WF_SID_OPT) && e->sid))
        field_u64(out, "sid", e->sid);
    if (k->fields & WF_MOD_REV)
        field_u64(out, "mod_rev", e->token ? e->token : e->id.rev);
    if (k->fields & WF_MS)
        field_u64(out, k->ms_field, e->ms);
    if (k->fields & WF_REASON) {
        resp_w_bulk_str(out, "reason");
        resp_w_bulk_str(out, e->ms == 2 ? "revoke" : e->ms ? "expire" : "close");
    }
    if (k->fields & WF_REVOKE) {
        resp_w_bulk_str(out, "reason");
        resp_w_bulk(out, e->data + e->name_len, e->value_len);
        resp_w_bulk_str(out, "by");
        resp_w_bulk(out, e->data + e->name_len + e->value_len, e->by_len);
    }
    if ((k->fields & WF_MAXHOLD) && e->ms) {
        resp_w_bulk_str(out, "reason");
        resp_w_bulk_str(out, "max-hold");
        field_u64(out, "max_hold_ms", e->ms);
    }
    if (e->object) {
        resp_w_bulk_str(out, "object");
        resp_w_bulk_str(out, fsm_kind_name(e->object));
    }
    if (e->traced) {
        char tp[TRACE_TEXT_LEN + 1];
        trace_text(e, tp);
        resp_w_bulk_str(out, "traceparent");
        resp_w_bulk_str(out, tp);
    }
}

void watch_render_json(struct json *j, const struct watch_entry *e)
{
    const struct kind *k = &kinds[e->kind];
    char id[WATCH_ID_BUF];
    int idlen = watch_id_format(e->id, id);
    json_obj(j);
    json_kv_str(j, "id", id, (size_t)idlen);
    json_kv_cstr(j, "type", k->name);
    if (k->fields & WF_NAME)
        json_kv_str(j, "name", e->data, e->name_len);
    if ((k->fields & WF_VALUE) && e->value_kept)
        json_kv_str(j, "value", e->data + e->name_len, e->value_len);
    else if (k->fields & WF_VALUE)
        json_kv_u64(j, "value_len", e->value_len);
    if ((k->fields & WF_VALUE_OPT) && e->value_len && e->value_kept)
        json_kv_str(j, "value", e->data + e->name_len, e->value_len);
    else if ((k->fields & WF_VALUE_OPT) && e->value_len)
        json_kv_u64(j, "value_len", e->value_len);
    if (k->fields & WF_TOKEN)
        json_kv_u64(j, "token", e->token);
    if ((k->fields & WF_SID) || ((k->fields & WF_SID_OPT) && e->sid))
        json_kv_u64(j, "sid", e->sid);
    if (k->fields & WF_MOD_REV)
        json_kv_u64(j, "mod_rev", e->token ? e->token : e->id.rev);
    if (k->fields & WF_MS)
        json_kv_u64(j, k->ms_field, e->ms);
    if (k->fields & WF_REASON)
        json_kv_cstr(j, "reason", e->ms == 2 ? "revoke" : e->ms ? "expire" : "close");
    if ((k->fields & WF_MAXHOLD) && e->ms) {
        json_kv_cstr(j, "reason", "max-hold");
        json_kv_u64(j, "max_hold_ms", e->ms);
    }
    if (e->object)
        json_kv_cstr(j, "object", fsm_kind_name(e->object));
    if (e->traced) {
        char tp[TRACE_TEXT_LEN + 1];
        trace_text(e, tp);
        json_kv_cstr(j, "traceparent", tp);
    }
    json_close(j);
}
