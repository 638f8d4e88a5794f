/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/history.c — lock history: every grant of a lock, semaphore permit or election leadership,
 * who held it, with which token, who waited, and how it ended (LOCK.HISTORY).
 *
 * Owns struct fsm_hist (f->hist, NULL until a HISTORY_LIMITS entry turns it on), its per-name
 * records (struct hlock, in an AVL tree by name bytes) and their entries (struct hent, one
 * malloc each with its waiters and strings inline). It is replicated state derived only from
 * the applied entries: fsm_history_note reads the GRANTED, RELEASED, WAIT_STARTED and
 * WAIT_ENDED events one fsm_apply emitted, with that entry's now_ms (the leader's clock as the
 * entry carries it; never this replica's), so every replica keeps the same history, and the
 * snapshot carries it (section 4).
 *
 * Invariants (fsm_history_check):
 *   - entries of a name are in token order (oldest .. newest), at most per_lock of them; all
 *     entries over all names are on one global list in token order, at most max_entries;
 *   - eviction takes the oldest first: per name when a name is over per_lock, globally when the
 *     total is over max_entries; `compacted` (of a name, and of the whole history) is the
 *     newest token evicted, so every kept entry of a name has a token above its compacted;
 *   - a record with no entries and no pending waits is dropped (its history is gone; the
 *     global compacted still says so, and a record made again for the name starts from it);
 *     a lock's history outlives the lock record;
 *   - pending waits (sid, the now_ms it queued at) follow WAIT_STARTED / WAIT_ENDED / GRANTED,
 *     so a grant knows how long its grantee and the waiters behind it had waited.
 * The limits are replicated (HISTORY_LIMITS, a leader's --history-per-lock and
 * --history-max-entries): a node's own flag would make replicas keep different histories.
 * Both 0 (either 0 makes both 0) = off: everything is freed.
 *
 * Snapshot section 4 (FSM_SNAP_SECTIONS, written while the history is on):
 *   varint per_lock (1..FSM_HIST_PER_LOCK_MAX), varint max_entries (1..FSM_HIST_ENTRIES_MAX),
 *   varint compacted (the newest token evicted anywhere, 0 = none),
 *   varint n_names, per name in strictly increasing byte order:
 *     str name (1..FSM_MAX_NAME), varint compacted (<= the global one),
 *     varint n_waits, per pending wait in queue-entry order: varint sid (> 0), varint since_ms,
 *     varint n_entries (0..per_lock; a name has entries or waits), per entry oldest first:
 *       u8 kind | flags, varint token (increasing, > compacted), varint sid, varint granted_ms,
 *       varint waited_ms, varint permits (>= 1), varint ended_rev (0 = held; else >= token),
 *       [u8 end_op (an op), varint ended_ms] if ended, str session name (0..FSM_MAX_NAME),
 *       str user (0..FSM_MAX_USER), [str value (1..FSM_MAX_ELECT_VALUE)] if HENT_F_VALUE,
 *       varint n_waiters, min(n_waiters, FSM_HIST_WAITERS) times: varint sid, varint waited_ms
 *   Tokens are unique over all names and at most the revision. The first byte's low bits are
 *   the kind, its high bits flags: HENT_F_VALUE (0x80) says the grant carried a lock value
 *   (LOCK ... VALUE, lockmeta.c; a lock's grant only), set exactly when that value is not
 *   empty. An entry without a value is written as before the flag existed, so a section of
 *   the first format (no flag anywhere) reads as it was written, byte for byte.
 *
 * Traceparents (TRACEPARENT, common/trace.h) make a second format, written only while some
 * entry or pending wait has one (so a history without any keeps the bytes above): the payload
 * starts with varint 0 (never a per_lock) and u8 2, then the format above with three
 * additions: each pending wait is followed by u8 traced (0 or 1) and, if 1, the 26 bytes of its
 * request's traceparent; an entry's first byte may set HENT_F_TRACE (0x40: the 26 bytes of the
 * grantee's request's traceparent follow the value) and, if ended, HENT_F_END_TRACE (0x20: the
 * ending command's, after it). The second format must hold at least one traceparent; the first
 * may not set those bits. A grant's traceparent is its grantee's own request's: the LOCK that
 * queued it (kept with the pending wait) or took it at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fsm/internal.h"

#define HENT_F_VALUE 0x80u     /* section 4: a str value follows the user */
#define HENT_F_TRACE 0x40u     /* the grant's traceparent follows the value */
#define HENT_F_END_TRACE 0x20u /* the end's follows that */
#define HENT_KIND_MASK 0x0fu
#define HIST_FORMAT_TRACES 2 /* section 4's second format (after a varint 0) */

struct hwait {
    struct hwait *prev, *next;
    uint64_t sid, since_ms;
    bool traced; /* the waiting request's traceparent */
    struct trace_ctx trace;
};

struct hent {
    struct hent *gprev, *gnext; /* the global list, token order */
    struct hent *prev, *next;   /* its name's list, token order */
    struct hlock *hl;
    uint64_t sid, token, granted_ms, waited_ms, ended_rev, ended_ms;
    uint32_t permits, n_waiters;
    uint32_t value_len; /* the grant's lock value (lockmeta.c), 0..FSM_MAX_ELECT_VALUE */
    uint16_t sname_len;
    uint8_t user_len, kind, end_op, n_shown;
    uint8_t tflags;              /* HENT_F_TRACE (in the tail), HENT_F_END_TRACE (end_trace) */
    struct trace_ctx *end_trace; /* the ending command's traceparent (owned), NULL if none */
    struct fsm_hist_waiter w[];  /* n_shown, then the session name, the user, the value and,
                                    under HENT_F_TRACE, the grant's traceparent */
};

struct hlock {
    struct onode o;
    struct hent *oldest, *newest;
    struct hwait *w_head, *w_tail;
    uint64_t compacted;
    uint32_t n, n_w;
    uint16_t name_len;
    char name[];
};

struct fsm_hist {
    uint64_t per_lock, max_entries, compacted;
    uint64_t n_entries, n_names, n_waits, bytes;
    struct onode *names;
    struct hent *g_oldest, *g_newest;
};

static const char *ent_sname(const struct hent *e)
{
    return (const char *)(e->w + e->n_shown);
}

static const char *ent_value(const struct hent *e)
{
    return ent_sname(e) + e->sname_len + e->user_len;
}

/* The grant's traceparent in the tail (alignment 1); valid under HENT_F_TRACE. */
static const struct trace_ctx *ent_trace(const struct hent *e)
{
    return (const struct trace_ctx *)(ent_value(e) + e->value_len);
}

static size_t ent_size(uint8_t n_shown, size_t sname, size_t user, size_t value, bool traced)
{
    return sizeof(struct hent) + n_shown * sizeof(struct fsm_hist_waiter) + sname + user + value +
           (traced ? sizeof(struct trace_ctx) : 0);
}

static size_t ent_bytes(const struct hent *e)
{
    return ent_size(e->n_shown, e->sname_len, e->user_len, e->value_len, e->tflags & HENT_F_TRACE) +
           (e->end_trace ? sizeof(*e->end_trace) : 0);
}

static void ent_free(struct hent *e)
{
    free(e->end_trace);
    free(e);
}

static struct hlock *hl_find(const struct fsm_hist *h, const char *name, size_t len)
{
    struct onode *n = fsm_otree_find(h->names, name, len);
    return n ? ONODE_OWNER(n, struct hlock, o) : NULL;
}

static struct hlock *hl_new(const char *name, size_t len)
{
    struct hlock *hl = calloc(1, sizeof(*hl) + len);
    if (!hl)
        return NULL;
    memcpy(hl->name, name, len);
    hl->name_len = (uint16_t)len;
    onode_set_key(&hl->o, hl->name, hl->name_len);
    return hl;
}

static struct hlock *hl_get(struct fsm_hist *h, const char *name, size_t len)
{
    struct hlock *hl = hl_find(h, name, len);
    if (hl || !(hl = hl_new(name, len)))
        return hl;
    /* A name whose record was dropped may have had grants up to the whole history's
     * compacted revision: a new record says so too, or BEFORE would answer an empty page. */
    hl->compacted = h->compacted;
    fsm_otree_insert(&h->names, &hl->o);
    h->n_names++;
    h->bytes += sizeof(*hl) + len;
    return hl;
}

static void hl_drop_if_unused(struct fsm_hist *h, struct hlock *hl)
{
    if (hl->n || hl->n_w)
        return;
    fsm_otree_remove(&h->names, &hl->o);
    h->n_names--;
    h->bytes -= sizeof(*hl) + hl->name_len;
    free(hl);
}

static void ent_link(struct fsm_hist *h, struct hlock *hl, struct hent *e)
{
    e->hl = hl;
    DLIST_APPEND(hl->oldest, hl->newest, e);
    hl->n++;
    DLIST_APPEND_F(h->g_oldest, h->g_newest, e, gprev, gnext);
    h->n_entries++;
    h->bytes += ent_bytes(e);
}

/* Unlink and free e; its record too when nothing is left in it (unless it is `keep`). */
static void ent_evict(struct fsm_hist *h, struct hent *e, const struct hlock *keep)
{
    struct hlock *hl = e->hl;
    DLIST_UNLINK_ENDS(hl->oldest, hl->newest, e);
    DLIST_UNLINK_ENDS_F(h->g_oldest, h->g_newest, e, gprev, gnext);
    hl->n--;
    h->n_entries--;
    h->bytes -= ent_bytes(e);
    if (e->token > hl->compacted)
        hl->compacted = e->token;
    if (e->token > h->compacted)
        h->compacted = e->token;
    ent_free(e);
    if (hl != keep)
        hl_drop_if_unused(h, hl);
}

/* ---- pending waits ---- */

static struct hwait *wait_find(const struct hlock *hl, uint64_t sid)
{
    for (struct hwait *w = hl->w_head; w; w = w->next)
        if (w->sid == sid)
            return w;
    return NULL;
}

static void wait_unlink(struct fsm_hist *h, struct hlock *hl, struct hwait *w)
{
    DLIST_UNLINK_ENDS(hl->w_head, hl->w_tail, w);
    hl->n_w--;
    h->n_waits--;
    h->bytes -= sizeof(*w);
    free(w);
}

static void wait_append(struct fsm_hist *h, struct hlock *hl, uint64_t sid, uint64_t since_ms,
                        const struct trace_ctx *trace)
{
    struct hwait *w = malloc(sizeof(*w));
    if (!w)
        return; /* out of memory: the grant shows no wait for it */
    w->sid = sid;
    w->since_ms = since_ms;
    w->traced = trace != NULL;
    if (trace)
        w->trace = *trace;
    DLIST_APPEND(hl->w_head, hl->w_tail, w);
    hl->n_w++;
    h->n_waits++;
    h->bytes += sizeof(*w);
}

static uint64_t ms_since(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0; /* leaders' clocks may differ: never negative */
}

/* ---- the events of one entry ---- */

static uint32_t grant_permits(const struct fsm *f, const struct fsm_event *ev)
{
    const struct lock *l = fsm_lock_find(f, ev->name.p, ev->name.len);
    if (l)
        for (const struct shold *s = l->sh_head; s; s = s->lnext)
            if (s->token == ev->token)
                return s->permits;
    return 1;
}

/* The value an exclusive grant of a lock carries (LOCK ... VALUE, lockmeta.c), read while the
 * grant still holds the lock at the end of the apply; empty otherwise. */
static struct fsm_str grant_value(const struct fsm *f, const struct fsm_event *ev)
{
    const struct lock *l =
        ev->kind == FSM_KIND_LOCK ? fsm_lock_find(f, ev->name.p, ev->name.len) : NULL;
    if (!l || !l->holder || l->holder->sid != ev->sid || l->token != ev->token)
        return (struct fsm_str){"", 0};
    return fsm_lock_holder_value(l);
}

/* The command's traceparent if it acts as session `sid` (its own request), else NULL. */
static const struct trace_ctx *own_trace(const struct fsm_cmd *c, uint64_t sid)
{
    return c->traced && sid && fsm_cmd_acting_sid(c) == sid ? &c->trace : NULL;
}

static void on_granted(struct fsm *f, struct fsm_hist *h, const struct fsm_cmd *c,
                       struct fsm_event *ev, uint64_t now)
{
    struct hlock *hl = hl_get(h, ev->name.p, ev->name.len);
    if (!hl)
        return;
    uint64_t waited = 0;
    struct hwait *own = wait_find(hl, ev->sid);
    const struct trace_ctx *tp = own_trace(c, ev->sid);
    bool traced = tp != NULL;
    struct trace_ctx trace = tp ? *tp : (struct trace_ctx){{0}};
    if (own) {
        waited = ms_since(now, own->since_ms);
        if (own->traced) { /* the request that queued it */
            traced = true;
            trace = own->trace;
        }
        wait_unlink(h, hl, own);
    }
    ev->traced = traced;
    ev->trace = trace;
    const struct sess *s = fsm_sess_find(f, ev->sid);
    size_t sname = s ? s->name_len : 0, user = s ? s->owner_len : 0;
    struct fsm_str value = grant_value(f, ev);
    uint8_t shown = hl->n_w < FSM_HIST_WAITERS ? (uint8_t)hl->n_w : FSM_HIST_WAITERS;
    struct hent *e = malloc(ent_size(shown, sname, user, value.len, traced));
    if (!e) {
        hl_drop_if_unused(h, hl);
        return;
    }
    memset(e, 0, sizeof(*e));
    e->sid = ev->sid;
    e->token = ev->token;
    e->granted_ms = now;
    e->waited_ms = waited;
    e->kind = ev->kind;
    e->permits = ev->kind == FSM_KIND_SEM ? grant_permits(f, ev) : 1;
    e->n_waiters = hl->n_w;
    e->n_shown = shown;
    uint8_t i = 0;
    for (const struct hwait *w = hl->w_head; w && i < shown; w = w->next, i++)
        e->w[i] = (struct fsm_hist_waiter){w->sid, ms_since(now, w->since_ms)};
    e->sname_len = (uint16_t)sname;
    e->user_len = (uint8_t)user;
    if (s) {
        memcpy((char *)ent_sname(e), s->name, sname);
        memcpy((char *)ent_sname(e) + sname, sess_owner(s), user);
    }
    e->value_len = value.len;
    if (value.len)
        memcpy((char *)ent_value(e), value.p, value.len);
    e->tflags = traced ? HENT_F_TRACE : 0;
    if (traced)
        memcpy((char *)ent_trace(e), &trace, sizeof(trace));
    if (hl->n >= h->per_lock)
        ent_evict(h, hl->oldest, hl);
    if (h->n_entries >= h->max_entries)
        ent_evict(h, h->g_oldest, hl);
    ent_link(h, hl, e);
}

static void on_released(struct fsm *f, struct fsm_hist *h, const struct fsm_cmd *c,
                        const struct fsm_event *ev, uint8_t op, uint64_t now)
{
    struct hlock *hl = hl_find(h, ev->name.p, ev->name.len);
    if (!hl)
        return; /* its entry was evicted */
    for (struct hent *e = hl->newest; e && e->token >= ev->token; e = e->prev)
        if (e->token == ev->token && !e->ended_rev) {
            e->ended_rev = f->revision;
            e->ended_ms = now;
            e->end_op = op;
            if (c->traced && (e->end_trace = malloc(sizeof(*e->end_trace)))) {
                *e->end_trace = c->trace; /* the command that ended it, whoever sent it */
                e->tflags |= HENT_F_END_TRACE;
                h->bytes += sizeof(*e->end_trace);
            } /* out of memory: the end shows no traceparent */
            return;
        }
}

static bool upgraded(const struct fsm_events *ev, size_t i)
{
    const struct fsm_event *r = &ev->ev[i], *g = i + 1 < ev->n ? &ev->ev[i + 1] : NULL;
    return g && r->kind == FSM_KIND_LOCK && g->type == FSM_EV_GRANTED && g->sid == r->sid &&
           fsm_name_cmp(g->name.p, g->name.len, r->name.p, r->name.len) == 0;
}

/* Without a history: a grant's traceparent is known only when its own request took it. */
static void trace_events(const struct fsm_cmd *c, struct fsm_events *ev, size_t from)
{
    for (size_t i = from; i < ev->n; i++) {
        struct fsm_event *e = &ev->ev[i];
        const struct trace_ctx *tp = e->type == FSM_EV_GRANTED ? own_trace(c, e->sid)
                                     : c->traced               ? &c->trace
                                                               : NULL;
        e->traced = tp != NULL;
        if (tp)
            e->trace = *tp;
    }
}

void fsm_history_note(struct fsm *f, const struct fsm_cmd *c, struct fsm_events *ev, size_t from)
{
    struct fsm_hist *h = f->hist;
    trace_events(c, ev, from); /* a grant's is replaced below from its pending wait */
    if (!h || !h->per_lock)
        return;
    for (size_t i = from; i < ev->n; i++) {
        struct fsm_event *e = &ev->ev[i];
        struct hlock *hl;
        struct hwait *w;
        switch (e->type) {
        case FSM_EV_GRANTED:
            on_granted(f, h, c, e, c->now_ms);
            break;
        case FSM_EV_RELEASED: /* an upgrade: the same session's grant follows at once */
            on_released(f, h, c, e, upgraded(ev, i) ? FSM_HIST_END_UPGRADE : c->op, c->now_ms);
            break;
        case FSM_EV_WAIT_STARTED:
            if ((hl = hl_get(h, e->name.p, e->name.len)) && !wait_find(hl, e->sid))
                wait_append(h, hl, e->sid, c->now_ms, own_trace(c, e->sid));
            break;
        case FSM_EV_WAIT_ENDED:
            if ((hl = hl_find(h, e->name.p, e->name.len)) && (w = wait_find(hl, e->sid))) {
                wait_unlink(h, hl, w);
                hl_drop_if_unused(h, hl);
            }
            break;
        default:
            break;
        }
    }
}

/* ---- limits ---- */

static void hl_free_node(struct onode *n)
{
    struct hlock *hl = ONODE_OWNER(n, struct hlock, o);
    while (hl->w_head) {
        struct hwait *w = hl->w_head;
        hl->w_head = w->next;
        free(w);
    }
    free(hl);
}

void fsm_history_free(struct fsm *f)
{
    struct fsm_hist *h = f->hist;
    if (!h)
        return;
    for (struct hent *e = h->g_oldest; e;) {
        struct hent *next = e->gnext;
        ent_free(e);
        e = next;
    }
    fsm_otree_drain(&h->names, hl_free_node);
    free(h);
    f->hist = NULL;
}

/* Evict down to the limits, oldest first: walking the global list from the oldest meets each
 * name's entries oldest first. */
static void trim(struct fsm_hist *h)
{
    for (struct hent *e = h->g_oldest; e;) {
        struct hent *next = e->gnext;
        if (e->hl->n > h->per_lock)
            ent_evict(h, e, NULL);
        e = next;
    }
    while (h->n_entries > h->max_entries)
        ent_evict(h, h->g_oldest, NULL);
}

void fsm_op_history_limits(struct actx *a, const struct fsm_cmd_history_limits *c,
                           struct fsm_reply *r)
{
    if (c->per_lock > FSM_HIST_PER_LOCK_MAX || c->max_entries > FSM_HIST_ENTRIES_MAX) {
        fsm_reply_err(r, PROTO_ERR " history limits out of range (per lock 0..%u, entries 0..%u)",
                      FSM_HIST_PER_LOCK_MAX, FSM_HIST_ENTRIES_MAX);
        return;
    }
    uint64_t per = c->max_entries ? c->per_lock : 0, max = c->per_lock ? c->max_entries : 0;
    uint64_t cur_per, cur_max;
    fsm_history_limits(a->f, &cur_per, &cur_max);
    r->kind = FSM_REPLY_OK;
    if (per == cur_per && max == cur_max)
        return; /* no change: no revision, as DEADLOCK_LIMIT */
    if (!per) {
        fsm_history_free(a->f);
    } else {
        if (!a->f->hist && !(a->f->hist = calloc(1, sizeof(*a->f->hist)))) {
            fsm_reply_err(r, PROTO_ERR " out of memory");
            return;
        }
        a->f->hist->per_lock = per;
        a->f->hist->max_entries = max;
        trim(a->f->hist);
    }
    fsm_next_rev(a);
}

void fsm_history_limits(const struct fsm *f, uint64_t *per_lock, uint64_t *max_entries)
{
    *per_lock = f->hist ? f->hist->per_lock : 0;
    *max_entries = f->hist ? f->hist->max_entries : 0;
}

void fsm_history_stats(const struct fsm *f, struct fsm_hist_stats *s)
{
    memset(s, 0, sizeof(*s));
    if (!f->hist)
        return;
    s->entries = f->hist->n_entries;
    s->names = f->hist->n_names;
    s->waits = f->hist->n_waits;
    s->bytes = f->hist->bytes + sizeof(*f->hist);
    s->compacted = f->hist->compacted;
}

/* ---- queries ---- */

static const char *end_word(uint8_t op)
{
    switch (op) {
    case FSM_OP_UNLOCK:
        return "unlock";
    case FSM_OP_SEM_RELEASE:
        return "release";
    case FSM_OP_ELECT_RESIGN:
        return "resign";
    case FSM_OP_SESSION_CLOSE:
        return "session-close";
    case FSM_OP_SESSION_EXPIRE:
        return "expiry";
    case FSM_OP_SESSION_REVOKE:
        return "session-revoke";
    case FSM_OP_REVOKE_END:
        return "revoke";
    case FSM_HIST_END_UPGRADE:
        return "upgrade"; /* the shared hold became the session's exclusive one */
    default:
        return fsm_op_name(op); /* an op added later ends grants its own way */
    }
}

static void view_of(const struct hent *e, struct fsm_hist_entry *v)
{
    memset(v, 0, sizeof(*v));
    v->kind = e->kind;
    v->sid = e->sid;
    v->token = e->token;
    v->granted_ms = e->granted_ms;
    v->waited_ms = e->waited_ms;
    v->permits = e->permits;
    v->ended_rev = e->ended_rev;
    v->ended_ms = e->ended_ms;
    v->ended_by = e->ended_rev ? end_word(e->end_op) : "";
    v->held_ms = e->ended_rev ? ms_since(e->ended_ms, e->granted_ms) : 0;
    v->session_name = (struct fsm_str){ent_sname(e), e->sname_len};
    v->user = (struct fsm_str){ent_sname(e) + e->sname_len, e->user_len};
    v->value = (struct fsm_str){ent_value(e), e->value_len};
    v->trace = e->tflags & HENT_F_TRACE ? ent_trace(e) : NULL;
    v->end_trace = e->end_trace;
    v->n_waiters = e->n_waiters;
    v->n_shown = e->n_shown;
    v->waiters = e->w;
}

int fsm_lock_history(const struct fsm *f, const char *name, size_t len, uint64_t before,
                     size_t count, void (*cb)(void *arg, const struct fsm_hist_entry *e), void *arg,
                     uint64_t *compacted)
{
    const struct fsm_hist *h = f->hist;
    *compacted = 0;
    if (!h)
        return FSM_HIST_OFF;
    const struct hlock *hl = hl_find(h, name, len);
    uint64_t dropped = hl ? hl->compacted : h->compacted;
    *compacted = dropped;
    const struct hent *e = hl ? hl->newest : NULL;
    while (e && before && e->token >= before)
        e = e->prev;
    /* Nothing kept in the range asked, and some of it was dropped (a name without a record
     * had all of its grants dropped, if it had any: the whole history's compacted says so). */
    if (!e && dropped && before != 1)
        return FSM_HIST_COMPACTED;
    size_t n = 0;
    for (; e && n < count; e = e->prev, n++) {
        struct fsm_hist_entry v;
        view_of(e, &v);
        cb(arg, &v);
    }
    return (int)n;
}

/* ---- snapshot section 4 ---- */

bool fsm_history_present(const struct fsm *f)
{
    return f->hist && f->hist->per_lock;
}

static int put_trace(struct buf *b, const struct trace_ctx *t)
{
    return buf_append(b, t->b, TRACE_BIN_LEN);
}

static int emit_entry(const struct hent *e, struct buf *b)
{
    uint8_t kind = (uint8_t)(e->kind | (e->value_len ? HENT_F_VALUE : 0) | e->tflags);
    int rc = buf_put_u8(b, kind) || buf_put_varint(b, e->token) || buf_put_varint(b, e->sid) ||
             buf_put_varint(b, e->granted_ms) || buf_put_varint(b, e->waited_ms) ||
             buf_put_varint(b, e->permits) || buf_put_varint(b, e->ended_rev);
    if (e->ended_rev)
        rc = rc || buf_put_u8(b, e->end_op) || buf_put_varint(b, e->ended_ms);
    rc = rc || buf_put_bytes(b, ent_sname(e), e->sname_len) ||
         buf_put_bytes(b, ent_sname(e) + e->sname_len, e->user_len) ||
         (e->value_len && buf_put_bytes(b, ent_value(e), e->value_len)) ||
         ((e->tflags & HENT_F_TRACE) && put_trace(b, ent_trace(e))) ||
         (e->end_trace && put_trace(b, e->end_trace)) || buf_put_varint(b, e->n_waiters);
    for (uint8_t i = 0; i < e->n_shown && !rc; i++)
        rc = buf_put_varint(b, e->w[i].sid) || buf_put_varint(b, e->w[i].waited_ms);
    return rc;
}

struct emit_arg {
    struct buf *b;
    bool traces; /* the second format */
};

static int emit_name(void *arg, const struct onode *n)
{
    struct emit_arg *ea = arg;
    struct buf *b = ea->b;
    const struct hlock *hl = ONODE_OWNER(n, struct hlock, o);
    int rc = buf_put_bytes(b, hl->name, hl->name_len) || buf_put_varint(b, hl->compacted) ||
             buf_put_varint(b, hl->n_w);
    for (const struct hwait *w = hl->w_head; w && !rc; w = w->next) {
        rc = buf_put_varint(b, w->sid) || buf_put_varint(b, w->since_ms);
        if (ea->traces)
            rc = rc || buf_put_u8(b, w->traced) || (w->traced && put_trace(b, &w->trace));
    }
    rc = rc || buf_put_varint(b, hl->n);
    for (const struct hent *e = hl->oldest; e && !rc; e = e->next)
        rc = emit_entry(e, b);
    return rc ? -1 : 0;
}

static int wait_traced(void *arg, const struct onode *n)
{
    (void)arg;
    for (const struct hwait *w = ONODE_OWNER(n, struct hlock, o)->w_head; w; w = w->next)
        if (w->traced)
            return 1; /* stops the walk */
    return 0;
}

/* Whether any entry or pending wait holds a traceparent: the second format then. */
static bool any_trace(const struct fsm_hist *h)
{
    for (const struct hent *e = h->g_oldest; e; e = e->gnext)
        if (e->tflags)
            return true;
    return fsm_otree_walk(h->names, NULL, 0, wait_traced, NULL) != 0;
}

int fsm_history_emit(const struct fsm *f, struct buf *b)
{
    const struct fsm_hist *h = f->hist;
    struct emit_arg ea = {b, any_trace(h)};
    if ((ea.traces && (buf_put_varint(b, 0) || buf_put_u8(b, HIST_FORMAT_TRACES))) ||
        buf_put_varint(b, h->per_lock) || buf_put_varint(b, h->max_entries) ||
        buf_put_varint(b, h->compacted) || buf_put_varint(b, h->n_names))
        return -1;
    return fsm_otree_walk(h->names, NULL, 0, emit_name, &ea) ? -1 : 0;
}

struct hrst {
    struct fsm *f;
    struct fsm_hist *h;
    struct rd *r;
    bool traces;       /* the second format */
    struct hent **all; /* every entry read, to link globally in token order */
    size_t n_all, cap_all;
};

/* 26 bytes of a traceparent; -1 if short or not a valid one. */
static int read_trace(struct rd *r, struct trace_ctx *t)
{
    if (r->err || r->len - r->off < TRACE_BIN_LEN)
        return -1;
    memcpy(t->b, r->p + r->off, TRACE_BIN_LEN);
    r->off += TRACE_BIN_LEN;
    return trace_bin_valid(t->b) ? 0 : -1;
}

static const char *read_entry(struct hrst *s, struct hlock *hl, uint64_t prev_token)
{
    struct rd *r = s->r;
    uint8_t kind, end_op = 0;
    uint64_t token, sid, granted, waited, permits, ended_rev, ended_ms = 0, n_waiters;
    const char *sname, *user, *value = "";
    uint32_t sname_len, user_len, value_len = 0;
    if (rd_u8(r, &kind) || fsm_rd_varint(r, &token) || fsm_rd_varint(r, &sid) ||
        fsm_rd_varint(r, &granted) || fsm_rd_varint(r, &waited) || fsm_rd_varint(r, &permits) ||
        fsm_rd_varint(r, &ended_rev))
        return "truncated or malformed entry";
    bool has_value = kind & HENT_F_VALUE;
    uint8_t tflags = kind & (HENT_F_TRACE | HENT_F_END_TRACE);
    uint8_t allowed = HENT_F_VALUE | HENT_KIND_MASK | (s->traces ? tflags : 0);
    if ((kind & ~allowed) || (kind & HENT_KIND_MASK) >= FSM_KIND__COUNT)
        return "bad object kind";
    kind &= HENT_KIND_MASK;
    if ((tflags & HENT_F_END_TRACE) && !ended_rev)
        return "an end traceparent on a grant that did not end";
    if (has_value && kind != FSM_KIND_LOCK)
        return "a value on a grant that is not a lock's";
    if (token <= prev_token || token <= hl->compacted || token > s->f->revision)
        return "entry tokens out of order or range";
    if (permits == 0 || permits > FSM_MAX_SEM_LIMIT || (kind != FSM_KIND_SEM && permits != 1))
        return "bad permits";
    if (ended_rev && (ended_rev < token || ended_rev > s->f->revision))
        return "bad end revision";
    if (ended_rev &&
        (rd_u8(r, &end_op) || (!fsm_op_desc(end_op) && end_op != FSM_HIST_END_UPGRADE) ||
         fsm_rd_varint(r, &ended_ms)))
        return "bad end";
    if (fsm_rd_str(r, &sname, &sname_len, FSM_MAX_NAME) ||
        fsm_rd_str(r, &user, &user_len, FSM_MAX_USER) ||
        (has_value && (fsm_rd_str(r, &value, &value_len, FSM_MAX_ELECT_VALUE) || !value_len)))
        return "truncated or malformed entry strings";
    struct trace_ctx trace = {{0}}, end_trace = {{0}};
    if (((tflags & HENT_F_TRACE) && read_trace(r, &trace)) ||
        ((tflags & HENT_F_END_TRACE) && read_trace(r, &end_trace)))
        return "truncated or invalid traceparent";
    if (fsm_rd_varint(r, &n_waiters) || n_waiters > UINT32_MAX)
        return "truncated waiter count";
    uint8_t shown = n_waiters < FSM_HIST_WAITERS ? (uint8_t)n_waiters : FSM_HIST_WAITERS;
    struct hent *e = malloc(ent_size(shown, sname_len, user_len, value_len, tflags & HENT_F_TRACE));
    if (!e)
        return "out of memory";
    memset(e, 0, sizeof(*e));
    for (uint8_t i = 0; i < shown; i++)
        if (fsm_rd_varint(r, &e->w[i].sid) || fsm_rd_varint(r, &e->w[i].waited_ms)) {
            free(e);
            return "truncated waiters";
        }
    e->kind = kind;
    e->token = token;
    e->sid = sid;
    e->granted_ms = granted;
    e->waited_ms = waited;
    e->permits = (uint32_t)permits;
    e->ended_rev = ended_rev;
    e->ended_ms = ended_ms;
    e->end_op = end_op;
    e->n_waiters = (uint32_t)n_waiters;
    e->n_shown = shown;
    e->sname_len = (uint16_t)sname_len;
    e->user_len = (uint8_t)user_len;
    memcpy((char *)ent_sname(e), sname, sname_len);
    memcpy((char *)ent_sname(e) + sname_len, user, user_len);
    e->value_len = value_len;
    if (value_len)
        memcpy((char *)ent_value(e), value, value_len);
    e->tflags = tflags;
    if (tflags & HENT_F_TRACE)
        memcpy((char *)ent_trace(e), &trace, sizeof(trace));
    if ((tflags & HENT_F_END_TRACE) && !(e->end_trace = malloc(sizeof(*e->end_trace)))) {
        free(e);
        return "out of memory";
    }
    if (e->end_trace)
        *e->end_trace = end_trace;
    if (s->n_all == s->cap_all) {
        size_t cap = s->cap_all ? s->cap_all * 2 : 64;
        struct hent **v = realloc(s->all, cap * sizeof(*v));
        if (!v) {
            ent_free(e);
            return "out of memory";
        }
        s->all = v;
        s->cap_all = cap;
    }
    s->all[s->n_all++] = e;
    /* the name's list only: the global one is linked once every entry is read */
    e->hl = hl;
    DLIST_APPEND(hl->oldest, hl->newest, e);
    hl->n++;
    return NULL;
}

static const char *read_name(struct hrst *s, struct hlock **last)
{
    struct rd *r = s->r;
    const char *name;
    uint32_t len;
    uint64_t compacted, n;
    if (fsm_rd_str(r, &name, &len, FSM_MAX_NAME) || len == 0 || fsm_rd_varint(r, &compacted))
        return "truncated or malformed name";
    if (*last && fsm_name_cmp((*last)->name, (*last)->name_len, name, len) >= 0)
        return "names not in strictly increasing order";
    if (compacted > s->h->compacted)
        return "a name's compacted revision above the history's";
    struct hlock *hl = hl_new(name, len);
    if (!hl)
        return "out of memory";
    hl->compacted = compacted;
    fsm_otree_append(&s->h->names, *last ? &(*last)->o : NULL, &hl->o);
    *last = hl;
    s->h->n_names++;
    s->h->bytes += sizeof(*hl) + len;
    if (fsm_rd_varint(r, &n))
        return "truncated wait count";
    for (uint64_t i = 0; i < n; i++) {
        uint64_t sid, since;
        uint8_t traced = 0;
        struct trace_ctx trace;
        if (fsm_rd_varint(r, &sid) || fsm_rd_varint(r, &since) || sid == 0)
            return "truncated or malformed wait";
        if (s->traces && (rd_u8(r, &traced) || traced > 1 || (traced && read_trace(r, &trace))))
            return "truncated or malformed wait traceparent";
        if (wait_find(hl, sid))
            return "a session waits twice";
        uint64_t before = hl->n_w;
        wait_append(s->h, hl, sid, since, traced ? &trace : NULL);
        if (hl->n_w == before)
            return "out of memory";
    }
    if (fsm_rd_varint(r, &n) || n > s->h->per_lock)
        return "bad entry count";
    if (n == 0 && hl->n_w == 0)
        return "a name with neither entries nor waits";
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *why = read_entry(s, hl, prev);
        if (why)
            return why;
        prev = hl->newest->token;
        s->h->bytes += ent_bytes(hl->newest);
    }
    return NULL;
}

static int cmp_token(const void *a, const void *b)
{
    const struct hent *x = *(struct hent *const *)a, *y = *(struct hent *const *)b;
    return x->token < y->token ? -1 : x->token > y->token;
}

static const char *restore_body(struct hrst *s)
{
    struct fsm_hist *h = s->h;
    uint64_t n;
    uint8_t format;
    if (fsm_rd_varint(s->r, &h->per_lock))
        return "truncated header";
    if (h->per_lock == 0) { /* the second format: traceparents */
        if (rd_u8(s->r, &format) || format != HIST_FORMAT_TRACES ||
            fsm_rd_varint(s->r, &h->per_lock))
            return "history limits out of range (or an unknown format)";
        s->traces = true;
    }
    if (fsm_rd_varint(s->r, &h->max_entries) || fsm_rd_varint(s->r, &h->compacted) ||
        fsm_rd_varint(s->r, &n))
        return "truncated header";
    if (h->per_lock == 0 || h->per_lock > FSM_HIST_PER_LOCK_MAX || h->max_entries == 0 ||
        h->max_entries > FSM_HIST_ENTRIES_MAX)
        return "history limits out of range";
    if (h->compacted > s->f->revision)
        return "compacted revision above the state's";
    struct hlock *last = NULL;
    for (uint64_t i = 0; i < n; i++) {
        const char *why = read_name(s, &last);
        if (why)
            return why;
    }
    fsm_otree_balance(&h->names, h->n_names);
    if (s->n_all > h->max_entries)
        return "more entries than the limit";
    if (s->n_all > 1)
        qsort(s->all, s->n_all, sizeof(*s->all), cmp_token);
    for (size_t i = 0; i < s->n_all; i++) {
        struct hent *e = s->all[i];
        if (i && s->all[i - 1]->token == e->token)
            return "a token is stored twice";
        DLIST_APPEND_F(h->g_oldest, h->g_newest, e, gprev, gnext);
        h->n_entries++;
    }
    if (s->traces && !any_trace(h))
        return "the traceparent format without a traceparent";
    return NULL;
}

const char *fsm_history_restore(struct fsm *nf, struct rd *r)
{
    struct hrst s = {.f = nf, .r = r};
    if (!(nf->hist = s.h = calloc(1, sizeof(*s.h))))
        return "out of memory";
    const char *why = restore_body(&s);
    if (why) { /* every entry on the global list, which fsm_history_free walks */
        for (size_t i = 0; i < s.n_all; i++)
            s.all[i]->gnext = i + 1 < s.n_all ? s.all[i + 1] : NULL;
        s.h->g_oldest = s.n_all ? s.all[0] : NULL;
    }
    free(s.all);
    return why; /* on error nf is discarded (fsm_free: fsm_history_free) */
}

/* ---- invariants ---- */

int fsm_history_check(const struct fsm *f, char *err, size_t errlen)
{
    const struct fsm_hist *h = f->hist;
    if (!h)
        return 0;
    uint64_t n = 0, prev = 0;
    for (const struct hent *e = h->g_oldest; e; e = e->gnext, n++) {
        if (e->token <= prev || e->token <= e->hl->compacted || e->token > f->revision) {
            snprintf(err, errlen, "history: token %llu out of order", (unsigned long long)e->token);
            return -1;
        }
        prev = e->token;
    }
    if (n != h->n_entries || n > h->max_entries) {
        snprintf(err, errlen, "history: %llu entries, counted %llu, limit %llu",
                 (unsigned long long)n, (unsigned long long)h->n_entries,
                 (unsigned long long)h->max_entries);
        return -1;
    }
    return 0;
}
