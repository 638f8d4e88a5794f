/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.c — the event history ring, stream ids and names, and entry rendering (watch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/resp.h"
#include "server/watch.h"

#define WATCH_MIN_CAP 16

/* Fields an entry carries, in the order they are written after `type`. */
enum {
    WF_NAME = 1,     /* name: the key or lock */
    WF_VALUE = 2,    /* value, or value_len when the value was over --event-value-max */
    WF_TOKEN = 4,    /* token */
    WF_SID = 8,      /* sid */
    WF_SID_OPT = 16, /* sid, only when non-zero (a PUT's lease session) */
    WF_MOD_REV = 32, /* mod_rev: the revision of the change (the id's rev) */
    WF_MS = 64,      /* ms_field: ttl_ms, wait_ms or delay_ms */
    WF_REASON = 128, /* reason: close, expire or revoke */
    WF_OBJECT = 256  /* object: semaphore or election, only when not a lock */
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

/* The event kinds (docs/protocol.md "XREAD" lists them). The first row that matches an FSM
 * event gives its kind; an FSM event no row takes (a rejected fence: no state changed) is not
 * part of the stream. */
static const struct kind kinds[] = {
    {"put", FSM_EV_KEY_PUT, W_ANY, WF_NAME | WF_VALUE | WF_SID_OPT | WF_MOD_REV, NULL},
    {"del", FSM_EV_KEY_DELETED, W_NO_SID, WF_NAME | WF_MOD_REV, NULL},
    {"expire-key", FSM_EV_KEY_DELETED, W_SID, WF_NAME | WF_SID | WF_MOD_REV | WF_REASON, NULL},
    {"grant", FSM_EV_GRANTED, W_ANY, WF_NAME | WF_TOKEN | WF_SID | WF_OBJECT, NULL},
    {"release", FSM_EV_RELEASED, W_NOT_EXPIRED, WF_NAME | WF_TOKEN | WF_SID | WF_OBJECT, NULL},
    {"expire", FSM_EV_RELEASED, W_EXPIRED, WF_NAME | WF_TOKEN | WF_SID | WF_OBJECT, NULL},
    {"wait", FSM_EV_WAIT_STARTED, W_ANY, WF_NAME | WF_SID | WF_MS | WF_OBJECT, "wait_ms"},
    {"wait-end", FSM_EV_WAIT_ENDED, W_ANY, WF_NAME | WF_SID | WF_OBJECT, NULL},
    {"lockdelay", FSM_EV_LOCKDELAY_STARTED, W_ANY, WF_NAME | WF_MS | WF_OBJECT, "delay_ms"},
    {"lockdelay-end", FSM_EV_LOCKDELAY_ENDED, W_ANY, WF_NAME | WF_OBJECT, NULL},
    {"leader", FSM_EV_LEADER, W_ANY, WF_NAME | WF_VALUE | WF_TOKEN | WF_SID, NULL},
    {"proclaim", FSM_EV_PROCLAIM, W_ANY, WF_NAME | WF_VALUE | WF_TOKEN | WF_SID, NULL},
    {"session-open", FSM_EV_SESSION_OPENED, W_ANY, WF_SID | WF_MS, "ttl_ms"},
    {"session-end", FSM_EV_SESSION_ENDED, W_ANY, WF_SID | WF_REASON, NULL},
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
    default:
        return true;
    }
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

/* Decimal digits only, the whole 64-bit range (a stream id's halves are unsigned 64-bit, as
 * in Redis; resp_parse_u64 stops at INT64_MAX). */
static int parse_u64_full(const char *p, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)p[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int watch_id_parse(const char *p, size_t len, struct watch_id *id)
{
    const char *dash = memchr(p, '-', len);
    size_t first = dash ? (size_t)(dash - p) : len;
    if (parse_u64_full(p, first, &id->rev))
        return -1;
    id->n = 0;
    if (dash && parse_u64_full(dash + 1, len - first - 1, &id->n))
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
}

static size_t entry_bytes(const struct watch_entry *e)
{
    return sizeof(*e) + sizeof(e) + e->name_len + (e->value_kept ? e->value_len : 0);
}

static struct watch_entry **slot_at(const struct watch *w, size_t i)
{
    return &w->ring[(w->head + i) % w->cap];
}

static void drop_oldest(struct watch *w)
{
    struct watch_entry *e = *slot_at(w, 0);
    if (watch_id_cmp(e->id, w->floor) > 0)
        w->floor = e->id;
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
    bool keep = (kinds[kind].fields & WF_VALUE) && ev->value.len <= w->value_max;
    size_t vlen = keep ? ev->value.len : 0;
    struct watch_entry *e = malloc(sizeof(*e) + ev->name.len + vlen);
    if (!e)
        return NULL;
    e->kind = (uint8_t)kind;
    e->object = (kinds[kind].fields & WF_OBJECT) ? ev->kind : 0;
    e->value_kept = keep;
    e->sid = ev->sid;
    e->token = ev->token;
    /* the reason of a session-end / expire-key rides in ms (0 close, 1 expire, 2 revoke) */
    e->ms = (kinds[kind].fields & WF_REASON) ? (ev->revoked ? 2u : ev->expired) : ev->ms;
    e->name_len = ev->name.len;
    e->value_len = (kinds[kind].fields & WF_VALUE) ? ev->value.len : 0;
    if (ev->name.len)
        memcpy(e->data, ev->name.p, ev->name.len);
    if (vlen)
        memcpy(e->data + ev->name.len, ev->value.p, vlen);
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
    n += !!(f & WF_MOD_REV) + !!(f & WF_MS) + !!(f & WF_REASON);
    n += e->object != 0;
    return n;
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
    if (k->fields & WF_TOKEN)
        field_u64(out, "token", e->token);
    if ((k->fields & WF_SID) || ((k->fields & WF_SID_OPT) && e->sid))
        field_u64(out, "sid", e->sid);
    if (k->fields & WF_MOD_REV)
        field_u64(out, "mod_rev", e->id.rev);
    if (k->fields & WF_MS)
        field_u64(out, k->ms_field, e->ms);
    if (k->fields & WF_REASON) {
        resp_w_bulk_str(out, "reason");
        resp_w_bulk_str(out, e->ms == 2 ? "revoke" : e->ms ? "expire" : "close");
    }
    if (e->object) {
        resp_w_bulk_str(out, "object");
        resp_w_bulk_str(out, fsm_kind_name(e->object));
    }
}
