/* SPDX-License-Identifier: Apache-2.0 */
/*
 * htab — the one chained hash table of the tree, intrusive (a record embeds a struct hlink, the
 * table links it), and the one keyed hash for keys a client chooses (SipHash-2-4, libsodium's
 * crypto_shorthash, under a key the caller keeps). The FSM's session and lock indexes use it
 * directly; common/map.c builds its byte-string map on it.
 *
 * Owns: only the bucket array (htab_free frees it; the caller owns and frees the records).
 * Invariants: nb is 0 (a zeroed table: no array yet) or a power of two; a linked record sits
 * in bucket hash & (nb - 1); n counts the linked records. htab_grow doubles the array and
 * relinks every record (the one rehash loop); when the larger array cannot be allocated the
 * table is unchanged and htab_grow returns -1, so the caller chooses: the FSM goes on with
 * longer chains (an insert there never fails), the map refuses the insert.
 */
#ifndef FENCELOCK_HTAB_H
#define FENCELOCK_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct hlink {
    struct hlink *next;
    uint64_t hash;
};

struct htab {
    struct hlink **b;
    size_t nb, n; /* nb: 0 or a power of two */
};

#define HTAB_MIN 16            /* buckets of a first array (a power of two) */
#define HTAB_HASH_KEY_BYTES 16 /* crypto_shorthash_KEYBYTES (htab.c asserts it) */

/* A first array of HTAB_MIN buckets now: 0, or -1 out of memory (t is then zeroed). */
int htab_init(struct htab *t);
/* The bucket array only; t is zeroed (and may be used again). */
void htab_free(struct htab *t);
/* Double the array (HTAB_MIN buckets when there is none): 0, or -1 with t unchanged. */
int htab_grow(struct htab *t);
/* Link l under hash into a table that has an array (nb > 0); never grows. */
void htab_link(struct htab *t, struct hlink *l, uint64_t hash);
/* Grow when the load would pass 1, best effort, then link: for a table that has an array. */
void htab_insert(struct htab *t, struct hlink *l, uint64_t hash);
/* Unlink l if it is linked (its bucket is walked). */
void htab_remove(struct htab *t, struct hlink *l);
/* The longest chain (tests: chains stay short whatever the keys). */
size_t htab_max_chain(const struct htab *t);

/* The chain where a record of this hash would be (NULL when there is no array). */
static inline struct hlink *htab_bucket(const struct htab *t, uint64_t hash)
{
    return t->nb ? t->b[hash & (t->nb - 1)] : NULL;
}

/* SipHash-2-4 of n bytes of p under key, as a little-endian u64: a keyed PRF, so that without
 * the key no client can choose keys that share a bucket. */
uint64_t htab_siphash(const unsigned char key[HTAB_HASH_KEY_BYTES], const void *p, size_t n);

#endif
