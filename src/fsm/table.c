/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/table.c — the FSM's hashing for its session and lock indexes (the table itself is
 * common/htab.h's): lock names under the FSM's SipHash key (fsm_set_hash_key), session ids by
 * splitmix64 (not client-chosen). An insert never fails: htab_init gives each index a first
 * array, and a failed grow only makes the chains longer.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

_Static_assert(FSM_HASH_KEY_BYTES == HTAB_HASH_KEY_BYTES, "SipHash-2-4's key size");

/* SipHash-2-4 under the FSM's key (a keyed PRF: without the key, names that share a bucket
 * cannot be chosen), its low 32 bits. */
uint32_t fsm_hash_bytes(const struct fsm *f, const void *p, size_t n)
{
    return (uint32_t)htab_siphash(f->hash_key, p, n);
}

size_t fsm_max_lock_chain(const struct fsm *f)
{
    return htab_max_chain(&f->locks);
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
