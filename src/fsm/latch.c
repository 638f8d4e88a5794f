/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/latch.c — countdown latches and double barriers whose participants are sessions.
 *
 * Owns struct latch (a latch or a barrier, by name in fsm.latches: a namespace of its own,
 * apart from locks, semaphores and elections) and struct lpart (one session's participation,
 * on the latch's list in sid order and on the session's lp_head list). Waiting is not here:
 * the FSM knows no waiter (LATCH.WAIT and a barrier's WAIT are parked by the server, which
 * the events below wake); so the wait-for graph (waitgraph.c) does not see them either.
 *
 * Latch rules (LATCH_CREATE, LATCH_JOIN, LATCH_COUNTDOWN, LATCH_DELETE):
 *   - CREATE name count (1..FSM_MAX_LATCH_COUNT): absent -> a latch with `remaining` = count.
 *     Present with the same count: OK, nothing changes (idempotent, whatever its state but
 *     BROKEN); another count: ERR; a barrier of that name: WRONGTYPE; a broken latch: BROKEN.
 *   - JOIN name sid: the session promises one count-down. At most `remaining` promises are
 *     open at any time (pending = joined and not yet counted down <= remaining), so the joiners
 *     alone can always bring it to zero. Joining twice: OK, nothing changes. A latch at zero,
 *     or broken: ERR / BROKEN.
 *   - COUNTDOWN name sid -> INT remaining. A joined session counts down once (again: no change,
 *     the same answer). A session that did not join counts down anonymously, as Redisson lets
 *     anybody, but only with a count nobody promised (remaining > pending); else ERR. At zero:
 *     INT 0, no change. The count-down that reaches zero emits LATCH_ZERO.
 *   - A joined session that ends (close, expiry, revoke) before it counted down breaks the
 *     latch (state BROKEN, broken_sid, LATCH_BROKEN): every later JOIN, COUNTDOWN and CREATE
 *     answers BROKEN until LATCH_DELETE. A session that counted down may end freely.
 *   - The record stays until LATCH_DELETE (also at zero: a WAIT that comes late must still see
 *     zero, and the FSM does not know who waits); DELETE emits LATCH_DELETED.
 * Barrier rules (BARRIER with leave 0 = enter, 1 = leave; Curator's double barrier):
 *   - enter name sid count: absent -> a barrier of `count`, the session inside. A barrier
 *     that is filling takes the session (already inside: no change); when `count` sessions are
 *     inside it is full (BARRIER_FULL) and the answer is OK; before, INT the sessions still to
 *     come. The same count only (else ERR); full and not inside: ERR; broken: BROKEN.
 *   - leave name sid: while filling, the session withdraws (OK, it waits for nothing; the last
 *     to withdraw deletes it: LATCH_DELETED). While full, it leaves: INT the sessions still
 *     inside, or OK and the barrier is gone (BARRIER_DONE) when it was the last. Leaving an
 *     absent barrier: OK (a retry after everybody left). A session not inside (it left
 *     already, or never entered) changes nothing and is answered as if it had just left: OK
 *     while filling, INT the sessions still inside while full; so a leave retried after a
 *     leader change waits with the others instead of failing.
 *   - a session that ends while inside (filling or full) breaks it (BARRIER_BROKEN).
 * Revisions: every change takes one; an answer that changes nothing takes none.
 * Quotas: a record counts as a lock and a participation as a waiter would (fsm_stats).
 *
 * Snapshot section 3 (snap_sect.h), written only while a latch or barrier exists:
 *   varint n (>= 1), then per record in name byte order:
 *     str name (1..FSM_MAX_NAME), u8 kind (0 latch, 1 barrier), u8 state (enum
 *     fsm_latch_state; a barrier is never ZERO... its full phase is state 1 as well),
 *     varint count (1..FSM_MAX_LATCH_COUNT), varint remaining (a latch: 0..count, 0 iff ZERO;
 *     a barrier: unused, 0), varint broken_sid (non-zero iff BROKEN), varint n_parts, per part
 *     in strictly increasing sid order: varint sid (a live session), u8 done (0 or 1; a
 *     barrier's 0)
 *   A latch's open promises (parts not done) are at most remaining; a barrier's parts number
 *   1..count (count exactly when full, fewer when filling).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

struct lpart {
    struct latch *l;
    struct sess *s;
    struct lpart *lprev, *lnext; /* in l's list, sid order */
    struct lpart *snext;         /* in s->lp_head (order carries no meaning) */
    uint8_t done;                /* a latch's: it counted down */
};

struct latch {
    struct onode o; /* in fsm.latches */
    uint8_t barrier;
    uint8_t state; /* enum fsm_latch_state */
    uint64_t count, remaining, broken_sid;
    uint64_t n_parts, n_open; /* participants; a latch's not done yet */
    struct lpart *p_head, *p_tail;
    uint16_t name_len;
    char name[];
};

const char *fsm_latch_kind_name(bool barrier)
{
    return barrier ? "barrier" : "latch";
}

static struct latch *latch_find(const struct fsm *f, const char *name, size_t len)
{
    struct onode *n = fsm_otree_find(f->latches, name, len);
    return n ? ONODE_OWNER(n, struct latch, o) : NULL;
}

static struct latch *latch_new(struct fsm *f, const char *name, size_t len, bool barrier,
                               uint64_t count)
{
    struct latch *l = calloc(1, sizeof(*l) + len);
    if (!l)
        return NULL;
    memcpy(l->name, name, len);
    l->name_len = (uint16_t)len;
    onode_set_key(&l->o, l->name, l->name_len);
    l->barrier = barrier;
    l->count = count;
    l->remaining = barrier ? 0 : count;
    f->n_latches++;
    f->latch_bytes += len;
    return l;
}

static void part_unlink(struct fsm *f, struct lpart *p)
{
    struct latch *l = p->l;
    struct lpart **pp = &p->s->lp_head;
    while (*pp != p)
        pp = &(*pp)->snext;
    *pp = p->snext;
    if (p->lprev)
        p->lprev->lnext = p->lnext;
    else
        l->p_head = p->lnext;
    if (p->lnext)
        p->lnext->lprev = p->lprev;
    else
        l->p_tail = p->lprev;
    l->n_parts--;
    l->n_open -= !l->barrier && !p->done;
    f->n_lparts--;
    free(p);
}

/* A participation of s, linked in sid order (appended when it is the highest: the common
 * case, sids grow); NULL if memory ran out. */
static struct lpart *part_add(struct fsm *f, struct latch *l, struct sess *s)
{
    struct lpart *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->l = l;
    p->s = s;
    struct lpart *at = l->p_tail;
    while (at && at->s->sid > s->sid)
        at = at->lprev;
    p->lprev = at;
    p->lnext = at ? at->lnext : l->p_head;
    if (p->lnext)
        p->lnext->lprev = p;
    else
        l->p_tail = p;
    if (at)
        at->lnext = p;
    else
        l->p_head = p;
    p->snext = s->lp_head;
    s->lp_head = p;
    l->n_parts++;
    l->n_open += !l->barrier;
    f->n_lparts++;
    return p;
}

static struct lpart *part_find(const struct latch *l, const struct sess *s)
{
    for (struct lpart *p = s->lp_head; p; p = p->snext)
        if (p->l == l)
            return p;
    return NULL;
}

static void latch_free(struct fsm *f, struct latch *l)
{
    while (l->p_head)
        part_unlink(f, l->p_head);
    f->n_latches--;
    f->latch_bytes -= l->name_len;
    free(l);
}

static void latch_drop(struct actx *a, struct latch *l)
{
    fsm_emit(a, FSM_EV_LATCH_DELETED, 0, 0, l->barrier, l->name, l->name_len);
    fsm_otree_remove(&a->f->latches, &l->o);
    latch_free(a->f, l);
}

static void free_node(struct onode *n)
{
    struct latch *l = ONODE_OWNER(n, struct latch, o);
    while (l->p_head) { /* teardown: sessions may be freed already; no session list walk */
        struct lpart *p = l->p_head;
        l->p_head = p->lnext;
        free(p);
    }
    free(l);
}

void fsm_latch_free_all(struct fsm *f)
{
    fsm_otree_drain(&f->latches, free_node);
    f->n_latches = f->n_lparts = f->latch_bytes = 0;
}

/* BROKEN latch NAME: session SID ended before counting down (the reply and the waiters'). */
static void reply_broken(struct fsm_reply *r, const struct latch *l)
{
    char shown[FSM_NAME_SHOWN];
    fsm_printable(l->name, l->name_len, shown, sizeof(shown));
    fsm_reply_err(r, PROTO_BROKEN " %s %s: session %llu ended before %s",
                  fsm_latch_kind_name(l->barrier), shown, (unsigned long long)l->broken_sid,
                  l->barrier ? "leaving" : "counting down");
}

/* The latch or barrier `name`, as `barrier` asks: NULL with r answered if it is absent (when
 * `must`), of the other kind, or broken. */
static struct latch *latch_get(struct actx *a, struct fsm_str name, bool barrier, bool must,
                               struct fsm_reply *r)
{
    char shown[FSM_NAME_SHOWN];
    struct latch *l = latch_find(a->f, name.p, name.len);
    if (!l) {
        if (must)
            fsm_reply_err(r, PROTO_ERR " no %s %s", fsm_latch_kind_name(barrier),
                          fsm_printable(name.p, name.len, shown, sizeof(shown)));
        return NULL;
    }
    if (l->barrier != barrier) {
        fsm_reply_err(r, PROTO_WRONGTYPE " %s is a %s, not a %s",
                      fsm_printable(name.p, name.len, shown, sizeof(shown)),
                      fsm_latch_kind_name(l->barrier), fsm_latch_kind_name(barrier));
        return NULL;
    }
    if (l->state == FSM_LATCH_BROKEN) {
        reply_broken(r, l);
        return NULL;
    }
    return l;
}

static bool count_bad(uint64_t count, struct fsm_reply *r)
{
    if (count >= 1 && count <= FSM_MAX_LATCH_COUNT)
        return false;
    fsm_reply_err(r, PROTO_ERR " count must be 1..%u", FSM_MAX_LATCH_COUNT);
    return true;
}

static bool other_count(const struct latch *l, uint64_t count, struct fsm_reply *r)
{
    if (l->count == count)
        return false;
    char shown[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_ERR " %s %s exists with count %llu", fsm_latch_kind_name(l->barrier),
                  fsm_printable(l->name, l->name_len, shown, sizeof(shown)),
                  (unsigned long long)l->count);
    return true;
}

void fsm_op_latch_create(struct actx *a, const struct fsm_cmd_latch_create *p, struct fsm_reply *r)
{
    if (count_bad(p->count, r))
        return;
    struct latch *l = latch_find(a->f, p->name.p, p->name.len);
    if (l) {
        if (latch_get(a, p->name, false, true, r) && !other_count(l, p->count, r))
            r->kind = FSM_REPLY_OK;
        return;
    }
    if (!(l = latch_new(a->f, p->name.p, p->name.len, false, p->count))) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_otree_insert(&a->f->latches, &l->o);
    fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

void fsm_op_latch_join(struct actx *a, const struct fsm_cmd_latch_ref *p, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, p->sid);
    struct latch *l;
    char shown[FSM_NAME_SHOWN];
    if (!s) {
        fsm_nosession(r, p->sid);
        return;
    }
    if (!(l = latch_get(a, p->name, false, true, r)))
        return;
    if (part_find(l, s)) {
        r->kind = FSM_REPLY_OK;
        return;
    }
    if (l->n_open >= l->remaining) {
        fsm_reply_err(r, PROTO_ERR " latch %s has no count left to promise (%llu left, all joined)",
                      fsm_printable(l->name, l->name_len, shown, sizeof(shown)),
                      (unsigned long long)l->remaining);
        return;
    }
    if (!part_add(a->f, l, s)) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

void fsm_op_latch_countdown(struct actx *a, const struct fsm_cmd_latch_ref *p, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, p->sid);
    struct latch *l;
    char shown[FSM_NAME_SHOWN];
    if (!s) {
        fsm_nosession(r, p->sid);
        return;
    }
    if (!(l = latch_get(a, p->name, false, true, r)))
        return;
    struct lpart *pt = part_find(l, s);
    if (l->remaining == 0 || (pt && pt->done)) {
        fsm_reply_int(r, l->remaining);
        return;
    }
    if (!pt && l->remaining <= l->n_open) {
        fsm_reply_err(r,
                      PROTO_ERR " latch %s: every count left is promised to a joined session; "
                                "session %llu did not join",
                      fsm_printable(l->name, l->name_len, shown, sizeof(shown)),
                      (unsigned long long)s->sid);
        return;
    }
    if (pt) {
        pt->done = 1;
        l->n_open--;
    }
    l->remaining--;
    fsm_next_rev(a);
    if (l->remaining == 0) {
        l->state = FSM_LATCH_ZERO;
        fsm_emit(a, FSM_EV_LATCH_ZERO, s->sid, 0, l->count, l->name, l->name_len);
    }
    fsm_reply_int(r, l->remaining);
}

void fsm_op_latch_delete(struct actx *a, const struct fsm_cmd_latch_delete *p, struct fsm_reply *r)
{
    struct latch *l = latch_find(a->f, p->name.p, p->name.len);
    if (l) {
        latch_drop(a, l);
        fsm_next_rev(a);
    }
    fsm_reply_int(r, l ? 1 : 0);
}

static void barrier_enter(struct actx *a, const struct fsm_cmd_barrier *p, struct sess *s,
                          struct fsm_reply *r)
{
    char shown[FSM_NAME_SHOWN];
    struct latch *l = latch_find(a->f, p->name.p, p->name.len);
    bool fresh = !l;
    if (count_bad(p->count, r))
        return;
    if (l && (!latch_get(a, p->name, true, true, r) || other_count(l, p->count, r)))
        return;
    struct lpart *pt = l ? part_find(l, s) : NULL;
    if (l && l->state == FSM_LATCH_ZERO) {
        if (pt)
            r->kind = FSM_REPLY_OK;
        else
            fsm_reply_err(r, PROTO_ERR " barrier %s is full: it is in its leave phase",
                          fsm_printable(l->name, l->name_len, shown, sizeof(shown)));
        return;
    }
    if (pt) {
        fsm_reply_int(r, l->count - l->n_parts);
        return;
    }
    if (fresh && !(l = latch_new(a->f, p->name.p, p->name.len, true, p->count))) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (!part_add(a->f, l, s)) {
        if (fresh)
            latch_free(a->f, l);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (fresh)
        fsm_otree_insert(&a->f->latches, &l->o);
    fsm_next_rev(a);
    if (l->n_parts < l->count) {
        fsm_reply_int(r, l->count - l->n_parts);
        return;
    }
    l->state = FSM_LATCH_ZERO;
    fsm_emit(a, FSM_EV_BARRIER_FULL, s->sid, 0, l->count, l->name, l->name_len);
    r->kind = FSM_REPLY_OK;
}

static void barrier_leave(struct actx *a, const struct fsm_cmd_barrier *p, struct sess *s,
                          struct fsm_reply *r)
{
    struct latch *l = latch_find(a->f, p->name.p, p->name.len);
    if (!l) {
        r->kind = FSM_REPLY_OK;
        return;
    }
    if (!latch_get(a, p->name, true, true, r))
        return;
    struct lpart *pt = part_find(l, s);
    if (!pt) { /* left already (a retry), or never entered: as a leave that changed nothing */
        if (l->state == FSM_LATCH_ZERO)
            fsm_reply_int(r, l->n_parts);
        else
            r->kind = FSM_REPLY_OK;
        return;
    }
    part_unlink(a->f, pt);
    fsm_next_rev(a);
    if (l->n_parts) {
        if (l->state == FSM_LATCH_ZERO)
            fsm_reply_int(r, l->n_parts);
        else
            r->kind = FSM_REPLY_OK; /* withdrew before it filled: nothing to wait for */
        return;
    }
    if (l->state == FSM_LATCH_ZERO)
        fsm_emit(a, FSM_EV_BARRIER_DONE, s->sid, 0, 0, l->name, l->name_len);
    latch_drop(a, l);
    r->kind = FSM_REPLY_OK;
}

void fsm_op_barrier(struct actx *a, const struct fsm_cmd_barrier *p, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, p->sid);
    if (p->leave > 1 || (p->leave && p->count)) {
        fsm_reply_err(r, PROTO_ERR " bad barrier step");
        return;
    }
    if (!s) {
        fsm_nosession(r, p->sid);
        return;
    }
    if (p->leave)
        barrier_leave(a, p, s, r);
    else
        barrier_enter(a, p, s, r);
}

/* The session ends: each participation goes; an open promise or a place inside breaks. The
 * events go out in name order (the session's list has no replicated order). */
void fsm_latch_sess_end(struct actx *a, struct sess *s)
{
    size_t first = a->ev->n;
    while (s->lp_head) {
        struct lpart *p = s->lp_head;
        struct latch *l = p->l;
        bool breaks = l->state != FSM_LATCH_BROKEN && (l->barrier || !p->done);
        part_unlink(a->f, p);
        if (!breaks)
            continue;
        l->state = FSM_LATCH_BROKEN;
        l->broken_sid = s->sid;
        fsm_emit(a, l->barrier ? FSM_EV_BARRIER_BROKEN : FSM_EV_LATCH_BROKEN, s->sid, 0, 0, l->name,
                 l->name_len);
    }
    fsm_sort_events_by_name(a, first);
}

/* ---- queries ---- */

int fsm_latch_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_latch_view *v)
{
    const struct latch *l = latch_find(f, name, namelen);
    if (!l)
        return 0;
    v->barrier = l->barrier;
    v->state = l->state;
    v->count = l->count;
    v->remaining = !l->barrier                  ? l->remaining
                   : l->state == FSM_LATCH_ZERO ? l->n_parts
                                                : l->count - l->n_parts;
    v->n_parts = l->n_parts;
    v->broken_sid = l->broken_sid;
    return 1;
}

void fsm_latch_parts(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, bool done), void *arg)
{
    const struct latch *l = latch_find(f, name, namelen);
    for (const struct lpart *p = l ? l->p_head : NULL; p; p = p->lnext)
        cb(arg, p->s->sid, p->done);
}

