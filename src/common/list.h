/* SPDX-License-Identifier: Apache-2.0 */
/*
 * list — the one doubly-linked list of the tree: intrusive, NULL-terminated, reached from a
 * head pointer (and, for a queue, a tail pointer) that the owner keeps wherever it likes.
 * An element is any struct with a pair of pointers to its own type, `prev`/`next` by default
 * or named (`sprev`/`snext` when one element is on several lists, as an FSM waiter is on its
 * lock's queue and its session's); the _F forms name the pair. The macros are type-checked by
 * the compiler through those fields (no casts, no container_of), which is why this is a set of
 * macros and not functions over a generic node.
 *
 * Owns: nothing (the caller allocates and frees the elements and keeps head and tail).
 * Invariants: head->prev == NULL, tail->next == NULL, and for every element e on a list,
 * e->next->prev == e. The unlinks leave e's own two pointers as they were (a loop that saved
 * `next` may still read them; a caller that reuses e clears them). Arguments are evaluated
 * more than once: pass plain lvalues, never an expression with side effects.
 */
#ifndef FENCELOCK_LIST_H
#define FENCELOCK_LIST_H

/* Put e first in the list that starts at head. */
#define DLIST_PUSH_F(head, e, prev, next)                                                          \
    do {                                                                                           \
        (e)->prev = NULL;                                                                          \
        (e)->next = (head);                                                                        \
        if (head)                                                                                  \
            (head)->prev = (e);                                                                    \
        (head) = (e);                                                                              \
    } while (0)

/* Take e out of the list that starts at head (e must be on it). */
#define DLIST_UNLINK_F(head, e, prev, next)                                                        \
    do {                                                                                           \
        if ((e)->prev)                                                                             \
            (e)->prev->next = (e)->next;                                                           \
        else                                                                                       \
            (head) = (e)->next;                                                                    \
        if ((e)->next)                                                                             \
            (e)->next->prev = (e)->prev;                                                           \
    } while (0)

/* A queue (head and tail): put e last. */
#define DLIST_APPEND_F(head, tail, e, prev, next)                                                  \
    do {                                                                                           \
        (e)->prev = (tail);                                                                        \
        (e)->next = NULL;                                                                          \
        if (tail)                                                                                  \
            (tail)->next = (e);                                                                    \
        else                                                                                       \
            (head) = (e);                                                                          \
        (tail) = (e);                                                                              \
    } while (0)

/* A queue (head and tail): take e out (e must be on it). The unlink keeps e's own pointers, so
 * the last element's prev is still there to become the tail. */
#define DLIST_UNLINK_ENDS_F(head, tail, e, prev, next)                                             \
    do {                                                                                           \
        DLIST_UNLINK_F(head, e, prev, next);                                                       \
        if (!(e)->next)                                                                            \
            (tail) = (e)->prev;                                                                    \
    } while (0)

/* The same over fields named prev and next. */
#define DLIST_PUSH(head, e) DLIST_PUSH_F(head, e, prev, next)
#define DLIST_UNLINK(head, e) DLIST_UNLINK_F(head, e, prev, next)
#define DLIST_APPEND(head, tail, e) DLIST_APPEND_F(head, tail, e, prev, next)
#define DLIST_UNLINK_ENDS(head, tail, e) DLIST_UNLINK_ENDS_F(head, tail, e, prev, next)

#endif
