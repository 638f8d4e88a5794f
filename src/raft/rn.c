/*
 * rn.c — libraft glue. See rn.h for the entry format and the delivery contract.
 *
 * Group commit: proposals made during one turn of the event loop are packed into one log entry
 * (a batch of up to RN_BATCH_MAX commands), submitted from a uv_prepare handle just before the
 * loop blocks. One entry per turn instead of one per command: fewer raft_apply calls, smaller
 * AppendEntries, one envelope. A barrier or membership change first submits the open batches,
 * so the log keeps the order in which the server asked.
 *
 * Lazy commands (rn_propose_lazy) are ones whose outcome nobody waits on right away, such as a
 * LOCK that will queue behind another holder. A batch holding only lazy commands is not
 * submitted by the prepare handle. It goes with the next eager command, a barrier or a
 * membership change, or after cfg.lazy_ms. So a queueing LOCK rides in the entry of the next
 * UNLOCK instead of taking an entry (and a disk write on every node) of its own just ahead of
 * it.
 *
 * Proposal life cycle (struct prop, owned by its batch):
 *   OPEN batch --prepare: raft_apply ok--> PENDING --entry applied here--> DELIVERED
 *                                          PENDING --raft cb with error--> told RN_UNKNOWN
 *   OPEN batch --raft_apply fails--> told RN_NOTLEADER / RN_ERR from the prepare handle (never
 *   from inside an rn_* call, so callers are not re-entered).
 * Invariants: a prop is in `pending` exactly while PENDING; its user callback fires once; a
 * batch is freed by libraft's callback (or on failure / close) after all its props were told.
 */
#include "raft/rn.h"

#include <raft.h>

#include "raft/heap.h"
#include "raft/snapguard.h"

/* libraft 0.15 dereferences NULL when it rolls back a configuration change whose committed
 * predecessor was compacted by a snapshot; 0.22 keeps a copy of the committed configuration. */
#if RAFT_VERSION_NUMBER < 2201
#error "fencelock needs libraft >= 0.22.1 (scripts/deps.sh installs it from Debian)"
#endif
#include <errno.h>
#include <netinet/in.h>
#include <raft/uv.h>
#include <stdlib.h>
#include "raft/transport.h"
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RN_ENTRY_VERSION 1

enum prop_state { PROP_OPEN = 0, PROP_PENDING = 1, PROP_DELIVERED = 2 };

#define RN_BATCH_MAX 64             /* commands per log entry */
#define RN_BATCH_BYTES (256u << 10) /* command bytes per log entry (soft) */

struct batch;

struct prop {
    uint64_t pid;
    int state;
    rn_propose_cb cb;
    void *ctx;
    struct prop *prev, *next; /* in rn->head/tail while PENDING */
};

/* One log entry's worth of proposals. */
struct batch {
    struct raft_apply req; /* first: raft hands it back */
    struct rn *rn;
    struct buf body; /* n x (varint len, command bytes) */
    unsigned n;
    bool eager;                /* holds a command that is not lazy: submit this loop turn */
    int status;                /* raft_apply's error when it failed */
    struct batch *prev, *next; /* in rn->batches: every batch not yet freed */
    struct prop props[RN_BATCH_MAX];
};

struct bar {
    struct raft_barrier req;
    struct rn *rn;
    rn_barrier_cb cb;
    void *ctx;
};

/*
 * A membership change or transfer in flight. One at a time: rn refuses a second while one is
 * listed (libraft would refuse most, but not all, and with less to say about why).
 *   CHG_ADD --spare committed: raft_assign--> CHG_ASSIGN --promotion committed--> done
 *   CHG_ASSIGN of a spare this change added --catch-up failed: raft_remove--> CHG_UNDO --> done
 * `added`: this change put the server into the configuration (so a failed promotion takes it
 * out again: an unreachable node must not stay behind as a spare).
 */
enum chg_kind { CHG_ADD = 1, CHG_ASSIGN = 2, CHG_REMOVE = 3, CHG_TRANSFER = 4, CHG_UNDO = 5 };

struct chg {
    union {
        struct raft_change change;
        struct raft_transfer transfer;
    } req; /* first: raft hands it back */
    struct rn *rn;
    uint64_t id;
    int kind;
    bool added;
    uint64_t since_ms; /* uv_now when the change was asked for */
    rn_change_cb cb;
    void *ctx;
    char why[RAFT_ERRMSG_BUF_SIZE]; /* CHG_UNDO: why the promotion failed */
    struct chg *next;
};

struct rn {
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport transport; /* fencelock's validating transport (transport.h) */
    struct rn_tp_policy tp_policy;
    struct raft_fsm rfsm;
    uv_loop_t *loop;
    struct fsm *fsm;
    struct rn_hooks hooks;
    const struct logger *log;
    struct rn_config cfg;
    char *raft_address, *data_dir;
    uint64_t next_pid;
    struct prop *head, *tail; /* pending proposals, in proposal order */
    struct batch *batches;    /* every live batch, newest first */
    struct batch *open;       /* the batch taking proposals this loop turn, or NULL */
    struct batch *failed;     /* batches raft_apply refused, told from the prepare handle */
    uv_prepare_t flush;       /* submits the open batch before the loop blocks */
    uv_timer_t lazy;          /* submits an open batch of lazy commands after cfg.lazy_ms */
    struct snapguard guard;   /* holds InstallSnapshot while we write one */
    struct rn_heap heap;      /* libraft's allocator while this node exists (heap.h) */
    uint64_t since_bytes, since_entries; /* applied since the last snapshot */
    unsigned threshold;                  /* libraft's snapshot threshold now */
    unsigned trailing;                   /* libraft's snapshot trailing now */
    uint64_t snap_bytes;                 /* size of the last snapshot taken here */
    struct chg *changes;                 /* membership changes and transfers in flight */
    uint64_t lead_term, lead_first;      /* last term this node led and its last log index then */
    uint64_t settled_ms; /* when this leader applied its term's first entry (0: not yet) */
    /* The commit index sampled once per election timeout (mark) and the sample before it
     * (prev): what every live voter has acknowledged by now. See voter_caught_up. */
    uint64_t commit_mark, commit_prev, commit_mark_ms;
    /* A change libraft reports in progress that no rn call started (an earlier leader's): what
     * it was when first seen and since when (uv_now ms; 0: none). See rn_tick. */
    uint64_t lib_index, lib_promotee, lib_since_ms;
    char errmsg[RAFT_ERRMSG_BUF_SIZE];
    struct fsm_reply reply;
    struct fsm_events ev;
    bool started, closing;
    bool no_repair; /* FENCELOCK_NO_CONFIG_REPAIR set: leave libraft's bookkeeping alone */
    void (*done)(void *arg);
    void *done_arg;
};