/* ---- invariants ---- */

struct check_arg {
    const struct fsm *f;
    const char *why;
    uint64_t n, parts, bytes;
};

static int check_one(void *arg, const struct onode *n)
{
    struct check_arg *c = arg;
    const struct latch *l = ONODE_OWNER(n, struct latch, o);
    uint64_t parts = 0, open = 0, prev = 0;
    for (const struct lpart *p = l->p_head; p; p = p->lnext) {
        if (p->l != l || p->s->sid <= prev || fsm_sess_find(c->f, p->s->sid) != p->s ||
            part_find(l, p->s) != p || (p->lnext && p->lnext->lprev != p))
            return (c->why = "a participation badly linked", 1);
        if (l->barrier && p->done)
            return (c->why = "a barrier participation marked done", 1);
        prev = p->s->sid;
        parts++;
        open += !p->done;
    }
    c->n++;
    c->parts += parts;
    c->bytes += l->name_len;
    if (parts != l->n_parts || (!l->barrier && open != l->n_open))
        return (c->why = "participation counts wrong", 1);
    if (l->count < 1 || l->count > FSM_MAX_LATCH_COUNT || l->state > FSM_LATCH_BROKEN ||
        (l->state == FSM_LATCH_BROKEN) != (l->broken_sid != 0))
        return (c->why = "count or state out of range", 1);
    if (!l->barrier &&
        (l->remaining > l->count || (l->remaining == 0) != (l->state == FSM_LATCH_ZERO) ||
         (l->state != FSM_LATCH_BROKEN && l->n_open > l->remaining)))
        return (c->why = "a latch's remaining count disagrees with its state or promises", 1);
    if (l->barrier && (l->remaining || parts > l->count ||
                       (l->state == FSM_LATCH_COUNTING && (parts == 0 || parts >= l->count)) ||
                       (l->state == FSM_LATCH_ZERO && parts == 0)))
        return (c->why = "a barrier's members disagree with its state", 1);
    return 0;
}

