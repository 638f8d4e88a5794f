/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/invariants.c — fsm_check_invariants: a full audit of the state, for tests and fuzzing.
 *
 * Owns nothing. Checks the header's invariants (one exclusive holder or shared holders, never
 * both; holders and waiters alive; a session once per lock in each role; no waiter twice on a
 * lock; no grantable head waiter; upgrades only at the head; no stored free lock; tokens <=
 * revision and unique) plus the
 * structure: both directions of every intrusive list, counters, hash placement, AVL order and
 * balance, that every stored revision (sid, token, enqueue, mod_rev) is distinct, and that the
 * member table is sorted by unique ids > 0 with addresses of 1..FSM_MAX_ADDR bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define REVS_MIN_CAP 256 /* first allocation of the stored-revision list */

struct chk {
    const struct fsm *f;
    char *err;
    size_t errlen;
    uint64_t *revs;
    size_t nrevs, cap;
    uint64_t locks, waits, keys; /* sums over sessions */
    uint64_t held, delayed, waiters, leased, nkeys;
    uint64_t sholds, ssholds, swaiters; /* shared holds by lock, by session; shared waiters */
    uint64_t kv_bytes, name_bytes;      /* recomputed, against fsm.kv_bytes / name_bytes */
    uint64_t prims;                     /* semaphores and elections, against fsm.n_prims */
    uint64_t revokes;                   /* pending revokes, against fsm.n_revokes */
};

static int bad(struct chk *c, const char *what, uint64_t id)
{
    if (c->errlen)
        snprintf(c->err, c->errlen, "%s (%llu)", what, (unsigned long long)id);
    return -1;
}

static int rev_seen(struct chk *c, uint64_t rev)
{
    if (rev == 0 || rev > c->f->revision)
        return bad(c, "stored revision out of range", rev);
    if (c->nrevs == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : REVS_MIN_CAP;
        uint64_t *p = realloc(c->revs, cap * sizeof(*p));
        if (!p)
            return bad(c, "out of memory", 0);
        c->revs = p;
        c->cap = cap;
    }
    c->revs[c->nrevs++] = rev;
    return 0;
}

static int check_held_list(struct chk *c, const struct sess *s)
{
    uint32_t n = 0;
    uint64_t prev_token = 0;
    const struct lock *prev = NULL;
    for (const struct lock *l = s->held_head; l; prev = l, l = l->hnext, n++) {
        if (l->holder != s || l->hprev != prev || fsm_lock_find(c->f, l->name, l->name_len) != l)
            return bad(c, "held list of session inconsistent", s->sid);
        if (l->token <= prev_token)
            return bad(c, "held list not in token order", s->sid);
        prev_token = l->token;
    }
    if (prev != s->held_tail || n != s->n_locks)
        return bad(c, "held list tail or count wrong", s->sid);
    c->locks += n;
    return 0;
}

static int check_shared_list(struct chk *c, const struct sess *s)
{
    uint32_t n = 0;
    uint64_t prev_token = 0;
    const struct shold *prev = NULL;
    for (const struct shold *h = s->sh_head; h; prev = h, h = h->snext, n++) {
        if (h->sess != s || h->sprev != prev ||
            fsm_lock_find(c->f, h->lock->name, h->lock->name_len) != h->lock)
            return bad(c, "shared list of session inconsistent", s->sid);
        if (h->token <= prev_token)
            return bad(c, "shared list not in token order", s->sid);
        prev_token = h->token;
    }
    if (prev != s->sh_tail || n != s->n_shared)
        return bad(c, "shared list tail or count wrong", s->sid);
    c->ssholds += n;
    return 0;
}