static void flush_cb(uv_prepare_t *h);
static void bytes_threshold(struct rn *rn);

static void pending_unlink(struct rn *rn, struct prop *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        rn->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        rn->tail = p->prev;
    p->prev = p->next = NULL;
}

static void pending_push(struct rn *rn, struct prop *p)
{
    p->prev = rn->tail;
    p->next = NULL;
    if (rn->tail)
        rn->tail->next = p;
    else
        rn->head = p;
    rn->tail = p;
}

/* Proposals apply in the order they were made, so the match is almost always the head. */
static struct prop *pending_find(struct rn *rn, uint64_t pid)
{
    for (struct prop *p = rn->head; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

/* Apply one fsm command and, when this node proposed it, deliver its reply. */
static void apply_one(struct rn *rn, const uint8_t *cmd, size_t len, uint64_t origin, uint64_t pid)
{
    fsm_events_reset(&rn->ev);
    fsm_apply(rn->fsm, cmd, len, &rn->reply, &rn->ev);
    if (rn->hooks.applied)
        rn->hooks.applied(rn->hooks.arg, &rn->reply, &rn->ev);
    if (origin != rn->cfg.id)
        return;
    struct prop *p = pending_find(rn, pid);
    if (!p)
        return;
    pending_unlink(rn, p);
    p->state = PROP_DELIVERED;
    p->cb(p->ctx, RN_OK, &rn->reply);
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
    raft_set_snapshot_threshold(&rn->raft, rn->threshold);
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
    raft_set_snapshot_trailing(&rn->raft, rn->trailing);
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
    raft_set_snapshot_threshold(&rn->raft, rn->threshold);
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
    if (snapguard_holding(&rn->guard))
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
    LOGI(rn->log, "raft: snapshot of %zu bytes at applied index %llu (serialised in %.1f ms)",
         b.len, (unsigned long long)raft_last_applied(&rn->raft), (double)(uv_hrtime() - t0) / 1e6);
    adapt_threshold(rn, b.len);
    return 0;
}

static int fsm_cb_restore(struct raft_fsm *rf, struct raft_buffer *buf)
{
    struct rn *rn = rf->data;
    char err[160];
    if (fsm_restore(rn->fsm, buf->base, buf->len, err, sizeof(err))) {
        LOGE(rn->log, "raft: snapshot restore failed: %s", err);
        return RAFT_CORRUPT;
    }
    raft_free(buf->base);
    LOGI(rn->log, "raft: restored snapshot (%zu bytes), revision %llu", buf->len,
         (unsigned long long)fsm_revision(rn->fsm));
    if (rn->hooks.restored)
        rn->hooks.restored(rn->hooks.arg);
    return 0;
}

static uint64_t tp_term(void *arg)
{
    return ((struct rn *)arg)->raft.current_term;
}

int rn_new(struct rn **out, uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
           const struct rn_hooks *hooks, const struct logger *log, char *err, size_t errlen)
{
    struct rn *rn = calloc(1, sizeof(*rn));
    if (!rn) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rn->loop = loop;
    rn->fsm = fsm;
    rn->hooks = *hooks;
    rn->log = log;
    rn->cfg = *cfg;
    rn->raft_address = strdup(cfg->raft_address);
    rn->data_dir = strdup(cfg->data_dir);
    rn->next_pid = 1;
    fsm_events_init(&rn->ev);
    rn->rfsm.version = 1;
    rn->rfsm.data = rn;
    rn->rfsm.apply = fsm_cb_apply;
    rn->rfsm.snapshot = fsm_cb_snapshot;
    rn->rfsm.restore = fsm_cb_restore;
    rn_heap_init(&rn->heap);
    rn_heap_install(&rn->heap);
    if (!rn->raft_address || !rn->data_dir) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    rn->transport.version = 1; /* libraft checks the struct version it was given */
    /* No peer_ok: any id but 0 and our own may connect. Checking ids against this node's
     * configuration (tried first) cut a node off from the leader it needed: an old leader whose
     * uncommitted REMOVE named the new leader never heard of the new term (the rollback test
     * hung), and a follower that lagged behind an ADD could not be caught up by the added node
     * once it led. Telling a member from an impostor is authentication: issue 18. */
    rn->tp_policy = (struct rn_tp_policy){.arg = rn, .term = tp_term};
    int rv = rn_transport_init(&rn->transport, loop, &rn->tp_policy, log);
    if (rv) {
        snprintf(err, errlen, "raft transport: %s", raft_strerror(rv));
        goto fail;
    }
    rv = raft_uv_init(&rn->io, loop, rn->data_dir, &rn->transport);
    if (rv) {
        snprintf(err, errlen, "raft disk I/O in %s: %s", rn->data_dir, raft_strerror(rv));
        rn_transport_free(&rn->transport);
        goto fail;
    }
    rv = raft_init(&rn->raft, &rn->io, &rn->rfsm, cfg->id, rn->raft_address);
    if (rv) {
        snprintf(err, errlen, "raft_init: %s", raft_errmsg(&rn->raft));
        raft_uv_close(&rn->io);
        rn_transport_free(&rn->transport);
        goto fail;
    }
    /* For a libraft that no longer needs repair_stale_config, and for the test of the watchdog
     * that has to act when the repair does not. */
    rn->no_repair = getenv("FENCELOCK_NO_CONFIG_REPAIR") != NULL;
    /* libraft formats every diagnostic line (snprintf into a 1 KiB buffer) and only then lets
     * its default tracer drop it; a NULL tracer skips the formatting: 7.5 % of the leader's
     * user-space instructions per command (callgrind). LIBRAFT_TRACE=1 keeps the traces. */
    if (!getenv("LIBRAFT_TRACE")) {
        rn->raft.tracer = NULL;
        raft_uv_set_tracer(&rn->io, NULL);
    }
    raft_uv_set_segment_size(&rn->io, 8u << 20);
    /* libraft's auto-recovery renames a segment it cannot read to corrupt-* and starts without
     * it, silently dropping acknowledged entries; refusing to start is the safe answer. */
    raft_uv_set_auto_recovery(&rn->io, false);
    raft_set_pre_vote(&rn->raft, true);
    raft_set_election_timeout(&rn->raft, cfg->election_ms);
    raft_set_heartbeat_timeout(&rn->raft, cfg->heartbeat_ms);
    rn->threshold = cfg->snapshot_threshold;
    raft_set_snapshot_threshold(&rn->raft, rn->threshold);
    rn->trailing = cfg->snapshot_trailing;
    raft_set_snapshot_trailing(&rn->raft, rn->trailing);
    snapguard_init(&rn->guard, loop, &rn->raft, log);
    uv_prepare_init(loop, &rn->flush);
    rn->flush.data = rn;
    uv_prepare_start(&rn->flush, flush_cb);
    uv_unref((uv_handle_t *)&rn->flush); /* never what keeps the loop running */
    uv_timer_init(loop, &rn->lazy);
    rn->lazy.data = rn;
    uv_unref((uv_handle_t *)&rn->lazy);
    *out = rn;
    return 0;
fail:
    rn_heap_uninstall(&rn->heap);
    rn_heap_destroy(&rn->heap);
    fsm_events_free(&rn->ev);
    free(rn->raft_address);
    free(rn->data_dir);
    free(rn);
    return -1;
}

/*
 * kill -9 soon after a snapshot can leave only entries older than the newest snapshot on disk,
 * some in open segments. libraft 0.22.1's loader then finalizes those open segments and refuses
 * ("last entry on disk has index L, which is behind last snapshot's index S"); a second load
 * sees closed segments only, all behind the snapshot, and starts from the snapshot. libraft
 * makes that second pass itself only with auto-recovery, which we turn off (it would also drop
 * unreadable segments). Nothing after the snapshot exists on disk, so nothing is lost; a failed
 * load changes no state of struct raft, so raft_start may run again.
 */
static bool load_needs_second_pass(struct rn *rn, int rv)
{
    const char *m = raft_errmsg(&rn->raft);
    return rv == RAFT_CORRUPT && m && strstr(m, "which is behind last snapshot");
}

/* How long rn_start waits for this node's raft address to become free: a node restarted a
 * moment after the previous process on its ports died may find the port still taken. */
#define RN_BIND_WAIT_MS 5000
#define RN_BIND_STEP_MS 100

/* Bind a throw-away socket to the raft address, as a listener would (SO_REUSEADDR, like
 * libuv). 0 if it could be bound, else the errno. A host that is no IPv4 literal is not
 * probed (0): the transport resolves it itself. */
static int probe_bind(const char *address)
{
    char host[64];
    const char *colon = strrchr(address, ':');
    struct sockaddr_in sa;
    if (!colon || (size_t)(colon - address) >= sizeof(host))
        return 0;
    memcpy(host, address, (size_t)(colon - address));
    host[colon - address] = 0;
    if (uv_ip4_addr(host, atoi(colon + 1), &sa))
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0; /* cannot probe: let the transport try and report */
    int one = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
        rc = errno;
    close(fd);
    return rc;
}

/*
 * Before raft_start: wait up to RN_BIND_WAIT_MS while the raft address is in use (EADDRINUSE),
 * with a log line, and fail with the reason if it stays taken or cannot be bound at all.
 * libraft's TCP transport reports a failed bind as a bare RAFT_IOERR with no message, and a
 * failed raft_start cannot be retried on the same struct raft (it has loaded the log), so the
 * wait happens before it. Runs before the loop does: nothing else is waiting.
 */
static int wait_bindable(struct rn *rn, char *err, size_t errlen)
{
    unsigned waited = 0;
    for (;;) {
        int e = probe_bind(rn->raft_address);
        if (e == 0) {
            if (waited)
                LOGI(rn->log, "raft: %s free after %u ms", rn->raft_address, waited);
            return 0;
        }
        if (e != EADDRINUSE || waited >= RN_BIND_WAIT_MS) {
            snprintf(err, errlen, "raft address %s: cannot listen: %s (waited %u ms)",
                     rn->raft_address, strerror(e), waited);
            return -1;
        }
        if (waited == 0)
            LOGW(rn->log, "raft: %s is in use; waiting up to %u ms for it", rn->raft_address,
                 RN_BIND_WAIT_MS);
        struct timespec ts = {0, RN_BIND_STEP_MS * 1000000L};
        nanosleep(&ts, NULL);
        waited += RN_BIND_STEP_MS;
    }
}

static int start_raft(struct rn *rn, char *err, size_t errlen)
{
    if (wait_bindable(rn, err, errlen))
        return -1;
    int rv = raft_start(&rn->raft);
    if (load_needs_second_pass(rn, rv)) {
        LOGW(rn->log, "raft: %s: loading %s again (its open segments are closed now)",
             raft_errmsg(&rn->raft), rn->data_dir);
        rv = raft_start(&rn->raft);
    }
    if (rv) {
        /* libraft leaves the message empty for a transport that failed to listen. */
        const char *m = raft_errmsg(&rn->raft);
        int e = rv == RAFT_IOERR ? probe_bind(rn->raft_address) : 0;
        if (m && *m)
            snprintf(err, errlen, "raft_start: %s", m);
        else if (e)
            snprintf(err, errlen, "raft_start: raft address %s: cannot listen: %s",
                     rn->raft_address, strerror(e));
        else
            snprintf(err, errlen, "raft_start: %s", raft_strerror(rv));
        return -1;
    }
    rn->started = true;
    return 0;
}

int rn_recover(struct rn *rn, char *err, size_t errlen)
{
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    for (size_t i = 0; i < rn->cfg.n_peers && rv == 0; i++)
        rv = raft_configuration_add(&conf, rn->cfg.peers[i].id, rn->cfg.peers[i].raft_address,
                                    RAFT_VOTER);
    if (rv == 0)
        rv = raft_recover(&rn->raft, &conf);
    raft_configuration_close(&conf);
    if (rv) {
        snprintf(err, errlen, "raft_recover: %s (%s)", raft_strerror(rv), raft_errmsg(&rn->raft));
        return -1;
    }
    LOGI(rn->log, "raft: recovered %s with a new configuration of %zu voter(s)", rn->data_dir,
         rn->cfg.n_peers);
    return 0;
}

int rn_start(struct rn *rn, char *err, size_t errlen)
{
    if (rn->cfg.join) {
        LOGI(rn->log, "raft: joining an existing cluster: %s is not bootstrapped", rn->data_dir);
        return start_raft(rn, err, errlen);
    }
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    if (rn->cfg.n_peers == 0)
        rv = raft_configuration_add(&conf, rn->cfg.id, rn->raft_address, RAFT_VOTER);
    for (size_t i = 0; i < rn->cfg.n_peers && rv == 0; i++)
        rv = raft_configuration_add(&conf, rn->cfg.peers[i].id, rn->cfg.peers[i].raft_address,
                                    RAFT_VOTER);
    if (rv == 0) {
        rv = raft_bootstrap(&rn->raft, &conf);
        if (rv == 0)
            LOGI(rn->log, "raft: bootstrapped a new %u-node cluster in %s", conf.n, rn->data_dir);
        else if (rv == RAFT_CANTBOOTSTRAP)
            rv = 0; /* existing data: start from it */
    }
    raft_configuration_close(&conf);
    if (rv) {
        snprintf(err, errlen, "raft bootstrap: %s", raft_strerror(rv));
        return -1;
    }
    return start_raft(rn, err, errlen);
}

/*
 * libraft's segment encoder requires every entry length to be a multiple of 8 (an assert that
 * release builds compile out: an unpadded entry is written, then the segment fails its checksum
 * on the next start). The envelope's decoder ignores the zero padding after the n commands.
 */
static int pad8(struct buf *b)
{
    static const char zeros[8] = {0};
    size_t rem = b->len % 8;
    return rem ? buf_append(b, zeros, 8 - rem) : 0;
}

static void batch_link(struct rn *rn, struct batch *b)
{
    b->prev = NULL;
    b->next = rn->batches;
    if (rn->batches)
        rn->batches->prev = b;
    rn->batches = b;
}

static void batch_free(struct rn *rn, struct batch *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        rn->batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    buf_free(&b->body);
    free(b);
}

/* Tell every prop of `b` not yet delivered: `open_status` if it never reached libraft,
 * `pending_status` if it did. */
static void batch_tell(struct rn *rn, struct batch *b, int open_status, int pending_status)
{
    for (unsigned i = 0; i < b->n; i++) {
        struct prop *p = &b->props[i];
        if (p->state == PROP_DELIVERED)
            continue;
        int status = p->state == PROP_PENDING ? pending_status : open_status;
        if (p->state == PROP_PENDING)
            pending_unlink(rn, p);
        p->state = PROP_DELIVERED;
        p->cb(p->ctx, status, NULL);
    }
}

static void batch_cb(struct raft_apply *req, int status, void *result)
{
    struct batch *b = (struct batch *)req;
    (void)result;
    /* Appended but not applied here: the outcome cannot be known. */
    int st = status == RAFT_NOTLEADER ? RN_NOTLEADER : RN_UNKNOWN;
    batch_tell(b->rn, b, st, st);
    batch_free(b->rn, b);
}

/* Hand the open batch to libraft. On failure its props are told from the prepare handle. */
static void submit_open(struct rn *rn)
{
    struct batch *b = rn->open;
    if (!b)
        return;
    rn->open = NULL;
    struct buf env;
    buf_init(&env);
    int rv = RAFT_NOMEM;
    if (!buf_put_u8(&env, RN_ENTRY_VERSION) && !buf_put_varint(&env, rn->cfg.id) &&
        !buf_put_varint(&env, b->props[0].pid) && !buf_put_varint(&env, b->n) &&
        !buf_append(&env, b->body.p, b->body.len) && !pad8(&env)) {
        struct raft_buffer rb = {.base = env.p, .len = env.len}; /* raft heap is malloc */
        for (unsigned i = 0; i < b->n; i++) {
            b->props[i].state = PROP_PENDING;
            pending_push(rn, &b->props[i]);
        }
        rv = raft_apply(&rn->raft, &b->req, &rb, 1, batch_cb);
        if (rv == 0)
            return;
        for (unsigned i = 0; i < b->n; i++) {
            pending_unlink(rn, &b->props[i]);
            b->props[i].state = PROP_OPEN;
        }
    }
    buf_free(&env);
    b->status = rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
    b->req.data = rn->failed; /* the failed list is chained through req.data */
    rn->failed = b;
}

static void lazy_cb(uv_timer_t *t)
{
    submit_open(t->data);
}

/* Runs every loop turn just before the loop blocks: submit (a lazy-only batch waits for the
 * timer or company), then tell refused batches. */
static void flush_cb(uv_prepare_t *h)
{
    struct rn *rn = h->data;
    if (rn->open && !rn->open->eager) {
        if (!uv_is_active((uv_handle_t *)&rn->lazy))
            uv_timer_start(&rn->lazy, lazy_cb, rn->cfg.lazy_ms, 0);
    } else {
        submit_open(rn);
    }
    while (rn->failed) {
        struct batch *b = rn->failed;
        rn->failed = b->req.data;
        batch_tell(rn, b, b->status, b->status);
        batch_free(rn, b);
    }
}

static int propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx,
                   bool lazy)
{
    if (rn->closing || !rn->started)
        return RN_ERR;
    if (raft_state(&rn->raft) != RAFT_LEADER)
        return RN_NOTLEADER;
    if (rn->open && (rn->open->n == RN_BATCH_MAX || rn->open->body.len >= RN_BATCH_BYTES))
        submit_open(rn);
    struct batch *b = rn->open;
    if (!b) {
        b = malloc(sizeof(*b));
        if (!b)
            return RN_ERR;
        memset(b, 0, offsetof(struct batch, props));
        b->rn = rn;
        buf_init(&b->body);
        batch_link(rn, b);
        rn->open = b;
    }
    size_t mark = b->body.len;
    if (buf_put_bytes(&b->body, cmd, len)) {
        buf_truncate(&b->body, mark); /* a half-written length must not reach the entry */
        if (b->n == 0) {
            rn->open = NULL;
            batch_free(rn, b);
        }
        return RN_ERR;
    }
    b->eager |= !lazy;
    struct prop *p = &b->props[b->n++];
    memset(p, 0, sizeof(*p));
    p->pid = rn->next_pid++;
    p->state = PROP_OPEN;
    p->cb = cb;
    p->ctx = ctx;
    return RN_OK;
}

int rn_propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx)
{
    return propose(rn, cmd, len, cb, ctx, false);
}

