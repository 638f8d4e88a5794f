/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/lock.c — locks: records, FIFO waiters, grants, release and lock-delay; the lock ops.
 *
 * Owns the rule that a grant happens only here (fsm_lock_grant(), fsm_shold_grant() in
 * lock_shared.c), only to a session that is alive (a waiter's session is alive by invariant:
 * fsm_sess_end removes its waits in the same apply), and always with a fresh revision as the token.
 * The queue is FIFO across modes (fsm_lock_hand_on). A lock record exists only while it is held (in
 * either mode), in lock-delay, or has waiters; the last user of a free lock drops it. The same
 * records, queue and hand-on serve semaphores (sem.c) and elections (elect.c): a record's `kind` is
 * fixed while it exists, the ops of another kind are refused (fsm_lock_wrongtype), and the few
 * differences are kind checks here (a semaphore's head is grantable below its limit; an
 * election's grant and release move the leader's value).
 */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fsm/internal.h"
#include "fsm/waitgraph.h"

/* ---- records ---- */

struct lock *fsm_lock_find(const struct fsm *f, const char *name, size_t namelen)
{
    if (namelen == 0 || namelen > FSM_MAX_NAME)
        return NULL;
    uint32_t h = fsm_hash_bytes(f, name, namelen);
    for (struct hlink *x = htab_bucket(&f->locks, h); x; x = x->next) {
        struct lock *l = (struct lock *)x;
        if (x->hash == h && l->name_len == namelen && memcmp(l->name, name, namelen) == 0)
            return l;
    }
    return NULL;
}

const struct lock_x fsm_lock_x_none;

struct lock_x *fsm_lock_x(struct lock *l)
{
    if (!l->x)
        l->x = calloc(1, sizeof(*l->x));
    return l->x;
}

struct lock *fsm_lock_alloc(const char *name, size_t namelen)
{
    /* The name starts at offsetof, not sizeof: the record's tail padding holds its first bytes
     * (a W4 record, 12-byte name, then fits a 192-byte malloc chunk instead of 208). */
    struct lock *l = malloc(offsetof(struct lock, name) + namelen);
    if (!l)
        return NULL;
    memset(l, 0, offsetof(struct lock, name));
    l->name_len = (uint16_t)namelen;
    memcpy(l->name, name, namelen);
    onode_set_key(&l->o, l->name, l->name_len);
    return l;
}

void fsm_lock_insert(struct fsm *f, struct lock *l)
{
    htab_insert(&f->locks, &l->h, fsm_hash_bytes(f, l->name, l->name_len));
    fsm_otree_insert(&f->lock_names, &l->o);
    f->name_bytes += l->name_len;
    f->n_prims += l->kind != FSM_KIND_LOCK;
}

void fsm_lock_insert_last(struct fsm *f, struct lock *l, struct lock *last)
{
    htab_insert(&f->locks, &l->h, fsm_hash_bytes(f, l->name, l->name_len));
    fsm_otree_append(&f->lock_names, last ? &last->o : NULL, &l->o);
    f->name_bytes += l->name_len;
    f->n_prims += l->kind != FSM_KIND_LOCK;
}

struct lock *fsm_lock_create(struct fsm *f, const char *name, size_t namelen, uint8_t kind)
{
    struct lock *l = fsm_lock_alloc(name, namelen);
    if (l && kind == FSM_KIND_ELECT && !fsm_lock_x(l)) { /* an election always has one */
        free(l);
        return NULL;
    }
    if (l) {
        l->kind = kind;
        fsm_lock_insert(f, l);
    }
    return l;
}

/* A dropped record has no leader, so no value (elect.c frees it on release). */
void fsm_lock_drop(struct fsm *f, struct lock *l)
{
    htab_remove(&f->locks, &l->h);
    fsm_otree_remove(&f->lock_names, &l->o);
    f->name_bytes -= l->name_len;
    f->n_prims -= l->kind != FSM_KIND_LOCK;
    fsm_revoke_clear(f, l);
    fsm_lockmeta_free(f, l);
    if (l->x)
        free(l->x->value);
    free(l->x);
    free(l);
}

const char *fsm_kind_name(uint8_t kind)
{
    static const char *const names[FSM_KIND__COUNT] = {"lock", "semaphore", "election"};
    return kind < FSM_KIND__COUNT ? names[kind] : "?";
}

