/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_cluster.c — CLUSTER.INFO / MEMBERS / ANNOUNCE (the member table) and the membership
 * changes CLUSTER.ADD / REMOVE / TRANSFER. Every change this node accepts and starts is written
 * to --audit-log (cluster.add ...) with the user and address that asked; its outcome is the
 * command's reply.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "fsm/waitgraph.h"
#include "server/cmd/cmd.h"

/* Key-value pairs in a CLUSTER.INFO reply and in each CLUSTER.MEMBERS row. */
#define CLUSTER_INFO_FIELDS 17
#define MEMBER_ROW_FIELDS 6

void clusterInfoCommand(struct srv_req *r)
{
    struct srv *s = r->s;
    uint64_t lid;
    const char *laddr;
    struct rn_change_view chg;
    rn_leader(s->rn, &lid, &laddr);
    rn_change_info(s->rn, &chg);
    resp_w_map(r->out, r->proto, CLUSTER_INFO_FIELDS);
    resp_w_bulk_str(r->out, "id");
    resp_w_uint(r->out, s->cfg.id);
    resp_w_bulk_str(r->out, "leader");
    srv_leader_client_address(s, &s->scratch);
    resp_w_bulk(r->out, s->scratch.p ? s->scratch.p : "", s->scratch.len);
    resp_w_bulk_str(r->out, "role");
    resp_w_bulk_str(r->out, srv_role_name(s->cluster.role));
    resp_w_bulk_str(r->out, "ready");
    resp_w_uint(r->out, srv_ready(s) ? 1 : 0);
    resp_w_bulk_str(r->out, "leader_id");
    resp_w_uint(r->out, lid);
    resp_w_bulk_str(r->out, "term");
    resp_w_uint(r->out, rn_term(s->rn));
    resp_w_bulk_str(r->out, "commit_index");
    resp_w_uint(r->out, rn_commit_index(s->rn));
    resp_w_bulk_str(r->out, "applied_index");
    resp_w_uint(r->out, rn_applied_index(s->rn));
    resp_w_bulk_str(r->out, "revision");
    resp_w_uint(r->out, fsm_revision(s->fsm));
    /* The membership change in progress as this node sees it (rn_change_info). */
    resp_w_bulk_str(r->out, "change");
    resp_w_bulk_str(r->out, chg.kind ? chg.kind : "none");
    resp_w_bulk_str(r->out, "change_id");
    resp_w_uint(r->out, chg.id);
    resp_w_bulk_str(r->out, "change_index");
    resp_w_uint(r->out, chg.index);
    resp_w_bulk_str(r->out, "change_ms");
    resp_w_uint(r->out, chg.age_ms);
    /* --acl-file's rules hash: every node reads its own copy, so a mismatch shows here */
    resp_w_bulk_str(r->out, "acl");
    resp_w_bulk_str(r->out, s->auth.on ? s->auth.acl.digest : "none");
    /* the upgrade gate (format.c): the cluster's log format and the newest this node reads */
    resp_w_bulk_str(r->out, "log_format");
    resp_w_uint(r->out, fsm_format(s->fsm));
    resp_w_bulk_str(r->out, "max_log_format");
    resp_w_uint(r->out, srv_format_max(s));
    /* the deadlock search limit in force: replicated, the same on every node (settings.c) */
    resp_w_bulk_str(r->out, "deadlock_search_limit");
    resp_w_uint(r->out, fsm_deadlock_limit(s->fsm));
}

struct members_arg {
    struct srv_req *r;
    uint64_t leader;
};

