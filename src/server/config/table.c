/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.c — THE list of fencelockd's settings (config_int.h says what a row holds), and
 * srv_config_defaults, which fills struct srv_config from the rows' defaults.
 *
 * Everything about a setting is its row: --help, --print-config, the config file's keys, the
 * FENCELOCK_* variables, the defaults and the bounds all come from here, and the documents are
 * checked against it (tests/integration/test_manpage.py). Every limit is a row. A default
 * written as text goes through the row's own parser, so a default is always a value a source
 * could give (test_config checks that each one parses).
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "fsm/waitgraph.h"
#include "raft/rn.h"
#include "raft/transport.h"
#include "server/config/config_int.h"
#include "server/obs/http.h"
#include "server/server.h"

#define OFF(f) offsetof(struct srv_config, f)
#define SZ(f) sizeof(((struct srv_config *)0)->f)
#define TB (1ull << 40) /* the usual ceiling: far above any sane value, far below overflow */

#define NUM(n, f, u, lo, hi, d, h)                                                                 \
    {                                                                                              \
        .name = n, .type = CFG_NUM, .off = OFF(f), .size = SZ(f), .unit = u, .min = lo, .max = hi, \
        .def = d, .help = h                                                                        \
    }
#define BOOL(n, f, h)                                                                              \
    {                                                                                              \
        .name = n, .type = CFG_BOOL, .off = OFF(f), .size = SZ(f), .help = h                       \
    }
#define PATH(n, f, d, a, fl, h)                                                                    \
    {                                                                                              \
        .name = n, .type = CFG_PATH, .off = OFF(f), .size = SZ(f), .def_text = d, .arg = a,        \
        .flags = fl, .help = h                                                                     \
    }
#define TEXT(n, p, d, a, fl, h)                                                                    \
    {                                                                                              \
        .name = n, .type = CFG_TEXT, .parse = p, .def_text = d, .arg = a, .flags = fl, .help = h   \
    }

/* A bool row stores through a bool pointer; a number row through 4 or 8 bytes (value.c). */
_Static_assert(sizeof(bool) == 1, "bool rows are one byte");

