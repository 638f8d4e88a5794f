/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — fencelockd's flags: defaults, one value's parsing and validation, the rules
 * between flags, --help. Every limit is a flag. The list of every setting, where a value comes
 * from (file, environment, command line) and --print-config are config_src.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/num.h"
#include "raft/transport.h"
#include "server/config/config_int.h"
#include "server/security/peer_guard.h"
#include "server/server.h"

#define NODE_ID_MAX (1ull << 32) /* node ids are 1..2^32 */
#define NODE_ID_DIGITS 20        /* what num_parse_u64 reads: a u64 */
/* One --initial-cluster / --recover item: "ID=HOST:PORT" and its NUL. */
#define CLUSTER_ITEM_BUF (NODE_ID_DIGITS + 1 + PROTO_ADDR_BUF)

/* Every address buffer a flag fills holds any valid address. */
_Static_assert(sizeof(((struct srv_config *)0)->raft_address) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->join[0]) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->listen_host) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->http_host) == PROTO_ADDR_BUF &&
                   sizeof(((struct rn_peer *)0)->raft_address) == PROTO_ADDR_BUF,
               "config address buffers hold PROTO_ADDR_MAX bytes");

void srv_config_defaults(struct srv_config *c)
{
    memset(c, 0, sizeof(*c));
    c->id = 1;
    snprintf(c->data_dir, sizeof(c->data_dir), "./var/node1");
    snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
    c->listen_port = 7480;
    snprintf(c->raft_address, sizeof(c->raft_address), "127.0.0.1:7481");
    snprintf(c->http_host, sizeof(c->http_host), "127.0.0.1");
    c->http_port = 7482;
    c->max_bulk = 1u << 20;
    c->max_args = 64;
    c->max_clients = 10000;
    c->max_key = 1024;
    c->max_value = 1u << 20;
    c->max_keys_reply = 10000;
    c->max_pending = 1024;
    c->max_output = 64u << 20;
    c->max_output_soft = 8u << 20;
    c->max_query_buffer = 8u << 20;
    c->max_input_total = 1u << 30;
    c->idle_timeout = 3600000;
    c->tls.handshake_ms = 10000;
    c->http_max_conns = SRV_HTTP_MAX_CONNS;
    c->http_idle_ms = SRV_HTTP_IDLE_MS;
    c->max_ttl = 7ull * 24 * 3600 * 1000;
    c->max_lockdelay = 60000;
    c->max_wait = 24ull * 3600 * 1000;
    c->max_sessions = 1000000;
    c->max_locks = 10000000;
    c->max_keys = 1000000;
    c->max_waiters = 1000000;
    c->max_parked = 100000; /* parked XREAD ... BLOCK and ELECT.OBSERVE, all users */
    c->max_data_bytes = 2ull << 30;
    c->max_log_format = FSM_FORMAT_MAX; /* only lowered to simulate an older node */
    c->checkpoint_min_ttl = 1000;
    c->election_ms = 400;
    c->heartbeat_ms = 40;
    c->snapshot_threshold = 16384;
    c->snapshot_trailing = 4096;
    c->snapshot_log_bytes = 64u << 20;
    c->lazy_ms = 1;
    c->tick_ms = 5;
    c->event_history = 100000;
    c->event_history_bytes = 64u << 20;
    c->event_value_max = 4096;
    c->event_buffer = 4u << 20;
    c->log_level = LOG_INFO;
    snprintf(c->peer_cert_name, sizeof(c->peer_cert_name), "%s", RN_PEER_CERT_NAME);
    c->raft_handshake_ms = RN_TP_HANDSHAKE_MS;
    c->raft_max_links = RN_TP_MAX_LINKS;
    c->raft_max_links_per_addr = RN_TP_MAX_LINKS_PER_ADDR;
    c->raft_max_handshakes = RN_TP_MAX_HANDSHAKES;
    c->raft_max_handshakes_per_addr = RN_TP_MAX_HANDSHAKES_PER_ADDR;
    c->raft_handshake_rate = RN_TP_HANDSHAKE_RATE;
    /* before AUTH (limits.h) */
    c->auth_threads = 2;
    c->auth_queue = 32;
    c->max_unauth_clients = 1000;
    c->max_unauth_per_addr = 256;
    c->auth_timeout = 10000;
    c->max_output_preauth = 65536;
    c->max_output_total = 1u << 30;
    c->tls_max_handshakes = 256;
    c->tls_max_handshakes_per_addr = 32;
    c->auth_fail_rate = 100;
    c->security_log_rate = 20;
    c->tcp_keepalive = 300;
}

