/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/waitgraph.c — the wait-for graph's rule and the deadlock search (waitgraph.h).
 *
 * The search has three phases, none recursive (a chain of a million waiters must not recurse a
 * million frames deep): collect the graph reachable from the victim's new request breadth
 * first (sessions are numbered through their wg_index, valid for the current fsm.wg_epoch);
 * find who can proceed, from the sessions that wait for nobody backwards along the edges (the
 * least fixed point: what is left is stuck, exactly the deadlocked set); if the victim is
 * stuck, walk breadth first along the edges that keep sessions stuck back to the victim: the
 * shortest such cycle is the one named. Each phase is linear in what phase 1 collected, which
 * the limit bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm/waitgraph.h"

#define WG_MIN_CAP 32
#define WG_NAME_SHOWN 24 /* bytes of a name in the ERR text (the event carries whole names) */
/* Hops the DEADLOCK event's cycle text names (whole names: at most this many times
 * FSM_MAX_NAME bytes); a longer cycle ends in "... -> V" (the count is the event's ms). */
#define WG_EVENT_HOPS 64

/* ---- the rule ---- */

/* weight 0: an AND edge; else an OR edge worth `weight` permits (a semaphore's holder) */
typedef void (*edge_fn)(void *arg, const struct sess *to, uint32_t weight);

/* The permits a semaphore request heading the FIFO needs released before it fits (0: none). */
static uint64_t sem_need(const struct lock *l, uint32_t permits, const struct waiter *prev)
{
    uint64_t want = (uint64_t)l->in_use + (permits ? permits : 1);
    return l->kind == FSM_KIND_SEM && !prev && want > l->limit ? want - l->limit : 0;
}

/*
 * The queue pass: one forward walk of l's FIFO records, for each waiter, the nearest exclusive
 * request at or before it (wg_e: itself if exclusive; an upgrade counts as exclusive) and the
 * nearest multi-request at or before it but after wg_e (wg_m; NULL at an exclusive one). The
 * multi-requests between wg_e and a waiter are then the chain m, m->lprev->wg_m, ... (it ends
 * at wg_e, whose wg_m is NULL), so a request's edges cost what they are, not the length of the
 * shared run before it: k shared waiters are O(k) to read, not O(k^2).
 */
static void queue_pass(struct lock *l)
{
    const struct waiter *e = NULL, *m = NULL;
    for (struct waiter *w = l->wq_head; w; w = w->lnext) {
        if (!w->shared)
            e = w, m = NULL;
        else if (fsm_waiter_multi(w))
            m = w;
        w->wg_e = e;
        w->wg_m = m;
    }
}

/* The next multi-request before q (one of a wg_m chain) down to the run's exclusive request. */
static const struct waiter *multi_before(const struct waiter *q)
{
    return q->lprev ? q->lprev->wg_m : NULL;
}

/*
 * The edges of a request by `s` on `l` (shared or not) whose FIFO predecessor is `prev` (NULL
 * at the head), by THE RULE; l's queue pass must be current (queue_pass). Returns the edges it
 * gave; it stops once over `budget` (a semaphore with a million holders costs no more than the
 * limit).
 */
static size_t request_edges(const struct lock *l, const struct sess *s, bool shared,
                            uint32_t permits, const struct waiter *prev, size_t budget, edge_fn fn,
                            void *arg)
{
    size_t steps = 0;
    if (l->kind == FSM_KIND_SEM) {
        if (prev) {
            fn(arg, prev->sess, 0);
            return 1;
        }
        if (sem_need(l, permits, prev))
            for (const struct shold *h = l->sh_head; h && steps <= budget; h = h->lnext)
                if (h->sess != s) {
                    fn(arg, h->sess, h->permits ? h->permits : 1);
                    steps++;
                }
        return steps;
    }
    const struct waiter *e = prev ? prev->wg_e : NULL; /* the nearest earlier exclusive request */
    if (e) {
        fn(arg, e->sess, 0);
        steps++;
    } else {
        if (l->holder && l->holder != s) {
            fn(arg, l->holder, 0);
            steps++;
        }
        if (!shared)
            for (const struct shold *h = l->sh_head; h && steps <= budget; h = h->lnext)
                if (h->sess != s) {
                    fn(arg, h->sess, 0);
                    steps++;
                }
    }
    /* The shared requests between e (or the head) and this one: an exclusive request waits
     * for all of them (every one is an edge); a shared one only for the multi-requests among
     * them, which block the queue until all their names can be granted (a single shared
     * request ahead of it is granted with it, or waits for what it waits for). */
    if (!shared)
        for (const struct waiter *q = prev; q != e && steps <= budget; q = q->lprev, steps++)
            fn(arg, q->sess, 0);
    else
        for (const struct waiter *q = prev ? prev->wg_m : NULL; q && steps <= budget;
             q = multi_before(q), steps++)
            fn(arg, q->sess, 0);
    return steps;
}