bool fsm_lock_wrongtype(const struct lock *l, uint8_t kind, struct fsm_reply *r)
{
    if (!l || l->kind == kind)
        return false;
    char nm[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_WRONGTYPE " %s is %s %s",
                  fsm_printable(l->name, l->name_len, nm, sizeof(nm)),
                  l->kind == FSM_KIND_ELECT ? "an" : "a", fsm_kind_name(l->kind));
    return true;
}

struct fsm_event *fsm_lock_emit(struct actx *a, uint8_t type, uint64_t sid, uint64_t token,
                                uint64_t ms, const struct lock *l)
{
    struct fsm_event *e = fsm_emit(a, type, sid, token, ms, l->name, l->name_len);
    if (e)
        e->kind = l->kind;
    return e;
}

void fsm_held_append(struct sess *s, struct lock *l)
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

void fsm_held_unlink(struct lock *l)
{
    struct sess *s = l->holder;
    DLIST_UNLINK_ENDS_F(s->held_head, s->held_tail, l, hprev, hnext);
    l->hprev = l->hnext = NULL;
    l->holder = NULL;
    s->n_locks--;
}

void fsm_waiter_link_lock(struct fsm *f, struct lock *l, struct waiter *w)
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
    f->n_swaiters += w->shared;
}

void fsm_waiter_link_sess(struct fsm *f, struct sess *s, struct waiter *w)
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
    fsm_usage_wait(f, s, w, 1);
}

void fsm_waiter_link_lock_head(struct fsm *f, struct lock *l, struct waiter *w)
{
    w->lock = l;
    w->lprev = NULL;
    w->lnext = l->wq_head;
    if (l->wq_head)
        l->wq_head->lprev = w;
    else
        l->wq_tail = w;
    l->wq_head = w;
    l->n_waiters++;
    f->n_waiters++;
    f->n_swaiters += w->shared;
}

void fsm_waiter_append(struct fsm *f, struct lock *l, struct sess *s, struct waiter *w)
{
    fsm_waiter_link_lock(f, l, w);
    fsm_waiter_link_sess(f, s, w);
}

void fsm_waiter_remove(struct fsm *f, struct waiter *w)
{
    struct lock *l = w->lock;
    struct sess *s = w->sess;
    DLIST_UNLINK_ENDS_F(l->wq_head, l->wq_tail, w, lprev, lnext);
    DLIST_UNLINK_ENDS_F(s->wait_head, s->wait_tail, w, sprev, snext);
    l->n_waiters--;
    s->n_waits--;
    fsm_usage_wait(f, s, w, -1);
    f->n_waiters--;
    f->n_swaiters -= w->shared;
    fsm_waiter_free(f, w);
}

struct waiter *fsm_waiter_new(void)
{
    struct waiter *w = calloc(1, sizeof(*w));
    if (w)
        w->permits = 1;
    return w;
}

void fsm_waiter_free(struct fsm *f, struct waiter *w)
{
    f->name_bytes -= w->value_len + w->hv_len;
    free(w->value);
    free(w->hv);
    free(w);
}

/* Walks whichever list is shorter: the lock's queue or the session's waits. */
struct waiter *fsm_waiter_find(const struct lock *l, const struct sess *s)
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

uint64_t fsm_lock_grant(struct actx *a, struct lock *l, struct sess *s)
{
    l->token = fsm_next_rev(a);
    l->held_since_ms = a->c->now_ms;
    fsm_held_append(s, l);
    a->f->n_held++;
    if (l->kind == FSM_KIND_LOCK)
        fsm_lockmeta_grant(a, l, s);
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_GRANTED, s->sid, l->token, 0, l);
    if (e && LX(l)->hv)
        e->value = fsm_lock_holder_value(l);
    return l->token;
}

bool fsm_lock_head_grantable(const struct lock *l, const struct waiter *w)
{
    if (l->holder || l->in_delay)
        return false;
    if (l->kind == FSM_KIND_SEM) /* the head's permits fit (in_use may exceed a lowered limit) */
        return l->in_use < l->limit && w->permits <= l->limit - l->in_use;
    if (w->shared || l->n_shared == 0)
        return true;
    return l->n_shared == 1 && l->sh_head->sess == w->sess; /* an upgrade, alone at last */
}

/* An upgrade ends the requester's shared hold and grants it exclusively: a new token. False if
 * memory for a shared hold ran out: the waiter then stays at the head. */
