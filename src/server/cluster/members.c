/* SPDX-License-Identifier: Apache-2.0 */
/*
 * members.c — the replicated member table: where each node takes clients.
 *
 * A ready leader writes its own entry (MEMBER_SET), and again from the tick whenever the table
 * no longer holds it (once a second at most); an announce of the leader's own id, or of a
 * client address on another host than the member's raft address (unless --announce-any-host),
 * is refused. A follower whose entry is missing or stale
 * tells the leader with `CLUSTER.ANNOUNCE id client-addr raft-addr` over the leader's client
 * port (a short RESP connection, one at a time, retried from the tick every second); the
 * leader checks the id and raft address against the Raft configuration and proposes it.
 * With the table every node can answer `-NOTLEADER host:port` with the leader's client address.
 *
 * HTTP: once the cluster's log format is 2, each node's HTTP address (srv_self_http_address:
 * --http-advertise, else --http-listen with a wildcard host replaced by the raft address's)
 * and whether it speaks TLS go into its entry too (MEMBER_HTTP, src/fsm/member_http.c): the
 * leader writes its own after MEMBER_SET, a follower adds `HTTP http-addr [TLS]` to its
 * CLUSTER.ANNOUNCE, and the leader checks it as it checks the client address (same host as the
 * raft address unless --announce-any-host). A follower's HTTP API answers 307 to it.
 *
 * --join: a node started with --join (and not yet a voter) instead sends `CLUSTER.ADD id
 * raft-addr` over the same kind of connection, first to a --join address (never its own; the
 * next one in turn after a failed connection or an error answer such as -NOLEADER) and then to
 * wherever a `-NOTLEADER host:port` answer points,
 * every second until its own Raft
 * configuration lists it as a voter. The leader answers +OK only once the node is a voter
 * (it is caught up first), so that request may take long: it gets 15 s, not 2.
 * Once a voter, the node announces its client address like every follower. A node that
 * joined never asks again, so removing it later does not make it push itself back in.
 *
 * A joiner counts itself a voter only when the leader says so: +OK to its CLUSTER.ADD (the
 * promotion committed) or "already a voter" (an answer that was lost, asked again). Its own
 * configuration does not count: a joiner replays the cluster's history first, and a node
 * removed and joining again (empty data dir, same id) was a voter in that history. libraft
 * 0.22.1 keeps a follower's committed configuration stale while it replays (rn_tick.c), and
 * the torture saw a joiner take that old configuration for its own when the leader gave up
 * catching it up (libraft gives up on a round of over 5 s) and took the new spare out again: it
 * stopped asking, a voter to itself only, for good. The first time the leader says so, the
 * node writes JOINED_MARK into its data dir. A member's restart (the mark present) trusts its
 * own committed configuration at once, as before, so a member an operator removed while it
 * was down does not ask to be added back. A joiner without the mark (also one restarted half
 * way) keeps asking with plain CLUSTER.ADD, which adds it as a spare again and resumes.
 *
 * Under --acl-file the request is preceded by `AUTH peer-user password` (--peer-user) on the
 * same connection, pipelined (the server parses nothing after an AUTH until it is answered).
 * A refusal for want of credentials (-NOAUTH, -WRONGPASS, -NOPERM) is logged with what to fix
 * and holds every further attempt back for PEER_RETRY_MIN_MS, doubling up to
 * PEER_RETRY_MAX_MS: a wrong password never becomes a loop of slow AUTHs against the leader.
 *
 * TLS: when this node's client port speaks TLS (--tls-cert), so do the other members' (one
 * cluster, one setting), and the connection is TLS too (tls.h: the client context presents
 * this node's certificate and verifies the server's against --tls-ca and the address dialled,
 * so the peer password goes only to a certificate that names that address). The engine works on
 * memory BIOs, so the loop never blocks: ciphertext read goes through tls_conn_feed, and
 * whatever the session has to send (handshake records, then the sealed request) is written
 * after every feed. A failed handshake (wrong CA, certificate refused) is logged with what to
 * check and held back like a refusal for want of credentials.
 *
 * Life cycle (both kinds), `enum announce_state`, moved only by announce_to:
 *   (none) --tick--> CONNECTING --connected--> WRITING --written--> READING
 *   CONNECTING | WRITING | READING --reply line, EOF, error or timeout--> CLOSING --> (none)
 * With TLS, WRITING ends as soon as the ClientHello is queued: in READING the rest of the
 * handshake and the request are written as the server's records arrive (each write its own
 * request, freed by its callback, which libuv runs before the handle's close callback).
 * `s->cluster.announce` is NULL once the handle closed.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/io.h"
#include "common/proto.h"
#include "server/security/peer_guard.h"
#include "server/server.h"

/* The member table (src/fsm) stores addresses of up to FSM_MAX_ADDR bytes on disk; every address
 * this node accepts or announces is limited by PROTO_ADDR_MAX, so the two must agree. */
