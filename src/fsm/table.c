/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/table.c — the intrusive hash table behind the session and lock indexes, and hashing
 * (lock names: keyed SipHash, fsm_set_hash_key; session ids: splitmix64, not client-chosen).
 *
 * Owns only the bucket arrays. Records embed a struct hlink; the table links them. Growing is
 * best effort: if the larger array cannot be allocated the chains just get longer, so an insert
 * never fails (fsm_htab_init allocates a first array, so there is always one).
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define HTAB_MIN 16 /* buckets of an empty table (a power of two) */

int fsm_htab_init(struct htab *t)
{
    t->n = 0;
    t->nb = HTAB_MIN;
    t->b = calloc(HTAB_MIN, sizeof(*t->b));
    return t->b ? 0 : -1;
}

void fsm_htab_free(struct htab *t)
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

void fsm_htab_insert(struct htab *t, struct hlink *l, uint32_t hash)
{
    if (t->n >= t->nb)
        grow(t);
    l->hash = hash;
    struct hlink **head = &t->b[hash & (t->nb - 1)];
    l->next = *head;
    *head = l;
    t->n++;
}

void fsm_htab_remove(struct htab *t, struct hlink *l)
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

_Static_assert(FSM_HASH_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash-2-4's key size");

/* SipHash-2-4 under the FSM's key (a keyed PRF: without the key, names that share a bucket
 * cannot be chosen), its low 32 bits. */
uint32_t fsm_hash_bytes(const struct fsm *f, const void *p, size_t n)
{
    unsigned char out[crypto_shorthash_BYTES];
    crypto_shorthash(out, p, n, f->hash_key);
    return (uint32_t)out[0] | (uint32_t)out[1] << 8 | (uint32_t)out[2] << 16 |
           (uint32_t)out[3] << 24;
}

size_t fsm_max_lock_chain(const struct fsm *f)
{
    size_t most = 0;
    for (size_t i = 0; i < f->locks.nb; i++) {
        size_t n = 0;
        for (const struct hlink *x = f->locks.b[i]; x; x = x->next)
            n++;
        most = n > most ? n : most;
    }
    return most;
}

int fsm_set_hash_key(struct fsm *f, const uint8_t key[FSM_HASH_KEY_BYTES])
{
    if (f->locks.n)
        return -1;
    memcpy(f->hash_key, key, FSM_HASH_KEY_BYTES);
    return 0;
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