static void member_row(void *arg, uint64_t id, const char *raft_address, int role)
{
    struct members_arg *ma = arg;
    struct srv_req *r = ma->r;
    struct fsm_member_view v = {0};
    resp_w_map(r->out, r->proto, MEMBER_ROW_FIELDS);
    resp_w_bulk_str(r->out, "id");
    resp_w_uint(r->out, id);
    resp_w_bulk_str(r->out, "raft_address");
    resp_w_bulk_str(r->out, raft_address);
    bool known = fsm_member_get(r->s->fsm, id, &v);
    resp_w_bulk_str(r->out, "client_address");
    resp_w_bulk(r->out, known ? v.client_addr.p : "", known ? v.client_addr.len : 0);
    /* where a follower's HTTP API redirects (307) while this member leads: "" until announced */
    char url[PROTO_ADDR_BUF + 16] = "";
    if (known && v.http_addr.len)
        snprintf(url, sizeof(url), "%s://%.*s",
                 v.http_flags & FSM_MEMBER_HTTP_TLS ? "https" : "http", (int)v.http_addr.len,
                 v.http_addr.p);
    resp_w_bulk_str(r->out, "http_url");
    resp_w_bulk_str(r->out, url);
    resp_w_bulk_str(r->out, "role");
    resp_w_bulk_str(r->out, id == ma->leader     ? "leader"
                            : role == RN_VOTER   ? "follower"
                            : role == RN_STANDBY ? "standby"
                                                 : "spare");
    resp_w_bulk_str(r->out, "leader");
    resp_w_uint(r->out, id == ma->leader ? 1 : 0);
}

static void count_server(void *arg, uint64_t id, const char *raft_address, int role)
{
    (void)id;
    (void)raft_address;
    (void)role;
    (*(size_t *)arg)++;
}

/* The Raft configuration as this node sees it, with client addresses from the member table. */
void clusterMembersCommand(struct srv_req *r)
{
    size_t n = 0;
    const char *laddr;
    struct members_arg ma = {.r = r};
    rn_leader(r->s->rn, &ma.leader, &laddr);
    rn_foreach_server(r->s->rn, count_server, &n);
    resp_w_array(r->out, n);
    rn_foreach_server(r->s->rn, member_row, &ma);
}

/* Whether the host of the client address `client` is the host of the raft address `raft`
 * (names compared without case; an IPv6 literal as written). */
static bool same_host(const struct resp_arg *client, const char *raft)
{
    char ch[PROTO_ADDR_BUF], rh[PROTO_ADDR_BUF];
    int cp, rp;
    return proto_addr_parse(client->p, client->len, ch, sizeof(ch), &cp) == 0 &&
           proto_addr_parse(raft, strlen(raft), rh, sizeof(rh), &rp) == 0 && !strcasecmp(ch, rh);
}

/* The optional tail of CLUSTER.ANNOUNCE after raft-addr: [format] [HTTP http-addr [TLS]].
 * 0, or -1 with the error replied. *http NULL when absent. */
static int announce_tail(struct srv_req *r, uint64_t *format, const struct resp_arg **http,
                         uint8_t *flags)
{
    size_t i = 4;
    *http = NULL;
    *flags = 0;
    if (i < r->argc && !resp_arg_is(&r->argv[i], "HTTP")) {
        if (cmd_arg_u64(r, i, "log format", format))
            return -1;
        i++;
    }
    if (i < r->argc && resp_arg_is(&r->argv[i], "HTTP") && i + 1 < r->argc) {
        *http = &r->argv[i + 1];
        i += 2;
        if (i < r->argc && resp_arg_is(&r->argv[i], "TLS")) {
            *flags = FSM_MEMBER_HTTP_TLS;
            i++;
        }
    }
    if (i != r->argc) {
        cmd_reply_err(r, PROTO_ERR " syntax: CLUSTER.ANNOUNCE id client-addr raft-addr [format] "
                                   "[HTTP http-addr [TLS]]");
        return -1;
    }
    if (*http && !proto_addr_valid((*http)->p, (*http)->len)) {
        cmd_reply_err(r, PROTO_ERR " http address must be host:port");
        return -1;
    }
    if (*http && fsm_format(r->s->fsm) < FSM_FORMAT_2) {
        cmd_reply_err(r, PROTO_ERR " HTTP addresses need the cluster's log format 2");
        return -1;
    }
    return 0;
}

/* CLUSTER.ANNOUNCE id client-addr raft-addr [format] [HTTP http-addr [TLS]]: a member tells
 * the leader its client address, the highest log format it reads (format.c; absent: 1, a
 * previous release) and where its HTTP port is (a follower's 307 names the leader's). */
