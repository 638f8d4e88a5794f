/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/fsm.c — lifecycle, fsm_apply (decode, exactly-once, dispatch) and the event list.
 *
 * Owns the revision counter's single allocation point (fsm_next_rev), the request table logic
 * and the events' name storage. Ops validate everything before they change anything, so an
 * ERR reply always means "nothing changed" (the request table may record the ERR reply).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"
#include "fsm/waitgraph.h"

#define EVENTS_MIN_CAP 16 /* events of one apply: most have a few */
#define DECODE_ERR_LEN 96 /* the decoder's message; "ERR bad entry: " + it fits a reply */

/* ---- lifecycle ---- */

int fsm_init_state(struct fsm *f)
{
    memset(f, 0, sizeof(*f));
    if (htab_init(&f->sessions))
        return -1;
    if (htab_init(&f->locks)) {
        htab_free(&f->sessions);
        return -1;
    }
    return 0;
}

void fsm_free_state(struct fsm *f)
{
    fsm_latch_free_all(f); /* their participations point at sessions: first */
    for (size_t i = 0; i < f->locks.nb; i++) {
        struct hlink *x = f->locks.b[i];
        while (x) {
            struct hlink *next = x->next;
            struct lock *l = (struct lock *)x;
            while (l->wq_head) {
                struct waiter *w = l->wq_head;
                l->wq_head = w->lnext;
                free(w->value);
                free(w->hv);
                free(w);
            }
            while (l->sh_head) {
                struct shold *h = l->sh_head;
                l->sh_head = h->lnext;
                free(h);
            }
            if (l->x) {
                free(l->x->value);
                free(l->x->hv);
                free(l->x->rv_text);
                free(l->x);
            }
            free(l);
            x = next;
        }
    }
    for (size_t i = 0; i < f->sessions.nb; i++) {
        struct hlink *x = f->sessions.b[i];
        while (x) {
            struct hlink *next = x->next;
            fsm_sess_destroy((struct sess *)x);
            x = next;
        }
    }
    fsm_kv_free_all(f); /* lock_names pointed into the locks freed above; the memset clears it */
    htab_free(&f->sessions);
    htab_free(&f->locks);
    free(f->uses);
    buf_free(&f->wg_text);
    fsm_history_free(f);
    fsm_semlim_free_all(f);
    buf_free(&f->txn_out);
    memset(f, 0, sizeof(*f));
}

struct fsm *fsm_new(void)
{
    struct fsm *f = malloc(sizeof(*f));
    if (f && fsm_init_state(f)) {
        free(f);
        return NULL;
    }
    if (f)
        f->wg_limit = f->wg_flag = FSM_DEADLOCK_LIMIT_DEFAULT;
    return f;
}

void fsm_free(struct fsm *f)
{
    if (!f)
        return;
    fsm_free_state(f);
    free(f);
}

uint64_t fsm_revision(const struct fsm *f)
{
    return f->revision;
}

uint64_t fsm_next_rev(struct actx *a)
{
    a->nrev++;
    return ++a->f->revision;
}

/* ---- replies ---- */

void fsm_reply_err(struct fsm_reply *r, const char *fmt, ...)
{
    va_list ap;
    r->kind = FSM_REPLY_ERR;
    r->value = 0;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
}

int fsm_nosession(struct fsm_reply *r, uint64_t sid)
{
    fsm_reply_err(r, PROTO_NOSESSION " session %llu does not exist (closed or expired)",
                  (unsigned long long)sid);
    return -1;
}

/* Names are binary; error texts end up in RESP simple errors, which must not hold CR/LF:
 * only printable ASCII (space to '~') is copied. */
const char *fsm_printable(const char *p, size_t n, char *out, size_t outlen)
{
    size_t ell = sizeof(FSM_ELLIPSIS) - 1, max = outlen - ell - 1, i;
    for (i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)p[i];
        out[i] = (ch >= ' ' && ch <= '~') ? (char)ch : '?';
    }
    if (i < n) {
        memcpy(out + i, FSM_ELLIPSIS, ell);
        i += ell;
    }
    out[i] = '\0';
    return out;
}

/* ---- events ---- */

void fsm_events_init(struct fsm_events *e)
{
    memset(e, 0, sizeof(*e));
}

void fsm_events_reset(struct fsm_events *e)
{
    e->n = 0;
    e->lost = false;
    buf_reset(&e->names);
}

void fsm_events_free(struct fsm_events *e)
{
    free(e->ev);
    buf_free(&e->names);
    fsm_events_init(e);
}

