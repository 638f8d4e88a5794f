/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_map — the server's hash map (src/common/map.c): keys chosen to share a bucket under
 * the unkeyed FNV-1a it used before stay spread under the keyed SipHash, whatever the key; and
 * the map still finds, replaces and deletes every entry under a key set at start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/map.h"
#include "test.h"

/* The map's previous hash: unkeyed FNV-1a (offset basis one digit short, as it was), with
 * bits 29 and up folded into the low ones, which pick the bucket. */
static uint64_t old_unkeyed_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

#define FLOOD_KEYS 600
#define FLOOD_MASK 1023u /* 600 entries: 1024 buckets, so equal low 10 bits = one bucket */

static int check_flood(const unsigned char key[MAP_HASH_KEY_BYTES])
{
    struct map m;
    char name[32];
    int found = 0, ok = 1;
    map_set_hash_key(key);
    map_init(&m);
    for (unsigned i = 0; found < FLOOD_KEYS && i < 4000000u; i++) {
        int n = snprintf(name, sizeof name, "flood-%u", i);
        if ((old_unkeyed_hash(name, (size_t)n) & FLOOD_MASK) != 0)
            continue;
        found++;
        ok &= map_put(&m, name, (size_t)n, (void *)(uintptr_t)(i + 1)) == 0;
        ok &= map_get(&m, name, (size_t)n) == (void *)(uintptr_t)(i + 1);
    }
    ok &= found == FLOOD_KEYS && map_count(&m) == FLOOD_KEYS;
    /* 600 keys in >= 1024 buckets: a chain of 12 has a probability far below 1e-9 */
    ok &= map_max_chain(&m) <= 12;
    map_free(&m, NULL);
    return ok;
}

TEST(keys_that_collided_under_the_unkeyed_hash_spread_under_the_keyed_one)
{
    unsigned char zero[MAP_HASH_KEY_BYTES] = {0}, other[MAP_HASH_KEY_BYTES];
    for (int i = 0; i < MAP_HASH_KEY_BYTES; i++)
        other[i] = (unsigned char)(0xc3 ^ (i * 31));
    CHECK(check_flood(zero));
    CHECK(check_flood(other));
}

TEST(put_get_replace_delete_under_a_process_key)
{
    unsigned char key[MAP_HASH_KEY_BYTES];
    for (int i = 0; i < MAP_HASH_KEY_BYTES; i++)
        key[i] = (unsigned char)(i * 7 + 1);
    map_set_hash_key(key);
    struct map m;
    map_init(&m);
    int a = 1, b = 2;
    CHECK(map_put(&m, "x", 1, &a) == 0);
    CHECK(map_get(&m, "x", 1) == &a);
    CHECK(map_put(&m, "x", 1, &b) == 0);
    CHECK(map_get(&m, "x", 1) == &b && map_count(&m) == 1);
    CHECK(map_del(&m, "x", 1) == &b);
    CHECK(map_get(&m, "x", 1) == NULL && map_count(&m) == 0);
    map_free(&m, NULL);
}

int main(void)
{
    RUN(keys_that_collided_under_the_unkeyed_hash_spread_under_the_keyed_one);
    RUN(put_get_replace_delete_under_a_process_key);
    TEST_MAIN_END();
}