_Static_assert(FSM_MAX_ADDR == PROTO_ADDR_MAX, "member table and address limit differ");

enum announce_state { ANN_CONNECTING, ANN_WRITING, ANN_READING, ANN_CLOSING };

struct srv_announce {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    struct srv *s;
    struct buf out;
    char rbuf[256];
    size_t rlen;
    char raw[512];        /* plain TCP: what one read brings (TLS reads into s->net.tls->raw) */
    struct tls_conn *tls; /* with --tls-cert: the client session, else NULL */
    struct buf plain;     /* TLS: decrypted bytes of one read */
    uint64_t started_ms, timeout_ms;
    enum announce_state state; /* announce_to only */
    bool join;
    bool auth_sent;     /* the request is preceded by AUTH: two reply lines */
    bool auth_answered; /* the first (AUTH's) reply line was read */
    bool auth_refused;  /* ... and it was an error */
    uint64_t told_term; /* the announce carries the log format this node reads, in this term */
    char target[PROTO_ADDR_BUF];
};

#define ANNOUNCE_TIMEOUT_MS 2000
#define JOIN_TIMEOUT_MS 15000
#define ID_TEXT_BUF 24          /* a node id in decimal (20 digits at most) and its NUL */
#define ANNOUNCE_EVERY_MS 1000  /* one join or announce connection a second at most */
#define LOGGED_REPLY_MAX 160    /* bytes of a refusal quoted in the log */
#define PEER_RETRY_MIN_MS 2000  /* after a refusal for want of credentials ... */
#define PEER_RETRY_MAX_MS 60000 /* ... doubling up to this */
#define JOIN_QUIET_LOG_MS 10000 /* --join: silence this long is logged (once) */

/* --listen as clients reach it: the host was unbracketed by the parser, so an IPv6 literal gets
 * its brackets back. */
void srv_self_client_address(struct srv *s, struct buf *out)
{
    char a[PROTO_ADDR_BUF];
    int n = proto_addr_format(a, sizeof(a), s->cfg.listen_host, s->cfg.listen_port);
    buf_reset(out);
    if (n > 0) /* always: config/value.c accepted it as one address */
        buf_append(out, a, (size_t)n);
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

static bool wildcard_host(const char *h)
{
    return !h[0] || !strcmp(h, "0.0.0.0") || !strcmp(h, "::");
}

/* Not announced (out stays empty): an address the other members cannot reach (a loopback host
 * while the raft address is not), or one the leader would refuse, which would refuse the
 * client address announced with it (another host than the raft address's without
 * --announce-any-host, as CLUSTER.ANNOUNCE checks). */
void srv_self_http_address(struct srv *s, struct buf *out, uint8_t *flags)
{
    char rh[PROTO_ADDR_BUF], hh[PROTO_ADDR_BUF], a[PROTO_ADDR_BUF];
    int rp, hp;
    buf_reset(out);
    *flags = s->cfg.http_tls ? FSM_MEMBER_HTTP_TLS : 0;
    if (!s->cfg.http_port ||
        proto_addr_parse(s->cfg.raft_address, strlen(s->cfg.raft_address), rh, sizeof rh, &rp))
        return;
    if (s->cfg.http_advertise[0]) {
        snprintf(a, sizeof a, "%s", s->cfg.http_advertise);
    } else {
        const char *host = wildcard_host(s->cfg.http_host) ? rh : s->cfg.http_host;
        if (proto_addr_format(a, sizeof(a), host, s->cfg.http_port) <= 0)
            return;
    }
    if (proto_addr_parse(a, strlen(a), hh, sizeof hh, &hp) ||
        (srv_host_loopback(hh) && !srv_host_loopback(rh)) ||
        (!s->cfg.announce_any_host && strcasecmp(hh, rh) != 0))
        return;
    buf_append_str(out, a);
}

/* Whether this node's HTTP address must be (re)written: there is one, the cluster's entries
 * may carry it (format 2), and the table's entry for this node lacks it or holds another. */
static bool self_http_missing(struct srv *s)
{
    struct fsm_member_view v;
    uint8_t flags;
    /* Not fsm_format: a new cluster's first leader proposes the format raise in the same ready
     * callback, just before this entry, which then applies after it. Waiting for the raise to
     * apply put the entry a tick or a second later, after the first clients' commands, and
     * moved the revisions they see (the README's quick start, IFREV checks). */
    if (srv_format_refuses(s, FSM_OP_MEMBER_HTTP))
        return false;
    srv_self_http_address(s, &s->scratch, &flags);
    if (!s->scratch.len)
        return false;
    return !fsm_member_get(s->fsm, s->cfg.id, &v) || v.http_addr.len != s->scratch.len ||
           memcmp(v.http_addr.p, s->scratch.p, v.http_addr.len) != 0 || v.http_flags != flags;
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
    struct fsm_cmd cmd = {.op = FSM_OP_MEMBER_SET,
                          .member_set = {.id = id,
                                         .client_addr = {client, (uint32_t)clen},
                                         .raft_addr = {raft, (uint32_t)rlen}}};
    return srv_propose(s, &cmd, cb, ctx);
}

static void member_http_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv *s = ctx;
    if (status != RN_OK || reply->kind == FSM_REPLY_ERR)
        LOGW(&s->log, "member table: an HTTP address not written (status %d)", status);
}

