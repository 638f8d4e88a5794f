/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/lockmeta.c — lock metadata: a value on a lock's exclusive grant, a per-grant maximum
 * hold time, and a transitions counter per lock record; the ops LOCK_META and MAXHOLD_END and
 * the snapshot's tagged section 1 ("lockmeta").
 *
 * Owns struct lock's hv, hv_len, maxhold_ms and transitions and struct waiter's hv, hv_len and
 * maxhold_ms (internal.h). The rules:
 *   LOCK_META (name, sid, flags, value, maxhold_ms, wait_ms): LOCK (LOCK_NOTIFY with flags bit
 *     0), by the same rule path (fsm_op_lock): no grant logic of its own. When that LOCK grants
 *     the lock to the session, the grant carries the value and the max hold; when it queues the
 *     session, the waiter keeps them until its grant (grant_head hands them on through
 *     fsm_lockmeta_take). A LOCK_META by the holder, or by a session already queued, changes
 *     nothing (its token, or its place): a retry must not change a grant, and a holder must not
 *     lengthen its own max hold. Exclusive only: there is no shared form (the server refuses
 *     SHARED with VALUE or MAXHOLD). Unknown flag bits, or a max hold over FSM_MAX_MAXHOLD_MS,
 *     answer ERR and change nothing.
 *   MAXHOLD_END (name, token): proposed by the leader when a grant's max hold passed on its
 *     monotonic clock (src/server/lease). If grant `token` still holds the lock and has a max
 *     hold, it is released as an expiry releases it (lock-delay of its session, or the next
 *     waiter granted with a new, larger token; the RELEASED event has expired and maxhold set);
 *     the session lives on. Otherwise (released, handed on: a stale timer) nothing changes.
 *   Transitions: the exclusive grants of this record that have ended (UNLOCK, session end,
 *     REVOKE_END, MAXHOLD_END) since a LOCK_META first reached it (granted or queued: lm_on),
 *     so the first holder sees 0, the next one 1 (as Kubernetes' leaseTransitions). Only such
 *     records count: a lock used with plain LOCK only keeps no metadata, so its state and
 *     snapshots stay byte for byte what the previous release wrote (an older node reads them
 *     during a rolling upgrade). The count lives as long as the record: a lock free with no
 *     waiters and no lock-delay is dropped (lock.c), and its count with it. Keeping records of
 *     free locks for the count would cost sizeof(struct lock) + the name + allocator and index
 *     overhead per name ever locked (docs/design.md gives the numbers), unbounded by the quotas.
 *
 * Value bytes count in fsm.name_bytes (--max-data-bytes), as an election's values do; the
 * server bounds them with --max-lock-value (the decoder with FSM_MAX_ELECT_VALUE).
 *
 * Invariants (fsm_check_invariants): hv and maxhold_ms are set only on a lock of kind LOCK
 * with an exclusive holder, and on exclusive waiters of such locks; (hv != NULL) == (hv_len
 * != 0); any of them, or transitions > 0, only on a record with lm_on. Any release of the grant
 * clears them (fsm_lock_release), so a max-hold deadline can never end a later grant of the same
 * name.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define LOCKMETA_NOTIFY 1u /* flags bit 0 */

struct fsm_str fsm_lock_holder_value(const struct lock *l)
{
    return (struct fsm_str){LX(l)->hv ? LX(l)->hv : "", LX(l)->hv ? LX(l)->hv_len : 0};
}

static bool same_name(const struct lock *l, struct fsm_str name)
{
    return l->name_len == name.len && memcmp(l->name, name.p, name.len) == 0;
}

/* The LOCK_META being applied is s's request on l. */
static bool cmd_of(const struct actx *a, const struct lock *l, const struct sess *s)
{
    return a->lm_cmd && a->lm_cmd->sid == s->sid && same_name(l, a->lm_cmd->name);
}

/* l's lock_x for a LOCK_META reaching it: its own, or the one the op allocated first (so nothing
 * fails once the LOCK rules ran). */
static struct lock_x *take_x(struct actx *a, struct lock *l)
{
    if (!l->x) {
        l->x = a->lm_x;
        a->lm_x = NULL;
    }
    return l->x;
}

void fsm_lockmeta_grant(struct actx *a, struct lock *l, struct sess *s)
{
    if (a->lm_pending) { /* a waiter's, taken by grant_head: its bytes are counted already */
        /* the waiter queued under a LOCK_META, which set lm_on: the record has its lock_x */
        l->x->hv = a->lm_hv;
        l->x->hv_len = a->lm_hv_len;
        l->x->maxhold_ms = a->lm_maxhold_ms;
        a->lm_hv = NULL;
        a->lm_hv_len = 0;
        a->lm_maxhold_ms = 0;
        a->lm_pending = false;
    } else if (cmd_of(a, l, s)) {
        struct lock_x *x = take_x(a, l);
        x->lm_on = 1;
        x->hv = a->lm_cmd_hv;
        x->hv_len = x->hv ? a->lm_cmd->value.len : 0;
        x->maxhold_ms = a->lm_cmd->maxhold_ms;
        a->f->name_bytes += x->hv_len;
        a->lm_cmd_hv = NULL;
    }
}

void fsm_lockmeta_enqueued(struct actx *a, struct lock *l, const struct sess *s, struct waiter *w)
{
    if (w->shared || !cmd_of(a, l, s))
        return;
    take_x(a, l)->lm_on = 1;
    w->hv = a->lm_cmd_hv;
    w->hv_len = w->hv ? a->lm_cmd->value.len : 0;
    w->maxhold_ms = a->lm_cmd->maxhold_ms;
    a->f->name_bytes += w->hv_len;
    a->lm_cmd_hv = NULL;
}

void fsm_lockmeta_take(struct actx *a, struct waiter *w)
{
    if (!w->hv && !w->maxhold_ms)
        return;
    a->lm_pending = true;
    a->lm_hv = w->hv;
    a->lm_hv_len = w->hv_len;
    a->lm_maxhold_ms = w->maxhold_ms;
    w->hv = NULL; /* fsm_waiter_free then leaves the bytes counted: they move to the grant */
    w->hv_len = 0;
    w->maxhold_ms = 0;
}

void fsm_lockmeta_free(struct fsm *f, struct lock *l)
{
    struct lock_x *x = l->x;
    if (!x)
        return;
    f->name_bytes -= x->hv_len;
    free(x->hv);
    x->hv = NULL;
    x->hv_len = 0;
    x->maxhold_ms = 0;
}

void fsm_lockmeta_release(struct fsm *f, struct lock *l)
{
    if (l->kind != FSM_KIND_LOCK)
        return;
    if (LX(l)->lm_on && l->x->transitions < UINT64_MAX)
        l->x->transitions++;
    fsm_lockmeta_free(f, l);
}

void fsm_op_lock_meta(struct actx *a, const struct fsm_cmd_lock_meta *c, struct fsm_reply *r)
{
    if (c->flags & ~(uint64_t)LOCKMETA_NOTIFY) {
        fsm_reply_err(r, PROTO_ERR " unknown lock flags %llu", (unsigned long long)c->flags);
        return;
    }
    if (c->maxhold_ms > FSM_MAX_MAXHOLD_MS) {
        fsm_reply_err(r, PROTO_ERR " max hold %llu ms is over %llu",
                      (unsigned long long)c->maxhold_ms, (unsigned long long)FSM_MAX_MAXHOLD_MS);
        return;
    }
    char *hv = NULL;
    /* copied and allocated first: nothing can fail once the LOCK rules ran */
    struct lock_x *x = calloc(1, sizeof(*x));
    if (!x || (c->value.len && !(hv = malloc(c->value.len)))) {
        free(x);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (c->value.len)
        memcpy(hv, c->value.p, c->value.len);
    a->lm_x = x;
    struct fsm_cmd_lock lc = {.name = c->name, .sid = c->sid, .wait_ms = c->wait_ms};
    a->lm_cmd = c;
    a->lm_cmd_hv = hv;
    if (c->flags & LOCKMETA_NOTIFY)
        fsm_op_lock_notify(a, &lc, r);
    else
        fsm_op_lock(a, &lc, r);
    free(a->lm_cmd_hv); /* not taken: the holder's retry, a queued session's, a refusal */
    a->lm_cmd_hv = NULL;
    free(a->lm_x); /* not taken: the record had one, or the LOCK was refused */
    a->lm_x = NULL;
    a->lm_cmd = NULL;
}

void fsm_op_maxhold_end(struct actx *a, const struct fsm_cmd_maxhold_end *c, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_OK;
    if (!l || l->kind != FSM_KIND_LOCK || !l->holder || l->token != c->token || !LX(l)->maxhold_ms)
        return;
    size_t first = a->ev->n;
    uint64_t ms = LX(l)->maxhold_ms;
    fsm_lock_release(a, l, l->holder->lockdelay_ms, true);
    if (a->ev->n > first && a->ev->ev[first].type == FSM_EV_RELEASED) {
        a->ev->ev[first].maxhold = true; /* why it ended: the event says so */
        a->ev->ev[first].ms = ms;
    }
    if (a->nrev == 0)
        fsm_next_rev(a);
}

/* ---- queries ---- */

struct mh_walk {
    void (*cb)(void *arg, const char *name, size_t namelen, uint64_t token, uint64_t maxhold_ms);
    void *arg;
};

static int mh_visit(void *arg, const struct onode *n)
{
    struct mh_walk *w = arg;
    const struct lock *l = ONODE_OWNER(n, const struct lock, o);
    if (LX(l)->maxhold_ms && l->holder)
        w->cb(w->arg, l->name, l->name_len, l->token, LX(l)->maxhold_ms);
    return 0;
}

void fsm_foreach_maxhold(const struct fsm *f,
                         void (*cb)(void *arg, const char *name, size_t namelen, uint64_t token,
                                    uint64_t maxhold_ms),
                         void *arg)
{
    struct mh_walk w = {cb, arg};
    fsm_otree_walk(f->lock_names, NULL, 0, mh_visit, &w);
}

/*
 * ---- the snapshot's section 1 ("lockmeta") ----
 *
 * Payload: varint n (>= 1), then n lock entries in strictly increasing name order, one for
 * every lock with lm_on (and only those: an entry is what sets it):
 *   str name (1..FSM_MAX_NAME: a lock of kind LOCK in the base records)
 *   varint transitions
 *   varint maxhold_ms  (0, or 1..FSM_MAX_MAXHOLD_MS: only with an exclusive holder)
 *   str value          (0..FSM_MAX_ELECT_VALUE bytes: non-empty only with an exclusive holder)
 *   varint m, then m waiters in their queue order (each an exclusive waiter of the lock):
 *     varint sid, varint maxhold_ms (as above), str value (as above); not both empty
 * A waiter entry with nothing is not written, and not accepted; the section is written only
 * while some lock has lm_on.
 */

static bool waiter_has(const struct waiter *w)
{
    return w->hv || w->maxhold_ms;
}

static bool lock_has(const struct lock *l)
{
    return LX(l)->lm_on != 0;
}

static int present_visit(void *arg, const struct onode *n)
{
    (void)arg;
    return lock_has(ONODE_OWNER(n, const struct lock, o));
}

bool fsm_lockmeta_present(const struct fsm *f)
{
    return fsm_otree_walk(f->lock_names, NULL, 0, present_visit, NULL) != 0;
}

struct emit_arg {
    struct buf *b;
    uint64_t n;
};

static int count_visit(void *arg, const struct onode *n)
{
    struct emit_arg *e = arg;
    e->n += lock_has(ONODE_OWNER(n, const struct lock, o));
    return 0;
}

static int emit_visit(void *arg, const struct onode *n)
{
    struct emit_arg *e = arg;
    const struct lock *l = ONODE_OWNER(n, const struct lock, o);
    if (!lock_has(l))
        return 0;
    uint64_t m = 0;
    for (const struct waiter *w = l->wq_head; w; w = w->lnext)
        m += waiter_has(w);
    int rc = buf_put_bytes(e->b, l->name, l->name_len) ||
             buf_put_varint(e->b, LX(l)->transitions) || buf_put_varint(e->b, LX(l)->maxhold_ms) ||
             buf_put_bytes(e->b, LX(l)->hv ? LX(l)->hv : "", LX(l)->hv_len) ||
             buf_put_varint(e->b, m);
    for (const struct waiter *w = l->wq_head; w && !rc; w = w->lnext)
        if (waiter_has(w))
            rc = buf_put_varint(e->b, w->sess->sid) || buf_put_varint(e->b, w->maxhold_ms) ||
                 buf_put_bytes(e->b, w->hv ? w->hv : "", w->hv_len);
    return rc ? -1 : 0;
}

int fsm_lockmeta_emit(const struct fsm *f, struct buf *b)
{
    struct emit_arg e = {b, 0};
    fsm_otree_walk(f->lock_names, NULL, 0, count_visit, &e);
    if (buf_put_varint(b, e.n))
        return -1;
    return fsm_otree_walk(f->lock_names, NULL, 0, emit_visit, &e) ? -1 : 0;
}

/* A value and a max hold as written; *hv allocated (NULL if empty). */
static const char *read_meta(struct rd *r, uint64_t *ms, char **hv, uint32_t *len)
{
    const char *p;
    if (fsm_rd_varint(r, ms) || fsm_rd_str(r, &p, len, FSM_MAX_ELECT_VALUE))
        return "truncated or malformed lock metadata";
    if (*ms > FSM_MAX_MAXHOLD_MS)
        return "max hold out of range";
    if (*len && !(*hv = malloc(*len)))
        return "out of memory";
    if (*len)
        memcpy(*hv, p, *len);
    return NULL;
}

static const char *read_waiters(struct fsm *nf, struct rd *r, struct lock *l)
{
    uint64_t m, sid, ms;
    const char *why;
    if (fsm_rd_varint(r, &m))
        return "truncated waiter count";
    struct waiter *from = l->wq_head;
    for (uint64_t i = 0; i < m; i++) {
        if (fsm_rd_varint(r, &sid))
            return "truncated waiter sid";
        struct waiter *w = from;
        while (w && w->sess->sid != sid)
            w = w->lnext;
        if (!w) /* absent, or not after the previous one: the queue order is the canonical one */
            return "waiter metadata of no waiter, or out of queue order";
        if (w->shared)
            return "waiter metadata on a shared request";
        char *hv = NULL;
        uint32_t len = 0;
        if ((why = read_meta(r, &ms, &hv, &len)))
            return why;
        w->hv = hv;
        w->hv_len = len;
        w->maxhold_ms = ms;
        nf->name_bytes += len;
        if (!waiter_has(w))
            return "empty waiter metadata";
        from = w->lnext;
    }
    return NULL;
}

const char *fsm_lockmeta_restore(struct fsm *nf, struct rd *r)
{
    uint64_t n;
    const struct lock *prev = NULL;
    if (fsm_rd_varint(r, &n))
        return "truncated lock count";
    for (uint64_t i = 0; i < n; i++) {
        const char *p, *why;
        uint32_t len;
        if (fsm_rd_str(r, &p, &len, FSM_MAX_NAME) || len == 0)
            return "truncated, empty or oversized lock name";
        struct lock *l = fsm_lock_find(nf, p, len);
        if (!l || l->kind != FSM_KIND_LOCK)
            return "metadata of no lock";
        if (prev && fsm_name_cmp(prev->name, prev->name_len, l->name, l->name_len) >= 0)
            return "locks not in strictly increasing name order";
        struct lock_x *x = fsm_lock_x(l);
        if (!x)
            return "out of memory";
        x->lm_on = 1;
        if (fsm_rd_varint(r, &x->transitions))
            return "truncated transitions";
        if ((why = read_meta(r, &x->maxhold_ms, &x->hv, &x->hv_len)))
            return why;
        nf->name_bytes += x->hv_len;
        if ((x->hv || x->maxhold_ms) && !l->holder)
            return "grant metadata without an exclusive holder";
        if ((why = read_waiters(nf, r, l)))
            return why;
        prev = l;
    }
    return n ? NULL : "no locks";
}
