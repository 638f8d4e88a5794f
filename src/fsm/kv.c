/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/kv.c — the key-value store: an AVL tree ordered by key bytes (otree), PUT/DEL, get, scan.
 *
 * Owns the key records and their value copies. The tree gives lookups in O(log n) and prefix
 * scans in O(log n + k). A key leased to a session is also on that session's key list, so the
 * session's end deletes its keys in O(its keys). Check order for writes: lease, FENCE, IFREV.
 */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "fsm/internal.h"

struct kv *fsm_kv_find(const struct fsm *f, const char *key, size_t keylen)
{
    if (keylen == 0)
        return NULL;
    struct onode *n = fsm_otree_find(f->keys, key, keylen);
    return n ? ONODE_OWNER(n, struct kv, o) : NULL;
}

struct kv *fsm_kv_alloc(const char *key, size_t keylen)
{
    struct kv *k = malloc(sizeof(*k) + keylen);
    if (!k)
        return NULL;
    memset(k, 0, sizeof(*k));
    k->key_len = (uint16_t)keylen;
    memcpy(k->key, key, keylen);
    onode_set_key(&k->o, k->key, k->key_len);
    return k;
}

void fsm_kv_insert(struct fsm *f, struct kv *k)
{
    fsm_otree_insert(&f->keys, &k->o);
    f->n_keys++;
    f->kv_bytes += k->key_len + k->value_len;
}

void fsm_kv_insert_last(struct fsm *f, struct kv *k, struct kv *last)
{
    fsm_otree_append(&f->keys, last ? &last->o : NULL, &k->o);
    f->n_keys++;
    f->kv_bytes += k->key_len + k->value_len;
}

void fsm_kv_set_lease(struct kv *k, struct sess *s)
{
    struct sess *old = k->lease;
    if (old) {
        DLIST_UNLINK_F(old->keys, k, lprev, lnext);
        old->n_keys--;
    }
    k->lprev = k->lnext = NULL;
    k->lease = s;
    if (s) {
        k->lnext = s->keys;
        if (s->keys)
            s->keys->lprev = k;
        s->keys = k;
        s->n_keys++;
    }
}

void fsm_kv_delete(struct fsm *f, struct kv *k)
{
    fsm_otree_remove(&f->keys, &k->o);
    f->n_keys--;
    f->kv_bytes -= k->key_len + k->value_len;
    fsm_kv_set_lease(k, NULL);
    free(k->value);
    free(k);
}

static void free_kv(struct onode *n)
{
    struct kv *k = ONODE_OWNER(n, struct kv, o);
    free(k->value);
    free(k);
}

void fsm_kv_free_all(struct fsm *f)
{
    fsm_otree_drain(&f->keys, free_kv);
    f->n_keys = 0;
    f->kv_bytes = 0;
}

/* ---- ops ---- */

/* FENCE: the write applies only while fence_token is the current holder's token. */
int fsm_kv_fence_fails(struct actx *a, const struct fsm_kv_cond *c, struct fsm_reply *r)
{
    if (!c->has_fence)
        return 0;
    struct lock *l = fsm_lock_find(a->f, c->fence_name.p, c->fence_name.len);
    if (l && ((l->holder && l->token == c->fence_token) ||
              (l->kind == FSM_KIND_SEM && fsm_shold_token_held(l, c->fence_token))))
        return 0;
    char nm[FSM_NAME_SHOWN];
    fsm_reply_err(r, PROTO_STALE " token %llu is not the current token of lock %s",
                  (unsigned long long)c->fence_token,
                  fsm_printable(c->fence_name.p, c->fence_name.len, nm, sizeof(nm)));
    fsm_emit(a, FSM_EV_FENCE_REJECTED, 0, c->fence_token, 0, c->fence_name.p, c->fence_name.len);
    return -1;
}

/* IFREV 0: the key must be absent; IFREV n > 0: the key must exist with mod_rev n. */
int fsm_kv_ifrev_fails(const struct fsm_kv_cond *c, const struct kv *k, struct fsm_reply *r)
{
    if (!c->has_ifrev)
        return 0;
    if (c->ifrev == 0 && k) {
        fsm_reply_err(r, PROTO_IFREV " key exists (mod_rev %llu), IFREV 0 requires it absent",
                      (unsigned long long)k->mod_rev);
        return -1;
    }
    if (c->ifrev > 0 && !k) {
        fsm_reply_err(r, PROTO_IFREV " key does not exist, IFREV %llu requires mod_rev %llu",
                      (unsigned long long)c->ifrev, (unsigned long long)c->ifrev);
        return -1;
    }
    if (c->ifrev > 0 && k->mod_rev != c->ifrev) {
        fsm_reply_err(r, PROTO_IFREV " key mod_rev is %llu, not %llu",
                      (unsigned long long)k->mod_rev, (unsigned long long)c->ifrev);
        return -1;
    }
    return 0;
}