/* ---- the search ---- */

struct node {
    struct sess *s;
    uint32_t first_req, n_req;
    uint32_t unsat;    /* requests not yet known to be grantable */
    bool free;         /* can proceed (least fixed point) */
    bool seen;         /* reached by the cycle walk */
    uint32_t parent;   /* the walk's edge into it */
    uint32_t in_first; /* its in-edges in `in` */
};

struct req {
    uint32_t node;
    uint32_t first_edge, n_edge;
    uint32_t and_left; /* AND edges to sessions not yet known to be free */
    uint32_t n_or;
    uint64_t need, have; /* OR edges: the weight needed; that of those found free so far */
    bool or_ok;          /* no OR edge, or those to free sessions weigh at least `need` */
};

struct edge {
    uint32_t req, to;
    const struct lock *via;
    uint32_t weight; /* 0: AND; else OR (permits) */
};

struct search {
    struct fsm *f;
    struct node *n;
    struct req *r;
    struct edge *e;
    uint32_t *in, *work;
    size_t nn, capn, nr, capr, ne, cape;
    uint64_t steps, limit; /* sessions added + edges read, and the bound on them */
    bool failed;           /* out of memory: the search gives up */
    bool over;             /* over the limit: the sessions not yet expanded count as free */
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : WG_MIN_CAP;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* The node of session y, added (to be expanded in turn) if new; UINT32_MAX on failure. */
static uint32_t node_of(struct search *x, struct sess *y)
{
    if (y->wg_epoch == x->f->wg_epoch)
        return y->wg_index;
    if (x->nn >= UINT32_MAX - 1 || grow((void **)&x->n, &x->capn, x->nn + 1, sizeof(*x->n))) {
        x->failed = true;
        return UINT32_MAX;
    }
    y->wg_epoch = x->f->wg_epoch;
    y->wg_index = (uint32_t)x->nn;
    x->n[x->nn] = (struct node){.s = y};
    x->steps++;
    return (uint32_t)x->nn++;
}

static void collect(void *arg, const struct sess *to, uint32_t weight)
{
    struct search *x = arg;
    if (x->failed)
        return;
    uint32_t t = node_of(x, (struct sess *)to);
    if (t == UINT32_MAX || grow((void **)&x->e, &x->cape, x->ne + 1, sizeof(*x->e))) {
        x->failed = true;
        return;
    }
    struct req *rq = &x->r[x->nr - 1];
    x->e[x->ne++] = (struct edge){(uint32_t)(x->nr - 1), t, NULL, weight};
    x->steps++;
    rq->n_edge++;
    if (weight)
        rq->n_or++;
    else
        rq->and_left++;
}

/* One request of node `u` (the session's, or the victim's new one). */
static void add_request(struct search *x, uint32_t u, const struct lock *l, bool shared,
                        uint32_t permits, const struct waiter *prev)
{
    if (grow((void **)&x->r, &x->capr, x->nr + 1, sizeof(*x->r))) {
        x->failed = true;
        return;
    }
    x->r[x->nr++] =
        (struct req){.node = u, .first_edge = (uint32_t)x->ne, .need = sem_need(l, permits, prev)};
    if (l->kind != FSM_KIND_SEM && l->wg_epoch != x->f->wg_epoch) {
        queue_pass((struct lock *)l); /* once per lock and search: scratch, not state */
        ((struct lock *)l)->wg_epoch = x->f->wg_epoch;
    }
    size_t e0 = x->ne;
    size_t budget = x->steps < x->limit ? (size_t)(x->limit - x->steps) : 0;
    request_edges(l, x->n[u].s, shared, permits, prev, budget, collect, x);
    for (size_t i = e0; i < x->ne; i++)
        x->e[i].via = l;
    if (x->steps > x->limit)
        x->over = true;
}

/* Phase 1: the graph reachable from the victim's new request, breadth first. Node 0 is the
 * victim, with that request alone (its other waits are what it had before): one request per
 * name it would queue on, so it proceeds only once every name can be granted (a multi-lock's
 * all-or-nothing).
 * Over the limit, the session being expanded loses the requests read so far and it and every
 * session not yet expanded keep none: they count as free. Freeing sessions only frees more
 * (the fixed point is monotone), so a victim still stuck is stuck in the whole graph too, along
 * edges of expanded sessions only: a refusal then is never a false one, and as the walk's
 * order is fixed every replica stops at the same session. */
static void collect_graph(struct search *x, struct sess *victim, const struct fsm_wg_want *want,
                          size_t n)
{
    node_of(x, victim);
    for (size_t u = 0; u < x->nn && !x->failed && !x->over; u++) {
        size_t nr0 = x->nr, ne0 = x->ne;
        x->n[u].first_req = (uint32_t)nr0;
        if (u == 0)
            for (size_t i = 0; i < n && !x->failed && !x->over; i++)
                add_request(x, 0, want[i].l, want[i].mode == LOCK_MODE_SHARED, want[i].permits,
                            want[i].mode == LOCK_MODE_UPGRADE ? NULL : want[i].l->wq_tail);
        else
            for (const struct waiter *w = x->n[u].s->wait_head; w && !x->failed && !x->over;
                 w = w->snext)
                add_request(x, (uint32_t)u, w->lock, w->shared, w->permits, w->lprev);
        if (x->over) { /* its requests so far go: it counts as free, as the rest */
            x->nr = nr0;
            x->ne = ne0;
        }
        x->n[u].n_req = (uint32_t)(x->nr - nr0);
    }
}

static bool req_ok(const struct req *r)
{
    return r->and_left == 0 && r->or_ok;
}

/* Phase 2: who can proceed, from the sessions that wait for nobody, along the edges backwards
 * (a session proceeds once every request of it can be granted). */
static int propagate(struct search *x)
{
    x->in = calloc(x->ne + 1, sizeof(*x->in));
    x->work = calloc(x->nn + 1, sizeof(*x->work));
    if (!x->in || !x->work)
        return -1;
    for (size_t i = 0; i < x->ne; i++) /* in-edges by target: counts, then offsets */
        x->n[x->e[i].to].in_first++;
    uint32_t sum = 0;
    for (size_t u = 0; u < x->nn; u++) {
        uint32_t c = x->n[u].in_first;
        x->n[u].in_first = sum;
        sum += c;
    }
    uint32_t *fill = x->work; /* borrowed as a cursor array first */
    for (size_t u = 0; u < x->nn; u++)
        fill[u] = x->n[u].in_first;
    for (size_t i = 0; i < x->ne; i++)
        x->in[fill[x->e[i].to]++] = (uint32_t)i;
    size_t nw = 0;
    for (size_t u = 0; u < x->nn; u++) {
        struct node *nd = &x->n[u];
        for (uint32_t k = 0; k < nd->n_req; k++) {
            struct req *r = &x->r[nd->first_req + k];
            r->or_ok = r->n_or == 0;
            nd->unsat += !req_ok(r);
        }
        if (!nd->unsat) {
            nd->free = true;
            x->work[nw++] = (uint32_t)u;
        }
    }
    for (size_t h = 0; h < nw; h++) {
        uint32_t t = x->work[h];
        uint32_t end = t + 1 < x->nn ? x->n[t + 1].in_first : (uint32_t)x->ne;
        for (uint32_t k = x->n[t].in_first; k < end; k++) {
            const struct edge *ed = &x->e[x->in[k]];
            struct req *r = &x->r[ed->req];
            if (req_ok(r))
                continue;
            if (ed->weight)
                r->or_ok = (r->have += ed->weight) >= r->need;
            else
                r->and_left--;
            struct node *nd = &x->n[r->node];
            if (req_ok(r) && --nd->unsat == 0 && !nd->free) {
                nd->free = true;
                x->work[nw++] = r->node;
            }
        }
    }
    return 0;
}

/* Phase 3: the shortest walk from the victim back to it along edges that keep a session from
 * proceeding (an AND edge to a stuck session; an OR edge of a request none of whose OR edges
 * leads to a free one). Its last edge's index, or -1 if the victim is stuck only behind a
 * deadlock it is not part of (one a search that gave up let in). */
static long cycle_walk(struct search *x)
{
    size_t nw = 0;
    x->work[nw++] = 0;
    x->n[0].seen = true;
    for (size_t h = 0; h < nw; h++) {
        const struct node *u = &x->n[x->work[h]];
        for (uint32_t k = 0; k < u->n_req; k++) {
            const struct req *r = &x->r[u->first_req + k];
            if (req_ok(r))
                continue;
            for (uint32_t i = r->first_edge; i < r->first_edge + r->n_edge; i++) {
                const struct edge *ed = &x->e[i];
                struct node *t = &x->n[ed->to];
                if (t->free || (ed->weight && r->or_ok))
                    continue;
                if (ed->to == 0)
                    return (long)i;
                if (!t->seen) {
                    t->seen = true;
                    t->parent = i;
                    x->work[nw++] = ed->to;
                }
            }
        }
    }
    return -1;
}

static int unmark_lock(void *arg, const struct onode *o)
{
    (void)arg;
    ONODE_OWNER(o, struct lock, o)->wg_epoch = 0;
    return 0;
}

static void new_epoch(struct fsm *f)
{
    if (++f->wg_epoch == 0) { /* wrapped: forget every mark */
        for (struct sess *s = f->sess_head; s; s = s->snext)
            s->wg_epoch = 0;
        fsm_otree_walk(f->lock_names, "", 0, unmark_lock, NULL);
        f->wg_epoch = 1;
    }
}

/* ---- the cycle's text ---- */

/* "V -name-> S2 -name-> ... -> V" into b (path: the cycle's edges in order), names cut to
 * `shown` bytes (0: whole), printable; hops stop once b holds more than max_len bytes (the ERR
 * reply keeps FSM_ERR_LEN - 1 of them), or after max_hops of them ("... -> V" then). */
static int cycle_text(struct buf *b, const struct search *x, const uint32_t *path, size_t hops,
                      size_t shown, size_t max_len, size_t max_hops)
{
    char nm[FSM_MAX_NAME + sizeof(FSM_ELLIPSIS) + 1];
    size_t cap = shown ? shown + sizeof(FSM_ELLIPSIS) : sizeof(nm);
    int rc = 0;
    size_t i = 0;
    for (; i < hops && i < max_hops && b->len <= max_len; i++) { /* past max_len: cut anyway */
        const struct edge *ed = &x->e[path[i]];
        const struct sess *from = x->n[x->r[ed->req].node].s;
        rc = rc || buf_printf(b, "%llu -%s-> ", (unsigned long long)from->sid,
                              fsm_printable(ed->via->name, ed->via->name_len, nm, cap));
    }
    if (i < hops && i == max_hops)
        rc = rc || buf_printf(b, FSM_ELLIPSIS " -> ");
    return rc || buf_printf(b, "%llu", (unsigned long long)x->n[0].s->sid);
}

/* The event names the lock of the cycle's first edge: the victim's (one of a multi-lock's
 * names, the one through which the cycle closes). */
static void refuse(struct actx *a, struct sess *s, const struct search *x, const uint32_t *path,
                   size_t hops, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    const struct lock *l = x->e[path[0]].via;
    struct buf shortb;
    buf_init(&shortb);
    buf_reset(&f->wg_text);
    cycle_text(&f->wg_text, x, path, hops, 0, SIZE_MAX, WG_EVENT_HOPS);
    if (cycle_text(&shortb, x, path, hops, WG_NAME_SHOWN, FSM_ERR_LEN, SIZE_MAX) == 0 && shortb.len)
        fsm_reply_err(r, PROTO_DEADLOCK " cycle of %zu: %.*s", hops, (int)shortb.len, shortb.p);
    else
        fsm_reply_err(r, PROTO_DEADLOCK " cycle of %zu sessions", hops);
    buf_free(&shortb);
    size_t n = strlen(r->err);
    if (n == FSM_ERR_LEN - 1) /* cut: say so */
        memcpy(r->err + n - (sizeof(FSM_ELLIPSIS) - 1), FSM_ELLIPSIS, sizeof(FSM_ELLIPSIS) - 1);
    fsm_next_rev(a); /* the event's id: nothing else changes */
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_DEADLOCK, s->sid, 0, hops, l);
    if (e && !buf_failed(&f->wg_text))
        e->value = (struct fsm_str){f->wg_text.p ? f->wg_text.p : "", (uint32_t)f->wg_text.len};
}

