/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wakeidx.c — parked readers grouped by the prefix they watch (wakeidx.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "server/watch/wakeidx.h"

#define M61 ((1ull << 61) - 1)

struct wake_group {
    struct wake_group *hnext; /* the next group whose prefix has the same hash */
    struct wake_member *members;
    uint64_t h;
    size_t plen;
    char prefix[];
};

/* a * b mod 2^61 - 1 (a, b < 2^61). */
static uint64_t mulmod(uint64_t a, uint64_t b)
{
    unsigned __int128 p = (unsigned __int128)a * b;
    uint64_t r = ((uint64_t)p & M61) + (uint64_t)(p >> 61);
    while (r >= M61)
        r -= M61;
    return r;
}

/* The hash of s[0:L+1] from that of s[0:L]. */
static uint64_t hash_step(const struct wake_index *x, uint64_t h, unsigned char c)
{
    uint64_t r = mulmod(h, x->base) + c + 1;
    return r >= M61 ? r - M61 : r;
}

static uint64_t hash_of(const struct wake_index *x, const char *p, size_t len)
{
    uint64_t h = 0;
    for (size_t i = 0; i < len; i++)
        h = hash_step(x, h, (unsigned char)p[i]);
    return h;
}

void wake_index_init(struct wake_index *x, uint64_t key)
{
    memset(x, 0, sizeof(*x));
    map_init(&x->by_hash);
    x->base = 2 + key % (M61 - 3);
}

static void free_chain(void *val)
{
    struct wake_group *g = val;
    while (g) {
        struct wake_group *next = g->hnext;
        free(g);
        g = next;
    }
}

void wake_index_free(struct wake_index *x)
{
    map_free(&x->by_hash, free_chain);
    free(x->all);
    x->all = NULL;
    x->groups = 0;
}

static void link_member(struct wake_group *g, struct wake_member *m, void *owner)
{
    m->g = g;
    m->owner = owner;
    DLIST_PUSH(g->members, m);
}

/* The group of a prefix, or NULL; *head: the chain of its hash. */
static struct wake_group *find(struct wake_index *x, uint64_t h, const char *p, size_t len,
                               struct wake_group **head)
{
    *head = map_get(&x->by_hash, &h, sizeof(h));
    for (struct wake_group *g = *head; g; g = g->hnext)
        if (g->plen == len && (len == 0 || memcmp(g->prefix, p, len) == 0))
            return g;
    return NULL;
}

int wake_index_add(struct wake_index *x, struct wake_member *m, bool all, const char *prefix,
                   size_t plen, void *owner)
{
    if (all) {
        if (!x->all && !(x->all = calloc(1, sizeof(*x->all))))
            return -1;
        link_member(x->all, m, owner);
        return 0;
    }
    uint64_t h = hash_of(x, prefix, plen);
    struct wake_group *head, *g = find(x, h, prefix, plen, &head);
    if (!g) {
        if (!(g = calloc(1, sizeof(*g) + plen)))
            return -1;
        g->h = h;
        g->plen = plen;
        if (plen)
            memcpy(g->prefix, prefix, plen);
        g->hnext = head;
        if (map_put(&x->by_hash, &h, sizeof(h), g)) {
            free(g);
            return -1;
        }
        x->groups++;
        if (plen > x->max_plen)
            x->max_plen = plen;
    }
    link_member(g, m, owner);
    return 0;
}

void wake_index_del(struct wake_index *x, struct wake_member *m)
{
    struct wake_group *g = m->g;
    DLIST_UNLINK(g->members, m);
    m->g = NULL;
    if (g->members || g == x->all)
        return;
    struct wake_group *head = map_get(&x->by_hash, &g->h, sizeof(g->h));
    if (head == g) {
        uint64_t h = g->h;
        if (g->hnext)
            map_put(&x->by_hash, &h, sizeof(h), g->hnext); /* replaces: no allocation */
        else
            map_del(&x->by_hash, &h, sizeof(h));
    } else {
        while (head->hnext != g)
            head = head->hnext;
        head->hnext = g->hnext;
    }
    free(g);
    if (--x->groups == 0)
        x->max_plen = 0;
}

static void visit(struct wake_group *g, void (*cb)(void *arg, struct wake_member *m), void *arg)
{
    struct wake_member *m = g->members;
    while (m) {
        struct wake_member *next = m->next;
        cb(arg, m);
        m = next;
    }
}

void wake_index_match(struct wake_index *x, const char *name, size_t len, bool named,
                      void (*cb)(void *arg, struct wake_member *m), void *arg)
{
    if (x->all)
        visit(x->all, cb, arg);
    if (!named || !x->groups)
        return;
    uint64_t h = 0;
    for (size_t l = 0;; l++) {
        struct wake_group *head, *g = find(x, h, name, l, &head);
        if (g)
            visit(g, cb, arg);
        if (l == len || l == x->max_plen)
            return;
        h = hash_step(x, h, (unsigned char)name[l]);
    }
}
