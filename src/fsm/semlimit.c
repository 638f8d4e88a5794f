/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/semlimit.c — an operator's semaphore limit as state: SEM_LIMIT_SET, SEM_LIMIT_RESET, the
 * override table and its snapshot section (tag 5).
 *
 * Owns struct semlim (one per semaphore name with an override, in fsm.semlims by name bytes:
 * a table of its own beside the locks). Why state and not a change to the live record (what
 * SEM_SETLIMIT did): every acquirer passes its own `limit`, and one that differs from the live
 * semaphore's is refused, so after an operator's change every client still passing the old
 * limit was refused; and the change was lost when the semaphore was dropped (nothing holding
 * or waiting) and the next first acquirer set its own limit again.
 *
 * Rules:
 *   - SET name limit (1..FSM_MAX_SEM_LIMIT): the override of `name` becomes `limit`, whether or
 *     not the semaphore exists (an operator may set it first). A live semaphore takes it at once
 *     by SEM_SETLIMIT's rule (sem.c's fsm_sem_limit_refused and fsm_sem_limit_apply, shared):
 * holders above a lower limit keep their permits (nothing is granted until in_use + the head's
 * permits fit); a queued request for more permits than the new limit refuses the change (ERR,
 * nothing changes); a higher limit grants the queue's head run. A name that is a lock or an
 * election: WRONGTYPE. -> OK (the same limit again: OK, no revision).
 *   - while an override exists it wins over the acquirers' argument: SEM_ACQUIRE(_W) accepts any
 *     valid limit (1..FSM_MAX_SEM_LIMIT) and ignores it, a semaphore created then takes the
 *     override, and PERMITS are checked against the override (sem.c asks fsm_semlim_get).
 *     Invariant: a live semaphore with an override has that limit (fsm_semlim_check).
 *   - the override survives the semaphore being dropped and recreated; it is removed only by
 *     RESET name -> INT 1 (removed) | INT 0 (there was none). A live semaphore keeps the limit it
 *     has; once it is dropped the next first acquirer sets the limit again, as before overrides.
 *   - the old op SEM_SETLIMIT (an entry written before SEM_LIMIT_SET existed, or by an older
 *     leader) changes the override too when one exists, so the invariant holds whatever the log.
 * Revisions: every change takes one; an answer that changes nothing takes none. No events.
 * Quotas: an override counts as a lock (fsm_stats; FSM_GROW_SEMLIM).
 *
 * Snapshot section 5 (snap_sect.h), written only while an override exists:
 *   varint n (>= 1), then per override in strictly increasing name byte order:
 *     str name (1..FSM_MAX_NAME), varint limit (1..FSM_MAX_SEM_LIMIT)
 *   A semaphore of that name in the base records has exactly that limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

struct semlim {
    struct onode o; /* in fsm.semlims */
    uint32_t limit;
    uint16_t name_len;
    char name[];
};

static struct semlim *semlim_find(const struct fsm *f, const char *name, size_t len)
{
    struct onode *n = fsm_otree_find(f->semlims, name, len);
    return n ? ONODE_OWNER(n, struct semlim, o) : NULL;
}

static struct semlim *semlim_new(struct fsm *f, const char *name, size_t len, uint32_t limit)
{
    struct semlim *o = calloc(1, sizeof(*o) + len);
    if (!o)
        return NULL;
    memcpy(o->name, name, len);
    o->name_len = (uint16_t)len;
    onode_set_key(&o->o, o->name, o->name_len);
    o->limit = limit;
    f->n_semlims++;
    f->semlim_bytes += len;
    return o;
}

static void semlim_free(struct fsm *f, struct semlim *o)
{
    f->n_semlims--;
    f->semlim_bytes -= o->name_len;
    free(o);
}

static void free_node(struct onode *n)
{
    free(ONODE_OWNER(n, struct semlim, o));
}

void fsm_semlim_free_all(struct fsm *f)
{
    fsm_otree_drain(&f->semlims, free_node);
    f->n_semlims = f->semlim_bytes = 0;
}

uint32_t fsm_semlim_get(const struct fsm *f, const char *name, size_t len)
{
    const struct semlim *o = semlim_find(f, name, len);
    return o ? o->limit : 0;
}

void fsm_semlim_follow(struct fsm *f, const struct lock *l)
{
    struct semlim *o = semlim_find(f, l->name, l->name_len);
    if (o)
        o->limit = l->limit;
}