void srv_config_usage(FILE *f)
{
    fputs("usage: fencelockd [options]\n"
          "\n"
          "A distributed lock service with fencing tokens, replicated with Raft.\n"
          "Clients speak the Redis protocol (RESP2/RESP3) on --listen.\n"
          "\n"
          "  --config FILE           read settings from FILE: `key = value` lines named as\n"
          "                          the flags (listen = 127.0.0.1:7480); FENCELOCK_<FLAG>\n"
          "                          variables override the file, flags override both\n"
          "  --print-config          print the effective settings and where each came from,\n"
          "                          then exit\n"
          "  --id N                  node id (default 1)\n"
          "  --data-dir DIR          Raft log and snapshots (default ./var/node1)\n"
          "  --listen HOST:PORT      client address (default 127.0.0.1:7480)\n"
          "  --raft-listen HOST:PORT Raft transport address (default 127.0.0.1:7481)\n"
          "  --http-listen HOST:PORT /metrics and /health (default 127.0.0.1:7482; 'off')\n"
          "  --recover ID=HOST:PORT,...\n"
          "                          disaster recovery after losing a majority for good: write\n"
          "                          this configuration (the survivors) into --data-dir of a\n"
          "                          stopped node, then exit; start it normally afterwards\n"
          "                          (see docs/operations.md)\n"
          "  --restore FILE          make the empty --data-dir a new cluster whose state is\n"
          "                          FILE (from `fencelock snapshot save`), then exit; with\n"
          "                          --initial-cluster, restore every node from the same\n"
          "                          FILE; start the nodes normally afterwards\n"
          "  --initial-cluster ID=HOST:PORT,...\n"
          "                          every voter of a new cluster and its Raft address; used\n"
          "                          only to bootstrap a pristine --data-dir (default: this\n"
          "                          node alone)\n"
          "  --join HOST:PORT[,...]  join an existing cluster through any member's client\n"
          "                          address (several: tried in turn while some are down):\n"
          "                          a pristine --data-dir is not bootstrapped; the\n"
          "                          node asks the leader (CLUSTER.ADD) every second until it\n"
          "                          is a voter\n"
          "  --max-clients N         client connections (default 10000)\n"
          "  --max-bulk BYTES        one RESP bulk argument (default 1048576)\n"
          "  --max-args N            arguments of one command (default 64)\n"
          "  --max-key BYTES         key / lock name / session name (default 1024)\n"
          "  --max-value BYTES       value of PUT (default 1048576)\n"
          "  --max-keys-reply N      entries one KEYS or LOCKS reply returns at most (default "
          "10000)\n"
          "  --max-ttl MS            session TTL (default 604800000, 7 days)\n"
          "  --max-sessions N        live sessions (default 1000000); over a quota a command\n"
          "                          gets -NOSPACE and changes nothing\n"
          "  --max-locks N           existing locks: held, in lock-delay or with waiters\n"
          "                          (default 10000000)\n"
          "  --max-keys N            keys (default 1000000)\n"
          "  --max-waiters N         sessions queued on locks (default 1000000)\n"
          "  --max-parked N          parked XREAD ... BLOCK and ELECT.OBSERVE requests on this\n"
          "                          node, all users together (default 100000)\n"
          "  --max-data-bytes BYTES  state size: key, value and name bytes plus 128 per\n"
          "                          record (default 2147483648; docs/server.md \"Memory\")\n"
          "  --max-lockdelay MS      session LOCKDELAY (default 60000)\n"
          "  --max-wait MS           LOCK ... WAIT (default 86400000)\n"
          "  --checkpoint-min-ttl MS sessions with at least this TTL checkpoint their remaining\n"
          "                          lease through the log when idle, so they end even if\n"
          "                          leaders keep changing; shorter ones get a full TTL from\n"
          "                          each new leader (default 1000)\n"
          "  --max-pending N         queued requests per connection before reading pauses\n"
          "                          (default 1024)\n"
          "  --max-output BYTES      unread reply bytes of one connection; more closes it\n"
          "                          (default 67108864)\n"
          "  --max-output-soft BYTES unread reply bytes at which a connection's input stops\n"
          "                          being read and parsed until the client reads (default\n"
          "                          8388608)\n"
          "  --max-query-buffer BYTES\n"
          "                          input bytes of one unfinished command; more is a protocol\n"
          "                          error (default 8388608; must exceed --max-bulk)\n"
          "  --max-input-total BYTES input buffers of all connections together; over it the\n"
          "                          connection with the largest one is closed (default\n"
          "                          1073741824)\n"
          "  --idle-timeout MS       close a client connection after MS without traffic, unless\n"
          "                          it waits for the server (a parked LOCK ... WAIT, a reply\n"
          "                          being computed); 0 never (default 3600000)\n"
          "  --http-max-conns N      HTTP connections at once; at the cap a new one closes the\n"
          "                          oldest still waiting for its request (default 64)\n"
          "  --http-idle-ms MS       time an HTTP client has to send its request (default 5000)\n"
          "  --election-ms MS        Raft election timeout (default 400)\n"
          "  --heartbeat-ms MS       Raft heartbeat (default 40)\n"
          "  --snapshot-threshold N  fewest entries between snapshots (default 16384; more\n"
          "                          for a large state: about its size in log bytes)\n"
          "  --snapshot-trailing N   entries kept after a snapshot (default 4096)\n"
          "  --snapshot-log-bytes BYTES\n"
          "                          snapshot as soon as the log since the last one holds\n"
          "                          more than max(last snapshot, BYTES) bytes, and keep about\n"
          "                          as many bytes of trailing entries (default 67108864;\n"
          "                          0: entry counts only)\n"
          "  --lazy-ms MS            a LOCK that will queue waits up to MS for another command\n"
          "                          to share its log entry (default 1; 0: never waits)\n"
          "  --tick-ms MS            the leader's timer tick: how late past its deadline a\n"
          "                          lease expiry, WAIT timeout or lock-delay end is proposed\n"
          "                          at most (default 5)\n"
          "  --max-log-format N      for upgrade testing only: read and report log format N\n"
          "                          (1 = the previous release); default the newest (2)\n"
          "  --event-history N       events kept in memory for XREAD (default 100000); an older\n"
          "                          id gets -COMPACTED\n"
          "  --event-history-bytes BYTES\n"
          "                          memory those events may take (default 67108864)\n"
          "  --event-value-max BYTES a PUT's value longer than this is streamed as value_len\n"
          "                          only (default 4096)\n"
          "  --event-buffer BYTES    unread XREAD reply bytes a connection may hold: one reply\n"
          "                          stops at it, a reader past it gets -SLOWREADER and is\n"
          "                          closed (default 4194304)\n"
          "  --log-level LEVEL       debug | info | warn | error (default info)\n"
          "  --log-format FORMAT     text | json: one JSON object per line (default text)\n"
          "  --acl-file PATH         users and permissions (docs/security.md); clients must\n"
          "                          AUTH. Reloaded on SIGHUP (a malformed file keeps the\n"
          "                          old rules)\n"
          "  --peer-tls-cert FILE    this node's certificate (PEM chain) for mutual TLS on the\n"
          "                          Raft port; needs --peer-tls-key and --peer-tls-ca\n"
          "  --peer-tls-key FILE     its private key (PEM)\n"
          "  --peer-tls-ca FILE      the CA (PEM) every peer's certificate must chain to\n"
          "                          (the three are reloaded on SIGHUP for new connections)\n"
          "  --peer-cert-name PATTERN\n"
          "                          the name member N's peer certificate carries (SAN DNS\n"
          "                          name, or CN without one), %d standing for N; a peer\n"
          "                          certificate also needs extendedKeyUsage serverAuth and\n"
          "                          clientAuth (default fencelock-node-%d)\n"
          "  --peer-ca-shared-with-clients\n"
          "                          start although --peer-tls-ca and --tls-ca trust a\n"
          "                          certificate in common (otherwise refused)\n"
          "  --insecure-raft         allow --raft-listen on a non-loopback address without\n"
          "                          peer TLS (otherwise refused)\n"
          "  --raft-handshake-timeout MS\n"
          "                          an inbound Raft connection slower to complete TLS and\n"
          "                          libraft's handshake is closed (default 5000)\n"
          "  --raft-max-links N      inbound Raft connections at once (default 64)\n"
          "  --raft-max-links-per-address N\n"
          "                          of them from one IP address (default 16)\n"
          "  --raft-max-handshakes N inbound Raft connections still in their handshake at\n"
          "                          once (default 16)\n"
          "  --raft-max-handshakes-per-address N\n"
          "                          of them from one IP address (default 8)\n"
          "  --raft-handshake-rate N new inbound Raft connections a second, over all\n"
          "                          addresses, with a burst of as many (default 100)\n"
          "  --announce-any-host     accept a member's CLUSTER.ANNOUNCE of a client address\n"
          "                          whose host differs from its Raft address's host\n"
          "  --insecure-no-auth      allow --listen on a non-loopback address without\n"
          "                          --acl-file (otherwise refused)\n"
          "  --peer-user NAME        the user this node authenticates as (AUTH) before its\n"
          "                          CLUSTER.ANNOUNCE and --join's CLUSTER.ADD; needs the peer\n"
          "                          (or admin) permission. Required with --acl-file when\n"
          "                          --initial-cluster has several members or --join is given\n"
          "  --peer-password-file FILE\n"
          "                          --peer-user's password: the file's first line (re-read on\n"
          "                          SIGHUP); else the environment's FENCELOCK_PEER_PASSWORD\n"
          "  --audit-log PATH        append one JSON line per security event (AUTH, NOPERM,\n"
          "                          CLUSTER.* changes, ACL reloads); reopened on SIGHUP\n"
          "  --tls-cert FILE --tls-key FILE\n"
          "                          the client port speaks TLS only (PEM certificate chain\n"
          "                          and key; TLS 1.2+). Reloaded on SIGHUP (a bad pair\n"
          "                          keeps the old one). This node's calls to other members\n"
          "                          (CLUSTER.ANNOUNCE, --join) use TLS and this pair too\n"
          "  --tls-ca FILE           CA certificates client certificates (and other members'\n"
          "                          certificates, for this node's calls) must chain to;\n"
          "                          needed by --tls-cert on a cluster of several members\n"
          "  --tls-client-auth none|optional|require\n"
          "                          ask for a client certificate (default none)\n"
          "  --tls-user-from-cn      the client certificate's CN is the ACL user the\n"
          "                          connection is authenticated as (needs require and\n"
          "                          --acl-file)\n"
          "  --tls-handshake-timeout MS\n"
          "                          a client slower to finish its handshake is closed\n"
          "                          (default 10000)\n"
          "  --token-key FILE[,FILE2]\n"
          "                          HMAC key(s) of FENCE.SIGN (signs with FILE) and\n"
          "                          FENCE.VERIFY (accepts both: rotation); each at least 16\n"
          "                          bytes, one trailing newline dropped. Re-read on SIGHUP\n"
          "                          (a bad file keeps the old keys). Every member needs the\n"
          "                          same files\n"
          "  --auth-threads N        threads verifying AUTH passwords (Argon2id, 64 MiB each),\n"
          "                          apart from libuv's pool that the Raft disk path uses\n"
          "                          (default 2)\n"
          "  --auth-queue N          AUTHs waiting for a verification thread; one more is\n"
          "                          answered -TRYAGAIN at once (default 32)\n"
          "  --max-unauth-clients N  connections not yet authenticated (--acl-file), in all\n"
          "                          (default 1000)\n"
          "  --max-unauth-per-addr N the same from one client address (default 256)\n"
          "  --auth-timeout MS       close a connection not authenticated MS after it was\n"
          "                          accepted (--acl-file); 0 never (default 10000)\n"
          "  --max-output-preauth BYTES\n"
          "                          unread reply bytes of a connection before it\n"
          "                          authenticates (--acl-file) (default 65536)\n"
          "  --max-output-total BYTES\n"
          "                          unread reply bytes of all connections together; over it\n"
          "                          the connection holding the most is closed (default\n"
          "                          1073741824)\n"
          "  --tls-max-handshakes N  TLS handshakes in progress on the client port; more\n"
          "                          connections are closed at once (default 256)\n"
          "  --tls-max-handshakes-per-addr N\n"
          "                          the same from one client address (default 32)\n"
          "  --auth-fail-rate N      failed AUTHs a second (all addresses) past which every\n"
          "                          AUTH that misses the cache is refused without a hash\n"
          "                          until the next second (default 100)\n"
          "  --security-log-rate N   AUTH-failure and NOPERM log (and audit) lines a second;\n"
          "                          the rest are counted and reported (default 20)\n"
          "  --tcp-keepalive S       TCP keepalive on client connections after S idle\n"
          "                          seconds; 0 off (default 300)\n"
          "  --version, -V           print the version and exit\n"
          "  --hash-password         read a password from stdin, print its HASH for\n"
          "                          --acl-file, exit (must be the only flag)\n"
          "  --help                  this text\n",
          f);
}

