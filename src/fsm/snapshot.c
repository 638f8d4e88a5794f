/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/snapshot.c — deterministic snapshot bytes and a fully validating restore.
 *
 * Owns the snapshot format (versions 2 to 8; varint = canonical LEB128, str = varint length
 * + bytes):
 *
 *   "FLSM" u8 version, varint revision, v5 only: varint format (2..FSM_FORMAT_MAX; v6: or 0),
 *   v7 only: varint deadlock search limit (0..FSM_DEADLOCK_LIMIT_MAX, not the default),
 *   varint n_sessions, per session in sid order:
 *     varint sid, ttl_ms, lockdelay_ms, checkpoint_ms; str name;
 *     v4 only: str owner (0..FSM_MAX_USER);
 *     varint req_seq;
 *     if req_seq: u8 reply kind; INT: varint value; ERR: str text (may be empty: not retained);
 *       v4 only: varint req_digest (0 = not recorded)
 *   varint n_locks, per lock in name byte order:
 *     str name; v4 only: u8 kind (0 lock, 1 semaphore, 2 election, 3 weighted semaphore:
 *       snap_prims.c), semaphore: varint limit;
 *     varint holder_sid (0 = none); if holder: varint token, held_since_ms;
 *     v4 only, an election's holder (its leader): str value, varint value_rev;
 *     v3 only: varint n_shared; per shared hold in token order: varint sid, token,
 *       held_since_ms, a weighted semaphore's: varint permits;
 *     u8 flags (bit 0: in lock-delay; v6 only, bit 1: a pending revoke of the holder's grant);
 *       if in delay: varint lockdelay_ms; if revoke: varint deadline_ms (0 = asked only),
 *       str reason, str by (0..FSM_MAX_NAME each);
 *     varint n_waiters; per waiter in FIFO order: varint sid, wait_ms, enqueue revision;
 *       v3 only: u8 mode (0 exclusive, 1 shared); v4 only, an election's: str value, a
 *       weighted semaphore's: varint permits
 *   varint n_keys, per key in byte order:
 *     str key, str value; varint create_rev, mod_rev, version, lease_sid (0 = none)
 *   varint n_members (<= FSM_MAX_MEMBERS), per member in increasing id order:
 *     varint id (> 0); str client_addr, str raft_addr (1..FSM_MAX_ADDR bytes each)
 *   v8 only: the tagged sections (src/fsm/snap_sect.c: varint n >= 1, then tag, length, payload)
 *
 * Version 3 (read-write locks) is written only for a state that uses what version 2
 * cannot hold (a shared hold or a queued shared request); any other state is written as version
 * 2, byte for byte as before, so a binary that reads only version 2 keeps restoring it during a
 * rolling upgrade until shared locks are used. Version 4 (session owners and request
 * digests in the session records; semaphores and elections, whose fields in the lock
 * records src/fsm/snap_prims.c reads and writes) is written only when some session has an owner
 * or a digest, or a semaphore or an election exists, by the same rule. Version 5 (for
 * upgrade safety) is version 4 with the cluster's log format (src/fsm/format.c), written once
 * it is 2 or more: every voter reads version 5 by then. Version 6 (cooperative revocation,
 * src/fsm/revoke.c) is version 5 with the lock flag of a pending revoke, written only while a
 * revoke is pending (LOCK_REVOKE is a format-2 op, so every voter reads it by then). Version 7
 * is version 6 with the cluster's deadlock search limit (src/fsm/waitgraph.c), written only
 * while it is not the default (DEADLOCK_LIMIT is a format-2 op as well). Version 8 is version 7
 * (its deadlock search limit written whatever its value) with the tagged sections, written only
 * while a feature holds state in one (the ops that make it are format-2 ops). Every version is
 * restored.
 *
 * The format is canonical: restore accepts only what fsm_snapshot could have produced (sorted,
 * no duplicates, every reference resolves, every derived rule of the FSM holds), so for any
 * accepted input x, snapshot(restore(x)) == x. Restore builds a new state and swaps it in only
 * on success. The revisions stored in the state (sids, tokens, enqueue revisions, key mod_revs)
 * are each allocated once, so restore rejects a repeated one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm/snap_sect.h"
#include "fsm/waitgraph.h"

#define SNAP_MAGIC "FLSM"
#define SNAP_MAGIC_LEN (sizeof(SNAP_MAGIC) - 1)
#define VEC_MIN_CAP 64 /* first allocation of a restore-time array */
#define SNAP_VERSION_2 2
#define SNAP_VERSION_3 3 /* adds shared holds and waiter modes */
#define SNAP_VERSION_4 4 /* adds session owners and request digests; object kinds */
#define SNAP_VERSION_5 5 /* adds the cluster's log format */
#define SNAP_VERSION_6 6 /* adds pending revokes */
#define SNAP_VERSION_7 7 /* adds the cluster's deadlock search limit */
#define SNAP_VERSION_8 8 /* adds the tagged sections (snap_sect.c) */
_Static_assert(SNAP_VERSION_8 == FSM_SNAP_VERSION_LAST, "format.c reads up to the last version");
#define FLAG_DELAY 1u
#define FLAG_REVOKE 2u /* v6 */
#define WAIT_SHARED 1u /* a waiter's mode byte (v3) */

/* ---- emit ---- */

static int emit_session(const struct sess *s, struct buf *b, uint8_t version)
{
    int rc = buf_put_varint(b, s->sid) || buf_put_varint(b, s->ttl_ms) ||
             buf_put_varint(b, s->lockdelay_ms) || buf_put_varint(b, s->checkpoint_ms) ||
             buf_put_bytes(b, s->name, s->name_len);
    if (version >= SNAP_VERSION_4)
        rc = rc || buf_put_bytes(b, sess_owner(s), s->owner_len);
    rc = rc || buf_put_varint(b, s->req_seq);
    if (!s->req_seq)
        return rc;
    rc = rc || buf_put_u8(b, s->req_kind);
    if (s->req_kind == FSM_REPLY_INT)
        rc = rc || buf_put_varint(b, s->req_value);
    if (s->req_kind == FSM_REPLY_ERR)
        rc = rc || buf_put_bytes(b, s->req_err, s->req_err ? strlen(s->req_err) : 0);
    if (version >= SNAP_VERSION_4)
        rc = rc || buf_put_varint(b, s->req_digest);
    return rc;
}

/* Whether a session has what only version 4 holds. */
static bool sess_needs_v4(const struct fsm *f)
{
    for (const struct sess *s = f->sess_head; s; s = s->snext)
        if (s->owner_len || s->req_digest)
            return true;
    return false;
}

/* The oldest version that can hold the state. */
static uint8_t snap_version(const struct fsm *f)
{
    if (fsm_snap_sections_present(f))
        return SNAP_VERSION_8;
    if (f->wg_limit != FSM_DEADLOCK_LIMIT_DEFAULT)
        return SNAP_VERSION_7;
    if (f->n_revokes)
        return SNAP_VERSION_6;
    if (f->format >= FSM_FORMAT_2)
        return SNAP_VERSION_5;
    if (sess_needs_v4(f) || f->n_prims)
        return SNAP_VERSION_4;
    return f->n_shared || f->n_swaiters ? SNAP_VERSION_3 : SNAP_VERSION_2;
}

struct emit {
    struct buf *b;
    uint8_t version;
};

static int emit_shared(const struct lock *l, bool weighted, struct buf *b)
{
    int rc = buf_put_varint(b, l->n_shared);
    for (const struct shold *h = l->sh_head; h && !rc; h = h->lnext)
        rc = buf_put_varint(b, h->sess->sid) || buf_put_varint(b, h->token) ||
             buf_put_varint(b, h->held_since_ms) || fsm_snap_emit_permits(weighted, h, b);
    return rc;
}

static int emit_lock(const struct lock *l, const struct emit *e)
{
    struct buf *b = e->b;
    bool weighted = e->version >= SNAP_VERSION_4 && fsm_sem_weighted(l); /* one walk */
    int rc = buf_put_bytes(b, l->name, l->name_len);
    if (e->version >= SNAP_VERSION_4)
        rc = rc || fsm_snap_emit_kind(l, weighted, b);
    rc = rc || buf_put_varint(b, l->holder ? l->holder->sid : 0);
    if (l->holder)
        rc = rc || buf_put_varint(b, l->token) || buf_put_varint(b, l->held_since_ms);
    if (e->version >= SNAP_VERSION_4)
        rc = rc || fsm_snap_emit_leader(l, b);
    if (e->version >= SNAP_VERSION_3)
        rc = rc || emit_shared(l, weighted, b);
    rc = rc || buf_put_u8(b, (l->in_delay ? FLAG_DELAY : 0) | (LX(l)->rv_token ? FLAG_REVOKE : 0));
    if (l->in_delay)
        rc = rc || buf_put_varint(b, l->lockdelay_ms);
    if (LX(l)->rv_token) /* only in version 6 (snap_version) */
        rc = rc || buf_put_varint(b, LX(l)->rv_ms) ||
             buf_put_bytes(b, LX(l)->rv_text ? LX(l)->rv_text : "", LX(l)->rv_reason_len) ||
             buf_put_bytes(b, LX(l)->rv_text ? LX(l)->rv_text + LX(l)->rv_reason_len : "",
                           LX(l)->rv_by_len);
    rc = rc || buf_put_varint(b, l->n_waiters);
    for (const struct waiter *w = l->wq_head; w; w = w->lnext) {
        rc = rc || buf_put_varint(b, w->sess->sid) || buf_put_varint(b, w->wait_ms) ||
             buf_put_varint(b, w->rev);
        if (e->version >= SNAP_VERSION_3)
            rc = rc || buf_put_u8(b, w->shared ? WAIT_SHARED : 0);
        if (e->version >= SNAP_VERSION_4)
            rc = rc || fsm_snap_emit_candidate(l, weighted, w, b);
    }
    return rc;
}

static int emit_key_visit(void *arg, const struct onode *n)
{
    const struct kv *k = ONODE_OWNER(n, const struct kv, o);
    struct buf *b = arg;
    return buf_put_bytes(b, k->key, k->key_len) || buf_put_bytes(b, k->value, k->value_len) ||
           buf_put_varint(b, k->create_rev) || buf_put_varint(b, k->mod_rev) ||
           buf_put_varint(b, k->version) || buf_put_varint(b, k->lease ? k->lease->sid : 0);
}

/* Locks come out of the name tree already in byte order: no sort at snapshot time (sorting 1M
 * names had been about half of serialising the W4 state). */
static int emit_lock_visit(void *arg, const struct onode *n)
{
    return emit_lock(ONODE_OWNER(n, const struct lock, o), arg);
}

static int emit_all(const struct fsm *f, struct buf *out)
{
    struct emit e = {.b = out, .version = snap_version(f)};
    int rc = buf_append(out, SNAP_MAGIC, SNAP_MAGIC_LEN) || buf_put_u8(out, e.version) ||
             buf_put_varint(out, f->revision) ||
             (e.version >= SNAP_VERSION_5 && buf_put_varint(out, f->format)) ||
             (e.version >= SNAP_VERSION_7 && buf_put_varint(out, f->wg_limit)) ||
             buf_put_varint(out, f->sessions.n);
    for (const struct sess *s = f->sess_head; s && !rc; s = s->snext)
        rc = rc || emit_session(s, out, e.version);
    rc = rc || buf_put_varint(out, f->locks.n);
    if (!rc)
        rc = rc || fsm_otree_walk(f->lock_names, NULL, 0, emit_lock_visit, &e);
    rc = rc || buf_put_varint(out, f->n_keys);
    if (!rc)
        rc = rc || fsm_otree_walk(f->keys, NULL, 0, emit_key_visit, out);
    rc = rc || buf_put_varint(out, f->n_members);
    for (uint32_t i = 0; i < f->n_members && !rc; i++) {
        const struct member *m = &f->members[i];
        rc = rc || buf_put_varint(out, m->id) || buf_put_bytes(out, m->client, m->client_len) ||
             buf_put_bytes(out, m->raft, m->raft_len);
    }
    if (e.version >= SNAP_VERSION_8)
        rc = rc || fsm_snap_sections_emit(f, out);
    return rc;
}

int fsm_snapshot(const struct fsm *f, struct buf *out)
{
    size_t mark = out->len;
    int rc = emit_all(f, out);
    if (rc)
        buf_truncate(out, mark);
    return rc ? -1 : 0;
}

/* ---- restore ---- */

struct vec {
    void *p;
    size_t n, cap;
};

static int vec_push(struct vec *v, const void *x, size_t sz)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : VEC_MIN_CAP;
        void *p = cap < SIZE_MAX / sz ? realloc(v->p, cap * sz) : NULL;
        if (!p)
            return -1;
        v->p = p;
        v->cap = cap;
    }
    memcpy((char *)v->p + v->n * sz, x, sz);
    v->n++;
    return 0;
}