static bool grant_head(struct actx *a, struct lock *l, struct waiter *w)
{
    struct sess *s = w->sess;
    if (l->kind == FSM_KIND_ELECT)
        return fsm_elect_grant_head(a, l, w);
    if (w->shared) {
        if (!fsm_shold_grant_permits(a, l, s, l->kind == FSM_KIND_SEM ? w->permits : 1))
            return false;
        fsm_waiter_remove(a->f, w);
        return true;
    }
    fsm_lockmeta_take(a, w); /* its value and max hold go to the grant below */
    fsm_waiter_remove(a->f, w);
    struct shold *h = fsm_shold_find(l, s);
    if (h) {
        struct fsm_event *e = fsm_lock_emit(a, FSM_EV_RELEASED, s->sid, h->token, 0, l);
        if (e)
            e->held_ms = fsm_held_for(a, h->held_since_ms);
        fsm_shold_unlink(a->f, h);
    }
    fsm_lock_grant(a, l, s);
    return true;
}

/* FIFO across modes: the head is granted while it can be, so a run of shared requests at the
 * head is granted together and stops at the first exclusive one (no writer starvation). A
 * multi-request at the head is granted only with all its names (multi.c); until then it blocks
 * this queue, even while the lock is free: nobody overtakes it. */
static void hand_on_one(struct actx *a, struct lock *l)
{
    while (l->wq_head) {
        struct waiter *w = l->wq_head;
        if (w->sess->ending) /* its waits are removed next (fsm_sess_end): no grant for it */
            break;
        if (fsm_waiter_multi(w)) {
            if (!fsm_multi_grant(a, w))
                break;
        } else if (!fsm_lock_head_grantable(l, w) || !grant_head(a, l, w)) {
            break;
        }
    }
    if (lock_unused(l) && !l->on_todo)
        fsm_lock_drop(a->f, l);
}

void fsm_lock_todo(struct actx *a, struct lock *l)
{
    if (l->on_todo)
        return;
    l->on_todo = 1;
    l->todo_next = NULL;
    if (a->todo_tail)
        a->todo_tail->todo_next = l;
    else
        a->todo_head = l;
    a->todo_tail = l;
}

/* In worklist order: the same on every replica (no hash order enters it). */
void fsm_lock_hand_on_todo(struct actx *a)
{
    if (a->handing)
        return;
    a->handing = true;
    while (a->todo_head) {
        struct lock *l = a->todo_head;
        a->todo_head = l->todo_next;
        if (!a->todo_head)
            a->todo_tail = NULL;
        l->on_todo = 0;
        l->todo_next = NULL;
        hand_on_one(a, l);
    }
    a->handing = false;
}

void fsm_lock_hand_on(struct actx *a, struct lock *l)
{
    fsm_lock_todo(a, l);
    fsm_lock_hand_on_todo(a);
}

void fsm_waiter_leave(struct actx *a, struct waiter *w)
{
    if (fsm_waiter_multi(w)) { /* the request leaves every queue at once */
        fsm_multi_leave(a, w);
        return;
    }
    struct lock *l = w->lock;
    fsm_lock_emit(a, FSM_EV_WAIT_ENDED, w->sess->sid, 0, 0, l);
    fsm_waiter_remove(a->f, w);
    fsm_lock_hand_on(a, l);
}

/* A shared holder's expiry while another delay runs restarts it: the delay counts from the
 * latest expiry (the lease timer is re-armed by the second LOCKDELAY_STARTED). */
void fsm_lock_delay_start(struct actx *a, struct lock *l, uint64_t delay_ms)
{
    if (!l->in_delay)
        a->f->n_delay++;
    l->in_delay = 1;
    l->lockdelay_ms = delay_ms;
    fsm_lock_emit(a, FSM_EV_LOCKDELAY_STARTED, 0, 0, delay_ms, l);
}

void fsm_lock_release(struct actx *a, struct lock *l, uint64_t delay_ms, bool expired)
{
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_RELEASED, l->holder->sid, l->token, 0, l);
    if (e) {
        e->held_ms = fsm_held_for(a, l->held_since_ms);
        e->expired = expired;
        e->revoked = expired && a->c->op == FSM_OP_SESSION_REVOKE;
        e->deadline = expired && a->c->op == FSM_OP_REVOKE_END;
    }
    fsm_revoke_clear(a->f, l); /* the grant ends: its pending revoke with it */
    fsm_lockmeta_release(a->f, l);
    fsm_held_unlink(l);
    a->f->n_held--;
    if (l->x)
        l->x->reholds = 0; /* every hold of a reentrant holder ends at once */
    l->token = 0;
    l->held_since_ms = 0;
    if (l->kind == FSM_KIND_ELECT)
        fsm_elect_leader_gone(a, l, delay_ms);
    if (delay_ms == 0) {
        fsm_lock_hand_on(a, l);
        return;
    }
    fsm_lock_delay_start(a, l, delay_ms);
}