int srv_propose_member_http(struct srv *s, uint64_t id, const char *http, size_t len, uint8_t flags)
{
    struct fsm_cmd cmd = {
        .op = FSM_OP_MEMBER_HTTP,
        .member_http = {.id = id, .http_addr = {http, (uint32_t)len}, .flags = flags}};
    return srv_propose(s, &cmd, member_http_cb, s);
}

/* Called when this node became a ready leader (and from the tick while its entry is not
 * current). MEMBER_HTTP goes after MEMBER_SET, which it needs: entries apply in order. */
void srv_members_on_ready(struct srv *s)
{
    struct buf addr;
    buf_init(&addr);
    if (!self_entry_current(s)) {
        srv_self_client_address(s, &addr);
        srv_propose_member(s, s->cfg.id, addr.p, addr.len, s->cfg.raft_address,
                           strlen(s->cfg.raft_address), member_set_cb, s);
    }
    if (self_http_missing(s)) {
        uint8_t flags;
        srv_self_http_address(s, &addr, &flags);
        srv_propose_member_http(s, s->cfg.id, addr.p, addr.len, flags);
    }
    buf_free(&addr);
}

/* The one place the state changes: every move but the forward steps goes to CLOSING, once. */
static void announce_to(struct srv_announce *a, enum announce_state next)
{
    assert(a->state != ANN_CLOSING);
    assert(next == ANN_CLOSING || (unsigned)next == (unsigned)a->state + 1);
    a->state = next;
}

static void announce_closed(uv_handle_t *h)
{
    struct srv_announce *a = h->data;
    if (a->s->cluster.announce == a)
        a->s->cluster.announce = NULL;
    if (a->out.p) /* it held the peer password */
        sodium_memzero(a->out.p, a->out.cap);
    buf_free(&a->out);
    buf_free(&a->plain);
    tls_conn_free(a->tls);
    free(a);
}

static void announce_close(struct srv_announce *a)
{
    if (a->state == ANN_CLOSING)
        return;
    announce_to(a, ANN_CLOSING);
    uv_close((uv_handle_t *)&a->tcp, announce_closed);
}

static void announce_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct srv_announce *a = h->data;
    (void)suggested;
    if (a->tls) /* alloc and read run back to back: the shared buffer is free */
        *b = uv_buf_init(a->s->net.tls->raw, sizeof(a->s->net.tls->raw));
    else
        *b = uv_buf_init(a->raw, sizeof(a->raw));
}

static void join_done(struct srv *s);

/* A join answer: +OK, or "already a voter" (a lost +OK asked again), makes this node a voter;
 * -NOTLEADER host:port moves the next attempt to the leader; any other error
 * (-NOLEADER from a member that knows no leader, a refusal) to the next --join address, as a
 * failed connection does: one member that cannot help must not keep the joiner waiting. */
static void join_reply(struct srv_announce *a, const char *line, size_t n)
{
    struct srv *s = a->s;
    static const char nl[] = "-" PROTO_NOTLEADER " ";
    if (n > sizeof(nl) - 1 && memcmp(line, nl, sizeof(nl) - 1) == 0 &&
        n - (sizeof(nl) - 1) < sizeof(s->cluster.join_target)) {
        snprintf(s->cluster.join_target, sizeof(s->cluster.join_target), "%.*s",
                 (int)(n - (sizeof(nl) - 1)), line + sizeof(nl) - 1);
        LOGI(&s->log, "join: redirected to the leader at %s", s->cluster.join_target);
        s->cluster.announce_last_ms = 0; /* follow at once */
    } else if (line[0] == '-' &&
               !memmem(line, n, CLUSTER_ALREADY_VOTER, sizeof(CLUSTER_ALREADY_VOTER) - 1)) {
        LOGW(&s->log, "join: %s answered %.*s", s->cluster.join_target,
             (int)(n > LOGGED_REPLY_MAX ? LOGGED_REPLY_MAX : n), line);
        s->cluster.join_target[0] = 0;
    } else {
        LOGI(&s->log, "join: %s by %s",
             line[0] == '-' ? "already a voter, says" : "added to the cluster",
             s->cluster.join_target);
        join_done(s);
    }
}

