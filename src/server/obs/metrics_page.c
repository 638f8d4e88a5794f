/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_page.c — the Prometheus /metrics page (metrics_page.h; /health is http_routes.c).
 */
#include "fsm/waitgraph.h"
#include "raft/wire.h"
#include "server/cmd/cmd.h"
#include "server/obs/metrics_page.h"
#include "server/obs/procstat.h"
#include "server/server.h"

/* One sample per reason, zeros included, so a dashboard can rate() any of them from start. */
static void render_raft_rejected(struct srv *s, struct buf *out)
{
    const char *name = "fencelock_raft_rejected_total";
    buf_printf(out,
               "# HELP %s Raft-port connections dropped for malformed or refused input.\n"
               "# TYPE %s counter\n",
               name, name);
    for (int r = RN_WIRE_OK + 1; r < RN_WIRE_NREASONS; r++)
        buf_printf(out, "%s{reason=\"%s\"} %llu\n", name, rn_wire_reason_name(r),
                   (unsigned long long)rn_raft_rejected(s->rn, r));
}

static void peer_lag_line(void *arg, uint64_t id, uint64_t lag)
{
    buf_printf(arg, "fencelock_peer_lag_entries{peer=\"%llu\"} %llu\n", (unsigned long long)id,
               (unsigned long long)lag);
}

/* On the leader only (a follower knows no one's progress): one sample per other member. */
static void render_peer_lag(struct srv *s, struct buf *out)
{
    if (s->cluster.role != RN_LEADER)
        return;
    const char *name = "fencelock_peer_lag_entries";
    buf_printf(out,
               "# HELP %s Entries of the leader's log a member has not acknowledged (leader "
               "only; peer: its Raft id).\n# TYPE %s gauge\n",
               name, name);
    rn_foreach_peer_lag(s->rn, peer_lag_line, out);
}

/* The AUTH verification pool and the pre-auth limits (limits.h, auth.h). */
static void render_limits(struct srv *s, struct buf *out)
{
    const struct auth_pool *p = &s->auth.pool;
    const struct srv_limits *l = &s->limits;
    metric_render(out, "fencelock_auth_verify_queued", "gauge",
                  "AUTHs waiting for a verification thread (at most --auth-queue).",
                  (double)srv_auth_queued(s));
    metric_render(out, "fencelock_auth_verify_queued_max", "gauge",
                  "The most AUTHs ever waiting for a verification thread at once.",
                  (double)p->queued_max);
    metric_render(out, "fencelock_auth_verifications_total", "counter",
                  "Passwords checked with Argon2id on the verification pool.",
                  (double)p->verifications);
    metric_render(out, "fencelock_auth_verify_shared_total", "counter",
                  "AUTHs answered by an identical check already on the pool (no hash of their "
                  "own).",
                  (double)p->shared);
    metric_render(out, "fencelock_auth_verify_rejected_total", "counter",
                  "AUTHs answered -TRYAGAIN: --auth-queue checks were already waiting.",
                  (double)p->rejected);
    metric_render(out, "fencelock_auth_backoff_total", "counter",
                  "AUTHs failed without a hash: address or network in back-off, or over "
                  "--auth-fail-rate.",
                  (double)p->backoff);
    metric_render(out, "fencelock_unauth_connections", "gauge",
                  "Client connections not authenticated yet (--acl-file).", (double)l->unauth);
    metric_render(out, "fencelock_unauth_rejected_total", "counter",
                  "Connections refused at --max-unauth-clients or --max-unauth-per-addr.",
                  (double)l->unauth_rejected);
    metric_render(out, "fencelock_auth_timeout_closes_total", "counter",
                  "Connections closed for not authenticating within --auth-timeout.",
                  (double)l->auth_timeouts);
    metric_render(out, "fencelock_tls_handshakes_in_progress", "gauge",
                  "Client TLS handshakes begun and not finished.", (double)l->handshakes);
    metric_render(out, "fencelock_tls_handshake_rejected_total", "counter",
                  "Connections refused at --tls-max-handshakes or --tls-max-handshakes-per-addr.",
                  (double)l->handshake_rejected);
    metric_render(out, "fencelock_output_buffer_bytes", "gauge",
                  "Unsent reply bytes of all client connections.", (double)l->output_bytes);
    metric_render(out, "fencelock_output_memory_closes_total", "counter",
                  "Connections closed as the largest holder over --max-output-total.",
                  (double)l->output_total_closes);
    metric_render(out, "fencelock_security_log_dropped_total", "counter",
                  "AUTH-failure / NOPERM log and audit lines dropped over --security-log-rate.",
                  (double)l->log_dropped);
}

