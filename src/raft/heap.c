/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.c — see heap.h: libraft's allocator with amortised realloc of large blocks.
 */
#include "raft/heap.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* Index of p in the table, or -1. Called with the mutex held. */
static int find(struct rn_heap *h, const void *p)
{
    for (int i = 0; i < RN_HEAP_SLOTS; i++)
        if (h->slot[i].p == p)
            return i;
    return -1;
}

static void track(struct rn_heap *h, void *p, size_t cap)
{
    int i = find(h, NULL);
    if (i >= 0) { /* a full table only costs the amortisation of this block */
        h->slot[i].p = p;
        h->slot[i].cap = cap;
    }
}

static void *heap_malloc(void *data, size_t size)
{
    (void)data;
    return malloc(size);
}

static void *heap_calloc(void *data, size_t nmemb, size_t size)
{
    (void)data;
    return calloc(nmemb, size);
}

static void heap_free(void *data, void *ptr)
{
    struct rn_heap *h = data;
    if (ptr && malloc_usable_size(ptr) >= RN_HEAP_BIG) {
        pthread_mutex_lock(&h->mu);
        int i = find(h, ptr);
        if (i >= 0)
            h->slot[i].p = NULL;
        pthread_mutex_unlock(&h->mu);
    }
    free(ptr);
}

static void *heap_realloc(void *data, void *ptr, size_t size)
{
    struct rn_heap *h = data;
    pthread_mutex_lock(&h->mu);
    int i = ptr ? find(h, ptr) : -1;
    if (i >= 0 && size <= h->slot[i].cap && size >= RN_HEAP_BIG) {
        pthread_mutex_unlock(&h->mu);
        return ptr; /* fits in what is allocated already */
    }
    /* Grow large blocks by half again, so n appends copy O(n) bytes in all. */
    size_t cap = size >= RN_HEAP_BIG && size <= SIZE_MAX / 3 * 2 ? size + size / 2 : size;
    void *q = realloc(ptr, cap);
    if (!q) {
        pthread_mutex_unlock(&h->mu);
        return NULL; /* ptr untouched, still tracked if it was */
    }
    if (size >= RN_HEAP_BIG)
        h->grows++;
    if (i >= 0)
        h->slot[i].p = NULL;
    if (cap > size)
        track(h, q, cap);
    pthread_mutex_unlock(&h->mu);
    return q;
}

static void *heap_aligned_alloc(void *data, size_t alignment, size_t size)
{
    struct rn_heap *h = data;
    return h->base->aligned_alloc(h->base->data, alignment, size);
}

static void heap_aligned_free(void *data, size_t alignment, void *ptr)
{
    struct rn_heap *h = data;
    h->base->aligned_free(h->base->data, alignment, ptr);
}

void rn_heap_init(struct rn_heap *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    h->heap.data = h;
    h->heap.malloc = heap_malloc;
    h->heap.free = heap_free;
    h->heap.calloc = heap_calloc;
    h->heap.realloc = heap_realloc;
    h->heap.aligned_alloc = heap_aligned_alloc;
    h->heap.aligned_free = heap_aligned_free;
}

void rn_heap_install(struct rn_heap *h)
{
    h->base = raft_heap_get();
    raft_heap_set(&h->heap);
}

void rn_heap_uninstall(struct rn_heap *h)
{
    (void)h;
    raft_heap_set_default();
}

void rn_heap_destroy(struct rn_heap *h)
{
    pthread_mutex_destroy(&h->mu);
}