struct rst {
    struct rd r;
    struct fsm *nf;
    char *err;
    size_t errlen;
    struct vec revs; /* uint64_t: every stored revision, must be distinct */
    uint8_t version;
    struct vec held;   /* struct lock *: held locks, linked to holders in token order */
    struct vec sholds; /* struct shold *: shared holds, linked to sessions in token order */
    struct vec waits;  /* struct waiter *: linked to sessions in enqueue order */
    struct vec sids;   /* uint64_t: scratch, the waiter sids of one lock */
};

static int bad(struct rst *s, const char *what)
{
    if (s->errlen)
        snprintf(s->err, s->errlen, "snapshot: %s (at byte %zu)", what, s->r.off);
    return -1;
}

static int get_u(struct rst *s, uint64_t *v)
{
    return fsm_rd_varint(&s->r, v) ? bad(s, "truncated or malformed number") : 0;
}

static int get_s(struct rst *s, const char **p, uint32_t *n, uint32_t min, uint32_t max)
{
    if (fsm_rd_str(&s->r, p, n, max))
        return bad(s, "truncated, malformed or oversized string");
    return *n < min ? bad(s, "empty name") : 0;
}

static int push_rev(struct rst *s, uint64_t rev)
{
    if (rev == 0 || rev > s->nf->revision)
        return bad(s, "revision out of range");
    return vec_push(&s->revs, &rev, sizeof(rev)) ? bad(s, "out of memory") : 0;
}

