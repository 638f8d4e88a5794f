/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wakeidx — which parked XREAD readers an applied event wakes (cmd_watch.c). Each stream a
 * parked reader reads is a member (struct wake_member, embedded in the reader) of one group:
 * the whole stream's, or the group of its exact prefix (one per distinct watched prefix,
 * however many readers share it). An event wakes the whole stream's group, and, when it has a
 * name N, the groups whose prefix is a prefix of N: one pass over N computes a keyed polynomial
 * hash of every prefix N[0:L] (L = 0..len(N)), and each is one probe of a hash table of the
 * groups. Cost per event: O(len(N) + members woken), independent of how many readers or
 * prefixes are parked elsewhere. The hash key is the caller's (the server: random bytes), so
 * no client can choose prefixes that collide; a collision would cost a memcmp, never a wrong
 * answer (the group's prefix is compared before its members are visited).
 *
 * Pure: no clock, no I/O. Owns its groups (one malloc each, with a copy of the prefix; freed
 * when the last member leaves) and its table; members belong to the caller and must be
 * removed (wake_index_del) before the caller frees them.
 */
#ifndef FENCELOCK_WAKEIDX_H
#define FENCELOCK_WAKEIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/map.h"

struct wake_group;

struct wake_member {
    struct wake_member *prev, *next;
    struct wake_group *g;
    void *owner; /* the caller's (a parked reader) */
};

struct wake_index {
    struct map by_hash;     /* 8-byte prefix hash -> struct wake_group (chained on collision) */
    struct wake_group *all; /* the whole stream's readers (NULL: none) */
    size_t groups;          /* prefix groups */
    size_t max_plen;        /* no group's prefix is longer (reset when no group is left) */
    uint64_t base;          /* the hash's secret multiplier, in [2, 2^61 - 2] */
};

void wake_index_init(struct wake_index *x, uint64_t key);
/* Frees the groups (members still in them are left dangling: remove them first). */
void wake_index_free(struct wake_index *x);

/* m joins the group of the whole stream (all) or of the prefix (copied). 0, or -1 when out of
 * memory (nothing changed). */
int wake_index_add(struct wake_index *x, struct wake_member *m, bool all, const char *prefix,
                   size_t plen, void *owner);
/* m leaves its group (freed when empty). */
void wake_index_del(struct wake_index *x, struct wake_member *m);

/* cb for every member an event wakes: the whole stream's always; when `named`, those of every
 * group whose prefix starts `name`. A member may be visited once per matching group only. */
void wake_index_match(struct wake_index *x, const char *name, size_t len, bool named,
                      void (*cb)(void *arg, struct wake_member *m), void *arg);

#endif
