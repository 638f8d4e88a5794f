/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waitrows.c — one object's wait-for rows, for every reply that shows them (waitrows.h).
 *
 * The rows are gathered into vectors before anything is written: a RESP array states its length
 * before its elements, and LOCK.INFO's map size depends on whether a list was cut.
 */
#include "server/cmd/waitrows.h"

#include <stdlib.h>

#include "fsm/waitgraph.h"

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 8;
    void *q = realloc(*p, n * size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

static void row_add(void *arg, uint64_t sid)
{
    struct wait_rows *x = arg;
    if (x->failed || !grow((void **)&x->r, &x->cap, x->n + 1, sizeof(*x->r))) {
        x->failed = true;
        return;
    }
    x->r[x->n++] = (struct wait_row){.sid = sid, .first = x->nv};
}

/* An edge of the last row: listed while the budget lasts, else the row is marked cut
   (fsm_lock_waits_foreach gives one edge past the budget for that). */
static void edge_add(void *arg, uint64_t sid, bool any)
{
    struct wait_rows *x = arg;
    if (x->failed || !x->n)
        return;
    struct wait_row *w = &x->r[x->n - 1];
    w->any = w->any || any;
    if (!*x->left) {
        w->cut = true;
        return;
    }
    if (!grow((void **)&x->v, &x->capv, x->nv + 1, sizeof(*x->v))) {
        x->failed = true;
        return;
    }
    x->v[x->nv++] = sid;
    w->n++;
    --*x->left;
}

void waitrows_read(const struct fsm *f, const char *name, size_t nl, size_t *left,
                   struct wait_rows *out)
{
    *out = (struct wait_rows){.left = left};
    fsm_lock_waits_foreach(f, name, nl, *left, row_add, edge_add, out);
    if (out->failed) /* out of memory: no rows (a list that would be wrong is not given) */
        out->n = 0;
}

bool waitrows_cut(const struct wait_rows *x)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->r[i].cut)
            return true;
    return false;
}

void waitrows_free(struct wait_rows *x)
{
    free(x->r);
    free(x->v);
    x->r = NULL;
    x->v = NULL;
    x->n = x->nv = x->cap = x->capv = 0;
}