static bool reply_is(const char *line, size_t n, const char *word)
{
    size_t w = strlen(word);
    return n > w && line[0] == '-' && memcmp(line + 1, word, w) == 0;
}

/* What to fix, for the log line of a refusal for want of credentials. */
static const char *peer_hint(const struct srv *s, const char *line, size_t n)
{
    if (!s->cfg.peer_user[0])
        return "start every member with --peer-user and --peer-password-file "
               "(docs/security.md)";
    if (reply_is(line, n, PROTO_NOPERM))
        return "give --peer-user's user the peer permission in the ACL file";
    return "check --peer-user and its password (--peer-password-file is re-read on SIGHUP)";
}

/* No new attempt for a while, doubling with each refusal in a row: the wait in ms. */
static uint64_t peer_hold_back(struct srv *s)
{
    uint64_t wait = PEER_RETRY_MIN_MS;
    for (unsigned i = 0; i < s->cluster.peer_refusals && wait < PEER_RETRY_MAX_MS; i++)
        wait *= 2;
    wait = wait > PEER_RETRY_MAX_MS ? PEER_RETRY_MAX_MS : wait;
    s->cluster.peer_refusals++;
    s->cluster.peer_retry_ms = clock_ms() + wait;
    return wait;
}

/* A refusal for want of credentials: logged with what to fix; attempts held back. */
static void peer_refused(struct srv_announce *a, const char *line, size_t n)
{
    struct srv *s = a->s;
    uint64_t wait = peer_hold_back(s);
    LOGW(&s->log, "%s to %s refused (%.*s): %s; next attempt in %llu s",
         a->join ? "join: CLUSTER.ADD" : "CLUSTER.ANNOUNCE", a->target,
         (int)(n > LOGGED_REPLY_MAX ? LOGGED_REPLY_MAX : n), line, peer_hint(s, line, n),
         (unsigned long long)(wait / 1000));
    if (a->join)
        s->cluster.join_target[0] = 0;
}

/* --join: somebody answered (whatever it said); ends a silence, saying so if it was logged. */
static void join_heard(struct srv *s, const char *from)
{
    if (s->cluster.join_quiet_logged)
        LOGI(&s->log, "join: %s answered after %llu s without an answer", from,
             (unsigned long long)((clock_ms() - s->cluster.join_quiet_ms) / 1000));
    s->cluster.join_quiet_ms = 0;
    s->cluster.join_quiet_logged = false;
}

/* --join: a joiner that reaches nobody (every address down, a firewall, a typo) logs one line
 * after JOIN_QUIET_LOG_MS instead of failing quietly or once a second. */