void fsm_op_sem_limit_set(struct actx *a, const struct fsm_cmd_sem_setlimit *c, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_sem_limit_refused(l, c->limit, r)) /* SEM_SETLIMIT's rule (sem.c) */
        return;
    struct semlim *o = semlim_find(a->f, c->name.p, c->name.len);
    if (o && o->limit == c->limit && (!l || l->limit == c->limit)) {
        r->kind = FSM_REPLY_OK; /* nothing changes: no revision */
        return;
    }
    if (!o) {
        o = semlim_new(a->f, c->name.p, c->name.len, (uint32_t)c->limit);
        if (!o) {
            fsm_reply_err(r, PROTO_ERR " out of memory");
            return;
        }
        fsm_otree_insert(&a->f->semlims, &o->o);
    }
    o->limit = (uint32_t)c->limit;
    r->kind = FSM_REPLY_OK;
    fsm_next_rev(a);
    if (l && l->limit != c->limit)
        fsm_sem_limit_apply(a, l, (uint32_t)c->limit);
}

void fsm_op_sem_limit_reset(struct actx *a, const struct fsm_cmd_sem_limit_reset *c,
                            struct fsm_reply *r)
{
    struct semlim *o = semlim_find(a->f, c->name.p, c->name.len);
    fsm_reply_int(r, o ? 1 : 0);
    if (!o)
        return;
    fsm_otree_remove(&a->f->semlims, &o->o);
    semlim_free(a->f, o);
    fsm_next_rev(a);
}

/* ---- invariants ---- */

struct check_arg {
    const struct fsm *f;
    const char *why;
    uint64_t n, bytes;
};

static int check_one(void *arg, const struct onode *n)
{
    struct check_arg *c = arg;
    const struct semlim *o = ONODE_OWNER(n, const struct semlim, o);
    c->n++;
    c->bytes += o->name_len;
    if (o->name_len == 0 || o->name_len > FSM_MAX_NAME || o->limit == 0 ||
        o->limit > FSM_MAX_SEM_LIMIT)
        return (c->why = "an override's name or limit out of range", 1);
    const struct lock *l = fsm_lock_find(c->f, o->name, o->name_len);
    if (l && l->kind == FSM_KIND_SEM && l->limit != o->limit)
        return (c->why = "a semaphore's limit is not its override's", 1);
    return 0;
}

int fsm_semlim_check(const struct fsm *f, char *err, size_t errlen)
{
    struct check_arg c = {f, NULL, 0, 0};
    size_t nodes = 0;
    if (fsm_otree_check(f->semlims, &nodes))
        c.why = "override tree out of order or unbalanced";
    else if (!fsm_otree_walk(f->semlims, NULL, 0, check_one, &c) &&
             (c.n != f->n_semlims || nodes != c.n || c.bytes != f->semlim_bytes))
        c.why = "override totals wrong";
    if (c.why && errlen)
        snprintf(err, errlen, "semaphore limits: %s", c.why);
    return c.why ? -1 : 0;
}

/* ---- snapshot section 5 (format: the header comment) ---- */

bool fsm_semlim_present(const struct fsm *f)
{
    return f->semlims != NULL;
}

static int emit_one(void *arg, const struct onode *n)
{
    const struct semlim *o = ONODE_OWNER(n, const struct semlim, o);
    return buf_put_bytes(arg, o->name, o->name_len) || buf_put_varint(arg, o->limit);
}

int fsm_semlim_emit(const struct fsm *f, struct buf *b)
{
    if (buf_put_varint(b, f->n_semlims))
        return -1;
    return fsm_otree_walk(f->semlims, NULL, 0, emit_one, b) ? -1 : 0;
}

const char *fsm_semlim_restore(struct fsm *nf, struct rd *r)
{
    uint64_t n;
    struct semlim *last = NULL;
    if (fsm_rd_varint(r, &n))
        return "truncated override count";
    if (n == 0 || n > r->len - r->off)
        return "bad override count";
    for (uint64_t i = 0; i < n; i++) {
        const char *name;
        uint32_t len;
        uint64_t limit;
        if (fsm_rd_str(r, &name, &len, FSM_MAX_NAME) || len == 0)
            return "bad override name";
        if (last && fsm_name_cmp(last->name, last->name_len, name, len) >= 0)
            return "overrides not in strictly increasing name order";
        if (fsm_rd_varint(r, &limit))
            return "truncated override";
        if (limit == 0 || limit > FSM_MAX_SEM_LIMIT)
            return "override limit out of range";
        struct semlim *o = semlim_new(nf, name, len, (uint32_t)limit);
        if (!o)
            return "out of memory";
        fsm_otree_append(&nf->semlims, last ? &last->o : NULL, &o->o);
        last = o;
    }
    fsm_otree_balance(&nf->semlims, (size_t)n);
    char err[FSM_ERR_LEN];
    return fsm_semlim_check(nf, err, sizeof(err)) ? "a semaphore's limit is not its override's"
                                                  : NULL;
}
