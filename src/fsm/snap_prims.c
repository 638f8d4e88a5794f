/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/snap_prims.c — the snapshot fields of semaphores and elections (version 4).
 *
 * Owns the per-lock v4 fields that snapshot.c's lock record carries: after the name, u8 kind
 * (enum fsm_kind) and for a semaphore varint limit; after an election's holder, str value and
 * varint value_rev; after each election waiter, str value. A weighted semaphore (fsm_sem_weighted:
 * a hold or a request of other than 1 permit, or more permits in use than its limit) is
 * written with kind byte SNAP_KIND_WSEM instead of 1, and then each shared hold and each
 * waiter is followed by varint permits (1..FSM_MAX_SEM_LIMIT); an unweighted one keeps the
 * bytes it always had. The readers return NULL, or the
 * text of what is wrong (snapshot.c reports it with the byte offset); a value read is copied
 * into the record, which then owns it, and counted in fsm.name_bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define SNAP_KIND_WSEM 3 /* the kind byte of a weighted semaphore's record */

int fsm_snap_emit_kind(const struct lock *l, bool weighted, struct buf *b)
{
    int rc = buf_put_u8(b, weighted ? SNAP_KIND_WSEM : l->kind);
    if (l->kind == FSM_KIND_SEM)
        rc = rc || buf_put_varint(b, l->limit);
    return rc;
}

int fsm_snap_emit_leader(const struct lock *l, struct buf *b)
{
    if (l->kind != FSM_KIND_ELECT || !l->holder)
        return 0;
    return buf_put_bytes(b, LX(l)->value, LX(l)->value_len) || buf_put_varint(b, LX(l)->value_rev);
}

int fsm_snap_emit_candidate(const struct lock *l, bool weighted, const struct waiter *w,
                            struct buf *b)
{
    if (l->kind == FSM_KIND_SEM)
        return weighted ? buf_put_varint(b, w->permits) : 0;
    return l->kind == FSM_KIND_ELECT ? buf_put_bytes(b, w->value, w->value_len) : 0;
}

int fsm_snap_emit_permits(bool weighted, const struct shold *h, struct buf *b)
{
    return weighted ? buf_put_varint(b, h->permits) : 0;
}

/* 1..FSM_MAX_SEM_LIMIT after a weighted semaphore's hold or waiter; 1 without weights. */
const char *fsm_snap_read_permits(struct rd *r, const struct lock *l, uint32_t *permits)
{
    uint64_t v = 1;
    if (l->snap_weighted && fsm_rd_varint(r, &v))
        return "truncated or malformed number";
    if (v == 0 || v > FSM_MAX_SEM_LIMIT)
        return "semaphore permits out of range";
    *permits = (uint32_t)v;
    return NULL;
}

const char *fsm_snap_read_kind(struct rd *r, struct lock *l)
{
    uint64_t limit;
    if (rd_u8(r, &l->kind) || (l->kind >= FSM_KIND__COUNT && l->kind != SNAP_KIND_WSEM))
        return "bad object kind";
    if (l->kind == SNAP_KIND_WSEM) {
        l->kind = FSM_KIND_SEM;
        l->snap_weighted = 1;
    }
    if (l->kind == FSM_KIND_ELECT && !fsm_lock_x(l)) /* an election always has one */
        return "out of memory";
    if (l->kind != FSM_KIND_SEM)
        return NULL;
    if (fsm_rd_varint(r, &limit))
        return "truncated or malformed number";
    if (limit == 0 || limit > FSM_MAX_SEM_LIMIT)
        return "semaphore limit out of range";
    l->limit = (uint32_t)limit;
    return NULL;
}

static const char *read_value(struct fsm *f, struct rd *r, char **v, uint32_t *n)
{
    const char *p;
    if (fsm_rd_str(r, &p, n, FSM_MAX_ELECT_VALUE))
        return "truncated, malformed or oversized election value";
    if (*n && !(*v = malloc(*n)))
        return "out of memory";
    if (*n)
        memcpy(*v, p, *n);
    f->name_bytes += *n;
    return NULL;
}

/* The value revision is the grant's (the token) or a PROCLAIM's after it; *rev is set to the
 * latter, for the caller's distinct-revision check (0 if it is the token). */
const char *fsm_snap_read_leader(struct fsm *f, struct rd *r, struct lock *l, uint64_t *rev)
{
    const char *why;
    *rev = 0;
    if (l->kind != FSM_KIND_ELECT || !l->holder)
        return NULL;
    struct lock_x *x = l->x; /* fsm_snap_read_kind gave the election one */
    if ((why = read_value(f, r, &x->value, &x->value_len)))
        return why;
    if (fsm_rd_varint(r, &x->value_rev))
        return "truncated or malformed number";
    if (x->value_rev < l->token || x->value_rev > f->revision)
        return "leader value revision out of range";
    *rev = x->value_rev != l->token ? x->value_rev : 0;
    return NULL;
}

const char *fsm_snap_read_candidate(struct fsm *f, struct rd *r, const struct lock *l,
                                    struct waiter *w)
{
    w->permits = 1;
    if (l->kind == FSM_KIND_SEM)
        return fsm_snap_read_permits(r, l, &w->permits);
    return l->kind == FSM_KIND_ELECT ? read_value(f, r, &w->value, &w->value_len) : NULL;
}

/* The rules of the kind, once the record is complete. */
const char *fsm_snap_check_kind(struct lock *l)
{
    bool weighted = l->snap_weighted;
    l->snap_weighted = 0;
    if (l->kind == FSM_KIND_SEM && l->holder)
        return "semaphore held exclusively";
    if (weighted != fsm_sem_weighted(l)) /* canonical: the weighted form only when needed */
        return "semaphore record in the wrong form (weighted or not)";
    for (const struct waiter *w = l->wq_head; w && l->kind == FSM_KIND_SEM; w = w->lnext)
        if (w->permits > l->limit)
            return "semaphore request for more permits than its limit";
    if (l->kind == FSM_KIND_ELECT && l->n_shared)
        return "election with shared holders";
    for (const struct waiter *w = l->wq_head; w; w = w->lnext)
        if (l->kind != FSM_KIND_LOCK && (l->kind == FSM_KIND_SEM) != (w->shared != 0))
            return "semaphore waiter not shared or election candidate shared";
    return NULL;
}
