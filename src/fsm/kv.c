/*
 * fsm/kv.c — the key-value store: an AVL tree ordered by key bytes, PUT/DEL, get and scan.
 *
 * Owns the key records and their value copies. The tree gives lookups in O(log n) and prefix
 * scans in O(log n + k). A key leased to a session is also on that session's key list, so the
 * session's end deletes its keys in O(its keys). Check order for writes: lease, FENCE, IFREV.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

int kv_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

struct kv *kv_find(const struct fsm *f, const char *key, size_t keylen)
{
    if (keylen == 0)
        return NULL;
    struct kv *n = f->kv_root;
    while (n) {
        int c = kv_cmp(key, keylen, n->key, n->key_len);
        if (c == 0)
            return n;
        n = c < 0 ? n->left : n->right;
    }
    return NULL;
}

struct kv *kv_alloc(const char *key, size_t keylen)
{
    struct kv *k = malloc(sizeof(*k) + keylen);
    if (!k)
        return NULL;
    memset(k, 0, sizeof(*k));
    k->key_len = (uint16_t)keylen;
    memcpy(k->key, key, keylen);
    return k;
}

/* ---- AVL ---- */

static int height(const struct kv *n)
{
    return n ? n->height : 0;
}

static void fix_height(struct kv *n)
{
    int l = height(n->left), r = height(n->right);
    n->height = (uint8_t)(1 + (l > r ? l : r));
}

static struct kv *rot_right(struct kv *y)
{
    struct kv *x = y->left;
    y->left = x->right;
    x->right = y;
    fix_height(y);
    fix_height(x);
    return x;
}

static struct kv *rot_left(struct kv *x)
{
    struct kv *y = x->right;
    x->right = y->left;
    y->left = x;
    fix_height(x);
    fix_height(y);
    return y;
}

/* Restore the AVL balance of `n` (children already balanced); returns the subtree's root. */
static struct kv *balance(struct kv *n)
{
    fix_height(n);
    int bf = height(n->left) - height(n->right);
    if (bf > 1) {
        if (height(n->left->left) < height(n->left->right))
            n->left = rot_left(n->left);
        return rot_right(n);
    }
    if (bf < -1) {
        if (height(n->right->right) < height(n->right->left))
            n->right = rot_right(n->right);
        return rot_left(n);
    }
    return n;
}

static struct kv *insert_at(struct kv *n, struct kv *k)
{
    if (!n) {
        k->left = k->right = NULL;
        k->height = 1;
        return k;
    }
    if (kv_cmp(k->key, k->key_len, n->key, n->key_len) < 0)
        n->left = insert_at(n->left, k);
    else
        n->right = insert_at(n->right, k);
    return balance(n);
}

static struct kv *unlink_min(struct kv *n, struct kv **min)
{
    if (!n->left) {
        *min = n;
        return n->right;
    }
    n->left = unlink_min(n->left, min);
    return balance(n);
}

static struct kv *remove_at(struct kv *n, const struct kv *k)
{
    if (!n)
        return NULL;
    int c = kv_cmp(k->key, k->key_len, n->key, n->key_len);
    if (c < 0) {
        n->left = remove_at(n->left, k);
    } else if (c > 0) {
        n->right = remove_at(n->right, k);
    } else {
        struct kv *l = n->left, *r = n->right, *m;
        if (!r)
            return l;
        r = unlink_min(r, &m);
        m->left = l;
        m->right = r;
        return balance(m);
    }
    return balance(n);
}

void kv_insert(struct fsm *f, struct kv *k)
{
    f->kv_root = insert_at(f->kv_root, k);
    f->n_keys++;
}