static void join_quiet(struct srv *s, uint64_t now)
{
    if (!s->cluster.join_quiet_ms || s->cluster.join_quiet_logged ||
        now - s->cluster.join_quiet_ms < JOIN_QUIET_LOG_MS)
        return;
    char list[RN_MAX_PEERS * (PROTO_ADDR_BUF + 2)];
    size_t o = 0;
    for (size_t k = 0; k < s->cfg.n_join && o < sizeof list; k++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", s->cfg.join[k]);
    LOGW(&s->log, "join: no answer from %s for %llu s; still trying", list,
         (unsigned long long)((now - s->cluster.join_quiet_ms) / 1000));
    s->cluster.join_quiet_logged = true;
}

/* One reply line; true when it was the last one this connection waits for. */
static bool announce_line(struct srv_announce *a, const char *line, size_t n)
{
    struct srv *s = a->s;
    if (a->join)
        join_heard(s, a->target);
    if (a->auth_sent && !a->auth_answered) {
        a->auth_answered = true;
        if (line[0] == '-') {
            a->auth_refused = true;
            LOGW(&s->log, "peer AUTH as '%s' refused by %s: %.*s", s->cfg.peer_user, a->target,
                 (int)(n > LOGGED_REPLY_MAX ? LOGGED_REPLY_MAX : n), line);
        }
        return false;
    }
    if (reply_is(line, n, PROTO_NOAUTH) || reply_is(line, n, PROTO_NOPERM) ||
        (a->auth_refused && line[0] == '-')) {
        peer_refused(a, line, n);
        return true;
    }
    s->cluster.peer_refusals = 0;
    if (a->join)
        join_reply(a, line, n);
    else if (line[0] == '+' && a->told_term)
        s->cluster.fmt.told_term = a->told_term;
    else if (line[0] == '-')
        LOGW(&s->log, "announce refused by the leader: %.*s",
             (int)(n > LOGGED_REPLY_MAX ? LOGGED_REPLY_MAX : n), line);
    return true;
}

/* The complete lines in rbuf; true when the connection was closed (last line read). */
static bool announce_lines(struct srv_announce *a)
{
    for (;;) {
        char *eol = strstr(a->rbuf, "\r\n");
        if (!eol && a->rlen < sizeof(a->rbuf) - 1)
            return false;
        size_t len = eol ? (size_t)(eol - a->rbuf) : a->rlen;
        if (announce_line(a, a->rbuf, len)) {
            announce_close(a);
            return true;
        }
        size_t used = eol ? len + 2 : a->rlen; /* an overlong line counts as one */
        memmove(a->rbuf, a->rbuf + used, a->rlen - used + 1);
        a->rlen -= used;
    }
}

/* Reply bytes (plaintext) into the line buffer, a buffer's worth at a time: the reply lines
 * (each answer is a simple string or an error) are AUTH's, if sent, then the request's. */
static void announce_bytes(struct srv_announce *a, const char *p, size_t n)
{
    while (n) {
        size_t take = sizeof(a->rbuf) - 1 - a->rlen;
        take = take < n ? take : n;
        memcpy(a->rbuf + a->rlen, p, take);
        a->rlen += take;
        a->rbuf[a->rlen] = 0;
        p += take;
        n -= take;
        if (announce_lines(a))
            return;
    }
}

/* TLS: one write of the records the session has pending; freed by its callback. */
struct ann_write {
    uv_write_t req;
    struct srv_announce *a;
    struct buf wire;
};

static void tls_written(uv_write_t *req, int status)
{
    struct ann_write *w = req->data;
    struct srv_announce *a = w->a; /* alive: write callbacks run before the close callback */
    buf_free(&w->wire);
    free(w);
    if (status < 0 && a->state != ANN_CLOSING)
        announce_close(a);
}

/* TLS: seal a->out once the handshake is through, and write every pending record. 0 or -1. */
static int tls_flush(struct srv_announce *a)
{
    struct ann_write *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->a = a;
    w->req.data = w;
    int rc = tls_conn_seal(a->tls, &a->out, &w->wire);
    if (rc == 0 && !w->wire.len) {
        buf_free(&w->wire);
        free(w);
        return 0;
    }
    uv_buf_t ub = uv_buf_init(w->wire.p, (unsigned)w->wire.len);
    if (rc || uv_write(&w->req, (uv_stream_t *)&a->tcp, &ub, 1, tls_written)) {
        buf_free(&w->wire);
        free(w);
        return -1;
    }
    return 0;
}

/* A TLS session that failed (handshake or later): logged with what to check; held back. */
static void tls_failed(struct srv_announce *a, const char *err)
{
    struct srv *s = a->s;
    const char *verify = tls_conn_verify_error(a->tls);
    bool up = tls_conn_ready(a->tls);
    uint64_t wait = peer_hold_back(s);
    LOGW(&s->log, "%s to %s: TLS %s: %s%s%s%s; next attempt in %llu s",
         a->join ? "join" : "announce", a->target, up ? "session failed" : "handshake failed",
         err[0] ? err : "closed", verify ? " (" : "", verify ? verify : "", verify ? ")" : "",
         (unsigned long long)(wait / 1000));
    if (!s->cluster.announce_tls_logged)
        LOGW(&s->log, "TLS to other members' client ports: the server's certificate must chain "
                      "to --tls-ca and name the address dialled (IP or DNS subjectAltName), and "
                      "a member that asks for client certificates must accept this node's "
                      "--tls-cert (docs/security.md)");
    s->cluster.announce_tls_logged = true;
    if (a->join)
        s->cluster.join_target[0] = 0;
    announce_close(a);
}

/* TLS: ciphertext in; what the session answers out; the plaintext to the line reader. */
static void tls_input(struct srv_announce *a, const char *raw, size_t n)
{
    char err[256];
    a->plain.len = 0;
    int rc = tls_conn_feed(a->tls, raw, n, &a->plain, err, sizeof err);
    if (rc < 0) {
        tls_failed(a, err);
        return;
    }
    if (tls_flush(a)) {
        announce_close(a);
        return;
    }
    announce_bytes(a, a->plain.p, a->plain.len);
}

static void announce_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct srv_announce *a = st->data;
    if (n < 0) {
        if (a->tls && !tls_conn_ready(a->tls)) { /* closed during the handshake */
            tls_failed(a, "");
            return;
        }
        if (a->join) /* the target is gone: start over from the --join address */
            a->s->cluster.join_target[0] = 0;
        announce_close(a);
        return;
    }
    if (a->tls)
        tls_input(a, b->base, (size_t)n);
    else
        announce_bytes(a, b->base, (size_t)n);
}

static void announce_written(uv_write_t *req, int status)
{
    struct srv_announce *a = req->data;
    if (status < 0 || a->state == ANN_CLOSING) {
        announce_close(a);
        return;
    }
    announce_to(a, ANN_READING);
    if (uv_read_start((uv_stream_t *)&a->tcp, announce_alloc, announce_read))
        announce_close(a);
}

