/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/reent.c — reentrant sessions: SESSION_OPEN_REENTRANT, the hold count of a lock held by
 * one, and their snapshot section (tag 2).
 *
 * A reentrant session (the `reentrant` flag and `max_count` of struct sess, fixed for its life)
 * that LOCKs a lock it already holds exclusively counts up (struct lock's `reholds`: the holds
 * beyond the first) and gets the same token; its UNLOCK counts down and releases only the last
 * hold. Everything else is the lock's ordinary rule, so the count is one number on the grant:
 *   - the token does not move: no other session can hold the lock between two holds of one
 *     session, so the resource sees no one else's write in between, and a new token would make
 *     the outer caller's own token stale in its own hands;
 *   - every end of the grant that is not an UNLOCK ends every hold at once (fsm_lock_release
 *     clears the count): expiry, close, SESSION_REVOKE, a revoke's deadline (REVOKE_END), and
 *     an UNLOCK an admin makes on another user's session (a forced release);
 *   - shared holds, semaphore permits and elections are not counted (a LOCK SHARED by a shared
 *     holder answers its token, as for any session); LOCK_MULTI takes only names the session
 *     does not hold, so its grants start at one hold each;
 *   - a count change is a state change: it takes a revision (not a token) and is replicated as
 *     the LOCK or UNLOCK entry it is; a retried LOCK (REQ with the same seq) is answered from the
 *     request table and does not count again.
 * A LOCK at the session's max_count is refused (ERR, nothing changes).
 *
 * The snapshot section (tag 2, written while a reentrant session lives):
 *   varint n (>= 1), n times: varint sid (strictly increasing, a live session), varint max_count
 *     (1..FSM_MAX_HOLD_COUNT);
 *   varint m, m times: str lock name (strictly increasing byte order), varint count (2..its
 *     holder's max_count): each lock held exclusively by one of those sessions with more than one
 *     hold (a count of 1 is the base record's grant).
 */
#include <string.h>

#include "fsm/internal.h"

void fsm_op_session_open_r(struct actx *a, const struct fsm_cmd_session_open_r *c,
                           struct fsm_reply *r)
{
    if (c->max_count == 0 || c->max_count > FSM_MAX_HOLD_COUNT) {
        fsm_reply_err(r, PROTO_ERR " max count must be 1..%u", FSM_MAX_HOLD_COUNT);
        return;
    }
    struct sess *s = fsm_sess_open(a, c->ttl_ms, c->lockdelay_ms, c->name, r);
    if (!s)
        return;
    s->reentrant = 1;
    s->max_count = (uint32_t)c->max_count;
    a->f->n_reent++;
}

void fsm_reent_relock(struct actx *a, struct lock *l, struct sess *s, struct fsm_reply *r)
{
    if (!s->reentrant) { /* the behaviour of every session before reentrancy: no count */
        fsm_reply_int(r, l->token);
        return;
    }
    if (1 + (uint64_t)LX(l)->reholds >= s->max_count) {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r,
                      PROTO_ERR " session %llu holds lock %s %u times, its MAXCOUNT (UNLOCK "
                                "first)",
                      (unsigned long long)s->sid,
                      fsm_printable(l->name, l->name_len, nm, sizeof(nm)), s->max_count);
        return;
    }
    if (!fsm_lock_x(l)) { /* the count lives in the record's lock_x */
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    l->x->reholds++;
    fsm_next_rev(a);
    fsm_reply_int(r, l->token);
}

/* An admin's UNLOCK of another user's session is an operator taking the lock away: it ends
 * the grant, as a revoke does, whatever the count. */
static bool forced(const struct actx *a, const struct sess *s)
{
    return a->c->checked && a->c->admin && !fsm_sess_owned_by(s, a->c->user);
}

bool fsm_reent_unlock(struct actx *a, struct lock *l)
{
    if (LX(l)->reholds == 0 || forced(a, l->holder))
        return false;
    l->x->reholds--;
    return true;
}

/* ---- invariants ---- */

const char *fsm_reent_check(const struct fsm *f)
{
    uint64_t n = 0;
    for (const struct sess *s = f->sess_head; s; s = s->snext) {
        if (s->reentrant > 1 || (s->reentrant != 0) != (s->max_count != 0) ||
            s->max_count > FSM_MAX_HOLD_COUNT)
            return "bad reentrant session";
        n += s->reentrant;
        for (const struct lock *l = s->held_head; l; l = l->hnext)
            if (LX(l)->reholds && (!s->reentrant || (uint64_t)LX(l)->reholds >= s->max_count))
                return "hold count on a lock of a non-reentrant holder, or over its max count";
    }
    return n == f->n_reent ? NULL : "reentrant session count wrong";
}

/* ---- the snapshot section ---- */

bool fsm_reent_present(const struct fsm *f)
{
    return f->n_reent > 0;
}

static int count_visit(void *arg, const struct onode *n)
{
    const struct lock *l = ONODE_OWNER(n, struct lock, o);
    uint64_t *m = arg;
    *m += LX(l)->reholds > 0;
    return 0;
}

static int emit_visit(void *arg, const struct onode *n)
{
    const struct lock *l = ONODE_OWNER(n, struct lock, o);
    struct buf *b = arg;
    if (!LX(l)->reholds)
        return 0;
    return buf_put_bytes(b, l->name, l->name_len) || buf_put_varint(b, 1 + (uint64_t)LX(l)->reholds)
               ? -1
               : 0;
}

int fsm_reent_emit(const struct fsm *f, struct buf *b)
{
    uint64_t m = 0;
    if (buf_put_varint(b, f->n_reent))
        return -1;
    for (const struct sess *s = f->sess_head; s; s = s->snext)
        if (s->reentrant && (buf_put_varint(b, s->sid) || buf_put_varint(b, s->max_count)))
            return -1;
    fsm_otree_walk(f->lock_names, NULL, 0, count_visit, &m);
    if (buf_put_varint(b, m))
        return -1;
    return fsm_otree_walk(f->lock_names, NULL, 0, emit_visit, b) ? -1 : 0;
}

static const char *restore_sessions(struct fsm *nf, struct rd *r)
{
    uint64_t n, sid, max, prev = 0;
    if (fsm_rd_varint(r, &n) || n == 0)
        return "bad reentrant session count";
    for (uint64_t i = 0; i < n; i++) {
        if (fsm_rd_varint(r, &sid) || fsm_rd_varint(r, &max))
            return "truncated reentrant session";
        struct sess *s = fsm_sess_find(nf, sid);
        if (!s || sid <= prev)
            return "reentrant session not live or not in increasing order";
        if (max == 0 || max > FSM_MAX_HOLD_COUNT)
            return "bad max count";
        s->reentrant = 1;
        s->max_count = (uint32_t)max;
        nf->n_reent++;
        prev = sid;
    }
    return NULL;
}

const char *fsm_reent_restore(struct fsm *nf, struct rd *r)
{
    uint64_t m, count;
    const char *why = restore_sessions(nf, r), *p, *prev = NULL;
    uint32_t len, prev_len = 0;
    if (why)
        return why;
    if (fsm_rd_varint(r, &m))
        return "truncated hold count list";
    for (uint64_t i = 0; i < m; i++) {
        if (fsm_rd_str(r, &p, &len, FSM_MAX_NAME) || fsm_rd_varint(r, &count))
            return "truncated hold count";
        struct lock *l = fsm_lock_find(nf, p, len);
        if (prev && fsm_name_cmp(prev, prev_len, p, len) >= 0)
            return "hold counts not in increasing name order";
        if (!l || l->kind != FSM_KIND_LOCK || !l->holder || !l->holder->reentrant)
            return "hold count on a lock not held by a reentrant session";
        if (count < 2 || count > l->holder->max_count)
            return "bad hold count";
        if (!fsm_lock_x(l))
            return "out of memory";
        l->x->reholds = (uint32_t)(count - 1);
        prev = p;
        prev_len = len;
    }
    return NULL;
}
