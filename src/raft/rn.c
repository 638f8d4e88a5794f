/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn.c — the replication node's life cycle: rn_new (libraft, its disk I/O and the validating
 * transport), bootstrap / start / recover, the role and index accessors, and rn_close. See rn.h
 * for the entry format and the delivery contract, rn_internal.h for how the other rn_*.c
 * files divide the rest.
 */
#include "raft/rn_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* libraft's role values are rn_role's (rn.h promises them to the server). */
_Static_assert((int)RN_UNAVAILABLE == (int)RAFT_UNAVAILABLE, "rn_role mirrors libraft's states");
_Static_assert((int)RN_FOLLOWER == (int)RAFT_FOLLOWER, "rn_role mirrors libraft's states");
_Static_assert((int)RN_CANDIDATE == (int)RAFT_CANDIDATE, "rn_role mirrors libraft's states");
_Static_assert((int)RN_LEADER == (int)RAFT_LEADER, "rn_role mirrors libraft's states");
_Static_assert((int)RN_VOTER == (int)RAFT_VOTER, "rn_member_role mirrors libraft's roles");
_Static_assert((int)RN_STANDBY == (int)RAFT_STANDBY, "rn_member_role mirrors libraft's roles");
_Static_assert((int)RN_SPARE == (int)RAFT_SPARE, "rn_member_role mirrors libraft's roles");

/* libraft's open segments are this big (its default is 8 MiB as well; set to be explicit). */
#define RN_SEGMENT_BYTES (8u << 20)

void rn_life_to(struct rn *rn, enum rn_life to)
{
    assert((rn->life == RN_LIFE_NEW && to == RN_LIFE_RUNNING) ||
           (rn->life != RN_LIFE_CLOSING && to == RN_LIFE_CLOSING));
    rn->life = to;
}

static uint64_t tp_term(void *arg)
{
    return ((struct rn *)arg)->raft->current_term;
}

/* What every rn has, whatever struct raft it drives: the copies of the configuration, the FSM
 * callbacks and the event buffers. NULL when out of memory. */
static struct rn *glue_alloc(uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
                             const struct rn_hooks *hooks, const struct logger *log)
{
    struct rn *rn = calloc(1, sizeof(*rn));
    if (!rn)
        return NULL;
    rn->loop = loop;
    rn->fsm = fsm;
    rn->hooks = *hooks;
    rn->log = log;
    rn->cfg = *cfg;
    rn->raft_address = strdup(cfg->raft_address ? cfg->raft_address : "");
    rn->data_dir = strdup(cfg->data_dir ? cfg->data_dir : "");
    rn->next_pid = 1;
    fsm_events_init(&rn->ev);
    rn_fsm_init(rn);
    rn_heap_init(&rn->heap);
    /* For a libraft that no longer needs repair_stale_config, and for the test of the watchdog
     * that has to act when the repair does not. */
    rn->no_repair = getenv("FENCELOCK_NO_CONFIG_REPAIR") != NULL;
    if (!rn->raft_address || !rn->data_dir) {
        rn_heap_destroy(&rn->heap);
        fsm_events_free(&rn->ev);
        free(rn->raft_address);
        free(rn->data_dir);
        free(rn);
        return NULL;
    }
    return rn;
}

/* The glue around a struct raft that already has its io and rn's FSM callbacks (raft_init
 * done, raft_start not yet): the snapshot thresholds, the snapshot guard and the tick wrapper
 * (both wrap the io's start, so they must come before raft_start) and the group-commit
 * handles. */
static void glue_bind(struct rn *rn, struct raft *raft)
{
    rn->raft = raft;
    rn->threshold = rn->cfg.snapshot_threshold;
    raft_set_snapshot_threshold(rn->raft, rn->threshold);
    rn->trailing = rn->cfg.snapshot_trailing;
    raft_set_snapshot_trailing(rn->raft, rn->trailing);
    snapguard_init(&rn->guard, rn->loop, rn->raft, rn->log);
    rn_tick_wrap(rn); /* after the guard: it finds rn through raft->data */
    rn_batch_init(rn);
    rn_lease_init(rn); /* its clock is the raft's io's on a glue of a caller's raft */
}

