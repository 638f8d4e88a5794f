/* SPDX-License-Identifier: Apache-2.0 */
#include "common/map.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct map_node {
    struct map_node *next;
    uint64_t hash;
    size_t len;
    void *val;
    char key[];
};

#define MAP_MIN_BUCKETS 16 /* a power of two, like every later size */

_Static_assert(MAP_HASH_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash-2-4's key size");

/* The process's key (map_set_hash_key); zeros until set. */
static unsigned char hash_key[MAP_HASH_KEY_BYTES];

void map_set_hash_key(const unsigned char key[MAP_HASH_KEY_BYTES])
{
    memcpy(hash_key, key, MAP_HASH_KEY_BYTES);
}

/* SipHash-2-4 under the process's key: keys are lock names and session ids chosen by clients,
 * who must not be able to pick keys that share a bucket. */
static uint64_t hash_bytes(const void *key, size_t len)
{
    unsigned char out[crypto_shorthash_BYTES];
    crypto_shorthash(out, key, len, hash_key);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h |= (uint64_t)out[i] << (8 * i);
    return h;
}

size_t map_max_chain(const struct map *m)
{
    size_t most = 0;
    for (size_t i = 0; i < m->nb; i++) {
        size_t n = 0;
        for (const struct map_node *x = m->b[i]; x; x = x->next)
            n++;
        most = n > most ? n : most;
    }
    return most;
}

void map_init(struct map *m)
{
    memset(m, 0, sizeof(*m));
}

void map_free(struct map *m, void (*free_val)(void *val))
{
    for (size_t i = 0; i < m->nb; i++) {
        struct map_node *n = m->b[i];
        while (n) {
            struct map_node *next = n->next;
            if (free_val)
                free_val(n->val);
            free(n);
            n = next;
        }
    }
    free(m->b);
    map_init(m);
}

static struct map_node **find(const struct map *m, const void *key, size_t len, uint64_t h)
{
    if (m->nb == 0)
        return NULL;
    struct map_node **pp = &m->b[h & (m->nb - 1)];
    while (*pp) {
        struct map_node *n = *pp;
        if (n->hash == h && n->len == len && memcmp(n->key, key, len) == 0)
            return pp;
        pp = &n->next;
    }
    return NULL;
}

void *map_get(const struct map *m, const void *key, size_t len)
{
    struct map_node **pp = find(m, key, len, hash_bytes(key, len));
    return pp ? (*pp)->val : NULL;
}

static int grow(struct map *m)
{
    size_t nb = m->nb ? m->nb * 2 : MAP_MIN_BUCKETS;
    struct map_node **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    for (size_t i = 0; i < m->nb; i++) {
        struct map_node *n = m->b[i];
        while (n) {
            struct map_node *next = n->next;
            n->next = b[n->hash & (nb - 1)];
            b[n->hash & (nb - 1)] = n;
            n = next;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return 0;
}

int map_put(struct map *m, const void *key, size_t len, void *val)
{
    uint64_t h = hash_bytes(key, len);
    struct map_node **pp = find(m, key, len, h);
    if (pp) {
        (*pp)->val = val;
        return 0;
    }
    if (m->n + 1 > m->nb && grow(m))
        return -1;
    struct map_node *n = malloc(sizeof(*n) + len);
    if (!n)
        return -1;
    n->hash = h;
    n->len = len;
    n->val = val;
    memcpy(n->key, key, len);
    n->next = m->b[h & (m->nb - 1)];
    m->b[h & (m->nb - 1)] = n;
    m->n++;
    return 0;
}

void *map_del(struct map *m, const void *key, size_t len)
{
    struct map_node **pp = find(m, key, len, hash_bytes(key, len));
    if (!pp)
        return NULL;
    struct map_node *n = *pp;
    void *val = n->val;
    *pp = n->next;
    free(n);
    m->n--;
    return val;
}

void map_foreach(struct map *m, void (*cb)(void *arg, const void *key, size_t len, void *val),
                 void *arg)
{
    for (size_t i = 0; i < m->nb; i++) {
        struct map_node *n = m->b[i];
        while (n) {
            struct map_node *next = n->next;
            cb(arg, n->key, n->len, n->val);
            n = next;
        }
    }
}
