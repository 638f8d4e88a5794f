/* SPDX-License-Identifier: Apache-2.0 */
/*
 * noleader.c — a leader-only request (a write, a linearizable read) that reaches this node
 * while it knows no ready leader waits here for one, instead of an immediate -NOLEADER.
 *
 * Why: during a fail-over every client used to retry a -NOLEADER on its own backoff (the C
 * client's grows to 200 ms), so the next grant came up to a backoff after the new leader was
 * ready (docs/performance.md, its W8 section). A parked request is answered on the first
 * leadership poll (the 5 ms tick, or any command) that knows a ready leader: a -NOTLEADER
 * redirect with that leader's client address, this node's own once it is the ready leader
 * (the client resends at once). Nothing is proposed or run here: the answer is always one the
 * client already handles, only sooner.
 *
 * Owns: s->cluster.noleader, a list through slot->lnext in arrival order (and so in deadline
 * order: every request waits the same --noleader-wait-ms), n_noleader its length. A slot
 * stays PENDING while parked; when its connection closes it is orphaned (conn == NULL) and
 * frees itself once answered (srv_slot_done). Bounds: at most --max-noleader-waits parked
 * on this node (one more is answered -NOLEADER at once, as before), each for at most
 * --noleader-wait-ms (then -NOLEADER, as before); 0 turns parking off.
 */
#include "common/clock.h"
#include "server/cmd/cmd.h"
#include "server/server.h"

/* The known leader's client address into out (a follower's view): 0, or -1 if none. */
static int leader_known(struct srv *s, struct buf *out)
{
    return s->cluster.role != RN_LEADER && srv_leader_client_address(s, out) == 0 && out->len ? 0
                                                                                              : -1;
}

bool srv_noleader_park(struct srv_req *r)
{
    struct srv *s = r->s;
    struct srv_slot *slot = r->slot;
    if (!slot || !r->c || s->stopping || s->cfg.noleader_wait_ms == 0 ||
        s->cluster.n_noleader >= s->cfg.max_noleader_waits)
        return false;
    /* a follower that knows its leader's address redirects at once (cmd_need_leader) */
    struct buf addr;
    buf_init(&addr);
    int known = leader_known(s, &addr);
    buf_free(&addr);
    if (known == 0)
        return false;
    slot->noleader_until = clock_ms() + s->cfg.noleader_wait_ms;
    slot->lnext = NULL;
    struct srv_read_list *l = &s->cluster.noleader;
    if (l->tail)
        l->tail->lnext = slot;
    else
        l->head = slot;
    l->tail = slot;
    s->cluster.n_noleader++;
    r->async = true;
    return true;
}

/* Take the first parked slot off the list. */
static struct srv_slot *pop(struct srv *s)
{
    struct srv_read_list *l = &s->cluster.noleader;
    struct srv_slot *slot = l->head;
    l->head = slot->lnext;
    if (!l->head)
        l->tail = NULL;
    slot->lnext = NULL;
    s->cluster.n_noleader--;
    return slot;
}

void srv_noleader_fail(struct srv *s, int status)
{
    while (s->cluster.noleader.head) {
        struct srv_slot *slot = pop(s);
        srv_reply_status(s, &slot->out, status);
        srv_slot_done(slot);
    }
}

void srv_noleader_poll(struct srv *s)
{
    if (!s->cluster.noleader.head)
        return;
    /* a ready leader is known: this node (the client resends here at once), or a
     * follower's leader with a client address */
    struct buf addr;
    buf_init(&addr);
    if (srv_ready(s))
        srv_self_client_address(s, &addr);
    else if (leader_known(s, &addr))
        buf_reset(&addr);
    if (addr.len) {
        while (s->cluster.noleader.head) {
            struct srv_slot *slot = pop(s);
            resp_w_errorf(&slot->out, PROTO_NOTLEADER " %.*s", (int)addr.len, addr.p);
            srv_slot_done(slot);
        }
        buf_free(&addr);
        return;
    }
    buf_free(&addr);
    uint64_t now = clock_ms();
    while (s->cluster.noleader.head && s->cluster.noleader.head->noleader_until <= now) {
        struct srv_slot *slot = pop(s);
        resp_w_error(&slot->out, PROTO_NOLEADER " no leader is known right now; retry later");
        srv_slot_done(slot);
    }
}