/* While an apply runs, name.p holds an offset into `names` (which may move as it grows). */
struct fsm_event *fsm_emit(struct actx *a, uint8_t type, uint64_t sid, uint64_t token, uint64_t ms,
                           const char *name, size_t namelen)
{
    struct fsm_events *e = a->ev;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : EVENTS_MIN_CAP;
        struct fsm_event *v = cap < SIZE_MAX / sizeof(*v) ? realloc(e->ev, cap * sizeof(*v)) : NULL;
        if (!v) {
            e->lost = true;
            return NULL;
        }
        e->ev = v;
        e->cap = cap;
    }
    size_t off = e->names.len;
    if (namelen && buf_append(&e->names, name, namelen)) {
        e->lost = true;
        return NULL;
    }
    struct fsm_event *x = &e->ev[e->n++];
    memset(x, 0, sizeof(*x));
    x->type = type;
    x->sid = sid;
    x->token = token;
    x->ms = ms;
    x->name.p = (const char *)(uintptr_t)off;
    x->name.len = (uint32_t)namelen;
    return x;
}

struct name_order {
    const char *base;
};

static int cmp_event_names(const void *x, const void *y, void *arg)
{
    const struct name_order *o = arg;
    const struct fsm_event *a = x, *b = y;
    return fsm_name_cmp(o->base + (uintptr_t)a->name.p, a->name.len, o->base + (uintptr_t)b->name.p,
                        b->name.len);
}

void fsm_sort_events_by_name(struct actx *a, size_t from)
{
    struct fsm_events *e = a->ev;
    struct name_order o = {e->names.p};
    if (e->n > from + 1)
        qsort_r(e->ev + from, e->n - from, sizeof(*e->ev), cmp_event_names, &o);
}

/* Events left by earlier applies (if the caller did not reset) become offsets again. */
static void names_to_offsets(struct fsm_events *e)
{
    uintptr_t base = (uintptr_t)e->names.p;
    for (size_t i = 0; i < e->n; i++)
        if (e->ev[i].name.len)
            e->ev[i].name.p = (const char *)((uintptr_t)e->ev[i].name.p - base);
}

static void names_to_pointers(struct fsm_events *e)
{
    for (size_t i = 0; i < e->n; i++)
        e->ev[i].name.p = e->ev[i].name.len ? e->names.p + (uintptr_t)e->ev[i].name.p : "";
}

/* ---- apply ---- */

/* `op` selects the apply handler and the payload it gets: the one part of an op that is not in
 * its row of the op descriptor (ops.h). */
