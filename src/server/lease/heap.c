/* SPDX-License-Identifier: Apache-2.0 */
#include "server/lease/heap.h"

#include <stdlib.h>

void heap_init(struct heap *h)
{
    h->a = NULL;
    h->n = h->cap = 0;
}

void heap_free(struct heap *h)
{
    for (size_t i = 0; i < h->n; i++)
        h->a[i]->idx = HEAP_NONE;
    free(h->a);
    heap_init(h);
}

static void place(struct heap *h, size_t i, struct heap_item *it)
{
    h->a[i] = it;
    it->idx = i;
}

static void sift_up(struct heap *h, size_t i)
{
    struct heap_item *it = h->a[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->a[parent]->deadline <= it->deadline)
            break;
        place(h, i, h->a[parent]);
        i = parent;
    }
    place(h, i, it);
}

static void sift_down(struct heap *h, size_t i)
{
    struct heap_item *it = h->a[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t best = it->deadline;
        if (l < h->n && h->a[l]->deadline < best) {
            m = l;
            best = h->a[l]->deadline;
        }
        if (r < h->n && h->a[r]->deadline < best)
            m = r;
        if (m == i)
            break;
        place(h, i, h->a[m]);
        i = m;
    }
    place(h, i, it);
}

int heap_set(struct heap *h, struct heap_item *it, uint64_t deadline)
{
    if (it->idx != HEAP_NONE) {
        uint64_t old = it->deadline;
        it->deadline = deadline;
        if (deadline < old)
            sift_up(h, it->idx);
        else
            sift_down(h, it->idx);
        return 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct heap_item **a = realloc(h->a, cap * sizeof(*a));
        if (!a)
            return -1;
        h->a = a;
        h->cap = cap;
    }
    it->deadline = deadline;
    place(h, h->n++, it);
    sift_up(h, it->idx);
    return 0;
}

void heap_remove(struct heap *h, struct heap_item *it)
{
    size_t i = it->idx;
    if (i == HEAP_NONE)
        return;
    it->idx = HEAP_NONE;
    struct heap_item *last = h->a[--h->n];
    if (i == h->n)
        return;
    place(h, i, last);
    if (i > 0 && h->a[(i - 1) / 2]->deadline > last->deadline)
        sift_up(h, i);
    else
        sift_down(h, i);
}
