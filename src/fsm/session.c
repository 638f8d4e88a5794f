/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/session.c — sessions: records, SESSION_OPEN, and the end of a session (close/expiry).
 *
 * A session's owner is the acting user of its SESSION_OPEN (empty when the entry had none), kept
 * for life (src/fsm/owner.c checks it). SESSION_REVOKE ends a session as an expiry does.
 *
 * Owns the rule that a dead session leaves every structure in the apply that ends it: its held
 * locks are released (in token order, exclusive then shared, so every replica hands them on in
 * the same order), its waits are removed, its keys deleted, its request table dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fsm/internal.h"

struct sess *fsm_sess_find(const struct fsm *f, uint64_t sid)
{
    if (sid == 0)
        return NULL;
    uint32_t h = fsm_hash_u64(sid);
    for (struct hlink *x = htab_bucket(&f->sessions, h); x; x = x->next) {
        struct sess *s = (struct sess *)x;
        if (s->sid == sid)
            return s;
    }
    return NULL;
}

struct sess *fsm_sess_alloc(uint64_t sid, const char *name, size_t namelen, struct fsm_str owner)
{
    struct sess *s = malloc(sizeof(*s) + namelen + owner.len);
    if (!s)
        return NULL;
    memset(s, 0, sizeof(*s));
    s->sid = sid;
    s->name_len = (uint16_t)namelen;
    s->owner_len = (uint8_t)owner.len; /* <= FSM_MAX_USER: the decoders' bound */
    if (namelen)
        memcpy(s->name, name, namelen);
    if (owner.len)
        memcpy(s->name + namelen, owner.p, owner.len);
    return s;
}

/* The list stays in sid order, so snapshots need no sort. A new session's sid is the newest
 * revision and restore inserts in sid order: the tail is the place, the loop a safeguard. */
void fsm_sess_insert(struct fsm *f, struct sess *s)
{
    htab_insert(&f->sessions, &s->h, fsm_hash_u64(s->sid));
    f->name_bytes += s->name_len;
    fsm_usage_session(f, s, 1);
    struct sess *p = f->sess_tail;
    while (p && p->sid > s->sid)
        p = p->sprev;
    s->sprev = p;
    s->snext = p ? p->snext : f->sess_head;
    if (s->snext)
        s->snext->sprev = s;
    else
        f->sess_tail = s;
    if (p)
        p->snext = s;
    else
        f->sess_head = s;
}

static void sess_unlink(struct fsm *f, struct sess *s)
{
    htab_remove(&f->sessions, &s->h);
    f->name_bytes -= s->name_len;
    f->n_reent -= s->reentrant;
    fsm_usage_session(f, s, -1);
    DLIST_UNLINK_ENDS_F(f->sess_head, f->sess_tail, s, sprev, snext);
}

void fsm_sess_destroy(struct sess *s)
{
    free(s->req_err);
    free(s->req_txn);
    free(s);
}

/* Exclusive holds first, then waits, then shared holds: once its waits are gone, no hand-on
 * can grant the ending session anything (an upgrade waiter would be its own shared hold's). */
void fsm_sess_end(struct actx *a, struct sess *s, bool expired)
{
    bool revoked = a->c->op == FSM_OP_SESSION_REVOKE;
    uint64_t delay = expired ? s->lockdelay_ms : 0;
    s->ending = 1; /* a release below may hand on to its own multi-request: not granted */
    while (s->held_head)
        fsm_lock_release(a, s->held_head, delay, expired);
    while (s->wait_head)
        fsm_waiter_leave(a, s->wait_head);
    while (s->sh_head)
        fsm_shold_release(a, s->sh_head, delay, expired);
    /* The lease list's order is not kept by a snapshot: the events go out in key order, the
     * same on every replica (watch ids depend on it). */
    size_t first_key = a->ev->n;
    while (s->keys) {
        struct fsm_event *e =
            fsm_emit(a, FSM_EV_KEY_DELETED, s->sid, 0, 0, s->keys->key, s->keys->key_len);
        if (e) {
            e->expired = expired;
            e->revoked = revoked;
        }
        fsm_kv_delete(a->f, s->keys);
    }
    fsm_sort_events_by_name(a, first_key);
    fsm_latch_sess_end(a, s); /* an open latch promise or a place in a barrier breaks it */
    struct fsm_event *e = fsm_emit(a, FSM_EV_SESSION_ENDED, s->sid, 0, 0, NULL, 0);
    if (e) {
        e->expired = expired;
        e->revoked = revoked;
    }
    sess_unlink(a->f, s);
    fsm_sess_destroy(s);
}

/* SESSION_OPEN (and SESSION_OPEN_REENTRANT, reent.c): the session id is the revision this
 * command allocates. The new session, or NULL with r answered ERR (nothing changed). */
struct sess *fsm_sess_open(struct actx *a, uint64_t ttl_ms, uint64_t lockdelay_ms,
                           struct fsm_str name, struct fsm_reply *r)
{
    if (ttl_ms == 0) {
        fsm_reply_err(r, PROTO_ERR " ttl_ms must be at least 1");
        return NULL;
    }
    struct sess *s = fsm_sess_alloc(0, name.p, name.len, a->c->user);
    if (!s) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return NULL;
    }
    s->sid = fsm_next_rev(a);
    s->ttl_ms = ttl_ms;
    s->lockdelay_ms = lockdelay_ms;
    fsm_sess_insert(a->f, s);
    fsm_emit(a, FSM_EV_SESSION_OPENED, s->sid, 0, ttl_ms, NULL, 0);
    r->kind = FSM_REPLY_INT;
    r->value = s->sid;
    return s;
}

void fsm_op_session_new(struct actx *a, const struct fsm_cmd_session_open *c, struct fsm_reply *r)
{
    fsm_sess_open(a, c->ttl_ms, c->lockdelay_ms, c->name, r);
}

void fsm_op_session_end(struct actx *a, const struct fsm_cmd_session_end *c, struct fsm_reply *r,
                        bool expired)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    fsm_sess_end(a, s, expired);
    if (a->nrev == 0)
        fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}

/*
 * SESSION_CHECKPOINT: the leader records how much of a lease it measured as left, so that a
 * later leader does not grant a full TTL again (etcd's lease checkpoints). No revision: it
 * changes no lock, key or token.
 */
void fsm_op_session_checkpoint(struct actx *a, const struct fsm_cmd_session_checkpoint *c,
                               struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    s->checkpoint_ms = c->remaining_ms < s->ttl_ms ? c->remaining_ms : 0;
    r->kind = FSM_REPLY_OK;
}
