/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inforows.c — the one read of a semaphore's queue and of a latch's participants for the INFO
 * answers (inforows.h has the invariants and who frees what).
 */
#include <stdlib.h>

#include "fsm/fsm.h"
#include "server/cmd/inforows.h"

static void add(struct info_rows *x, uint64_t sid, uint32_t val)
{
    if (x->failed)
        return;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        struct info_row *v = realloc(x->r, cap * sizeof(*v));
        if (!v) { /* no rows rather than a short list */
            inforows_free(x);
            x->failed = true;
            return;
        }
        x->r = v;
        x->cap = cap;
    }
    x->r[x->n++] = (struct info_row){sid, val};
}

static void sem_waiter(void *arg, uint64_t sid, uint32_t permits)
{
    add(arg, sid, permits);
}

static void latch_part(void *arg, uint64_t sid, bool done)
{
    add(arg, sid, done ? 1 : 0);
}

void inforows_sem_queue(const struct fsm *f, const char *name, size_t nl, struct info_rows *x)
{
    *x = (struct info_rows){.r = NULL};
    fsm_sem_waiters(f, name, nl, sem_waiter, x);
}

void inforows_latch_parts(const struct fsm *f, const char *name, size_t nl, struct info_rows *x)
{
    *x = (struct info_rows){.r = NULL};
    fsm_latch_parts(f, name, nl, latch_part, x);
}

void inforows_free(struct info_rows *x)
{
    free(x->r);
    x->r = NULL;
    x->n = x->cap = 0;
}
