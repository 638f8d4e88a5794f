/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_info.c — PING, HELLO and INFO: what a client asks about the connection and the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/cmd/cmd.h"

void pingCommand(struct srv_req *r)
{
    if (r->argc == 2)
        resp_w_bulk(r->out, r->argv[1].p, r->argv[1].len);
    else if (r->argc == 1)
        resp_w_simple(r->out, "PONG");
    else
        resp_w_errorf(r->out, CMD_ERR_ARGS, 4, "ping");
}

/* HELLO [protover [AUTH user password] [SETNAME name]]. With --acl-file an unauthenticated
   connection must authenticate in the same HELLO (Redis's rule and text). */
void helloCommand(struct srv_req *r)
{
    uint64_t v = (uint64_t)r->proto;
    struct srv_hello_opts o;
    if (r->argc >= 2 && (resp_parse_u64(r->argv[1].p, r->argv[1].len, &v) || v < 2 || v > 3)) {
        cmd_reply_err(r, PROTO_NOPROTO " unsupported protocol version");
        return;
    }
    if (srv_hello_options(r, &o) != 0) /* cmd_conn.c */
        return;
    if (o.user) {
        srv_auth_begin(r, o.user, o.pw, (int)v, o.setname);
        return;
    }
    if (r->s->auth.on && r->c && !r->c->user) {
        cmd_reply_err(r, PROTO_NOAUTH " HELLO must be called with the client already "
                                      "authenticated, otherwise the HELLO <proto> AUTH <user> "
                                      "<pass> option can be used to authenticate the client and "
                                      "select the RESP protocol version at the same time");
        return;
    }
    if (o.setname && r->c)
        snprintf(r->c->name, sizeof r->c->name, "%.*s", (int)o.setname->len, o.setname->p);
    srv_hello_reply(r->s, r->c, r->out, (int)v);
}

static void info_server(struct srv *s, struct buf *b)
{
    buf_printf(b,
               "# Server\r\nfencelock_version:%s\r\nnode_id:%llu\r\nprocess_id:%d\r\n"
               "tcp_port:%d\r\nuptime_in_seconds:%llu\r\n",
               FENCELOCK_VERSION, (unsigned long long)s->cfg.id, (int)uv_os_getpid(),
               s->cfg.listen_port, (unsigned long long)((clock_ms() - s->started_ms) / 1000));
}

static void info_clients(struct srv *s, struct buf *b)
{
    buf_printf(b, "# Clients\r\nconnected_clients:%zu\r\nmaxclients:%zu\r\n", s->net.nconns,
               s->cfg.max_clients);
}

static void info_raft(struct srv *s, struct buf *b)
{
    uint64_t lid;
    const char *laddr;
    rn_leader(s->rn, &lid, &laddr);
    buf_printf(b,
               "# Raft\r\nrole:%s\r\nready:%d\r\nterm:%llu\r\nleader_id:%llu\r\n"
               "commit_index:%llu\r\napplied_index:%llu\r\n",
               srv_role_name(s->cluster.role), srv_ready(s) ? 1 : 0,
               (unsigned long long)rn_term(s->rn), (unsigned long long)lid,
               (unsigned long long)rn_commit_index(s->rn),
               (unsigned long long)rn_applied_index(s->rn));
}

static void info_fsm(struct srv *s, struct buf *b)
{
    struct fsm_stats st;
    fsm_stats(s->fsm, &st);
    buf_printf(b,
               "# Fsm\r\nrevision:%llu\r\nsessions:%llu\r\nlocks_held:%llu\r\n"
               "waiters:%llu\r\nlocks_in_delay:%llu\r\nkeys:%llu\r\n",
               (unsigned long long)fsm_revision(s->fsm), (unsigned long long)st.sessions,
               (unsigned long long)st.locks_held, (unsigned long long)st.waiters,
               (unsigned long long)st.locks_in_delay, (unsigned long long)st.keys);
}

static void info_stats(struct srv *s, struct buf *b)
{
    buf_printf(b,
               "# Stats\r\ntotal_commands_processed:%llu\r\ntotal_connections_received:%llu\r\n"
               "rejected_connections:%llu\r\ngrants:%llu\r\nexpirations:%llu\r\n"
               "fence_rejections:%llu\r\n",
               (unsigned long long)s->m.commands, (unsigned long long)s->m.connections_total,
               (unsigned long long)s->m.connections_rejected, (unsigned long long)s->m.grants,
               (unsigned long long)s->m.expirations, (unsigned long long)s->m.fence_rejections);
}

static const struct {
    const char *name;
    void (*fn)(struct srv *s, struct buf *b);
} info_sections[] = {{"server", info_server},
                     {"clients", info_clients},
                     {"raft", info_raft},
                     {"fsm", info_fsm},
                     {"stats", info_stats}};

/* INFO [section]: Redis' text form; no argument, "all", "default" or "everything" = all. */
void infoCommand(struct srv_req *r)
{
    size_t n = sizeof(info_sections) / sizeof(info_sections[0]);
    bool all = r->argc == 1 || resp_arg_is(&r->argv[1], "all") ||
               resp_arg_is(&r->argv[1], "default") || resp_arg_is(&r->argv[1], "everything");
    if (r->argc > 2) {
        resp_w_errorf(r->out, CMD_ERR_ARGS, 4, "info");
        return;
    }
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        if (!all && !resp_arg_is(&r->argv[1], info_sections[i].name))
            continue;
        if (b.len)
            buf_append_str(&b, "\r\n");
        info_sections[i].fn(r->s, &b);
    }
    resp_w_verbatim(r->out, r->proto, b.p ? b.p : "", b.len);
    buf_free(&b);
}
