/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server.c — lifecycle: create, start, recover, stop and free the server (its clock is
 * common/clock.h).
 * (Leadership is leader.c, the lease glue and FSM hooks timers.c, reads reads.c, parked LOCKs
 * parked.c, commands cmd*.c, connections conn.c, HTTP routes http_routes.c.)
 */
#include "common/clock.h"
#include "common/map.h"
#include "fsm/waitgraph.h"
#include "server/cmd/cmd.h"
#include "server/obs/status.h"
#include "server/security/peer_guard.h"
#include "server/security/secret.h"
#include "server/server.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- lifecycle ---- */

static int mkdir_p(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    struct stat st;
    if (mkdir(tmp, 0755) && (stat(tmp, &st) || !S_ISDIR(st.st_mode)))
        return -1;
    return 0;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct srv *s = h->data;
    LOGI(&s->log, "signal %d: shutting down", signum);
    srv_stop(s);
}

/* The disk's and the snapshots' timings into the /metrics histograms. */
static void hook_timed(void *arg, enum rn_timing kind, double seconds)
{
    struct srv *s = arg;
    struct hist *h[] = {[RN_TIME_APPEND] = &s->m.disk_append,
                        [RN_TIME_SNAPSHOT_WRITE] = &s->m.snapshot_write,
                        [RN_TIME_SNAPSHOT_SERIALIZE] = &s->m.snapshot_serialize,
                        [RN_TIME_SNAPSHOT_RESTORE] = &s->m.snapshot_restore};
    if ((unsigned)kind < sizeof h / sizeof h[0])
        hist_observe(h[kind], seconds);
}

/* The --peer-tls-* files just loaded: their expiry for /metrics (obs/certexp.h). */
static void note_peer_expiry(struct srv *s)
{
    if (!s->cfg.peer_tls_cert[0])
        return;
    certexp_note(&s->certs, SRV_CERT_PEER_TLS, s->cfg.peer_tls_cert, &s->log);
    certexp_note(&s->certs, SRV_CERT_PEER_TLS_CA, s->cfg.peer_tls_ca, &s->log);
}

/* Random hash keys for this process: lock names and the server's map keys (names, session ids)
 * come from clients, who must not be able to choose keys that share a bucket. Nothing
 * replicated depends on bucket order (docs/design.md "Hashing"), so every node has its own.
 * Before anything is inserted. */
static int hash_keys_init(uint8_t fsm_key[FSM_HASH_KEY_BYTES])
{
    unsigned char map_key[MAP_HASH_KEY_BYTES];
    if (sodium_init() < 0)
        return -1;
    randombytes_buf(map_key, sizeof map_key);
    map_set_hash_key(map_key);
    sodium_memzero(map_key, sizeof map_key);
    randombytes_buf(fsm_key, FSM_HASH_KEY_BYTES);
    return 0;
}