/* TLS: a client session; its ClientHello goes out, then replies are read (see the top). */
static void announce_tls_start(struct srv_announce *a)
{
    char err[256], host[PROTO_ADDR_BUF];
    int port;
    if (proto_addr_parse(a->target, strlen(a->target), host, sizeof host, &port)) {
        announce_close(a); /* never: targets are checked addresses */
        return;
    }
    a->tls = tls_conn_new_client(a->s->net.tls, host);
    if (!a->tls || tls_conn_feed(a->tls, NULL, 0, &a->plain, err, sizeof err) < 0 || tls_flush(a)) {
        announce_close(a);
        return;
    }
    announce_to(a, ANN_READING);
    if (uv_read_start((uv_stream_t *)&a->tcp, announce_alloc, announce_read))
        announce_close(a);
}

static void announce_connected(uv_connect_t *req, int status)
{
    struct srv_announce *a = req->data;
    if (status < 0 || a->state == ANN_CLOSING) {
        if (a->join && status < 0)
            a->s->cluster.join_target[0] = 0;
        announce_close(a);
        return;
    }
    announce_to(a, ANN_WRITING);
    if (a->s->net.tls) {
        announce_tls_start(a);
        return;
    }
    uv_buf_t ub = uv_buf_init(a->out.p, (unsigned)a->out.len);
    a->wreq.data = a;
    if (uv_write(&a->wreq, (uv_stream_t *)&a->tcp, &ub, 1, announce_written))
        announce_close(a);
}

/* Open the short connection to `addr` and send a->out on it; a is s->cluster.announce until closed.
 * A request the writers could not finish (out of memory) is not sent: the tick tries again. */
static void announce_start(struct srv *s, struct srv_announce *a, const char *addr, size_t len)
{
    struct sockaddr_storage sa;
    bool bad = buf_failed(&a->out) || addr_ip_parse(addr, len, &sa);
    if (bad) {
        LOGW(&s->log, "cannot connect to %.*s: %s", (int)len, addr,
             buf_failed(&a->out) ? "out of memory" : "not an IP host:port");
        if (a->join)
            s->cluster.join_target[0] = 0;
        buf_free(&a->out);
        free(a);
        return;
    }
    snprintf(a->target, sizeof a->target, "%.*s", (int)len, addr);
    uv_tcp_init(s->loop, &a->tcp);
    a->tcp.data = a;
    a->creq.data = a;
    s->cluster.announce = a;
    if (uv_tcp_connect(&a->creq, &a->tcp, (struct sockaddr *)&sa, announce_connected))
        announce_close(a);
}

/* A new request; with --peer-user its AUTH is already in a->out. A failed AUTH is answered
 * after the server's delay (up to AUTH_DELAY_MAX_MS), so the timeout allows for it. */
static struct srv_announce *announce_new(struct srv *s, bool join, uint64_t now)
{
    struct srv_announce *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->s = s;
    a->state = ANN_CONNECTING;
    a->join = join;
    a->started_ms = now;
    a->timeout_ms = join ? JOIN_TIMEOUT_MS : ANNOUNCE_TIMEOUT_MS;
    if (s->cfg.peer_user[0]) {
        resp_w_array(&a->out, 3);
        resp_w_bulk_str(&a->out, "AUTH");
        resp_w_bulk_str(&a->out, s->cfg.peer_user);
        resp_w_bulk(&a->out, s->auth.peer_pw, s->auth.peer_pwlen);
        a->auth_sent = true;
        a->timeout_ms += AUTH_DELAY_MAX_MS;
    }
    return a;
}

/*
 * A joined node's own log can be wrong about it: a removal is never replicated to the server
 * it removes, and a promotion this node saw can be lost with a leader (the snapshot torture
 * left a rejoined node campaigning for good at a stale term, sure it was a voter, while the
 * leader's voters were the two others). Such a node never hears a leader again. So a --join
 * node that has known no leader for JOIN_RECHECK_ELECTIONS election timeouts asks to be added
 * once more (once per such period) with CLUSTER.ADD ... PROMOTE: the leader answers "already a
 * voter" (nothing changes), promotes it if it is a spare in the leader's configuration, and
 * refuses if it is not there at all (an operator's CLUSTER.REMOVE that never reached it: it
 * stays out, and logs the leader's answer). A node that is merely cut off asks nobody.
 */
#define JOIN_RECHECK_ELECTIONS 20

