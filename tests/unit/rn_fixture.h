/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_fixture.h — the replication glue (src/raft: rn_batch.c, rn_fsm.c, rn_member.c, rn_tick.c,
 * snapguard.c) running on libraft's raft_fixture, a deterministic in-memory cluster: no disk,
 * no sockets, a virtual clock that moves only when the test steps it.
 *
 * Each node is the production glue made with rn_glue_new and bound to the fixture's struct
 * raft (rn.h, "Running the glue on another struct raft"); only the struct raft and its io
 * are the fixture's. The glue's libuv handles (the group-commit prepare handle, the lazy
 * timer, the snapshot guard's check handle) run on the test's loop, one turn per
 * rnfx_pump. rnfx_step_until interleaves the two: a loop turn, then one fixture event.
 *
 * Observation only: each node's FSM callbacks pass through a wrapper that copies every
 * command entry it applies (the envelope of rn.h, "Log entry format") and counts snapshots and
 * restores, then calls the glue's own callback.
 *
 * Ownership: struct rnfx owns the fixture, the loop, every node's rn and fsm and the copied
 * entries; rnfx_teardown frees them all (also after a setup that failed half-way). Proposal
 * contexts the tests pass live in the rnfx (rnfx_reply), because the glue may still tell them
 * while the fixture closes.
 */
#ifndef FENCELOCK_TEST_RN_FIXTURE_H
#define FENCELOCK_TEST_RN_FIXTURE_H

#include <raft.h>
#include <raft/fixture.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/buf.h"
#include "fsm/fsm.h"
#include "raft/rn.h"
#include "raft/rn_internal.h"

#define RNFX_MAX_NODES 5
#define RNFX_MAX_ENTRIES 512  /* command entries kept per node */
#define RNFX_MAX_REPLIES 256  /* proposals a test can watch */
#define RNFX_MAX_STEPS 200000 /* fixture events rnfx_step_until takes at most */

struct rnfx;

struct rnfx_entry {
    uint8_t *p;
    size_t len;
};

struct rnfx_node {
    struct rnfx *fx;
    unsigned i; /* fixture index; Raft id i + 1 */
    struct rn *rn;
    struct fsm *fsm;
    struct raft_fsm wrap; /* observes, then calls the glue's FSM callbacks */
    struct rnfx_entry entries[RNFX_MAX_ENTRIES];
    unsigned n_entries;
    unsigned snapshots, restores; /* callbacks that succeeded */
};

/* What the glue told one proposal (or barrier, or change). */
struct rnfx_reply {
    struct rnfx *fx;
    unsigned calls; /* must end at exactly 1 */
    int status;     /* enum rn_status */
    unsigned order; /* 0, 1, ...: the how-many-th told, over all replies */
    struct fsm_reply reply;
    char msg[RN_REASON_BUF];
};

struct rnfx {
    uv_loop_t loop;
    bool loop_init, fixture_init;
    uv_idle_t spin; /* keeps each uv_run(NOWAIT) a full turn (the glue's handles are unref'd) */
    struct raft_fixture f;
    struct logger log;
    struct rnfx_node node[RNFX_MAX_NODES];
    unsigned n;
    struct rnfx_reply rep[RNFX_MAX_REPLIES];
    unsigned told; /* replies told so far */
};

static inline int rnfx_apply(struct raft_fsm *w, const struct raft_buffer *buf, void **result)
{
    struct rnfx_node *n = w->data;
    if (n->n_entries < RNFX_MAX_ENTRIES) {
        struct rnfx_entry *e = &n->entries[n->n_entries++];
        e->p = malloc(buf->len);
        e->len = buf->len;
        memcpy(e->p, buf->base, buf->len);
    }
    struct raft_fsm *glue = rn_glue_fsm(n->rn);
    return glue->apply(glue, buf, result);
}

static inline int rnfx_snapshot(struct raft_fsm *w, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct rnfx_node *n = w->data;
    struct raft_fsm *glue = rn_glue_fsm(n->rn);
    int rv = glue->snapshot(glue, bufs, n_bufs);
    n->snapshots += rv == 0;
    return rv;
}

static inline int rnfx_restore(struct raft_fsm *w, struct raft_buffer *buf)
{
    struct rnfx_node *n = w->data;
    struct raft_fsm *glue = rn_glue_fsm(n->rn);
    int rv = glue->restore(glue, buf);
    n->restores += rv == 0;
    return rv;
}

static inline struct rn_config rnfx_config(void)
{
    return (struct rn_config){.election_ms = 1000,
                              .heartbeat_ms = 100,
                              .snapshot_threshold = 1024,
                              .snapshot_trailing = 128};
}

/* Add a node (not started) with the glue's config `cfg` (its id is set here). */
static inline int rnfx_grow(struct rnfx *fx, const struct rn_config *cfg)
{
    struct rnfx_node *n = &fx->node[fx->n];
    struct rn_config c = *cfg;
    struct rn_hooks hooks = {0};
    memset(n, 0, sizeof(*n));
    n->fx = fx;
    n->i = fx->n;
    c.id = n->i + 1;
    n->fsm = fsm_new();
    if (!n->fsm || rn_glue_new(&n->rn, &fx->loop, &c, n->fsm, &hooks, &fx->log))
        return -1;
    fx->n++;
    n->wrap = *rn_glue_fsm(n->rn);
    n->wrap.data = n;
    n->wrap.apply = rnfx_apply;
    n->wrap.snapshot = rnfx_snapshot;
    n->wrap.restore = rnfx_restore;
    if (raft_fixture_grow(&fx->f, &n->wrap))
        return -1;
    struct raft *r = raft_fixture_get(&fx->f, n->i);
    if (!getenv("RNFX_LOG")) /* the fixture traces every event to stdout */
        r->tracer = NULL;
    raft_set_pre_vote(r, true); /* as rn_new sets it */
    rn_glue_attach(n->rn, raft_fixture_get(&fx->f, n->i));
    return 0;
}

static inline void rnfx_spin_cb(uv_idle_t *h)
{
    (void)h;
}

/* `voters` nodes, bootstrapped as voters and started; node 0 elected. Node i has the glue
 * config cfg[i], or cfg[n_cfg - 1] past the end. */
static inline int rnfx_setup_each(struct rnfx *fx, unsigned voters, const struct rn_config *cfg,
                                  unsigned n_cfg)
{
    memset(fx, 0, sizeof(*fx));
    fx->log.level = getenv("RNFX_LOG") ? LOG_DEBUG : LOG_ERROR;
    if (uv_loop_init(&fx->loop))
        return -1;
    fx->loop_init = true;
    uv_idle_init(&fx->loop, &fx->spin);
    uv_idle_start(&fx->spin, rnfx_spin_cb);
    if (raft_fixture_init(&fx->f))
        return -1;
    fx->fixture_init = true;
    for (unsigned i = 0; i < voters; i++)
        if (rnfx_grow(fx, &cfg[i < n_cfg ? i : n_cfg - 1]))
            return -1;
    struct raft_configuration conf;
    if (raft_fixture_configuration(&fx->f, voters, &conf))
        return -1;
    int rv = raft_fixture_bootstrap(&fx->f, &conf);
    raft_configuration_close(&conf);
    if (rv || raft_fixture_start(&fx->f))
        return -1;
    for (unsigned i = 0; i < voters; i++)
        rn_glue_started(fx->node[i].rn);
    raft_fixture_elect(&fx->f, 0);
    return 0;
}

static inline int rnfx_setup_with(struct rnfx *fx, unsigned voters, const struct rn_config *cfg)
{
    return rnfx_setup_each(fx, voters, cfg, 1);
}

static inline struct raft *rnfx_raft(struct rnfx *fx, unsigned i)
{
    return raft_fixture_get(&fx->f, i);
}

/* One turn of the glue's loop: the prepare handle submits the open batch, the check handle
 * delivers a held InstallSnapshot. */
static inline void rnfx_pump(struct rnfx *fx)
{
    uv_run(&fx->loop, UV_RUN_NOWAIT);
}

/* Alternate loop turns and fixture events until stop(fx, arg); false if it never held within
 * RNFX_MAX_STEPS events (a bound, not a timing: each event is a step of the virtual clock). */
static inline bool rnfx_step_until(struct rnfx *fx, bool (*stop)(struct rnfx *fx, void *arg),
                                   void *arg)
{
    for (unsigned k = 0; k < RNFX_MAX_STEPS; k++) {
        rnfx_pump(fx);
        if (stop(fx, arg))
            return true;
        raft_fixture_step(&fx->f);
    }
    rnfx_pump(fx);
    return stop(fx, arg);
}

/* Both ways. */
static inline void rnfx_cut(struct rnfx *fx, unsigned i, unsigned j)
{
    raft_fixture_disconnect(&fx->f, i, j);
    raft_fixture_disconnect(&fx->f, j, i);
}
static inline void rnfx_join(struct rnfx *fx, unsigned i, unsigned j)
{
    raft_fixture_reconnect(&fx->f, i, j);
    raft_fixture_reconnect(&fx->f, j, i);
}

static inline void rnfx_told(struct rnfx_reply *r, int status)
{
    r->calls++;
    r->status = status;
    r->order = r->fx->told++;
}

static inline void rnfx_propose_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct rnfx_reply *r = ctx;
    rnfx_told(r, status);
    if (reply)
        r->reply = *reply;
}