int fsm_latch_check(const struct fsm *f, char *err, size_t errlen)
{
    struct check_arg c = {f, NULL, 0, 0, 0};
    size_t nodes = 0;
    if (fsm_otree_check(f->latches, &nodes))
        c.why = "latch tree out of order or unbalanced";
    else if (!fsm_otree_walk(f->latches, NULL, 0, check_one, &c) &&
             (c.n != f->n_latches || nodes != c.n || c.parts != f->n_lparts ||
              c.bytes != f->latch_bytes))
        c.why = "latch totals wrong";
    uint64_t sparts = 0;
    for (const struct sess *s = f->sess_head; s && !c.why; s = s->snext)
        for (const struct lpart *p = s->lp_head; p; p = p->snext)
            sparts++;
    if (!c.why && sparts != f->n_lparts)
        c.why = "a session's participations are not its latches'";
    if (c.why && errlen)
        snprintf(err, errlen, "latches: %s", c.why);
    return c.why ? -1 : 0;
}

/* ---- snapshot section 3 (format: the header comment) ---- */

bool fsm_latch_snap_present(const struct fsm *f)
{
    return f->latches != NULL;
}

struct emit_arg {
    struct buf *b;
    int rc;
};

static int emit_one(void *arg, const struct onode *n)
{
    struct emit_arg *e = arg;
    const struct latch *l = ONODE_OWNER(n, struct latch, o);
    struct buf *b = e->b;
    e->rc = buf_put_bytes(b, l->name, l->name_len) || buf_put_u8(b, l->barrier) ||
            buf_put_u8(b, l->state) || buf_put_varint(b, l->count) ||
            buf_put_varint(b, l->remaining) || buf_put_varint(b, l->broken_sid) ||
            buf_put_varint(b, l->n_parts);
    for (const struct lpart *p = l->p_head; p && !e->rc; p = p->lnext)
        e->rc = buf_put_varint(b, p->s->sid) || buf_put_u8(b, p->done);
    return e->rc;
}