static int check_wait_list(struct chk *c, const struct sess *s)
{
    uint32_t n = 0;
    uint64_t prev_rev = 0;
    const struct waiter *prev = NULL;
    for (const struct waiter *w = s->wait_head; w; prev = w, w = w->snext, n++) {
        if (w->sess != s || w->sprev != prev ||
            fsm_lock_find(c->f, w->lock->name, w->lock->name_len) != w->lock)
            return bad(c, "wait list of session inconsistent", s->sid);
        if (w->rev < prev_rev ||
            (w->rev == prev_rev && fsm_name_cmp(prev->lock->name, prev->lock->name_len,
                                                w->lock->name, w->lock->name_len) >= 0))
            return bad(c, "wait list not in enqueue order (a multi-request's in name order)",
                       s->sid);
        if (prev && w->rev == prev_rev && fsm_multi_group_bad(prev, w))
            return bad(c, "multi-request LOCK_MULTI cannot write", s->sid);
        prev_rev = w->rev;
    }
    if (prev != s->wait_tail || n != s->n_waits)
        return bad(c, "wait list tail or count wrong", s->sid);
    c->waits += n;
    return 0;
}

static int check_key_list(struct chk *c, const struct sess *s)
{
    uint32_t n = 0;
    const struct kv *prev = NULL;
    for (const struct kv *k = s->keys; k; prev = k, k = k->lnext, n++)
        if (k->lease != s || k->lprev != prev || fsm_kv_find(c->f, k->key, k->key_len) != k)
            return bad(c, "key list of session inconsistent", s->sid);
    if (n != s->n_keys)
        return bad(c, "key count of session wrong", s->sid);
    c->keys += n;
    return 0;
}

static int check_session(struct chk *c, const struct sess *s)
{
    if (fsm_sess_find(c->f, s->sid) != s || s->h.hash != fsm_hash_u64(s->sid))
        return bad(c, "session not findable by its sid", s->sid);
    if (s->ttl_ms == 0)
        return bad(c, "session with ttl 0", s->sid);
    if (s->checkpoint_ms >= s->ttl_ms)
        return bad(c, "session checkpoint not below its ttl", s->sid);
    if (!s->req_seq && (s->req_kind || s->req_value || s->req_err))
        return bad(c, "request table without a seq", s->sid);
    if (rev_seen(c, s->sid))
        return -1;
    c->name_bytes += s->name_len;
    return check_held_list(c, s) || check_shared_list(c, s) || check_wait_list(c, s) ||
           check_key_list(c, s);
}

static int check_lock_state(struct chk *c, const struct lock *l)
{
    uint64_t id = l->token;
    if (fsm_lock_find(c->f, l->name, l->name_len) != l)
        return bad(c, "lock not findable by its name", id);
    if (onode_key(&l->o) != l->name || l->o.key_len != l->name_len ||
        fsm_otree_find(c->f->lock_names, l->name, l->name_len) != &l->o)
        return bad(c, "lock not in the name tree", id);
    if (l->holder && l->n_shared)
        return bad(c, "lock held in both modes", id);
    if (l->holder) {
        if (fsm_sess_find(c->f, l->holder->sid) != l->holder)
            return bad(c, "lock held by a dead session", l->holder->sid);
        if (l->in_delay) /* lockdelay_ms shares held_since_ms's bytes: not checked here */
            return bad(c, "held lock in lock-delay", id);
        c->held++;
        return rev_seen(c, l->token);
    }
    if (l->token || (!l->in_delay && l->held_since_ms))
        return bad(c, "token on a lock without holder", id);
    if (!l->in_delay && !l->n_shared && !(l->wq_head && fsm_waiter_multi(l->wq_head)))
        return bad(c, "free lock stored", l->n_waiters); /* but a multi-request's queue */
    if (!l->in_delay)
        return 0;
    if (l->lockdelay_ms == 0)
        return bad(c, "lock-delay of 0 ms", 0);
    c->delayed++;
    return 0;
}

/* Shared holders: alive, in token order, each session once (sids is scratch). */
static int check_sholds(struct chk *c, const struct lock *l, uint64_t *sids)
{
    uint32_t n = 0;
    uint64_t prev_token = 0;
    const struct shold *prev = NULL;
    for (const struct shold *h = l->sh_head; h; prev = h, h = h->lnext, n++) {
        if (h->lock != l || h->lprev != prev || n >= l->n_shared)
            return bad(c, "shared holder list inconsistent", n);
        if (fsm_sess_find(c->f, h->sess->sid) != h->sess)
            return bad(c, "lock held shared by a dead session", h->sess->sid);
        if (h->token <= prev_token)
            return bad(c, "shared holders not in token order", h->token);
        if (rev_seen(c, h->token))
            return -1;
        prev_token = h->token;
        sids[n] = h->sess->sid;
    }
    if (prev != l->sh_tail || n != l->n_shared)
        return bad(c, "shared holder tail or count wrong", n);
    qsort(sids, n, sizeof(*sids), fsm_cmp_u64);
    for (uint32_t i = 1; i < n; i++)
        if (sids[i] == sids[i - 1])
            return bad(c, "session holds one lock twice", sids[i]);
    c->sholds += n;
    return 0;
}