void clusterAnnounceCommand(struct srv_req *r)
{
    uint64_t id, format = FSM_FORMAT_1;
    const struct resp_arg *http;
    uint8_t hflags;
    if (cmd_need_leader(r) || cmd_arg_u64(r, 1, "member id", &id) ||
        announce_tail(r, &format, &http, &hflags))
        return;
    const char *known = rn_server_address(r->s->rn, id);
    const struct resp_arg *client = &r->argv[2], *raft = &r->argv[3];
    if (!known || strlen(known) != raft->len || memcmp(known, raft->p, raft->len)) {
        resp_w_errorf(r->out,
                      PROTO_ERR " member %llu with that raft address is not in the configuration",
                      (unsigned long long)id);
        return;
    }
    if (!proto_addr_valid(client->p, client->len)) { /* no control bytes, a parseable port */
        cmd_reply_err(r, PROTO_ERR " client address must be host:port");
        return;
    }
    /* The leader's entry is its own to write (srv_members_on_ready, re-asserted from
     * the tick): an announce of it would send every -NOTLEADER, and the passwords of clients
     * that follow it, wherever the announcer chose. */
    if (id == r->s->cfg.id) {
        resp_w_errorf(r->out, PROTO_ERR " member %llu is the leader: it writes its own entry",
                      (unsigned long long)id);
        return;
    }
    /* The HTTP address gets the same rule: a follower's 307 sends browsers, with their
     * credentials, wherever it points. */
    if (!r->s->cfg.announce_any_host &&
        (!same_host(client, known) || (http && !same_host(http, known)))) {
        resp_w_errorf(r->out,
                      PROTO_ERR " member %llu's client and http addresses must be on the host of "
                                "its raft address %s (--announce-any-host to allow others)",
                      (unsigned long long)id, known);
        return;
    }
    if (format < FSM_FORMAT_1 || format > UINT8_MAX) {
        cmd_reply_err(r, PROTO_ERR " log format must be 1..255");
        return;
    }
    srv_format_report(r->s, id, (unsigned)format);
    r->slot->op = FSM_OP_MEMBER_SET;
    r->slot->started_ns = clock_ns();
    int rc = srv_propose_member(r->s, id, client->p, client->len, raft->p, raft->len,
                                cmd_write_done, r->slot);
    if (rc != RN_OK) {
        srv_reply_status(r->s, r->out, rc);
        return;
    }
    /* applied after the MEMBER_SET it needs; if it fails, the follower's entry stays without
       it and its next announce (a second later) tries again */
    if (http)
        srv_propose_member_http(r->s, id, http->p, http->len, hflags);
    srv_audit(r->s, r->c, "cluster.announce", "id=%llu client=%.*s raft=%.*s",
              (unsigned long long)id, (int)client->len, client->p, (int)raft->len, raft->p);
    r->async = true;
}

/* ---- membership: CLUSTER.ADD / CLUSTER.REMOVE / CLUSTER.TRANSFER ---- */

/* A raft address: host:port (proto_addr_parse's grammar), the host a name or IPv4 address of
 * [A-Za-z0-9.-] or a bracketed IPv6 literal, short enough for rn_peer: what the transport
 * (src/raft/transport_dial.c) can connect to. */
