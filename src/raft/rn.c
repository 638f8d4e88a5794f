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

/* libraft 0.15 dereferences NULL when it rolls back a configuration change whose committed
 * predecessor was compacted by a snapshot; 0.22 keeps a copy of the committed configuration. */
#if RAFT_VERSION_NUMBER < 2201
#error "fencelock needs libraft >= 0.22.1 (scripts/deps.sh installs it from Debian)"
#endif
#include <raft/uv.h>
#include <stdlib.h>
#include "raft/transport.h"
#include <string.h>
#include <sys/stat.h>

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

/* A membership change or transfer in flight (one at a time in libraft, a list here anyway). */
enum chg_kind { CHG_ADD = 1, CHG_ASSIGN = 2, CHG_REMOVE = 3, CHG_TRANSFER = 4 };

struct chg {
    union {
        struct raft_change change;
        struct raft_transfer transfer;
    } req; /* first: raft hands it back */
    struct rn *rn;
    uint64_t id;
    int kind;
    rn_change_cb cb;
    void *ctx;
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
    uint64_t since_bytes, since_entries; /* applied since the last snapshot */
    unsigned threshold;                  /* libraft's snapshot threshold now */
    struct chg *changes;                 /* membership changes and transfers in flight */
    char errmsg[RAFT_ERRMSG_BUF_SIZE];
    struct fsm_reply reply;
    struct fsm_events ev;
    bool started, closing;
    void (*done)(void *arg);
    void *done_arg;
};

static void flush_cb(uv_prepare_t *h);

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
 */
#define RN_THRESHOLD_MAX (1u << 18)

static void adapt_threshold(struct rn *rn, size_t snapshot_bytes)
{
    uint64_t avg = rn->since_entries ? rn->since_bytes / rn->since_entries : 0;
    uint64_t want = avg ? snapshot_bytes / avg : 0;
    if (want < rn->cfg.snapshot_threshold)
        want = rn->cfg.snapshot_threshold;
    if (want > RN_THRESHOLD_MAX && RN_THRESHOLD_MAX > rn->cfg.snapshot_threshold)
        want = RN_THRESHOLD_MAX;
    rn->since_bytes = rn->since_entries = 0;
    if (want == rn->threshold)
        return;
    rn->threshold = (unsigned)want;
    raft_set_snapshot_threshold(&rn->raft, rn->threshold);
    LOGI(rn->log, "raft: next snapshot after %u entries (%llu-byte entries on average)",
         rn->threshold, (unsigned long long)avg);
}

/* The default raft heap is libc malloc, so the FSM's buffer is handed over as is. */
static int fsm_cb_snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct rn *rn = rf->data;
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

/*
 * Which handshake ids may talk to this node. A made-up id is refused; a member's id is not
 * proof of anything (peer authentication is issue 18's). A node with no configuration yet (a
 * pristine joining node) accepts any id: its first peer is the leader adding it, which it
 * cannot know. Every other node has the joining node in its configuration (as a spare) before
 * that node can send anything, since it only answers the leader and votes once it is a voter.
 */
static bool tp_peer_ok(void *arg, uint64_t id)
{
    struct rn *rn = arg;
    const struct raft_configuration *c = &rn->raft.configuration;
    if (c->n == 0)
        return true;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return true;
    return false;
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
    if (!rn->raft_address || !rn->data_dir) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    rn->transport.version = 1; /* libraft checks the struct version it was given */
    rn->tp_policy = (struct rn_tp_policy){.arg = rn, .peer_ok = tp_peer_ok, .term = tp_term};
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
    raft_set_snapshot_trailing(&rn->raft, cfg->snapshot_trailing);
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
    fsm_events_free(&rn->ev);
    free(rn->raft_address);
    free(rn->data_dir);
    free(rn);
    return -1;
}

static int start_raft(struct rn *rn, char *err, size_t errlen)
{
    int rv = raft_start(&rn->raft);
    if (rv) {
        snprintf(err, errlen, "raft_start: %s", raft_errmsg(&rn->raft));
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
        b->body.len = mark; /* a half-written length must not reach the entry */
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

/* Sync failure of a libraft call: keep its message for rn_errmsg; the status to return. */
static int fail_call(struct rn *rn, int rv, const char *what)
{
    const char *m = raft_errmsg(&rn->raft);
    snprintf(rn->errmsg, sizeof(rn->errmsg), "%s: %s", what, m && *m ? m : raft_strerror(rv));
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

static void change_cb(struct raft_change *req, int status)
{
    struct chg *c = (struct chg *)req;
    struct rn *rn = c->rn;
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
    int rv = raft_assign(&rn->raft, &c->req.change, c->id, RAFT_VOTER, change_cb);
    if (rv) {
        chg_finish(c, fail_call(rn, rv, "promoting to voter"), rn->errmsg);
    }
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
    c->next = rn->changes;
    rn->changes = c;
    return c;
}

static int chg_check(struct rn *rn)
{
    if (rn->closing || !rn->started) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "shutting down");
        return RN_ERR;
    }
    if (raft_state(&rn->raft) != RAFT_LEADER) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "not the leader");
        return RN_NOTLEADER;
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
    int rc = chg_check(rn);
    if (rc != RN_OK)
        return rc;
    int role = rn_server_role(rn, id);
    const char *known = rn_server_address(rn, id);
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
    int rc = chg_check(rn);
    if (rc != RN_OK)
        return rc;
    struct chg *c = chg_new(rn, CHG_REMOVE, id, cb, ctx);
    if (!c)
        return RN_ERR;
    return chg_submit(rn, c, raft_remove(&rn->raft, &c->req.change, id, change_cb),
                      "removing server");
}

int rn_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    int rc = chg_check(rn);
    if (rc != RN_OK)
        return rc;
    struct chg *c = chg_new(rn, CHG_TRANSFER, id, cb, ctx);
    if (!c)
        return RN_ERR;
    return chg_submit(rn, c, raft_transfer(&rn->raft, &c->req.transfer, id, transfer_cb),
                      "transferring leadership");
}

static void flush_closed(uv_handle_t *h);
static void lazy_closed(uv_handle_t *h);

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
