/* SPDX-License-Identifier: Apache-2.0 */
/* htab.c — the intrusive chained hash table and the keyed hash (htab.h). */
#include "common/htab.h"

#include <endian.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HTAB_HASH_KEY_BYTES == crypto_shorthash_KEYBYTES, "SipHash-2-4's key size");

int htab_init(struct htab *t)
{
    memset(t, 0, sizeof(*t));
    return htab_grow(t);
}

void htab_free(struct htab *t)
{
    free(t->b);
    memset(t, 0, sizeof(*t));
}

int htab_grow(struct htab *t)
{
    if (t->nb > SIZE_MAX / 2 / sizeof(*t->b))
        return -1;
    size_t nb = t->nb ? t->nb * 2 : HTAB_MIN;
    struct hlink **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
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
    return 0;
}

void htab_link(struct htab *t, struct hlink *l, uint64_t hash)
{
    l->hash = hash;
    struct hlink **head = &t->b[hash & (t->nb - 1)];
    l->next = *head;
    *head = l;
    t->n++;
}

void htab_insert(struct htab *t, struct hlink *l, uint64_t hash)
{
    if (t->n >= t->nb)
        (void)htab_grow(t); /* best effort: a failed grow leaves longer chains */
    htab_link(t, l, hash);
}

void htab_remove(struct htab *t, struct hlink *l)
{
    if (!t->nb)
        return;
    struct hlink **pp = &t->b[l->hash & (t->nb - 1)];
    while (*pp && *pp != l)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = l->next;
        l->next = NULL;
        t->n--;
    }
}

size_t htab_max_chain(const struct htab *t)
{
    size_t most = 0;
    for (size_t i = 0; i < t->nb; i++) {
        size_t n = 0;
        for (const struct hlink *x = t->b[i]; x; x = x->next)
            n++;
        most = n > most ? n : most;
    }
    return most;
}

uint64_t htab_siphash(const unsigned char key[HTAB_HASH_KEY_BYTES], const void *p, size_t n)
{
    unsigned char out[crypto_shorthash_BYTES];
    crypto_shorthash(out, p, n, key);
    uint64_t h; /* the output's bytes as a little-endian number, on any host: one load on x86 */
    memcpy(&h, out, sizeof h);
    return le64toh(h);
}
