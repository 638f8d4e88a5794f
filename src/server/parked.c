/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parked.c — LOCK ... WAIT requests parked until their wait ends.
 *
 * A LOCK whose proposal applied as "queued" is parked under name+sid (s->parked: the key maps to
 * a list through slot->lnext) and answered when the FSM grants it (the token) or ends the wait
 * (nil, or NOSESSION when the session ended meanwhile). Only a READY leader has parked requests:
 * stepping down or stopping answers them all with an error.
 */
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
    struct srv_slot *head = map_get(&s->parked, slot->pkey, slot->pkeylen);
    slot->lnext = head;
    if (map_put(&s->parked, slot->pkey, slot->pkeylen, slot))
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
    struct srv_slot *slot = n ? map_del(&s->parked, s->scratch.p, n) : NULL;
    struct fsm_session_view sv;
    while (slot) {
        struct srv_slot *next = unpark(slot);
        if (token)
            resp_w_uint(&slot->out, token);
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
    map_del(&fa->s->parked, key, len);
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
    map_foreach(&s->parked, fail_parked_cb, &fa);
}