/* A waiter's mode: a shared holder waits only to upgrade, exclusively, at the head (whose
 * enqueue revision then comes after those behind it: the order restarts after it). */
static int check_waiter_mode(struct chk *c, const struct lock *l, const struct waiter *w,
                             uint64_t *prev_rev)
{
    c->swaiters += w->shared;
    if (!fsm_shold_find(l, w->sess))
        return 0;
    if (w->shared || w != l->wq_head)
        return bad(c, "shared holder queued other than as the head upgrade", w->sess->sid);
    *prev_rev = 0;
    return 0;
}

static int check_waiters(struct chk *c, const struct lock *l, uint64_t *sids)
{
    uint32_t n = 0;
    uint64_t prev_rev = 0;
    const struct waiter *prev = NULL;
    for (const struct waiter *w = l->wq_head; w; prev = w, w = w->lnext, n++) {
        if (w->lock != l || w->lprev != prev || n >= l->n_waiters)
            return bad(c, "lock queue inconsistent", n);
        if (fsm_sess_find(c->f, w->sess->sid) != w->sess)
            return bad(c, "waiter session is dead", w->sess->sid);
        if (w->sess == l->holder)
            return bad(c, "holder queued on its own lock", w->sess->sid);
        if (w->wait_ms == 0 || w->rev <= prev_rev)
            return bad(c, "waiter without wait or out of enqueue order", w->rev);
        if ((!w->sprev || w->sprev->rev != w->rev) && rev_seen(c, w->rev))
            return -1; /* a multi-request's waiters share one revision: counted once */
        prev_rev = w->rev;
        if (check_waiter_mode(c, l, w, &prev_rev))
            return -1;
        sids[n] = w->sess->sid;
    }
    if (l->wq_head && fsm_wait_request_grantable(l->wq_head))
        return bad(c, "the head waiter could be granted (a missed grant)", l->wq_head->rev);
    if (prev != l->wq_tail || n != l->n_waiters)
        return bad(c, "lock queue tail or count wrong", n);
    qsort(sids, n, sizeof(*sids), fsm_cmp_u64);
    for (uint32_t i = 1; i < n; i++)
        if (sids[i] == sids[i - 1])
            return bad(c, "session queued twice on one lock", sids[i]);
    c->waiters += n;
    return 0;
}

/* Waiter values: only an election's candidates carry one. */
static int check_waiter_values(struct chk *c, const struct lock *l)
{
    for (const struct waiter *w = l->wq_head; w; w = w->lnext) {
        if ((w->value != NULL) != (w->value_len != 0) ||
            (w->value_len && l->kind != FSM_KIND_ELECT))
            return bad(c, "waiter value inconsistent", w->rev);
        if ((l->kind == FSM_KIND_SEM) != (w->shared != 0) && l->kind != FSM_KIND_LOCK)
            return bad(c, "semaphore waiter not shared or election candidate shared", w->rev);
        c->name_bytes += w->value_len;
    }
    return 0;
}

/* Permits: in_use is the sum of the holds' (each >= 1; 1 unless a semaphore's); a semaphore's
 * request wants 1..limit (more could never be granted). in_use may exceed a limit an operator
 * lowered (SEM_SETLIMIT): the FSM tests check that no grant ever leaves it above the limit. */
