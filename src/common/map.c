/* SPDX-License-Identifier: Apache-2.0 */
#include "common/map.h"

#include <stdlib.h>
#include <string.h>

struct map_node {
    struct hlink h; /* first: a struct hlink * is its node */
    size_t len;
    void *val;
    char key[];
};

/* The process's key (map_set_hash_key); zeros until set. */
static unsigned char hash_key[MAP_HASH_KEY_BYTES];

void map_set_hash_key(const unsigned char key[MAP_HASH_KEY_BYTES])
{
    memcpy(hash_key, key, MAP_HASH_KEY_BYTES);
}

/* Keys are lock names and session ids chosen by clients, who must not be able to pick keys
 * that share a bucket: SipHash-2-4 under the process's key. */
static uint64_t hash_bytes(const void *key, size_t len)
{
    return htab_siphash(hash_key, key, len);
}

size_t map_max_chain(const struct map *m)
{
    return htab_max_chain(&m->t);
}

void map_init(struct map *m)
{
    memset(m, 0, sizeof(*m));
}

void map_free(struct map *m, void (*free_val)(void *val))
{
    for (size_t i = 0; i < m->t.nb; i++) {
        struct hlink *x = m->t.b[i];
        while (x) {
            struct hlink *next = x->next;
            if (free_val)
                free_val(((struct map_node *)x)->val);
            free(x);
            x = next;
        }
    }
    htab_free(&m->t);
}

/* The link that points at key's node (to read it or unlink it), NULL when absent. */
static struct hlink **find(const struct map *m, const void *key, size_t len, uint64_t h)
{
    if (m->t.nb == 0)
        return NULL;
    struct hlink **pp = &m->t.b[h & (m->t.nb - 1)];
    while (*pp) {
        const struct map_node *n = (const struct map_node *)*pp;
        if (n->h.hash == h && n->len == len && memcmp(n->key, key, len) == 0)
            return pp;
        pp = &(*pp)->next;
    }
    return NULL;
}

void *map_get(const struct map *m, const void *key, size_t len)
{
    struct hlink **pp = find(m, key, len, hash_bytes(key, len));
    return pp ? ((struct map_node *)*pp)->val : NULL;
}

int map_put(struct map *m, const void *key, size_t len, void *val)
{
    uint64_t h = hash_bytes(key, len);
    struct hlink **pp = find(m, key, len, h);
    if (pp) {
        ((struct map_node *)*pp)->val = val;
        return 0;
    }
    if (m->t.n + 1 > m->t.nb && htab_grow(&m->t))
        return -1;
    struct map_node *n = malloc(sizeof(*n) + len);
    if (!n)
        return -1;
    n->len = len;
    n->val = val;
    memcpy(n->key, key, len);
    htab_link(&m->t, &n->h, h);
    return 0;
}

void *map_del(struct map *m, const void *key, size_t len)
{
    struct hlink **pp = find(m, key, len, hash_bytes(key, len));
    if (!pp)
        return NULL;
    struct map_node *n = (struct map_node *)*pp;
    void *val = n->val;
    *pp = n->h.next;
    free(n);
    m->t.n--;
    return val;
}

void map_foreach(struct map *m, void (*cb)(void *arg, const void *key, size_t len, void *val),
                 void *arg)
{
    for (size_t i = 0; i < m->t.nb; i++) {
        struct hlink *x = m->t.b[i];
        while (x) {
            struct hlink *next = x->next;
            const struct map_node *n = (const struct map_node *)x;
            cb(arg, n->key, n->len, n->val);
            x = next;
        }
    }
}
