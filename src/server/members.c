/*
 * members.c — the replicated member table: where each node takes clients.
 *
 * A ready leader writes its own entry (MEMBER_SET). A follower whose entry is missing or stale
 * tells the leader with `CLUSTER.ANNOUNCE id client-addr raft-addr` over the leader's client
 * port (a short RESP connection, one at a time, retried from the tick every second); the
 * leader checks the id and raft address against the Raft configuration and proposes it.
 * With the table every node can answer `-NOTLEADER host:port` with the leader's client address.
 *
 * Announce life cycle: NONE --tick--> CONNECTING --connected--> SENT --reply or EOF--> closed;
 * any error or 2 s without an answer closes it; `s->announce` is NULL once the handle closed.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

struct srv_announce {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    struct srv *s;
    struct buf out;
    char rbuf[256];
    uint64_t started_ms;
    bool closing;
};

void srv_self_client_address(struct srv *s, struct buf *out)
{
    buf_reset(out);
    buf_printf(out, "%s:%d", s->cfg.listen_host, s->cfg.listen_port);
}

int srv_leader_client_address(struct srv *s, struct buf *out)
{
    uint64_t lid;
    const char *laddr;
    struct fsm_member_view v;
    buf_reset(out);
    rn_leader(s->rn, &lid, &laddr);
    if (!lid || !fsm_member_get(s->fsm, lid, &v))
        return -1;
    return buf_append(out, v.client_addr.p, v.client_addr.len);
}

/* 1 if the table already holds exactly this node's addresses. */
static int self_entry_current(struct srv *s)
{
    struct fsm_member_view v;
    srv_self_client_address(s, &s->scratch);
    return fsm_member_get(s->fsm, s->cfg.id, &v) && v.client_addr.len == s->scratch.len &&
           memcmp(v.client_addr.p, s->scratch.p, v.client_addr.len) == 0 &&
           v.raft_addr.len == strlen(s->cfg.raft_address) &&
           memcmp(v.raft_addr.p, s->cfg.raft_address, v.raft_addr.len) == 0;
}

static void member_set_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv *s = ctx;
    if (status != RN_OK || reply->kind == FSM_REPLY_ERR)
        LOGW(&s->log, "member table: own entry not written (status %d)", status);
}

int srv_propose_member(struct srv *s, uint64_t id, const char *client, size_t clen,
                       const char *raft, size_t rlen, rn_propose_cb cb, void *ctx)
{
    struct fsm_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = FSM_OP_MEMBER_SET;
    cmd.sid = id;
    cmd.name.p = client;
    cmd.name.len = (uint32_t)clen;
    cmd.key.p = raft;
    cmd.key.len = (uint32_t)rlen;
    cmd.now_ms = srv_wall_ms();
    struct buf enc;
    buf_init(&enc);
    int rc = fsm_cmd_encode(&cmd, &enc) ? RN_ERR : rn_propose(s->rn, enc.p, enc.len, cb, ctx);
    buf_free(&enc);
    return rc;
}

/* Called when this node became a ready leader. */
void srv_members_on_ready(struct srv *s)
{
    if (self_entry_current(s))
        return;
    struct buf addr;
    buf_init(&addr);
    srv_self_client_address(s, &addr);
    srv_propose_member(s, s->cfg.id, addr.p, addr.len, s->cfg.raft_address,
                       strlen(s->cfg.raft_address), member_set_cb, s);
    buf_free(&addr);
}

static void announce_closed(uv_handle_t *h)
{
    struct srv_announce *a = h->data;
    if (a->s->announce == a)
        a->s->announce = NULL;
    buf_free(&a->out);
    free(a);
}

static void announce_close(struct srv_announce *a)
{
    if (a->closing)
        return;
    a->closing = true;
    uv_close((uv_handle_t *)&a->tcp, announce_closed);
}

static void announce_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct srv_announce *a = h->data;
    (void)suggested;
    *b = uv_buf_init(a->rbuf, sizeof(a->rbuf));
}

static void announce_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct srv_announce *a = st->data;
    if (n > 0 && b->base[0] == '-')
        LOGW(&a->s->log, "announce refused by the leader: %.*s", (int)(n > 120 ? 120 : n), b->base);
    if (n != 0)
        announce_close(a);
}

static void announce_written(uv_write_t *req, int status)
{
    struct srv_announce *a = req->data;
    if (status < 0 || a->closing) {
        announce_close(a);
        return;
    }
    if (uv_read_start((uv_stream_t *)&a->tcp, announce_alloc, announce_read))
        announce_close(a);
}

static void announce_connected(uv_connect_t *req, int status)
{
    struct srv_announce *a = req->data;
    if (status < 0 || a->closing) {
        announce_close(a);
        return;
    }
    uv_buf_t ub = uv_buf_init(a->out.p, (unsigned)a->out.len);
    a->wreq.data = a;
    if (uv_write(&a->wreq, (uv_stream_t *)&a->tcp, &ub, 1, announce_written))
        announce_close(a);
}

static int parse_addr(const char *hp, size_t n, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = memrchr(hp, ':', n);
    if (!colon || (size_t)(colon - hp) >= sizeof(host))
        return -1;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    int port = atoi(colon + 1);
    return port > 0 && port < 65536 ? uv_ip4_addr(host, port, sa) : -1;
}

/* From the tick, on a follower: make sure the leader has our addresses. */
void srv_members_tick(struct srv *s)
{
    uint64_t now = srv_now_ms();
    if (s->announce) {
        if (now - s->announce->started_ms > 2000)
            announce_close(s->announce);
        return;
    }
    if (s->role != RN_FOLLOWER || now - s->announce_last_ms < 1000 || self_entry_current(s))
        return;
    s->announce_last_ms = now;
    struct buf leader;
    buf_init(&leader);
    struct sockaddr_in sa;
    if (srv_leader_client_address(s, &leader) || parse_addr(leader.p, leader.len, &sa)) {
        buf_free(&leader);
        return;
    }
    buf_free(&leader);
    struct srv_announce *a = calloc(1, sizeof(*a));
    if (!a)
        return;
    a->s = s;
    a->started_ms = now;
    srv_self_client_address(s, &s->scratch);
    buf_printf(&a->out,
               "*4\r\n$16\r\nCLUSTER.ANNOUNCE\r\n$%d\r\n%llu\r\n$%zu\r\n%.*s\r\n$%zu\r\n%s\r\n",
               snprintf(NULL, 0, "%llu", (unsigned long long)s->cfg.id),
               (unsigned long long)s->cfg.id, s->scratch.len, (int)s->scratch.len, s->scratch.p,
               strlen(s->cfg.raft_address), s->cfg.raft_address);
    uv_tcp_init(s->loop, &a->tcp);
    a->tcp.data = a;
    a->creq.data = a;
    s->announce = a;
    if (uv_tcp_connect(&a->creq, &a->tcp, (struct sockaddr *)&sa, announce_connected))
        announce_close(a);
}

void srv_members_stop(struct srv *s)
{
    if (s->announce)
        announce_close(s->announce);
}