static int restore_reply(struct rst *s, struct sess *x)
{
    const char *p;
    uint32_t n;
    if (get_u(s, &x->req_seq) || !x->req_seq)
        return s->r.err ? -1 : 0;
    if (rd_u8(&s->r, &x->req_kind) || x->req_kind > FSM_REPLY_ERR)
        return bad(s, "bad cached reply kind");
    if (x->req_kind == FSM_REPLY_INT)
        return get_u(s, &x->req_value);
    if (x->req_kind != FSM_REPLY_ERR)
        return 0;
    if (get_s(s, &p, &n, 0, FSM_ERR_LEN - 1))
        return -1;
    if (n == 0)
        return 0;
    if (memchr(p, '\0', n))
        return bad(s, "NUL in cached error");
    if (!(x->req_err = malloc(n + 1)))
        return bad(s, "out of memory");
    memcpy(x->req_err, p, n);
    x->req_err[n] = '\0';
    return 0;
}

/* The reply, then (v4) its command's digest. */
static int restore_request(struct rst *s, struct sess *x)
{
    if (restore_reply(s, x))
        return -1;
    if (s->version < SNAP_VERSION_4 || !x->req_seq)
        return 0;
    return get_u(s, &x->req_digest);
}

static int restore_session(struct rst *s, uint64_t *prev)
{
    uint64_t sid, ttl, delay, ck;
    struct fsm_str owner = {NULL, 0};
    const char *name;
    uint32_t nlen;
    if (get_u(s, &sid) || get_u(s, &ttl) || get_u(s, &delay) || get_u(s, &ck) ||
        get_s(s, &name, &nlen, 0, FSM_MAX_NAME))
        return -1;
    if (s->version >= SNAP_VERSION_4 && get_s(s, &owner.p, &owner.len, 0, FSM_MAX_USER))
        return -1;
    if (ck >= ttl && ck != 0)
        return bad(s, "session checkpoint not below its ttl");
    if (sid <= *prev)
        return bad(s, "sessions not in strictly increasing sid order");
    if (ttl == 0)
        return bad(s, "session ttl 0");
    if (push_rev(s, sid))
        return -1;
    *prev = sid;
    struct sess *x = fsm_sess_alloc(sid, name, nlen, owner);
    if (!x)
        return bad(s, "out of memory");
    x->ttl_ms = ttl;
    x->lockdelay_ms = delay;
    x->checkpoint_ms = ck;
    fsm_sess_insert(s->nf, x);
    return restore_request(s, x);
}

