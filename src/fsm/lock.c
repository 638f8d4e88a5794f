/*
 * fsm/lock.c — locks: records, FIFO waiters, grants, release and lock-delay; the lock ops.
 *
 * Owns the rule that a grant happens only here (grant()), only to a session that is alive (a
 * waiter's session is alive by invariant: sess_end removes its waits in the same apply), and
 * always with a fresh revision as the token. A lock record exists only while it is held, in
 * lock-delay, or has waiters; the last user of a free lock drops it.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

/* ---- records ---- */

struct lock *lock_find(const struct fsm *f, const char *name, size_t namelen)
{
    if (namelen == 0 || namelen > FSM_MAX_NAME)
        return NULL;
    uint32_t h = fsm_hash_bytes(name, namelen);
    for (struct hlink *x = htab_bucket(&f->locks, h); x; x = x->next) {
        struct lock *l = (struct lock *)x;
        if (x->hash == h && l->name_len == namelen && memcmp(l->name, name, namelen) == 0)
            return l;
    }
    return NULL;
}

struct lock *lock_alloc(const char *name, size_t namelen)
{
    struct lock *l = malloc(sizeof(*l) + namelen);
    if (!l)
        return NULL;
    memset(l, 0, sizeof(*l));
    l->name_len = (uint16_t)namelen;
    memcpy(l->name, name, namelen);
    l->o.key = l->name;
    l->o.key_len = l->name_len;
    return l;
}

void lock_insert(struct fsm *f, struct lock *l)
{
    htab_insert(&f->locks, &l->h, fsm_hash_bytes(l->name, l->name_len));
    otree_insert(&f->lock_names, &l->o);
    f->name_bytes += l->name_len;
}

void lock_insert_last(struct fsm *f, struct lock *l, struct lock *last)
{
    htab_insert(&f->locks, &l->h, fsm_hash_bytes(l->name, l->name_len));
    otree_append(&f->lock_names, last ? &last->o : NULL, &l->o);
    f->name_bytes += l->name_len;
}

void lock_drop(struct fsm *f, struct lock *l)
{
    htab_remove(&f->locks, &l->h);
    otree_remove(&f->lock_names, &l->o);
    f->name_bytes -= l->name_len;
    free(l);
}

void held_append(struct sess *s, struct lock *l)
{
    l->holder = s;
    l->hnext = NULL;
    l->hprev = s->held_tail;
    if (s->held_tail)
        s->held_tail->hnext = l;
    else
        s->held_head = l;
    s->held_tail = l;
    s->n_locks++;
}

void held_unlink(struct lock *l)
{
    struct sess *s = l->holder;
    if (l->hprev)
        l->hprev->hnext = l->hnext;
    else
        s->held_head = l->hnext;
    if (l->hnext)
        l->hnext->hprev = l->hprev;
    else
        s->held_tail = l->hprev;
    l->hprev = l->hnext = NULL;
    l->holder = NULL;
    s->n_locks--;
}

void waiter_link_lock(struct fsm *f, struct lock *l, struct waiter *w)
{
    w->lock = l;
    w->lnext = NULL;
    w->lprev = l->wq_tail;
    if (l->wq_tail)
        l->wq_tail->lnext = w;
    else
        l->wq_head = w;
    l->wq_tail = w;
    l->n_waiters++;
    f->n_waiters++;
}

void waiter_link_sess(struct sess *s, struct waiter *w)
{
    w->sess = s;
    w->snext = NULL;
    w->sprev = s->wait_tail;
    if (s->wait_tail)
        s->wait_tail->snext = w;
    else
        s->wait_head = w;
    s->wait_tail = w;
    s->n_waits++;
}

void waiter_append(struct fsm *f, struct lock *l, struct sess *s, struct waiter *w)
{
    waiter_link_lock(f, l, w);
    waiter_link_sess(s, w);
}

void waiter_remove(struct fsm *f, struct waiter *w)
{
    struct lock *l = w->lock;
    struct sess *s = w->sess;
    if (w->lprev)
        w->lprev->lnext = w->lnext;
    else
        l->wq_head = w->lnext;
    if (w->lnext)
        w->lnext->lprev = w->lprev;
    else
        l->wq_tail = w->lprev;
    if (w->sprev)
        w->sprev->snext = w->snext;
    else
        s->wait_head = w->snext;
    if (w->snext)
        w->snext->sprev = w->sprev;
    else
        s->wait_tail = w->sprev;
    l->n_waiters--;
    s->n_waits--;
    f->n_waiters--;
    free(w);
}

/* Walks whichever list is shorter: the lock's queue or the session's waits. */
struct waiter *waiter_find(const struct lock *l, const struct sess *s)
{
    if (l->n_waiters <= s->n_waits) {
        for (struct waiter *w = l->wq_head; w; w = w->lnext)
            if (w->sess == s)
                return w;
    } else {
        for (struct waiter *w = s->wait_head; w; w = w->snext)
            if (w->lock == l)
                return w;
    }
    return NULL;
}

/* ---- transitions ---- */

