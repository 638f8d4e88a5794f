/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_gone.c — a follower finds its leader's process gone and starts its election early.
 *
 * When an inbound peer link from the current leader is closed by the leader's side (EOF or a
 * reset: transport_link.c calls rn_peer_gone), the follower dials the leader's Raft address
 * once. ECONNREFUSED means nothing listens there: the process is gone (killed, crashed,
 * stopped), not paused (SIGSTOP keeps its sockets open: no EOF) and not partitioned (dropped
 * packets close nothing). Then, and only then, once the read lease's follower hold has passed
 * since the leader's last message (rn_lease_gone_wait_ms: a live leader may still hold a lease
 * on this node's acknowledgement; a message meanwhile drops the fast path), the follower
 *   - forgets the leader for libraft's vote guard: follower_state.current_leader.id = 0. A
 *     libraft 0.22 follower refuses every vote and pre-vote (without disrupt_leader) while that
 *     id is non-zero (recv_request_vote.c, the Raft thesis' §4.2.3 guard against a disruptive
 *     server); the other follower, which saw the same EOF and refusal, must grant its vote or
 *     the election waits for its own full timeout. The address string stays (libraft owns and
 *     frees it; a later AppendEntries sets the id again).
 *   - moves its election timer: election_timer_start such that the randomized timeout runs
 *     out after a random delay in [0, election_ms/4), instead of the full timeout. The delay
 *     keeps the two followers from campaigning in the same millisecond (a split vote).
 * Why it is safe: neither field takes part in Raft's safety (one vote per term, the log
 * checks, commit rules are unchanged); both are what a follower has after its own timeout
 * expired. Pre-vote stays on: the early candidate still asks a majority first. It fires at most
 * once per term (gone_term), and a leader that restarts fast enough to accept the probe
 * connection is simply left alone (today's path), so a quick restart cannot start a storm of
 * terms. A host name (not an IP literal) as Raft address is not probed: today's path.
 *
 * Owns: rn->probe (at most one in flight, heap-allocated: it can outlive rn, whose close
 * detaches it), rn->gone_term, rn->gone_fast (the next election line names this reason).
 */
#include "raft/rn_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/proto.h"

/* A dying process closes its connections before its listener: a probe sent the moment the
 * link's EOF arrived can still be accepted (then reset). A connect that succeeds is therefore
 * tried again RN_PROBE_GAP_MS later, at most RN_PROBE_TRIES times in all; a live leader sees
 * that many connections closed before their handshake, an ordinary close. */
#define RN_PROBE_TRIES 5
#define RN_PROBE_GAP_MS 20

struct rn_probe {
    uv_tcp_t tcp;
    uv_connect_t req;
    uv_timer_t timer;
    struct sockaddr_storage sa;
    struct rn *rn; /* NULL once rn closed or the probe ended */
    uint64_t id, term;
    uint64_t heard_ns; /* the leader's last message when the hold began (rn_heard_ns) */
    unsigned tries;
    int open;      /* handles not yet closed: freed at 0 */
    bool tcp_open; /* tcp is initialised and its close callback has not run */
};

static void probe_handle_closed(uv_handle_t *h)
{
    struct rn_probe *p = h->data;
    if (h == (uv_handle_t *)&p->tcp)
        p->tcp_open = false;
    if (--p->open == 0)
        free(p);
}

static void probe_end(struct rn_probe *p)
{
    if (p->rn && p->rn->probe == p)
        p->rn->probe = NULL;
    p->rn = NULL;
    if (!uv_is_closing((uv_handle_t *)&p->timer))
        uv_close((uv_handle_t *)&p->timer, probe_handle_closed);
    if (p->tcp_open && !uv_is_closing((uv_handle_t *)&p->tcp))
        uv_close((uv_handle_t *)&p->tcp, probe_handle_closed);
}

/* A random delay in [0, span): only to keep two followers apart, no quality needed. */
static unsigned spread(unsigned span)
{
    uint64_t x = uv_hrtime();
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return span ? (unsigned)(x % span) : 0;
}

static void fast_path(struct rn *rn, uint64_t id)
{
    struct raft *r = rn->raft;
    raft_time now = r->io->time(r->io); /* the clock libraft compares the timer with */
    unsigned timeout = r->follower_state.randomized_election_timeout;
    unsigned delay = spread(rn->cfg.election_ms / 4);
    r->follower_state.current_leader.id = 0; /* the vote guard: see the header */
    if (timeout > delay && now >= (raft_time)(timeout - delay))
        r->election_timer_start = now - (timeout - delay);
    rn->gone_term = r->current_term;
    rn->gone_fast = true;
    LOGI(rn->log,
         "raft: the leader (node %llu, term %llu) is gone: its raft port refuses connections; "
         "starting an election in %u ms instead of waiting out the election timeout",
         (unsigned long long)id, (unsigned long long)r->current_term, delay);
}

static void probe_cb(uv_connect_t *req, int status);
static bool same_leader(struct rn_probe *p);

/* The hold is over (rn_lease_gone_wait_ms): act if nothing changed meanwhile. A message from
 * the leader since the probe means it is not gone: today's path. */
static void hold_timer_cb(uv_timer_t *t)
{
    struct rn_probe *p = t->data;
    if (same_leader(p) && rn_heard_ns(p->rn, p->id) == p->heard_ns) {
        uint64_t wait = rn_lease_gone_wait_ms(p->rn, p->id);
        if (wait) { /* the loop's timer ran a little ahead of the precise clock */
            uv_timer_start(&p->timer, hold_timer_cb, wait, 0);
            return;
        }
        fast_path(p->rn, p->id);
    }
    probe_end(p);
}

/* One connect attempt; false if it could not be started (the probe then ends). */
static bool probe_dial(struct rn_probe *p)
{
    if (uv_tcp_init(p->rn->loop, &p->tcp))
        return false;
    p->tcp.data = p;
    p->tcp_open = true;
    p->open++;
    p->tries++;
    return uv_tcp_connect(&p->req, &p->tcp, (const struct sockaddr *)&p->sa, probe_cb) == 0;
}

static void probe_timer_cb(uv_timer_t *t)
{
    struct rn_probe *p = t->data;
    if (!p->rn || !probe_dial(p))
        probe_end(p);
}

/* The previous attempt's handle is closed: wait the gap, then try again. */
static void probe_redial_closed(uv_handle_t *h)
{
    struct rn_probe *p = h->data;
    p->tcp_open = false;
    p->open--;
    if (p->rn)
        uv_timer_start(&p->timer, probe_timer_cb, RN_PROBE_GAP_MS, 0);
    else if (p->open == 0)
        free(p);
}

/* Still a follower of the probed leader in the probed term, heard of nothing newer. */
static bool same_leader(struct rn_probe *p)
{
    struct rn *rn = p->rn;
    raft_id lid = 0;
    const char *addr = NULL;
    if (!rn || !rn_running(rn) || raft_state(rn->raft) != RAFT_FOLLOWER ||
        rn->raft->current_term != p->term)
        return false;
    raft_leader(rn->raft, &lid, &addr);
    return lid == p->id;
}

static void probe_cb(uv_connect_t *req, int status)
{
    struct rn_probe *p = req->data;
    struct rn *rn = p->rn;
    bool same = same_leader(p);
    uint64_t wait = same && status == UV_ECONNREFUSED ? rn_lease_gone_wait_ms(rn, p->id) : 0;
    if (same && status == UV_ECONNREFUSED && wait) {
        /* The leader may still hold a read lease on this node's acknowledgement if it was
         * not gone after all: clear its guard only once that has run out (rn_lease.c). */
        p->heard_ns = rn_heard_ns(rn, p->id);
        uv_timer_start(&p->timer, hold_timer_cb, wait, 0);
        return;
    } else if (same && status == UV_ECONNREFUSED) {
        fast_path(rn, p->id);
    } else if (same && status == 0 && p->tries < RN_PROBE_TRIES) {
        uv_close((uv_handle_t *)&p->tcp, probe_redial_closed);
        return;
    }
    probe_end(p);
}

void rn_peer_gone(void *arg, uint64_t id)
{
    struct rn *rn = arg;
    struct raft *r = rn->raft;
    raft_id lid = 0;
    const char *addr = NULL;
    if (!rn_running(rn) || rn->probe || raft_state(r) != RAFT_FOLLOWER ||
        rn->gone_term == r->current_term)
        return;
    raft_leader(r, &lid, &addr);
    if (lid != id || !addr)
        return;
    char host[PROTO_ADDR_BUF];
    int port;
    struct rn_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return;
    if (proto_addr_parse(addr, strlen(addr), host, sizeof(host), &port) ||
        (uv_ip4_addr(host, port, (struct sockaddr_in *)&p->sa) &&
         uv_ip6_addr(host, port, (struct sockaddr_in6 *)&p->sa))) {
        free(p);
        return; /* a host name: no resolving here, today's path */
    }
    p->rn = rn;
    p->id = id;
    p->term = r->current_term;
    p->req.data = p;
    if (uv_timer_init(rn->loop, &p->timer)) {
        free(p);
        return;
    }
    p->timer.data = p;
    p->open = 1;
    rn->probe = p;
    if (!probe_dial(p))
        probe_end(p);
}

void rn_gone_close(struct rn *rn)
{
    if (rn->probe)
        probe_end(rn->probe);
}

bool rn_gone_take(struct rn *rn)
{
    bool fast = rn->gone_fast;
    rn->gone_fast = false;
    return fast;
}