static void search_free(struct search *x)
{
    free(x->n);
    free(x->r);
    free(x->e);
    free(x->in);
    free(x->work);
}

/* The cycle's edges in order into *path (malloc'd); its length, 0 if none, -1 if out of
 * memory (x->over: the search stopped at the limit, what it read decided). */
static long find_cycle(struct search *x, struct sess *s, const struct fsm_wg_want *want, size_t n,
                       uint32_t **path)
{
    collect_graph(x, s, want, n);
    if (x->failed || propagate(x))
        return -1;
    if (x->n[0].free)
        return 0;
    long last = cycle_walk(x);
    if (last < 0)
        return 0;
    size_t hops = 1;
    for (uint32_t u = x->r[x->e[last].req].node; u != 0; u = x->r[x->e[x->n[u].parent].req].node)
        hops++;
    if (!(*path = malloc(hops * sizeof(**path))))
        return -1;
    size_t i = hops;
    (*path)[--i] = (uint32_t)last;
    for (uint32_t u = x->r[x->e[last].req].node; u != 0; u = x->r[x->e[x->n[u].parent].req].node)
        (*path)[--i] = x->n[u].parent;
    return (long)hops;
}

bool fsm_deadlock_refused_n(struct actx *a, struct sess *s, const struct fsm_wg_want *want,
                            size_t n, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    if (!f->wg_limit || fsm_format(f) < FSM_FORMAT_2 || n == 0)
        return false;
    /* A cycle through s needs someone waiting for s: for what it holds, or behind one of its
     * queued requests (the FIFO edges). A session that holds nothing and waits for nothing yet
     * (the common client of one lock at a time) cannot close one, and the search would walk
     * the whole queue it joins on every enqueue (O(n^2) to build a queue of n). */
    if (!s->held_head && !s->sh_head && !s->wait_head)
        return false;
    new_epoch(f);
    struct search x = {.f = f, .limit = f->wg_limit};
    uint32_t *path = NULL;
    long hops = find_cycle(&x, s, want, n, &path);
    if (hops > 0)
        refuse(a, s, &x, path, (size_t)hops, r);
    else if (hops < 0 || x.over)
        fsm_lock_emit(a, FSM_EV_DEADLOCK_LIMIT, s->sid, 0, x.steps, want[0].l);
    free(path);
    search_free(&x);
    return hops > 0;
}

