/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_counter.c — INCR key [BY n] [FENCE lock token] [IFREV rev] [REQ sid seq]: a key as a
 * signed 64-bit counter (fsm/counter.c applies it). BY, when given, comes right after the key;
 * the options after it in any order, as PUT's. The reply is the new value as a RESP integer
 * (signed); the FSM's INT reply carries it in two's complement (cmd_write_done).
 */
#include "server/cmd/cmd.h"

void incrCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_INCR, .incr = {.by = 1}};
    size_t opts = 2;
    if (cmd_need_leader(r) || cmd_arg_name(r, 1, "key", &cmd.incr.key))
        return;
    if (r->argc >= 3 && resp_arg_is(&r->argv[2], "BY")) {
        int64_t by;
        char shown[CMD_ARG_TEXT];
        if (r->argc < 4 || fsm_counter_parse(r->argv[3].p, r->argv[3].len, &by)) {
            resp_w_errorf(r->out,
                          PROTO_ERR " BY takes a signed 64-bit decimal integer, not '%s': INCR "
                                    "key [BY n] [FENCE lock token] [IFREV rev] [REQ sid seq]",
                          r->argc < 4 ? "" : cmd_arg_text(&r->argv[3], shown));
            return;
        }
        cmd.incr.by = (uint64_t)by; /* two's complement on the wire (ops.h) */
        opts = 4;
    }
    if (cmd_parse_opts(r, opts, CMD_OPT_FENCE | CMD_OPT_IFREV | CMD_OPT_REQ | CMD_OPT_TRACE,
                       &cmd) ||
        cmd_trace_needs_fence(r, &cmd))
        return;
    cmd_propose(r, &cmd);
}
