/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_waits.c — who waits for whom: LOCK.WAITS, and the waits_for field of LOCK.INFO.
 *
 * Both read the wait-for graph of src/fsm/waitgraph.h (the rule the deadlock search uses) from
 * the applied state after a read barrier, one forward pass per queue (fsm_lock_waits_foreach:
 * the work is the queue's length plus the sids listed, never the square of a shared run's
 * length). The sids listed over one reply are capped at --max-keys-reply: a request whose list
 * was cut there says so (`cut` 1 in its LOCK.WAITS row; LOCK.INFO's `waits_for_cut` 1, a field
 * present only then, so an uncut reply is as it was), so a
 * READ user cannot make the loop thread write an unbounded reply. Each queue's rows are
 * gathered into vectors first, since a RESP array states its length before its elements.
 * Nothing outlives a call.
 */
#include <stdlib.h>

#include "fsm/waitgraph.h"
#include "server/cmd/cmd.h"

#define WAITS_ROW_FIELDS 6 /* lock, object, sid, waits_for, any, cut */

struct row {
    uint64_t sid;
    size_t first, n; /* its sids: v[first .. first + n) */
    bool any, cut;
};

/* One queue's requests and their blockers. `left`: the sids the reply may still list. */
struct rows {
    struct row *r;
    size_t n, cap;
    uint64_t *v;
    size_t nv, capv;
    size_t *left;
    bool failed;
};

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
    struct rows *x = arg;
    if (x->failed || !grow((void **)&x->r, &x->cap, x->n + 1, sizeof(*x->r))) {
        x->failed = true;
        return;
    }
    x->r[x->n++] = (struct row){.sid = sid, .first = x->nv};
}

static void edge_add(void *arg, uint64_t sid, bool any)
{
    struct rows *x = arg;
    if (x->failed || !x->n)
        return;
    struct row *w = &x->r[x->n - 1];
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

static void rows_read(struct srv_req *r, const char *name, size_t nl, struct rows *x)
{
    fsm_lock_waits_foreach(r->s->fsm, name, nl, *x->left, row_add, edge_add, x);
    if (x->failed) /* out of memory: no rows (a list that would be wrong is not given) */
        x->n = 0;
}

static void rows_free(struct rows *x)
{
    free(x->r);
    free(x->v);
}

static void write_sids(struct buf *out, const struct rows *x, const struct row *w)
{
    resp_w_array(out, w->n);
    for (size_t k = 0; k < w->n; k++)
        resp_w_uint(out, x->v[w->first + k]);
}

bool cmd_write_waits_for(struct srv_req *r, struct buf *out, const char *name, size_t nl)
{
    size_t left = r->s->cfg.max_keys_reply;
    struct rows x = {.left = &left};
    bool cut = false;
    rows_read(r, name, nl, &x);
    resp_w_array(out, x.n);
    for (size_t i = 0; i < x.n; i++) {
        write_sids(out, &x, &x.r[i]);
        cut = cut || x.r[i].cut;
    }
    rows_free(&x);
    return cut;
}

/* One row per queued request of one lock. */
static void write_rows(struct srv_req *r, const struct fsm_lock_item *it, const struct rows *x)
{
    for (size_t i = 0; i < x->n; i++) {
        const struct row *w = &x->r[i];
        resp_w_map(r->out, r->proto, WAITS_ROW_FIELDS);
        resp_w_bulk_str(r->out, "lock");
        resp_w_bulk(r->out, it->name.p, it->name.len);
        resp_w_bulk_str(r->out, "object");
        resp_w_bulk_str(r->out, fsm_kind_name(it->kind));
        resp_w_bulk_str(r->out, "sid");
        resp_w_uint(r->out, w->sid);
        resp_w_bulk_str(r->out, "waits_for");
        write_sids(r->out, x, w);
        resp_w_bulk_str(r->out, "any");
        resp_w_uint(r->out, w->any ? 1 : 0);
        resp_w_bulk_str(r->out, "cut");
        resp_w_uint(r->out, w->cut ? 1 : 0);
    }
}

/*
 * LOCK.WAITS [prefix]: every queued request on the locks, semaphores and elections whose name
 * starts with prefix (the first --max-keys-reply of them in byte order, those the user may
 * see), with the sessions it waits for (at most --max-keys-reply sids over the reply). `any`
 * 1: it waits for any one of them (a full semaphore's permit holders), else for all of them.
 */
void lockWaitsCommand(struct srv_req *r)
{
    if (r->argc > 2) {
        cmd_reply_err(r, PROTO_ERR " syntax error: LOCK.WAITS [prefix]");
        return;
    }
    const char *prefix = r->argc == 2 ? r->argv[1].p : "";
    size_t plen = r->argc == 2 ? r->argv[1].len : 0;
    size_t limit = r->s->cfg.max_keys_reply, left = limit;
    struct fsm_lock_item *it = calloc(limit ? limit : 1, sizeof(*it));
    struct rows *w = it ? calloc(limit ? limit : 1, sizeof(*w)) : NULL;
    if (!w) {
        free(it);
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    size_t n = fsm_locks_list(r->s->fsm, prefix, plen, limit, it), rows = 0;
    for (size_t i = 0; i < n; i++) {
        w[i].left = &left;
        if (!it[i].n_waiters || !cmd_may_lock(r, it[i].name.p, it[i].name.len))
            continue;
        rows_read(r, it[i].name.p, it[i].name.len, &w[i]);
        rows += w[i].n;
    }
    resp_w_array(r->out, rows);
    for (size_t i = 0; i < n; i++) {
        write_rows(r, &it[i], &w[i]);
        rows_free(&w[i]);
    }
    free(w);
    free(it);
}