/* A listen address: "host:port" (proto.h's grammar and limit) -> host (brackets of an IPv6
 * literal removed: it is handed to uv_ip6_addr), port. */
static int parse_hostport(const char *s, char host[PROTO_ADDR_BUF], int *port)
{
    size_t n = strlen(s);
    return proto_addr_valid(s, n) ? proto_addr_parse(s, n, host, PROTO_ADDR_BUF, port) : -1;
}

/* An address kept as given (raft address, --join member): it must fit a PROTO_ADDR_BUF. */
static bool valid_hostport(const char *v)
{
    return proto_addr_valid(v, strlen(v));
}

/* The next item of a comma-separated list into item (NUL-terminated), *v moved past it and its
 * comma. -1 for an empty or too long item. */
static int next_item(const char **v, char *item, size_t cap)
{
    size_t n = strcspn(*v, ",");
    if (n == 0 || n >= cap)
        return -1;
    memcpy(item, *v, n);
    item[n] = 0;
    *v += n + ((*v)[n] == ',');
    return 0;
}

/* "h:p[,h:p...]": 1 to RN_MAX_PEERS client addresses, none empty. */
static int parse_join(struct srv_config *c, const char *v)
{
    c->n_join = 0;
    do {
        if (c->n_join == RN_MAX_PEERS || next_item(&v, c->join[c->n_join], sizeof(c->join[0])) ||
            !valid_hostport(c->join[c->n_join]))
            return -1;
        c->n_join++;
    } while (*v);
    return v[-1] == ',' ? -1 : 0; /* a trailing comma is an empty last item */
}

