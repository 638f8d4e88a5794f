/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_multi.c — LOCK.MULTI: several locks in one log entry (src/fsm/multi.c).
 *
 *   LOCK.MULTI sid numnames name [name ...] [SHARED name]... [WAIT ms] [REQ sid seq]
 *
 * The reply is an array of fencing tokens in the order the names were given. The log entry
 * carries the names sorted (byte order, as the FSM grants them), so the FSM answers with the
 * first token only: the tokens of one grant are consecutive revisions in name order. The
 * slot keeps, for each name as given, its rank in that order (slot->args: uint16 each,
 * slot->argc of them) to render the array, at once or when the parked request is granted.
 * Nothing outlives the request but the slot's bytes, freed with the slot.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"

/* One name as given: its argument, its position in the request, and its mode. */
struct mname {
    struct fsm_str name;
    uint16_t pos;
    bool shared;
};

static int mname_cmp(const void *x, const void *y)
{
    const struct fsm_str *a = &((const struct mname *)x)->name;
    const struct fsm_str *b = &((const struct mname *)y)->name;
    return fsm_name_cmp(a->p, a->len, b->p, b->len); /* the FSM's order: the entry's */
}

static struct mname *mname_find(struct mname *m, size_t n, const struct resp_arg *a)
{
    struct fsm_str key = {a->p, (uint32_t)a->len};
    struct mname probe = {.name = key};
    return bsearch(&probe, m, n, sizeof(*m), mname_cmp);
}

/* The names, sorted, duplicates refused; 0 or -1 with the reply written. */
static int parse_names(struct srv_req *r, size_t n, struct mname *m)
{
    for (size_t i = 0; i < n; i++) {
        if (cmd_arg_name(r, 3 + i, "lock name", &m[i].name))
            return -1;
        m[i].pos = (uint16_t)i;
    }
    qsort(m, n, sizeof(*m), mname_cmp);
    for (size_t i = 1; i < n; i++)
        if (mname_cmp(&m[i - 1], &m[i]) == 0) {
            char shown[CMD_ARG_TEXT];
            resp_w_errorf(r->out, PROTO_ERR " lock name '%s' given twice",
                          cmd_arg_text(&r->argv[3 + m[i].pos], shown));
            return -1;
        }
    return 0;
}

/* SHARED name pairs out of the options (marking those names); the other options go to
 * cmd_parse_opts, which reads them from a copy of the argument vector without the pairs. */
static int parse_options(struct srv_req *r, size_t from, struct mname *m, size_t n,
                         struct fsm_cmd *cmd)
{
    struct resp_arg *rest = malloc(sizeof(*rest) * (r->argc - from + 1));
    size_t k = 0;
    if (!rest) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return -1;
    }
    rest[k++] = r->argv[0];
    for (size_t i = from; i < r->argc; i++) {
        if (!resp_arg_is(&r->argv[i], "SHARED")) {
            rest[k++] = r->argv[i];
            continue;
        }
        struct mname *x = i + 1 < r->argc ? mname_find(m, n, &r->argv[i + 1]) : NULL;
        if (!x) {
            char shown[CMD_ARG_TEXT];
            resp_w_errorf(r->out, PROTO_ERR " SHARED needs one of the names, not '%s'",
                          i + 1 < r->argc ? cmd_arg_text(&r->argv[i + 1], shown) : "");
            free(rest);
            return -1;
        }
        x->shared = true;
        i++;
    }
    struct resp_arg *argv = r->argv;
    size_t argc = r->argc;
    r->argv = rest;
    r->argc = k;
    int rc = cmd_parse_opts(r, 1, CMD_OPT_WAIT | CMD_OPT_REQ, cmd);
    r->argv = argv;
    r->argc = argc;
    free(rest);
    return rc;
}

/* The log entry's names (sorted) into raw, and each given name's rank into the slot. */
static int build(struct srv_req *r, const struct mname *m, size_t n, struct buf *raw)
{
    uint16_t *rank = calloc(n, sizeof(*rank));
    int rc = rank ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++) {
        rank[m[i].pos] = (uint16_t)i;
        rc = fsm_names_add(raw, m[i].name.p, m[i].name.len, m[i].shared);
    }
    if (!rc) {
        buf_reset(&r->slot->args);
        rc = buf_append(&r->slot->args, rank, n * sizeof(*rank));
        r->slot->argc = n;
    }
    free(rank);
    if (rc)
        cmd_reply_err(r, PROTO_ERR " out of memory");
    return rc;
}

void lockMultiCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_LOCK_MULTI, .lock_multi = {.sid = 0}};
    uint64_t n;
    if (cmd_need_leader(r) || cmd_arg_u64(r, 1, "sid", &cmd.lock_multi.sid) ||
        cmd_live_session(r, cmd.lock_multi.sid) ||
        cmd_arg_range(r, 2, "numnames", 1, FSM_MAX_MULTI_NAMES, &n))
        return;
    if (n > r->s->cfg.max_multi_lock_names) {
        resp_w_errorf(r->out,
                      PROTO_TOOLARGE " LOCK.MULTI of %llu names: at most %llu "
                                     "(--max-multi-lock-names)",
                      (unsigned long long)n, (unsigned long long)r->s->cfg.max_multi_lock_names);
        return;
    }
    if (3 + n > r->argc) {
        cmd_reply_err(r, PROTO_ERR " syntax error: LOCK.MULTI sid numnames name [name ...] "
                                   "[SHARED name]... [WAIT ms] [REQ sid seq]");
        return;
    }
    struct mname *m = calloc(n, sizeof(*m));
    struct buf raw;
    buf_init(&raw);
    if (!m) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (parse_names(r, n, m) == 0 && parse_options(r, 3 + n, m, n, &cmd) == 0 &&
        build(r, m, n, &raw) == 0) {
        cmd.lock_multi.names = (struct fsm_names){(uint32_t)n, {raw.p, (uint32_t)raw.len}};
        cmd_propose(r, &cmd); /* encodes the entry before it returns: raw may go */
    }
    buf_free(&raw);
    free(m);
}

void srv_write_tokens(struct srv_slot *slot, uint64_t first)
{
    if (slot->op != FSM_OP_LOCK_MULTI || slot->args.len != slot->argc * sizeof(uint16_t)) {
        resp_w_uint(&slot->out, first);
        return;
    }
    resp_w_array(&slot->out, slot->argc);
    for (size_t i = 0; i < slot->argc; i++) {
        uint16_t rank;
        memcpy(&rank, slot->args.p + i * sizeof(rank), sizeof(rank));
        resp_w_uint(&slot->out, first + rank);
    }
}
