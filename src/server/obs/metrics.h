/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics — counters and fixed-bucket histograms rendered in Prometheus text format.
 *
 * Owns: plain numbers inside struct srv_metrics (no allocation). Histograms observe seconds;
 * buckets are fixed at compile time (HIST_BUCKETS), cumulative only when rendered.
 */
#ifndef FENCELOCK_METRICS_H
#define FENCELOCK_METRICS_H

#include <stdint.h>

#include "common/buf.h"

#define HIST_NB 26
#define SRV_QUOTA_N 5 /* sessions, locks, keys, waiters, data bytes (server/cmd/quota.c) */

struct hist {
    uint64_t counts[HIST_NB + 1]; /* last = +Inf */
    uint64_t count;
    double sum;
};

struct srv_metrics {
    uint64_t grants, releases, expirations, fence_rejections, commands, proposals, proposal_unknown,
        connections_total, connections_rejected, protocol_errors, read_barriers, reads;
    /* reads, keepalives and HTTP reads answered under the leader's read lease (no barrier) */
    uint64_t lease_reads;
    /* deadlock detection (fsm/waitgraph.h): waits refused -DEADLOCK; searches that gave up */
    uint64_t deadlocks, deadlock_search_limit;
    /* resource limits (docs/server.md "Limits"): connections closed or commands refused */
    uint64_t output_limit_closes, query_limit_closes, input_total_closes, output_pauses;
    uint64_t quota_rejections[SRV_QUOTA_N];
    /* per-user quotas (ACL max_*=, in ACL_QUOTA_* order) and --max-parked refusals */
    uint64_t user_quota_rejections[5];
    uint64_t parked_rejections;
    uint64_t idle_closes;
    /* connections closed for speaking HTTP to the client port; when one was last logged */
    uint64_t cross_protocol_closes, cross_protocol_logged_ms;
    /* --acl-file: failed AUTHs, commands refused -NOPERM, AUTHs answered from the cache,
     * reloads that took effect */
    uint64_t auth_failures, perm_denials, auth_cache_hits, acl_reloads;
    /* client accept() failures, clients refused near the fd limit; when one was last logged */
    uint64_t accept_errors, fd_limit_refusals, fd_logged_ms;
    /* XREAD: replies served (entries in them), readers closed past --event-buffer */
    uint64_t xreads, xread_entries, slow_reader_closes;
    /* parked XREAD readers looked at after an applied event (srv_watch_wake) */
    uint64_t watch_wakeups;
    /* Raft terms this node saw begin (each is an election), and changes of the leader it knows */
    uint64_t elections, leader_changes;
    struct hist lock_wait, lock_hold, commit;
    /* the disk (rn_hooks.timed): log appends (write + sync), snapshot writes; snapshots
     * serialised and restored on the loop thread */
    struct hist disk_append, snapshot_write, snapshot_serialize, snapshot_restore;
};

void hist_observe(struct hist *h, double seconds);
void hist_render(struct buf *out, const char *name, const char *help, const struct hist *h);
void metric_render(struct buf *out, const char *name, const char *type, const char *help,
                   double value);

#endif