static inline void rnfx_change_cb(void *ctx, int status, const char *msg)
{
    struct rnfx_reply *r = ctx;
    rnfx_told(r, status);
    snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
}

static inline struct rnfx_reply *rnfx_rep(struct rnfx *fx, unsigned k)
{
    fx->rep[k].fx = fx;
    return &fx->rep[k];
}

/* An encoded SESSION_OPEN (its reply: INT, the new session id) with `ttl_ms`. */
static inline int rnfx_session_open(struct buf *out, uint64_t ttl_ms)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = ttl_ms}};
    buf_init(out);
    return fsm_cmd_encode(&c, out);
}

/* Propose SESSION_OPEN(ttl_ms) on node i, watched by rep[k]: the glue's return value. */
static inline int rnfx_propose(struct rnfx *fx, unsigned i, unsigned k, uint64_t ttl_ms)
{
    struct buf b;
    if (rnfx_session_open(&b, ttl_ms))
        return -1;
    int rc = rn_propose(fx->node[i].rn, b.p, b.len, rnfx_propose_cb, rnfx_rep(fx, k));
    buf_free(&b);
    return rc;
}

/* Start node i, grown after rnfx_setup_with. */
static inline int rnfx_start(struct rnfx *fx, unsigned i)
{
    if (raft_start(raft_fixture_get(&fx->f, i)))
        return -1;
    rn_glue_started(fx->node[i].rn);
    return 0;
}