static int arg_raft_addr(struct srv_req *r, size_t i)
{
    const struct resp_arg *a = &r->argv[i];
    char host[PROTO_ADDR_BUF];
    int port;
    bool ok = a->len < sizeof(((struct rn_peer *)0)->raft_address) &&
              proto_addr_parse(a->p, a->len, host, sizeof(host), &port) == 0;
    /* A ':' can only come from a bracketed IPv6 literal: proto_addr_parse refuses it elsewhere. */
    for (const char *h = host; ok && *h; h++)
        ok = (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') ||
             *h == '.' || *h == '-' || *h == ':';
    if (!ok)
        cmd_reply_err(r, PROTO_ERR " raft address must be host:port (port 1..65535)");
    return ok ? 0 : -1;
}

static void change_reply(struct srv_slot *slot, int status, const char *msg)
{
    if (status == RN_OK)
        resp_w_simple(&slot->out, "OK");
    else if (status == RN_ERR)
        resp_w_errorf(&slot->out, PROTO_ERR " %s", msg ? msg : "membership change failed");
    else
        srv_reply_status(slot->srv, &slot->out, status);
    srv_slot_done(slot);
}

static void change_done(void *ctx, int status, const char *msg)
{
    change_reply(ctx, status, msg);
}

/* Answer a sync failure of rn_add / rn_remove / rn_transfer. */
static void change_failed(struct srv_req *r, int rc)
{
    if (rc == RN_ERR)
        resp_w_errorf(r->out, PROTO_ERR " %s", rn_errmsg(r->s->rn));
    else
        srv_reply_status(r->s, r->out, rc);
}

/* CLUSTER.ADD id raft-addr: +OK once the node is a voter (libraft catches it up first). */
/* CLUSTER.ADD id raft_addr [PROMOTE]. PROMOTE (what a joined node sends when its own log may
 * be wrong about it, members.c) only promotes a spare already in the configuration: a member
 * an operator removed is never added back by the node it removed. */
void clusterAddCommand(struct srv_req *r)
{
    uint64_t id;
    if (cmd_need_leader(r) || cmd_arg_range(r, 1, "member id", 1, CMD_MEMBER_ID_MAX, &id) ||
        arg_raft_addr(r, 2))
        return;
    bool promote_only = r->argc >= 4;
    if (r->argc > 4 || (promote_only && !resp_arg_is(&r->argv[3], "PROMOTE"))) {
        cmd_reply_err(r, PROTO_ERR " syntax error: CLUSTER.ADD id raft_addr [PROMOTE]");
        return;
    }
    char addr[PROTO_ADDR_BUF]; /* arg_raft_addr checked that it fits */
    snprintf(addr, sizeof(addr), "%.*s", (int)r->argv[2].len, r->argv[2].p);
    const char *known = rn_server_address(r->s->rn, id);
    if (rn_server_role(r->s->rn, id) == RN_VOTER) {
        resp_w_errorf(r->out, PROTO_ERR " member %llu " CLUSTER_ALREADY_VOTER,
                      (unsigned long long)id);
        return;
    }
    if (promote_only && !known) {
        resp_w_errorf(r->out,
                      PROTO_ERR " member %llu is not in the configuration (removed?): to come "
                                "back it must start again with an empty data dir and --join",
                      (unsigned long long)id);
        return;
    }
    if (known && strcmp(known, addr)) {
        resp_w_errorf(r->out, PROTO_ERR " member %llu is in the configuration at %s",
                      (unsigned long long)id, known);
        return;
    }
    int rc = rn_add(r->s->rn, id, addr, change_done, r->slot);
    if (rc != RN_OK) {
        change_failed(r, rc);
        return;
    }
    LOGI(&r->s->log, "adding member %llu at %s", (unsigned long long)id, addr);
    srv_audit(r->s, r->c, "cluster.add", "id=%llu raft=%s", (unsigned long long)id, addr);
    r->async = true;
}

struct remove_ctx {
    struct srv_slot *slot;
    uint64_t id;
};

/* The member-table entry went (or not): the configuration change already committed. */
static void member_del_done(void *ctx, int status, const struct fsm_reply *reply)
{
    struct remove_ctx *rc = ctx;
    (void)reply;
    if (status != RN_OK)
        LOGW(&rc->slot->srv->log,
             "member %llu was removed from the Raft configuration, but its client address "
             "stays in the member table: deleting it %s. Harmless: every listing follows the "
             "Raft configuration",
             (unsigned long long)rc->id,
             status == RN_NOTLEADER ? "was refused, this node is no longer the leader"
             : status == RN_UNKNOWN ? "may not have committed (leadership was lost meanwhile)"
                                    : "failed here (out of memory or shutting down)");
    change_reply(rc->slot, RN_OK, NULL);
    free(rc);
}

/* After the configuration without the member committed: delete its member-table entry. A
 * leader that removed itself is no leader any more; its entry stays (harmless: every listing
 * follows the Raft configuration) and the reply is +OK all the same. */
static void remove_done(void *ctx, int status, const char *msg)
{
    struct remove_ctx *rc = ctx;
    struct srv *s = rc->slot->srv;
    if (status != RN_OK) {
        change_reply(rc->slot, status, msg);
        free(rc);
        return;
    }
    LOGI(&s->log, "member %llu removed from the configuration", (unsigned long long)rc->id);
    struct fsm_cmd cmd = {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = rc->id}};
    int prc = srv_propose(s, &cmd, member_del_done, rc);
    if (prc != RN_OK)
        member_del_done(rc, prc, NULL);
}

