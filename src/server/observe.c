/*
 * observe.c — ELECT.OBSERVE name [AFTER rev] [WAIT ms]: a read (after the barrier on the
 * leader, or on this node's state after READONLY) that answers at once if the election changed
 * after `rev`, else parks until an applied LEADER / PROCLAIM event for the name changes it, its
 * WAIT runs out (nil), the node steps down (the error; READONLY observers stay) or stops.
 *
 * The answer is the election's state as a map: sid, token, value, since_rev, rev — the leader
 * (rev: its grant or last PROCLAIM), or sid 0 when nobody leads (rev: the revision it was
 * seen leaderless at). A leader is answered only if rev > AFTER, so an observer that passes
 * back the rev it saw never sees an older leader after a newer one. A leaderless state has no
 * record in the FSM: s->leaderless remembers, on every node, the revision of each LEADER event
 * that left an election leaderless (dropped when it gets a leader); a name it does not know
 * (after a restart or a snapshot) is answered leaderless at the current revision and then
 * remembered, so the next OBSERVE AFTER that revision parks. It holds at most
 * OBSERVE_LEADERLESS_MAX names; past that it is cleared (only costs one repeated answer).
 *
 * An observer owns its copy of the name; its slot is freed through srv_slot_done.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd.h"

#define OBSERVE_LEADERLESS_MAX 65536
#define ELECT_FIELDS 5

struct srv_observer {
    struct srv_observer *prev, *next;
    struct srv_slot *slot;
    uint64_t deadline; /* monotonic ms; 0 = no WAIT, no end */
    uint64_t after;
    bool stale; /* READONLY: stays when this node steps down */
    size_t name_len;
    char name[];
};

/* ELECT.LEADER's and ELECT.OBSERVE's map (sid 0: nobody leads, as of `rev`). */
void srv_write_elect(struct buf *out, int proto, const struct fsm_elect_view *v, uint64_t rev)
{
    resp_w_map(out, proto, ELECT_FIELDS);
    resp_w_bulk_str(out, "sid");
    resp_w_uint(out, v ? v->sid : 0);
    resp_w_bulk_str(out, "token");
    resp_w_uint(out, v ? v->token : 0);
    resp_w_bulk_str(out, "value");
    resp_w_bulk(out, v ? v->value.p : "", v ? v->value.len : 0);
    resp_w_bulk_str(out, "since_rev");
    resp_w_uint(out, v ? v->token : 0);
    resp_w_bulk_str(out, "rev");
    resp_w_uint(out, v ? v->rev : rev);
}

static void leaderless_set(struct srv *s, const char *name, size_t len, uint64_t rev)
{
    if (s->leaderless.n >= OBSERVE_LEADERLESS_MAX)
        map_free(&s->leaderless, NULL);
    map_put(&s->leaderless, name, len, (void *)(uintptr_t)rev); /* on failure: asked again */
}

void srv_observe_event(struct srv *s, const struct fsm_event *e)
{
    if (e->type == FSM_EV_LEADER && e->sid == 0)
        leaderless_set(s, e->name.p, e->name.len, fsm_revision(s->fsm));
    else if (e->type == FSM_EV_LEADER)
        map_del(&s->leaderless, e->name.p, e->name.len);
    s->observe_dirty = true;
}

/* 1 with the answer written if the election changed after `after` (any state if !has_after),
 * else 0: park. */
static int observe_answer(struct srv *s, const char *name, size_t len, bool has_after,
                          uint64_t after, struct buf *out, int proto)
{
    struct fsm_elect_view v;
    if (fsm_elect_leader(s->fsm, name, len, &v)) {
        if (has_after && v.rev <= after)
            return 0;
        srv_write_elect(out, proto, &v, 0);
        return 1;
    }
    uint64_t since = (uint64_t)(uintptr_t)map_get(&s->leaderless, name, len);
    uint64_t now = fsm_revision(s->fsm);
    if (!since) { /* not known here: leaderless as of now */
        if (has_after && after >= now)
            return 0;
        leaderless_set(s, name, len, now);
        since = now;
    } else if (has_after && since <= after) {
        return 0;
    }
    srv_write_elect(out, proto, NULL, since);
    return 1;
}

