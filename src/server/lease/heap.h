/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap — an indexed binary min-heap of deadlines (monotonic ms), for the leader's timers.
 *
 * Owns: only its array of pointers. Items are embedded in their owners (a session's deadline,
 * a wait's, a lock-delay's) and know their own position (`idx`, HEAP_NONE when not queued),
 * so an owner can move or drop its deadline in O(log n) without a search.
 * Invariant: for every i > 0, a[(i-1)/2]->deadline <= a[i]->deadline; a[i]->idx == i.
 */
#ifndef FENCELOCK_HEAP_H
#define FENCELOCK_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define HEAP_NONE ((size_t)-1)

struct heap_item {
    uint64_t deadline;
    size_t idx;
    uint8_t kind; /* what the owner is; read by the tick */
};

struct heap {
    struct heap_item **a;
    size_t n, cap;
};

void heap_init(struct heap *h);
void heap_free(struct heap *h);
/* Queue `it` with `deadline`, or move it there if already queued. 0 or -1 (no memory). */
int heap_set(struct heap *h, struct heap_item *it, uint64_t deadline);
void heap_remove(struct heap *h, struct heap_item *it);
static inline struct heap_item *heap_top(const struct heap *h)
{
    return h->n ? h->a[0] : NULL;
}

#endif