int fsm_latch_snap_emit(const struct fsm *f, struct buf *b)
{
    struct emit_arg e = {b, buf_put_varint(b, f->n_latches)};
    if (!e.rc)
        fsm_otree_walk(f->latches, NULL, 0, emit_one, &e);
    return e.rc ? -1 : 0;
}

static const char *read_parts(struct fsm *nf, struct rd *r, struct latch *l)
{
    uint64_t n, prev = 0;
    if (fsm_rd_varint(r, &n))
        return "truncated latch participants";
    if (n > l->count)
        return "more latch participants than its count";
    for (uint64_t i = 0; i < n; i++) {
        uint64_t sid;
        uint8_t done;
        if (fsm_rd_varint(r, &sid) || rd_u8(r, &done))
            return "truncated latch participant";
        if (sid <= prev)
            return "latch participants not in increasing sid order";
        if (done > 1 || (done && l->barrier))
            return "bad latch participant flag";
        struct sess *s = fsm_sess_find(nf, sid);
        if (!s)
            return "a latch participant's session does not exist";
        struct lpart *p = part_add(nf, l, s);
        if (!p)
            return "out of memory";
        if (done) {
            p->done = 1;
            l->n_open--;
        }
        prev = sid;
    }
    return NULL;
}

const char *fsm_latch_snap_restore(struct fsm *nf, struct rd *r)
{
    uint64_t n;
    struct latch *last = NULL;
    if (fsm_rd_varint(r, &n))
        return "truncated latch count";
    if (n == 0 || n > r->len - r->off)
        return "bad latch count";
    for (uint64_t i = 0; i < n; i++) {
        const char *name;
        uint32_t len;
        uint8_t barrier, state;
        uint64_t count, remaining, broken;
        if (fsm_rd_str(r, &name, &len, FSM_MAX_NAME) || len == 0)
            return "bad latch name";
        if (last && fsm_name_cmp(last->name, last->name_len, name, len) >= 0)
            return "latches not in strictly increasing name order";
        if (rd_u8(r, &barrier) || rd_u8(r, &state) || fsm_rd_varint(r, &count) ||
            fsm_rd_varint(r, &remaining) || fsm_rd_varint(r, &broken))
            return "truncated latch";
        if (barrier > 1 || state > FSM_LATCH_BROKEN || count < 1 || count > FSM_MAX_LATCH_COUNT ||
            (barrier && remaining) || remaining > count)
            return "latch fields out of range";
        struct latch *l = latch_new(nf, name, len, barrier, count);
        if (!l)
            return "out of memory";
        l->state = state;
        l->remaining = remaining;
        l->broken_sid = broken;
        fsm_otree_append(&nf->latches, last ? &last->o : NULL, &l->o);
        last = l;
        const char *why = read_parts(nf, r, l);
        if (why)
            return why;
    }
    fsm_otree_balance(&nf->latches, (size_t)n);
    char err[FSM_ERR_LEN];
    return fsm_latch_check(nf, err, sizeof(err)) ? "latch fields inconsistent" : NULL;
}