/* CLUSTER.REMOVE id [FORCE]: +OK once the configuration without `id` committed. Refused, with
 * the reason, when it would leave no voter, or (unless FORCE) one voter, or voters that may not
 * be able to commit it (rn_remove_check). */
void clusterRemoveCommand(struct srv_req *r)
{
    uint64_t id;
    if (r->argc > 3) {
        resp_w_errorf(r->out, CMD_ERR_ARGS, 14, "cluster.remove");
        return;
    }
    if (cmd_need_leader(r) || cmd_arg_range(r, 1, "member id", 1, CMD_MEMBER_ID_MAX, &id))
        return;
    bool force = r->argc == 3;
    if (force && !resp_arg_is(&r->argv[2], "FORCE")) {
        cmd_reply_err(r, PROTO_ERR " syntax error: CLUSTER.REMOVE id [FORCE]");
        return;
    }
    if (!rn_server_address(r->s->rn, id)) {
        resp_w_errorf(r->out, PROTO_ERR " member %llu is not in the configuration",
                      (unsigned long long)id);
        return;
    }
    char why[256];
    int risk = rn_remove_check(r->s->rn, id, why, sizeof(why));
    if (risk == RN_REMOVE_LAST || (risk && !force)) {
        resp_w_errorf(r->out, PROTO_ERR " refused: %s", why);
        return;
    }
    if (risk)
        LOGW(&r->s->log, "CLUSTER.REMOVE %llu FORCE: %s", (unsigned long long)id, why);
    struct remove_ctx *rc = calloc(1, sizeof(*rc));
    if (!rc) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    rc->slot = r->slot;
    rc->id = id;
    int st = rn_remove(r->s->rn, id, remove_done, rc);
    if (st != RN_OK) {
        free(rc);
        change_failed(r, st);
        return;
    }
    LOGI(&r->s->log, "removing member %llu", (unsigned long long)id);
    srv_audit(r->s, r->c, "cluster.remove", "id=%llu%s", (unsigned long long)id,
              force ? " FORCE" : "");
    r->async = true;
}

/* CLUSTER.TRANSFER [id]: +OK once `id` (default: any up-to-date voter) is the leader. */
void clusterTransferCommand(struct srv_req *r)
{
    uint64_t id = 0;
    if (r->argc > 2) {
        resp_w_errorf(r->out, CMD_ERR_ARGS, 16, "cluster.transfer");
        return;
    }
    if (cmd_need_leader(r) ||
        (r->argc == 2 && cmd_arg_range(r, 1, "member id", 1, CMD_MEMBER_ID_MAX, &id)))
        return;
    if (id == r->s->cfg.id) {
        cmd_reply_err(r, PROTO_ERR " this node is already the leader");
        return;
    }
    if (id && rn_server_role(r->s->rn, id) != RN_VOTER) {
        resp_w_errorf(r->out, PROTO_ERR " member %llu is not a voter", (unsigned long long)id);
        return;
    }
    int rc = rn_transfer(r->s->rn, id, change_done, r->slot);
    if (rc != RN_OK) {
        change_failed(r, rc);
        return;
    }
    LOGI(&r->s->log, "transferring leadership to %llu", (unsigned long long)id);
    srv_audit(r->s, r->c, "cluster.transfer", "id=%llu%s", (unsigned long long)id,
              id ? "" : " (any up-to-date voter)");
    r->async = true;
}