/* Give a lock with no holder to `s`: a fresh revision is the token. */
static uint64_t grant(struct actx *a, struct lock *l, struct sess *s)
{
    l->token = fsm_next_rev(a);
    l->held_since_ms = a->c->now_ms;
    held_append(s, l);
    a->f->n_held++;
    fsm_emit(a, FSM_EV_GRANTED, s->sid, l->token, 0, l->name, l->name_len);
    return l->token;
}

/* The lock became available (no holder, no delay): only the head waiter is granted. */
static void hand_on(struct actx *a, struct lock *l)
{
    struct waiter *w = l->wq_head;
    if (!w) {
        lock_drop(a->f, l);
        return;
    }
    struct sess *s = w->sess;
    waiter_remove(a->f, w);
    grant(a, l, s);
}

void lock_release(struct actx *a, struct lock *l, uint64_t delay_ms, bool expired)
{
    struct fsm_event *e =
        fsm_emit(a, FSM_EV_RELEASED, l->holder->sid, l->token, 0, l->name, l->name_len);
    if (e)
        e->expired = expired;
    held_unlink(l);
    a->f->n_held--;
    l->token = 0;
    l->held_since_ms = 0;
    if (delay_ms == 0) {
        hand_on(a, l);
        return;
    }
    l->in_delay = 1;
    l->lockdelay_ms = delay_ms;
    a->f->n_delay++;
    fsm_emit(a, FSM_EV_LOCKDELAY_STARTED, 0, 0, delay_ms, l->name, l->name_len);
}

/* ---- ops ---- */

static void reply_int(struct fsm_reply *r, uint64_t v)
{
    r->kind = FSM_REPLY_INT;
    r->value = v;
}

static void lock_new_grant(struct actx *a, struct fsm_str name, struct sess *s, struct fsm_reply *r)
{
    struct lock *l = lock_alloc(name.p, name.len);
    if (!l) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    lock_insert(a->f, l);
    reply_int(r, grant(a, l, s));
}

static void enqueue(struct actx *a, struct lock *l, struct sess *s, uint64_t wait_ms,
                    struct fsm_reply *r)
{
    struct waiter *w = malloc(sizeof(*w));
    if (!w) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    w->wait_ms = wait_ms;
    w->rev = fsm_next_rev(a);
    waiter_append(a->f, l, s, w);
    fsm_emit(a, FSM_EV_WAIT_STARTED, s->sid, 0, w->wait_ms, l->name, l->name_len);
    r->kind = FSM_REPLY_QUEUED;
}

/*
 * LOCK: idempotent for the holder (its token) and for a queued session (keeps its place);
 * a free lock is granted at once; a busy one (held or in lock-delay) queues or answers NIL.
 */
void op_lock(struct actx *a, const struct fsm_cmd_lock *c, struct fsm_reply *r)
{
    struct sess *s = sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = lock_find(a->f, c->name.p, c->name.len);
    if (!l) {
        lock_new_grant(a, c->name, s, r);
    } else if (l->holder == s) {
        reply_int(r, l->token);
    } else if (waiter_find(l, s)) {
        r->kind = c->wait_ms ? FSM_REPLY_QUEUED : FSM_REPLY_NIL;
    } else if (c->wait_ms == 0) {
        r->kind = FSM_REPLY_NIL;
    } else {
        enqueue(a, l, s, c->wait_ms, r);
    }
}

/*
 * UNLOCK: the holder releases (the head waiter is granted); a queued session leaves the queue
 * (so a client that gave up a wait whose answer it never saw leaves no orphan behind).
 */
void op_unlock(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = lock_find(a->f, c->name.p, c->name.len);
    struct waiter *w = l && l->holder != s ? waiter_find(l, s) : NULL;
    if (w) { /* a queued session gives up its place: a client abandoning a wait it lost */
        fsm_emit(a, FSM_EV_WAIT_ENDED, s->sid, 0, 0, l->name, l->name_len);
        waiter_remove(a->f, w);
        fsm_next_rev(a);
        r->kind = FSM_REPLY_OK;
        return;
    }
    if (!l || l->holder != s) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_NOTHOLDER " session %llu does not hold lock %s",
                      (unsigned long long)s->sid,
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    lock_release(a, l, 0, false);
    if (a->nrev == 0)
        fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

/* CANCEL_WAIT: the leader's wait timer fired; whichever of grant and cancel came first wins. */
void op_cancel_wait(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_NIL;
    if (!l)
        return;
    if (l->holder == s) {
        reply_int(r, l->token);
        return;
    }
    struct waiter *w = waiter_find(l, s);
    if (!w)
        return;
    fsm_emit(a, FSM_EV_WAIT_ENDED, s->sid, 0, 0, l->name, l->name_len);
    waiter_remove(a->f, w);
    fsm_next_rev(a);
}

void op_lockdelay_end(struct actx *a, const struct fsm_cmd_lockdelay_end *c, struct fsm_reply *r)
{
    struct lock *l = lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_OK;
    if (!l || !l->in_delay)
        return;
    l->in_delay = 0;
    l->lockdelay_ms = 0;
    a->f->n_delay--;
    fsm_emit(a, FSM_EV_LOCKDELAY_ENDED, 0, 0, 0, l->name, l->name_len);
    hand_on(a, l);
    if (a->nrev == 0)
        fsm_next_rev(a);
}
