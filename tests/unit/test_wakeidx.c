/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wakeidx — parked readers grouped by prefix (src/server/watch/wakeidx.c): an event visits
 * exactly the members whose stream it matches (the whole stream's always; a prefix's when the
 * event's name starts with it, never an unnamed event), each once, over random joins and leaves
 * (many seeds), against a brute-force check of every member; groups are freed when empty.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/watch/wakeidx.h"
#include "test.h"

#define MEMBERS 40

struct reader {
    struct wake_member m;
    bool in, all;
    char prefix[4];
    size_t plen;
    unsigned visits;
};

static void count_visit(void *arg, struct wake_member *m)
{
    (void)arg;
    ((struct reader *)m->owner)->visits++;
}

static bool wants(const struct reader *r, const char *name, size_t len, bool named)
{
    if (r->all)
        return true;
    return named && len >= r->plen && (r->plen == 0 || memcmp(name, r->prefix, r->plen) == 0);
}

TEST(an_event_visits_exactly_the_matching_readers_once)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        uint64_t x = seed * 0x9e3779b97f4a7c15ull;
        struct wake_index idx;
        struct reader rd[MEMBERS];
        memset(rd, 0, sizeof(rd));
        wake_index_init(&idx, seed);
        for (int step = 0; step < 300; step++) {
            struct reader *r = &rd[test_rnd(&x) % MEMBERS];
            if (r->in) {
                wake_index_del(&idx, &r->m);
                r->in = false;
            } else {
                r->all = test_rnd(&x) % 8 == 0;
                r->plen = r->all ? 0 : test_rnd_name(&x, r->prefix);
                CHECK(wake_index_add(&idx, &r->m, r->all, r->prefix, r->plen, r) == 0);
                r->in = true;
            }
            char name[4];
            size_t len = test_rnd_name(&x, name);
            bool named = test_rnd(&x) % 5 != 0;
            for (int i = 0; i < MEMBERS; i++)
                rd[i].visits = 0;
            wake_index_match(&idx, name, len, named, count_visit, NULL);
            for (int i = 0; i < MEMBERS; i++)
                CHECK_EQ_U64(rd[i].visits, rd[i].in && wants(&rd[i], name, len, named));
        }
        size_t distinct = 0;
        for (int i = 0; i < MEMBERS; i++) {
            bool first = rd[i].in && !rd[i].all;
            for (int j = 0; first && j < i; j++)
                first = !(rd[j].in && !rd[j].all && rd[j].plen == rd[i].plen &&
                          memcmp(rd[j].prefix, rd[i].prefix, rd[i].plen) == 0);
            distinct += first;
        }
        CHECK_EQ_U64(idx.groups, distinct); /* one group per distinct prefix watched */
        for (int i = 0; i < MEMBERS; i++)
            if (rd[i].in)
                wake_index_del(&idx, &rd[i].m);
        CHECK_EQ_U64(idx.groups, 0);
        CHECK_EQ_U64(map_count(&idx.by_hash), 0);
        wake_index_free(&idx);
    }
}

TEST(a_long_name_probes_no_further_than_the_longest_prefix)
{
    struct wake_index idx;
    struct reader r;
    memset(&r, 0, sizeof(r));
    wake_index_init(&idx, 7);
    CHECK(wake_index_add(&idx, &r.m, false, "ab", 2, &r) == 0);
    char name[1024];
    memset(name, 'a', sizeof(name));
    name[1] = 'b';
    wake_index_match(&idx, name, sizeof(name), true, count_visit, NULL);
    CHECK(r.visits == 1 && idx.max_plen == 2);
    wake_index_del(&idx, &r.m);
    CHECK(idx.max_plen == 0);
    wake_index_free(&idx);
}

int main(void)
{
    RUN(an_event_visits_exactly_the_matching_readers_once);
    RUN(a_long_name_probes_no_further_than_the_longest_prefix);
    TEST_MAIN_END();
}