int srv_init(struct srv *s, uv_loop_t *loop, const struct srv_config *cfg)
{
    char err[256];
    uint8_t fsm_key[FSM_HASH_KEY_BYTES];
    memset(s, 0, sizeof(*s));
    if (hash_keys_init(fsm_key)) {
        fprintf(stderr, "fencelockd: libsodium cannot be initialised\n");
        return -1;
    }
    s->loop = loop;
    s->cfg = *cfg;
    s->audit.fd = -1;
    notify_init(&s->notify);
    s->log.level = cfg->log_level;
    s->log.id = (int)cfg->id;
    s->log.format = cfg->log_format;
    s->log.journal = log_stderr_is_journal(getenv("JOURNAL_STREAM"));
    s->cluster.role = RN_UNAVAILABLE;
    lease_init(&s->lease.rules, cfg->checkpoint_min_ttl);
    watch_init(&s->watch, cfg->event_history, cfg->event_history_bytes, cfg->event_value_max);
    srv_push_init(s);
    uint64_t seeds[2];
    randombytes_buf(seeds, sizeof seeds); /* no client may choose names that unbalance these */
    watch_seed(&s->watch, seeds[0]);
    wake_index_init(&s->xread.wake, seeds[1]);
    if (cmdstat_init(&s->cmdstat, srv_cmd_count()))
        LOGW(&s->log, "no memory for per-command counts: fencelock_commands_total stays empty");
    if (notify_open(&s->notify, getenv("NOTIFY_SOCKET")))
        LOGW(&s->log, "NOTIFY_SOCKET %s unusable (%s): no readiness notification",
             getenv("NOTIFY_SOCKET"), strerror(errno));
    srv_status_init(s);
    if (mkdir_p(cfg->data_dir)) {
        LOGE(&s->log, "cannot create data directory %s: %s", cfg->data_dir, strerror(errno));
        return -1;
    }
    s->fsm = fsm_new();
    if (s->fsm) {
        fsm_set_hash_key(s->fsm, fsm_key); /* empty: cannot fail */
        fsm_set_deadlock_limit(s->fsm, cfg->deadlock_search_limit);
    }
    sodium_memzero(fsm_key, sizeof fsm_key);
    if (!s->fsm || srv_secrets_check(s, "") || srv_auth_init(s) || srv_peer_load(s) ||
        srv_tls_init(s) || srv_tsig_init(s) || srv_htok_init(s))
        return -1;
    unsetenv("FENCELOCK_PEER_PASSWORD"); /* set but unused (a password file): gone too */
    if (audit_open(&s->audit, cfg->audit_log)) {
        LOGE(&s->log, "--audit-log %s cannot be opened: %s", cfg->audit_log, strerror(errno));
        return -1;
    }
    struct rn_config rc = {
        .id = cfg->id,
        .raft_address = s->cfg.raft_address,
        .peers = s->cfg.peers,
        .n_peers = s->cfg.n_peers,
        .join = s->cfg.n_join != 0,
        .data_dir = cfg->data_dir,
        .election_ms = cfg->election_ms,
        .heartbeat_ms = cfg->heartbeat_ms,
        .snapshot_threshold = cfg->snapshot_threshold,
        .snapshot_trailing = cfg->snapshot_trailing,
        .snapshot_log_bytes = cfg->snapshot_log_bytes,
        .lazy_ms = cfg->lazy_ms,
        .read_lease_ms = cfg->read_lease_ms,
        .peer_tls_cert = s->cfg.peer_tls_cert[0] ? s->cfg.peer_tls_cert : NULL,
        .peer_tls_key = s->cfg.peer_tls_key,
        .peer_tls_ca = s->cfg.peer_tls_ca,
        .peer_cert_name = s->cfg.peer_cert_name,
        .raft_handshake_ms = s->cfg.raft_handshake_ms,
        .raft_max_links = s->cfg.raft_max_links,
        .raft_max_links_per_addr = s->cfg.raft_max_links_per_addr,
        .raft_max_handshakes = s->cfg.raft_max_handshakes,
        .raft_max_handshakes_per_addr = s->cfg.raft_max_handshakes_per_addr,
        .raft_handshake_rate = s->cfg.raft_handshake_rate,
        .max_format = cfg->max_log_format,
    };
    struct rn_hooks hooks = {.arg = s,
                             .applied = srv_hook_applied,
                             .restored = srv_hook_restored,
                             .halted = srv_hook_halted,
                             .timed = hook_timed};
    if (rn_new(&s->rn, loop, &rc, s->fsm, &hooks, &s->log, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    note_peer_expiry(s); /* rn_new loaded the --peer-tls-* files */
    /* The loop handles exist from here on, so srv_stop may close them whatever failed later. */
    uv_timer_init(s->loop, &s->tick);
    s->tick.data = s;
    uv_idle_init(s->loop, &s->cluster.reads_issue);
    s->cluster.reads_issue.data = s;
    uv_signal_init(s->loop, &s->sig_term);
    uv_signal_init(s->loop, &s->sig_int);
    s->sig_term.data = s->sig_int.data = s;
    return 0;
}

int srv_recover(struct srv *s)
{
    char err[256];
    if (rn_recover(s->rn, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    return 0;
}

static void tick_cb(uv_timer_t *t)
{
    srv_tick(t->data);
}

/* --peer-tls-*: new Raft connections use the files read again; open ones keep theirs. */
static void peer_tls_reload(struct srv *s)
{
    char err[256];
    if (!s->cfg.peer_tls_cert[0])
        return;
    if (rn_peer_tls_reload(s->rn, err, sizeof err)) {
        LOGE(&s->log, "SIGHUP: %s; the previous peer certificate, key and CA stay", err);
        return;
    }
    LOGI(&s->log, "SIGHUP: peer TLS certificate, key and CA reloaded");
    note_peer_expiry(s);
}

/* SIGHUP reloads what was read from files at start: --audit-log is reopened (log rotation),
 * --peer-password-file re-read, --acl-file (a malformed file keeps the old rules), the TLS
 * certificate, key and CA, the HTTP port's own pair and the peer TLS ones (a bad set keeps the old
 * one), --token-key (a bad file keeps the old keys). */
static void on_hup(uv_signal_t *h, int sig)
{
    struct srv *s = h->data;
    (void)sig;
    srv_audit_reopen(s); /* first: the reload's own lines go to the new file */
    if (srv_secrets_check(s, "SIGHUP: ")) {
        LOGE(&s->log, "SIGHUP: a secret file's permissions are too open: nothing reloaded, "
                      "the previous ACL, passwords and keys stay");
        return;
    }
    srv_peer_reload(s);
    if (srv_auth_reload(s) == 0)
        srv_reauth_parked(s); /* lowered permissions also end what is parked */
    srv_tls_reload(s);
    srv_tsig_reload(s);
    srv_htok_reload(s);
    peer_tls_reload(s);
}

static void hup_start(struct srv *s)
{
    if (!s->auth.on && !s->net.tls && !s->net.http_tls && !s->cfg.audit_log[0] &&
        !s->cfg.peer_password_file[0] && !s->cfg.n_token_keys && !s->cfg.peer_tls_cert[0])
        return;
    uv_signal_init(s->loop, &s->sig_hup);
    s->sig_hup.data = s;
    uv_signal_start(&s->sig_hup, on_hup, SIGHUP);
    s->hup_started = true;
}

int srv_start(struct srv *s)
{
    char err[256];
    s->started_ms = clock_ms();
    /* Before rn_start, which can take seconds (bind wait, a large snapshot to load): a SIGTERM
     * meanwhile is held by libuv and shuts the node down cleanly once the loop runs, instead of
     * killing it with the default action. */
    uv_signal_start(&s->sig_term, on_signal, SIGTERM);
    uv_signal_start(&s->sig_int, on_signal, SIGINT);
    if (rn_start(s->rn, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    if (srv_listen(s))
        return -1;
    if (s->cfg.http_port && srv_http_start(s->loop, s->cfg.http_host, s->cfg.http_port,
                                           srv_http_route, s, &s->http, err, sizeof(err))) {
        LOGE(&s->log, "http: %s", err);
        return -1;
    }
    srv_http_set_limits(s->http, s->cfg.http_max_conns, s->cfg.http_idle_ms);
    if (s->cfg.http_tls && s->http) { /* before the loop runs: every connection speaks TLS */
        srv_http_set_tls(s->http, s->net.http_tls ? s->net.http_tls : s->net.tls);
        if (!s->net.http_tls)
            LOGI(&s->log, "TLS on the HTTP port (--http-tls): the client port's certificate %s",
                 s->cfg.tls.cert);
    }
    srv_http_set_async(s->http, srv_http_async_route, s); /* GET /v1/fence (obs/http_fence.c) */
    /* /health hands out the term and applied index, what a forger of Raft traffic needs. */
    if (s->cfg.http_port && !srv_host_loopback(s->cfg.http_host))
        LOGW(&s->log,
             "http: the non-loopback address %s:%d serves /health to anyone who reaches it (the "
             "term and the applied index)%s; put it behind a firewall or use --http-listen "
             "127.0.0.1:PORT",
             s->cfg.http_host, s->cfg.http_port,
             s->cfg.acl_file[0] ? ""
                                : ", and without --acl-file also /metrics and the read-only API "
                                  "(/v1/: locks, sessions, events, fence checks)");
    uv_timer_start(&s->tick, tick_cb, 1, s->cfg.tick_ms);
    hup_start(s);
    LOGI(&s->log, "fencelockd %llu: clients on %s:%d, raft on %s, http on %s:%d, data in %s",
         (unsigned long long)s->cfg.id, s->cfg.listen_host, s->cfg.listen_port, s->cfg.raft_address,
         s->cfg.http_host, s->cfg.http_port, s->cfg.data_dir);
    if (s->cfg.config_file[0] || s->cfg.config_env[0])
        LOGI(&s->log, "settings from %s%s%s%s%s (flags override them; --print-config shows each)",
             s->cfg.config_file[0] ? "config file " : "", s->cfg.config_file,
             s->cfg.config_file[0] && s->cfg.config_env[0] ? " and " : "",
             s->cfg.config_env[0] ? "environment " : "", s->cfg.config_env);
    return 0;
}

static void rn_closed(void *arg)
{
    struct srv *s = arg;
    s->rn = NULL;
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->cluster.reads_issue, NULL);
    uv_close((uv_handle_t *)&s->sig_term, NULL);
    uv_close((uv_handle_t *)&s->sig_int, NULL);
}

void srv_stop(struct srv *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    if (notify_stopping(&s->notify))
        LOGW(&s->log, "NOTIFY_SOCKET: STOPPING=1 not sent: %s", strerror(errno));
    uv_timer_stop(&s->tick);
    srv_members_stop(s);
    srv_fail_parked(s, RN_ERR);
    srv_fail_waiting_reads(s, RN_ERR);
    srv_noleader_fail(s, RN_ERR);
    srv_watch_fail(s, RN_ERR, true);
    srv_observe_fail(s, RN_ERR, true);
    srv_latch_fail(s, RN_ERR);
    uv_idle_stop(&s->cluster.reads_issue);
    srv_close_all_conns(s);
    srv_auth_stop(s);
    if (s->hup_started) {
        uv_close((uv_handle_t *)&s->sig_hup, NULL);
        s->hup_started = false;
    }
    if (s->listening && !uv_is_closing((uv_handle_t *)&s->net.listener))
        uv_close((uv_handle_t *)&s->net.listener, NULL);
    srv_http_stop(s->http);
    s->http = NULL;
    rn_close(s->rn, rn_closed, s);
}

void srv_free(struct srv *s)
{
    lease_free(&s->lease.rules);
    map_free(&s->lease.parked, NULL);
    srv_quota_free(s);
    srv_observe_free(s);
    srv_push_free(s);
    srv_latch_free(s);
    watch_free(&s->watch);
    wake_index_free(&s->xread.wake);
    cmdstat_free(&s->cmdstat);
    buf_free(&s->scratch);
    srv_auth_free(s);
    srv_limits_free(s);
    audit_close(&s->audit);
    srv_tls_free(s);
    tsig_wipe(&s->tsig);
    htok_wipe(&s->htok);
    srv_free_slots(s);
    notify_close(&s->notify);
    fsm_free(s->fsm);
    s->fsm = NULL;
}