static int restore_holder(struct rst *s, struct lock *l)
{
    uint64_t hsid;
    if (get_u(s, &hsid) || !hsid)
        return s->r.err ? -1 : 0;
    struct sess *h = fsm_sess_find(s->nf, hsid);
    if (!h)
        return bad(s, "lock holder is not a session");
    if (get_u(s, &l->token) || get_u(s, &l->held_since_ms) || push_rev(s, l->token))
        return -1;
    l->holder = h; /* linked into h's list later, in token order */
    if (vec_push(&s->held, &l, sizeof(l)))
        return bad(s, "out of memory");
    uint64_t rev;
    const char *why =
        s->version >= SNAP_VERSION_4 ? fsm_snap_read_leader(s->nf, &s->r, l, &rev) : NULL;
    if (why)
        return bad(s, why);
    return s->version >= SNAP_VERSION_4 && rev ? push_rev(s, rev) : 0;
}

static int restore_shold(struct rst *s, struct lock *l, uint64_t *prev_token)
{
    uint64_t sid, token, since;
    uint32_t permits;
    const char *why;
    if (get_u(s, &sid) || get_u(s, &token) || get_u(s, &since))
        return -1;
    if ((why = fsm_snap_read_permits(&s->r, l, &permits)))
        return bad(s, why);
    /* Grants keep in_use within a limit of at most FSM_MAX_SEM_LIMIT (a lowered limit leaves
     * it within the old one): more is a state no log makes, and would wrap the uint32 sum. */
    if ((uint64_t)l->in_use + permits > FSM_MAX_SEM_LIMIT)
        return bad(s, "semaphore permits in use over the largest limit");
    struct sess *x = fsm_sess_find(s->nf, sid);
    if (!x)
        return bad(s, "shared holder is not a session");
    if (token <= *prev_token)
        return bad(s, "shared holders not in token order");
    *prev_token = token;
    if (push_rev(s, token))
        return -1;
    for (const struct shold *h = l->sh_head; h; h = h->lnext)
        if (h->sess == x)
            return bad(s, "session holds one lock twice");
    struct shold *h = calloc(1, sizeof(*h));
    if (!h || vec_push(&s->sholds, &h, sizeof(h))) {
        free(h);
        return bad(s, "out of memory");
    }
    h->sess = x; /* linked into x's list later, in token order */
    h->token = token;
    h->held_since_ms = since;
    h->permits = permits;
    fsm_shold_link_lock(s->nf, l, h);
    return 0;
}

