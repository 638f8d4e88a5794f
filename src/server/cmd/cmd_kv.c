/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_kv.c — the key-value commands: PUT, DEL, GET, KV.GET, KEYS.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"

/* Key-value pairs in a KV.GET reply. */
#define KV_GET_FIELDS 5

void putCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_PUT, .put = {.lease_sid = 0}};
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "key", &cmd.put.key))
        return;
    if (r->argv[2].len > r->s->cfg.max_value) {
        resp_w_errorf(r->out, PROTO_TOOLARGE " value is %zu bytes, the limit is %zu",
                      r->argv[2].len, r->s->cfg.max_value);
        return;
    }
    cmd.put.value.p = r->argv[2].p;
    cmd.put.value.len = (uint32_t)r->argv[2].len;
    if (cmd_parse_opts(r, 3,
                       CMD_OPT_LEASE | CMD_OPT_FENCE | CMD_OPT_IFREV | CMD_OPT_REQ | CMD_OPT_TRACE,
                       &cmd) ||
        cmd_trace_needs_fence(r, &cmd))
        return;
    cmd_propose(r, &cmd);
}

void delCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_DEL, .del = {.cond = {.has_fence = false}}};
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "key", &cmd.del.key) ||
        cmd_parse_opts(r, 2, CMD_OPT_FENCE | CMD_OPT_IFREV | CMD_OPT_REQ | CMD_OPT_TRACE, &cmd) ||
        cmd_trace_needs_fence(r, &cmd))
        return;
    cmd_propose(r, &cmd);
}

void getCommand(struct srv_req *r)
{
    struct fsm_str key;
    struct fsm_kv_meta m;
    if (cmd_arg_name(r, 1, "key", &key))
        return;
    if (fsm_kv_get(r->s->fsm, key.p, key.len, &m))
        resp_w_bulk(r->out, m.value, m.value_len);
    else
        resp_w_nil(r->out, r->proto);
}

void kvGetCommand(struct srv_req *r)
{
    struct fsm_str key;
    struct fsm_kv_meta m;
    if (cmd_arg_name(r, 1, "key", &key))
        return;
    if (!fsm_kv_get(r->s->fsm, key.p, key.len, &m)) {
        resp_w_nil(r->out, r->proto);
        return;
    }
    resp_w_map(r->out, r->proto, KV_GET_FIELDS);
    resp_w_bulk_str(r->out, "value");
    resp_w_bulk(r->out, m.value, m.value_len);
    resp_w_bulk_str(r->out, "create_rev");
    resp_w_uint(r->out, m.create_rev);
    resp_w_bulk_str(r->out, "mod_rev");
    resp_w_uint(r->out, m.mod_rev);
    resp_w_bulk_str(r->out, "version");
    resp_w_uint(r->out, m.version);
    resp_w_bulk_str(r->out, "lease");
    resp_w_uint(r->out, m.lease_sid);
}

struct keys_arg {
    struct buf body;
    size_t n;
    const struct srv_req *r;
};

/* Keys the user may not read are left out (they still count towards LIMIT: it bounds the work
   of one reply, docs/protocol.md). */
static int keys_cb(void *arg, const char *key, size_t keylen, const struct fsm_kv_meta *m)
{
    struct keys_arg *ka = arg;
    (void)m;
    if (!cmd_may_key(ka->r, key, keylen))
        return 0;
    resp_w_bulk(&ka->body, key, keylen);
    ka->n++;
    return 0;
}

/* KEYS's argument is a prefix, not Redis's glob: a trailing '*' is dropped ("KEYS *" lists
 * everything, "KEYS user:*" what "KEYS user:" does), and any other glob character ('?', '[',
 * a '*' before the end) is refused, not matched literally: "KEYS *" or "KEYS a?c" answering
 * nothing would read as "no such keys". 0 with the prefix's length, or -1 (replied). */
static int keys_prefix(struct srv_req *r, size_t *plen)
{
    const char *p = r->argv[1].p;
    size_t n = r->argv[1].len;
    if (n > 0 && p[n - 1] == '*')
        n--;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '*' || p[i] == '?' || p[i] == '[') {
            char shown[CMD_ARG_TEXT];
            resp_w_errorf(r->out,
                          PROTO_ERR " KEYS takes a prefix, not a pattern: '%s' has '%c' at byte "
                                    "%zu; list the keys that start with a prefix with KEYS "
                                    "prefix or KEYS prefix* (a '*' only at the end)",
                          cmd_arg_text(&r->argv[1], shown), p[i], i);
            return -1;
        }
    }
    *plen = n;
    return 0;
}

void keysCommand(struct srv_req *r)
{
    uint64_t limit = r->s->cfg.max_keys_reply;
    if (r->argc == 4) {
        if (!resp_arg_is(&r->argv[2], "LIMIT")) {
            cmd_reply_err(r, PROTO_ERR " syntax error: KEYS prefix [LIMIT n]");
            return;
        }
        if (cmd_arg_range(r, 3, "LIMIT", 1, r->s->cfg.max_keys_reply, &limit))
            return;
    } else if (r->argc != 2) {
        cmd_reply_err(r, PROTO_ERR " syntax error: KEYS prefix [LIMIT n]");
        return;
    }
    size_t plen;
    if (keys_prefix(r, &plen))
        return;
    struct keys_arg ka = {.n = 0, .r = r};
    buf_init(&ka.body);
    fsm_kv_scan(r->s->fsm, r->argv[1].p, plen, limit, keys_cb, &ka);
    resp_w_array(r->out, ka.n);
    buf_append(r->out, ka.body.p, ka.body.len);
    buf_free(&ka.body);
}

/* LOCKS prefix [LIMIT n]: existing locks (held, in lock-delay or with waiters) by name. */
