/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config — fencelockd's settings as the rest of the server reads them: struct srv_config (in
 * struct srv as `cfg`), filled once at start from the settings table (table.c: every setting
 * is a row there) and changed afterwards only by the SIGHUP reload of the settings whose row
 * says so. Strings are fixed-size arrays inside the struct: nothing to free.
 */
#ifndef FENCELOCK_CONFIG_H
#define FENCELOCK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/log.h"
#include "common/proto.h"
#include "raft/rn.h"
#include "server/net/tls.h"
#include "server/security/acl.h"
#include "server/security/tokensig.h"

struct srv_config {
    uint64_t id;
    char data_dir[512];
    char listen_host[PROTO_ADDR_BUF];
    int listen_port;
    char raft_address[PROTO_ADDR_BUF];
    bool raft_listen_set;
    struct rn_peer peers[RN_MAX_PEERS]; /* --initial-cluster */
    size_t n_peers;
    /* --join: members' client addresses, tried in turn */
    char join[RN_MAX_PEERS][PROTO_ADDR_BUF];
    size_t n_join;     /* 0 = not joining */
    bool recover;      /* --recover: peers is the forced configuration; run once and exit */
    char restore[512]; /* --restore FILE: a backup into an empty data dir; run once and exit */
    char http_host[PROTO_ADDR_BUF];
    int http_port; /* 0 = no HTTP endpoint */
    /* --http-advertise: the HTTP address other members redirect to ("": from --http-listen) */
    char http_advertise[PROTO_ADDR_BUF];
    size_t max_bulk, max_args, max_clients, max_key, max_value, max_keys_reply;
    size_t max_pending;        /* per connection: reading pauses beyond it */
    size_t max_output;         /* per connection: unsent reply bytes before it is closed */
    size_t max_output_soft;    /* per connection: reading and parsing pause beyond it */
    size_t max_query_buffer;   /* per connection: input bytes of one unfinished command */
    size_t max_input_total;    /* all connections' input buffers together */
    uint64_t idle_timeout;     /* ms without traffic before a client connection closes; 0 off */
    unsigned http_max_conns;   /* HTTP connections open at once */
    unsigned http_max_streams; /* GET /v1/events streams open at once */
    uint64_t http_idle_ms;     /* HTTP: ms to send the request, and again to read the reply */
    uint64_t max_ttl, max_lockdelay, max_wait;
    uint64_t max_lock_value;             /* --max-lock-value: LOCK ... VALUE bytes */
    uint64_t min_max_hold, max_max_hold; /* LOCK ... MAXHOLD bounds (ms) */
    uint64_t reentrant_max_count;        /* a REENTRANT session's MAXCOUNT when it names none */
    uint64_t deadlock_search_limit;      /* fsm_set_deadlock_limit: 0 = no deadlock detection */
    uint64_t max_multi_lock_names;       /* --max-multi-lock-names: names of one LOCK.MULTI */
    uint64_t max_txn_ops;                /* --max-txn-ops: compares + ops of one TXN */
    uint64_t max_txn_bytes;              /* --max-txn-bytes: name + value bytes of one TXN */
    uint64_t history_per_lock;    /* the lock history's bounds a leader proposes (settings.c); */
    uint64_t history_max_entries; /* either 0: off */
    /* quotas (quota.c): checked on the leader before proposing */
    uint64_t max_sessions, max_locks, max_keys, max_waiters, max_data_bytes;
    uint64_t max_parked;         /* --max-parked: parked XREAD/ELECT.OBSERVE, all users (quota.c) */
    uint64_t checkpoint_min_ttl; /* sessions with a TTL this long get lease checkpoints */
    /* --noleader-wait-ms, --max-noleader-waits: a leader-only request waits that long for a
     * ready leader to be known, at most that many on this node (cluster/noleader.c) */
    uint64_t noleader_wait_ms, max_noleader_waits;
    unsigned election_ms, heartbeat_ms, snapshot_threshold, snapshot_trailing, lazy_ms;
    unsigned read_lease_ms; /* the leader's read lease (raft/rn_lease.c); 0: every read a barrier */
    uint64_t snapshot_log_bytes; /* log bytes since a snapshot that force the next one */
    unsigned tick_ms;
    /* XREAD (cmd_watch.c): the event history's bounds, the longest value it keeps, and the
     * unread reply bytes a reader may hold */
    size_t event_history, event_history_bytes, event_value_max, event_buffer;
    enum log_level log_level;
    enum log_format log_format; /* --log-format: text or one JSON object per line */
    /* where the settings came from, for the start's log line (config/sources.c): the config file
     * ("" none) and the FENCELOCK_ variables applied, ", "-separated ("" none) */
    char config_file[512];
    char config_env[256];
    char acl_file[512];    /* --acl-file: "" = no users, every client may do anything */
    bool insecure_no_auth; /* --insecure-no-auth: listen publicly without --acl-file */
    /* --peer-user / --peer-password-file: what this node sends AUTH as before CLUSTER.ANNOUNCE
     * and CLUSTER.ADD (--join) to another member; "" = sends no AUTH */
    char peer_user[ACL_NAME_MAX + 1];
    char peer_password_file[512];
    char audit_log[512];   /* --audit-log: "" = none */
    struct tls_config tls; /* --tls-*: cert "" = the client port is plain text */
    /* --peer-tls-cert/-key/-ca: mutual TLS on the Raft port; all three or none ("") */
    char peer_tls_cert[512], peer_tls_key[512], peer_tls_ca[512];
    /* --peer-cert-name: the name member N's peer certificate carries, "%d" for N */
    char peer_cert_name[256];
    /* --peer-ca-shared-with-clients: start although --peer-tls-ca trusts a certificate
     * --tls-ca trusts (otherwise refused: config/rules.c check_peer_ca) */
    bool peer_ca_shared;
    /* --insecure-raft: --raft-listen on a routable address without peer TLS */
    bool insecure_raft;
    /* --announce-any-host: a member's CLUSTER.ANNOUNCE may name a client host other than its
     * Raft address's host */
    bool announce_any_host;
    bool http_metrics_auth; /* /metrics asks for HTTP Basic when there are users */
    bool http_tls;          /* the HTTP port speaks TLS (with the client port's files unless
                             * http_tls_cert names its own pair) */
    /* --http-tls-cert/--http-tls-key: the HTTP port's own pair; both or neither (""); given,
     * they imply http_tls (config/rules.c) */
    char http_tls_cert[TLS_PATH_MAX], http_tls_key[TLS_PATH_MAX];
    /* --raft-handshake-timeout and the inbound link caps (transport.h rn_tp_caps) */
    unsigned raft_handshake_ms, raft_max_links, raft_max_links_per_addr, raft_max_handshakes,
        raft_max_handshakes_per_addr, raft_handshake_rate;
    /* --token-key FILE[,FILE2]: FENCE.SIGN signs with the first, FENCE.VERIFY accepts each */
    char token_key[TSIG_MAX_KEYS][TSIG_PATH_MAX];
    size_t n_token_keys; /* 0 = no key: FENCE.SIGN / FENCE.VERIFY refused */
    /* AUTH.TOKEN's bearer tokens (security/httptoken.h): the key file ("" = a random key of
     * this process), the TTL without TTL ms, and the longest TTL signed or accepted */
    char http_token_key[512];
    uint64_t http_token_ttl, http_token_max_ttl;
    /* --max-log-format: the highest log format this node reads and reports (format.c); only
     * lowered to simulate a previous-release node in upgrade tests. 0 = FSM_FORMAT_MAX */
    unsigned max_log_format;
    /* before AUTH (limits.h, auth.h): the Argon2id pool's threads and queue, the
     * unauthenticated connections' caps and deadline (ms, 0 off), their output allowance, the
     * total output cap, TLS handshakes in progress, failed AUTHs a second (all addresses)
     * before every AUTH that misses the cache is refused without a hash, AUTH-failure/NOPERM
     * log lines a second, TCP keepalive (s, 0 off) */
    unsigned auth_threads;
    size_t auth_queue;
    size_t max_unauth_clients, max_unauth_per_addr;
    uint64_t auth_timeout;
    size_t max_output_preauth, max_output_total;
    unsigned tls_max_handshakes, tls_max_handshakes_per_addr;
    unsigned auth_fail_rate, security_log_rate;
    uint64_t tcp_keepalive;
};

/* Fill defaults (config/table.c: every setting is a row there); parse --config FILE,
 * FENCELOCK_* variables and argv (config/sources.c), in that order of precedence. 0 ok, 1 help or
 * --print-config printed (exit 0), -1 error printed. */
void srv_config_defaults(struct srv_config *c);
int srv_config_parse(struct srv_config *c, int argc, char **argv);
void srv_config_usage(FILE *f);

#endif