/* "1=127.0.0.1:7481,2=127.0.0.1:7491,3=127.0.0.1:7501": id = raft address, ids unique. */
static int parse_cluster(struct srv_config *c, const char *v)
{
    char item[CLUSTER_ITEM_BUF];
    c->n_peers = 0;
    while (*v) {
        if (c->n_peers == RN_MAX_PEERS || next_item(&v, item, sizeof(item)))
            return -1;
        char *eq = strchr(item, '=');
        uint64_t id;
        if (!eq)
            return -1;
        *eq = 0;
        struct rn_peer *p = &c->peers[c->n_peers];
        if (num_parse_u64_str(item, 1, NODE_ID_MAX, &id) || !valid_hostport(eq + 1))
            return -1;
        for (size_t i = 0; i < c->n_peers; i++)
            if (c->peers[i].id == id)
                return -1;
        p->id = id;
        snprintf(p->raft_address, sizeof(p->raft_address), "%s", eq + 1);
        c->n_peers++;
    }
    return c->n_peers ? 0 : -1;
}

/* This node must be in --initial-cluster; its entry gives the raft address. */
static int check_cluster(struct srv_config *c)
{
    for (size_t i = 0; i < c->n_peers; i++) {
        if (c->peers[i].id != c->id)
            continue;
        if (c->raft_listen_set && strcmp(c->raft_address, c->peers[i].raft_address)) {
            fprintf(stderr,
                    "fencelockd: --raft-listen %s differs from this node's entry %s in "
                    "--initial-cluster\n",
                    c->raft_address, c->peers[i].raft_address);
            return -1;
        }
        snprintf(c->raft_address, sizeof(c->raft_address), "%s", c->peers[i].raft_address);
        return 0;
    }
    fprintf(stderr, "fencelockd: node id %llu is not in --initial-cluster\n",
            (unsigned long long)c->id);
    return -1;
}

