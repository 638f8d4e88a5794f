/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/format.c — the cluster's log format: which entry and snapshot versions a node must read,
 * and the CLUSTER_FORMAT op that raises the replicated format level.
 *
 * Owns fsm.format (0 until a CLUSTER_FORMAT entry applied: format 1). The level only goes up:
 * a lower CLUSTER_FORMAT is refused. It is replicated state (the log and the snapshot carry it,
 * snapshot version 5), so every node agrees on it and it survives restarts; the FSM does not
 * refuse entries above it (the leader's gate in src/server/cluster/format.c decides what is
 * written), so logs written before the gate existed replay as they did.
 */
#include "fsm/internal.h"

#define ENTRY_HEADER_LEN 2 /* u8 version, u8 op */
#define SNAP_MAGIC_LEN 4
#define SNAP_FIRST_V2 4 /* snapshot.c: versions 4 and later hold format-2 state */
#define SNAP_FIRST 2

unsigned fsm_format(const struct fsm *f)
{
    return f->format ? (unsigned)f->format : FSM_FORMAT_1;
}

static unsigned op_format(const uint8_t *data, size_t len)
{
    uint8_t op = data[1];
    if (op != FSM_OP_CLUSTER_FORMAT)
        return fsm_op_format(op); /* ops.h's row; FSM_FORMAT_MAX + 1 if not an op */
    struct fsm_cmd c;
    char err[8];
    if (fsm_cmd_decode(data, len, &c, err, sizeof(err))) /* answered ERR by every node */
        return FSM_FORMAT_2;
    if (c.cluster_format.format > FSM_FORMAT_MAX)
        return FSM_FORMAT_MAX + 1;
    return c.cluster_format.format > FSM_FORMAT_2 ? (unsigned)c.cluster_format.format
                                                  : FSM_FORMAT_2;
}

unsigned fsm_entry_format(const uint8_t *data, size_t len)
{
    if (len < ENTRY_HEADER_LEN)
        return FSM_FORMAT_1;
    if (data[0] > FSM_CMD_VERSION_USER)
        return FSM_FORMAT_MAX + 1;
    unsigned op = op_format(data, len);
    return data[0] == FSM_CMD_VERSION_USER && op < FSM_FORMAT_2 ? FSM_FORMAT_2 : op;
}

unsigned fsm_snapshot_format(const uint8_t *data, size_t len)
{
    if (len <= SNAP_MAGIC_LEN)
        return FSM_FORMAT_MAX + 1;
    uint8_t v = data[SNAP_MAGIC_LEN];
    if (v < SNAP_FIRST || v > FSM_SNAP_VERSION_LAST)
        return FSM_FORMAT_MAX + 1;
    return v >= SNAP_FIRST_V2 ? FSM_FORMAT_2 : FSM_FORMAT_1;
}

void fsm_op_cluster_format(struct actx *a, const struct fsm_cmd_cluster_format *c,
                           struct fsm_reply *r)
{
    struct fsm *f = a->f;
    if (c->format > FSM_FORMAT_MAX) { /* rn_fsm.c stops a node before it gets here */
        fsm_reply_err(r, PROTO_ERR " log format %llu is newer than this node reads (%d)",
                      (unsigned long long)c->format, FSM_FORMAT_MAX);
        return;
    }
    if (c->format < FSM_FORMAT_2 || c->format < fsm_format(f)) {
        fsm_reply_err(r, PROTO_ERR " the cluster's log format is %u and never goes back to %llu",
                      fsm_format(f), (unsigned long long)c->format);
        return;
    }
    if (c->format > fsm_format(f)) {
        f->format = c->format;
        fsm_next_rev(a);
    }
    r->kind = FSM_REPLY_OK;
}
