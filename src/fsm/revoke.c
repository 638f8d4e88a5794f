/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/revoke.c — cooperative revocation: asking the holder of a lock to let go, and taking the
 * lock from it at a deadline if it does not.
 *
 * Owns a lock's pending revoke (struct lock's rv_* fields, internal.h) and the two ops:
 *   LOCK_REVOKE (name, deadline_ms, reason, by): the lock's exclusive grant gets a pending
 *     revoke and its holder a REVOKE_REQUESTED event; INT token of that grant. A lock with no
 *     exclusive holder (free, in lock-delay, held shared only) answers NOTHOLDER; another kind
 *     of object WRONGTYPE; nothing changes then.
 *
 * What a deadline is: rv_ms is a length, not an instant (no rule reads a clock), counted from
 * the apply of the entry that last set it, on each node's monotonic clock (src/server/lease
 * arms it on every node; only the leader acts); a new leader counts it again in full from its
 * takeover. Two lengths asked at different times cannot be compared here (10 s asked at t and
 * 10 s at t+5 must end at t+10, 5 s after the second), so the leader merges before it
 * proposes: with a deadline of the same grant armed and nothing else of its own in flight (the
 * entry then applies to the state it read), it proposes the shorter of the asked length and
 * what is left on its clock, "ask only" (0) included (src/server/cmd/cmd_revoke.c). Here a
 * second revoke of the same grant replaces the reason and the requester and stores the
 * shorter length (0 keeps the pending one); its REVOKE_REQUESTED event carries the stored
 * deadline, from which the holder, the leader's timer and every node count alike.
 *   REVOKE_END (name, token): proposed by the leader when a revoke's deadline passed on its
 *     monotonic clock (src/server/lease). If grant `token` still holds the lock under a pending
 *     revoke with a deadline, it is released as an expiry releases it: the holder's lock-delay
 *     starts, or the next waiter is granted a new, larger token; the holder's session lives on.
 *     Otherwise (released, handed on, a stale timer) it changes nothing.
 *   LOCK_NOTIFY (LOCK ... NOTIFY): LOCK, and when it queues the session behind an exclusive
 *     holder, a WAIT_NOTIFY event (the waiter's sid, the holder's token) tells the holder that
 *     someone waits. Once per waiter: a session already queued is not queued again (a retry
 *     tells nobody). Behind shared holders or a lock-delay nobody is told.
 *
 * Invariants (fsm_check_invariants): rv_token != 0 only on a lock of kind LOCK whose exclusive
 * holder's token it is; n_revokes counts those locks. Any release of the grant clears its
 * revoke (fsm_lock_release calls fsm_revoke_clear), so a deadline can never fire on a later
 * grant of the same name. rv_text is owned by the lock record; its bytes are not counted in
 * --max-data-bytes (at most two strings of --max-key bytes per held lock).
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

void fsm_revoke_clear(struct fsm *f, struct lock *l)
{
    struct lock_x *x = l->x;
    if (!x || !x->rv_token)
        return;
    f->n_revokes--;
    free(x->rv_text);
    x->rv_text = NULL;
    x->rv_token = x->rv_ms = 0;
    x->rv_reason_len = x->rv_by_len = 0;
}

int fsm_revoke_set(struct fsm *f, struct lock *l, uint64_t ms, struct fsm_str reason,
                   struct fsm_str by)
{
    size_t n = (size_t)reason.len + by.len;
    char *text = n ? malloc(n) : NULL;
    struct lock_x *x = fsm_lock_x(l);
    if ((n && !text) || !x) {
        free(text);
        return -1;
    }
    if (reason.len)
        memcpy(text, reason.p, reason.len);
    if (by.len)
        memcpy(text + reason.len, by.p, by.len);
    if (!x->rv_token)
        f->n_revokes++;
    free(x->rv_text);
    x->rv_text = text;
    x->rv_token = l->token;
    x->rv_ms = ms;
    x->rv_reason_len = (uint16_t)reason.len;
    x->rv_by_len = (uint16_t)by.len;
    return 0;
}

/* The deadline a second revoke of the grant leaves, counted from this apply: the shorter
 * length (the leader already took off what passed, see the header); 0 (ask only) keeps the
 * other. */
static uint64_t merged_deadline(uint64_t old_ms, uint64_t new_ms)
{
    if (!old_ms || !new_ms)
        return old_ms ? old_ms : new_ms;
    return old_ms < new_ms ? old_ms : new_ms;
}

void fsm_op_lock_revoke(struct actx *a, const struct fsm_cmd_lock_revoke *c, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_lock_wrongtype(l, FSM_KIND_LOCK, r))
        return;
    if (!l || !l->holder) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_NOTHOLDER " lock %s has no exclusive holder to revoke",
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    uint64_t ms = LX(l)->rv_token ? merged_deadline(LX(l)->rv_ms, c->deadline_ms) : c->deadline_ms;
    if (fsm_revoke_set(a->f, l, ms, c->reason, c->by)) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_next_rev(a);
    struct fsm_event *e =
        fsm_lock_emit(a, FSM_EV_REVOKE_REQUESTED, l->holder->sid, l->token, LX(l)->rv_ms, l);
    if (e) {
        e->value = (struct fsm_str){LX(l)->rv_text ? LX(l)->rv_text : "", LX(l)->rv_reason_len};
        e->by = (struct fsm_str){LX(l)->rv_text ? LX(l)->rv_text + LX(l)->rv_reason_len : "",
                                 LX(l)->rv_by_len};
    }
    fsm_reply_int(r, l->token);
}

void fsm_op_lock_notify(struct actx *a, const struct fsm_cmd_lock *c, struct fsm_reply *r)
{
    if (!fsm_lock_exclusive(a, c, r))
        return;
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    fsm_lock_emit(a, FSM_EV_WAIT_NOTIFY, c->sid, l->token, c->wait_ms, l);
}

void fsm_op_revoke_end(struct actx *a, const struct fsm_cmd_revoke_end *c, struct fsm_reply *r)
{
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    r->kind = FSM_REPLY_OK;
    if (!l || l->kind != FSM_KIND_LOCK || !l->holder || l->token != c->token ||
        LX(l)->rv_token != c->token || LX(l)->rv_ms == 0)
        return;
    fsm_lock_release(a, l, l->holder->lockdelay_ms, true);
    if (a->nrev == 0)
        fsm_next_rev(a);
}