/* ---- ops ---- */

void fsm_reply_int(struct fsm_reply *r, uint64_t v)
{
    r->kind = FSM_REPLY_INT;
    r->value = v;
}

static void lock_new_grant(struct actx *a, struct fsm_str name, struct sess *s, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_alloc(name.p, name.len);
    if (!l) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_lock_insert(a->f, l);
    fsm_reply_int(r, fsm_lock_grant(a, l, s));
}

/* An upgrade request goes to the head: behind a queued writer it would wait for its own
 * shared hold to end, and the writer for it (a deadlock). */
void fsm_lock_enqueue(struct actx *a, struct lock *l, struct sess *s, uint64_t wait_ms,
                      uint8_t mode, struct fsm_reply *r)
{
    fsm_lock_enqueue_permits(a, l, s, wait_ms, mode, 1, r);
}

void fsm_lock_enqueue_permits(struct actx *a, struct lock *l, struct sess *s, uint64_t wait_ms,
                              uint8_t mode, uint32_t permits, struct fsm_reply *r)
{
    struct fsm_wg_want want = {l, mode, permits};
    if (fsm_deadlock_refused_n(a, s, &want, 1, r))
        return; /* the wait would close a cycle: -DEADLOCK, not queued */
    struct waiter *w = fsm_waiter_new();
    if (!w) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    w->permits = permits; /* an election's candidate gets its value from elect.c */
    w->wait_ms = wait_ms;
    w->rev = fsm_next_rev(a);
    w->shared = mode == LOCK_MODE_SHARED;
    fsm_lockmeta_enqueued(a, l, s, w);
    if (mode == LOCK_MODE_UPGRADE)
        fsm_waiter_link_lock_head(a->f, l, w);
    else
        fsm_waiter_link_lock(a->f, l, w);
    fsm_waiter_link_sess(a->f, s, w);
    fsm_lock_emit(a, FSM_EV_WAIT_STARTED, s->sid, 0, w->wait_ms, l);
    r->kind = FSM_REPLY_QUEUED;
}

/*
 * LOCK by a shared holder asks for an upgrade: at once if it is the only holder and no delay
 * runs, else (with WAIT) at the head of the queue. Two upgraders would wait for each other
 * forever, so the second is refused.
 */
static void lock_upgrade(struct actx *a, struct lock *l, struct sess *s, struct shold *h,
                         uint64_t wait_ms, struct fsm_reply *r)
{
    if (fsm_waiter_find(l, s)) {
        r->kind = wait_ms ? FSM_REPLY_QUEUED : FSM_REPLY_NIL;
    } else if (l->n_shared == 1 && !l->in_delay) {
        struct fsm_event *e = fsm_lock_emit(a, FSM_EV_RELEASED, s->sid, h->token, 0, l);
        if (e)
            e->held_ms = fsm_held_for(a, h->held_since_ms);
        fsm_shold_unlink(a->f, h);
        fsm_reply_int(r, fsm_lock_grant(a, l, s));
    } else if (wait_ms == 0) {
        r->kind = FSM_REPLY_NIL;
    } else if (l->wq_head && !l->wq_head->shared && fsm_shold_find(l, l->wq_head->sess)) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r,
                      PROTO_ERR " session %llu already waits to upgrade lock %s: two upgrades "
                                "would deadlock (UNLOCK and LOCK again)",
                      (unsigned long long)l->wq_head->sess->sid,
                      fsm_printable(l->name, l->name_len, nm, sizeof(nm)));
    } else {
        fsm_lock_enqueue(a, l, s, wait_ms, LOCK_MODE_UPGRADE, r);
    }
}