static inline void rnfx_closed(void *arg)
{
    (*(unsigned *)arg)++;
}

/* The fixture first (its last callbacks still reach the glue), then every glue, then the
 * loop. */
static inline void rnfx_teardown(struct rnfx *fx)
{
    if (fx->fixture_init)
        raft_fixture_close(&fx->f);
    unsigned closed = 0, closing = 0;
    for (unsigned i = 0; i < fx->n; i++)
        if (fx->node[i].rn) {
            rn_close(fx->node[i].rn, rnfx_closed, &closed);
            closing++;
        }
    for (unsigned k = 0; k < 1000 && closed < closing; k++)
        uv_run(&fx->loop, UV_RUN_NOWAIT);
    for (unsigned i = 0; i < fx->n; i++) {
        struct rnfx_node *n = &fx->node[i];
        for (unsigned e = 0; e < n->n_entries; e++)
            free(n->entries[e].p);
        if (n->fsm)
            fsm_free(n->fsm);
    }
    if (fx->loop_init) {
        uv_close((uv_handle_t *)&fx->spin, NULL);
        uv_run(&fx->loop, UV_RUN_DEFAULT);
        uv_loop_close(&fx->loop);
    }
}

/* rn.h "Log entry format": version 1, origin, first proposal id, n, n x (len, bytes), zero
 * padding to a multiple of 8. Fills the header; 0 if the whole entry is well formed. */
struct rnfx_envelope {
    uint8_t version;
    uint64_t origin, first_pid, n;
    const char *cmd[RN_BATCH_MAX];
    uint32_t len[RN_BATCH_MAX];
};

static inline int rnfx_decode(const struct rnfx_entry *e, struct rnfx_envelope *env)
{
    struct rd r;
    if (e->len % 8)
        return -1;
    rd_init(&r, e->p, e->len);
    if (rd_u8(&r, &env->version) || rd_varint(&r, &env->origin) || rd_varint(&r, &env->first_pid) ||
        rd_varint(&r, &env->n) || env->n > RN_BATCH_MAX)
        return -1;
    for (uint64_t i = 0; i < env->n; i++)
        if (rd_bytes(&r, &env->cmd[i], &env->len[i], UINT32_MAX))
            return -1;
    while (r.off < r.len) { /* what is left is padding */
        uint8_t z;
        if (rd_u8(&r, &z) || z)
            return -1;
    }
    return 0;
}

#endif