static bool join_recheck(struct srv *s)
{
    uint64_t now = clock_ms(), lid = 0;
    const char *laddr = NULL;
    rn_leader(s->rn, &lid, &laddr);
    if (lid || s->cluster.role == RN_LEADER || !s->cluster.leader_heard_ms) {
        s->cluster.leader_heard_ms = now;
        return false;
    }
    uint64_t quiet = now - s->cluster.leader_heard_ms;
    if (quiet < (uint64_t)JOIN_RECHECK_ELECTIONS * s->cfg.election_ms)
        return false;
    LOGW(&s->log,
         "join: no leader known for %llu ms although this node counts itself a voter; asking "
         "the cluster to add it again (its log may be missing a removal or a lost promotion)",
         (unsigned long long)quiet);
    s->cluster.joined = false;
    s->cluster.join_promote = true; /* never adds back a node an operator removed */
    s->cluster.leader_heard_ms = now;
    return true;
}

/* The file in --data-dir that says this data dir's node has been a voter (the top of this
 * file says why). */
#define JOINED_MARK "joined"

static int joined_mark_path(const struct srv *s, char *path, size_t len)
{
    int n = snprintf(path, len, "%s/" JOINED_MARK, s->cfg.data_dir);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Written once, synced (and its directory entry too): a crash right after must not leave a
 * voter without it, or its next start would ask to be added as a joiner does. A failure is
 * logged and the write tried again at the next start; the node is a voter either way. */
static void joined_mark_write(struct srv *s)
{
    char path[sizeof(s->cfg.data_dir) + sizeof(JOINED_MARK) + 1];
    char line[64];
    int n = snprintf(line, sizeof line, "fencelock member %llu\n", (unsigned long long)s->cfg.id);
    int fd = joined_mark_path(s, path, sizeof path) == 0
                 ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                 : -1;
    bool ok = fd >= 0 && io_write_all(fd, line, (size_t)n) == 0 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    int dfd = ok ? open(s->cfg.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    ok = ok && dfd >= 0 && fsync(dfd) == 0;
    if (dfd >= 0)
        close(dfd);
    if (!ok)
        LOGW(&s->log,
             "join: cannot write %s/" JOINED_MARK " (%s): the next start asks to be added again, "
             "as a joiner does",
             s->cfg.data_dir, strerror(errno));
}

/* Whether --data-dir holds the mark (looked up once). */
static bool joined_mark(struct srv *s)
{
    if (!s->cluster.joined_mark_read) {
        char path[sizeof(s->cfg.data_dir) + sizeof(JOINED_MARK) + 1];
        s->cluster.joined_mark_read = true;
        s->cluster.joined_mark =
            joined_mark_path(s, path, sizeof path) == 0 && access(path, F_OK) == 0;
    }
    return s->cluster.joined_mark;
}

static void join_done(struct srv *s)
{
    s->cluster.joined = true;
    s->cluster.join_promote = false;
    s->cluster.leader_heard_ms = clock_ms();
    LOGI(&s->log, "join: this node is a voter of the cluster");
    if (!joined_mark(s)) {
        joined_mark_write(s);
        s->cluster.joined_mark = true;
    }
}

/* --join and not yet a voter: ask the leader (or the --join address) to add this node, until
 * the leader says it is a voter (join_reply). A member's restart (JOINED_MARK: a leader said
 * so once) trusts the configuration its log ends with instead. Not the one libraft counts as
 * committed: right after a start that is only what a snapshot or the log's start held, since
 * libraft 0.22 keeps no commit index on disk, and a restarted member removed while it was down
 * never hears otherwise (it asked to be added back, and was, before the mark). A promotion the
 * leader appended and lost with its leadership gives no mark (the leader never said so). */
static int join_pending(struct srv *s)
{
    if (!s->cfg.n_join)
        return 0;
    if (s->cluster.joined)
        return join_recheck(s) ? 1 : 0;
    if (joined_mark(s) && rn_server_role(s->rn, s->cfg.id) == RN_VOTER) {
        s->cluster.joined = true;
        LOGI(&s->log, "join: this node is a voter of the cluster (a member's restart)");
        return 0;
    }
    return 1;
}

/* A fresh attempt (first, or after the last target failed) takes the next --join address in
 * turn, so one member that is down cannot keep the joiner waiting. This node's own address
 * (the same list is often given to every member) is skipped unless it is all there is. */
static void join_pick(struct srv *s)
{
    srv_self_client_address(s, &s->scratch);
    const char *t = NULL;
    for (size_t k = 0; k < s->cfg.n_join && !t; k++) {
        const char *c = s->cfg.join[s->cluster.join_next++ % s->cfg.n_join];
        if (strlen(c) != s->scratch.len || memcmp(c, s->scratch.p, s->scratch.len) != 0)
            t = c;
    }
    snprintf(s->cluster.join_target, sizeof(s->cluster.join_target), "%s", t ? t : s->cfg.join[0]);
}

static void join_tick(struct srv *s, uint64_t now)
{
    struct srv_announce *a = announce_new(s, true, now);
    if (!a)
        return;
    if (!s->cluster.join_quiet_ms)
        s->cluster.join_quiet_ms = now ? now : 1;
    if (!s->cluster.join_target[0])
        join_pick(s);
    char id[ID_TEXT_BUF];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)s->cfg.id);
    resp_w_array(&a->out, s->cluster.join_promote ? 4 : 3);
    resp_w_bulk_str(&a->out, "CLUSTER.ADD");
    resp_w_bulk_str(&a->out, id);
    resp_w_bulk_str(&a->out, s->cfg.raft_address);
    if (s->cluster.join_promote)
        resp_w_bulk_str(&a->out, "PROMOTE");
    announce_start(s, a, s->cluster.join_target, strlen(s->cluster.join_target));
}