/* A session already queued keeps its place if it asks in the same mode. */
void fsm_lock_requeued(const struct lock *l, const struct waiter *w, bool shared, uint64_t wait_ms,
                       struct fsm_reply *r)
{
    if ((w->shared != 0) == shared) {
        r->kind = wait_ms ? FSM_REPLY_QUEUED : FSM_REPLY_NIL;
        return;
    }
    char nm[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_ERR " session %llu already waits for lock %s in %s mode",
                  (unsigned long long)w->sess->sid,
                  fsm_printable(l->name, l->name_len, nm, sizeof(nm)),
                  w->shared ? "shared" : "exclusive");
}

/*
 * LOCK: idempotent for the holder (its token) and for a queued session (keeps its place);
 * a free lock is granted at once; a busy one (held in either mode, or in lock-delay) queues or
 * answers NIL.
 */
bool fsm_lock_exclusive(struct actx *a, const struct fsm_cmd_lock *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return false;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    struct waiter *w;
    if (fsm_lock_wrongtype(l, FSM_KIND_LOCK, r))
        return false;
    if (!l) {
        lock_new_grant(a, c->name, s, r);
    } else if (l->holder == s) {
        fsm_reent_relock(a, l, s, r); /* its token; counted for a reentrant session */
    } else if (h) {
        lock_upgrade(a, l, s, h, c->wait_ms, r);
    } else if ((w = fsm_waiter_find(l, s))) {
        fsm_lock_requeued(l, w, false, c->wait_ms, r);
    } else if (c->wait_ms == 0) {
        r->kind = FSM_REPLY_NIL;
    } else {
        fsm_lock_enqueue(a, l, s, c->wait_ms, LOCK_MODE_EXCLUSIVE, r);
        return r->kind == FSM_REPLY_QUEUED && l->holder; /* not behind shared holds or a delay */
    }
    return false;
}

void fsm_op_lock(struct actx *a, const struct fsm_cmd_lock *c, struct fsm_reply *r)
{
    (void)fsm_lock_exclusive(a, c, r);
}

/*
 * UNLOCK: the holder releases (the head waiter is granted); a queued session leaves the queue
 * (so a client that gave up a wait whose answer it never saw leaves no orphan behind). A shared
 * holder waiting to upgrade does both: UNLOCK leaves the lock entirely.
 */
void fsm_op_unlock(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_lock_wrongtype(l, FSM_KIND_LOCK, r))
        return;
    struct waiter *w = l && l->holder != s ? fsm_waiter_find(l, s) : NULL;
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    if (w && !h) { /* a queued session gives up its place: a client abandoning a wait it lost */
        fsm_waiter_leave(a, w);
        if (a->nrev == 0)
            fsm_next_rev(a);
        r->kind = FSM_REPLY_OK;
        return;
    }
    if (!l || (l->holder != s && !h)) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_NOTHOLDER " session %llu does not hold lock %s",
                      (unsigned long long)s->sid,
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    if (w) { /* the upgrade request goes first: its removal alone grants nothing */
        fsm_lock_emit(a, FSM_EV_WAIT_ENDED, s->sid, 0, 0, l);
        fsm_waiter_remove(a->f, w);
    }
    if (h)
        fsm_shold_release(a, h, 0, false);
    else if (!fsm_reent_unlock(a, l)) /* a reentrant holder's count first */
        fsm_lock_release(a, l, 0, false);
    if (a->nrev == 0)
        fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

/* CANCEL_WAIT: the leader's wait timer fired; whichever of grant and cancel came first wins. */
void fsm_op_cancel_wait(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_NIL;
    if (!l)
        return;
    if (l->holder == s) {
        fsm_reply_int(r, l->token);
        return;
    }
    struct waiter *w = fsm_waiter_find(l, s);
    struct shold *h = w ? NULL : fsm_shold_find(l, s);
    if (h) { /* a shared grant won the race */
        fsm_reply_int(r, h->token);
        return;
    }
    if (!w)
        return; /* an upgrade that timed out leaves the shared hold in place: NIL */
    fsm_next_rev(a);
    fsm_waiter_leave(a, w);
}

void fsm_op_lockdelay_end(struct actx *a, const struct fsm_cmd_lockdelay_end *c,
                          struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_OK;
    if (!l || !l->in_delay)
        return;
    l->in_delay = 0;
    l->lockdelay_ms = 0;
    a->f->n_delay--;
    fsm_lock_emit(a, FSM_EV_LOCKDELAY_ENDED, 0, 0, 0, l);
    fsm_lock_hand_on(a, l);
    if (a->nrev == 0)
        fsm_next_rev(a);
}