void kv_set_lease(struct kv *k, struct sess *s)
{
    struct sess *old = k->lease;
    if (old) {
        if (k->lprev)
            k->lprev->lnext = k->lnext;
        else
            old->keys = k->lnext;
        if (k->lnext)
            k->lnext->lprev = k->lprev;
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

void kv_delete(struct fsm *f, struct kv *k)
{
    f->kv_root = remove_at(f->kv_root, k);
    f->n_keys--;
    kv_set_lease(k, NULL);
    free(k->value);
    free(k);
}

void kv_free_tree(struct kv *root)
{
    while (root) {
        /* rotate the left child up until there is none, then free and go right: no recursion */
        if (root->left) {
            struct kv *l = root->left;
            root->left = l->right;
            l->right = root;
            root = l;
            continue;
        }
        struct kv *r = root->right;
        free(root->value);
        free(root);
        root = r;
    }
}

/* ---- ops ---- */

/* FENCE: the write applies only while fence_token is the current holder's token. */
static int fence_fails(struct actx *a, struct fsm_reply *r)
{
    const struct fsm_cmd *c = a->c;
    if (!c->has_fence)
        return 0;
    struct lock *l = lock_find(a->f, c->fence_name.p, c->fence_name.len);
    if (l && l->holder && l->token == c->fence_token)
        return 0;
    char nm[64];
    fsm_reply_err(r, "STALE token %llu is not the current token of lock %s",
                  (unsigned long long)c->fence_token,
                  fsm_printable(c->fence_name.p, c->fence_name.len, nm, sizeof(nm)));
    fsm_emit(a, FSM_EV_FENCE_REJECTED, 0, c->fence_token, 0, c->fence_name.p, c->fence_name.len);
    return -1;
}

/* IFREV 0: the key must be absent; IFREV n > 0: the key must exist with mod_rev n. */
static int ifrev_fails(const struct fsm_cmd *c, const struct kv *k, struct fsm_reply *r)
{
    if (!c->has_ifrev)
        return 0;
    if (c->ifrev == 0 && k) {
        fsm_reply_err(r, "IFREV key exists (mod_rev %llu), IFREV 0 requires it absent",
                      (unsigned long long)k->mod_rev);
        return -1;
    }
    if (c->ifrev > 0 && !k) {
        fsm_reply_err(r, "IFREV key does not exist, IFREV %llu requires mod_rev %llu",
                      (unsigned long long)c->ifrev, (unsigned long long)c->ifrev);
        return -1;
    }
    if (c->ifrev > 0 && k->mod_rev != c->ifrev) {
        fsm_reply_err(r, "IFREV key mod_rev is %llu, not %llu", (unsigned long long)k->mod_rev,
                      (unsigned long long)c->ifrev);
        return -1;
    }
    return 0;
}

/* Every allocation happens before the revision moves, so a failure changes nothing. */
void op_put(struct actx *a, struct fsm_reply *r)
{
    const struct fsm_cmd *c = a->c;
    struct sess *lease = NULL;
    if (c->lease_sid && !(lease = sess_find(a->f, c->lease_sid))) {
        fsm_nosession(r, c->lease_sid);
        return;
    }
    struct kv *k = kv_find(a->f, c->key.p, c->key.len);
    if (fence_fails(a, r) || ifrev_fails(c, k, r))
        return;
    char *val = NULL;
    if (c->value.len && !(val = malloc(c->value.len))) {
        fsm_reply_err(r, "ERR out of memory");
        return;
    }
    if (c->value.len)
        memcpy(val, c->value.p, c->value.len);
    bool fresh = !k;
    if (fresh && !(k = kv_alloc(c->key.p, c->key.len))) {
        free(val);
        fsm_reply_err(r, "ERR out of memory");
        return;
    }
    uint64_t rev = fsm_next_rev(a);
    if (fresh) {
        k->create_rev = rev;
        k->version = 1;
        kv_insert(a->f, k);
    } else {
        free(k->value);
        k->version++;
    }
    k->value = val;
    k->value_len = c->value.len;
    k->mod_rev = rev;
    kv_set_lease(k, lease);
    r->kind = FSM_REPLY_INT;
    r->value = rev;
}

void op_del(struct actx *a, struct fsm_reply *r)
{
    const struct fsm_cmd *c = a->c;
    struct kv *k = kv_find(a->f, c->key.p, c->key.len);
    if (fence_fails(a, r) || ifrev_fails(c, k, r))
        return;
    r->kind = FSM_REPLY_INT;
    r->value = k ? 1 : 0;
    if (!k)
        return;
    kv_delete(a->f, k);
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
    const struct kv *k = kv_find(f, key, keylen);
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
    bool stop;
};

/*
 * In-order walk from the first key >= prefix: the keys with the prefix are one contiguous run
 * there, so the walk stops at the first key without it. O(log n + k).
 */
static void scan_from(const struct kv *n, struct scan *s)
{
    if (!n || s->stop)
        return;
    if (kv_cmp(n->key, n->key_len, s->prefix, s->plen) < 0) {
        scan_from(n->right, s);
        return;
    }
    scan_from(n->left, s);
    if (s->stop)
        return;
    if (n->key_len < s->plen || (s->plen && memcmp(n->key, s->prefix, s->plen) != 0)) {
        s->stop = true;
        return;
    }
    struct fsm_kv_meta m;
    fill_meta(n, &m);
    s->visited++;
    if (s->cb(s->arg, n->key, n->key_len, &m) || (s->limit && s->visited >= s->limit)) {
        s->stop = true;
        return;
    }
    scan_from(n->right, s);
}

size_t fsm_kv_scan(const struct fsm *f, const char *prefix, size_t prefixlen, size_t limit,
                   int (*cb)(void *arg, const char *key, size_t keylen,
                             const struct fsm_kv_meta *m),
                   void *arg)
{
    struct scan s = {.prefix = prefix, .plen = prefixlen, .limit = limit, .cb = cb, .arg = arg};
    scan_from(f->kv_root, &s);
    return s.visited;
}
