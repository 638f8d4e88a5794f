/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/query.c — read-only queries over locks and sessions, iteration and stats.
 *
 * Owns nothing; every function only reads. Iteration follows the hash tables' bucket order,
 * which is deterministic for a given history but otherwise unspecified.
 */
#include <string.h>

#include "fsm/internal.h"

int fsm_lock_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_lock_view *v)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    if (!l)
        return 0;
    v->kind = l->kind;
    v->holder_sid = l->holder ? l->holder->sid : 0;
    v->token = l->token;
    v->held_since_ms = l->holder ? l->held_since_ms : 0;
    v->in_lockdelay = l->in_delay;
    v->lockdelay_ms = l->in_delay ? l->lockdelay_ms : 0;
    v->n_waiters = l->n_waiters;
    v->n_shared = l->n_shared;
    v->value = fsm_lock_holder_value(l);
    v->maxhold_ms = LX(l)->maxhold_ms;
    v->transitions = LX(l)->transitions;
    v->reentrant = l->holder && l->holder->reentrant;
    v->count = l->holder ? 1 + LX(l)->reholds : 0;
    return 1;
}

void fsm_lock_holders(const struct fsm *f, const char *name, size_t namelen,
                      void (*cb)(void *arg, uint64_t sid, uint64_t token, bool shared), void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    if (l && l->holder)
        cb(arg, l->holder->sid, l->token, false);
    for (const struct shold *h = l ? l->sh_head : NULL; h; h = h->lnext)
        cb(arg, h->sess->sid, h->token, true);
}

void fsm_lock_waiters(const struct fsm *f, const char *name, size_t namelen,
                      void (*cb)(void *arg, uint64_t sid, uint64_t wait_ms), void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    for (const struct waiter *w = l ? l->wq_head : NULL; w; w = w->lnext)
        cb(arg, w->sess->sid, w->wait_ms);
}

int fsm_fence_check(const struct fsm *f, const char *name, size_t namelen, uint64_t token)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    if (!l)
        return -1;
    if (l->holder)
        return l->token == token ? 0 : -1;
    for (const struct shold *h = l->sh_head; h; h = h->lnext)
        if (h->token == token)
            return 0;
    return -1;
}

int fsm_kind_of(const struct fsm *f, const char *name, size_t namelen)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    return l ? l->kind : -1;
}

int fsm_sem_info(const struct fsm *f, const char *name, size_t namelen, struct fsm_sem_view *v)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    uint32_t op_limit = fsm_semlim_get(f, name, namelen);
    if ((!l && op_limit) || (l && l->kind == FSM_KIND_SEM)) {
        memset(v, 0, sizeof(*v));
        v->by_operator = op_limit != 0;
        v->limit = op_limit;
    }
    if (!l || l->kind != FSM_KIND_SEM)
        return !l && op_limit;
    v->limit = l->limit;
    v->n_holders = l->n_shared;
    v->in_use = l->in_use;
    v->n_waiters = l->n_waiters;
    v->in_lockdelay = l->in_delay;
    return 1;
}

int fsm_elect_leader(const struct fsm *f, const char *name, size_t namelen,
                     struct fsm_elect_view *v)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    if (!l || l->kind != FSM_KIND_ELECT || !l->holder)
        return 0;
    v->sid = l->holder->sid;
    v->token = l->token;
    v->value = (struct fsm_str){LX(l)->value ? LX(l)->value : "", LX(l)->value_len};
    v->rev = LX(l)->value_rev;
    v->n_candidates = l->n_waiters;
    return 1;
}

int fsm_session_info(const struct fsm *f, uint64_t sid, struct fsm_session_view *v)
{
    const struct sess *s = fsm_sess_find(f, sid);
    if (!s)
        return 0;
    v->sid = s->sid;
    v->ttl_ms = s->ttl_ms;
    v->lockdelay_ms = s->lockdelay_ms;
    v->checkpoint_ms = s->checkpoint_ms;
    v->name.p = s->name;
    v->name.len = s->name_len;
    v->owner.p = sess_owner(s);
    v->owner.len = s->owner_len;
    v->n_locks = s->n_locks;
    v->n_waits = s->n_waits;
    v->reentrant = s->reentrant;
    v->max_count = s->max_count;
    v->n_keys = s->n_keys;
    v->n_shared = s->n_shared;
    return 1;
}

/* The fsm_foreach_* walks follow the replicated orders (sessions by id, locks by name), never
 * the hash buckets: what the server derives from them at takeover (its timers, hence the order
 * of the expiries it proposes) must not depend on the process's hash key. */
void fsm_foreach_session(const struct fsm *f, void (*cb)(void *arg, uint64_t sid, uint64_t ttl_ms),
                         void *arg)
{
    for (const struct sess *s = f->sess_head; s; s = s->snext)
        cb(arg, s->sid, s->ttl_ms);
}

struct lock_walk {
    void (*waiter)(void *arg, const char *name, size_t namelen, uint64_t sid, uint64_t wait_ms);
    void (*delay)(void *arg, const char *name, size_t namelen, uint64_t delay_ms);
    void (*revoke)(void *arg, const char *name, size_t namelen, uint64_t token,
                   uint64_t deadline_ms);
    void *arg;
};