/* The --tls-* flags with a string value: 0, -1 bad value, 1 not one of them. */
static int set_tls(struct tls_config *t, const char *flag, const char *v)
{
    char *dst = !strcmp(flag, "--tls-cert")  ? t->cert
                : !strcmp(flag, "--tls-key") ? t->key
                : !strcmp(flag, "--tls-ca")  ? t->ca
                                             : NULL;
    if (!strcmp(flag, "--tls-client-auth"))
        return tls_client_auth_parse(v, &t->client_auth);
    if (!dst)
        return 1;
    if (!*v || strlen(v) >= TLS_PATH_MAX)
        return -1;
    snprintf(dst, TLS_PATH_MAX, "%s", v);
    return 0;
}

/* Redis's protected mode, made explicit: anyone who reaches a public client port could run
 * every command, so that takes users (--acl-file) or saying so (--insecure-no-auth). */
static int check_protected(const struct srv_config *c)
{
    if (c->acl_file[0] || c->insecure_no_auth || srv_host_loopback(c->listen_host))
        return 0;
    fprintf(stderr,
            "fencelockd: refusing to listen for clients on %s without --acl-file: anyone who "
            "can reach it could run every command. Give --acl-file PATH (docs/security.md), "
            "listen on 127.0.0.1, or pass --insecure-no-auth to accept the risk\n",
            c->listen_host);
    return -1;
}

/* A Raft port anyone can reach accepts forged log entries unless peers must prove who they
 * are (peer TLS): that takes the TLS flags or saying so (--insecure-raft). */
static int check_raft_exposed(const struct srv_config *c)
{
    char host[PROTO_ADDR_BUF];
    int port;
    if (c->peer_tls_cert[0] || c->insecure_raft || c->recover || c->restore[0])
        return 0; /* --recover and --restore write the data dir and exit: nothing listens */
    if (proto_addr_parse(c->raft_address, strlen(c->raft_address), host, sizeof(host), &port) ==
            0 &&
        srv_host_loopback(host))
        return 0;
    fprintf(stderr,
            "fencelockd: refusing --raft-listen %s without peer TLS: anyone who can reach a "
            "non-loopback Raft port could forge log entries. Give --peer-tls-cert, "
            "--peer-tls-key and --peer-tls-ca (docs/security.md), listen on 127.0.0.1, or pass "
            "--insecure-raft to accept the risk\n",
            c->raft_address);
    return -1;
}

/* A peer CA that also signs client certificates hands every application a certificate the
 * Raft port's chain check accepts: refused unless the operator says it is meant. */
static int check_peer_ca(const struct srv_config *c)
{
    if (!c->peer_tls_ca[0] || !c->tls.ca[0] || c->peer_ca_shared)
        return 0;
    char err[300];
    int shared = srv_pem_share_cert(c->peer_tls_ca, c->tls.ca, err, sizeof err);
    if (shared < 0) {
        fprintf(stderr, "fencelockd: --peer-tls-ca %s / --tls-ca %s: %s\n", c->peer_tls_ca,
                c->tls.ca, err);
        return -1;
    }
    if (!shared)
        return 0;
    fprintf(stderr,
            "fencelockd: refusing to start: --peer-tls-ca %s and --tls-ca %s trust the same "
            "certificate, so a client certificate could be presented on the Raft port. Use a "
            "CA of its own for the members (docs/security.md), or pass "
            "--peer-ca-shared-with-clients to accept the risk\n",
            c->peer_tls_ca, c->tls.ca);
    return -1;
}