static int check_permits(struct chk *c, const struct lock *l)
{
    uint64_t sum = 0;
    for (const struct shold *h = l->sh_head; h; h = h->lnext) {
        if (h->permits == 0 || (l->kind != FSM_KIND_SEM && h->permits != 1))
            return bad(c, "hold with wrong permits", h->permits);
        sum += h->permits;
    }
    if (sum != l->in_use)
        return bad(c, "permits in use not the sum of the holds'", l->in_use);
    if (sum > FSM_MAX_SEM_LIMIT) /* no limit lets more in, and the uint32 sum would wrap */
        return bad(c, "permits in use over the largest limit", l->in_use);
    for (const struct waiter *w = l->wq_head; w && l->kind == FSM_KIND_SEM; w = w->lnext)
        if (w->permits == 0 || w->permits > l->limit)
            return bad(c, "semaphore request for 0 or more than limit permits", w->permits);
    return 0;
}

/* The kinds: a semaphore never has more than `limit` permits (and no exclusive holder); an
 * election has at most one leader (the exclusive holder: no shared holds), whose value and
 * its revision are set only while it leads. */
static int check_kind(struct chk *c, const struct lock *l)
{
    bool leader = l->kind == FSM_KIND_ELECT && l->holder;
    if (l->kind >= FSM_KIND__COUNT)
        return bad(c, "unknown object kind", l->kind);
    c->prims += l->kind != FSM_KIND_LOCK;
    if ((l->kind == FSM_KIND_SEM) != (l->limit != 0) || l->limit > FSM_MAX_SEM_LIMIT)
        return bad(c, "semaphore limit wrong", l->limit);
    if (l->kind == FSM_KIND_SEM && l->holder)
        return bad(c, "semaphore held exclusively", l->n_shared);
    if (check_permits(c, l))
        return -1;
    if (l->kind == FSM_KIND_ELECT && l->n_shared)
        return bad(c, "election with shared holders", l->n_shared);
    if ((LX(l)->value != NULL) != (LX(l)->value_len != 0) || (LX(l)->value_len && !leader))
        return bad(c, "leader value without a leader", LX(l)->value_len);
    if (leader != (LX(l)->value_rev != 0) || (leader && LX(l)->value_rev < l->token))
        return bad(c, "leader value revision wrong", LX(l)->value_rev);
    if (leader && LX(l)->value_rev != l->token && rev_seen(c, LX(l)->value_rev))
        return -1;
    c->name_bytes += LX(l)->value_len;
    return check_waiter_values(c, l);
}

/* A pending revoke belongs to the current exclusive grant of a lock (revoke.c). */
static int check_revoke(struct chk *c, const struct lock *l)
{
    if (!LX(l)->rv_token)
        return LX(l)->rv_ms || LX(l)->rv_text
                   ? bad(c, "revoke fields without a revoke", LX(l)->rv_ms)
                   : 0;
    c->revokes++;
    if (l->kind != FSM_KIND_LOCK || !l->holder || LX(l)->rv_token != l->token)
        return bad(c, "pending revoke not of the current exclusive grant", LX(l)->rv_token);
    if ((LX(l)->rv_text != NULL) != (LX(l)->rv_reason_len + LX(l)->rv_by_len != 0))
        return bad(c, "revoke text inconsistent", LX(l)->rv_token);
    return 0;
}

/* Lock metadata (lockmeta.c): a value and a max hold only on an exclusive grant of a lock,
 * or on an exclusive request for one; their bytes in name_bytes. */
static int check_lockmeta(struct chk *c, const struct lock *l)
{
    if ((LX(l)->hv != NULL) != (LX(l)->hv_len != 0) || LX(l)->maxhold_ms > FSM_MAX_MAXHOLD_MS)
        return bad(c, "lock value inconsistent", LX(l)->hv_len);
    if ((LX(l)->hv || LX(l)->maxhold_ms) && (l->kind != FSM_KIND_LOCK || !l->holder))
        return bad(c, "grant metadata without an exclusive holder", LX(l)->maxhold_ms);
    if ((LX(l)->transitions || LX(l)->lm_on) && l->kind != FSM_KIND_LOCK)
        return bad(c, "lock metadata on another kind than a lock", LX(l)->transitions);
    if ((LX(l)->transitions || LX(l)->hv || LX(l)->maxhold_ms) && !LX(l)->lm_on)
        return bad(c, "lock metadata on a record no LOCK_META reached", LX(l)->transitions);
    c->name_bytes += LX(l)->hv_len;
    for (const struct waiter *w = l->wq_head; w; w = w->lnext) {
        if ((w->hv != NULL) != (w->hv_len != 0) || w->maxhold_ms > FSM_MAX_MAXHOLD_MS)
            return bad(c, "waiter lock value inconsistent", w->rev);
        if ((w->hv || w->maxhold_ms) && (l->kind != FSM_KIND_LOCK || w->shared || !LX(l)->lm_on))
            return bad(c, "request metadata on a shared request or another kind", w->rev);
        c->name_bytes += w->hv_len;
    }
    return 0;
}

