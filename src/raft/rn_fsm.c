/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_fsm.c — libraft's FSM callbacks (the legacy v0 API, called on the loop thread): every
 * committed entry's commands go to the FSM on every node, the snapshot is the FSM's
 * serialisation, and a restore replaces the FSM's state. The snapshot thresholds adapt to the
 * state's size (see adapt_threshold).
 *
 * Log formats: an entry or snapshot that needs a newer log format than this node reads
 * (fsm_entry_format, fsm_snapshot_format; a previous release meeting this one's entries, or
 * this release meeting a future one's) is never applied: answering it ERR while the other nodes
 * apply it would diverge silently. The node logs why, applies and snapshots nothing more, and
 * the server stops (hooks.halted); restarted with the same binary it stops at the same entry.
 */
#include "raft/rn_internal.h"

#include <string.h>

static void bytes_threshold(struct rn *rn);

static unsigned max_format(const struct rn *rn)
{
    return rn->cfg.max_format ? rn->cfg.max_format : FSM_FORMAT_MAX;
}

static void halt(struct rn *rn, const char *what, unsigned need)
{
    LOGE(rn->log,
         "raft: %s after index %llu needs log format %u; this node reads up to %u: stopping "
         "(upgrade this node's fencelockd and start it again; docs/operations.md, Upgrading)",
         what, (unsigned long long)raft_last_applied(rn->raft), need, max_format(rn));
    rn->halted = true;
    if (rn->hooks.halted)
        rn->hooks.halted(rn->hooks.arg);
}

/* Apply one fsm command and, when this node proposed it, deliver its reply. */
static void apply_one(struct rn *rn, const uint8_t *cmd, size_t len, uint64_t origin, uint64_t pid)
{
    fsm_events_reset(&rn->ev);
    fsm_apply(rn->fsm, cmd, len, &rn->reply, &rn->ev);
    if (rn->hooks.applied)
        rn->hooks.applied(rn->hooks.arg, &rn->reply, &rn->ev);
    if (origin == rn->cfg.id)
        rn_batch_deliver(rn, pid, &rn->reply);
}

/*
 * libraft's apply: must never fail on a committed entry (libraft stops applying on error), so
 * a malformed envelope is applied as nothing and logged.
 */
static int fsm_cb_apply(struct raft_fsm *rf, const struct raft_buffer *buf, void **result)
{
    struct rn *rn = rf->data;
    struct rd r;
    uint8_t version;
    uint64_t origin, pid, n;
    *result = NULL;
    if (rn->halted) /* the server is stopping; nothing after the unreadable entry applies */
        return 0;
    rn->since_bytes += buf->len;
    rn->since_entries++;
    bytes_threshold(rn);
    rd_init(&r, buf->base, buf->len);
    if (rd_u8(&r, &version) || version != RN_ENTRY_VERSION || rd_varint(&r, &origin) ||
        rd_varint(&r, &pid) || rd_varint(&r, &n)) {
        LOGE(rn->log, "raft: skipping malformed entry envelope (%zu bytes)", buf->len);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        const char *cmd;
        uint32_t len;
        if (rd_bytes(&r, &cmd, &len, UINT32_MAX)) {
            LOGE(rn->log, "raft: truncated entry, %llu of %llu commands applied",
                 (unsigned long long)i, (unsigned long long)n);
            return 0;
        }
        unsigned need = fsm_entry_format((const uint8_t *)cmd, len);
        if (need > max_format(rn)) {
            halt(rn, "a committed entry", need);
            return 0;
        }
        apply_one(rn, (const uint8_t *)cmd, len, origin, pid + i);
    }
    return 0;
}

/*
 * Snapshots are written on the loop thread and cost time in proportion to the state (a 1M-lock
 * state: hundreds of ms). With a fixed threshold a large state would be rewritten every few
 * seconds under load, stalling the loop each time. So the next snapshot waits until the log
 * since the last one holds about as many bytes as that snapshot (never fewer entries than
 * configured, never more than RN_THRESHOLD_MAX): snapshot work stays proportional to the bytes
 * logged, and the log kept in memory stays about the size of the state.
 *
 * Entry counts alone do not bound memory: 16,384 overwrites of one 1 MiB key are 16 GiB of log
 * for a 1 MiB state (libraft keeps every entry since the last snapshot, plus `trailing`, in
 * memory and on disk). So the log is also bounded in bytes (log_budget): once the entries
 * applied since the last snapshot hold more than the budget, the threshold drops to what has
 * been applied, and libraft snapshots after this apply; and the trailing entries kept after a
 * snapshot are cut to about the budget in bytes. Memory and disk for the log then stay about
 * 2 x max(state, --snapshot-log-bytes), whatever the history of overwrites. Only the numbers
 * libraft's v0 API takes are changed (raft_set_snapshot_threshold / _trailing); libraft reads
 * the trailing count when it takes a snapshot, and it is only changed here, as one starts.
 */
#define RN_THRESHOLD_MAX (1u << 18)
#define RN_TRAILING_MIN 16 /* entries a lagging follower can still catch up from */

static uint64_t log_budget(const struct rn *rn)
{
    return rn->snap_bytes > rn->cfg.snapshot_log_bytes ? rn->snap_bytes
                                                       : rn->cfg.snapshot_log_bytes;
}

/* After each applied entry: too many bytes logged since the last snapshot -> snapshot now. */
static void bytes_threshold(struct rn *rn)
{
    if (!rn->cfg.snapshot_log_bytes || rn->since_bytes <= log_budget(rn) ||
        rn->since_entries >= rn->threshold)
        return;
    rn->threshold = rn->since_entries > 1 ? (unsigned)rn->since_entries : 1;
    raft_set_snapshot_threshold(rn->raft, rn->threshold);
}

/* Trailing entries of about log_budget bytes at `avg` bytes each, within [MIN, configured]. */
static void bytes_trailing(struct rn *rn, uint64_t avg)
{
    uint64_t want = rn->cfg.snapshot_trailing;
    if (rn->cfg.snapshot_log_bytes && avg && log_budget(rn) / avg < want)
        want = log_budget(rn) / avg;
    if (want < RN_TRAILING_MIN)
        want = RN_TRAILING_MIN < rn->cfg.snapshot_trailing ? RN_TRAILING_MIN
                                                           : rn->cfg.snapshot_trailing;
    if (want == rn->trailing)
        return;
    rn->trailing = (unsigned)want;
    raft_set_snapshot_trailing(rn->raft, rn->trailing);
}

static void adapt_threshold(struct rn *rn, size_t snapshot_bytes)
{
    uint64_t avg = rn->since_entries ? rn->since_bytes / rn->since_entries : 0;
    uint64_t want = avg ? snapshot_bytes / avg : 0;
    if (want < rn->cfg.snapshot_threshold)
        want = rn->cfg.snapshot_threshold;
    if (want > RN_THRESHOLD_MAX && RN_THRESHOLD_MAX > rn->cfg.snapshot_threshold)
        want = RN_THRESHOLD_MAX;
    rn->snap_bytes = snapshot_bytes;
    bytes_trailing(rn, avg);
    rn->since_bytes = rn->since_entries = 0;
    if (want == rn->threshold)
        return;
    rn->threshold = (unsigned)want;
    raft_set_snapshot_threshold(rn->raft, rn->threshold);
    LOGI(rn->log,
         "raft: next snapshot after %u entries or %llu log bytes (%llu-byte entries on "
         "average, %u kept after it)",
         rn->threshold, (unsigned long long)log_budget(rn), (unsigned long long)avg, rn->trailing);
}

/* The default raft heap is libc malloc, so the FSM's buffer is handed over as is. */
static int fsm_cb_snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct rn *rn = rf->data;
    /* An InstallSnapshot waits for our last write to finish (snapguard.h): starting another
     * write now would keep it waiting. libraft simply tries again after a later event. */
    if (snapguard_holding(&rn->guard) || rn->halted) /* halted: the state lacks an entry */
        return RAFT_BUSY;
    struct buf b;
    buf_init(&b);
    uint64_t t0 = uv_hrtime();
    if (fsm_snapshot(rn->fsm, &b)) {
        buf_free(&b);
        return RAFT_NOMEM;
    }
    *bufs = raft_malloc(sizeof(**bufs));
    if (!*bufs) {
        buf_free(&b);
        return RAFT_NOMEM;
    }
    (*bufs)[0].base = b.p;
    (*bufs)[0].len = b.len;
    *n_bufs = 1;
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    if (rn->hooks.timed)
        rn->hooks.timed(rn->hooks.arg, RN_TIME_SNAPSHOT_SERIALIZE, secs);
    LOGI(rn->log, "raft: snapshot of %zu bytes at applied index %llu (serialised in %.1f ms)",
         b.len, (unsigned long long)raft_last_applied(rn->raft), secs * 1e3);
    adapt_threshold(rn, b.len);
    return 0;
}

