/*
 * rn.c — libraft glue. See rn.h for the entry format and the delivery contract.
 *
 * Proposal life cycle (struct prop):
 *   NEW --raft_apply ok--> PENDING --entry applied here--> DELIVERED --raft cb--> freed
 *                           PENDING --raft cb with error--> freed (cb told RN_UNKNOWN)
 *   raft_apply failing frees it at once (the caller is told by the return value).
 * Invariant: a prop is in `pending` exactly while PENDING; its user callback fires once.
 */
#include "raft/rn.h"

#include <raft.h>
#include <raft/uv.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RN_ENTRY_VERSION 1

enum prop_state { PROP_PENDING = 1, PROP_DELIVERED = 2 };

struct prop {
    struct raft_apply req; /* first: raft hands it back */
    struct rn *rn;
    uint64_t pid;
    int state;
    rn_propose_cb cb;
    void *ctx;
    struct prop *prev, *next; /* in rn->pending while PENDING */
};

struct bar {
    struct raft_barrier req;
    struct rn *rn;
    rn_barrier_cb cb;
    void *ctx;
};

struct rn {
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport transport;
    struct raft_fsm rfsm;
    uv_loop_t *loop;
    struct fsm *fsm;
    struct rn_hooks hooks;
    const struct logger *log;
    struct rn_config cfg;
    char *raft_address, *data_dir;
    uint64_t next_pid;
    struct prop *head, *tail; /* pending proposals, in proposal order */
    struct fsm_reply reply;
    struct fsm_events ev;
    bool started, closing;
    void (*done)(void *arg);
    void *done_arg;
};

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

/* The default raft heap is libc malloc, so the FSM's buffer is handed over as is. */
static int fsm_cb_snapshot(struct raft_fsm *rf, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct rn *rn = rf->data;
    struct buf b;
    buf_init(&b);
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
    LOGI(rn->log, "raft: snapshot of %zu bytes at applied index %llu", b.len,
         (unsigned long long)raft_last_applied(&rn->raft));
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
    int rv = raft_uv_tcp_init(&rn->transport, loop);
    if (rv) {
        snprintf(err, errlen, "raft transport: %s", raft_strerror(rv));
        goto fail;
    }
    rv = raft_uv_init(&rn->io, loop, rn->data_dir, &rn->transport);
    if (rv) {
        snprintf(err, errlen, "raft disk I/O in %s: %s", rn->data_dir, raft_strerror(rv));
        raft_uv_tcp_close(&rn->transport);
        goto fail;
    }
    rv = raft_init(&rn->raft, &rn->io, &rn->rfsm, cfg->id, rn->raft_address);
    if (rv) {
        snprintf(err, errlen, "raft_init: %s", raft_errmsg(&rn->raft));
        raft_uv_close(&rn->io);
        raft_uv_tcp_close(&rn->transport);
        goto fail;
    }
    raft_uv_set_segment_size(&rn->io, 8u << 20);
    /* libraft's auto-recovery renames a segment it cannot read to corrupt-* and starts without
     * it, silently dropping acknowledged entries; refusing to start is the safe answer. */
    raft_uv_set_auto_recovery(&rn->io, false);
    raft_set_pre_vote(&rn->raft, true);
    raft_set_election_timeout(&rn->raft, cfg->election_ms);
    raft_set_heartbeat_timeout(&rn->raft, cfg->heartbeat_ms);
    raft_set_snapshot_threshold(&rn->raft, cfg->snapshot_threshold);
    raft_set_snapshot_trailing(&rn->raft, cfg->snapshot_trailing);
    *out = rn;
    return 0;
fail:
    fsm_events_free(&rn->ev);
    free(rn->raft_address);
    free(rn->data_dir);
    free(rn);
    return -1;
}

int rn_start(struct rn *rn, char *err, size_t errlen)
{
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
    rv = raft_start(&rn->raft);
    if (rv) {
        snprintf(err, errlen, "raft_start: %s", raft_errmsg(&rn->raft));
        return -1;
    }
    rn->started = true;
    return 0;
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

static void prop_cb(struct raft_apply *req, int status, void *result)
{
    struct prop *p = (struct prop *)req;
    (void)result;
    if (p->state == PROP_PENDING) {
        pending_unlink(p->rn, p);
        /* Appended but not applied here: the outcome cannot be known. */
        p->cb(p->ctx, status == RAFT_NOTLEADER ? RN_NOTLEADER : RN_UNKNOWN, NULL);
    }
    free(p);
}

int rn_propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx)
{
    if (rn->closing || !rn->started)
        return RN_ERR;
    if (raft_state(&rn->raft) != RAFT_LEADER)
        return RN_NOTLEADER;
    struct prop *p = calloc(1, sizeof(*p));
    if (!p)
        return RN_ERR;
    struct buf env;
    buf_init(&env);
    p->rn = rn;
    p->pid = rn->next_pid++;
    p->cb = cb;
    p->ctx = ctx;
    if (buf_put_u8(&env, RN_ENTRY_VERSION) || buf_put_varint(&env, rn->cfg.id) ||
        buf_put_varint(&env, p->pid) || buf_put_varint(&env, 1) || buf_put_bytes(&env, cmd, len) ||
        pad8(&env)) {
        buf_free(&env);
        free(p);
        return RN_ERR;
    }
    struct raft_buffer rb = {.base = env.p, .len = env.len}; /* raft heap is malloc */
    p->state = PROP_PENDING;
    pending_push(rn, p);
    int rv = raft_apply(&rn->raft, &p->req, &rb, 1, prop_cb);
    if (rv) {
        pending_unlink(rn, p);
        buf_free(&env);
        free(p);
        return rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
    }
    return RN_OK;
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

static void free_rn(struct rn *rn)
{
    /* Anything libraft did not fail on close is failed here, so no caller waits forever. */
    while (rn->head) {
        struct prop *p = rn->head;
        pending_unlink(rn, p);
        p->cb(p->ctx, RN_UNKNOWN, NULL);
        free(p);
    }
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
    raft_uv_tcp_close(&rn->transport);
    free_rn(rn);
}

void rn_close(struct rn *rn, void (*done)(void *arg), void *arg)
{
    rn->closing = true;
    rn->done = done;
    rn->done_arg = arg;
    raft_close(&rn->raft, raft_closed);
}
