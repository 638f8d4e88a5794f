/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/txn.c — TXN: compares over keys and locks, then the writes of the branch they select,
 * applied as one log entry or not at all (etcd's Txn, Consul's /v1/txn, ZooKeeper's multi).
 *
 * Owns no state of its own: a TXN reads keys (kv.c) and locks (lock.c), and writes keys
 * through the same record operations as PUT, DEL and INCR. Its reply's per-op results live
 * in fsm.txn_out until the next apply (fsm_reply.txn borrows them); the request table copies
 * them per session (sess.req_txn, fsm.c) so that a retry gets them again.
 *
 * Payload (ops.h, FSM_F_TXN): ncmp compares, nthen THEN ops, nelse ELSE ops, each entry
 *   u8 type, u8 rel, str name, varint n, str value
 * where a type uses only some fields (the others must be 0 / empty, so that every accepted
 * entry has one form: fsm_txn_item_bad is the rule the decoder applies):
 *   REV key rel n          rel any of = != < >; the key's mod_rev, 0 for an absent key
 *   VALUE key rel value    rel = or !=; an absent key has no value: = is false, != true
 *   EXISTS key, MISSING key
 *   TOKEN lock rel n       rel = or !=; "n is a current token of lock", FENCE's rule (the
 *                          exclusive holder's token, or one of a semaphore's permits)
 *   HOLDS lock n           session n holds the lock (exclusively or shared; a semaphore
 *                          permit counts); a session that does not exist holds nothing
 *   PUT key value          as PUT without options: a lease the key had is dropped
 *   DEL key                as DEL
 *   INCR key n             as INCR BY n (n: int64_t in two's complement)
 *
 * Rules, in order (an ERR or STALE answer changes nothing; no revision is taken):
 *   1. cond: an IFREV bit is refused (ERR); FENCE as PUT's (STALE, a FENCE_REJECTED event);
 *   2. every compare is evaluated against the state before the TXN; all true -> THEN, else
 *      ELSE (no compare: THEN);
 *   3. the branch's ops are checked against the state before the TXN (a key written twice in
 *      one branch, as etcd refuses it; an INCR of a value that is not a counter, or that
 *      overflows: ERR naming the op), and every allocation is made, before anything changes;
 *   4. the ops apply in order, each as its single-key command would: every op that changes a
 *      key takes the next revision (consecutive, in op order, as a LOCK_MULTI's grants: every
 *      revision names one change, the rule fsm_check_invariants and restore hold keys to), with
 *      its KEY_PUT / KEY_DELETED event, whose token is that revision (the event stream's ids
 *      carry the entry's last revision; its mod_rev field is the change's own). A DEL of an
 *      absent key changes nothing; a branch that changes nothing takes no revision.
 * The reply is INT (revision << 1) | then, where revision is the store's revision after the
 * TXN (etcd's header revision; unchanged if nothing was written) and then is 1 if THEN ran;
 * fsm_reply.txn holds each op's result of the branch that ran (PUT: its revision; DEL: the
 * deleted count; INCR: the new value). A TXN needs the revision to
 * stay below 2^62 (ERR otherwise; never reached in practice) so the shift cannot lose a bit.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define TXN_REV_LIMIT (1ull << 62) /* the reply shifts the revision left by one */

/* ---- the entry list ---- */

static bool is_cmp(uint8_t t)
{
    return t >= FSM_TXN_REV && t <= FSM_TXN_HOLDS;
}

static bool is_op(uint8_t t)
{
    return t >= FSM_TXN_PUT && t <= FSM_TXN_INCR;
}

const char *fsm_txn_item_bad(const struct fsm_txn_item *x, bool cmp)
{
    if (cmp ? !is_cmp(x->type) : !is_op(x->type))
        return cmp ? "compare has an unknown type" : "op has an unknown type";
    if (x->name.len == 0)
        return "name empty";
    bool uses_n = x->type == FSM_TXN_REV || x->type == FSM_TXN_TOKEN || x->type == FSM_TXN_HOLDS ||
                  x->type == FSM_TXN_INCR;
    bool uses_value = x->type == FSM_TXN_VALUE || x->type == FSM_TXN_PUT;
    uint8_t max_rel = x->type == FSM_TXN_REV                                 ? FSM_TXN_GT
                      : x->type == FSM_TXN_VALUE || x->type == FSM_TXN_TOKEN ? FSM_TXN_NE
                                                                             : FSM_TXN_EQ;
    if (x->rel > max_rel)
        return "relation not allowed for its type";
    if (!uses_n && x->n)
        return "number set for a type without one";
    if (!uses_value && x->value.len)
        return "value set for a type without one";
    return NULL;
}