int rn_propose_lazy(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx)
{
    return propose(rn, cmd, len, cb, ctx, rn->cfg.lazy_ms > 0);
}

static void bar_cb(struct raft_barrier *req, int status)
{
    struct bar *b = (struct bar *)req;
    b->cb(b->ctx, status == 0 ? RN_OK : (status == RAFT_NOTLEADER ? RN_NOTLEADER : RN_UNKNOWN));
    free(b);
}

int rn_barrier(struct rn *rn, rn_barrier_cb cb, void *ctx)
{
    if (rn->closing || !rn->started)
        return RN_ERR;
    if (raft_state(&rn->raft) != RAFT_LEADER)
        return RN_NOTLEADER;
    submit_open(rn); /* the barrier goes after everything proposed before it */
    struct bar *b = calloc(1, sizeof(*b));
    if (!b)
        return RN_ERR;
    b->rn = rn;
    b->cb = cb;
    b->ctx = ctx;
    int rv = raft_barrier(&rn->raft, &b->req, bar_cb);
    if (rv) {
        free(b);
        return rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
    }
    return RN_OK;
}

int rn_role(struct rn *rn)
{
    return rn->started ? raft_state(&rn->raft) : RN_UNAVAILABLE;
}
uint64_t rn_term(struct rn *rn)
{
    return rn->raft.current_term;
}
uint64_t rn_commit_index(struct rn *rn)
{
    return rn->raft.commit_index;
}
uint64_t rn_applied_index(struct rn *rn)
{
    return raft_last_applied(&rn->raft);
}