static int fsm_cb_restore(struct raft_fsm *rf, struct raft_buffer *buf)
{
    struct rn *rn = rf->data;
    char err[RN_REASON_BUF];
    unsigned need = fsm_snapshot_format(buf->base, buf->len);
    if (need > max_format(rn)) {
        halt(rn, "a snapshot", need);
        return RAFT_CORRUPT;
    }
    uint64_t t0 = uv_hrtime();
    if (fsm_restore(rn->fsm, buf->base, buf->len, err, sizeof(err))) {
        LOGE(rn->log, "raft: snapshot restore failed: %s", err);
        return RAFT_CORRUPT;
    }
    if (rn->hooks.timed)
        rn->hooks.timed(rn->hooks.arg, RN_TIME_SNAPSHOT_RESTORE, (double)(uv_hrtime() - t0) / 1e9);
    raft_free(buf->base);
    LOGI(rn->log, "raft: restored snapshot (%zu bytes), revision %llu", buf->len,
         (unsigned long long)fsm_revision(rn->fsm));
    if (rn->hooks.restored)
        rn->hooks.restored(rn->hooks.arg);
    return 0;
}

void rn_fsm_init(struct rn *rn)
{
    rn->rfsm.version = 1; /* the legacy API: snapshot and restore run on the loop thread */
    rn->rfsm.data = rn;
    rn->rfsm.apply = fsm_cb_apply;
    rn->rfsm.snapshot = fsm_cb_snapshot;
    rn->rfsm.restore = fsm_cb_restore;
}
