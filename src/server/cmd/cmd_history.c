/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_history.c — LOCK.HISTORY: the grants of a lock, semaphore or election, newest first, from
 * the replicated history (src/fsm/history.c), after a read barrier like every read.
 *
 * The entries are gathered into a vector first (a RESP array states its length before its
 * elements); their views borrow the FSM, valid until the next apply, which cannot run during
 * the call. The HTTP API's /v1/locks/{name}/history uses cmd_history_collect as well.
 */
#include <stdio.h>
#include <stdlib.h>

#include "server/cmd/cmd.h"

#define HISTORY_FIELDS 18
#define HISTORY_COUNT_DEFAULT 100 /* COUNT left out: the newest 100 (at most --max-keys-reply) */

static void collect_cb(void *arg, const struct fsm_hist_entry *e)
{
    struct cmd_history *h = arg;
    if (h->n < h->cap)
        h->v[h->n++] = *e;
}

int cmd_history_collect(const struct fsm *f, const char *name, size_t len, uint64_t before,
                        size_t count, struct cmd_history *out)
{
    out->n = 0;
    out->cap = count;
    out->compacted = 0;
    out->v = count ? calloc(count, sizeof(*out->v)) : NULL;
    if (count && !out->v)
        return CMD_HISTORY_NOMEM;
    int rc = fsm_lock_history(f, name, len, before, count, collect_cb, out, &out->compacted);
    if (rc < 0) {
        free(out->v);
        out->v = NULL;
    }
    return rc < 0 ? rc : 0;
}

const char *cmd_history_trace(const struct trace_ctx *t, char out[TRACE_TEXT_LEN + 1])
{
    if (!t)
        return "";
    trace_format(t, out);
    return out;
}

static void write_entry(struct srv_req *r, const struct fsm_hist_entry *e)
{
    struct buf *o = r->out;
    resp_w_map(o, r->proto, HISTORY_FIELDS);
    resp_w_bulk_str(o, "kind");
    resp_w_bulk_str(o, fsm_kind_name(e->kind));
    resp_w_bulk_str(o, "session");
    resp_w_uint(o, e->sid);
    resp_w_bulk_str(o, "session_name");
    resp_w_bulk(o, e->session_name.p, e->session_name.len);
    resp_w_bulk_str(o, "user");
    resp_w_bulk(o, e->user.p, e->user.len);
    resp_w_bulk_str(o, "value"); /* a lock grant's LOCK ... VALUE */
    resp_w_bulk(o, e->value.p, e->value.len);
    char tp[TRACE_TEXT_LEN + 1];
    resp_w_bulk_str(o, "traceparent"); /* the grantee's request's TRACEPARENT, "" if none */
    resp_w_bulk_str(o, cmd_history_trace(e->trace, tp));
    resp_w_bulk_str(o, "end_traceparent"); /* the ending command's */
    resp_w_bulk_str(o, cmd_history_trace(e->end_trace, tp));
    resp_w_bulk_str(o, "token");
    resp_w_uint(o, e->token);
    resp_w_bulk_str(o, "permits");
    resp_w_uint(o, e->permits);
    resp_w_bulk_str(o, "granted_rev");
    resp_w_uint(o, e->token);
    resp_w_bulk_str(o, "granted_ms");
    resp_w_uint(o, e->granted_ms);
    resp_w_bulk_str(o, "waited_ms");
    resp_w_uint(o, e->waited_ms);
    resp_w_bulk_str(o, "ended_rev");
    resp_w_uint(o, e->ended_rev);
    resp_w_bulk_str(o, "ended_ms");
    resp_w_uint(o, e->ended_ms);
    resp_w_bulk_str(o, "ended_by");
    resp_w_bulk_str(o, e->ended_by);
    resp_w_bulk_str(o, "held_ms");
    resp_w_uint(o, e->held_ms);
    resp_w_bulk_str(o, "waiters_total");
    resp_w_uint(o, e->n_waiters);
    resp_w_bulk_str(o, "waiters"); /* the first FSM_HIST_WAITERS, in the order they queued */
    resp_w_array(o, e->n_shown);
    for (uint32_t i = 0; i < e->n_shown; i++) {
        resp_w_map(o, r->proto, 2);
        resp_w_bulk_str(o, "session");
        resp_w_uint(o, e->waiters[i].sid);
        resp_w_bulk_str(o, "waited_ms");
        resp_w_uint(o, e->waiters[i].waited_ms);
    }
}

void cmd_history_error(int rc, uint64_t compacted, char *msg, size_t len)
{
    if (rc == FSM_HIST_OFF)
        snprintf(msg, len,
                 PROTO_ERR " the lock history is off (--history-per-lock or "
                           "--history-max-entries 0 on the leader)");
    else if (rc == FSM_HIST_COMPACTED)
        snprintf(msg, len,
                 PROTO_COMPACTED " the history asked for was dropped (grants up to revision %llu "
                                 "are gone; ask without BEFORE for what is kept)",
                 (unsigned long long)compacted);
    else
        snprintf(msg, len, PROTO_ERR " out of memory");
}

/* LOCK.HISTORY name [COUNT n] [BEFORE rev] */
void lockHistoryCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t count = HISTORY_COUNT_DEFAULT, before = 0;
    if (cmd_arg_name(r, 1, "lock name", &name))
        return;
    if (count > r->s->cfg.max_keys_reply)
        count = r->s->cfg.max_keys_reply;
    for (size_t i = 2; i < r->argc; i += 2) {
        if (i + 1 >= r->argc) {
            cmd_reply_err(r, PROTO_ERR " syntax error: LOCK.HISTORY name [COUNT n] [BEFORE rev]");
            return;
        }
        if (resp_arg_is(&r->argv[i], "COUNT")) {
            if (cmd_arg_range(r, i + 1, "COUNT", 1, r->s->cfg.max_keys_reply, &count))
                return;
        } else if (resp_arg_is(&r->argv[i], "BEFORE")) {
            if (cmd_arg_range(r, i + 1, "BEFORE", 1, UINT64_MAX, &before))
                return;
        } else {
            cmd_reply_err(r, PROTO_ERR " syntax error: LOCK.HISTORY name [COUNT n] [BEFORE rev]");
            return;
        }
    }
    struct cmd_history h;
    int rc = cmd_history_collect(r->s->fsm, name.p, name.len, before, count, &h);
    if (rc) {
        char msg[160];
        cmd_history_error(rc, h.compacted, msg, sizeof(msg));
        cmd_reply_err(r, msg);
        return;
    }
    resp_w_array(r->out, h.n);
    for (size_t i = 0; i < h.n; i++)
        write_entry(r, &h.v[i]);
    free(h.v);
}