const struct cfg_row cfg_rows[] = {
    NUM("--id", id, CFG_COUNT, 1, CFG_NODE_ID_MAX, 1, "node id"),
    PATH("--data-dir", data_dir, "./var/node1", "DIR", 0, "Raft log and snapshots"),
    TEXT("--listen", cfg_parse_listen, "127.0.0.1:7480", "HOST:PORT", 0, "client address"),
    {.name = "--raft-listen",
     .type = CFG_TEXT,
     .parse = cfg_parse_raft_listen,
     .show = cfg_show_raft_listen, /* --initial-cluster's entry for this node sets it */
     .def_text = "127.0.0.1:7481",
     .arg = "HOST:PORT",
     .help = "Raft transport address"},
    TEXT("--http-listen", cfg_parse_http_listen, "127.0.0.1:7482", "HOST:PORT", 0,
         "/metrics, /livez, /readyz (/health), the /v1/ API and /ui/; 'off' for none"),
    TEXT("--http-advertise", cfg_parse_http_advertise, NULL, "HOST:PORT", 0,
         "where the other members send a client to this node's HTTP port (a follower's 307 to "
         "the leader); unset: --http-listen, its host replaced by --raft-listen's when it is a "
         "wildcard (0.0.0.0, ::)"),
    TEXT("--recover", cfg_parse_recover, NULL, "ID=HOST:PORT,...", 0,
         "disaster recovery after losing a majority for good: write this configuration (the "
         "survivors) into --data-dir of a stopped node, then exit; start it normally afterwards "
         "(see docs/operations.md)"),
    PATH("--restore", restore, NULL, "FILE", 0,
         "make the empty --data-dir a new cluster whose state is FILE (from `fencelock snapshot "
         "save`), then exit; with --initial-cluster, restore every node from the same FILE; start "
         "the nodes normally afterwards"),
    TEXT("--initial-cluster", cfg_parse_initial_cluster, NULL, "ID=HOST:PORT,...", 0,
         "every voter of a new cluster and its Raft address; used only to bootstrap a pristine "
         "--data-dir (unset: this node alone)"),
    TEXT("--join", cfg_parse_join, NULL, "HOST:PORT[,...]", 0,
         "join an existing cluster through any member's client address (several: tried in turn "
         "while some are down): a pristine --data-dir is not bootstrapped; the node asks the "
         "leader (CLUSTER.ADD) every second until it is a voter"),
    NUM("--max-clients", max_clients, CFG_COUNT, 1, 1000000, 10000, "client connections"),
    NUM("--max-bulk", max_bulk, CFG_BYTES, 16, FSM_MAX_VALUE + 1024, 1u << 20,
        "one RESP bulk argument"),
    NUM("--max-args", max_args, CFG_COUNT, 4, 1u << 20, 64, "arguments of one command"),
    NUM("--max-key", max_key, CFG_BYTES, 1, FSM_MAX_NAME, 1024, "key / lock name / session name"),
    NUM("--max-value", max_value, CFG_BYTES, 0, FSM_MAX_VALUE, 1u << 20, "value of PUT"),
    NUM("--max-keys-reply", max_keys_reply, CFG_COUNT, 1, 10000000, 10000,
        "entries one KEYS, LOCKS or SESSION.LIST reply returns at most"),
    NUM("--max-ttl", max_ttl, CFG_MS, 1, TB, 7ull * 24 * 3600 * 1000,
        "longest session TTL; 7 days"),
    NUM("--max-sessions", max_sessions, CFG_COUNT, 1, TB, 1000000,
        "live sessions; over a quota a command gets -NOSPACE and changes nothing"),
    NUM("--max-locks", max_locks, CFG_COUNT, 1, TB, 10000000,
        "existing locks: held, in lock-delay or with waiters"),
    NUM("--max-keys", max_keys, CFG_COUNT, 1, TB, 1000000, "keys"),
    NUM("--max-waiters", max_waiters, CFG_COUNT, 1, TB, 1000000, "sessions queued on locks"),
    NUM("--max-parked", max_parked, CFG_COUNT, 1, TB, 100000,
        "parked XREAD ... BLOCK and ELECT.OBSERVE requests on this node, all users together"),
    NUM("--max-data-bytes", max_data_bytes, CFG_BYTES, 4096, 1ull << 50, 2ull << 30,
        "state size: key, value and name bytes plus 128 per record (docs/server.md \"Memory\")"),
    NUM("--max-lockdelay", max_lockdelay, CFG_MS, 0, TB, 60000, "session LOCKDELAY"),
    NUM("--max-wait", max_wait, CFG_MS, 1, TB, 24ull * 3600 * 1000, "LOCK ... WAIT"),
    NUM("--max-lock-value", max_lock_value, CFG_BYTES, 0, FSM_MAX_ELECT_VALUE, 1024,
        "LOCK ... VALUE bytes (counted in --max-data-bytes)"),
    NUM("--min-max-hold", min_max_hold, CFG_MS, 1, FSM_MAX_MAXHOLD_MS, 1000,
        "shortest LOCK ... MAXHOLD"),
    NUM("--max-max-hold", max_max_hold, CFG_MS, 1, FSM_MAX_MAXHOLD_MS, 7ull * 24 * 3600 * 1000,
        "longest LOCK ... MAXHOLD; 7 days"),
    NUM("--reentrant-max-count", reentrant_max_count, CFG_COUNT, 1, FSM_MAX_HOLD_COUNT, 64,
        "holds of one lock a SESSION.OPEN ... REENTRANT session may count without MAXCOUNT"),
    NUM("--deadlock-search-limit", deadlock_search_limit, CFG_COUNT, 0, FSM_DEADLOCK_LIMIT_MAX,
        FSM_DEADLOCK_LIMIT_DEFAULT,
        "sessions and edges one deadlock search may visit; past it the wait is allowed; 0 turns "
        "detection off; a leader makes its value the cluster's"),
    NUM("--history-per-lock", history_per_lock, CFG_COUNT, 0, FSM_HIST_PER_LOCK_MAX, 16,
        "grants LOCK.HISTORY keeps per lock, semaphore or election, the oldest dropped first; 0 "
        "turns the history off; a leader makes its value the cluster's"),
    NUM("--history-max-entries", history_max_entries, CFG_COUNT, 0, FSM_HIST_ENTRIES_MAX, 100000,
        "grants LOCK.HISTORY keeps over all names, the oldest dropped first; 0 turns the history "
        "off; a leader makes its value the cluster's"),
    NUM("--max-multi-lock-names", max_multi_lock_names, CFG_COUNT, 1, FSM_MAX_MULTI_NAMES, 32,
        "names one LOCK.MULTI takes at most (its arguments must also fit --max-args)"),
    NUM("--max-txn-ops", max_txn_ops, CFG_COUNT, 1, FSM_MAX_TXN_ITEMS, 128,
        "compares and ops of one TXN together, both branches (its arguments must also fit "
        "--max-args)"),
    NUM("--max-txn-bytes", max_txn_bytes, CFG_BYTES, 1, FSM_MAX_VALUE, 4u << 20,
        "key, lock name and value bytes of one TXN's compares and ops together (room for a "
        "value of --max-value's default and more)"),
    NUM("--checkpoint-min-ttl", checkpoint_min_ttl, CFG_MS, 1, TB, 1000,
        "sessions with at least this TTL checkpoint their remaining lease through the log when "
        "idle, so they end even if leaders keep changing; shorter ones get a full TTL from each "
        "new leader"),
    NUM("--max-pending", max_pending, CFG_COUNT, 1, 1u << 20, 1024,
        "queued requests per connection before reading pauses"),
    NUM("--max-output", max_output, CFG_BYTES, 1024, TB, 64u << 20,
        "unread reply bytes of one connection; more closes it"),
    NUM("--max-output-soft", max_output_soft, CFG_BYTES, 1024, TB, 8u << 20,
        "unread reply bytes at which a connection's input stops being read and parsed until the "
        "client reads"),
    NUM("--max-query-buffer", max_query_buffer, CFG_BYTES, 1024, TB, 8u << 20,
        "input bytes of one unfinished command; more is a protocol error (must exceed "
        "--max-bulk)"),
    NUM("--max-input-total", max_input_total, CFG_BYTES, 65536, TB, 1u << 30,
        "input buffers of all connections together; over it the connection with the largest one "
        "is closed"),
    NUM("--idle-timeout", idle_timeout, CFG_MS, 0, TB, 3600000,
        "close a client connection after MS without traffic, unless it waits for the server (a "
        "parked LOCK ... WAIT, a reply being computed); 0 never"),
    NUM("--http-max-conns", http_max_conns, CFG_COUNT, 1, 100000, SRV_HTTP_MAX_CONNS,
        "HTTP connections at once; at the cap a new one closes the oldest still waiting for its "
        "request"),
    NUM("--http-idle-ms", http_idle_ms, CFG_MS, 10, 3600000, SRV_HTTP_IDLE_MS,
        "time an HTTP client has to send its request"),
    NUM("--http-max-streams", http_max_streams, CFG_COUNT, 0, 100000, 16,
        "GET /v1/events streams open at once (at most --http-max-conns - 1, so a probe of "
        "/health always finds a connection); over it 503; 0 turns streams off"),
    BOOL("--http-tls", http_tls,
         "the HTTP port speaks TLS only, with --tls-cert/--tls-key (reloaded with them), "
         "--tls-client-auth and --tls-handshake-timeout, or with --http-tls-cert's own pair; "
         "HTTP Basic is then accepted from any address (without it: loopback only). Needs "
         "--tls-cert or --http-tls-cert"),
    PATH("--http-tls-cert", http_tls_cert, NULL, "FILE", CFG_RELOAD,
         "with --http-tls-key, the HTTP port's own certificate chain (PEM; implies --http-tls): "
         "another name or CA than the client port's, e.g. a public CA's for browsers. No client "
         "certificate is asked for on it; --tls-handshake-timeout applies; a bad pair keeps the "
         "old one"),
    PATH("--http-tls-key", http_tls_key, NULL, "FILE", CFG_RELOAD,
         "--http-tls-cert's private key (PEM)"),
    BOOL("--http-metrics-auth", http_metrics_auth,
         "with --acl-file, /metrics on the HTTP port asks for HTTP Basic credentials like /v1/ "
         "(a user with read); off: /metrics stays open as /health does"),
    NUM("--election-ms", election_ms, CFG_MS, 10, 60000, 400, "Raft election timeout"),
    NUM("--heartbeat-ms", heartbeat_ms, CFG_MS, 1, 60000, 40, "Raft heartbeat"),
    NUM("--noleader-wait-ms", noleader_wait_ms, CFG_MS, 0, 60000, 800,
        "a write or read that reaches a node knowing no ready leader waits this long for one "
        "(then -NOTLEADER with its address) before -NOLEADER; keep it below the clients' "
        "connect timeout; 0: answer -NOLEADER at once"),
    NUM("--max-noleader-waits", max_noleader_waits, CFG_COUNT, 0, TB, 10000,
        "requests waiting for a leader on this node at once; one more gets -NOLEADER at once"),
    NUM("--snapshot-threshold", snapshot_threshold, CFG_COUNT, 2, 1u << 30, 16384,
        "fewest entries between snapshots (more for a large state: about its size in log "
        "bytes)"),
    NUM("--snapshot-trailing", snapshot_trailing, CFG_COUNT, 1, 1u << 30, 4096,
        "entries kept after a snapshot"),
    NUM("--snapshot-log-bytes", snapshot_log_bytes, CFG_BYTES, 0, TB, 64u << 20,
        "snapshot as soon as the log since the last one holds more than max(last snapshot, "
        "BYTES) bytes, and keep about as many bytes of trailing entries; 0: entry counts only"),
    NUM("--read-lease-ms", read_lease_ms, CFG_MS, 0, RN_LEASE_MAX_MS, RN_LEASE_MAX_MS,
        "the leader answers reads and keepalives without a barrier for MS after an entry of its "
        "own term committed (at most a quarter of --election-ms); 0: every read waits for a "
        "barrier"),
    NUM("--lazy-ms", lazy_ms, CFG_MS, 0, 1000, 1,
        "a LOCK that will queue waits up to MS for another command to share its log entry; 0: "
        "never waits"),
    NUM("--tick-ms", tick_ms, CFG_MS, 1, 60000, 5,
        "the leader's timer tick: how late past its deadline a lease expiry, WAIT timeout or "
        "lock-delay end is proposed at most"),
    NUM("--max-log-format", max_log_format, CFG_COUNT, 1, FSM_FORMAT_MAX, FSM_FORMAT_MAX,
        "for upgrade testing only: read and report log format N (1 = the previous release; "
        "the default is the newest)"),
    NUM("--event-history", event_history, CFG_COUNT, 1, 100000000, 100000,
        "events kept in memory for XREAD; an older id gets -COMPACTED"),
    NUM("--event-history-bytes", event_history_bytes, CFG_BYTES, 4096, TB, 64u << 20,
        "memory those events may take"),
    NUM("--event-value-max", event_value_max, CFG_BYTES, 0, FSM_MAX_VALUE, 4096,
        "a PUT's value longer than this is streamed as value_len only"),
    NUM("--event-buffer", event_buffer, CFG_BYTES, 1024, TB, 4u << 20,
        "unread XREAD reply bytes a connection may hold: one reply stops at it, a reader past it "
        "gets -SLOWREADER and is closed"),
    TEXT("--log-level", cfg_parse_log_level, "info", "LEVEL", 0, "debug | info | warn | error"),
    TEXT("--log-format", cfg_parse_log_format, "text", "FORMAT", 0,
         "text | json: one JSON object per line"),
    PATH("--acl-file", acl_file, NULL, "PATH", CFG_RELOAD,
         "users and permissions (docs/security.md); clients must AUTH (a malformed file keeps "
         "the old rules)"),
    PATH("--peer-tls-cert", peer_tls_cert, NULL, "FILE", CFG_RELOAD,
         "this node's certificate (PEM chain) for mutual TLS on the Raft port; needs "
         "--peer-tls-key and --peer-tls-ca (new connections use the reloaded files)"),
    PATH("--peer-tls-key", peer_tls_key, NULL, "FILE", CFG_RELOAD, "its private key (PEM)"),
    PATH("--peer-tls-ca", peer_tls_ca, NULL, "FILE", CFG_RELOAD,
         "the CA (PEM) every peer's certificate must chain to; a CA of its own, not --tls-ca's"),
    TEXT("--peer-cert-name", cfg_parse_peer_cert_name, RN_PEER_CERT_NAME, "PATTERN", 0,
         "the name member N's peer certificate carries (a SAN DNS name, or the CN of a "
         "certificate without one), %d standing for N"),
    BOOL("--peer-ca-shared-with-clients", peer_ca_shared,
         "start although --peer-tls-ca and --tls-ca trust a certificate in common (otherwise "
         "refused)"),
    BOOL("--insecure-raft", insecure_raft,
         "allow --raft-listen on a non-loopback address without peer TLS (otherwise refused)"),
    NUM("--raft-handshake-timeout", raft_handshake_ms, CFG_MS, 10, 3600000, RN_TP_HANDSHAKE_MS,
        "an inbound Raft connection slower to complete TLS and libraft's handshake is closed"),
    NUM("--raft-max-links", raft_max_links, CFG_COUNT, 1, 100000, RN_TP_MAX_LINKS,
        "inbound Raft connections at once"),
    NUM("--raft-max-links-per-address", raft_max_links_per_addr, CFG_COUNT, 1, 100000,
        RN_TP_MAX_LINKS_PER_ADDR, "of them from one IP address"),
    NUM("--raft-max-handshakes", raft_max_handshakes, CFG_COUNT, 1, 100000, RN_TP_MAX_HANDSHAKES,
        "inbound Raft connections still in their handshake at once"),
    NUM("--raft-max-handshakes-per-address", raft_max_handshakes_per_addr, CFG_COUNT, 1, 100000,
        RN_TP_MAX_HANDSHAKES_PER_ADDR, "of them from one IP address"),
    NUM("--raft-handshake-rate", raft_handshake_rate, CFG_COUNT, 1, 1000000, RN_TP_HANDSHAKE_RATE,
        "new inbound Raft connections a second, over all addresses, with a burst of as many"),
    BOOL("--announce-any-host", announce_any_host,
         "accept a member's CLUSTER.ANNOUNCE of a client address whose host differs from its Raft "
         "address's host"),
    BOOL("--insecure-no-auth", insecure_no_auth,
         "allow --listen on a non-loopback address without --acl-file (otherwise refused)"),
    TEXT("--peer-user", cfg_parse_peer_user, NULL, "NAME", 0,
         "the user this node authenticates as (AUTH) before its CLUSTER.ANNOUNCE and --join's "
         "CLUSTER.ADD; needs the peer (or admin) permission. Required with --acl-file when "
         "--initial-cluster has several members or --join is given"),
    PATH("--peer-password-file", peer_password_file, NULL, "FILE", CFG_RELOAD,
         "--peer-user's password: the file's first line; else the environment's "
         "FENCELOCK_PEER_PASSWORD"),
    PATH("--audit-log", audit_log, NULL, "PATH", CFG_RELOAD,
         "append one JSON line per security event (AUTH, NOPERM, CLUSTER.* changes, ACL "
         "reloads)"),
    PATH("--tls-cert", tls.cert, NULL, "FILE", CFG_RELOAD,
         "with --tls-key, the client port speaks TLS only (PEM certificate chain; TLS 1.2+; a "
         "bad pair keeps the old one). This node's calls to other members (CLUSTER.ANNOUNCE, "
         "--join) use TLS and this pair too"),
    PATH("--tls-key", tls.key, NULL, "FILE", CFG_RELOAD, "--tls-cert's private key (PEM)"),
    PATH("--tls-ca", tls.ca, NULL, "FILE", CFG_RELOAD,
         "CA certificates client certificates (and other members' certificates, for this node's "
         "calls) must chain to; needed by --tls-cert on a cluster of several members"),
    TEXT("--tls-client-auth", cfg_parse_tls_client_auth, "none", "none|optional|require", 0,
         "ask for a client certificate"),
    BOOL("--tls-user-from-cn", tls.user_from_cn,
         "the client certificate's CN is the ACL user the connection is authenticated as (needs "
         "require and --acl-file)"),
    NUM("--tls-handshake-timeout", tls.handshake_ms, CFG_MS, 10, 3600000, 10000,
        "a client slower to finish its handshake is closed"),
    TEXT("--token-key", cfg_parse_token_key, NULL, "FILE[,FILE2]", CFG_RELOAD,
         "HMAC key(s) of FENCE.SIGN (signs with FILE) and FENCE.VERIFY (accepts both: rotation); "
         "each at least 16 bytes, one trailing newline dropped (a bad file keeps the old keys); "
         "every member needs the same files"),
    PATH("--http-token-key", http_token_key, NULL, "FILE", CFG_RELOAD,
         "key file (16..1024 bytes, one trailing newline dropped) of AUTH.TOKEN's bearer tokens "
         "for the HTTP API; every member needs the same file for its tokens to be accepted by "
         "all; unset: a random key of this process (tokens valid on this node until it "
         "restarts); a new file invalidates every token (a bad file keeps the old key)"),
    NUM("--http-token-ttl", http_token_ttl, CFG_MS, 1000, TB, 3600000,
        "lifetime of an AUTH.TOKEN bearer token asked without TTL (at most --http-token-max-ttl)"),
    NUM("--http-token-max-ttl", http_token_max_ttl, CFG_MS, 1000, TB, 86400000,
        "the longest lifetime AUTH.TOKEN signs and the HTTP API accepts (a token further from "
        "its expiry, beyond a minute of clock skew, is refused: lowering it cuts issued tokens "
        "short)"),
    NUM("--auth-threads", auth_threads, CFG_COUNT, 1, 64, 2,
        "threads verifying AUTH passwords (Argon2id, 64 MiB each), apart from libuv's pool that "
        "the Raft disk path uses"),
    NUM("--auth-queue", auth_queue, CFG_COUNT, 1, 1000000, 32,
        "AUTHs waiting for a verification thread; one more is answered -TRYAGAIN at once"),
    NUM("--max-unauth-clients", max_unauth_clients, CFG_COUNT, 1, 1000000, 1000,
        "connections not yet authenticated (--acl-file), in all"),
    NUM("--max-unauth-per-addr", max_unauth_per_addr, CFG_COUNT, 1, 1000000, 256,
        "the same from one client address"),
    NUM("--auth-timeout", auth_timeout, CFG_MS, 0, TB, 10000,
        "close a connection not authenticated MS after it was accepted (--acl-file); 0 never"),
    NUM("--max-output-preauth", max_output_preauth, CFG_BYTES, 1024, TB, 65536,
        "unread reply bytes of a connection before it authenticates (--acl-file)"),
    NUM("--max-output-total", max_output_total, CFG_BYTES, 65536, 1ull << 50, 1u << 30,
        "unread reply bytes of all connections together; over it the connection holding the "
        "most is closed"),
    NUM("--tls-max-handshakes", tls_max_handshakes, CFG_COUNT, 1, 1000000, 256,
        "TLS handshakes in progress on the client port; more connections are closed at once"),
    NUM("--tls-max-handshakes-per-addr", tls_max_handshakes_per_addr, CFG_COUNT, 1, 1000000, 32,
        "the same from one client address"),
    NUM("--auth-fail-rate", auth_fail_rate, CFG_COUNT, 1, 1000000, 100,
        "failed AUTHs a second (all addresses) past which every AUTH that misses the cache is "
        "refused without a hash until the next second"),
    NUM("--security-log-rate", security_log_rate, CFG_COUNT, 1, 1000000, 20,
        "AUTH-failure and NOPERM log (and audit) lines a second; the rest are counted and "
        "reported"),
    NUM("--tcp-keepalive", tcp_keepalive, CFG_SEC, 0, 86400, 300,
        "TCP keepalive on client connections after S idle seconds; 0 off"),
};

const size_t cfg_n_rows = sizeof(cfg_rows) / sizeof(cfg_rows[0]);

int cfg_id(const char *flag, size_t len)
{
    for (size_t id = 0; id < cfg_n_rows; id++)
        if (strlen(cfg_rows[id].name) == len && !memcmp(cfg_rows[id].name, flag, len))
            return (int)id;
    return -1;
}

/* Each row's default, through the row's own parser for a text one. A default that does not
 * parse would be this table's bug (test_config's test_every_default_parses), not the input's:
 * such a setting is left at zero. */
void srv_config_defaults(struct srv_config *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t id = 0; id < cfg_n_rows; id++) {
        const struct cfg_row *r = &cfg_rows[id];
        char num[24]; /* a u64's digits */
        if (r->type == CFG_BOOL || (r->type != CFG_NUM && !r->def_text))
            continue;
        cfg_default_text(r, num, sizeof num);
        (void)cfg_set(c, r, r->type == CFG_NUM ? num : r->def_text, "default ");
    }
    c->raft_listen_set = false; /* set by a source, not by the default */
}