/* ---- settings and queries ---- */

void fsm_set_deadlock_limit(struct fsm *f, uint64_t limit)
{
    f->wg_flag = limit > FSM_DEADLOCK_LIMIT_MAX ? FSM_DEADLOCK_LIMIT_MAX : limit;
}

uint64_t fsm_deadlock_flag(const struct fsm *f)
{
    return f->wg_flag;
}

uint64_t fsm_deadlock_limit(const struct fsm *f)
{
    return f->wg_limit;
}

void fsm_op_deadlock_limit(struct actx *a, const struct fsm_cmd_deadlock_limit *c,
                           struct fsm_reply *r)
{
    if (c->limit > FSM_DEADLOCK_LIMIT_MAX) {
        fsm_reply_err(r, PROTO_ERR " deadlock search limit %llu is over %llu",
                      (unsigned long long)c->limit, (unsigned long long)FSM_DEADLOCK_LIMIT_MAX);
        return;
    }
    if (c->limit != a->f->wg_limit) {
        a->f->wg_limit = c->limit;
        fsm_next_rev(a);
    }
    r->kind = FSM_REPLY_OK;
}

struct query_arg {
    void (*cb)(void *arg, uint64_t blocker, bool any);
    void *arg;
};

static void query_edge(void *arg, const struct sess *to, uint32_t weight)
{
    struct query_arg *q = arg;
    q->cb(q->arg, to->sid, weight != 0);
}