void rn_leader(struct rn *rn, uint64_t *id, const char **raft_address)
{
    raft_id lid = 0;
    const char *addr = NULL;
    if (rn->started)
        raft_leader(&rn->raft, &lid, &addr);
    *id = lid;
    *raft_address = addr;
}

void rn_foreach_server(struct rn *rn,
                       void (*cb)(void *arg, uint64_t id, const char *raft_address, int role),
                       void *arg)
{
    const struct raft_configuration *c = &rn->raft.configuration;
    for (unsigned i = 0; i < c->n; i++)
        cb(arg, c->servers[i].id, c->servers[i].address, c->servers[i].role);
}

const char *rn_server_address(struct rn *rn, uint64_t id)
{
    const struct raft_configuration *c = &rn->raft.configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].address;
    return NULL;
}

int rn_server_role(struct rn *rn, uint64_t id)
{
    const struct raft_configuration *c = &rn->raft.configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].role;
    return -1;
}

int rn_server_role_committed(struct rn *rn, uint64_t id)
{
    /* With no change pending the current configuration is the committed one. */
    const struct raft_configuration *c = rn->raft.configuration_uncommitted_index
                                             ? &rn->raft.configuration_committed
                                             : &rn->raft.configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].role;
    return -1;
}

/* ---- membership changes and leadership transfer ---- */

