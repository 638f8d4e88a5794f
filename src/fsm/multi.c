/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/multi.c — atomic multi-lock: LOCK_MULTI takes several locks (each exclusive or shared)
 * in one log entry, or queues on all of them, or answers NIL; never some of them.
 *
 * Owns the multi-request's rules:
 *   - a grant happens in one apply: every name, a fresh revision each, in name byte order (the
 *     payload's order), so the tokens are consecutive and the reply is the first of them;
 *   - a waiting multi-request is one waiter per name, each at the tail of its lock's FIFO, all
 *     with the enqueue revision of the one command; in the session's wait list they sit next to
 *     each other in name order (that and the shared revision are the whole representation, so a
 *     snapshot stores them as plain waiters and restore finds them again);
 *   - it is granted when it is at the head of every queue it waits in and each lock could grant
 *     it there (fsm_lock_head_grantable: the rw lock's compatibility); until then it blocks each
 *     of those queues, even a free lock's (strict FIFO: nothing queued later overtakes it);
 *   - it leaves every queue at once (CANCEL_WAIT or UNLOCK of any of its names, session end);
 *   - before it queues, deadlock detection (waitgraph.h) checks all its names at once: a wait
 *     that would close a cycle through any of them is refused -DEADLOCK and queued on none.
 * Fairness and deadlock freedom (docs/protocol.md "LOCK.MULTI"): every queue is in enqueue-
 * revision order (an upgrade, which waits only for shared holders, goes first), and a waiting
 * request holds nothing it asked for, so the oldest waiting request waits only for holders.
 *
 * Nothing here owns memory beyond the apply: waiters, locks and shared holds are lock.c's and
 * lock_shared.c's records; the scratch arrays of one op are freed before it returns.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm/waitgraph.h"

int fsm_names_next(struct fsm_names_it *it, struct fsm_str *name, bool *shared)
{
    struct rd r;
    const char *p;
    uint32_t n;
    uint8_t mode;
    rd_init(&r, it->p, it->len);
    r.off = it->off;
    if (r.off >= r.len || rd_u8(&r, &mode) || (mode & ~FSM_NAME_SHARED) ||
        fsm_rd_str(&r, &p, &n, FSM_MAX_NAME) || n == 0)
        return 0;
    it->off = r.off;
    name->p = p;
    name->len = n;
    *shared = mode & FSM_NAME_SHARED;
    return 1;
}

int fsm_names_add(struct buf *raw, const char *name, size_t len, bool shared)
{
    return buf_put_u8(raw, shared ? FSM_NAME_SHARED : 0) || buf_put_bytes(raw, name, len);
}

/* ---- the waiting request ---- */

static bool same_request(const struct waiter *x, const struct waiter *w)
{
    return x && x->rev == w->rev; /* on one session's list: one enqueueing command */
}

bool fsm_waiter_multi(const struct waiter *w)
{
    return same_request(w->sprev, w) || same_request(w->snext, w);
}

static const struct waiter *request_first(const struct waiter *w)
{
    while (same_request(w->sprev, w))
        w = w->sprev;
    return w;
}

int fsm_wait_request_foreach(const struct waiter *w,
                             int (*visit)(void *arg, const struct waiter *x), void *arg)
{
    for (const struct waiter *x = request_first(w); same_request(x, w); x = x->snext) {
        int rc = visit(arg, x);
        if (rc)
            return rc;
    }
    return 0;
}

static int blocked(void *arg, const struct waiter *x)
{
    (void)arg;
    return x->lock->wq_head != x || !fsm_lock_head_grantable(x->lock, x);
}

bool fsm_wait_request_grantable(const struct waiter *w)
{
    return !w->sess->ending && !fsm_wait_request_foreach(w, blocked, NULL);
}

static int count_shared(void *arg, const struct waiter *x)
{
    *(size_t *)arg += x->shared;
    return 0;
}

bool fsm_multi_grant(struct actx *a, struct waiter *w)
{
    if (!fsm_wait_request_grantable(w))
        return false;
    size_t nsh = 0, used = 0;
    fsm_wait_request_foreach(w, count_shared, &nsh);
    struct shold **h = nsh ? calloc(nsh, sizeof(*h)) : NULL;
    for (size_t i = 0; i < nsh && h; i++)
        if (!(h[i] = malloc(sizeof(**h)))) {
            for (size_t j = 0; j < i; j++)
                free(h[j]);
            free(h);
            h = NULL;
        }
    if (nsh && !h)
        return false; /* out of memory: it stays queued, nothing changed */
    struct lock *here = w->lock;
    struct sess *s = w->sess;
    uint64_t rev = w->rev;
    struct waiter *x = (struct waiter *)request_first(w);
    while (x && x->rev == rev) {
        struct waiter *next = x->snext;
        struct lock *l = x->lock;
        bool shared = x->shared;
        fsm_waiter_remove(a->f, x);
        if (shared)
            fsm_shold_grant_with(a, l, s, h[used++]);
        else
            fsm_lock_grant(a, l, s);
        if (l != here) /* a shared grant may let the shared requests behind it in */
            fsm_lock_todo(a, l);
        x = next;
    }
    free(h);
    return true;
}

void fsm_multi_leave(struct actx *a, struct waiter *w)
{
    uint64_t rev = w->rev;
    struct waiter *x = (struct waiter *)request_first(w);
    while (x && x->rev == rev) {
        struct waiter *next = x->snext;
        struct lock *l = x->lock;
        fsm_lock_emit(a, FSM_EV_WAIT_ENDED, x->sess->sid, 0, 0, l);
        fsm_waiter_remove(a->f, x);
        fsm_lock_todo(a, l);
        x = next;
    }
    fsm_lock_hand_on_todo(a);
}

static bool upgrade(const struct waiter *w)
{
    return !w->shared && fsm_shold_find(w->lock, w->sess);
}

const char *fsm_multi_group_bad(const struct waiter *x, const struct waiter *y)
{
    if (x->lock->kind != FSM_KIND_LOCK || y->lock->kind != FSM_KIND_LOCK)
        return "a multi-request's waiter on a semaphore or election";
    if (fsm_name_cmp(x->lock->name, x->lock->name_len, y->lock->name, y->lock->name_len) >= 0)
        return "a multi-request's waiters not on distinct names";
    if (upgrade(x) || upgrade(y))
        return "a multi-request's waiter is an upgrade";
    if (x->wait_ms != y->wait_ms)
        return "a multi-request's waiters with different waits";
    return NULL;
}

struct names_arg {
    int (*visit)(void *arg, const char *n, size_t len);
    void *arg;
};

static int visit_name(void *arg, const struct waiter *x)
{
    struct names_arg *na = arg;
    return na->visit(na->arg, x->lock->name, x->lock->name_len);
}

int fsm_wait_request_names(const struct fsm *f, const char *name, size_t namelen, uint64_t sid,
                           int (*visit)(void *arg, const char *n, size_t len), void *arg)
{
    const struct lock *l = fsm_lock_find(f, name, namelen);
    const struct sess *s = fsm_sess_find(f, sid);
    const struct waiter *w = l && s ? fsm_waiter_find(l, s) : NULL;
    struct names_arg na = {visit, arg};
    return w ? fsm_wait_request_foreach(w, visit_name, &na) : 0;
}

/* ---- a retry's truth ---- */

struct same_arg {
    struct fsm_names_it it;
    size_t seen;
};

/* Each waiter of the request, in name order, against the payload's next name and mode. */
static int differs(void *arg, const struct waiter *x)
{
    struct same_arg *m = arg;
    struct fsm_str name;
    bool shared;
    m->seen++;
    return !fsm_names_next(&m->it, &name, &shared) || (x->shared != 0) != shared ||
           fsm_name_cmp(x->lock->name, x->lock->name_len, name.p, name.len) != 0;
}

/* The token by which s holds l in the given mode, or 0. */
static uint64_t held_token(const struct lock *l, const struct sess *s, bool shared)
{
    if (!l)
        return 0;
    if (!shared)
        return l->holder == s ? l->token : 0;
    const struct shold *h = fsm_shold_find(l, s);
    return h ? h->token : 0;
}

void fsm_multi_truth(const struct fsm *f, const struct fsm_cmd_lock_multi *c, struct fsm_reply *r)
{
    const struct sess *s = fsm_sess_find(f, c->sid);
    struct fsm_names_it it;
    struct fsm_str name;
    bool shared;
    fsm_names_begin(&it, &c->names);
    bool some = fsm_names_next(&it, &name, &shared); /* the decoder checked: n >= 1 */
    const struct lock *l = s && some ? fsm_lock_find(f, name.p, name.len) : NULL;
    const struct waiter *w = l ? fsm_waiter_find(l, s) : NULL;
    if (w) {
        struct same_arg m;
        fsm_names_begin(&m.it, &c->names);
        m.seen = 0;
        if (!fsm_wait_request_foreach(w, differs, &m) && m.seen == c->names.n) {
            r->kind = FSM_REPLY_QUEUED;
            return;
        }
    } else {
        uint64_t first = s ? held_token(l, s, shared) : 0; /* a session gone holds none */
        size_t i = 1;
        while (first && fsm_names_next(&it, &name, &shared) &&
               held_token(fsm_lock_find(f, name.p, name.len), s, shared) == first + i)
            i++;
        if (first && i == c->names.n) {
            fsm_reply_int(r, first);
            return;
        }
    }
    fsm_reply_err(r,
                  PROTO_ERR " the outcome of this LOCK.MULTI is gone: the session neither waits "
                            "for nor holds all its names from it (UNLOCK what it holds and retry "
                            "with a new REQ)");
}

/* ---- LOCK_MULTI ---- */

/* One name of the request while it is checked and carried out. */
struct slot {
    struct fsm_str name;
    bool shared;
    struct lock *l;   /* the existing record, or NULL */
    struct lock *nl;  /* a new record for an absent name (allocated, not inserted) */
    struct shold *h;  /* a shared grant's record */
    struct waiter *w; /* the waiter when it queues */
};

static void slots_free(struct slot *sl, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(sl[i].nl);
        free(sl[i].h);
        free(sl[i].w);
    }
    free(sl);
}

/* ERR (true) if the session already holds or waits for the name: a multi-request takes names
 * it has nothing to do with yet (an upgrade inside it could wait for itself). */
static bool refuse_name(const struct lock *l, const struct sess *s, struct fsm_reply *r)
{
    const char *what = NULL;
    if (l->holder == s || fsm_shold_find(l, s))
        what = "holds";
    else if (fsm_waiter_find(l, s))
        what = "waits for";
    if (!what)
        return false;
    char nm[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_ERR " session %llu already %s lock %s (LOCK.MULTI takes only others)",
                  (unsigned long long)s->sid, what,
                  fsm_printable(l->name, l->name_len, nm, sizeof(nm)));
    return true;
}

/* Whether the name can be granted at once: as LOCK / LOCK_SHARED grant at once (no holder in
 * a conflicting mode, no lock-delay, nobody queued). */
static bool free_now(const struct slot *x)
{
    return fsm_lock_free_for(x->l, x->shared);
}

/* Allocate what carrying it out needs; false (all freed by the caller) if memory ran out. */
static bool slots_alloc(struct slot *sl, size_t n, bool now)
{
    for (size_t i = 0; i < n; i++) {
        struct slot *x = &sl[i];
        if (!x->l && !(x->nl = fsm_lock_alloc(x->name.p, x->name.len)))
            return false;
        if (now && x->shared && !(x->h = malloc(sizeof(*x->h))))
            return false;
        if (!now && !(x->w = fsm_waiter_new()))
            return false;
    }
    return true;
}

static struct lock *slot_lock(struct actx *a, struct slot *x)
{
    if (!x->l) {
        x->l = x->nl;
        x->nl = NULL;
        fsm_lock_insert(a->f, x->l);
    }
    return x->l;
}

static void grant_all(struct actx *a, struct slot *sl, size_t n, struct sess *s,
                      struct fsm_reply *r)
{
    uint64_t first = 0;
    for (size_t i = 0; i < n; i++) {
        struct slot *x = &sl[i];
        struct lock *l = slot_lock(a, x);
        uint64_t t = x->shared ? fsm_shold_grant_with(a, l, s, x->h) : fsm_lock_grant(a, l, s);
        x->h = NULL;
        if (i == 0)
            first = t;
    }
    fsm_reply_int(r, first);
}

static void enqueue_all(struct actx *a, struct slot *sl, size_t n, struct sess *s, uint64_t wait_ms,
                        struct fsm_reply *r)
{
    uint64_t rev = fsm_next_rev(a);
    for (size_t i = 0; i < n; i++) {
        struct slot *x = &sl[i];
        struct lock *l = slot_lock(a, x);
        struct waiter *w = x->w;
        x->w = NULL;
        w->wait_ms = wait_ms;
        w->rev = rev;
        w->shared = x->shared;
        fsm_waiter_link_lock(a->f, l, w);
        fsm_waiter_link_sess(a->f, s, w);
        fsm_lock_emit(a, FSM_EV_WAIT_STARTED, s->sid, 0, wait_ms, l);
    }
    r->kind = FSM_REPLY_QUEUED;
}

/* Whether queueing on every name would close a cycle of waits (waitgraph.h): ERR DEADLOCK in r,
 * one revision for its event, nothing queued. Only the existing locks have anyone to wait for. */
static bool deadlock_refused(struct actx *a, const struct slot *sl, size_t n, struct sess *s,
                             struct fsm_reply *r)
{
    struct fsm_wg_want *want = calloc(n, sizeof(*want));
    size_t k = 0;
    if (!want)
        return false; /* out of memory: no search, the request queues (as over the limit) */
    for (size_t i = 0; i < n; i++)
        if (sl[i].l)
            want[k++] = (struct fsm_wg_want){
                sl[i].l, (uint8_t)(sl[i].shared ? LOCK_MODE_SHARED : LOCK_MODE_EXCLUSIVE), 1};
    bool refused = fsm_deadlock_refused_n(a, s, want, k, r);
    free(want);
    return refused;
}

/*
 * LOCK_MULTI: every name is checked first (a semaphore or election: WRONGTYPE; a name the
 * session holds or waits for: ERR), so a refusal changes nothing. Then all at once if every
 * name could be granted at once, else NIL (no WAIT), -DEADLOCK if its waits would close a cycle
 * (the event's revision, nothing queued), else queued on all. Not idempotent by itself:
 * a retry is answered by the REQ table (fsm.c), or refused because the session now holds or
 * waits for the names.
 */
void fsm_op_lock_multi(struct actx *a, const struct fsm_cmd_lock_multi *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct slot *sl = calloc(c->names.n, sizeof(*sl));
    if (!sl) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    struct fsm_names_it it;
    size_t n = 0;
    bool now = true;
    fsm_names_begin(&it, &c->names);
    while (n < c->names.n && fsm_names_next(&it, &sl[n].name, &sl[n].shared)) {
        struct slot *x = &sl[n++];
        x->l = fsm_lock_find(a->f, x->name.p, x->name.len);
        if (x->l && (fsm_lock_wrongtype(x->l, FSM_KIND_LOCK, r) || refuse_name(x->l, s, r))) {
            slots_free(sl, n);
            return;
        }
        now = now && free_now(x);
    }
    if (n != c->names.n) { /* the decoder checked the list: only a hand-built one gets here */
        slots_free(sl, n);
        fsm_reply_err(r, PROTO_ERR " bad lock names");
        return;
    }
    if (!now && c->wait_ms == 0) {
        slots_free(sl, n);
        r->kind = FSM_REPLY_NIL;
        return;
    }
    if (!now && deadlock_refused(a, sl, n, s, r)) {
        slots_free(sl, n);
        return;
    }
    if (!slots_alloc(sl, n, now)) {
        slots_free(sl, n);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (now)
        grant_all(a, sl, n, s, r);
    else
        enqueue_all(a, sl, n, s, c->wait_ms, r);
    slots_free(sl, n);
}