/* With client TLS, this node's calls to other members (announce, --join) verify them against
 * --tls-ca before sending the peer password; without it they could verify nothing. */
static int check_member_tls(const struct srv_config *c)
{
    if (!c->tls.cert[0] || c->tls.ca[0] || (c->n_peers <= 1 && !c->n_join))
        return 0;
    fprintf(stderr, "fencelockd: --tls-cert on a cluster of several members needs --tls-ca: "
                    "this node's calls to the other members' client ports verify their "
                    "certificates against it (never against the system's CAs)\n");
    return -1;
}

/* Peer TLS is mutual: a node with a certificate but no CA (or the reverse) would either accept
 * any peer or be unable to prove itself, so a partial set is refused, not guessed at. */
static int check_peer_tls(const struct srv_config *c)
{
    int n = !!c->peer_tls_cert[0] + !!c->peer_tls_key[0] + !!c->peer_tls_ca[0];
    if (n == 0 || n == 3)
        return 0;
    fprintf(stderr, "fencelockd: --peer-tls-cert, --peer-tls-key and --peer-tls-ca go together: "
                    "give all three (mutual TLS on the Raft port) or none\n");
    return -1;
}

struct num_flag {
    const char *name;
    size_t off;
    int is_size; /* size_t (1), uint64_t (0) or unsigned (2) */
    uint64_t min, max;
};

#define NF(n, field, kind, lo, hi)                                                                 \
    {                                                                                              \
        n, offsetof(struct srv_config, field), kind, lo, hi                                        \
    }
static const struct num_flag num_flags[] = {
    NF("--id", id, 0, 1, NODE_ID_MAX),
    NF("--max-clients", max_clients, 1, 1, 1000000),
    NF("--max-bulk", max_bulk, 1, 16, FSM_MAX_VALUE + 1024),
    NF("--max-args", max_args, 1, 4, 1u << 20),
    NF("--max-key", max_key, 1, 1, FSM_MAX_NAME),
    NF("--max-value", max_value, 1, 0, FSM_MAX_VALUE),
    NF("--max-keys-reply", max_keys_reply, 1, 1, 10000000),
    NF("--max-pending", max_pending, 1, 1, 1u << 20),
    NF("--max-output", max_output, 1, 1024, 1ull << 40),
    NF("--max-output-soft", max_output_soft, 1, 1024, 1ull << 40),
    NF("--max-query-buffer", max_query_buffer, 1, 1024, 1ull << 40),
    NF("--max-input-total", max_input_total, 1, 65536, 1ull << 40),
    NF("--idle-timeout", idle_timeout, 0, 0, 1ull << 40),
    NF("--tls-handshake-timeout", tls.handshake_ms, 0, 10, 3600000),
    NF("--http-max-conns", http_max_conns, 2, 1, 100000),
    NF("--http-idle-ms", http_idle_ms, 0, 10, 3600000),
    NF("--max-ttl", max_ttl, 0, 1, 1ull << 40),
    NF("--max-sessions", max_sessions, 0, 1, 1ull << 40),
    NF("--max-locks", max_locks, 0, 1, 1ull << 40),
    NF("--max-keys", max_keys, 0, 1, 1ull << 40),
    NF("--max-waiters", max_waiters, 0, 1, 1ull << 40),
    NF("--max-parked", max_parked, 0, 1, 1ull << 40),
    NF("--max-data-bytes", max_data_bytes, 0, 4096, 1ull << 50),
    NF("--max-lockdelay", max_lockdelay, 0, 0, 1ull << 40),
    NF("--max-wait", max_wait, 0, 1, 1ull << 40),
    NF("--checkpoint-min-ttl", checkpoint_min_ttl, 0, 1, 1ull << 40),
    NF("--election-ms", election_ms, 2, 10, 60000),
    NF("--heartbeat-ms", heartbeat_ms, 2, 1, 60000),
    NF("--snapshot-threshold", snapshot_threshold, 2, 2, 1u << 30),
    NF("--snapshot-trailing", snapshot_trailing, 2, 1, 1u << 30),
    NF("--snapshot-log-bytes", snapshot_log_bytes, 0, 0, 1ull << 40),
    NF("--lazy-ms", lazy_ms, 2, 0, 1000),
    NF("--tick-ms", tick_ms, 2, 1, 60000),
    NF("--max-log-format", max_log_format, 2, 1, FSM_FORMAT_MAX),
    NF("--event-history", event_history, 1, 1, 100000000),
    NF("--event-history-bytes", event_history_bytes, 1, 4096, 1ull << 40),
    NF("--event-value-max", event_value_max, 1, 0, FSM_MAX_VALUE),
    NF("--event-buffer", event_buffer, 1, 1024, 1ull << 40),
    NF("--raft-handshake-timeout", raft_handshake_ms, 2, 10, 3600000),
    NF("--raft-max-links", raft_max_links, 2, 1, 100000),
    NF("--raft-max-links-per-address", raft_max_links_per_addr, 2, 1, 100000),
    NF("--raft-max-handshakes", raft_max_handshakes, 2, 1, 100000),
    NF("--raft-max-handshakes-per-address", raft_max_handshakes_per_addr, 2, 1, 100000),
    NF("--raft-handshake-rate", raft_handshake_rate, 2, 1, 1000000),
    /* before AUTH (limits.h) */
    NF("--auth-threads", auth_threads, 2, 1, 64),
    NF("--auth-queue", auth_queue, 1, 1, 1000000),
    NF("--max-unauth-clients", max_unauth_clients, 1, 1, 1000000),
    NF("--max-unauth-per-addr", max_unauth_per_addr, 1, 1, 1000000),
    NF("--auth-timeout", auth_timeout, 0, 0, 1ull << 40),
    NF("--max-output-preauth", max_output_preauth, 1, 1024, 1ull << 40),
    NF("--max-output-total", max_output_total, 1, 65536, 1ull << 50),
    NF("--tls-max-handshakes", tls_max_handshakes, 2, 1, 1000000),
    NF("--tls-max-handshakes-per-addr", tls_max_handshakes_per_addr, 2, 1, 1000000),
    NF("--auth-fail-rate", auth_fail_rate, 2, 1, 1000000),
    NF("--security-log-rate", security_log_rate, 2, 1, 1000000),
    NF("--tcp-keepalive", tcp_keepalive, 0, 0, 86400),
};

