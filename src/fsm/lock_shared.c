/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/lock_shared.c — the shared mode of read-write locks: shared-hold records and LOCK_SHARED.
 *
 * Owns the rule that a shared request is granted at once only when the lock has no exclusive
 * holder, no lock-delay and nobody queued (a queued writer keeps later readers out, so writers
 * do not starve); otherwise it queues in the same FIFO as exclusive requests, and
 * fsm_lock_hand_on (lock.c) grants a run of shared requests at the head together. Each shared
 * grant takes its own fresh revision as its token. A session holds a lock in one mode.
 */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fsm/internal.h"

/* Walks whichever list is shorter: the lock's shared holders or the session's. */
struct shold *fsm_shold_find(const struct lock *l, const struct sess *s)
{
    if (l->n_shared <= s->n_shared) {
        for (struct shold *h = l->sh_head; h; h = h->lnext)
            if (h->sess == s)
                return h;
    } else {
        for (struct shold *h = s->sh_head; h; h = h->snext)
            if (h->lock == l)
                return h;
    }
    return NULL;
}

void fsm_shold_link_lock(struct fsm *f, struct lock *l, struct shold *h)
{
    h->lock = l;
    h->lnext = NULL;
    h->lprev = l->sh_tail;
    if (l->sh_tail)
        l->sh_tail->lnext = h;
    else
        l->sh_head = h;
    l->sh_tail = h;
    l->n_shared++;
    l->in_use += h->permits;
    f->n_shared++;
}

void fsm_shold_link_sess(struct sess *s, struct shold *h)
{
    h->sess = s;
    h->snext = NULL;
    h->sprev = s->sh_tail;
    if (s->sh_tail)
        s->sh_tail->snext = h;
    else
        s->sh_head = h;
    s->sh_tail = h;
    s->n_shared++;
}

void fsm_shold_unlink(struct fsm *f, struct shold *h)
{
    struct lock *l = h->lock;
    struct sess *s = h->sess;
    DLIST_UNLINK_ENDS_F(l->sh_head, l->sh_tail, h, lprev, lnext);
    DLIST_UNLINK_ENDS_F(s->sh_head, s->sh_tail, h, sprev, snext);
    l->n_shared--;
    l->in_use -= h->permits;
    s->n_shared--;
    f->n_shared--;
    free(h);
}

bool fsm_shold_token_held(const struct lock *l, uint64_t token)
{
    for (const struct shold *h = l->sh_head; h && h->token <= token; h = h->lnext)
        if (h->token == token)
            return true;
    return false;
}

/* The record is allocated before anything changes, so a failure changes nothing. */
static uint64_t grant_core(struct actx *a, struct lock *l, struct sess *s, struct shold *h,
                           uint32_t permits)
{
    memset(h, 0, sizeof(*h));
    h->permits = permits;
    h->token = fsm_next_rev(a);
    h->held_since_ms = a->c->now_ms;
    fsm_shold_link_lock(a->f, l, h);
    fsm_shold_link_sess(s, h);
    fsm_lock_emit(a, FSM_EV_GRANTED, s->sid, h->token, 0, l);
    return h->token;
}

uint64_t fsm_shold_grant_with(struct actx *a, struct lock *l, struct sess *s, struct shold *h)
{
    return grant_core(a, l, s, h, 1);
}

/* 0 (nothing changed) if memory ran out. */
uint64_t fsm_shold_grant(struct actx *a, struct lock *l, struct sess *s)
{
    return fsm_shold_grant_permits(a, l, s, 1);
}

uint64_t fsm_shold_grant_permits(struct actx *a, struct lock *l, struct sess *s, uint32_t permits)
{
    struct shold *h = malloc(sizeof(*h));
    return h ? grant_core(a, l, s, h, permits) : 0;
}

void fsm_shold_release(struct actx *a, struct shold *h, uint64_t delay_ms, bool expired)
{
    struct lock *l = h->lock;
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_RELEASED, h->sess->sid, h->token, 0, l);
    if (e) {
        e->held_ms = fsm_held_for(a, h->held_since_ms);
        e->expired = expired;
        e->revoked = expired && a->c->op == FSM_OP_SESSION_REVOKE;
    }
    fsm_shold_unlink(a->f, h);
    if (delay_ms == 0) {
        fsm_lock_hand_on(a, l);
        return;
    }
    fsm_lock_delay_start(a, l, delay_ms);
}

/* A shared grant on a new or an idle lock: allocate first, so an ERR changes nothing. */
static void grant_now(struct actx *a, struct lock *l, struct fsm_str name, struct sess *s,
                      struct fsm_reply *r)
{
    struct shold *h = malloc(sizeof(*h));
    if (!l && h && (l = fsm_lock_alloc(name.p, name.len)))
        fsm_lock_insert(a->f, l);
    if (!h || !l) {
        free(h);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_reply_int(r, fsm_shold_grant_with(a, l, s, h));
}

/*
 * LOCK_SHARED: idempotent for a shared holder (its token) and for a queued session (keeps its
 * place); an exclusive holder is refused (one mode at a time: UNLOCK first).
 */
void fsm_op_lock_shared(struct actx *a, const struct fsm_cmd_lock *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    struct shold *h = l ? fsm_shold_find(l, s) : NULL;
    struct waiter *w;
    if (fsm_lock_wrongtype(l, FSM_KIND_LOCK, r))
        return;
    if (!h && fsm_lock_free_for(l, true)) {
        grant_now(a, l, c->name, s, r);
    } else if (h) {
        fsm_reply_int(r, h->token);
    } else if (l->holder == s) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_ERR " session %llu holds lock %s exclusively (UNLOCK first)",
                      (unsigned long long)s->sid,
                      fsm_printable(l->name, l->name_len, nm, sizeof(nm)));
    } else if ((w = fsm_waiter_find(l, s))) {
        fsm_lock_requeued(l, w, true, c->wait_ms, r);
    } else if (c->wait_ms == 0) {
        r->kind = FSM_REPLY_NIL;
    } else {
        fsm_lock_enqueue(a, l, s, c->wait_ms, LOCK_MODE_SHARED, r);
    }
}