/* The event stream (XREAD): its history and its readers. */
static void render_watch(struct srv *s, struct buf *out)
{
    const struct srv_metrics *m = &s->m;
    metric_render(out, "fencelock_events_retained", "gauge",
                  "Events in the XREAD history (--event-history).", (double)s->watch.n);
    metric_render(out, "fencelock_events_retained_bytes", "gauge",
                  "Memory the XREAD history takes (--event-history-bytes).",
                  (double)s->watch.bytes);
    metric_render(out, "fencelock_events_dropped_total", "counter",
                  "Events evicted from the XREAD history (or lost to memory).",
                  (double)s->watch.dropped);
    metric_render(out, "fencelock_xread_blocked", "gauge", "XREAD ... BLOCK requests parked.",
                  (double)s->xread.n_watchers);
    metric_render(out, "fencelock_elect_observers", "gauge",
                  "ELECT.OBSERVE requests parked until their election changes.",
                  (double)s->observe.n_observers);
    metric_render(out, "fencelock_noleader_waiting", "gauge",
                  "Requests waiting on this node for a ready leader to be known "
                  "(--noleader-wait-ms).",
                  (double)s->cluster.n_noleader);
    metric_render(out, "fencelock_xread_replies_total", "counter",
                  "XREAD replies that carried entries.", (double)m->xreads);
    metric_render(out, "fencelock_xread_entries_total", "counter", "Entries sent in XREAD replies.",
                  (double)m->xread_entries);
    metric_render(out, "fencelock_slow_reader_closes_total", "counter",
                  "XREAD readers closed with -SLOWREADER past --event-buffer.",
                  (double)m->slow_reader_closes);
    metric_render(out, "fencelock_http_sse_streams", "gauge",
                  "GET /v1/events streams open on the HTTP port.", (double)s->hapi.nstreams);
    metric_render(out, "fencelock_http_sse_events_total", "counter",
                  "Events sent on GET /v1/events streams.", (double)s->hapi.sse_events);
    metric_render(out, "fencelock_http_sse_compacted_total", "counter",
                  "GET /v1/events streams closed because the client fell behind the retained "
                  "history (event: compacted).",
                  (double)s->hapi.sse_closes[0]);
    metric_render(out, "fencelock_watch_wakeups_total", "counter",
                  "Wake-ups delivered to parked XREAD readers by applied events.",
                  (double)m->watch_wakeups);
    metric_render(out, "fencelock_watch_scanned_total", "counter",
                  "History entries examined by XREAD, XLEN and XINFO.", (double)s->watch.scanned);
}

/* One sample per state, 1 for the current one: `fencelock_raft_state{state="leader"} == 1`
 * finds the leader, and a sum over nodes counts leaders. */
static void render_raft_state(struct srv *s, struct buf *out)
{
    static const char *const states[] = {"unavailable", "follower", "candidate", "leader"};
    const char *name = "fencelock_raft_state";
    buf_printf(out, "# HELP %s Raft state of this node: 1 for the current one.\n# TYPE %s gauge\n",
               name, name);
    for (int i = RN_UNAVAILABLE; i <= RN_LEADER; i++)
        buf_printf(out, "%s{state=\"%s\"} %d\n", name, states[i], s->cluster.role == i);
}

/* The replicated state's size. Every replica holds the same numbers, so only the leader exports
 * them: sum() over the nodes is then the cluster's figure, not three times it. */
