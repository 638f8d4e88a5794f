/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/sem.c — counting semaphores: SEM_ACQUIRE (one permit), SEM_ACQUIRE_W (k permits at
 * once), SEM_RELEASE and SEM_SETLIMIT.
 *
 * A semaphore is a struct lock of kind FSM_KIND_SEM whose acquisitions are shared holds
 * (struct shold, one per session, each with its own fresh token and its permits, 1..limit) and
 * whose waiters are shared-mode waiters in one FIFO, each with the permits it wants. Owns the
 * rules: at most `limit` permits in use (l->in_use, the sum of the holds' permits) after any
 * grant (fsm_lock_head_grantable grants the head while in_use + its permits <= limit and no
 * lock-delay runs); strict FIFO: only the head is ever granted, so a request for k at the head
 * is never overtaken by a later one for fewer (no starvation of large requests); a release
 * frees that acquisition's permits at once; an operator's lower limit (SEM_SETLIMIT) takes no
 * permit back, it only holds back grants until in_use has fallen below it; without an
 * operator's limit (semlimit.c) the first acquirer sets the limit and a different one is refused
 * while the semaphore exists (it is dropped, as a lock is, once nothing holds, waits for or
 * delays it, so the next first acquirer sets it again); with one, the operator's limit is the
 * semaphore's and an acquirer's (valid) limit is accepted and ignored;
 * a permit ends with its session (an expiry starts lock-delay on the whole semaphore: no permit
 * is granted until it ends). Release and hand-on are lock_shared.c's and lock.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

/* ERR unless `limit` is a semaphore's limit at all: 1..FSM_MAX_SEM_LIMIT. */
static bool limit_out_of_range(uint64_t limit, struct fsm_reply *r)
{
    if (limit != 0 && limit <= FSM_MAX_SEM_LIMIT)
        return false;
    fsm_reply_err(r, PROTO_ERR " semaphore limit must be 1..%u", FSM_MAX_SEM_LIMIT);
    return true;
}

/* ERR unless `limit` is 1..FSM_MAX_SEM_LIMIT and, for an existing semaphore, its own; with an
 * operator's limit (`op_limit` > 0, semlimit.c) any valid one is accepted: the operator's wins. */
static bool limit_refused(const struct lock *l, uint64_t limit, uint32_t op_limit,
                          struct fsm_reply *r)
{
    char nm[FSM_NAME_SHOWN];
    if (limit_out_of_range(limit, r))
        return true;
    if (!l || l->limit == limit || op_limit)
        return false;
    fsm_reply_err(r, PROTO_ERR " semaphore %s has limit %u, not %llu",
                  fsm_printable(l->name, l->name_len, nm, sizeof(nm)), l->limit,
                  (unsigned long long)limit);
    return true;
}

/* An acquisition of `permits` at once: the records are allocated before anything changes. */
static void permit_now(struct actx *a, struct lock *l, const struct fsm_str *name, uint64_t limit,
                       uint32_t permits, struct sess *s, struct fsm_reply *r)
{
    bool fresh = !l;
    if (fresh && (l = fsm_lock_create(a->f, name->p, name->len, FSM_KIND_SEM)))
        l->limit = (uint32_t)limit;
    uint64_t token = l ? fsm_shold_grant_permits(a, l, s, permits) : 0;
    if (!token) {
        if (fresh && l)
            fsm_lock_drop(a->f, l);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_reply_int(r, token);
}

/* The permits fit now: no lock-delay, nobody queued (FIFO: a newcomer for fewer permits never
 * overtakes a queued request for more) and in_use + permits <= limit. */
static bool fits_now(const struct lock *l, uint32_t permits)
{
    return !l->in_delay && !l->wq_head && l->in_use < l->limit && permits <= l->limit - l->in_use;
}

/*
 * SEM_ACQUIRE and SEM_ACQUIRE_W: idempotent for a permit holder (its token: one acquisition per
 * session, whatever permits it asks for again) and a queued session (keeps its place); granted
 * at once only when the permits fit (fits_now). permits is 1..limit: more could never be
 * granted.
 */
static void acquire(struct actx *a, const struct fsm_str *name, uint64_t sid, uint64_t limit,
                    uint64_t permits, uint64_t wait_ms, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, sid);
    if (!s) {
        fsm_nosession(r, sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, name->p, name->len);
    uint32_t op_limit = fsm_semlim_get(a->f, name->p, name->len);
    if (fsm_lock_wrongtype(l, FSM_KIND_SEM, r) || limit_refused(l, limit, op_limit, r))
        return;
    if (op_limit) /* the operator's limit, for a semaphore created now too */
        limit = op_limit;
    uint64_t cur = l ? l->limit : limit;
    if (permits == 0 || permits > cur) {
        fsm_reply_err(r, PROTO_ERR " permits must be 1..%llu (the semaphore's limit)",
                      (unsigned long long)cur);
        return;
    }
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    struct waiter *w = l && !h ? fsm_waiter_find(l, s) : NULL;
    if (h)
        fsm_reply_int(r, h->token);
    else if (w)
        fsm_lock_requeued(l, w, true, wait_ms, r);
    else if (!l || fits_now(l, (uint32_t)permits))
        permit_now(a, l, name, limit, (uint32_t)permits, s, r);
    else if (wait_ms == 0)
        r->kind = FSM_REPLY_NIL;
    else
        fsm_lock_enqueue_permits(a, l, s, wait_ms, LOCK_MODE_SHARED, (uint32_t)permits, r);
}

void fsm_op_sem_acquire(struct actx *a, const struct fsm_cmd_sem_acquire *c, struct fsm_reply *r)
{
    acquire(a, &c->name, c->sid, c->limit, 1, c->wait_ms, r);
}

void fsm_op_sem_acquire_w(struct actx *a, const struct fsm_cmd_sem_acquire_w *c,
                          struct fsm_reply *r)
{
    acquire(a, &c->name, c->sid, c->limit, c->permits, c->wait_ms, r);
}

/*
 * An operator's new limit for semaphore l: SEM_SETLIMIT's rule, which SEM_LIMIT_SET (semlimit.c)
 * follows too, so it is written once, here. A lower limit takes no permit back: holders keep
 * theirs until they release, and nothing is granted until in_use + the head's permits fit the
 * new limit. A queued request for more permits than the new limit could never be granted: the
 * change is then refused (ERR, nothing changes) and the operator first makes those requests
 * leave (SEM.RELEASE by their sessions, or their waits end). A higher limit grants the queue's
 * head run at once.
 */
bool fsm_sem_limit_refused(const struct lock *l, uint64_t limit, struct fsm_reply *r)
{
    char nm[FSM_NAME_SHOWN];
    if (limit_out_of_range(limit, r) || fsm_lock_wrongtype(l, FSM_KIND_SEM, r))
        return true;
    for (const struct waiter *w = l ? l->wq_head : NULL; w; w = w->lnext)
        if (w->permits > limit) {
            fsm_reply_err(r,
                          PROTO_ERR " semaphore %s has a request queued for %u permits, more "
                                    "than %llu",
                          fsm_printable(l->name, l->name_len, nm, sizeof(nm)), w->permits,
                          (unsigned long long)limit);
            return true;
        }
    return false;
}

void fsm_sem_limit_apply(struct actx *a, struct lock *l, uint32_t limit)
{
    l->limit = limit;
    fsm_semlim_follow(a->f, l); /* an operator's limit of the name is this one from now on */
    fsm_lock_hand_on(a, l);     /* a higher limit may grant the head run */
}

/* SEM_SETLIMIT: the rule above for an existing semaphore; no semaphore of the name: NIL. */
void fsm_op_sem_setlimit(struct actx *a, const struct fsm_cmd_sem_setlimit *c, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_sem_limit_refused(l, c->limit, r))
        return;
    if (!l) {
        r->kind = FSM_REPLY_NIL;
        return;
    }
    r->kind = FSM_REPLY_OK;
    if (l->limit == c->limit)
        return; /* nothing changes: no revision */
    fsm_next_rev(a);
    fsm_sem_limit_apply(a, l, (uint32_t)c->limit);
}

bool fsm_sem_weighted(const struct lock *l)
{
    if (l->kind != FSM_KIND_SEM)
        return false;
    if (l->in_use > l->limit)
        return true;
    for (const struct shold *h = l->sh_head; h; h = h->lnext)
        if (h->permits != 1)
            return true;
    for (const struct waiter *w = l->wq_head; w; w = w->lnext)
        if (w->permits != 1)
            return true;
    return false;
}

/* SEM_RELEASE: a permit holder releases (the queue's head is granted); a queued session leaves
 * the queue. */
void fsm_op_sem_release(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_lock_wrongtype(l, FSM_KIND_SEM, r))
        return;
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    struct waiter *w = l && !h ? fsm_waiter_find(l, s) : NULL;
    if (h) {
        fsm_shold_release(a, h, 0, false);
    } else if (w) {
        fsm_waiter_leave(a, w);
    } else {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_NOTHOLDER " session %llu holds no permit of semaphore %s",
                      (unsigned long long)s->sid,
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    if (a->nrev == 0)
        fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

void fsm_sem_holders(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, uint64_t token, uint32_t permits),
                     void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    for (const struct shold *h = l && l->kind == FSM_KIND_SEM ? l->sh_head : NULL; h; h = h->lnext)
        cb(arg, h->sess->sid, h->token, h->permits);
}

void fsm_sem_waiters(const struct fsm *f, const char *name, size_t namelen,
                     void (*cb)(void *arg, uint64_t sid, uint32_t permits), void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    for (const struct waiter *w = l && l->kind == FSM_KIND_SEM ? l->wq_head : NULL; w; w = w->lnext)
        cb(arg, w->sess->sid, w->permits);
}
