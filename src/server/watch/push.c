/* SPDX-License-Identifier: Apache-2.0 */
/*
 * push.c — revoke-requested and wait-notify as RESP3 pushes on the holder's parked connection.
 *
 * A holder busy in a blocking command (LOCK ... WAIT on another lock, SEM.ACQUIRE WAIT, XREAD
 * BLOCK, ELECT.OBSERVE WAIT) reads nothing else until it returns; a RESP3 client can take a
 * push (`>`) between replies, so the request reaches it there at once, not only on the event
 * stream. Pushes are a courtesy: the event stream stays the record (a RESP2 connection, one
 * not parked, or a node that is not the one the client talks to gets no push).
 *
 * Which connections are the session's: one with a parked request that names the session (its
 * slot's pkey ends with the sid; cmd_acting_user let its user act on the session), or one that
 * opened the session (srv_conn.sid) with a parked XREAD or ELECT.OBSERVE (those name no
 * session). Each such connection gets the push once per event; nothing is kept: the message is
 * built here and queued in the connection's output, which owns it from then on.
 *
 * Cost: a walk of the connections and of each one's queued slots per event; the two events are
 * written by LOCK.REVOKE and LOCK ... NOTIFY only, each bounded by --max-pending per connection.
 */
#include <stdio.h>
#include <string.h>

#include "server/server.h"

#define PUSH_SID_BYTES 8 /* a parked slot's pkey: name, then the sid (srv_key_name_sid) */

/* The session a parked slot waits for: its request's, or the connection's opened one. */
static uint64_t parked_sid(const struct srv_conn *c, const struct srv_slot *slot)
{
    if (slot->pkeylen < PUSH_SID_BYTES || !slot->pkey)
        return c->sid;
    uint64_t sid = 0;
    const char *k = slot->pkey + slot->pkeylen - PUSH_SID_BYTES;
    for (int i = 0; i < PUSH_SID_BYTES; i++)
        sid |= (uint64_t)(unsigned char)k[i] << (8 * i);
    return sid;
}

static bool waits_for(const struct srv_conn *c, uint64_t sid)
{
    for (const struct srv_slot *x = c->head; x; x = x->next)
        if (x->state == SLOT_PARKED && parked_sid(c, x) == sid)
            return true;
    return false;
}

/* The push's bytes: [type, name, token, ...] as the docs' "RESP3 pushes" lists them. */
static int build(struct buf *b, const struct fsm_event *e)
{
    bool revoke = e->type == FSM_EV_REVOKE_REQUESTED;
    if (buf_printf(b, ">%d\r\n", revoke ? 6 : 5) < 0)
        return -1;
    resp_w_bulk_str(b, revoke ? "revoke-requested" : "wait-notify");
    resp_w_bulk(b, e->name.p, e->name.len);
    resp_w_uint(b, e->token);
    if (revoke) {
        resp_w_uint(b, e->ms); /* deadline_ms, 0 = none */
        resp_w_bulk(b, e->value.p, e->value.len);
        resp_w_bulk(b, e->by.p, e->by.len);
    } else {
        resp_w_uint(b, e->sid); /* the waiter */
        resp_w_uint(b, e->ms);  /* its wait_ms */
    }
    return buf_failed(b) ? -1 : 0;
}

void srv_push_event(struct srv *s, const struct fsm_event *e)
{
    uint64_t holder = e->sid;
    if (e->type == FSM_EV_WAIT_NOTIFY) { /* e->sid is the waiter: the holder is the lock's */
        struct fsm_lock_view v;
        if (!fsm_lock_info(s->fsm, e->name.p, e->name.len, &v) || v.token != e->token)
            return;
        holder = v.holder_sid;
    } else if (e->type != FSM_EV_REVOKE_REQUESTED) {
        return;
    }
    if (!holder)
        return;
    struct buf msg;
    buf_init(&msg);
    bool built = false;
    for (struct srv_conn *c = s->net.conns, *next; c; c = next) {
        next = c->next; /* a push that overflows --max-output closes c */
        if (c->proto != 3 || c->closing || !waits_for(c, holder))
            continue;
        if (!built && build(&msg, e)) {
            LOGW(&s->log, "out of memory building a push (the event stream has it)");
            break;
        }
        built = true;
        srv_conn_push(c, &msg);
    }
    buf_free(&msg);
}