static int lock_walk_visit(void *arg, const struct onode *n)
{
    const struct lock_walk *w = arg;
    const struct lock *l = ONODE_OWNER(n, const struct lock, o);
    if (w->waiter)
        for (const struct waiter *q = l->wq_head; q; q = q->lnext)
            w->waiter(w->arg, l->name, l->name_len, q->sess->sid, q->wait_ms);
    if (w->delay && l->in_delay)
        w->delay(w->arg, l->name, l->name_len, l->lockdelay_ms);
    if (w->revoke && LX(l)->rv_token && LX(l)->rv_ms)
        w->revoke(w->arg, l->name, l->name_len, LX(l)->rv_token, LX(l)->rv_ms);
    return 0;
}

void fsm_foreach_revoke(const struct fsm *f,
                        void (*cb)(void *arg, const char *name, size_t namelen, uint64_t token,
                                   uint64_t deadline_ms),
                        void *arg)
{
    struct lock_walk w = {.revoke = cb, .arg = arg};
    fsm_otree_walk(f->lock_names, NULL, 0, lock_walk_visit, &w);
}

int fsm_lock_revoke_info(const struct fsm *f, const char *name, size_t namelen,
                         struct fsm_revoke_view *v)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    if (!l || !LX(l)->rv_token)
        return 0;
    v->token = LX(l)->rv_token;
    v->deadline_ms = LX(l)->rv_ms;
    v->reason = (struct fsm_str){LX(l)->rv_text ? LX(l)->rv_text : "", LX(l)->rv_reason_len};
    v->by = (struct fsm_str){LX(l)->rv_text ? LX(l)->rv_text + LX(l)->rv_reason_len : "",
                             LX(l)->rv_by_len};
    return 1;
}

void fsm_foreach_waiter(const struct fsm *f,
                        void (*cb)(void *arg, const char *name, size_t namelen, uint64_t sid,
                                   uint64_t wait_ms),
                        void *arg)
{
    struct lock_walk w = {.waiter = cb, .arg = arg};
    fsm_otree_walk(f->lock_names, NULL, 0, lock_walk_visit, &w);
}

void fsm_foreach_lockdelay(const struct fsm *f,
                           void (*cb)(void *arg, const char *name, size_t namelen,
                                      uint64_t delay_ms),
                           void *arg)
{
    struct lock_walk w = {.delay = cb, .arg = arg};
    fsm_otree_walk(f->lock_names, NULL, 0, lock_walk_visit, &w);
}

void fsm_stats(const struct fsm *f, struct fsm_stats *s)
{
    s->sessions = f->sessions.n;
    s->locks_held = f->n_held;
    s->waiters = f->n_waiters;
    s->locks_in_delay = f->n_delay;
    s->keys = f->n_keys;
    /* a latch or barrier counts as a lock, and so does an operator's semaphore limit */
    s->locks = f->locks.n + f->n_latches + f->n_semlims;
    s->shared_holds = f->n_shared;
    s->key_bytes = f->kv_bytes + FSM_RECORD_BYTES * s->keys;
    s->data_bytes = f->kv_bytes + f->name_bytes + f->latch_bytes + f->semlim_bytes +
                    FSM_RECORD_BYTES * (s->keys + s->locks + s->sessions + s->waiters +
                                        s->shared_holds + f->n_lparts);
}

static void to_item(const struct lock *l, struct fsm_lock_item *it)
{
    it->name.p = l->name;
    it->name.len = l->name_len;
    it->kind = l->kind;
    it->holder_sid = l->holder ? l->holder->sid : 0;
    it->token = l->token;
    it->in_lockdelay = l->in_delay;
    it->n_waiters = l->n_waiters;
    it->n_shared = l->n_shared;
    it->value = fsm_lock_holder_value(l);
    it->maxhold_ms = LX(l)->maxhold_ms;
    it->transitions = LX(l)->transitions;
    it->reentrant = l->holder && l->holder->reentrant;
    it->count = l->holder ? 1 + LX(l)->reholds : 0;
}

struct list {
    const char *prefix;
    const char *after; /* skip names <= after (alen 0: none) */
    size_t alen;
    size_t plen, limit, n;
    struct fsm_lock_item *out;
};

/* The locks with the prefix are one run from the first name >= prefix: stop at the first
 * name without it, or at the limit. */
static int list_visit(void *arg, const struct onode *n)
{
    struct list *s = arg;
    const struct lock *l = ONODE_OWNER(n, const struct lock, o);
    if (l->name_len < s->plen || (s->plen && memcmp(l->name, s->prefix, s->plen) != 0))
        return 1;
    if (s->alen && fsm_name_cmp(l->name, l->name_len, s->after, s->alen) <= 0)
        return 0;
    to_item(l, &s->out[s->n++]);
    return s->n == s->limit;
}

size_t fsm_locks_list(const struct fsm *f, const char *prefix, size_t plen, size_t limit,
                      struct fsm_lock_item *out)
{
    struct list s = {.prefix = prefix, .plen = plen, .limit = limit, .out = out};
    if (limit)
        fsm_otree_walk(f->lock_names, prefix, plen, list_visit, &s);
    return s.n;
}

size_t fsm_locks_list_after(const struct fsm *f, const char *prefix, size_t plen, const char *after,
                            size_t alen, size_t limit, struct fsm_lock_item *out)
{
    struct list s = {.prefix = prefix, .plen = plen, .limit = limit, .out = out};
    const char *from = prefix;
    size_t fromlen = plen;
    if (after && alen && fsm_name_cmp(after, alen, prefix, plen) > 0) {
        s.after = after; /* the walk starts at `after`: at most that one name is skipped */
        s.alen = alen;
        from = after;
        fromlen = alen;
    }
    if (limit)
        fsm_otree_walk(f->lock_names, from, fromlen, list_visit, &s);
    return s.n;
}