static void dispatch(struct actx *a, struct fsm_reply *r)
{
    const struct fsm_cmd *c = a->c;
    switch ((enum fsm_op)c->op) { /* no default: -Wswitch-enum finds an op without a handler */
    case FSM_OP_NOOP:
        r->kind = FSM_REPLY_OK;
        break;
    case FSM_OP_SESSION_OPEN:
        fsm_op_session_new(a, &c->session_open, r);
        break;
    case FSM_OP_SESSION_CLOSE:
        fsm_op_session_end(a, &c->session_close, r, false);
        break;
    case FSM_OP_SESSION_EXPIRE:
    case FSM_OP_SESSION_REVOKE: /* the payloads are the same; fsm_sess_end tells them apart */
        fsm_op_session_end(a, &c->session_expire, r, true);
        break;
    case FSM_OP_LOCK:
        fsm_op_lock(a, &c->lock, r);
        break;
    case FSM_OP_LOCK_SHARED:
        fsm_op_lock_shared(a, &c->lock_shared, r);
        break;
    case FSM_OP_UNLOCK:
        fsm_op_unlock(a, &c->unlock, r);
        break;
    case FSM_OP_CANCEL_WAIT:
        fsm_op_cancel_wait(a, &c->cancel_wait, r);
        break;
    case FSM_OP_LOCKDELAY_END:
        fsm_op_lockdelay_end(a, &c->lockdelay_end, r);
        break;
    case FSM_OP_PUT:
        fsm_op_put(a, &c->put, r);
        break;
    case FSM_OP_DEL:
        fsm_op_del(a, &c->del, r);
        break;
    case FSM_OP_MEMBER_SET:
        fsm_op_member_set(a, &c->member_set, r);
        break;
    case FSM_OP_MEMBER_DEL:
        fsm_op_member_del(a, &c->member_del, r);
        break;
    case FSM_OP_MEMBER_HTTP:
        fsm_op_member_http(a, &c->member_http, r);
        break;
    case FSM_OP_SESSION_CHECKPOINT:
        fsm_op_session_checkpoint(a, &c->session_checkpoint, r);
        break;
    case FSM_OP_SEM_ACQUIRE:
        fsm_op_sem_acquire(a, &c->sem_acquire, r);
        break;
    case FSM_OP_SEM_RELEASE:
        fsm_op_sem_release(a, &c->sem_release, r);
        break;
    case FSM_OP_ELECT_CAMPAIGN:
        fsm_op_elect_campaign(a, &c->elect_campaign, r);
        break;
    case FSM_OP_ELECT_PROCLAIM:
        fsm_op_elect_proclaim(a, &c->elect_proclaim, r);
        break;
    case FSM_OP_ELECT_RESIGN:
        fsm_op_elect_resign(a, &c->elect_resign, r);
        break;
    case FSM_OP_CLUSTER_FORMAT:
        fsm_op_cluster_format(a, &c->cluster_format, r);
        break;
    case FSM_OP_LOCK_MULTI:
        fsm_op_lock_multi(a, &c->lock_multi, r);
        break;
    case FSM_OP_LOCK_REVOKE:
        fsm_op_lock_revoke(a, &c->lock_revoke, r);
        break;
    case FSM_OP_REVOKE_END:
        fsm_op_revoke_end(a, &c->revoke_end, r);
        break;
    case FSM_OP_LOCK_NOTIFY:
        fsm_op_lock_notify(a, &c->lock_notify, r);
        break;
    case FSM_OP_DEADLOCK_LIMIT:
        fsm_op_deadlock_limit(a, &c->deadlock_limit, r);
        break;
    case FSM_OP_INCR:
        fsm_op_incr(a, &c->incr, r);
        break;
    case FSM_OP_SEM_SETLIMIT:
        fsm_op_sem_setlimit(a, &c->sem_setlimit, r);
        break;
    case FSM_OP_SEM_ACQUIRE_W:
        fsm_op_sem_acquire_w(a, &c->sem_acquire_w, r);
        break;
    case FSM_OP_LOCK_META:
        fsm_op_lock_meta(a, &c->lock_meta, r);
        break;
    case FSM_OP_MAXHOLD_END:
        fsm_op_maxhold_end(a, &c->maxhold_end, r);
        break;
    case FSM_OP_LATCH_CREATE:
        fsm_op_latch_create(a, &c->latch_create, r);
        break;
    case FSM_OP_LATCH_JOIN:
        fsm_op_latch_join(a, &c->latch_join, r);
        break;
    case FSM_OP_LATCH_COUNTDOWN:
        fsm_op_latch_countdown(a, &c->latch_countdown, r);
        break;
    case FSM_OP_LATCH_DELETE:
        fsm_op_latch_delete(a, &c->latch_delete, r);
        break;
    case FSM_OP_BARRIER:
        fsm_op_barrier(a, &c->barrier, r);
        break;
    case FSM_OP_SESSION_OPEN_REENTRANT:
        fsm_op_session_open_r(a, &c->session_open_reentrant, r);
        break;
    case FSM_OP_HISTORY_LIMITS:
        fsm_op_history_limits(a, &c->history_limits, r);
        break;
    case FSM_OP_SEM_LIMIT_SET:
        fsm_op_sem_limit_set(a, &c->sem_limit_set, r);
        break;
    case FSM_OP_SEM_LIMIT_RESET:
        fsm_op_sem_limit_reset(a, &c->sem_limit_reset, r);
        break;
    case FSM_OP_TXN:
        fsm_op_txn(a, &c->txn, r);
        break;
    } /* the decoder rejects a value that is not an op */
}

/* Remember the reply of the session's highest seq. Not a state change worth a revision. */
static void record(struct sess *s, uint64_t seq, uint64_t digest, const struct fsm_reply *r)
{
    free(s->req_err);
    s->req_err = NULL;
    s->req_seq = seq;
    s->req_digest = digest;
    s->req_kind = r->kind;
    s->req_value = r->kind == FSM_REPLY_INT ? r->value : 0;
    if (r->kind == FSM_REPLY_ERR && r->err[0])
        s->req_err = strdup(r->err); /* NULL on OOM: replayed as a generic error */
    free(s->req_txn); /* a TXN's results (txn.c): kept in memory only, not in snapshots */
    s->req_txn = NULL;
    s->req_txn_n = 0;
    s->req_txn_known = r->txn_known;
    if (r->txn_known && r->txn_n) {
        s->req_txn = malloc(r->txn_n * sizeof(*r->txn));
        if (s->req_txn) {
            memcpy(s->req_txn, r->txn, r->txn_n * sizeof(*r->txn));
            s->req_txn_n = r->txn_n;
        } else {
            s->req_txn_known = false; /* OOM: replayed without its results */
        }
    }
}

/* A LOCK (SEM_ACQUIRE, ELECT_CAMPAIGN) retried after a QUEUED answer gets the current truth,
 * not the stale QUEUED (an upgrade whose wait ended while the session still holds the lock
 * shared: NIL). */