static int restore_sholds(struct rst *s, struct lock *l)
{
    uint64_t n, prev_token = 0;
    if (s->version < SNAP_VERSION_3)
        return 0;
    if (get_u(s, &n))
        return -1;
    if (n && l->holder)
        return bad(s, "lock held in both modes");
    for (uint64_t i = 0; i < n; i++)
        if (restore_shold(s, l, &prev_token))
            return -1;
    return 0;
}

/* A pending revoke: of the exclusive grant of a lock (kind lock), never in lock-delay. */
static int restore_revoke(struct rst *s, struct lock *l, uint8_t flags)
{
    uint64_t ms;
    struct fsm_str reason, by;
    if (flags & FLAG_DELAY)
        return bad(s, "held lock in lock-delay");
    if (!l->holder || l->kind != FSM_KIND_LOCK)
        return bad(s, "revoke of a lock without an exclusive holder");
    if (get_u(s, &ms) || get_s(s, &reason.p, &reason.len, 0, FSM_MAX_NAME) ||
        get_s(s, &by.p, &by.len, 0, FSM_MAX_NAME))
        return -1;
    return fsm_revoke_set(s->nf, l, ms, reason, by) ? bad(s, "out of memory") : 0;
}

static int restore_delay(struct rst *s, struct lock *l)
{
    uint8_t flags;
    uint8_t known = FLAG_DELAY | (s->version >= SNAP_VERSION_6 ? FLAG_REVOKE : 0);
    if (rd_u8(&s->r, &flags) || (flags & ~known))
        return bad(s, "bad lock flags");
    if (flags & FLAG_REVOKE)
        return restore_revoke(s, l, flags);
    if (!flags)
        return 0; /* a free lock is refused once its waiters are read (restore_lock) */
    if (l->holder)
        return bad(s, "held lock in lock-delay");
    if (get_u(s, &l->lockdelay_ms))
        return -1;
    if (l->lockdelay_ms == 0)
        return bad(s, "lock-delay of 0 ms");
    l->in_delay = 1;
    s->nf->n_delay++;
    return 0;
}

/* Link a waiter at the FIFO's tail; its session list is built later, in enqueue order. */
/* The v3 mode byte; a shared holder may wait only to upgrade, and only at the head (whose
 * enqueue revision then comes after those behind it). */
static int restore_mode(struct rst *s, struct lock *l, struct sess *x, uint8_t *shared,
                        uint64_t rev, uint64_t *prev_rev)
{
    uint8_t mode = 0;
    if (s->version >= SNAP_VERSION_3 && (rd_u8(&s->r, &mode) || (mode & ~WAIT_SHARED)))
        return bad(s, "bad waiter mode");
    *shared = mode & WAIT_SHARED;
    bool holds = false;
    for (const struct shold *h = l->sh_head; h && !holds; h = h->lnext)
        holds = h->sess == x;
    if (holds && (*shared || l->n_waiters))
        return bad(s, "shared holder queued other than as the head upgrade");
    if (holds) /* the head upgrade: the next waiter starts the enqueue order */
        return 0;
    if (rev <= *prev_rev)
        return bad(s, "waiters not in enqueue order");
    *prev_rev = rev;
    return 0;
}

