/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/sem.c — counting semaphores: SEM_ACQUIRE and SEM_RELEASE.
 *
 * A semaphore is a struct lock of kind FSM_KIND_SEM whose permits are shared holds (struct
 * shold, one per session, each with its own fresh token) and whose waiters are shared-mode
 * waiters in one FIFO. Owns the rules: at most `limit` permits at once (fsm_lock_head_grantable
 * grants the head while n_shared < limit and no lock-delay runs); the first acquirer sets the
 * limit and a different one is refused while the semaphore exists (it is dropped, as a lock
 * is, once nothing holds, waits for or delays it, so the next first acquirer sets it again);
 * a permit ends with its session (an expiry starts lock-delay on the whole semaphore: no permit
 * is granted until it ends). Release and hand-on are lock_shared.c's and lock.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

/* ERR unless `limit` is 1..FSM_MAX_SEM_LIMIT and, for an existing semaphore, its own. */
static bool limit_refused(const struct lock *l, uint64_t limit, struct fsm_reply *r)
{
    char nm[FSM_NAME_SHOWN];
    if (limit == 0 || limit > FSM_MAX_SEM_LIMIT) {
        fsm_reply_err(r, PROTO_ERR " semaphore limit must be 1..%u", FSM_MAX_SEM_LIMIT);
        return true;
    }
    if (!l || l->limit == limit)
        return false;
    fsm_reply_err(r, PROTO_ERR " semaphore %s has limit %u, not %llu",
                  fsm_printable(l->name, l->name_len, nm, sizeof(nm)), l->limit,
                  (unsigned long long)limit);
    return true;
}

/* A permit at once: the records are allocated before anything changes. */
static void permit_now(struct actx *a, struct lock *l, const struct fsm_cmd_sem_acquire *c,
                       struct sess *s, struct fsm_reply *r)
{
    bool fresh = !l;
    if (fresh && (l = fsm_lock_create(a->f, c->name.p, c->name.len, FSM_KIND_SEM)))
        l->limit = (uint32_t)c->limit;
    uint64_t token = l ? fsm_shold_grant(a, l, s) : 0;
    if (!token) {
        if (fresh && l)
            fsm_lock_drop(a->f, l);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_reply_int(r, token);
}

/*
 * SEM_ACQUIRE: idempotent for a permit holder (its token) and a queued session (keeps its
 * place); a permit is granted at once only when one is free, no lock-delay runs and nobody is
 * queued (FIFO: a newcomer does not overtake the queue).
 */
void fsm_op_sem_acquire(struct actx *a, const struct fsm_cmd_sem_acquire *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_lock_wrongtype(l, FSM_KIND_SEM, r) || limit_refused(l, c->limit, r))
        return;
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    struct waiter *w = l && !h ? fsm_waiter_find(l, s) : NULL;
    if (h)
        fsm_reply_int(r, h->token);
    else if (w)
        fsm_lock_requeued(l, w, true, c->wait_ms, r);
    else if (!l || (!l->in_delay && !l->wq_head && l->n_shared < l->limit))
        permit_now(a, l, c, s, r);
    else if (c->wait_ms == 0)
        r->kind = FSM_REPLY_NIL;
    else
        fsm_lock_enqueue(a, l, s, c->wait_ms, LOCK_MODE_SHARED, r);
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