static void lock_truth(struct actx *a, const struct fsm_wait_ref *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    struct shold *h;
    bool shared = a->c->op == FSM_OP_LOCK_SHARED || a->c->op == FSM_OP_SEM_ACQUIRE ||
                  a->c->op == FSM_OP_SEM_ACQUIRE_W;
    if (a->c->op == FSM_OP_LOCK_MULTI) { /* every name, not the first alone (multi.c) */
        fsm_multi_truth(a->f, &a->c->lock_multi, r);
        return;
    }
    r->kind = FSM_REPLY_NIL;
    if (!s || !l)
        return;
    if (l->holder == s) {
        fsm_reply_int(r, l->token);
    } else if (fsm_waiter_find(l, s)) {
        r->kind = FSM_REPLY_QUEUED;
    } else if (shared && (h = fsm_shold_find(l, s))) {
        fsm_reply_int(r, h->token);
    }
}

static void replay(struct actx *a, const struct sess *s, struct fsm_reply *r)
{
    struct fsm_wait_ref wr;
    if (s->req_kind == FSM_REPLY_QUEUED && fsm_cmd_wait_of(a->c, &wr)) {
        lock_truth(a, &wr, r);
        return;
    }
    if (s->req_kind == FSM_REPLY_ERR) {
        fsm_reply_err(r, "%s",
                      s->req_err ? s->req_err : PROTO_ERR " cached reply was not retained");
        return;
    }
    r->kind = s->req_kind;
    r->value = s->req_value;
    r->txn = s->req_txn; /* a TXN's results, if this node still has them */
    r->txn_n = s->req_txn_n;
    r->txn_known = s->req_txn_known;
}

/* Ownership first (nothing changes, no seq is spent), then exactly-once: REQ (sid, seq) below
 * the session's highest fails, equal replays (if it is the same command), above runs. */
static void apply_cmd(struct actx *a, struct fsm_reply *r)
{
    const struct fsm_cmd *c = a->c;
    /* One command allocates at most one revision per existing lock (a close hands all of them
       on) and per waiter (a run of shared grants) plus one: refuse rather than let the counter
       wrap to 0. */
    uint64_t multi = c->op == FSM_OP_LOCK_MULTI ? c->lock_multi.names.n /* new locks */
                     : c->op == FSM_OP_TXN      ? c->txn.txn.nthen + c->txn.txn.nelse /* writes */
                                                : 0;
    if (c->op != FSM_OP_NOOP &&
        a->f->revision >= UINT64_MAX - a->f->locks.n - a->f->n_waiters - multi - 1) {
        fsm_reply_err(r, PROTO_ERR " revision counter exhausted");
        return;
    }
    if (fsm_owner_check(a->f, c, r))
        return;
    if (!c->req_sid) {
        dispatch(a, r);
        return;
    }
    struct sess *rs = fsm_sess_find(a->f, c->req_sid);
    if (!rs) {
        fsm_nosession(r, c->req_sid);
        return;
    }
    if (c->req_seq < rs->req_seq) {
        fsm_reply_err(r, PROTO_ERR " request seq already superseded");
        return;
    }
    if (c->req_seq == rs->req_seq && rs->req_digest && rs->req_digest != a->digest) {
        fsm_reply_err(r,
                      PROTO_ERR " request seq %llu of session %llu was used by a different command",
                      (unsigned long long)c->req_seq, (unsigned long long)c->req_sid);
        return;
    }
    if (c->req_seq == rs->req_seq) {
        replay(a, rs, r);
        return;
    }
    dispatch(a, r);
    rs = fsm_sess_find(a->f, c->req_sid); /* the command may have ended it */
    if (rs)
        record(rs, c->req_seq, a->digest, r);
}

void fsm_apply(struct fsm *f, const uint8_t *data, size_t len, struct fsm_reply *reply,
               struct fsm_events *ev)
{
    struct fsm_cmd c;
    char err[DECODE_ERR_LEN];
    size_t body;
    memset(reply, 0, sizeof(*reply));
    size_t from = ev->n; /* this entry's events start here */
    names_to_offsets(ev);
    bool decoded = !fsm_cmd_decode_at(data, len, &c, &body, err, sizeof(err));
    if (!decoded) {
        fsm_reply_err(reply, PROTO_ERR " bad entry: %s", err);
    } else {
        struct actx a = {.f = f, .c = &c, .ev = ev};
        if (c.req_sid && c.checked)
            a.digest = fsm_cmd_digest(&c, data + body, len - body);
        apply_cmd(&a, reply);
    }
    names_to_pointers(ev);
    if (decoded) /* derived from what the entry did, with its now_ms: the same on every replica */
        fsm_history_note(f, &c, ev, from);
}