static void observer_finish(struct srv *s, struct srv_observer *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        s->observers = o->next;
    if (o->next)
        o->next->prev = o->prev;
    s->n_observers--;
    srv_slot_set_state(o->slot, SLOT_PENDING);
    srv_slot_done(o->slot);
    free(o);
}

static int observe_park(struct srv_req *r, struct fsm_str name, uint64_t after, uint64_t wait)
{
    struct srv_observer *o = malloc(sizeof(*o) + name.len);
    if (!o)
        return -1;
    memcpy(o->name, name.p, name.len);
    o->name_len = name.len;
    o->slot = r->slot;
    o->after = after;
    o->stale = r->c->stale_reads;
    o->deadline = wait ? srv_now_ms() + wait : 0;
    o->prev = NULL;
    o->next = r->s->observers;
    if (o->next)
        o->next->prev = o;
    r->s->observers = o;
    r->s->n_observers++;
    srv_slot_set_state(r->slot, SLOT_PARKED);
    r->async = true;
    return 0;
}

void srv_observe_wake(struct srv *s)
{
    if (!s->observe_dirty)
        return;
    s->observe_dirty = false;
    for (struct srv_observer *o = s->observers, *next; o; o = next) {
        next = o->next;
        struct srv_slot *slot = o->slot;
        if (!slot->conn ||
            observe_answer(s, o->name, o->name_len, true, o->after, &slot->out, slot->proto))
            observer_finish(s, o);
    }
}

void srv_observe_tick(struct srv *s, uint64_t now)
{
    for (struct srv_observer *o = s->observers, *next; o; o = next) {
        next = o->next;
        if (!o->slot->conn) {
            observer_finish(s, o);
        } else if (o->deadline && now >= o->deadline) {
            resp_w_nil(&o->slot->out, o->slot->proto);
            observer_finish(s, o);
        }
    }
}

void srv_observe_fail(struct srv *s, int status, bool all)
{
    for (struct srv_observer *o = s->observers, *next; o; o = next) {
        next = o->next;
        if (all || !o->stale) {
            srv_reply_status(s, &o->slot->out, status);
            observer_finish(s, o);
        }
    }
}

void srv_observe_free(struct srv *s)
{
    map_free(&s->leaderless, NULL);
}

/* ELECT.OBSERVE name [AFTER rev] [WAIT ms] */
void electObserveCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t after = 0, wait = 0;
    bool has_after = false, has_wait = false; /* WAIT 0: as without WAIT */
    if (cmd_arg_name(r, 1, "election name", &name) || cmd_check_kind(r, &name, FSM_KIND_ELECT))
        return;
    for (size_t i = 2; i < r->argc; i += 2) {
        bool a = resp_arg_is(&r->argv[i], "AFTER"), w = resp_arg_is(&r->argv[i], "WAIT");
        if ((!a && !w) || (a && has_after) || (w && has_wait) || i + 1 >= r->argc) {
            cmd_reply_err(r, PROTO_ERR " syntax error: ELECT.OBSERVE name [AFTER rev] [WAIT ms]");
            return;
        }
        if (a ? cmd_arg_u64(r, i + 1, "AFTER", &after)
              : cmd_arg_range(r, i + 1, "WAIT", 0, r->s->cfg.max_wait, &wait))
            return;
        has_after |= a;
        has_wait |= w;
    }
    if (observe_answer(r->s, name.p, name.len, has_after, after, r->out, r->proto))
        return;
    if (!wait || !r->slot || !r->c || observe_park(r, name, after, wait))
        resp_w_nil(r->out, r->proto);
}