const char *rn_errmsg(struct rn *rn)
{
    return rn->errmsg;
}

static int map_status(int rv)
{
    switch (rv) {
    case 0:
        return RN_OK;
    case RAFT_NOTLEADER:
        return RN_NOTLEADER;
    case RAFT_LEADERSHIPLOST:
        return RN_UNKNOWN;
    default:
        return RN_ERR;
    }
}

static const char *const chg_names[] = {[CHG_ADD] = "add",
                                        [CHG_ASSIGN] = "promote",
                                        [CHG_REMOVE] = "remove",
                                        [CHG_TRANSFER] = "transfer",
                                        [CHG_UNDO] = "undo-add"};

int rn_change_info(struct rn *rn, struct rn_change_view *out)
{
    uint64_t now = uv_now(rn->loop);
    memset(out, 0, sizeof(*out));
    struct chg *c = rn->changes;
    while (c && c->next) /* the oldest: the one the others would wait for */
        c = c->next;
    if (c) {
        out->kind = chg_names[c->kind];
        out->id = c->id;
        out->age_ms = now - c->since_ms;
        return 1;
    }
    if (!rn->lib_since_ms)
        return 0;
    out->kind = rn->lib_promotee ? "promote" : "uncommitted";
    out->id = rn->lib_promotee;
    out->index = rn->lib_index;
    out->age_ms = now - rn->lib_since_ms;
    return 1;
}

/* "remove of server 2, for 1234 ms" or "the configuration entry at index 57, uncommitted for
 * 120 ms": what a refused change waits for. */
static void describe_change(struct rn *rn, char *buf, size_t len)
{
    struct rn_change_view v;
    if (!rn_change_info(rn, &v))
        snprintf(buf, len, "none that this node knows of");
    else if (v.id)
        snprintf(buf, len, "%s of server %llu, for %llu ms", v.kind, (unsigned long long)v.id,
                 (unsigned long long)v.age_ms);
    else if (v.index)
        snprintf(buf, len, "the configuration entry at index %llu, uncommitted for %llu ms",
                 (unsigned long long)v.index, (unsigned long long)v.age_ms);
    else
        snprintf(buf, len, "%s to any voter, for %llu ms", v.kind, (unsigned long long)v.age_ms);
}