/* Every allocation happens before the revision moves, so a failure changes nothing. */
uint64_t fsm_kv_set_value(struct actx *a, struct kv *k, struct fsm_str key, char *val, uint32_t len,
                          bool set_lease, struct sess *lease)
{
    bool fresh = !k;
    if (fresh && !(k = fsm_kv_alloc(key.p, key.len))) {
        free(val);
        return 0;
    }
    return fsm_kv_set_value_at(a, k, fresh, val, len, set_lease, lease, fsm_next_rev(a));
}

uint64_t fsm_kv_set_value_at(struct actx *a, struct kv *k, bool fresh, char *val, uint32_t len,
                             bool set_lease, struct sess *lease, uint64_t rev)
{
    if (fresh) {
        k->create_rev = rev;
        k->version = 1;
        fsm_kv_insert(a->f, k);
    } else {
        free(k->value);
        k->version++;
    }
    a->f->kv_bytes += (uint64_t)len - k->value_len; /* modular: a shrink subtracts */
    k->value = val;
    k->value_len = len;
    k->mod_rev = rev;
    if (set_lease)
        fsm_kv_set_lease(k, lease);
    uint64_t sid = k->lease ? k->lease->sid : 0;
    struct fsm_event *e = fsm_emit(a, FSM_EV_KEY_PUT, sid, 0, 0, k->key, k->key_len);
    if (e) {
        e->value.p = k->value ? k->value : "";
        e->value.len = k->value_len;
    }
    return rev;
}

void fsm_op_put(struct actx *a, const struct fsm_cmd_put *c, struct fsm_reply *r)
{
    struct sess *lease = NULL;
    if (c->lease_sid && !(lease = fsm_sess_find(a->f, c->lease_sid))) {
        fsm_nosession(r, c->lease_sid);
        return;
    }
    struct kv *k = fsm_kv_find(a->f, c->key.p, c->key.len);
    if (fsm_kv_fence_fails(a, &c->cond, r) || fsm_kv_ifrev_fails(&c->cond, k, r))
        return;
    char *val = NULL;
    if (c->value.len && !(val = malloc(c->value.len))) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (c->value.len)
        memcpy(val, c->value.p, c->value.len);
    uint64_t rev = fsm_kv_set_value(a, k, c->key, val, c->value.len, true, lease);
    if (!rev) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    r->kind = FSM_REPLY_INT;
    r->value = rev;
}

void fsm_op_del(struct actx *a, const struct fsm_cmd_del *c, struct fsm_reply *r)
{
    struct kv *k = fsm_kv_find(a->f, c->key.p, c->key.len);
    if (fsm_kv_fence_fails(a, &c->cond, r) || fsm_kv_ifrev_fails(&c->cond, k, r))
        return;
    r->kind = FSM_REPLY_INT;
    r->value = k ? 1 : 0;
    if (!k)
        return;
    fsm_emit(a, FSM_EV_KEY_DELETED, 0, 0, 0, k->key, k->key_len);
    fsm_kv_delete(a->f, k);
    fsm_next_rev(a);
}

/* ---- queries ---- */

static void fill_meta(const struct kv *k, struct fsm_kv_meta *m)
{
    m->value = k->value ? k->value : "";
    m->value_len = k->value_len;
    m->create_rev = k->create_rev;
    m->mod_rev = k->mod_rev;
    m->version = k->version;
    m->lease_sid = k->lease ? k->lease->sid : 0;
}

int fsm_kv_get(const struct fsm *f, const char *key, size_t keylen, struct fsm_kv_meta *m)
{
    const struct kv *k = fsm_kv_find(f, key, keylen);
    if (!k)
        return 0;
    fill_meta(k, m);
    return 1;
}

struct scan {
    const char *prefix;
    size_t plen, limit, visited;
    int (*cb)(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m);
    void *arg;
};

/* The keys with the prefix are one contiguous run from the first key >= prefix: the walk stops
 * at the first key without it. O(log n + k). */
static int scan_visit(void *arg, const struct onode *n)
{
    struct scan *s = arg;
    const struct kv *k = ONODE_OWNER(n, const struct kv, o);
    if (k->key_len < s->plen || (s->plen && memcmp(k->key, s->prefix, s->plen) != 0))
        return 1;
    struct fsm_kv_meta m;
    fill_meta(k, &m);
    s->visited++;
    return s->cb(s->arg, k->key, k->key_len, &m) || (s->limit && s->visited >= s->limit);
}

size_t fsm_kv_scan(const struct fsm *f, const char *prefix, size_t prefixlen, size_t limit,
                   int (*cb)(void *arg, const char *key, size_t keylen,
                             const struct fsm_kv_meta *m),
                   void *arg)
{
    struct scan s = {.prefix = prefix, .plen = prefixlen, .limit = limit, .cb = cb, .arg = arg};
    fsm_otree_walk(f->keys, prefix, prefixlen, scan_visit, &s);
    return s.visited;
}