static int set_num(struct srv_config *c, const struct num_flag *f, const char *v, const char *where)
{
    uint64_t x;
    if (num_parse_u64_str(v, f->min, f->max, &x)) {
        fprintf(stderr, "fencelockd: %s%s wants a number in %llu..%llu, got '%s'\n", where, f->name,
                (unsigned long long)f->min, (unsigned long long)f->max, v);
        return -1;
    }
    char *p = (char *)c + f->off;
    if (f->is_size == 1)
        *(size_t *)p = (size_t)x;
    else if (f->is_size == 2)
        *(unsigned *)p = (unsigned)x;
    else
        *(uint64_t *)p = x;
    return 0;
}

/* A non-empty string flag that must fit its field. */
static int copy_path(char *dst, size_t cap, const char *v)
{
    if (!*v || strlen(v) >= cap)
        return -1;
    snprintf(dst, cap, "%s", v);
    return 0;
}

/* Under --acl-file every member's CLUSTER.ANNOUNCE (and a joiner's CLUSTER.ADD) must
 * authenticate, or followers never learn the leader's client address (-NOTLEADER without
 * one) and a joiner never joins: a node that is given other members refuses to start without
 * peer credentials rather than run half-working. A single-node cluster needs none until it
 * grows; its refused announces are logged then. */
static int check_peer(const struct srv_config *c)
{
    if (c->peer_password_file[0] && !c->peer_user[0]) {
        fprintf(stderr, "fencelockd: --peer-password-file needs --peer-user\n");
        return -1;
    }
    if (!c->acl_file[0] || c->peer_user[0] || (c->n_peers <= 1 && !c->n_join))
        return 0;
    fprintf(stderr,
            "fencelockd: --acl-file on a cluster of several members needs peer credentials: "
            "--peer-user NAME with --peer-password-file FILE (or FENCELOCK_PEER_PASSWORD), a "
            "user with the peer permission. Without them this node could not announce its "
            "address or join (docs/security.md)\n");
    return -1;
}

/* --token-key FILE[,FILE2]: one or two paths, none empty (a path cannot hold a comma). */
static int parse_token_keys(struct srv_config *c, const char *v)
{
    size_t n = 0;
    for (const char *p = v;; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == TSIG_MAX_KEYS || !len || len >= TSIG_PATH_MAX)
            return -1;
        memcpy(c->token_key[n], p, len);
        c->token_key[n][len] = 0;
        if (!comma)
            break;
        p = comma + 1;
    }
    c->n_token_keys = n + 1;
    return 0;
}