/* Sync failure of a libraft call: keep its message for rn_errmsg; the status to return. A
 * refusal because of another change names that change. */
static int fail_call(struct rn *rn, int rv, const char *what)
{
    const char *m = raft_errmsg(&rn->raft);
    char blocker[160] = "";
    if (rv == RAFT_CANTCHANGE) {
        size_t k = (size_t)snprintf(blocker, sizeof(blocker), ": ");
        describe_change(rn, blocker + k, sizeof(blocker) - k);
    }
    snprintf(rn->errmsg, sizeof(rn->errmsg), "%s: %s%s", what, m && *m ? m : raft_strerror(rv),
             blocker);
    return rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
}

static void chg_unlink(struct rn *rn, struct chg *c)
{
    for (struct chg **pp = &rn->changes; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            return;
        }
}

static void chg_finish(struct chg *c, int status, const char *msg)
{
    chg_unlink(c->rn, c);
    c->cb(c->ctx, status, status == RN_OK ? NULL : msg);
    free(c);
}

static void change_cb(struct raft_change *req, int status);

/* The promotion of a spare this change added failed (libraft gave up catching it up, or the
 * leader changed): take the spare out again, so nothing is left that blocks the next change;
 * the caller hears why the add failed once the removal is through. */
static void undo_add(struct chg *c, int status)
{
    struct rn *rn = c->rn;
    if (status == RAFT_LEADERSHIPLOST || rn->closing || raft_state(&rn->raft) != RAFT_LEADER) {
        /* The promotion may still commit under the next leader, or leave a spare that a
         * repeated CLUSTER.ADD resumes: not this node's to undo any more. */
        chg_finish(c, map_status(status), raft_strerror(status));
        return;
    }
    snprintf(c->why, sizeof(c->why), "server %llu did not catch up (%s)", (unsigned long long)c->id,
             raft_strerror(status));
    LOGW(rn->log, "raft: %s: removing it from the configuration again", c->why);
    c->kind = CHG_UNDO;
    int rv = raft_remove(&rn->raft, &c->req.change, c->id, change_cb);
    if (rv) {
        size_t k = strlen(c->why);
        snprintf(c->why + k, sizeof(c->why) - k, "; it stays a spare: %s", raft_strerror(rv));
        chg_finish(c, RN_ERR, c->why);
    }
}

static void change_cb(struct raft_change *req, int status)
{
    struct chg *c = (struct chg *)req;
    struct rn *rn = c->rn;
    if (c->kind == CHG_UNDO) {
        size_t k = strlen(c->why);
        snprintf(c->why + k, sizeof(c->why) - k, "%s",
                 status ? "; removing the spare again failed" : "; removed again");
        chg_finish(c, RN_ERR, c->why);
        return;
    }
    if (status && c->kind == CHG_ASSIGN && c->added) {
        undo_add(c, status);
        return;
    }
    if (status || c->kind != CHG_ADD) {
        if (status == 0)
            LOGI(rn->log, "raft: configuration change for server %llu committed",
                 (unsigned long long)c->id);
        chg_finish(c, map_status(status), raft_strerror(status));
        return;
    }
    /* Added as a spare: now promote. libraft first catches the node up (rounds of
     * AppendEntries, or InstallSnapshot), then appends and commits the new configuration. */
    if (rn->closing) {
        chg_finish(c, RN_ERR, "shutting down");
        return;
    }
    c->kind = CHG_ASSIGN;
    c->added = true;
    int rv = raft_assign(&rn->raft, &c->req.change, c->id, RAFT_VOTER, change_cb);
    if (rv)
        undo_add(c, rv);
}

/* A transfer callback carries no status: success is the target being the known leader. */
static void transfer_cb(struct raft_transfer *req)
{
    struct chg *c = (struct chg *)req;
    struct rn *rn = c->rn;
    raft_id lid = 0;
    const char *addr = NULL;
    raft_leader(&rn->raft, &lid, &addr);
    uint64_t want = req->id ? req->id : c->id;
    if (lid && lid != rn->cfg.id && (want == 0 || lid == want)) {
        LOGI(rn->log, "raft: leadership transferred to %llu", (unsigned long long)lid);
        chg_finish(c, RN_OK, NULL);
        return;
    }
    snprintf(rn->errmsg, sizeof(rn->errmsg),
             "leadership transfer to %llu did not complete "
             "(leader now %llu)",
             (unsigned long long)want, (unsigned long long)lid);
    chg_finish(c, RN_ERR, rn->errmsg);
}

static struct chg *chg_new(struct rn *rn, int kind, uint64_t id, rn_change_cb cb, void *ctx)
{
    struct chg *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "out of memory");
        return NULL;
    }
    c->rn = rn;
    c->kind = kind;
    c->id = id;
    c->cb = cb;
    c->ctx = ctx;
    c->since_ms = uv_now(rn->loop);
    c->next = rn->changes;
    rn->changes = c;
    return c;
}

static int chg_check(struct rn *rn, const char *what)
{
    if (rn->closing || !rn->started) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "shutting down");
        return RN_ERR;
    }
    if (raft_state(&rn->raft) != RAFT_LEADER) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "not the leader");
        return RN_NOTLEADER;
    }
    if (rn->changes) {
        char blocker[160];
        describe_change(rn, blocker, sizeof(blocker));
        snprintf(rn->errmsg, sizeof(rn->errmsg),
                 "%s: a configuration change is already in progress: %s", what, blocker);
        return RN_ERR;
    }
    submit_open(rn); /* the change goes after everything proposed before it */
    return RN_OK;
}

/* Register the request, run the libraft call; on its failure undo and report. */
static int chg_submit(struct rn *rn, struct chg *c, int rv, const char *what)
{
    if (rv == 0)
        return RN_OK;
    chg_unlink(rn, c);
    free(c);
    return fail_call(rn, rv, what);
}

