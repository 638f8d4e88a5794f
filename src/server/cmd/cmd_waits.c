/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_waits.c — who waits for whom: LOCK.WAITS, and the waits_for field of LOCK.INFO.
 *
 * Both read the wait-for graph of src/fsm/waitgraph.h (the rule the deadlock search uses) from
 * the applied state after a read barrier. A waiter's list is gathered into a small vector
 * first, since a RESP array states its length before its elements. Nothing outlives a call.
 */
#include <stdlib.h>

#include "fsm/waitgraph.h"
#include "server/cmd/cmd.h"

#define WAITS_ROW_FIELDS 5 /* lock, object, sid, any, waits_for */

struct sids {
    uint64_t *v;
    size_t n, cap;
    bool any, failed;
};

static void sids_add(void *arg, uint64_t sid, bool any)
{
    struct sids *x = arg;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        uint64_t *v = realloc(x->v, cap * sizeof(*v));
        if (!v) {
            x->failed = true;
            return;
        }
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = sid;
    x->any = x->any || any;
}

/* The sessions `sid`'s request on `name` waits for, as an array (an empty one on OOM). */
static void write_waits_for(struct srv_req *r, const char *name, size_t nl, uint64_t sid, bool *any)
{
    struct sids x = {0};
    fsm_waiter_waits_for(r->s->fsm, name, nl, sid, sids_add, &x);
    size_t n = x.failed ? 0 : x.n;
    resp_w_array(r->out, n);
    for (size_t i = 0; i < n; i++)
        resp_w_uint(r->out, x.v[i]);
    if (any)
        *any = x.any;
    free(x.v);
}

static void waiter_add(void *arg, uint64_t sid, uint64_t wait_ms)
{
    (void)wait_ms;
    sids_add(arg, sid, false);
}

void cmd_write_waits_for(struct srv_req *r, const char *name, size_t nl)
{
    struct sids w = {0};
    fsm_lock_waiters(r->s->fsm, name, nl, waiter_add, &w);
    size_t n = w.failed ? 0 : w.n;
    resp_w_array(r->out, n);
    for (size_t i = 0; i < n; i++)
        write_waits_for(r, name, nl, w.v[i], NULL);
    free(w.v);
}

/* One row per queued request of one lock. */
static void write_rows(struct srv_req *r, const struct fsm_lock_item *it, const struct sids *w)
{
    for (size_t i = 0; i < w->n; i++) {
        resp_w_map(r->out, r->proto, WAITS_ROW_FIELDS);
        resp_w_bulk_str(r->out, "lock");
        resp_w_bulk(r->out, it->name.p, it->name.len);
        resp_w_bulk_str(r->out, "object");
        resp_w_bulk_str(r->out, fsm_kind_name(it->kind));
        resp_w_bulk_str(r->out, "sid");
        resp_w_uint(r->out, w->v[i]);
        resp_w_bulk_str(r->out, "waits_for");
        bool any = false;
        write_waits_for(r, it->name.p, it->name.len, w->v[i], &any);
        resp_w_bulk_str(r->out, "any");
        resp_w_uint(r->out, any ? 1 : 0);
    }
}

/*
 * LOCK.WAITS [prefix]: every queued request on the locks, semaphores and elections whose name
 * starts with prefix (the first --max-keys-reply of them in byte order, those the user may
 * see), with the sessions it waits for. `any` 1: it waits for any one of them (a full
 * semaphore's permit holders), else for all of them.
 */
void lockWaitsCommand(struct srv_req *r)
{
    if (r->argc > 2) {
        cmd_reply_err(r, PROTO_ERR " syntax error: LOCK.WAITS [prefix]");
        return;
    }
    const char *prefix = r->argc == 2 ? r->argv[1].p : "";
    size_t plen = r->argc == 2 ? r->argv[1].len : 0;
    size_t limit = r->s->cfg.max_keys_reply;
    struct fsm_lock_item *it = calloc(limit ? limit : 1, sizeof(*it));
    struct sids *w = it ? calloc(limit ? limit : 1, sizeof(*w)) : NULL;
    if (!w) {
        free(it);
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    size_t n = fsm_locks_list(r->s->fsm, prefix, plen, limit, it), rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (!it[i].n_waiters || !cmd_may_lock(r, it[i].name.p, it[i].name.len))
            continue;
        fsm_lock_waiters(r->s->fsm, it[i].name.p, it[i].name.len, waiter_add, &w[i]);
        if (w[i].failed)
            w[i].n = 0;
        rows += w[i].n;
    }
    resp_w_array(r->out, rows);
    for (size_t i = 0; i < n; i++) {
        write_rows(r, &it[i], &w[i]);
        free(w[i].v);
    }
    free(w);
    free(it);
}