static void render_state_gauges(struct srv *s, struct buf *out)
{
    if (s->cluster.role != RN_LEADER)
        return;
    struct fsm_stats st;
    fsm_stats(s->fsm, &st);
    metric_render(out, "fencelock_sessions", "gauge", "Live sessions (leader only).",
                  (double)st.sessions);
    metric_render(out, "fencelock_locks_held", "gauge", "Locks with a holder (leader only).",
                  (double)st.locks_held);
    metric_render(out, "fencelock_waiters", "gauge", "Sessions queued on locks (leader only).",
                  (double)st.waiters);
    metric_render(out, "fencelock_locks_in_delay", "gauge",
                  "Locks held back by lock-delay (leader only).", (double)st.locks_in_delay);
    metric_render(out, "fencelock_keys", "gauge", "Keys in the KV store (leader only).",
                  (double)st.keys);
}

void srv_render_metrics(struct srv *s, struct buf *out)
{
    const struct srv_metrics *m = &s->m;
    buf_printf(out,
               "# HELP fencelock_build_info The running build.\n"
               "# TYPE fencelock_build_info gauge\n"
               "fencelock_build_info{version=\"%s\"} 1\n",
               FENCELOCK_VERSION);
    procstat_render(out);
    render_state_gauges(s, out);
    metric_render(out, "fencelock_revision", "gauge", "Current revision (newest token).",
                  (double)fsm_revision(s->fsm));
    metric_render(out, "fencelock_grants_total", "counter", "Lock grants applied.",
                  (double)m->grants);
    metric_render(out, "fencelock_releases_total", "counter", "Lock releases applied.",
                  (double)m->releases);
    metric_render(out, "fencelock_expirations_total", "counter", "Sessions ended by expiry.",
                  (double)m->expirations);
    metric_render(out, "fencelock_fence_rejections_total", "counter",
                  "Fenced writes rejected with STALE.", (double)m->fence_rejections);
    metric_render(out, "fencelock_deadlocks_total", "counter",
                  "Waits refused with DEADLOCK: they would have closed a cycle.",
                  (double)m->deadlocks);
    metric_render(out, "fencelock_deadlock_searches_given_up_total", "counter",
                  "Deadlock searches that reached --deadlock-search-limit (the wait was queued).",
                  (double)m->deadlock_search_limit);
    metric_render(out, "fencelock_deadlock_search_limit", "gauge",
                  "The deadlock search limit in force (replicated: the same on every node).",
                  (double)fsm_deadlock_limit(s->fsm));
    srv_cmd_render_counts(s, out);
    metric_render(out, "fencelock_proposals_total", "counter", "Raft entries proposed here.",
                  (double)m->proposals);
    metric_render(out, "fencelock_proposals_pending", "gauge",
                  "Proposals made here and not answered yet (in a batch, or appended and waiting "
                  "to commit and apply).",
                  (double)rn_proposals_pending(s->rn));
    metric_render(out, "fencelock_proposals_unknown_total", "counter",
                  "Proposals whose outcome became unknown (leadership lost).",
                  (double)m->proposal_unknown);
    metric_render(out, "fencelock_read_barriers_total", "counter",
                  "Barriers issued for linearizable reads and keepalives (each a log entry).",
                  (double)m->read_barriers);
    metric_render(out, "fencelock_reads_total", "counter",
                  "Linearizable reads and keepalives answered after a barrier.", (double)m->reads);
    metric_render(out, "fencelock_lease_reads_total", "counter",
                  "Linearizable reads, keepalives and HTTP reads answered under the leader's read "
                  "lease, without a barrier.",
                  (double)m->lease_reads);
    metric_render(out, "fencelock_connections_open", "gauge", "Open client connections.",
                  (double)s->net.nconns);
    metric_render(out, "fencelock_connections_total", "counter", "Client connections accepted.",
                  (double)m->connections_total);
    metric_render(out, "fencelock_connections_rejected_total", "counter",
                  "Connections refused by --max-clients.", (double)m->connections_rejected);
    metric_render(out, "fencelock_max_clients", "gauge",
                  "Effective --max-clients (lowered at start-up to fit the open-file limit).",
                  (double)s->cfg.max_clients);
    metric_render(out, "fencelock_accept_errors_total", "counter",
                  "Client accept() failures (EMFILE, ENFILE...): waiting connections closed.",
                  (double)m->accept_errors);
    metric_render(out, "fencelock_fd_limit_refusals_total", "counter",
                  "Clients refused with fewer than 8 fds left (ulimit -n lowered at run time?).",
                  (double)m->fd_limit_refusals);
    metric_render(out, "fencelock_protocol_errors_total", "counter",
                  "Connections closed for a RESP framing error.", (double)m->protocol_errors);
    metric_render(out, "fencelock_output_limit_closes_total", "counter",
                  "Connections closed with more than --max-output reply bytes unread.",
                  (double)m->output_limit_closes);
    metric_render(out, "fencelock_output_pauses_total", "counter",
                  "Times a connection's input was paused at --max-output-soft unread bytes.",
                  (double)m->output_pauses);
    metric_render(out, "fencelock_query_limit_closes_total", "counter",
                  "Connections closed for an unfinished command over --max-query-buffer.",
                  (double)m->query_limit_closes);
    metric_render(out, "fencelock_input_memory_closes_total", "counter",
                  "Connections closed because all input buffers exceeded --max-input-total.",
                  (double)m->input_total_closes);
    metric_render(out, "fencelock_idle_closes_total", "counter",
                  "Client connections closed by --idle-timeout.", (double)m->idle_closes);
    metric_render(out, "fencelock_cross_protocol_closes_total", "counter",
                  "Client connections closed for sending an HTTP request (POST, Host:).",
                  (double)m->cross_protocol_closes);
    metric_render(out, "fencelock_auth_failures_total", "counter",
                  "AUTH / HELLO AUTH answered -WRONGPASS.", (double)m->auth_failures);
    metric_render(out, "fencelock_permission_denials_total", "counter",
                  "Commands refused with -NOPERM (--acl-file).", (double)m->perm_denials);
    metric_render(out, "fencelock_auth_cache_hits_total", "counter",
                  "AUTHs verified from the cache of verified passwords (no Argon2id).",
                  (double)m->auth_cache_hits);
    render_limits(s, out);
    metric_render(out, "fencelock_acl_reloads_total", "counter",
                  "SIGHUP reloads of --acl-file that took effect.", (double)m->acl_reloads);
    metric_render(out, "fencelock_audit_lines_total", "counter", "Lines written to --audit-log.",
                  (double)s->audit.lines);
    metric_render(out, "fencelock_audit_write_errors_total", "counter",
                  "--audit-log lines lost to a failed open or write (the server goes on).",
                  (double)s->audit.write_errors);
    if (s->net.tls) {
        const struct srv_tls *t = s->net.tls;
        metric_render(out, "fencelock_tls_handshakes_total", "counter",
                      "Client TLS handshakes completed.", (double)t->handshakes);
        metric_render(out, "fencelock_tls_handshake_failures_total", "counter",
                      "Client connections closed in their TLS handshake (bad or missing "
                      "certificate, not TLS, --tls-handshake-timeout).",
                      (double)t->failures);
        metric_render(out, "fencelock_tls_handshake_timeouts_total", "counter",
                      "Client TLS handshakes closed by --tls-handshake-timeout.",
                      (double)t->timeouts);
        metric_render(out, "fencelock_tls_reloads_total", "counter",
                      "SIGHUP reloads of the TLS certificate and key that took effect.",
                      (double)t->reloads);
        metric_render(out, "fencelock_tls_reload_failures_total", "counter",
                      "SIGHUP reloads of the TLS files refused (the old ones stayed).",
                      (double)t->reload_failures);
    }
    if (s->cfg.http_tls && s->http) {
        struct srv_http_tls_stats hs = srv_http_tls_stats(s->http);
        metric_render(out, "fencelock_http_tls_handshakes_total", "counter",
                      "HTTP port TLS handshakes completed (--http-tls).", (double)hs.handshakes);
        metric_render(out, "fencelock_http_tls_handshake_failures_total", "counter",
                      "HTTP port connections closed in their TLS handshake (bad or missing "
                      "certificate, not TLS, --tls-handshake-timeout).",
                      (double)hs.failures);
        metric_render(out, "fencelock_http_tls_handshake_timeouts_total", "counter",
                      "HTTP port TLS handshakes closed by --tls-handshake-timeout.",
                      (double)hs.timeouts);
    }
    if (s->net.http_tls) { /* --http-tls-cert: its own pair, reloaded apart from --tls-cert */
        const struct srv_tls *t = s->net.http_tls;
        metric_render(out, "fencelock_http_tls_reloads_total", "counter",
                      "SIGHUP reloads of --http-tls-cert/--http-tls-key that took effect.",
                      (double)t->reloads);
        metric_render(out, "fencelock_http_tls_reload_failures_total", "counter",
                      "SIGHUP reloads of --http-tls-cert/--http-tls-key refused (the old pair "
                      "stayed).",
                      (double)t->reload_failures);
    }
    metric_render(out, "fencelock_http_evictions_total", "counter",
                  "Idle HTTP connections closed to make room at --http-max-conns.",
                  (double)srv_http_evictions(s->http));
    render_watch(s, out);
    srv_quota_render(s, out);
    metric_render(out, "fencelock_input_buffer_bytes", "gauge",
                  "Bytes allocated for all client connections' input buffers.",
                  (double)s->net.input_bytes);
    metric_render(out, "fencelock_applied_index", "gauge", "Last Raft index applied.",
                  (double)rn_applied_index(s->rn));
    metric_render(out, "fencelock_commit_index", "gauge", "Raft commit index.",
                  (double)rn_commit_index(s->rn));
    metric_render(out, "fencelock_raft_term", "gauge", "Raft term.", (double)rn_term(s->rn));
    render_raft_state(s, out);
    metric_render(out, "fencelock_healthy", "gauge",
                  "1 when /health answers ok: a ready leader, or a follower that knows a leader.",
                  srv_healthy(s) ? 1.0 : 0.0);
    metric_render(out, "fencelock_elections_total", "counter",
                  "Raft terms this node saw begin (each one an election).", (double)m->elections);
    metric_render(out, "fencelock_leader_changes_total", "counter",
                  "Times the leader this node knows changed to another node.",
                  (double)m->leader_changes);
    metric_render(out, "fencelock_leader_ready", "gauge",
                  "1 when this node is a leader that committed an entry of its term.",
                  srv_ready(s) ? 1.0 : 0.0);
    struct rn_change_view chg;
    rn_change_info(s->rn, &chg);
    metric_render(out, "fencelock_membership_change_seconds", "gauge",
                  "Age of the membership change or transfer in progress (0: none).",
                  (double)chg.age_ms / 1e3);
    render_raft_rejected(s, out);
    render_peer_lag(s, out);
    certexp_render(&s->certs, out);
    hist_render(out, "fencelock_lock_wait_seconds", "Time from enqueue to grant.", &m->lock_wait);
    hist_render(out, "fencelock_lock_hold_seconds", "Time from grant to release.", &m->lock_hold);
    hist_render(out, "fencelock_commit_latency_seconds",
                "Time from proposal to applied reply, on the leader.", &m->commit);
    hist_render(out, "fencelock_disk_append_seconds",
                "Time to write and sync one batch of Raft log entries (the fsync every commit "
                "waits for).",
                &m->disk_append);
    hist_render(out, "fencelock_snapshot_write_seconds", "Time to write one snapshot to disk.",
                &m->snapshot_write);
    hist_render(out, "fencelock_snapshot_serialize_seconds",
                "Time to serialise the state for a snapshot (the event loop waits).",
                &m->snapshot_serialize);
    hist_render(out, "fencelock_snapshot_restore_seconds",
                "Time to load a snapshot into the state (start-up, InstallSnapshot).",
                &m->snapshot_restore);
}