/* On a follower: make sure the leader has our addresses. */
static void announce_tick(struct srv *s, uint64_t now)
{
    struct buf leader;
    buf_init(&leader);
    if (srv_leader_client_address(s, &leader)) {
        buf_free(&leader);
        return;
    }
    struct srv_announce *a = announce_new(s, false, now);
    if (a) {
        char id[ID_TEXT_BUF];
        snprintf(id, sizeof(id), "%llu", (unsigned long long)s->cfg.id);
        /* the 5th argument only when the leader must hear it: a previous release's leader
           takes 4 (its refusal of 5 is then retried, the member entry still goes with 4) */
        bool tell = srv_format_tell_needed(s) && self_entry_current(s);
        /* HTTP http-addr [TLS] only once the cluster's entries can carry it (format 2), so
           only a leader that reads it is sent it */
        struct buf http;
        uint8_t hflags = 0;
        buf_init(&http);
        if (fsm_format(s->fsm) >= FSM_FORMAT_2)
            srv_self_http_address(s, &http, &hflags);
        size_t n_http = http.len ? (hflags & FSM_MEMBER_HTTP_TLS ? 3 : 2) : 0;
        srv_self_client_address(s, &s->scratch);
        resp_w_array(&a->out, (tell ? 5 : 4) + n_http);
        resp_w_bulk_str(&a->out, "CLUSTER.ANNOUNCE");
        resp_w_bulk_str(&a->out, id);
        resp_w_bulk(&a->out, s->scratch.p, s->scratch.len);
        resp_w_bulk_str(&a->out, s->cfg.raft_address);
        if (tell) {
            char fmt[ID_TEXT_BUF];
            snprintf(fmt, sizeof(fmt), "%u", srv_format_max(s));
            resp_w_bulk_str(&a->out, fmt);
            a->told_term = rn_term(s->rn);
        }
        if (n_http) {
            resp_w_bulk_str(&a->out, "HTTP");
            resp_w_bulk(&a->out, http.p, http.len);
            if (n_http == 3)
                resp_w_bulk_str(&a->out, "TLS");
        }
        buf_free(&http);
        announce_start(s, a, leader.p, leader.len);
    }
    buf_free(&leader);
}

/* From the tick (every few ms): at most one join or announce connection, one a second. */
void srv_members_tick(struct srv *s)
{
    uint64_t now = clock_ms();
    /* A ready leader's own entry changed under it (written by an older leader's term, or
     * anything that got past CLUSTER.ANNOUNCE's checks): write it again, once a second at
     * most, so -NOTLEADER never points elsewhere for long. */
    if (s->cluster.role == RN_LEADER && srv_ready(s) && !s->stopping &&
        now - s->cluster.self_assert_ms >= ANNOUNCE_EVERY_MS &&
        (!self_entry_current(s) || self_http_missing(s))) {
        s->cluster.self_assert_ms = now;
        srv_members_on_ready(s);
    }
    if (s->cfg.n_join && !s->cluster.joined)
        join_quiet(s, now);
    if (s->cluster.announce) {
        if (now - s->cluster.announce->started_ms > s->cluster.announce->timeout_ms) {
            if (s->cluster.announce->join)
                s->cluster.join_target[0] = 0;
            announce_close(s->cluster.announce);
        }
        return;
    }
    if (now - s->cluster.announce_last_ms < ANNOUNCE_EVERY_MS || now < s->cluster.peer_retry_ms ||
        s->stopping)
        return;
    if (join_pending(s)) {
        s->cluster.announce_last_ms = now;
        join_tick(s, now);
        return;
    }
    if (s->cluster.role != RN_FOLLOWER ||
        (self_entry_current(s) && !srv_format_tell_needed(s) && !self_http_missing(s)))
        return;
    s->cluster.announce_last_ms = now;
    announce_tick(s, now);
}

void srv_members_stop(struct srv *s)
{
    if (s->cluster.announce)
        announce_close(s->cluster.announce);
}