int rn_new(struct rn **out, uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
           const struct rn_hooks *hooks, const struct logger *log, char *err, size_t errlen)
{
    struct rn *rn = glue_alloc(loop, cfg, fsm, hooks, log);
    if (!rn) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rn->raft = &rn->raft_mem;
    rn_heap_install(&rn->heap);
    rn->transport.version = 1; /* libraft checks the struct version it was given */
    /* No peer_ok: any id but 0 and our own may connect. Checking ids against this node's
     * configuration (tried first) cut a node off from the leader it needed: an old leader whose
     * uncommitted REMOVE named the new leader never heard of the new term (the rollback test
     * hung), and a follower that lagged behind an ADD could not be caught up by the added node
     * once it led. Telling a member from an impostor is peer TLS's job
     * (transport_tls.c). */
    rn->tp_policy = (struct rn_tp_policy){.arg = rn, .term = tp_term, .peer_gone = rn_peer_gone};
    int rv = rn_transport_init(&rn->transport, loop, &rn->tp_policy, log);
    if (rv) {
        snprintf(err, errlen, "raft transport: %s", raft_strerror(rv));
        goto fail;
    }
    if (cfg->raft_handshake_ms)
        rn_transport_set_limits(&rn->transport, cfg->raft_handshake_ms, RN_TP_BUFFER_CAP);
    if (cfg->raft_max_links) {
        struct rn_tp_caps caps = {cfg->raft_max_links, cfg->raft_max_links_per_addr,
                                  cfg->raft_max_handshakes, cfg->raft_max_handshakes_per_addr,
                                  cfg->raft_handshake_rate};
        rn_transport_set_caps(&rn->transport, &caps);
    }
    if (cfg->peer_tls_cert && rn_peer_tls_reload(rn, err, errlen)) {
        rn_transport_free(&rn->transport);
        goto fail;
    }
    rv = raft_uv_init(&rn->io, loop, rn->data_dir, &rn->transport);
    if (rv) {
        snprintf(err, errlen, "raft disk I/O in %s: %s", rn->data_dir, raft_strerror(rv));
        rn_transport_free(&rn->transport);
        goto fail;
    }
    rv = raft_init(rn->raft, &rn->io, &rn->rfsm, cfg->id, rn->raft_address);
    if (rv) {
        snprintf(err, errlen, "raft_init: %s", raft_errmsg(rn->raft));
        raft_uv_close(&rn->io);
        rn_transport_free(&rn->transport);
        goto fail;
    }
    /* libraft formats every diagnostic line (snprintf into a 1 KiB buffer) and only then lets
     * its default tracer drop it; a NULL tracer skips the formatting: 7.5 % of the leader's
     * user-space instructions per command (callgrind). LIBRAFT_TRACE=1 keeps the traces. */
    if (!getenv("LIBRAFT_TRACE")) {
        rn->raft->tracer = NULL;
        raft_uv_set_tracer(&rn->io, NULL);
    }
    raft_uv_set_segment_size(&rn->io, RN_SEGMENT_BYTES);
    rn_iotime_install(rn);
    rn_heard_install(rn);
    /* libraft's auto-recovery renames a segment it cannot read to corrupt-* and starts without
     * it, silently dropping acknowledged entries; refusing to start is the safe answer. */
    raft_uv_set_auto_recovery(&rn->io, false);
    raft_set_pre_vote(rn->raft, true);
    raft_set_election_timeout(rn->raft, cfg->election_ms);
    raft_set_heartbeat_timeout(rn->raft, cfg->heartbeat_ms);
    glue_bind(rn, rn->raft);
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

int rn_glue_new(struct rn **out, uv_loop_t *loop, const struct rn_config *cfg, struct fsm *fsm,
                const struct rn_hooks *hooks, const struct logger *log)
{
    struct rn *rn = glue_alloc(loop, cfg, fsm, hooks, log);
    if (!rn)
        return -1;
    rn->attached = true;
    *out = rn;
    return 0;
}

struct raft_fsm *rn_glue_fsm(struct rn *rn)
{
    return &rn->rfsm;
}

void rn_glue_attach(struct rn *rn, struct raft *raft)
{
    assert(rn->attached && !rn->raft);
    glue_bind(rn, raft);
}

void rn_glue_started(struct rn *rn)
{
    rn_life_to(rn, RN_LIFE_RUNNING);
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
    const char *m = raft_errmsg(rn->raft);
    return rv == RAFT_CORRUPT && m && strstr(m, "which is behind last snapshot");
}

static int start_raft(struct rn *rn, char *err, size_t errlen)
{
    if (rn_bind_wait(rn->raft_address, rn->log, err, errlen))
        return -1;
    int rv = raft_start(rn->raft);
    if (load_needs_second_pass(rn, rv)) {
        LOGW(rn->log, "raft: %s: loading %s again (its open segments are closed now)",
             raft_errmsg(rn->raft), rn->data_dir);
        rv = raft_start(rn->raft);
    }
    if (rv) {
        /* libraft leaves the message empty for a transport that failed to listen. */
        const char *m = raft_errmsg(rn->raft);
        int e = rv == RAFT_IOERR ? rn_bind_probe(rn->raft_address) : 0;
        if (m && *m)
            snprintf(err, errlen, "raft_start: %s", m);
        else if (e)
            snprintf(err, errlen, "raft_start: raft address %s: cannot listen: %s",
                     rn->raft_address, strerror(e));
        else
            snprintf(err, errlen, "raft_start: %s", raft_strerror(rv));
        return -1;
    }
    rn_life_to(rn, RN_LIFE_RUNNING);
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
        rv = raft_recover(rn->raft, &conf);
    raft_configuration_close(&conf);
    if (rv) {
        snprintf(err, errlen, "raft_recover: %s (%s)", raft_strerror(rv), raft_errmsg(rn->raft));
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
        rv = raft_bootstrap(rn->raft, &conf);
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

int rn_role(struct rn *rn)
{
    return rn->life != RN_LIFE_NEW ? raft_state(rn->raft) : RN_UNAVAILABLE;
}
uint64_t rn_term(struct rn *rn)
{
    return rn->raft->current_term;
}
uint64_t rn_commit_index(struct rn *rn)
{
    return rn->raft->commit_index;
}
uint64_t rn_applied_index(struct rn *rn)
{
    return raft_last_applied(rn->raft);
}

void rn_leader(struct rn *rn, uint64_t *id, const char **raft_address)
{
    raft_id lid = 0;
    const char *addr = NULL;
    if (rn->life != RN_LIFE_NEW)
        raft_leader(rn->raft, &lid, &addr);
    *id = lid;
    *raft_address = addr;
}

static void flush_closed(uv_handle_t *h);
static void lazy_closed(uv_handle_t *h);
static void guard_closed(struct snapguard *g);

static void free_rn(struct rn *rn)
{
    rn_member_fail_all(rn, "shutting down");
    /* Anything libraft did not fail on close is failed here, so no caller waits forever. */
    rn_batch_fail_all(rn);
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
    if (!rn->attached) /* a glue never installed its heap */
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
    struct rn *rn = (struct rn *)((char *)r - offsetof(struct rn, raft_mem));
    raft_uv_close(&rn->io);
    rn_transport_free(&rn->transport);
    free_rn(rn);
}

void rn_close(struct rn *rn, void (*done)(void *arg), void *arg)
{
    /* The open batch (this loop turn's proposals, or a lazy one waiting for company) never
     * reaches libraft now (rn_batch_submit_open checks RUNNING) and is failed as not applied
     * (rn_batch_fail_all). Said once, so an operator knows some clients' last commands were not
     * taken, and a test can prove its shutdown landed with commands in that state. */
    if (rn->open)
        LOGI(rn->log,
             "raft: closing with %u command(s) proposed but not yet in the log: failed, not "
             "applied",
             rn->open->n);
    rn_life_to(rn, RN_LIFE_CLOSING);
    rn_gone_close(rn);
    rn->done = done;
    rn->done_arg = arg;
    if (rn->attached) { /* its owner closed the struct raft already (rn.h) */
        free_rn(rn);
        return;
    }
    raft_close(rn->raft, raft_closed);
}

uint64_t rn_raft_rejected(struct rn *rn, int reason)
{
    return rn_transport_rejected(&rn->transport, (enum rn_wire_reason)reason);
}
int rn_peer_tls_reload(struct rn *rn, char *err, size_t errlen)
{
    if (!rn->cfg.peer_tls_cert)
        return 0;
    struct rn_tp_tls t = {.cert = rn->cfg.peer_tls_cert,
                          .key = rn->cfg.peer_tls_key,
                          .ca = rn->cfg.peer_tls_ca,
                          .name_pattern =
                              rn->cfg.peer_cert_name ? rn->cfg.peer_cert_name : RN_PEER_CERT_NAME,
                          .self_id = rn->cfg.id};
    return rn_transport_tls(&rn->transport, &t, err, errlen);
}