static int restore_waiter(struct rst *s, struct lock *l, uint64_t *prev_rev)
{
    uint64_t sid, wait, rev;
    uint8_t shared;
    if (get_u(s, &sid) || get_u(s, &wait) || get_u(s, &rev))
        return -1;
    struct sess *x = fsm_sess_find(s->nf, sid);
    if (!x)
        return bad(s, "waiter is not a session");
    if (x == l->holder)
        return bad(s, "holder queued on its own lock");
    if (wait == 0)
        return bad(s, "waiter without a wait");
    if (restore_mode(s, l, x, &shared, rev, prev_rev))
        return -1; /* the enqueue revision is pushed by link_sessions: once per request */
    if (vec_push(&s->sids, &sid, sizeof(sid)))
        return bad(s, "out of memory");
    struct waiter *w = fsm_waiter_new();
    if (!w || vec_push(&s->waits, &w, sizeof(w))) {
        free(w);
        return bad(s, "out of memory");
    }
    w->sess = x;
    w->wait_ms = wait;
    w->rev = rev;
    w->shared = shared;
    fsm_waiter_link_lock(s->nf, l, w);
    const char *why =
        s->version >= SNAP_VERSION_4 ? fsm_snap_read_candidate(s->nf, &s->r, l, w) : NULL;
    return why ? bad(s, why) : 0;
}

static int restore_waiters(struct rst *s, struct lock *l)
{
    uint64_t n, prev_rev = 0;
    if (get_u(s, &n))
        return -1;
    s->sids.n = 0;
    for (uint64_t i = 0; i < n; i++)
        if (restore_waiter(s, l, &prev_rev))
            return -1;
    uint64_t *v = s->sids.p;
    if (n > 1)
        qsort(v, s->sids.n, sizeof(*v), fsm_cmp_u64);
    for (size_t i = 1; i < s->sids.n; i++)
        if (v[i] == v[i - 1])
            return bad(s, "session queued twice on one lock");
    return 0; /* whether the head could be granted: head_check, once every queue is read */
}

static int restore_lock(struct rst *s, struct lock **prev)
{
    const char *name;
    uint32_t nlen;
    if (get_s(s, &name, &nlen, 1, FSM_MAX_NAME))
        return -1;
    if (*prev && fsm_name_cmp((*prev)->name, (*prev)->name_len, name, nlen) >= 0)
        return bad(s, "locks not in strictly increasing name order");
    struct lock *l = fsm_lock_alloc(name, nlen);
    if (!l)
        return bad(s, "out of memory");
    const char *why = s->version >= SNAP_VERSION_4 ? fsm_snap_read_kind(&s->r, l) : NULL;
    if (why) {
        free(l->x);
        free(l);
        return bad(s, why);
    }
    fsm_lock_insert_last(s->nf, l, *prev);
    *prev = l;
    if (restore_holder(s, l) || restore_sholds(s, l) || restore_delay(s, l) ||
        restore_waiters(s, l))
        return -1;
    if (!l->holder && !l->n_shared && !l->in_delay && !l->wq_head)
        return bad(s, "free lock stored");
    return (why = fsm_snap_check_kind(l)) ? bad(s, why) : 0;
}

static int restore_key_meta(struct rst *s, struct kv *k)
{
    uint64_t lsid;
    if (get_u(s, &k->create_rev) || get_u(s, &k->mod_rev) || get_u(s, &k->version) ||
        get_u(s, &lsid))
        return -1;
    if (k->create_rev == 0 || k->create_rev > k->mod_rev)
        return bad(s, "bad key revisions");
    if (push_rev(s, k->mod_rev))
        return -1;
    if (k->version == 0 || (k->version == 1) != (k->create_rev == k->mod_rev))
        return bad(s, "bad key version");
    struct sess *x = NULL;
    if (lsid && !(x = fsm_sess_find(s->nf, lsid)))
        return bad(s, "key lease is not a session");
    fsm_kv_set_lease(k, x);
    return 0;
}