int fsm_txn_next(struct fsm_txn_it *it, struct fsm_txn_item *x)
{
    struct rd r;
    const char *p, *v;
    uint32_t n, vn;
    rd_init(&r, it->p, it->len);
    r.off = it->off;
    if (r.off >= r.len || rd_u8(&r, &x->type) || rd_u8(&r, &x->rel) ||
        fsm_rd_str(&r, &p, &n, FSM_MAX_NAME) || n == 0 || fsm_rd_varint(&r, &x->n) ||
        fsm_rd_str(&r, &v, &vn, FSM_MAX_VALUE))
        return 0;
    it->off = r.off;
    x->name = (struct fsm_str){p, n};
    x->value = (struct fsm_str){v, vn};
    return 1;
}

int fsm_txn_add(struct buf *raw, const struct fsm_txn_item *x)
{
    return buf_put_u8(raw, x->type) || buf_put_u8(raw, x->rel) ||
           buf_put_bytes(raw, x->name.p, x->name.len) || buf_put_varint(raw, x->n) ||
           buf_put_bytes(raw, x->value.p, x->value.len);
}

/* ---- compares ---- */

static bool rel_holds(uint8_t rel, uint64_t have, uint64_t want)
{
    switch (rel) {
    case FSM_TXN_EQ:
        return have == want;
    case FSM_TXN_NE:
        return have != want;
    case FSM_TXN_LT:
        return have < want;
    default:
        return have > want;
    }
}

static bool token_current(const struct lock *l, uint64_t token)
{
    return l && ((l->holder && l->token == token) ||
                 (l->kind == FSM_KIND_SEM && fsm_shold_token_held(l, token)));
}

static bool session_holds(const struct fsm *f, const struct lock *l, uint64_t sid)
{
    const struct sess *s = fsm_sess_find(f, sid);
    return l && s && (l->holder == s || fsm_shold_find(l, s));
}

static bool compare_true(const struct fsm *f, const struct fsm_txn_item *x)
{
    const struct kv *k = NULL;
    const struct lock *l = NULL;
    if (x->type == FSM_TXN_TOKEN || x->type == FSM_TXN_HOLDS)
        l = fsm_lock_find(f, x->name.p, x->name.len);
    else
        k = fsm_kv_find(f, x->name.p, x->name.len);
    switch (x->type) {
    case FSM_TXN_REV:
        return rel_holds(x->rel, k ? k->mod_rev : 0, x->n);
    case FSM_TXN_VALUE: {
        bool eq = k && k->value_len == x->value.len &&
                  (x->value.len == 0 || memcmp(k->value, x->value.p, x->value.len) == 0);
        return x->rel == FSM_TXN_EQ ? eq : !eq;
    }
    case FSM_TXN_EXISTS:
        return k != NULL;
    case FSM_TXN_MISSING:
        return k == NULL;
    case FSM_TXN_TOKEN:
        return x->rel == FSM_TXN_EQ ? token_current(l, x->n) : !token_current(l, x->n);
    case FSM_TXN_HOLDS:
        return session_holds(f, l, x->n);
    default:
        return false; /* the decoder accepts no other compare */
    }
}

/* ---- the branch ---- */

/* One op of the branch as step 3 planned it. */
struct plan {
    struct fsm_txn_item x;
    bool exists;      /* the key exists (no other op of the branch names it) */
    struct kv *fresh; /* PUT / INCR of an absent key: its record, made in advance */
    /* (exists and fresh are decided in step 3: no other op of the branch names the key) */
    char *val; /* PUT / INCR: the new value's bytes (NULL if empty) */
    uint32_t val_len;
    int64_t counter; /* INCR: the new value */
};

static void plan_free(struct plan *pl, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(pl[i].fresh);
        free(pl[i].val);
    }
    free(pl);
}

/* Whether an earlier op of the branch (j < i) names op i's key. */
static bool key_twice(const struct plan *pl, uint32_t i)
{
    for (uint32_t j = 0; j < i; j++)
        if (pl[j].x.name.len == pl[i].x.name.len &&
            memcmp(pl[j].x.name.p, pl[i].x.name.p, pl[i].x.name.len) == 0)
            return true;
    return false;
}