void fsm_waiter_waits_for(const struct fsm *f, const char *name, size_t namelen, uint64_t sid,
                          void (*cb)(void *arg, uint64_t blocker, bool any), void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    const struct sess *s = fsm_sess_find(f, sid);
    const struct waiter *w = l && s ? fsm_waiter_find(l, s) : NULL;
    struct query_arg q = {cb, arg};
    if (!w)
        return;
    queue_pass((struct lock *)l); /* scratch only: a later search makes its own pass */
    request_edges(l, s, w->shared, w->permits, w->lprev, SIZE_MAX, query_edge, &q);
}

struct foreach_arg {
    void (*edge)(void *arg, uint64_t blocker, bool any);
    void *arg;
    size_t given;
};

static void foreach_edge(void *arg, const struct sess *to, uint32_t weight)
{
    struct foreach_arg *q = arg;
    q->given++;
    q->edge(q->arg, to->sid, weight != 0);
}

void fsm_lock_waits_foreach(const struct fsm *f, const char *name, size_t namelen, size_t max_edges,
                            void (*waiter)(void *arg, uint64_t sid),
                            void (*edge)(void *arg, uint64_t blocker, bool any), void *arg)
{
    struct lock *l = fsm_lock_find(f, name, namelen);
    if (!l)
        return;
    queue_pass(l); /* scratch only: a later search makes its own pass */
    struct foreach_arg q = {edge, arg, 0};
    for (const struct waiter *w = l->wq_head; w; w = w->lnext) {
        waiter(arg, w->sess->sid);
        /* past max_edges a request's walk stops after one edge more (the caller's sign that
         * its list was cut): the work stays the queue's length plus max_edges */
        size_t budget = q.given < max_edges ? max_edges - q.given : 0;
        request_edges(l, w->sess, w->shared, w->permits, w->lprev, budget, foreach_edge, &q);
    }
}