static int restore_key(struct rst *s, struct kv **prev)
{
    const char *key, *val;
    uint32_t klen, vlen;
    if (get_s(s, &key, &klen, 1, FSM_MAX_NAME) || get_s(s, &val, &vlen, 0, FSM_MAX_VALUE))
        return -1;
    if (*prev && fsm_name_cmp((*prev)->key, (*prev)->key_len, key, klen) >= 0)
        return bad(s, "keys not in strictly increasing order");
    struct kv *k = fsm_kv_alloc(key, klen);
    char *v = vlen ? malloc(vlen) : NULL;
    if (!k || (vlen && !v)) {
        free(k);
        free(v);
        return bad(s, "out of memory");
    }
    if (vlen)
        memcpy(v, val, vlen);
    k->value = v;
    k->value_len = vlen;
    fsm_kv_insert_last(s->nf, k, *prev);
    *prev = k;
    return restore_key_meta(s, k);
}

static int restore_members(struct rst *s)
{
    uint64_t n, prev = 0;
    if (get_u(s, &n))
        return -1;
    if (n > FSM_MAX_MEMBERS)
        return bad(s, "too many members");
    for (uint64_t i = 0; i < n; i++) {
        struct member *m = &s->nf->members[i];
        const char *cp, *rp;
        uint32_t cn, rn;
        if (get_u(s, &m->id))
            return -1;
        if (m->id <= prev)
            return bad(s, "members not in strictly increasing id order");
        prev = m->id;
        if (get_s(s, &cp, &cn, 1, FSM_MAX_ADDR) || get_s(s, &rp, &rn, 1, FSM_MAX_ADDR))
            return -1;
        memcpy(m->client, cp, cn);
        memcpy(m->raft, rp, rn);
        m->client_len = (uint16_t)cn;
        m->raft_len = (uint16_t)rn;
        s->nf->n_members = (uint32_t)i + 1;
    }
    return 0;
}

static int cmp_held(const void *a, const void *b)
{
    const struct lock *x = *(const struct lock *const *)a, *y = *(const struct lock *const *)b;
    return x->token < y->token ? -1 : x->token > y->token;
}

static int cmp_shold(const void *a, const void *b)
{
    const struct shold *x = *(const struct shold *const *)a;
    const struct shold *y = *(const struct shold *const *)b;
    return x->token < y->token ? -1 : x->token > y->token;
}

/* Enqueue order; a multi-request's waiters (one revision) by session, then name. */
static int cmp_wait(const void *a, const void *b)
{
    const struct waiter *x = *(const struct waiter *const *)a;
    const struct waiter *y = *(const struct waiter *const *)b;
    if (x->rev != y->rev)
        return x->rev < y->rev ? -1 : 1;
    if (x->sess != y->sess)
        return x->sess->sid < y->sess->sid ? -1 : 1;
    return fsm_name_cmp(x->lock->name, x->lock->name_len, y->lock->name, y->lock->name_len);
}

/* One enqueue revision per request: the waiters sharing one must be one session's (a
 * multi-request; the sort put them next to each other) and be what LOCK_MULTI writes
 * (fsm_multi_group_bad). */
static int push_wait_revs(struct rst *s, struct waiter **waits, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i && waits[i]->rev == waits[i - 1]->rev) {
            const char *why;
            if (waits[i]->sess != waits[i - 1]->sess)
                return bad(s, "a revision is stored twice (sid, token, enqueue or mod_rev)");
            if ((why = fsm_multi_group_bad(waits[i - 1], waits[i])))
                return bad(s, why);
            continue;
        }
        if (push_rev(s, waits[i]->rev))
            return -1;
    }
    return 0;
}

static int head_check(void *arg, const struct onode *n)
{
    const struct lock *l = ONODE_OWNER(n, struct lock, o);
    (void)arg;
    return l->wq_head && fsm_wait_request_grantable(l->wq_head);
}

/* Build the sessions' lists in the order a replica that applied the log would have them. */
static int link_sessions(struct rst *s)
{
    struct lock **held = s->held.p;
    struct waiter **waits = s->waits.p;
    if (s->held.n)
        qsort(held, s->held.n, sizeof(*held), cmp_held);
    for (size_t i = 0; i < s->held.n; i++)
        fsm_held_append(held[i]->holder, held[i]);
    s->nf->n_held = s->held.n;
    if (s->waits.n)
        qsort(waits, s->waits.n, sizeof(*waits), cmp_wait);
    for (size_t i = 0; i < s->waits.n; i++)
        fsm_waiter_link_sess(s->nf, waits[i]->sess, waits[i]);
    struct shold **sh = s->sholds.p;
    if (s->sholds.n)
        qsort(sh, s->sholds.n, sizeof(*sh), cmp_shold);
    for (size_t i = 0; i < s->sholds.n; i++) {
        struct sess *x = sh[i]->sess;
        fsm_shold_link_sess(x, sh[i]);
    }
    if (push_wait_revs(s, waits, s->waits.n)) /* after the holds: it looks for upgrades */
        return -1;
    if (fsm_otree_walk(s->nf->lock_names, NULL, 0, head_check, NULL))
        return bad(s, "the head waiter could be granted");
    return 0;
}

