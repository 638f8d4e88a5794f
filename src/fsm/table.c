/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/table.c — the intrusive hash table behind the session and lock indexes, and hashing.
 *
 * Owns only the bucket arrays. Records embed a struct hlink; the table links them. Growing is
 * best effort: if the larger array cannot be allocated the chains just get longer, so an insert
 * never fails (htab_init allocates a first array, so there is always one).
 */
#include <stdlib.h>

#include "fsm/internal.h"

#define HTAB_MIN 16 /* buckets of an empty table (a power of two) */

int htab_init(struct htab *t)
{
    t->n = 0;
    t->nb = HTAB_MIN;
    t->b = calloc(HTAB_MIN, sizeof(*t->b));
    return t->b ? 0 : -1;
}

void htab_free(struct htab *t)
{
    free(t->b);
    t->b = NULL;
    t->nb = t->n = 0;
}

static void grow(struct htab *t)
{
    if (t->nb > SIZE_MAX / 2 / sizeof(*t->b))
        return;
    size_t nb = t->nb * 2;
    struct hlink **b = calloc(nb, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < t->nb; i++) {
        struct hlink *l = t->b[i];
        while (l) {
            struct hlink *next = l->next;
            l->next = b[l->hash & (nb - 1)];
            b[l->hash & (nb - 1)] = l;
            l = next;
        }
    }
    free(t->b);
    t->b = b;
    t->nb = nb;
}

void htab_insert(struct htab *t, struct hlink *l, uint32_t hash)
{
    if (t->n >= t->nb)
        grow(t);
    l->hash = hash;
    struct hlink **head = &t->b[hash & (t->nb - 1)];
    l->next = *head;
    *head = l;
    t->n++;
}

void htab_remove(struct htab *t, struct hlink *l)
{
    struct hlink **pp = &t->b[l->hash & (t->nb - 1)];
    while (*pp && *pp != l)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = l->next;
        l->next = NULL;
        t->n--;
    }
}

/* The published 64-bit FNV-1a parameters. */
#define FNV1A_OFFSET 1469598103934665603ull
#define FNV1A_PRIME 1099511628211ull

/* FNV-1a, folded to 32 bits with a final mix so the low bits (the bucket index) spread. */
uint32_t fsm_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = FNV1A_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= FNV1A_PRIME;
    }
    h ^= h >> 32;
    return (uint32_t)h;
}

/* splitmix64's finaliser (its published shifts and multipliers): sids are consecutive-ish
 * revisions, which must not cluster. */
uint32_t fsm_hash_u64(uint64_t v)
{
    v ^= v >> 30;
    v *= 0xbf58476d1ce4e5b9ull;
    v ^= v >> 27;
    v *= 0x94d049bb133111ebull;
    v ^= v >> 31;
    return (uint32_t)v;
}

int fsm_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