static int set_str(struct srv_config *c, const char *flag, const char *v)
{
    if (!strcmp(flag, "--data-dir")) {
        if (strlen(v) >= sizeof(c->data_dir) || !*v)
            return -1;
        snprintf(c->data_dir, sizeof(c->data_dir), "%s", v);
        return 0;
    }
    if (!strcmp(flag, "--listen"))
        return parse_hostport(v, c->listen_host, &c->listen_port);
    if (!strcmp(flag, "--raft-listen")) {
        if (!valid_hostport(v))
            return -1;
        snprintf(c->raft_address, sizeof(c->raft_address), "%s", v);
        c->raft_listen_set = true;
        return 0;
    }
    if (!strcmp(flag, "--initial-cluster")) {
        if (c->recover)
            return -1;
        return parse_cluster(c, v);
    }
    if (!strcmp(flag, "--recover")) {
        if (c->n_peers)
            return -1;
        c->recover = true;
        return parse_cluster(c, v);
    }
    if (!strcmp(flag, "--join"))
        return parse_join(c, v);
    if (!strcmp(flag, "--restore"))
        return copy_path(c->restore, sizeof(c->restore), v);
    if (!strcmp(flag, "--http-listen")) {
        if (!strcmp(v, "off")) {
            c->http_port = 0;
            return 0;
        }
        return parse_hostport(v, c->http_host, &c->http_port);
    }
    if (!strcmp(flag, "--log-level"))
        return log_level_parse(v, &c->log_level);
    if (!strcmp(flag, "--log-format"))
        return log_format_parse(v, &c->log_format);
    char *tls = !strcmp(flag, "--peer-tls-cert")  ? c->peer_tls_cert
                : !strcmp(flag, "--peer-tls-key") ? c->peer_tls_key
                : !strcmp(flag, "--peer-tls-ca")  ? c->peer_tls_ca
                                                  : NULL;
    if (tls) {
        if (strlen(v) >= sizeof(c->peer_tls_cert) || !*v)
            return -1;
        snprintf(tls, sizeof(c->peer_tls_cert), "%s", v);
        return 0;
    }
    if (!strcmp(flag, "--peer-cert-name")) {
        if (!rn_tp_name_pattern_ok(v) || strlen(v) >= sizeof(c->peer_cert_name))
            return -1;
        snprintf(c->peer_cert_name, sizeof(c->peer_cert_name), "%s", v);
        return 0;
    }
    if (!strncmp(flag, "--tls-", 6))
        return set_tls(&c->tls, flag, v);
    if (!strcmp(flag, "--acl-file"))
        return copy_path(c->acl_file, sizeof(c->acl_file), v);
    if (!strcmp(flag, "--peer-password-file"))
        return copy_path(c->peer_password_file, sizeof(c->peer_password_file), v);
    if (!strcmp(flag, "--audit-log"))
        return copy_path(c->audit_log, sizeof(c->audit_log), v);
    if (!strcmp(flag, "--token-key"))
        return parse_token_keys(c, v);
    if (!strcmp(flag, "--peer-user")) {
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p <= ' ' || *p == 0x7f)
                return -1; /* as acl.c's user names: no spaces or control bytes */
        return copy_path(c->peer_user, sizeof(c->peer_user), v);
    }
    return 1; /* not a string flag */
}

/* The numeric settings and set_str, for the list of every setting in config_src.c. */
size_t cfg_num_count(void)
{
    return sizeof(num_flags) / sizeof(num_flags[0]);
}

const char *cfg_num_name(size_t i)
{
    return num_flags[i].name;
}

int cfg_num_set(struct srv_config *c, size_t i, const char *v, const char *where)
{
    return set_num(c, &num_flags[i], v, where);
}

uint64_t cfg_num_get(const struct srv_config *c, size_t i)
{
    const struct num_flag *f = &num_flags[i];
    const char *p = (const char *)c + f->off;
    return f->is_size == 1   ? *(const size_t *)p
           : f->is_size == 2 ? *(const unsigned *)p
                             : *(const uint64_t *)p;
}

int cfg_str_set(struct srv_config *c, const char *flag, const char *v)
{
    return set_str(c, flag, v);
}

int cfg_check(struct srv_config *c)
{
    if (c->n_join && c->n_peers) {
        fprintf(stderr, "fencelockd: --join and --initial-cluster exclude each other\n");
        return -1;
    }
    if (c->n_peers && check_cluster(c))
        return -1;
    if (c->restore[0] && (c->n_join || c->recover)) {
        fprintf(stderr, "fencelockd: --restore makes a new cluster: not with --join or "
                        "--recover\n");
        return -1;
    }
    if (c->max_query_buffer <= c->max_bulk) {
        fprintf(stderr, "fencelockd: --max-query-buffer must be larger than --max-bulk\n");
        return -1;
    }
    if (c->heartbeat_ms >= c->election_ms) {
        fprintf(stderr, "fencelockd: --heartbeat-ms must be below --election-ms\n");
        return -1;
    }
    char err[200];
    if (tls_config_check(&c->tls, c->acl_file[0] != 0, err, sizeof err)) {
        fprintf(stderr, "fencelockd: %s\n", err);
        return -1;
    }
    return check_peer_tls(c) || check_peer(c) || check_protected(c) || check_raft_exposed(c) ||
                   check_member_tls(c) || check_peer_ca(c)
               ? -1
               : 0;
}
