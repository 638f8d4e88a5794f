/* SPDX-License-Identifier: Apache-2.0 */
/*
 * map — a hash map from byte-string keys to borrowed `void *` values (chained buckets, on
 * common/htab.h's table and keyed hash).
 *
 * Owns: its bucket array and one node per entry holding a copy of the key. It does not own the
 * values: map_del returns the value to the caller, map_free calls `free_val` (may be NULL) on
 * each remaining value. The table doubles when the load passes 1 and never shrinks.
 * Iteration order is unspecified (it depends on the hash key); deleting the entry being visited
 * is allowed in map_foreach. Keys are hashed with SipHash-2-4 under one key per process
 * (map_set_hash_key, set by the server from libsodium's random bytes before the first insert),
 * so no client can choose keys that share a bucket.
 */
#ifndef FENCELOCK_MAP_H
#define FENCELOCK_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "common/htab.h"

/* A zeroed struct map is an empty map (no bucket array until the first insert). */
struct map {
    struct htab t; /* of struct map_node (map.c); t.n is the number of entries */
};

#define MAP_HASH_KEY_BYTES HTAB_HASH_KEY_BYTES
/* The process-wide hash key: call before any map holds an entry (entries hashed under the old
   key would not be found). */
void map_set_hash_key(const unsigned char key[MAP_HASH_KEY_BYTES]);
/* The longest bucket chain (tests: chains stay short whatever the keys). */
size_t map_max_chain(const struct map *m);

void map_init(struct map *m);
/* The number of entries. */
static inline size_t map_count(const struct map *m)
{
    return m->t.n;
}
void map_free(struct map *m, void (*free_val)(void *val));
void *map_get(const struct map *m, const void *key, size_t len);
/* Insert or replace. 0, or -1 on allocation failure (map unchanged). */
int map_put(struct map *m, const void *key, size_t len, void *val);
/* Remove; returns the value, or NULL if absent. */
void *map_del(struct map *m, const void *key, size_t len);
void map_foreach(struct map *m, void (*cb)(void *arg, const void *key, size_t len, void *val),
                 void *arg);

/* Keys made of a u64 (a session id), or a name followed by a u64. `out` needs len + 8. */
static inline size_t map_key_u64(uint64_t v, char out[8])
{
    for (int i = 0; i < 8; i++)
        out[i] = (char)(v >> (8 * i));
    return 8;
}

#endif
