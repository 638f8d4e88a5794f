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
 * session). Each such connection gets the push once per event; the message is built here and
 * queued in the connection's output, which owns it from then on.
 *
 * The index (struct srv_push, owned here): sid -> the connections that may be parked for it.
 * A connection is listed under the session it opened (srv_push_conn_sid, the one writer of
 * srv_conn.sid) and, counted, under the sid of each of its slots parked with a name+sid key
 * (srv_push_slot_parked, from srv_slot_set_state); srv_push_conn_closed unlists it before
 * its slots are orphaned. So the index holds every connection that qualifies (maybe more: a
 * listed connection is checked as before), and a push costs the connections of that session
 * and their queued slots, bounded by --max-pending each, not a walk of every connection. A
 * failed allocation leaves a connection unlisted: it misses pushes, the stream has them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define PUSH_SID_BYTES 8 /* a parked slot's pkey: name, then the sid (srv_key_name_sid) */

/* The session a parked slot waits for: its request's, or the connection's opened one. */
static uint64_t key_sid(const struct srv_slot *slot);
static bool names_sid(const struct srv_slot *slot);

static uint64_t parked_sid(const struct srv_conn *c, const struct srv_slot *slot)
{
    return names_sid(slot) ? key_sid(slot) : c->sid;
}

/* ---- the index ---- */

struct push_ref {
    struct srv_conn *c;
    size_t refs; /* its opened session (1) plus its parked slots naming the sid */
};

struct push_set {
    size_t n, cap;
    struct push_ref *v;
};

static void set_free(void *val)
{
    struct push_set *ps = val;
    free(ps->v);
    free(ps);
}

void srv_push_init(struct srv *s)
{
    map_init(&s->push.by_sid);
}

void srv_push_free(struct srv *s)
{
    map_free(&s->push.by_sid, set_free);
}

static void listed(struct srv *s, uint64_t sid, struct srv_conn *c)
{
    char k[8];
    size_t kl = map_key_u64(sid, k);
    struct push_set *ps = map_get(&s->push.by_sid, k, kl);
    if (!ps) {
        ps = calloc(1, sizeof(*ps));
        if (!ps || map_put(&s->push.by_sid, k, kl, ps)) {
            free(ps);
            return;
        }
    }
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].c == c) {
            ps->v[i].refs++;
            return;
        }
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 2;
        struct push_ref *v = realloc(ps->v, cap * sizeof(*v));
        if (!v)
            return;
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = (struct push_ref){c, 1};
}

static void unlisted(struct srv *s, uint64_t sid, struct srv_conn *c)
{
    char k[8];
    size_t kl = map_key_u64(sid, k);
    struct push_set *ps = map_get(&s->push.by_sid, k, kl);
    for (size_t i = 0; ps && i < ps->n; i++) {
        if (ps->v[i].c != c || --ps->v[i].refs)
            continue;
        ps->v[i] = ps->v[--ps->n];
        if (ps->n == 0)
            set_free(map_del(&s->push.by_sid, k, kl));
        return;
    }
}

static bool names_sid(const struct srv_slot *slot)
{
    return slot->pkey && slot->pkeylen >= PUSH_SID_BYTES;
}

static uint64_t key_sid(const struct srv_slot *slot)
{
    uint64_t sid = 0;
    const char *k = slot->pkey + slot->pkeylen - PUSH_SID_BYTES;
    for (int i = 0; i < PUSH_SID_BYTES; i++)
        sid |= (uint64_t)(unsigned char)k[i] << (8 * i);
    return sid;
}

void srv_push_slot_parked(struct srv_slot *slot, bool parked)
{
    if (!slot->conn || !names_sid(slot)) /* orphaned: unlisted when its connection closed */
        return;
    (parked ? listed : unlisted)(slot->srv, key_sid(slot), slot->conn);
}

void srv_push_conn_sid(struct srv_conn *c, uint64_t sid)
{
    if (c->sid == sid)
        return;
    if (c->sid)
        unlisted(c->srv, c->sid, c);
    c->sid = sid;
    if (sid)
        listed(c->srv, sid, c);
}

void srv_push_conn_closed(struct srv_conn *c)
{
    for (const struct srv_slot *x = c->head; x; x = x->next)
        if (x->state == SLOT_PARKED && names_sid(x))
            unlisted(c->srv, key_sid(x), c);
    srv_push_conn_sid(c, 0);
}

/* ---- the push ---- */

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
    char k[8];
    size_t kl = map_key_u64(holder, k);
    struct push_set *ps = map_get(&s->push.by_sid, k, kl);
    if (!ps)
        return;
    /* A push that overflows --max-output closes its connection, which unlists it (and may
     * free the set): take the listed connections first. */
    size_t n = 0;
    struct srv_conn **to = malloc(ps->n * sizeof(*to));
    for (size_t i = 0; to && i < ps->n; i++)
        if (ps->v[i].c->proto == 3 && !ps->v[i].c->closing && waits_for(ps->v[i].c, holder))
            to[n++] = ps->v[i].c;
    struct buf msg;
    buf_init(&msg);
    if (!to || (n && build(&msg, e)))
        LOGW(&s->log, "out of memory building a push (the event stream has it)");
    else
        for (size_t i = 0; i < n; i++)
            srv_conn_push(to[i], &msg);
    buf_free(&msg);
    free(to);
}