/* Step 3 for op i: 0, or -1 with r answered (nothing changed). */
static int plan_op(struct actx *a, struct plan *pl, uint32_t i, struct fsm_reply *r)
{
    struct plan *p = &pl[i];
    char nm[FSM_NAME_SHOWN];
    if (key_twice(pl, i)) {
        fsm_reply_err(r, PROTO_ERR " TXN op %u: key %s is written twice in one branch", i + 1,
                      fsm_printable(p->x.name.p, p->x.name.len, nm, sizeof(nm)));
        return -1;
    }
    const struct kv *k = fsm_kv_find(a->f, p->x.name.p, p->x.name.len);
    p->exists = k != NULL;
    if (p->x.type == FSM_TXN_DEL)
        return 0;
    if (p->x.type == FSM_TXN_INCR) {
        int64_t old = 0;
        if (k && fsm_counter_parse(k->value ? k->value : "", k->value_len, &old)) {
            fsm_reply_err(r,
                          PROTO_ERR " TXN op %u: value of key %s is not a signed 64-bit decimal "
                                    "integer",
                          i + 1, fsm_printable(p->x.name.p, p->x.name.len, nm, sizeof(nm)));
            return -1;
        }
        if (__builtin_add_overflow(old, (int64_t)p->x.n, &p->counter)) {
            fsm_reply_err(r, PROTO_ERR " TXN op %u: increment would overflow: key %s is %lld",
                          i + 1, fsm_printable(p->x.name.p, p->x.name.len, nm, sizeof(nm)),
                          (long long)old);
            return -1;
        }
        if (!(p->val = fsm_counter_text(p->counter, &p->val_len)))
            goto oom;
    } else if (p->x.value.len) { /* PUT */
        if (!(p->val = malloc(p->x.value.len)))
            goto oom;
        memcpy(p->val, p->x.value.p, p->x.value.len);
        p->val_len = p->x.value.len;
    }
    if (!p->exists && !(p->fresh = fsm_kv_alloc(p->x.name.p, p->x.name.len)))
        goto oom;
    return 0;
oom:
    fsm_reply_err(r, PROTO_ERR " out of memory");
    return -1;
}

/* Step 4 for op p: its result. Nothing here can fail. */
static uint64_t run_op(struct actx *a, struct plan *p)
{
    struct fsm *f = a->f;
    struct kv *k = p->exists ? fsm_kv_find(f, p->x.name.p, p->x.name.len) : NULL;
    size_t ev0 = a->ev->n;
    uint64_t rev;
    if (p->x.type == FSM_TXN_DEL) {
        if (!k)
            return 0;
        fsm_emit(a, FSM_EV_KEY_DELETED, 0, f->revision + 1, 0, k->key, k->key_len);
        fsm_kv_delete(f, k);
        fsm_next_rev(a);
        return 1;
    }
    bool fresh = p->fresh != NULL;
    if (fresh)
        k = p->fresh;
    rev = fsm_kv_set_value_at(a, k, fresh, p->val, p->val_len, p->x.type == FSM_TXN_PUT, NULL,
                              fsm_next_rev(a));
    if (a->ev->n > ev0) /* its KEY_PUT: the change's own revision */
        a->ev->ev[ev0].token = rev;
    p->val = NULL; /* the key owns them now */
    p->fresh = NULL;
    return p->x.type == FSM_TXN_INCR ? (uint64_t)p->counter : rev;
}

void fsm_op_txn(struct actx *a, const struct fsm_cmd_txn *c, struct fsm_reply *r)
{
    struct fsm *f = a->f;
    if (c->cond.has_ifrev) {
        fsm_reply_err(r, PROTO_ERR " TXN takes no IFREV: compare with IF REV key = rev");
        return;
    }
    if (f->revision + c->txn.nthen + c->txn.nelse >= TXN_REV_LIMIT) {
        fsm_reply_err(r, PROTO_ERR " revision counter exhausted for TXN");
        return;
    }
    if (fsm_kv_fence_fails(a, &c->cond, r))
        return;
    struct fsm_txn_it it;
    struct fsm_txn_item x;
    bool then = true;
    fsm_txn_begin(&it, &c->txn);
    for (uint32_t i = 0; i < c->txn.ncmp && fsm_txn_next(&it, &x); i++)
        then = compare_true(f, &x) && then; /* every compare is evaluated */
    /* the ops of the branch that runs; skip THEN's for ELSE */
    uint32_t n = then ? c->txn.nthen : c->txn.nelse;
    if (!then)
        for (uint32_t i = 0; i < c->txn.nthen && fsm_txn_next(&it, &x); i++)
            ;
    struct plan *pl = n ? calloc(n, sizeof(*pl)) : NULL;
    if ((n && !pl) || buf_reserve(&f->txn_out, (size_t)n * sizeof(uint64_t))) {
        free(pl);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!fsm_txn_next(&it, &pl[i].x)) { /* the decoder counted them: never */
            plan_free(pl, n);
            fsm_reply_err(r, PROTO_ERR " bad entry: txn truncated");
            return;
        }
        if (plan_op(a, pl, i, r)) {
            plan_free(pl, n);
            return;
        }
    }
    buf_reset(&f->txn_out);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = run_op(a, &pl[i]);
        buf_append(&f->txn_out, &v, sizeof(v)); /* reserved above: cannot fail */
    }
    plan_free(pl, n);
    r->kind = FSM_REPLY_INT;
    r->value = (f->revision << 1) | (then ? 1u : 0u);
    r->txn = (const uint64_t *)(const void *)f->txn_out.p;
    r->txn_n = n;
    r->txn_known = true;
}
