/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_waits.c — who waits for whom: LOCK.WAITS, and the waiters and waits_for fields of
 * LOCK.INFO (one read of the queue gives both: each row's sid and each row's list).
 *
 * Both read the wait-for graph of src/fsm/waitgraph.h (the rule the deadlock search uses) from
 * the applied state after a read barrier, through waitrows.h (the one reader of those rows, which
 * the HTTP API's /v1/waits and /v1/locks/{name} use too): one forward pass per queue, the work
 * the queue's length plus the sids listed. The sids listed over one reply are capped at
 * --max-keys-reply: a request whose list was cut there says so (`cut` 1 in its LOCK.WAITS row;
 * LOCK.INFO's `waits_for_cut` 1, a field present only then, so an uncut reply is as it was), so
 * a READ user cannot make the loop thread write an unbounded reply. Nothing outlives a call.
 */
#include <stdlib.h>

#include "server/cmd/cmd.h"
#include "server/cmd/waitrows.h"

#define WAITS_ROW_FIELDS 6 /* lock, object, sid, waits_for, any, cut */

static void write_sids(struct buf *out, const struct wait_rows *x, size_t i)
{
    const uint64_t *v = waitrows_sids(x, i);
    resp_w_array(out, x->r[i].n);
    for (size_t k = 0; k < x->r[i].n; k++)
        resp_w_uint(out, v[k]);
}

void cmd_write_waiters(struct buf *out, const struct wait_rows *x)
{
    resp_w_array(out, x->n);
    for (size_t i = 0; i < x->n; i++)
        resp_w_uint(out, x->r[i].sid);
}

void cmd_write_waits_for(struct buf *out, const struct wait_rows *x)
{
    resp_w_array(out, x->n);
    for (size_t i = 0; i < x->n; i++)
        write_sids(out, x, i);
}

/* One row per queued request of one lock. */
static void write_rows(struct srv_req *r, const struct fsm_lock_item *it, const struct wait_rows *x)
{
    for (size_t i = 0; i < x->n; i++) {
        const struct wait_row *w = &x->r[i];
        resp_w_map(r->out, r->proto, WAITS_ROW_FIELDS);
        resp_w_bulk_str(r->out, "lock");
        resp_w_bulk(r->out, it->name.p, it->name.len);
        resp_w_bulk_str(r->out, "object");
        resp_w_bulk_str(r->out, fsm_kind_name(it->kind));
        resp_w_bulk_str(r->out, "sid");
        resp_w_uint(r->out, w->sid);
        resp_w_bulk_str(r->out, "waits_for");
        write_sids(r->out, x, i);
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
    struct wait_rows *w = it ? calloc(limit ? limit : 1, sizeof(*w)) : NULL;
    if (!w) {
        free(it);
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    size_t n = fsm_locks_list(r->s->fsm, prefix, plen, limit, it), rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (!it[i].n_waiters || !cmd_may_lock(r, it[i].name.p, it[i].name.len))
            continue; /* w[i] stays zeroed: no rows */
        waitrows_read(r->s->fsm, it[i].name.p, it[i].name.len, &left, &w[i]);
        rows += w[i].n;
    }
    resp_w_array(r->out, rows);
    for (size_t i = 0; i < n; i++) {
        write_rows(r, &it[i], &w[i]);
        waitrows_free(&w[i]);
    }
    free(w);
    free(it);
}
