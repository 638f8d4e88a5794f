/* SPDX-License-Identifier: Apache-2.0 */
/* test_htab.c — the one chained hash table (src/common/htab.c) that the FSM's indexes and
 * common/map.c share: through every doubling each record stays findable in bucket
 * hash & (nb - 1), the count is exact, removal unlinks only what it names, and the keyed hash
 * depends on its key. */
#include "common/htab.h"
#include "test.h"

#define RECORDS 1000

struct rec {
    struct hlink h; /* first: the table's link is the record */
    unsigned v;
};

static int findable(const struct htab *t, const struct rec *r)
{
    for (const struct hlink *x = htab_bucket(t, r->h.hash); x; x = x->next)
        if (x == &r->h)
            return 1;
    return 0;
}

TEST(test_every_record_stays_findable_through_every_doubling)
{
    static struct rec r[RECORDS];
    struct htab t;
    CHECK(htab_init(&t) == 0 && t.nb == HTAB_MIN);
    for (unsigned i = 0; i < RECORDS; i++) {
        r[i].v = i;
        htab_insert(&t, &r[i].h, (uint64_t)i * 0x9e3779b97f4a7c15ull);
    }
    CHECK_EQ_U64(t.n, RECORDS);
    CHECK(t.nb >= RECORDS && (t.nb & (t.nb - 1)) == 0); /* load <= 1, a power of two */
    int all = 1;
    for (unsigned i = 0; i < RECORDS; i++)
        all &= findable(&t, &r[i]);
    CHECK(all);
    for (unsigned i = 0; i < RECORDS; i += 2)
        htab_remove(&t, &r[i].h);
    htab_remove(&t, &r[0].h); /* not linked any more: nothing changes */
    CHECK_EQ_U64(t.n, RECORDS / 2);
    for (unsigned i = 0; i < RECORDS; i++)
        all &= findable(&t, &r[i]) == (int)(i % 2);
    CHECK(all);
    htab_free(&t);
    CHECK(t.b == NULL && t.nb == 0 && t.n == 0);
}

TEST(test_a_zeroed_table_has_no_bucket_until_it_grows)
{
    struct htab t = {0};
    CHECK(htab_bucket(&t, 42) == NULL);
    CHECK(htab_max_chain(&t) == 0);
    CHECK(htab_grow(&t) == 0 && t.nb == HTAB_MIN);
    struct rec a = {.v = 1};
    htab_link(&t, &a.h, 42);
    CHECK(htab_bucket(&t, 42) == &a.h && htab_max_chain(&t) == 1);
    htab_free(&t);
}

TEST(test_the_keyed_hash_depends_on_the_key)
{
    unsigned char k1[HTAB_HASH_KEY_BYTES] = {0}, k2[HTAB_HASH_KEY_BYTES] = {1};
    CHECK(htab_siphash(k1, "lock", 4) == htab_siphash(k1, "lock", 4));
    CHECK(htab_siphash(k1, "lock", 4) != htab_siphash(k2, "lock", 4));
    CHECK(htab_siphash(k1, "lock", 4) != htab_siphash(k1, "lock2", 5));
}

int main(void)
{
    RUN(test_every_record_stays_findable_through_every_doubling);
    RUN(test_a_zeroed_table_has_no_bucket_until_it_grows);
    RUN(test_the_keyed_hash_depends_on_the_key);
    TEST_MAIN_END();
}