int rn_add(struct rn *rn, uint64_t id, const char *raft_address, rn_change_cb cb, void *ctx)
{
    int role = rn_server_role(rn, id);
    const char *known = rn_server_address(rn, id);
    int rc = chg_check(rn, known ? "promoting to voter" : "adding server");
    if (rc != RN_OK)
        return rc;
    if (role == RAFT_VOTER || (known && strcmp(known, raft_address))) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "server %llu is already %s",
                 (unsigned long long)id,
                 role == RAFT_VOTER ? "a voter" : "known at another address");
        return RN_ERR;
    }
    struct chg *c = chg_new(rn, known ? CHG_ASSIGN : CHG_ADD, id, cb, ctx);
    if (!c)
        return RN_ERR;
    if (known)
        return chg_submit(rn, c, raft_assign(&rn->raft, &c->req.change, id, RAFT_VOTER, change_cb),
                          "promoting to voter");
    return chg_submit(rn, c, raft_add(&rn->raft, &c->req.change, id, raft_address, change_cb),
                      "adding server");
}

int rn_remove(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    int rc = chg_check(rn, "removing server");
    if (rc != RN_OK)
        return rc;
    struct chg *c = chg_new(rn, CHG_REMOVE, id, cb, ctx);
    if (!c)
        return RN_ERR;
    return chg_submit(rn, c, raft_remove(&rn->raft, &c->req.change, id, change_cb),
                      "removing server");
}

/* A voter other than the leader counts as with the leader when it has acknowledged the commit
 * index of one to two election timeouts ago: a live follower always has (or the leader would
 * count it unreachable), one that is down or cut off falls behind as soon as anything new
 * commits. A heuristic: an idle cluster cannot tell a peer that just died. */
static bool voter_caught_up(struct rn *rn, uint64_t id)
{
    raft_index match = 0;
    if (id == rn->cfg.id)
        return true;
    return raft_match_index(&rn->raft, id, &match) == 0 && match >= rn->commit_prev;
}

int rn_remove_check(struct rn *rn, uint64_t id, char *why, size_t whylen)
{
    const struct raft_configuration *c = &rn->raft.configuration;
    unsigned left = 0, with_us = 0;
    bool voter = false;
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].role != RAFT_VOTER)
            continue;
        if (c->servers[i].id == id) {
            voter = true;
            continue;
        }
        left++;
        with_us += voter_caught_up(rn, c->servers[i].id);
    }
    if (!voter)
        return 0; /* a spare or standby: the voters stay as they are */
    if (left == 0) {
        snprintf(why, whylen,
                 "server %llu is the last voter: removing it would leave the cluster "
                 "without any voter",
                 (unsigned long long)id);
        return RN_REMOVE_LAST;
    }
    if (left == 1) {
        snprintf(why, whylen,
                 "removing server %llu would leave one voter, the cluster's whole quorum (no "
                 "fault tolerance; add a server first, or say FORCE)",
                 (unsigned long long)id);
        return RN_REMOVE_ONE_LEFT;
    }
    if (with_us <= left / 2) {
        snprintf(why, whylen,
                 "removing server %llu needs %u of the %u remaining voters to commit, and only "
                 "%u are known to be caught up (bring the others back, or say FORCE)",
                 (unsigned long long)id, left / 2 + 1, left, with_us);
        return RN_REMOVE_NO_QUORUM;
    }
    return 0;
}

int rn_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    int rc = chg_check(rn, "transferring leadership");
    if (rc != RN_OK)
        return rc;
    struct chg *c = chg_new(rn, CHG_TRANSFER, id, cb, ctx);
    if (!c)
        return RN_ERR;
    return chg_submit(rn, c, raft_transfer(&rn->raft, &c->req.transfer, id, transfer_cb),
                      "transferring leadership");
}

/* ---- libraft's own change bookkeeping: repair and watchdog (issue #15) ---- */

static int config_copy(const struct raft_configuration *src, struct raft_configuration *dst)
{
    raft_configuration_init(dst);
    for (unsigned i = 0; i < src->n; i++)
        if (raft_configuration_add(dst, src->servers[i].id, src->servers[i].address,
                                   src->servers[i].role)) {
            raft_configuration_close(dst);
            return -1;
        }
    return 0;
}

/*
 * libraft 0.22.1 (and the cowsql fork's HEAD) records a configuration entry that a follower
 * receives behind other new entries of one AppendEntries at the index of the batch's *first*
 * new entry: replicationAppend (src/replication.c) calls membershipUncommittedChange(r, index,
 * entry) for every entry of the batch with the same `index`. When the real entry is applied,
 * replicationApplyConfigurationChange sees another index and ignores it, so
 * configuration_uncommitted_index stays set for good and configuration_committed stays the
 * configuration before the change. Once that node leads, membershipCanChangeConfiguration
 * refuses every change with RAFT_CANTCHANGE. (A restart from a snapshot taken meanwhile can
 * leave the same state: the snapshot carries the stale configuration index.)
 *
 * The state is recognisable: an "uncommitted" configuration at an index already applied, on a
 * node that knows every configuration entry it holds is committed -- a follower that applied
 * its whole log, or a leader that applied its own term's first entry (every configuration
 * entry of an earlier term is before it; one of this term has its index recorded right, above
 * the applied index until it commits). Then the current configuration is the committed one:
 * record it as such, with the applied index as its index (at or after the real entry, so a
 * restart does not take the entry for uncommitted again).
 */
static void repair_stale_config(struct rn *rn)
{
    struct raft *r = &rn->raft;
    raft_index u = r->configuration_uncommitted_index, applied = raft_last_applied(r);
    if (u == 0 || u > applied || rn->no_repair)
        return;
    int st = raft_state(r);
    bool settled = st == RAFT_LEADER ? rn->lead_term == r->current_term && applied >= rn->lead_first
                                     : st == RAFT_FOLLOWER && applied == raft_last_index(r);
    struct raft_configuration copy;
    if (!settled || config_copy(&r->configuration, &copy))
        return; /* not yet known to be committed, or no memory: the next tick looks again */
    raft_configuration_close(&r->configuration_committed);
    r->configuration_committed = copy;
    r->configuration_committed_index = applied;
    r->configuration_uncommitted_index = 0;
    LOGW(rn->log,
         "raft: libraft still counted the configuration entry it noted at index %llu as "
         "uncommitted although index %llu is applied (libraft 0.22.1 records a change received "
         "in a batch at the batch's first index): marked committed, changes possible again",
         (unsigned long long)u, (unsigned long long)applied);
}

