/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_backup.c — SNAPSHOT.SAVE: an online, consistent copy of the replicated state for
 * `fencelock snapshot save` (a backup that `fencelockd --restore` turns into a new cluster).
 *
 * A linearizable read (CMD_READ: the leader, after its read barrier): the FSM serialised as a
 * Raft snapshot would be, at the revision the barrier reached, with its SHA-256 computed here,
 * so the client can check the bytes it stores are the bytes this leader wrote.
 */
#include "common/snapfile.h"
#include "server/cmd/cmd.h"

#define SNAPSHOT_SAVE_FIELDS 4

void snapshotSaveCommand(struct srv_req *r)
{
    struct buf b;
    char sha[SNAPFILE_SHA_HEX];
    buf_init(&b);
    if (fsm_snapshot(r->s->fsm, &b) || snapfile_sha256_hex((const uint8_t *)b.p, b.len, sha)) {
        buf_free(&b);
        cmd_reply_err(r, PROTO_ERR " out of memory while serialising the state");
        return;
    }
    resp_w_map(r->out, r->proto, SNAPSHOT_SAVE_FIELDS);
    resp_w_bulk_str(r->out, "revision");
    resp_w_uint(r->out, fsm_revision(r->s->fsm));
    resp_w_bulk_str(r->out, "size");
    resp_w_uint(r->out, b.len);
    resp_w_bulk_str(r->out, "sha256");
    resp_w_bulk_str(r->out, sha);
    resp_w_bulk_str(r->out, "data");
    resp_w_bulk(r->out, b.p, b.len);
    buf_free(&b);
}
