/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rn_heap.c — libraft's allocator with amortised realloc (src/raft/heap.h): libraft's way
 * of growing its log-entry array at start (one raft_realloc per stored batch) must copy O(n)
 * bytes in all, and every block must keep its contents and be released exactly once.
 */
#include <raft.h>
#include <stdlib.h>

#include "raft/heap.h"
#include "test.h"

/* What libraft's extendEntries does: one realloc per appended entry. */
struct entry {
    uint64_t term, index;
    void *base;
    size_t len;
    void *batch;
};

static int tracked(const struct rn_heap *h, const void *p)
{
    for (int i = 0; i < RN_HEAP_SLOTS; i++)
        if (h->slot[i].p == p)
            return 1;
    return 0;
}

TEST(growing_an_entry_array_one_by_one_allocates_a_logarithmic_number_of_times)
{
    struct rn_heap h;
    rn_heap_init(&h);
    rn_heap_install(&h);
    struct entry *e = NULL;
    size_t n = 20000; /* 800 KB in the end; plain realloc would allocate ~18,000 times */
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        struct entry *g = raft_realloc(e, (i + 1) * sizeof(*e));
        if (!g)
            ok = 0;
        else {
            e = g;
            e[i].index = i;
        }
    }
    uint64_t grows = h.grows;
    int same = ok;
    for (size_t i = 0; ok && i < n; i++)
        if (e[i].index != i)
            same = 0;
    int was_tracked = tracked(&h, e);
    raft_free(e);
    int still = tracked(&h, e);
    rn_heap_uninstall(&h);
    rn_heap_destroy(&h);
    CHECK(ok);
    CHECK(same);
    CHECK(grows <= 20);
    CHECK(was_tracked);
    CHECK(!still);
}

TEST(realloc_within_capacity_keeps_the_block_and_a_shrink_releases_it)
{
    struct rn_heap h;
    rn_heap_init(&h);
    rn_heap_install(&h);
    char *p = raft_realloc(NULL, RN_HEAP_BIG);
    if (p)
        memset(p, 7, RN_HEAP_BIG);
    char *q = p ? raft_realloc(p, RN_HEAP_BIG + 100) : NULL; /* within the half-again */
    int in_place = q == p;
    if (q)
        q[RN_HEAP_BIG + 99] = 1;
    char *r = q ? raft_realloc(q, 100) : NULL; /* below RN_HEAP_BIG: untracked, plain */
    int r_tracked = r ? tracked(&h, r) : 1;
    int q_tracked = tracked(&h, q);
    int kept = r && r[0] == 7 && r[99] == 7;
    raft_free(r);
    rn_heap_uninstall(&h);
    rn_heap_destroy(&h);
    CHECK(p != NULL);
    CHECK(in_place);
    CHECK(kept);
    CHECK(!r_tracked);
    CHECK(q == r || !q_tracked);
}

TEST(more_large_blocks_than_slots_stay_correct)
{
    struct rn_heap h;
    rn_heap_init(&h);
    rn_heap_install(&h);
    enum { N = RN_HEAP_SLOTS + 16 };
    char *b[N] = {0};
    int ok = 1;
    for (int round = 1; round <= 3 && ok; round++)
        for (int i = 0; i < N && ok; i++) {
            size_t sz = (size_t)RN_HEAP_BIG * round + (size_t)i;
            char *g = raft_realloc(b[i], sz);
            if (!g) {
                ok = 0;
                break;
            }
            b[i] = g;
            b[i][sz - 1] = (char)i; /* ASan checks the block really is that large */
            b[i][0] = (char)i;
        }
    int same = 1;
    for (int i = 0; i < N; i++)
        if (!b[i] || b[i][0] != (char)i)
            same = 0;
    for (int i = 0; i < N; i++)
        raft_free(b[i]);
    int left = 0;
    for (int i = 0; i < RN_HEAP_SLOTS; i++)
        left += h.slot[i].p != NULL;
    rn_heap_uninstall(&h);
    rn_heap_destroy(&h);
    CHECK(ok);
    CHECK(same);
    CHECK_EQ_U64(left, 0);
}

TEST(aligned_blocks_and_small_blocks_go_to_libc)
{
    struct rn_heap h;
    rn_heap_init(&h);
    rn_heap_install(&h);
    void *a = raft_aligned_alloc(4096, 8192);
    int aligned = a && ((uintptr_t)a % 4096) == 0;
    raft_aligned_free(4096, a);
    void *c = raft_calloc(10, 10);
    int zero = c && ((char *)c)[99] == 0;
    raft_free(c);
    rn_heap_uninstall(&h);
    rn_heap_destroy(&h);
    CHECK(aligned);
    CHECK(zero);
}

int main(void)
{
    RUN(growing_an_entry_array_one_by_one_allocates_a_logarithmic_number_of_times);
    RUN(realloc_within_capacity_keeps_the_block_and_a_shrink_releases_it);
    RUN(more_large_blocks_than_slots_stay_correct);
    RUN(aligned_blocks_and_small_blocks_go_to_libc);
    TEST_MAIN_END();
}