static void watchdog_transfer_done(void *ctx, int status, const char *msg)
{
    struct rn *rn = ctx;
    if (status != RN_OK)
        LOGW(rn->log, "raft: handing over leadership to clear a stuck change failed: %s",
             msg ? msg : "unknown");
}

/*
 * A change libraft reports in progress (an uncommitted configuration entry, a promotion's
 * catch-up) that no rn call started: normally an earlier leader's, which the first entry of a
 * new term commits within an election timeout. If it stays put on a leader for
 * RN_STUCK_TIMEOUTS election timeouts, libraft will not let it go by itself: hand leadership to
 * another voter (it has its own bookkeeping, and the next leader change is what clears the
 * promotion state), with a log line. Again after as long if it is still there.
 */
#define RN_STUCK_TIMEOUTS 20

static void watch_lib_change(struct rn *rn, uint64_t now)
{
    struct raft *r = &rn->raft;
    bool leader = raft_state(r) == RAFT_LEADER;
    uint64_t u = r->configuration_uncommitted_index;
    uint64_t p = leader ? r->leader_state.promotee_id : 0;
    if (rn->changes || (u == 0 && p == 0)) {
        rn->lib_since_ms = 0;
        return;
    }
    if (!rn->lib_since_ms || u != rn->lib_index || p != rn->lib_promotee) {
        rn->lib_since_ms = now ? now : 1;
        rn->lib_index = u;
        rn->lib_promotee = p;
        return;
    }
    /* Only a settled leader's own wait counts: before its term's first entry applied, an
     * earlier leader's change is legitimately pending, and time spent as a follower or
     * candidate says nothing about this leader. */
    if (!leader || !rn->settled_ms)
        return;
    uint64_t from = rn->lib_since_ms > rn->settled_ms ? rn->lib_since_ms : rn->settled_ms;
    uint64_t age = now - from;
    if (age < (uint64_t)RN_STUCK_TIMEOUTS * rn->cfg.election_ms)
        return;
    char what[96];
    if (p)
        snprintf(what, sizeof(what), "the promotion of server %llu", (unsigned long long)p);
    else
        snprintf(what, sizeof(what), "the configuration entry at index %llu",
                 (unsigned long long)u);
    LOGW(rn->log,
         "raft: a configuration change nobody here started (%s) has been in progress for %llu "
         "ms: handing leadership to another voter",
         what, (unsigned long long)age);
    rn->lib_since_ms = rn->settled_ms = now; /* the next attempt, if needed, as long after */
    struct chg *c = chg_new(rn, CHG_TRANSFER, 0, watchdog_transfer_done, rn);
    if (c && chg_submit(rn, c, raft_transfer(&rn->raft, &c->req.transfer, 0, transfer_cb),
                        "transferring leadership") != RN_OK)
        watchdog_transfer_done(rn, RN_ERR, rn->errmsg);
}

void rn_tick(struct rn *rn)
{
    if (!rn->started || rn->closing)
        return;
    struct raft *r = &rn->raft;
    uint64_t now = uv_now(rn->loop);
    if (now - rn->commit_mark_ms >= rn->cfg.election_ms) {
        rn->commit_prev = rn->commit_mark;
        rn->commit_mark = r->commit_index;
        rn->commit_mark_ms = now;
    }
    if (raft_state(r) == RAFT_LEADER && r->current_term != rn->lead_term) {
        rn->lead_term = r->current_term;
        rn->lead_first = raft_last_index(r);
        rn->settled_ms = 0;
    }
    if (raft_state(r) != RAFT_LEADER)
        rn->settled_ms = 0;
    else if (!rn->settled_ms && raft_last_applied(r) >= rn->lead_first)
        rn->settled_ms = now ? now : 1;
    repair_stale_config(rn);
    watch_lib_change(rn, now);
}

static void flush_closed(uv_handle_t *h);
static void lazy_closed(uv_handle_t *h);
static void guard_closed(struct snapguard *g);

static void free_rn(struct rn *rn)
{
    while (rn->changes)
        chg_finish(rn->changes, RN_ERR, "shutting down");
    /* Anything libraft did not fail on close is failed here, so no caller waits forever. */
    while (rn->batches) {
        struct batch *b = rn->batches;
        batch_tell(rn, b, RN_ERR, RN_UNKNOWN);
        batch_free(rn, b);
    }
    rn->open = rn->failed = NULL;
    snapguard_close(&rn->guard, guard_closed);
}

static void guard_closed(struct snapguard *g)
{
    struct rn *rn = (struct rn *)((char *)g - offsetof(struct rn, guard));
    uv_close((uv_handle_t *)&rn->lazy, lazy_closed);
}

static void lazy_closed(uv_handle_t *h)
{
    struct rn *rn = h->data;
    uv_close((uv_handle_t *)&rn->flush, flush_closed);
}

/* The handles' memory is inside rn: freed only once libuv let both go. */
static void flush_closed(uv_handle_t *h)
{
    struct rn *rn = h->data;
    void (*done)(void *) = rn->done;
    void *arg = rn->done_arg;
    rn_heap_uninstall(&rn->heap);
    rn_heap_destroy(&rn->heap);
    fsm_events_free(&rn->ev);
    free(rn->raft_address);
    free(rn->data_dir);
    free(rn);
    if (done)
        done(arg);
}

static void raft_closed(struct raft *r)
{
    struct rn *rn = (struct rn *)((char *)r - offsetof(struct rn, raft));
    raft_uv_close(&rn->io);
    rn_transport_free(&rn->transport);
    free_rn(rn);
}

void rn_close(struct rn *rn, void (*done)(void *arg), void *arg)
{
    rn->closing = true;
    rn->done = done;
    rn->done_arg = arg;
    raft_close(&rn->raft, raft_closed);
}

uint64_t rn_raft_rejected(struct rn *rn, int reason)
{
    return rn_transport_rejected(&rn->transport, (enum rn_wire_reason)reason);
}