static int revs_distinct(struct rst *s)
{
    uint64_t *v = s->revs.p;
    if (s->revs.n > 1)
        qsort(v, s->revs.n, sizeof(*v), fsm_cmp_u64);
    for (size_t i = 1; i < s->revs.n; i++)
        if (v[i] == v[i - 1])
            return bad(s, "a revision is stored twice (sid, token, enqueue or mod_rev)");
    return 0;
}

static int restore_body(struct rst *s)
{
    uint8_t magic[SNAP_MAGIC_LEN], version;
    uint64_t n, prev_sid = 0;
    struct lock *prev_lock = NULL;
    struct kv *prev_key = NULL;
    for (size_t i = 0; i < SNAP_MAGIC_LEN; i++)
        if (rd_u8(&s->r, &magic[i]))
            return bad(s, "truncated header");
    if (memcmp(magic, SNAP_MAGIC, SNAP_MAGIC_LEN) != 0)
        return bad(s, "bad magic");
    if (rd_u8(&s->r, &version) || version < SNAP_VERSION_2 || version > SNAP_VERSION_8)
        return bad(s, "unsupported version (a newer release wrote it: upgrade this node)");
    s->version = version;
    if (get_u(s, &s->nf->revision) || (version >= SNAP_VERSION_5 && get_u(s, &s->nf->format)) ||
        (version >= SNAP_VERSION_7 && get_u(s, &s->nf->wg_limit)) || get_u(s, &n))
        return -1;
    if (version >= SNAP_VERSION_7 &&
        (s->nf->wg_limit > FSM_DEADLOCK_LIMIT_MAX ||
         (version == SNAP_VERSION_7 && s->nf->wg_limit == FSM_DEADLOCK_LIMIT_DEFAULT)))
        return bad(s, "bad deadlock search limit");
    if (version >= SNAP_VERSION_5 && !(version >= SNAP_VERSION_6 && s->nf->format == 0) &&
        (s->nf->format < FSM_FORMAT_2 || s->nf->format > FSM_FORMAT_MAX))
        return bad(s, "unsupported log format (a newer release wrote it: upgrade this node)");
    for (uint64_t i = 0; i < n; i++)
        if (restore_session(s, &prev_sid))
            return -1;
    if (get_u(s, &n))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (restore_lock(s, &prev_lock))
            return -1;
    fsm_otree_balance(&s->nf->lock_names, s->nf->locks.n);
    if (get_u(s, &n))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (restore_key(s, &prev_key))
            return -1;
    fsm_otree_balance(&s->nf->keys, s->nf->n_keys);
    if (restore_members(s))
        return -1;
    if (link_sessions(s) || revs_distinct(s))
        return -1;
    /* After the links: a section may refer to sessions and locks. */
    if (version >= SNAP_VERSION_8 && fsm_snap_sections_restore(s->nf, &s->r, s->err, s->errlen))
        return -1;
    if (s->r.off != s->r.len)
        return bad(s, "trailing bytes");
    if (snap_version(s->nf) != version) /* canonical: the oldest version that holds it */
        return bad(s, "snapshot version is not the oldest that holds its state");
    return 0;
}

int fsm_restore(struct fsm *f, const uint8_t *data, size_t len, char *err, size_t errlen)
{
    struct rst s = {.err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    rd_init(&s.r, data, len);
    s.nf = fsm_new();
    if (!s.nf)
        return bad(&s, "out of memory");
    fsm_set_hash_key(s.nf, f->hash_key); /* the swap below keeps this process's key */
    s.nf->wg_flag = f->wg_flag;          /* and its --deadlock-search-limit */
    int rc = restore_body(&s);
    free(s.revs.p);
    free(s.held.p);
    free(s.sholds.p);
    free(s.waits.p);
    free(s.sids.p);
    if (rc == 0) {
        struct fsm tmp = *f;
        *f = *s.nf;
        *s.nf = tmp;
    }
    fsm_free(s.nf);
    return rc ? -1 : 0;
}