static int check_lock(struct chk *c, const struct lock *l)
{
    if (check_lock_state(c, l) || check_kind(c, l) || check_revoke(c, l) || check_lockmeta(c, l))
        return -1;
    c->name_bytes += l->name_len;
    uint32_t most = l->n_waiters > l->n_shared ? l->n_waiters : l->n_shared;
    uint64_t *sids = malloc((most + 1) * sizeof(*sids));
    if (!sids)
        return bad(c, "out of memory", 0);
    int rc = check_sholds(c, l, sids) || check_waiters(c, l, sids);
    free(sids);
    return rc;
}

/* Key metadata; the tree's order and balance are fsm_otree_check's. */
static int check_key(void *arg, const struct onode *n)
{
    struct chk *c = arg;
    const struct kv *k = ONODE_OWNER(n, const struct kv, o);
    if (onode_key(&k->o) != k->key || k->o.key_len != k->key_len)
        return bad(c, "key node names another key", k->mod_rev);
    if (k->key_len == 0 || k->create_rev == 0 || k->create_rev > k->mod_rev || k->version == 0 ||
        (k->version == 1) != (k->create_rev == k->mod_rev))
        return bad(c, "bad key metadata", k->mod_rev);
    if (k->lease && (fsm_sess_find(c->f, k->lease->sid) != k->lease))
        return bad(c, "key leased to a dead session", k->lease->sid);
    c->leased += k->lease != NULL;
    c->nkeys++;
    c->kv_bytes += k->key_len + k->value_len;
    return rev_seen(c, k->mod_rev);
}

/* The sid-ordered session list: every session once, strictly increasing, links consistent. */
static int check_sess_list(struct chk *c)
{
    const struct fsm *f = c->f;
    size_t n = 0;
    const struct sess *prev = NULL;
    for (const struct sess *s = f->sess_head; s; prev = s, s = s->snext, n++) {
        if (s->sprev != prev || (prev && prev->sid >= s->sid))
            return bad(c, "session list out of sid order", s->sid);
        if (fsm_sess_find(f, s->sid) != s)
            return bad(c, "listed session not in the table", s->sid);
    }
    if (prev != f->sess_tail || n != f->sessions.n)
        return bad(c, "session list and session table differ", n);
    return 0;
}

static int check_trees(struct chk *c)
{
    size_t n;
    if (fsm_otree_check(c->f->keys, &n))
        return bad(c, "key tree out of order or unbalanced", n);
    if (fsm_otree_check(c->f->lock_names, &n))
        return bad(c, "lock name tree out of order or unbalanced", n);
    if (n != c->f->locks.n)
        return bad(c, "lock name tree and lock table differ in size", n);
    return fsm_otree_walk(c->f->keys, NULL, 0, check_key, c);
}

static int check_members(struct chk *c)
{
    const struct fsm *f = c->f;
    if (f->n_members > FSM_MAX_MEMBERS)
        return bad(c, "member table over its limit", f->n_members);
    for (uint32_t i = 0; i < f->n_members; i++) {
        const struct member *m = &f->members[i];
        if (m->id == 0 || (i > 0 && m->id <= f->members[i - 1].id))
            return bad(c, "member ids not strictly increasing", m->id);
        if (m->client_len == 0 || m->client_len > FSM_MAX_ADDR || m->raft_len == 0 ||
            m->raft_len > FSM_MAX_ADDR)
            return bad(c, "member address length out of bounds", m->id);
        if (m->http_len > FSM_MAX_ADDR || (!m->http_len && m->http_flags) ||
            (m->http_flags & ~FSM_MEMBER_HTTP_TLS))
            return bad(c, "member http address out of bounds", m->id);
    }
    return 0;
}

