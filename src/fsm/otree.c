/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/otree.c — an intrusive AVL tree of records ordered by their name bytes.
 *
 * Used for every FSM record that must be visited in byte order: keys (KEYS, snapshots) and
 * locks (LOCKS, snapshots). A node points at its record's own name, so comparisons need no
 * callback. The tree owns no memory: records are inserted, removed and freed by their
 * owners. Depth is at most ~1.44 log2(n) (about 30 for 1M records), which bounds recursion.
 */
#include <string.h>

#include "fsm/internal.h"

int fsm_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int node_cmp(const struct onode *a, const struct onode *b)
{
    return fsm_name_cmp(onode_key(a), a->key_len, onode_key(b), b->key_len);
}

struct onode *fsm_otree_find(const struct onode *root, const char *key, size_t len)
{
    while (root) {
        int c = fsm_name_cmp(key, len, onode_key(root), root->key_len);
        if (c == 0)
            return (struct onode *)root;
        root = c < 0 ? root->left : root->right;
    }
    return NULL;
}

static int height(const struct onode *n)
{
    return n ? n->height : 0;
}

static void fix_height(struct onode *n)
{
    int l = height(n->left), r = height(n->right);
    n->height = (uint8_t)(1 + (l > r ? l : r));
}

static struct onode *rot_right(struct onode *y)
{
    struct onode *x = y->left;
    y->left = x->right;
    x->right = y;
    fix_height(y);
    fix_height(x);
    return x;
}

static struct onode *rot_left(struct onode *x)
{
    struct onode *y = x->right;
    x->right = y->left;
    y->left = x;
    fix_height(x);
    fix_height(y);
    return y;
}

/* Restore the AVL balance of `n` (children already balanced); returns the subtree's root. */
static struct onode *balance(struct onode *n)
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

static struct onode *insert_at(struct onode *n, struct onode *k)
{
    if (!n) {
        k->left = k->right = NULL;
        k->height = 1;
        return k;
    }
    if (node_cmp(k, n) < 0)
        n->left = insert_at(n->left, k);
    else
        n->right = insert_at(n->right, k);
    return balance(n);
}

static struct onode *unlink_min(struct onode *n, struct onode **min)
{
    if (!n->left) {
        *min = n;
        return n->right;
    }
    n->left = unlink_min(n->left, min);
    return balance(n);
}

static struct onode *remove_at(struct onode *n, const struct onode *k)
{
    if (!n)
        return NULL;
    int c = node_cmp(k, n);
    if (c < 0) {
        n->left = remove_at(n->left, k);
    } else if (c > 0) {
        n->right = remove_at(n->right, k);
    } else {
        struct onode *l = n->left, *r = n->right, *m;
        if (!r)
            return l;
        r = unlink_min(r, &m);
        m->left = l;
        m->right = r;
        return balance(m);
    }
    return balance(n);
}

void fsm_otree_insert(struct onode **root, struct onode *n)
{
    *root = insert_at(*root, n);
}

void fsm_otree_remove(struct onode **root, struct onode *n)
{
    *root = remove_at(*root, n);
}

void fsm_otree_append(struct onode **root, struct onode *last, struct onode *n)
{
    n->left = n->right = NULL;
    n->height = 1;
    if (last)
        last->right = n;
    else
        *root = n;
}

/* The first n nodes of the chain at *cur as a balanced tree (halves differ by at most one
 * node, so heights differ by at most one); *cur moves past them. */
static struct onode *build(struct onode **cur, size_t n)
{
    if (n == 0)
        return NULL;
    struct onode *left = build(cur, n / 2);
    struct onode *root = *cur;
    *cur = root->right;
    root->left = left;
    root->right = build(cur, n - n / 2 - 1);
    fix_height(root);
    return root;
}

void fsm_otree_balance(struct onode **root, size_t n)
{
    struct onode *cur = *root;
    *root = build(&cur, n);
}

int fsm_otree_walk(const struct onode *n, const char *from, size_t fromlen,
                   int (*visit)(void *arg, const struct onode *n), void *arg)
{
    for (; n; n = n->right) {
        if (fromlen && fsm_name_cmp(onode_key(n), n->key_len, from, fromlen) < 0)
            continue; /* n and its left subtree come before `from` */
        int rc = fsm_otree_walk(n->left, from, fromlen, visit, arg);
        if (rc || (rc = visit(arg, n)))
            return rc;
        fromlen = 0; /* everything right of n is after `from` */
    }
    return 0;
}

void fsm_otree_drain(struct onode **root, void (*free_node)(struct onode *n))
{
    struct onode *n = *root;
    *root = NULL;
    while (n) {
        /* rotate the left child up until there is none, then free and go right: no recursion */
        if (n->left) {
            struct onode *l = n->left;
            n->left = l->right;
            l->right = n;
            n = l;
            continue;
        }
        struct onode *r = n->right;
        free_node(n);
        n = r;
    }
}

/* In order: strictly increasing names, correct heights, balanced. */
static int check_at(const struct onode *n, const struct onode **prev, size_t *count, int *h)
{
    int hl = 0, hr = 0;
    if (!n) {
        *h = 0;
        return 0;
    }
    if (check_at(n->left, prev, count, &hl))
        return -1;
    if (*prev && node_cmp(*prev, n) >= 0)
        return -1;
    *prev = n;
    (*count)++;
    if (check_at(n->right, prev, count, &hr))
        return -1;
    if (hl - hr > 1 || hr - hl > 1 || n->height != 1 + (hl > hr ? hl : hr))
        return -1;
    *h = n->height;
    return 0;
}

int fsm_otree_check(const struct onode *root, size_t *count)
{
    const struct onode *prev = NULL;
    int h;
    *count = 0;
    return check_at(root, &prev, count, &h);
}
