/* SPDX-License-Identifier: Apache-2.0 */
/* test_list.c — the doubly-linked list macros (src/common/list.h): after any push, append or
 * unlink (first, middle, last, only) the list reads the same forwards and backwards, head and
 * tail are its ends, and an element on two lists through two pairs of fields moves on each
 * alone. */
#include "common/list.h"
#include "test.h"

struct el {
    int v;
    struct el *prev, *next;   /* list A */
    struct el *sprev, *snext; /* list B (the named-field forms) */
};

/* The list from head reads `want` (n values) forwards, and backwards from its last element;
 * when tail is given, it is that last element. */
static int list_is(struct el *head, struct el *tail, const int *want, int n)
{
    struct el *last = NULL;
    int i = 0;
    for (struct el *e = head; e; e = e->next, i++) {
        if (i >= n || e->v != want[i] || e->prev != last)
            return 0;
        last = e;
    }
    if (i != n || (tail && tail != last) || (head && head->prev))
        return 0;
    for (struct el *e = last; e; e = e->prev)
        if (e->v != want[--i])
            return 0;
    return i == 0;
}

TEST(test_push_puts_first_and_unlink_takes_any_position)
{
    struct el a = {.v = 1}, b = {.v = 2}, c = {.v = 3}, d = {.v = 4};
    struct el *head = NULL;
    DLIST_PUSH(head, &a);
    DLIST_PUSH(head, &b);
    DLIST_PUSH(head, &c);
    DLIST_PUSH(head, &d);
    CHECK(list_is(head, NULL, (int[]){4, 3, 2, 1}, 4));
    DLIST_UNLINK(head, &c); /* middle */
    CHECK(list_is(head, NULL, (int[]){4, 2, 1}, 3));
    DLIST_UNLINK(head, &d); /* first */
    CHECK(list_is(head, NULL, (int[]){2, 1}, 2));
    DLIST_UNLINK(head, &a); /* last */
    CHECK(list_is(head, NULL, (int[]){2}, 1));
    DLIST_UNLINK(head, &b); /* only */
    CHECK(head == NULL);
}

TEST(test_a_queue_keeps_its_tail_through_every_unlink)
{
    struct el e[4] = {{.v = 1}, {.v = 2}, {.v = 3}, {.v = 4}};
    struct el *head = NULL, *tail = NULL;
    for (int i = 0; i < 4; i++)
        DLIST_APPEND(head, tail, &e[i]);
    CHECK(list_is(head, tail, (int[]){1, 2, 3, 4}, 4));
    DLIST_UNLINK_ENDS(head, tail, &e[3]); /* last: the tail moves back */
    CHECK(list_is(head, tail, (int[]){1, 2, 3}, 3));
    DLIST_UNLINK_ENDS(head, tail, &e[1]); /* middle */
    CHECK(list_is(head, tail, (int[]){1, 3}, 2));
    DLIST_UNLINK_ENDS(head, tail, &e[0]); /* first: the head moves on */
    CHECK(list_is(head, tail, (int[]){3}, 1));
    DLIST_UNLINK_ENDS(head, tail, &e[2]); /* only: both ends empty */
    CHECK(head == NULL && tail == NULL);
    DLIST_APPEND(head, tail, &e[1]); /* an emptied queue takes elements again */
    CHECK(list_is(head, tail, (int[]){2}, 1));
}

TEST(test_an_element_on_two_lists_leaves_one_alone)
{
    struct el a = {.v = 1}, b = {.v = 2};
    struct el *ha = NULL, *ta = NULL, *hb = NULL, *tb = NULL;
    DLIST_APPEND(ha, ta, &a);
    DLIST_APPEND(ha, ta, &b);
    DLIST_APPEND_F(hb, tb, &b, sprev, snext);
    DLIST_APPEND_F(hb, tb, &a, sprev, snext);
    DLIST_UNLINK_ENDS_F(hb, tb, &b, sprev, snext);
    CHECK(hb == &a && tb == &a && a.sprev == NULL && a.snext == NULL);
    CHECK(list_is(ha, ta, (int[]){1, 2}, 2)); /* list A untouched */
}

int main(void)
{
    RUN(test_push_puts_first_and_unlink_takes_any_position);
    RUN(test_a_queue_keeps_its_tail_through_every_unlink);
    RUN(test_an_element_on_two_lists_leaves_one_alone);
    TEST_MAIN_END();
}
