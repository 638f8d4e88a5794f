/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parked.c — LOCK ... WAIT requests parked until their wait ends.
 *
 * A LOCK whose proposal applied as "queued" is parked under name+sid (s->lease.parked: the key maps
 * to a list through slot->lnext) and answered when the FSM grants it (the token) or ends the wait
 * (nil, or NOSESSION when the session ended meanwhile). Only a READY leader has parked requests:
 * stepping down or stopping answers them all with an error.
 */
#include "server/cmd/cmd.h"
#include "server/server.h"

size_t srv_key_name_sid(const char *name, size_t namelen, uint64_t sid, struct buf *out)
{
    char k[8];
    buf_reset(out);
    if (buf_append(out, name, namelen) || buf_append(out, k, map_key_u64(sid, k)))
        return 0;
    return out->len;
}

int srv_park(struct srv *s, struct srv_slot *slot)
{
    struct srv_slot *head = map_get(&s->lease.parked, slot->pkey, slot->pkeylen);
    slot->lnext = head;
    if (map_put(&s->lease.parked, slot->pkey, slot->pkeylen, slot))
        return -1;
    srv_slot_set_state(slot, SLOT_PARKED);
    return 0;
}

/* Take a slot off its parked list: it is pending its reply again. */
static struct srv_slot *unpark(struct srv_slot *slot)
{
    struct srv_slot *next = slot->lnext;
    slot->lnext = NULL;
    srv_slot_set_state(slot, SLOT_PENDING);
    return next;
}

void srv_wake_parked(struct srv *s, const char *name, size_t namelen, uint64_t sid, uint64_t token)
{
    if (!srv_ready(s))
        return; /* nothing is parked on a node that is not a ready leader (step_down) */
    size_t n = srv_key_name_sid(name, namelen, sid, &s->scratch);
    struct srv_slot *slot = n ? map_del(&s->lease.parked, s->scratch.p, n) : NULL;
    struct fsm_session_view sv;
    while (slot) {
        struct srv_slot *next = unpark(slot);
        if (token)
            srv_write_tokens(slot, token); /* a LOCK.MULTI: parked under its first name */
        else if (!fsm_session_info(s->fsm, sid, &sv))
            resp_w_errorf(&slot->out, PROTO_NOSESSION " session %llu ended while waiting",
                          (unsigned long long)sid);
        else
            resp_w_nil(&slot->out, slot->proto);
        srv_slot_done(slot);
        slot = next;
    }
}

struct fail_arg {
    struct srv *s;
    int status;
};

static void fail_parked_cb(void *arg, const void *key, size_t len, void *val)
{
    struct fail_arg *fa = arg;
    struct srv_slot *slot = val;
    map_del(&fa->s->lease.parked, key, len);
    while (slot) {
        struct srv_slot *next = unpark(slot);
        srv_reply_status(fa->s, &slot->out, fa->status);
        srv_slot_done(slot);
        slot = next;
    }
}

void srv_fail_parked(struct srv *s, int status)
{
    struct fail_arg fa = {s, status};
    map_foreach(&s->lease.parked, fail_parked_cb, &fa);
}

/* The command a parked wait was queued by, for its row's permission. */
static const struct srv_cmd *parked_cmd(uint8_t op)
{
    return srv_cmd_at(op == FSM_OP_SEM_ACQUIRE || op == FSM_OP_SEM_ACQUIRE_W ? SRV_CMD_SEM_ACQUIRE
                      : op == FSM_OP_ELECT_CAMPAIGN ? SRV_CMD_ELECT_CAMPAIGN
                      : op == FSM_OP_LOCK_MULTI     ? SRV_CMD_LOCK_MULTI
                                                    : SRV_CMD_LOCK);
}

static void cancel_done(void *ctx, int status, const struct fsm_reply *reply)
{
    (void)ctx, (void)status, (void)reply; /* the FSM's grant or end of wait is what counts */
}

struct names_perm {
    const struct acl_user *u;
    const struct srv_cmd *cmd;
};

static int name_denied(void *arg, const char *n, size_t len)
{
    const struct names_perm *p = arg;
    return !cmd_perm_allows(p->u, p->cmd, n, len);
}

/* One (name, sid): if the session's user may no longer take the lock (for a LOCK.MULTI, any of
 * its names: the key holds its first one, the FSM's waiting request the others), every request
 * parked on it is answered -NOPERM and the queued wait is cancelled in the log (as a timeout
 * would; a multi-request's leaves every name), so no grant arrives for a request nobody waits
 * for. */
static void reauth_parked_cb(void *arg, const void *key, size_t len, void *val)
{
    struct srv *s = arg;
    struct srv_slot *slot = val;
    const char *name = key;
    size_t namelen = len - 8;
    const struct acl_user *u = NULL;
    bool multi = false;
    for (struct srv_slot *x = slot; x; x = x->lnext) {
        u = u ? u : x->conn ? x->conn->user : NULL;
        multi = multi || x->op == FSM_OP_LOCK_MULTI;
    }
    uint64_t sid = 0;
    for (int i = 0; i < 8; i++)
        sid |= (uint64_t)(unsigned char)name[namelen + i] << (8 * i);
    struct names_perm np = {u, srv_cmd_at(SRV_CMD_LOCK_MULTI)};
    if (!u || (cmd_perm_allows(u, parked_cmd(slot->op), name, namelen) &&
               !(multi && fsm_wait_request_names(s->fsm, name, namelen, sid, name_denied, &np))))
        return;
    struct fsm_cmd cmd = {.op = FSM_OP_CANCEL_WAIT,
                          .cancel_wait = {.name = {name, (uint32_t)namelen}, .sid = sid}};
    int rc = srv_propose(s, &cmd, cancel_done, NULL);
    if (rc != RN_OK)
        LOGW(&s->log, "SIGHUP: the wait of session %llu could not be cancelled (%d)",
             (unsigned long long)sid, rc);
    map_del(&s->lease.parked, key, len);
    s->m.perm_denials++;
    while (slot) {
        struct srv_slot *next = unpark(slot);
        cmd_perm_lost(&slot->out, u, parked_cmd(slot->op));
        srv_slot_done(slot);
        slot = next;
    }
}

void srv_reauth_parked(struct srv *s)
{
    if (!s->auth.on)
        return;
    map_foreach(&s->lease.parked, reauth_parked_cb, s);
    srv_watch_reauth(s);
    srv_observe_reauth(s);
}
