/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/elect.c — leader election: ELECT_CAMPAIGN, ELECT_PROCLAIM, ELECT_RESIGN and the
 * leader's hand-over.
 *
 * An election is a struct lock of kind FSM_KIND_ELECT: the exclusive holder is the leader (its
 * token, a fresh revision, fences its writes), candidates are exclusive waiters in FIFO order,
 * each carrying its campaign value. Owns the rules: a grant moves the candidate's value to the
 * leader (value_rev = token); PROCLAIM by the current leader's token replaces the value (a new
 * revision, value_rev); a leader that resigns or whose session ends is succeeded by the head
 * candidate in the same entry, unless its session expired with a lock-delay (then nobody leads
 * until LOCKDELAY_END). Every change of leader or value emits LEADER / PROCLAIM (LEADER with
 * sid 0 when the election is left without a leader). Values are owned by their record and
 * counted in fsm.name_bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

/* A value's own copy (NULL for an empty one); -1 if memory ran out. */
static int value_dup(struct fsm_str v, char **out)
{
    *out = NULL;
    if (v.len == 0)
        return 0;
    if (!(*out = malloc(v.len)))
        return -1;
    memcpy(*out, v.p, v.len);
    return 0;
}

/* `s` leads now with value v (ownership moves to the record; its bytes already counted). */
static uint64_t leader_take(struct actx *a, struct lock *l, struct sess *s, char *v, uint32_t n)
{
    uint64_t token = fsm_lock_grant(a, l, s);
    l->x->value = v; /* an election has its lock_x from its creation (fsm_lock_create) */
    l->x->value_len = n;
    l->x->value_rev = token;
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_LEADER, s->sid, token, 0, l);
    if (e)
        e->value = (struct fsm_str){v ? v : "", n};
    return token;
}

bool fsm_elect_grant_head(struct actx *a, struct lock *l, struct waiter *w)
{
    struct sess *s = w->sess;
    char *v = w->value;
    uint32_t n = w->value_len;
    w->value = NULL; /* the bytes stay counted: the leader owns them now */
    w->value_len = 0;
    fsm_waiter_remove(a->f, w);
    leader_take(a, l, s, v, n);
    return true;
}

void fsm_elect_leader_gone(struct actx *a, struct lock *l, uint64_t delay_ms)
{
    if (l->x) {
        a->f->name_bytes -= l->x->value_len;
        free(l->x->value);
        l->x->value = NULL;
        l->x->value_len = 0;
        l->x->value_rev = 0;
    }
    if (delay_ms || !l->wq_head) /* else the head candidate's LEADER follows in this entry */
        fsm_lock_emit(a, FSM_EV_LEADER, 0, 0, 0, l);
}

/* Lead at once: a new election, or one nobody leads, delays or waits for. */
static void lead_now(struct actx *a, struct lock *l, const struct fsm_cmd_elect_campaign *c,
                     struct sess *s, struct fsm_reply *r)
{
    char *v;
    if (value_dup(c->value, &v) ||
        (!l && !(l = fsm_lock_create(a->f, c->name.p, c->name.len, FSM_KIND_ELECT)))) {
        free(v);
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    a->f->name_bytes += c->value.len;
    fsm_reply_int(r, leader_take(a, l, s, v, c->value.len));
}

static void candidate_enqueue(struct actx *a, struct lock *l,
                              const struct fsm_cmd_elect_campaign *c, struct sess *s,
                              struct fsm_reply *r)
{
    char *v;
    if (value_dup(c->value, &v)) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    fsm_lock_enqueue(a, l, s, c->wait_ms, LOCK_MODE_EXCLUSIVE, r);
    if (r->kind != FSM_REPLY_QUEUED) {
        free(v);
        return;
    }
    l->wq_tail->value = v;
    l->wq_tail->value_len = c->value.len;
    a->f->name_bytes += c->value.len;
}

/*
 * ELECT_CAMPAIGN: idempotent for the leader (its token; the value is PROCLAIM's to change) and
 * for a queued candidate (keeps its place and first value).
 */
void fsm_op_elect_campaign(struct actx *a, const struct fsm_cmd_elect_campaign *c,
                           struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    struct waiter *w;
    if (fsm_lock_wrongtype(l, FSM_KIND_ELECT, r))
        return;
    if (l && l->holder == s)
        fsm_reply_int(r, l->token);
    else if (l && (w = fsm_waiter_find(l, s)))
        fsm_lock_requeued(l, w, false, c->wait_ms, r);
    else if (!l || (!l->holder && !l->in_delay && !l->wq_head))
        lead_now(a, l, c, s, r);
    else if (c->wait_ms == 0)
        r->kind = FSM_REPLY_NIL;
    else
        candidate_enqueue(a, l, c, s, r);
}

/* ELECT_PROCLAIM: only the current leader, named by its token, changes the value. */
void fsm_op_elect_proclaim(struct actx *a, const struct fsm_cmd_elect_proclaim *c,
                           struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    if (fsm_lock_wrongtype(l, FSM_KIND_ELECT, r))
        return;
    char nm[FSM_NAME_SHOWN], *v;
    if (!l || l->holder != s || l->token != c->token) {
        fsm_reply_err(r,
                      PROTO_STALE " token %llu of session %llu is not the leader's of election %s",
                      (unsigned long long)c->token, (unsigned long long)s->sid,
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    if (value_dup(c->value, &v)) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    a->f->name_bytes += (uint64_t)c->value.len - l->x->value_len;
    free(l->x->value);
    l->x->value = v;
    l->x->value_len = c->value.len;
    l->x->value_rev = fsm_next_rev(a);
    struct fsm_event *e = fsm_lock_emit(a, FSM_EV_PROCLAIM, s->sid, l->token, 0, l);
    if (e)
        e->value = (struct fsm_str){v ? v : "", c->value.len};
    fsm_reply_int(r, LX(l)->value_rev);
}

/* ELECT_RESIGN: the leader steps down (the head candidate leads in this entry); a candidate
 * withdraws. */
void fsm_op_elect_resign(struct actx *a, const struct fsm_cmd_lock_ref *c, struct fsm_reply *r)
{
    struct sess *s = fsm_sess_find(a->f, c->sid);
    if (!s) {
        fsm_nosession(r, c->sid);
        return;
    }
    struct lock *l = fsm_lock_find(a->f, c->name.p, c->name.len);
    struct waiter *w = NULL;
    if (fsm_lock_wrongtype(l, FSM_KIND_ELECT, r))
        return;
    if (l && l->holder == s) {
        fsm_lock_release(a, l, 0, false);
    } else if (l && (w = fsm_waiter_find(l, s))) {
        fsm_waiter_leave(a, w);
    } else {
        char nm[FSM_NAME_SHOWN];
        fsm_reply_err(r, PROTO_NOTHOLDER " session %llu neither leads nor campaigns in election %s",
                      (unsigned long long)s->sid,
                      fsm_printable(c->name.p, c->name.len, nm, sizeof(nm)));
        return;
    }
    if (a->nrev == 0)
        fsm_next_rev(a);
    r->kind = FSM_REPLY_OK;
}