/* The usage index (usage.c) against a recount: every owner's sessions, waits and bytes, and
 * every session owner counted. */
static int check_usage(struct chk *c)
{
    const struct fsm *f = c->f;
    uint64_t counted = 0;
    for (uint32_t i = 0; i < f->n_uses; i++) {
        const struct fsm_use *u = &f->uses[i];
        uint64_t n = 0, w = 0, b = 0;
        for (const struct sess *s = f->sess_head; s; s = s->snext)
            if (s->owner_len == u->len && memcmp(sess_owner(s), u->name, u->len) == 0) {
                n++;
                w += s->n_waits;
                b += FSM_RECORD_BYTES * (1 + (uint64_t)s->n_waits) + s->name_len;
            }
        if (n != u->sessions || w != u->waiters || b != u->bytes)
            return bad(c, "usage by owner differs from a recount (sessions)", u->sessions);
        counted += n;
    }
    uint64_t owned = 0;
    for (const struct sess *s = f->sess_head; s; s = s->snext)
        owned += s->owner_len != 0;
    if (owned != counted)
        return bad(c, "a session owner is missing from the usage index", owned);
    return 0;
}

static int check_all(struct chk *c)
{
    const struct fsm *f = c->f;
    if (check_members(c))
        return -1;
    for (size_t i = 0; i < f->sessions.nb; i++)
        for (const struct hlink *x = f->sessions.b[i]; x; x = x->next)
            if (check_session(c, (const struct sess *)x))
                return -1;
    for (size_t i = 0; i < f->locks.nb; i++)
        for (const struct hlink *x = f->locks.b[i]; x; x = x->next)
            if (check_lock(c, (const struct lock *)x))
                return -1;
    if (check_trees(c) || check_sess_list(c) || check_usage(c))
        return -1;
    if (c->held != f->n_held || c->held != c->locks)
        return bad(c, "held lock count wrong", c->held);
    if (c->waiters != f->n_waiters || c->waiters != c->waits)
        return bad(c, "waiter count wrong", c->waiters);
    if (c->sholds != f->n_shared || c->sholds != c->ssholds || c->swaiters != f->n_swaiters)
        return bad(c, "shared hold or shared waiter count wrong", c->sholds);
    if (c->delayed != f->n_delay || c->nkeys != f->n_keys || c->leased != c->keys)
        return bad(c, "lock-delay or key count wrong", c->nkeys);
    if (c->prims != f->n_prims)
        return bad(c, "semaphore and election count wrong", c->prims);
    if (c->revokes != f->n_revokes)
        return bad(c, "pending revoke count wrong", c->revokes);
    const char *reent = fsm_reent_check(f);
    if (reent)
        return bad(c, reent, f->n_reent);
    if (c->kv_bytes != f->kv_bytes || c->name_bytes != f->name_bytes)
        return bad(c, "data byte accounting wrong", c->kv_bytes + c->name_bytes);
    if (c->nrevs > 1)
        qsort(c->revs, c->nrevs, sizeof(*c->revs), fsm_cmp_u64);
    for (size_t i = 1; i < c->nrevs; i++)
        if (c->revs[i] == c->revs[i - 1])
            return bad(c, "a revision is stored twice (sid, token, enqueue or mod_rev)",
                       c->revs[i]);
    return 0;
}

int fsm_check_invariants(const struct fsm *f, char *err, size_t errlen)
{
    struct chk c = {.f = f, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    int rc = check_all(&c);
    if (!rc)
        rc = fsm_latch_check(f, err, errlen); /* latch.c's records */
    free(c.revs);
    if (!rc) /* the lock history keeps its own invariants (history.c) */
        rc = fsm_history_check(f, err, errlen);
    if (!rc) /* operators' semaphore limits (semlimit.c) */
        rc = fsm_semlim_check(f, err, errlen);
    return rc;
}
