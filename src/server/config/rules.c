/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules.c — the rules between fencelockd's settings, checked once every source (file,
 * environment, command line) is applied, in cfg_rules_check: one setting alone is value.c's.
 * Each rule refuses to start (exit 2) with a message naming the flags involved and, for the
 * safety rules (a public port without users or peer TLS, a CA shared by clients and peers),
 * the flag that accepts the risk. Nothing here allocates; only check_cluster writes (this node's
 * Raft address from its --initial-cluster entry).
 */
#include <stdio.h>
#include <string.h>

#include "server/config/config_int.h"
#include "server/security/peer_guard.h"
#include "server/server.h"

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

/* Every rule between settings, in the order their messages are most useful. */
int cfg_rules_check(struct srv_config *c)
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
    if (c->min_max_hold > c->max_max_hold) {
        fprintf(stderr, "fencelockd: --min-max-hold must not be above --max-max-hold\n");
        return -1;
    }
    if (c->heartbeat_ms >= c->election_ms) {
        fprintf(stderr, "fencelockd: --heartbeat-ms must be below --election-ms\n");
        return -1;
    }
    char err[200];
    if (!c->http_tls_cert[0] != !c->http_tls_key[0]) {
        fprintf(stderr, "fencelockd: --http-tls-cert and --http-tls-key go together (the HTTP "
                        "port's own certificate and its key)\n");
        return -1;
    }
    if (c->http_tls_cert[0] && !c->http_port) {
        fprintf(stderr,
                "fencelockd: --http-tls-cert needs the HTTP port (not --http-listen off)\n");
        return -1;
    }
    if (c->http_tls_cert[0])
        c->http_tls = true; /* the pair says TLS on the HTTP port */
    if (c->http_tls && !c->tls.cert[0] && !c->http_tls_cert[0]) {
        fprintf(stderr, "fencelockd: --http-tls needs --tls-cert and --tls-key (the client "
                        "port's certificate) or --http-tls-cert and --http-tls-key (its own)\n");
        return -1;
    }
    if (tls_config_check(&c->tls, c->acl_file[0] != 0, err, sizeof err)) {
        fprintf(stderr, "fencelockd: %s\n", err);
        return -1;
    }
    return check_peer_tls(c) || check_peer(c) || check_protected(c) || check_raft_exposed(c) ||
                   check_member_tls(c) || check_peer_ca(c)
               ? -1
               : 0;
}
