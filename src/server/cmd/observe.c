/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe.c — ELECT.OBSERVE name [AFTER rev] [WAIT ms]: a read (after the barrier on the
 * leader, or on this node's state after READONLY) that answers at once if the election changed
 * after `rev`, else parks until an applied LEADER / PROCLAIM event for the name changes it, its
 * WAIT runs out (nil), the node steps down (the error; READONLY observers stay) or stops.
 *
 * The answer is a map: sid, token, value, since_rev, rev (ELECT.LEADER's fields; sid 0 when
 * nobody leads) and compacted. With AFTER it is the FIRST change of the election after `rev`,
 * read from the event history (watch.c, the ring behind XREAD): its first LEADER / PROCLAIM
 * event whose change revision is > AFTER — the grant's token for a new leader, the entry's
 * revision for a PROCLAIM or a leaderless state. Passing back each answer's rev thus walks the
 * changes one by one: none skipped, never an older leader after a newer one. Several changes
 * with the same revision (one entry) answer as the last of them.
 *
 * When the history cannot say (AFTER is below the ring's floor: evicted, or before the
 * snapshot this node restarted or was installed from; or the change's value was longer than
 * --event-value-max and is no longer the current one), the CURRENT state is answered if it
 * changed after AFTER, with compacted 1 (changes in between may be skipped). The current state
 * of a leaderless election has no record in the FSM: s->observe.leaderless remembers, on every
 * node, the revision of each LEADER event that left an election leaderless (dropped when it gets a
 * leader); a name it does not know (after a restart or a snapshot) is answered leaderless at
 * the current revision and then remembered. It holds at most OBSERVE_LEADERLESS_MAX names;
 * past that it is cleared (only costs one repeated answer).
 *
 * An observer owns its copy of the name and remembers the newest history id it has scanned,
 * so a wake scans only the events added since; its slot is freed through srv_slot_done.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/list.h"
#include "server/cmd/cmd.h"

#define OBSERVE_LEADERLESS_MAX 65536
#define ELECT_FIELDS 5

/* One state of an election, as answered (value borrowed). */
struct elect_state {
    uint64_t sid, token, rev;
    const char *value;
    size_t value_len;
};

struct srv_observer {
    struct srv_observer *prev, *next;
    struct srv_slot *slot;
    uint64_t *parked;  /* its user's parked count (srv_parked_counter), or NULL */
    uint64_t deadline; /* monotonic ms; 0 = no WAIT, no end */
    uint64_t after;
    struct watch_id seen; /* history scanned up to here: no change of the name in it */
    bool stale;           /* READONLY: stays when this node steps down */
    size_t name_len;
    char name[];
};

/* The map; compacted < 0: without that field (ELECT.LEADER). */
static void write_state(struct buf *out, int proto, const struct elect_state *st, int compacted)
{
    resp_w_map(out, proto, ELECT_FIELDS + (compacted >= 0));
    resp_w_bulk_str(out, "sid");
    resp_w_uint(out, st->sid);
    resp_w_bulk_str(out, "token");
    resp_w_uint(out, st->token);
    resp_w_bulk_str(out, "value");
    resp_w_bulk(out, st->value, st->value_len);
    resp_w_bulk_str(out, "since_rev");
    resp_w_uint(out, st->token);
    resp_w_bulk_str(out, "rev");
    resp_w_uint(out, st->rev);
    if (compacted >= 0) {
        resp_w_bulk_str(out, "compacted");
        resp_w_uint(out, (uint64_t)compacted);
    }
}

static struct elect_state state_of_view(const struct fsm_elect_view *v, uint64_t rev)
{
    if (!v)
        return (struct elect_state){0, 0, rev, "", 0};
    return (struct elect_state){v->sid, v->token, v->rev, v->value.p ? v->value.p : "",
                                v->value.len};
}

/* ELECT.LEADER's map (sid 0: nobody leads, as of `rev`). */
void srv_write_elect(struct buf *out, int proto, const struct fsm_elect_view *v, uint64_t rev)
{
    struct elect_state st = state_of_view(v, rev);
    write_state(out, proto, &st, -1);
}

static void leaderless_set(struct srv *s, const char *name, size_t len, uint64_t rev)
{
    if (map_count(&s->observe.leaderless) >= OBSERVE_LEADERLESS_MAX)
        map_free(&s->observe.leaderless, NULL);
    map_put(&s->observe.leaderless, name, len,
            (void *)(uintptr_t)rev); /* on failure: asked again */
}

void srv_observe_event(struct srv *s, const struct fsm_event *e)
{
    if (e->type == FSM_EV_LEADER && e->sid == 0)
        leaderless_set(s, e->name.p, e->name.len, fsm_revision(s->fsm));
    else if (e->type == FSM_EV_LEADER)
        map_del(&s->observe.leaderless, e->name.p, e->name.len);
    s->observe.dirty = true;
}

/* The current state, if it changed after `after` (any state if !has_after): 1 with the answer
 * written, else 0. */
static int current_answer(struct srv *s, const char *name, size_t len, bool has_after,
                          uint64_t after, struct buf *out, int proto)
{
    struct fsm_elect_view v;
    struct elect_state st;
    if (fsm_elect_leader(s->fsm, name, len, &v)) {
        if (has_after && v.rev <= after)
            return 0;
        st = state_of_view(&v, 0);
    } else {
        uint64_t since = (uint64_t)(uintptr_t)map_get(&s->observe.leaderless, name, len);
        uint64_t now = fsm_revision(s->fsm);
        if (!since) { /* not known here: leaderless as of now */
            if (has_after && after >= now)
                return 0;
            leaderless_set(s, name, len, now);
            since = now;
        } else if (has_after && since <= after) {
            return 0;
        }
        st = state_of_view(NULL, since);
    }
    write_state(out, proto, &st, has_after);
    return 1;
}

static bool is_change_of(const struct watch_entry *e, const char *name, size_t len)
{
    uint8_t t = watch_entry_type(e);
    return (t == FSM_EV_LEADER || t == FSM_EV_PROCLAIM) && e->name_len == len &&
           memcmp(e->data, name, len) == 0;
}

/* The revision of the change an event stands for: a new leader's grant (its token, taken
 * inside the entry), else (PROCLAIM, leaderless) the revision its entry ended at. */
static uint64_t change_rev(const struct watch_entry *e)
{
    return watch_entry_type(e) == FSM_EV_LEADER && e->sid ? e->token : e->id.rev;
}

/* The state as of history entry e (its value from the FSM when the ring did not keep it and
 * it is still the current one); -1 if it cannot be told. */
static int state_of_entry(struct srv *s, const struct watch_entry *e, struct elect_state *st)
{
    *st = (struct elect_state){e->sid, e->sid ? e->token : 0, change_rev(e), "", 0};
    if (e->value_kept) {
        st->value = e->data + e->name_len;
        st->value_len = e->value_len;
        return 0;
    }
    struct fsm_elect_view v;
    if (!fsm_elect_leader(s->fsm, e->data, e->name_len, &v) || v.token != st->token ||
        v.rev != st->rev)
        return -1;
    st->value = v.value.p ? v.value.p : "";
    st->value_len = v.value.len;
    return 0;
}

/*
 * The first change of the election after `after` from the history: 1 with the answer written,
 * 0 if none (the history was scanned up to *seen, which moves), -1 if the history cannot say.
 * The scan starts after *seen when it is past `after` (a parked observer's earlier scans).
 */
static int history_answer(struct srv *s, const char *name, size_t len, uint64_t after,
                          struct watch_id *seen, struct buf *out, int proto)
{
    const struct watch *w = &s->watch;
    if (after < w->floor.rev) /* events of revisions after `after` may be gone */
        return -1;
    struct watch_id from = {after, UINT64_MAX};
    if (watch_id_cmp(*seen, from) > 0)
        from = *seen;
    const struct watch_entry *hit = NULL;
    for (size_t i = watch_after(w, from); i < w->n; i++) {
        const struct watch_entry *e = watch_at(w, i);
        if (!is_change_of(e, name, len) || change_rev(e) <= after)
            continue;
        if (hit && change_rev(e) != change_rev(hit))
            break;
        hit = e; /* the last of the changes sharing one revision */
    }
    *seen = w->last;
    if (!hit)
        return 0;
    struct elect_state st;
    if (state_of_entry(s, hit, &st))
        return -1;
    write_state(out, proto, &st, 0);
    return 1;
}

/* 1 with the answer written if the election changed after `after` (the current state if
 * !has_after), else 0: park. */
static int observe_answer(struct srv *s, const char *name, size_t len, bool has_after,
                          uint64_t after, struct watch_id *seen, struct buf *out, int proto)
{
    if (has_after) {
        int h = history_answer(s, name, len, after, seen, out, proto);
        if (h >= 0)
            return h;
    }
    return current_answer(s, name, len, has_after, after, out, proto);
}

static void observer_finish(struct srv *s, struct srv_observer *o)
{
    DLIST_UNLINK(s->observe.observers, o);
    s->observe.n_observers--;
    if (o->parked)
        (*o->parked)--;
    srv_slot_set_state(o->slot, SLOT_PENDING);
    srv_slot_done(o->slot);
    free(o);
}

static int observe_park(struct srv_req *r, struct fsm_str name, uint64_t after,
                        struct watch_id seen, uint64_t wait)
{
    struct srv_observer *o = malloc(sizeof(*o) + name.len);
    if (!o)
        return -1;
    memcpy(o->name, name.p, name.len);
    o->name_len = name.len;
    o->slot = r->slot;
    o->after = after;
    o->seen = seen;
    o->stale = r->c->stale_reads;
    o->deadline = wait ? clock_ms() + wait : 0;
    DLIST_PUSH(r->s->observe.observers, o);
    r->s->observe.n_observers++;
    o->parked = srv_parked_counter(r->s, r->c ? r->c->user : NULL);
    if (o->parked)
        (*o->parked)++;
    srv_slot_set_state(r->slot, SLOT_PARKED);
    r->async = true;
    return 0;
}

void srv_observe_wake(struct srv *s)
{
    if (!s->observe.dirty)
        return;
    s->observe.dirty = false;
    for (struct srv_observer *o = s->observe.observers, *next; o; o = next) {
        next = o->next;
        struct srv_slot *slot = o->slot;
        if (!slot->conn || observe_answer(s, o->name, o->name_len, true, o->after, &o->seen,
                                          &slot->out, slot->proto))
            observer_finish(s, o);
    }
}

void srv_observe_tick(struct srv *s, uint64_t now)
{
    for (struct srv_observer *o = s->observe.observers, *next; o; o = next) {
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
    for (struct srv_observer *o = s->observe.observers, *next; o; o = next) {
        next = o->next;
        if (all || !o->stale) {
            srv_reply_status(s, &o->slot->out, status);
            observer_finish(s, o);
        }
    }
}

void srv_observe_reauth(struct srv *s)
{
    for (struct srv_observer *o = s->observe.observers, *next; o; o = next) {
        next = o->next;
        const struct srv_conn *c = o->slot->conn;
        if (!c || !c->user ||
            cmd_perm_allows(c->user, srv_cmd_at(SRV_CMD_ELECT_OBSERVE), o->name, o->name_len))
            continue;
        s->m.perm_denials++;
        cmd_perm_lost(&o->slot->out, c->user, srv_cmd_at(SRV_CMD_ELECT_OBSERVE));
        observer_finish(s, o);
    }
}

void srv_observe_free(struct srv *s)
{
    map_free(&s->observe.leaderless, NULL);
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
    struct watch_id seen = {0, 0};
    if (observe_answer(r->s, name.p, name.len, has_after, after, &seen, r->out, r->proto))
        return;
    if (wait && r->slot && r->c && srv_parked_admit(r))
        return; /* -NOSPACE written: --max-parked or the user's max_parked= */
    if (!wait || !r->slot || !r->c || observe_park(r, name, after, seen, wait))
        resp_w_nil(r->out, r->proto);
}
