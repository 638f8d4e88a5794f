/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timers.c — the glue between the lease rules (lease.c, pure) and the world: it reads the
 * clock, feeds the lease the FSM's events, and carries out the lease's actions by proposing
 * expiries, WAIT cancels, lock-delay ends and checkpoints. Also the one way the server
 * proposes (srv_propose) and the hold-time histogram.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "server/cmd/cmd.h"
#include "server/obs/status.h"
#include "server/server.h"

/* rn_propose copies the bytes before it returns, so the shared scratch buffer is enough. */
static int propose_cmd(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx, bool lazy)
{
    cmd->now_ms = clock_wall_ms();
    buf_reset(&s->scratch);
    if (fsm_cmd_encode(cmd, &s->scratch))
        return RN_ERR;
    int rc = (lazy ? rn_propose_lazy : rn_propose)(s->rn, s->scratch.p, s->scratch.len, cb, ctx);
    if (rc == RN_OK)
        s->m.proposals++;
    return rc;
}

int srv_propose(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx)
{
    return propose_cmd(s, cmd, cb, ctx, false);
}

/* A LOCK (or a campaign) that will wait behind another session (held exclusively now, or in
 * lock-delay):
 * nothing is answered until a later UNLOCK, expiry or timeout, so its entry may wait for
 * company. (Behind shared holders it is not marked lazy: being eager only costs an entry.) */
int srv_propose_lock(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx)
{
    struct fsm_wait_ref c = {.wait_ms = 0};
    struct fsm_lock_view v;
    bool lazy = fsm_cmd_wait_of(cmd, &c) && c.wait_ms > 0 &&
                fsm_lock_info(s->fsm, c.name.p, c.name.len, &v) &&
                ((v.holder_sid && v.holder_sid != c.sid) || v.in_lockdelay);
    return propose_cmd(s, cmd, cb, ctx, lazy);
}

int srv_propose_checkpoint(struct srv *s, uint64_t sid, uint64_t remaining_ms, rn_propose_cb cb,
                           void *ctx)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_CHECKPOINT,
                          .session_checkpoint = {.sid = sid, .remaining_ms = remaining_ms}};
    int rc = srv_propose(s, &cmd, cb, ctx);
    if (rc == RN_OK)
        lease_checkpoint_proposed(&s->lease.rules, sid);
    return rc;
}

uint64_t srv_checkpoint_of(void *arg, uint64_t sid)
{
    struct srv *s = arg;
    struct fsm_session_view v;
    return fsm_session_info(s->fsm, sid, &v) ? v.checkpoint_ms : 0;
}

/* ---- hold times (metrics only) ----
 * A RELEASED event says how long its grant was held (fsm_event.held_ms, the entries' clock), so
 * the histogram needs no per-lock table: a table of grant times cost ~100 bytes per held lock on
 * every node (bench W4: ~90 MiB at 1M locks) for a metric. */

/* ---- FSM hooks (every node) ---- */

static void on_granted(struct srv *s, const struct fsm_event *e, uint64_t now)
{
    int64_t waited = lease_wait_ended(&s->lease.rules, e->name.p, e->name.len, e->sid, now);
    if (waited >= 0)
        hist_observe(&s->m.lock_wait, (double)waited / 1000.0);
    s->m.grants++;
    struct fsm_lock_view v; /* a max hold: armed here on every node, kept across takeovers */
    if (e->kind == FSM_KIND_LOCK && fsm_lock_info(s->fsm, e->name.p, e->name.len, &v) &&
        v.token == e->token && v.maxhold_ms &&
        lease_maxhold_started(&s->lease.rules, e->name.p, e->name.len, e->token, v.maxhold_ms, now))
        LOGE(&s->log, "out of memory tracking a max hold (retried on the next tick)");
    srv_wake_parked(s, e->name.p, e->name.len, e->sid, e->token);
}

/* The event an operator most needs: a holder whose session ended under it (it died, paused or
 * was partitioned; or an admin revoked it), or that ignored a LOCK.REVOKE until its deadline
 * (its session lives on), so its lock goes to the next holder. The cause is the event's own
 * (fsm_lock_release sets it), so this line and the event stream cannot disagree. */
static void log_lost_hold(struct srv *s, const struct fsm_event *e)
{
    char shown[CMD_ARG_TEXT];
    struct resp_arg name = {e->name.p, e->name.len};
    const char *how = e->maxhold    ? "reached its max hold"
                      : e->deadline ? "passed a revoke's deadline"
                      : e->revoked  ? "was revoked"
                                    : "expired";
    LOGW(&s->log, "session %llu %s while holding '%s' (token %llu): it passes to the next holder",
         (unsigned long long)e->sid, how, cmd_arg_text(&name, shown), (unsigned long long)e->token);
}

/* A revoke with a deadline arms it here on every node (only the leader acts on it): the event
 * carries the FSM's stored deadline, counted from this apply, as the holder is told it. */
static void on_revoke_requested(struct srv *s, const struct fsm_event *e, uint64_t now)
{
    if (e->ms &&
        lease_revoke_started(&s->lease.rules, e->name.p, e->name.len, e->token, e->ms, now))
        LOGE(&s->log, "out of memory tracking a revoke (retried on the next tick)");
}

static void on_event(struct srv *s, const struct fsm_event *e)
{
    const char *nm = e->name.p;
    size_t nl = e->name.len;
    uint64_t now = clock_ms();
    switch (e->type) {
    case FSM_EV_SESSION_OPENED:
        if (lease_session_opened(&s->lease.rules, e->sid, e->ms, now))
            LOGE(&s->log, "out of memory tracking session %llu (retried on the next tick)",
                 (unsigned long long)e->sid);
        break;
    case FSM_EV_SESSION_ENDED:
        lease_session_ended(&s->lease.rules, e->sid);
        if (e->expired)
            s->m.expirations++;
        break;
    case FSM_EV_GRANTED:
        on_granted(s, e, now);
        break;
    case FSM_EV_RELEASED:
        lease_revoke_ended(&s->lease.rules, nm, nl, e->token);
        lease_maxhold_ended(&s->lease.rules, nm, nl, e->token);
        hist_observe(&s->m.lock_hold, (double)e->held_ms / 1000.0);
        s->m.releases++;
        if (e->expired)
            log_lost_hold(s, e);
        break;
    case FSM_EV_WAIT_STARTED:
        if (lease_wait_started(&s->lease.rules, nm, nl, e->sid, e->ms, now))
            LOGE(&s->log, "out of memory tracking a wait (retried on the next tick)");
        break;
    case FSM_EV_WAIT_ENDED:
        lease_wait_ended(&s->lease.rules, nm, nl, e->sid, now);
        srv_wake_parked(s, nm, nl, e->sid, 0);
        break;
    case FSM_EV_LOCKDELAY_STARTED:
        if (lease_delay_started(&s->lease.rules, nm, nl, e->ms, now))
            LOGE(&s->log, "out of memory tracking a lock-delay (retried on the next tick)");
        break;
    case FSM_EV_LOCKDELAY_ENDED:
        lease_delay_ended(&s->lease.rules, nm, nl);
        break;
    case FSM_EV_FENCE_REJECTED:
        s->m.fence_rejections++;
        break;
    case FSM_EV_DEADLOCK:
        s->m.deadlocks++;
        break;
    case FSM_EV_DEADLOCK_LIMIT:
        s->m.deadlock_search_limit++;
        break;
    case FSM_EV_REVOKE_REQUESTED:
        on_revoke_requested(s, e, now);
        srv_push_event(s, e);
        break;
    case FSM_EV_WAIT_NOTIFY:
        srv_push_event(s, e);
        break;
    case FSM_EV_LEADER:
    case FSM_EV_PROCLAIM:
        srv_observe_event(s, e);
        break;
    case FSM_EV_LATCH_ZERO:
    case FSM_EV_LATCH_BROKEN:
    case FSM_EV_BARRIER_FULL:
    case FSM_EV_BARRIER_DONE:
    case FSM_EV_BARRIER_BROKEN:
    case FSM_EV_LATCH_DELETED:
        srv_latch_event(s, e); /* cmd_latch.c: the parked waits of that name */
        break;
    default:
        break;
    }
}

void srv_hook_applied(void *arg, const struct fsm_reply *reply, const struct fsm_events *ev)
{
    struct srv *s = arg;
    (void)reply;
    srv_check_deposed(s);
    for (size_t i = 0; i < ev->n; i++)
        on_event(s, &ev->ev[i]);
    if (ev->n || ev->lost) {
        s->observe.dirty |= ev->lost; /* a lost LEADER event: observers look at the state */
        watch_add(&s->watch, fsm_revision(s->fsm), ev);
        srv_watch_wake(s);
        srv_http_events_wake(s); /* GET /v1/events streams (obs/http_events.c) */
    }
    srv_observe_wake(s);
}

/* Deriving the tables from the FSM: `ensure` adds only what is missing (after an allocation
 * failure), otherwise every entry is new (after a snapshot replaced the FSM). */
struct derive_arg {
    struct srv *s;
    uint64_t now;
};

static void derive_sess_cb(void *arg, uint64_t sid, uint64_t ttl_ms)
{
    struct derive_arg *da = arg;
    lease_session_ensure(&da->s->lease.rules, sid, ttl_ms, da->now);
}

static void derive_wait_cb(void *arg, const char *name, size_t namelen, uint64_t sid,
                           uint64_t wait_ms)
{
    struct derive_arg *da = arg;
    lease_wait_ensure(&da->s->lease.rules, name, namelen, sid, wait_ms, da->now);
}

static void derive_delay_cb(void *arg, const char *name, size_t namelen, uint64_t delay_ms)
{
    struct derive_arg *da = arg;
    lease_delay_ensure(&da->s->lease.rules, name, namelen, delay_ms, da->now);
}

static void derive_revoke_cb(void *arg, const char *name, size_t namelen, uint64_t token,
                             uint64_t deadline_ms)
{
    struct derive_arg *da = arg;
    lease_revoke_ensure(&da->s->lease.rules, name, namelen, token, deadline_ms, da->now);
}

static void derive_maxhold_cb(void *arg, const char *name, size_t namelen, uint64_t token,
                              uint64_t maxhold_ms)
{
    struct derive_arg *da = arg;
    lease_maxhold_ensure(&da->s->lease.rules, name, namelen, token, maxhold_ms, da->now);
}

static void derive_tables(struct srv *s, uint64_t now)
{
    struct derive_arg da = {s, now};
    fsm_foreach_session(s->fsm, derive_sess_cb, &da);
    fsm_foreach_waiter(s->fsm, derive_wait_cb, &da);
    fsm_foreach_lockdelay(s->fsm, derive_delay_cb, &da);
    fsm_foreach_revoke(s->fsm, derive_revoke_cb, &da);
    fsm_foreach_maxhold(s->fsm, derive_maxhold_cb, &da);
}

/* The FSM was replaced by a snapshot: derive every table again from it. */
void srv_hook_restored(void *arg)
{
    struct srv *s = arg;
    lease_clear(&s->lease.rules);
    watch_forget(&s->watch, fsm_revision(s->fsm)); /* the events up to it are not known */
    derive_tables(s, clock_ms());
    map_free(&s->observe.leaderless,
             NULL);          /* the leaderless revisions known are of the old state */
    s->observe.dirty = true; /* the elections may have changed: observers look again */
    srv_observe_wake(s);
    srv_latch_recheck(s); /* and so may the latches parked waits wait for */
}

/*
 * An allocation failed in the lease tables: a session (wait, lock-delay) the FSM has may have
 * no deadline here, and would never expire on this leader. Re-derive what is missing and queue
 * what is unqueued, at full length from now (later than the lost deadline, never earlier: the
 * lease stays safe); if memory is still short, the damage mark stays and the next tick retries.
 */
static void repair_lease(struct srv *s, uint64_t now)
{
    lease_repair(&s->lease.rules, now);
    derive_tables(s, now);
    if (!lease_damaged(&s->lease.rules))
        LOGI(&s->log, "lease tables repaired after an allocation failure");
}

/* ---- carrying out the lease's actions ---- */

struct duty {
    struct srv *s;
    enum lease_kind kind;
    uint64_t sid;
    size_t len;
    char key[]; /* lock name (delay) or name+sid (wait) */
};

/* The outcome of an expiry / cancel / delay-end / checkpoint proposal. A failed one is tried
 * again soon (the lease decides); success needs nothing here, the applied events update the
 * tables. */
static void duty_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct duty *d = ctx;
    struct srv *s = d->s;
    (void)reply;
    if (d->kind == LEASE_CHECKPOINT)
        lease_checkpoint_done(&s->lease.rules, d->sid);
    else if (status != RN_OK && !s->stopping)
        lease_duty_failed(&s->lease.rules, d->kind, d->sid, d->key, d->len, clock_ms());
    free(d);
}

static struct duty *duty_new(struct srv *s, const struct lease_action *a)
{
    struct duty *d = malloc(sizeof(*d) + a->keylen);
    if (!d)
        return NULL;
    d->s = s;
    d->kind = a->kind;
    d->sid = a->sid;
    d->len = a->keylen;
    if (a->keylen)
        memcpy(d->key, a->key, a->keylen);
    return d;
}

static void action_cmd(const struct lease_action *a, struct fsm_cmd *cmd)
{
    memset(cmd, 0, sizeof(*cmd));
    if (a->kind == LEASE_SESSION) {
        cmd->op = FSM_OP_SESSION_EXPIRE;
        cmd->session_expire.sid = a->sid;
    } else if (a->kind == LEASE_WAIT) {
        cmd->op = FSM_OP_CANCEL_WAIT;
        cmd->cancel_wait.sid = a->sid;
        cmd->cancel_wait.name.p = a->name;
        cmd->cancel_wait.name.len = (uint32_t)a->namelen;
    } else if (a->kind == LEASE_REVOKE) {
        cmd->op = FSM_OP_REVOKE_END;
        cmd->revoke_end.name.p = a->name;
        cmd->revoke_end.name.len = (uint32_t)a->namelen;
        cmd->revoke_end.token = a->token;
    } else if (a->kind == LEASE_MAXHOLD) {
        cmd->op = FSM_OP_MAXHOLD_END;
        cmd->maxhold_end.name.p = a->name;
        cmd->maxhold_end.name.len = (uint32_t)a->namelen;
        cmd->maxhold_end.token = a->token;
    } else {
        cmd->op = FSM_OP_LOCKDELAY_END;
        cmd->lockdelay_end.name.p = a->name;
        cmd->lockdelay_end.name.len = (uint32_t)a->namelen;
    }
}

/* Half-way through an idle lease: record what is left. Not retried on failure (the next
 * keepalive or term arms it again). */
static void do_checkpoint(struct srv *s, const struct lease_action *a)
{
    struct duty *d = duty_new(s, a);
    if (d && srv_propose_checkpoint(s, a->sid, a->remaining_ms, duty_cb, d) != RN_OK)
        free(d);
}

static void do_action(struct srv *s, const struct lease_action *a, uint64_t now)
{
    if (a->kind == LEASE_CHECKPOINT) {
        do_checkpoint(s, a);
        return;
    }
    struct fsm_cmd cmd;
    action_cmd(a, &cmd);
    if (a->kind == LEASE_SESSION)
        LOGD(&s->log, "session %llu: deadline passed, proposing expiry",
             (unsigned long long)a->sid);
    if (a->kind == LEASE_REVOKE)
        LOGI(&s->log, "revoke deadline of token %llu passed: proposing its release",
             (unsigned long long)a->token);
    if (a->kind == LEASE_MAXHOLD)
        LOGI(&s->log, "max hold of token %llu passed: proposing its release",
             (unsigned long long)a->token);
    struct duty *d = duty_new(s, a);
    if (!d || srv_propose(s, &cmd, duty_cb, d) != RN_OK) {
        free(d);
        lease_propose_failed(&s->lease.rules, a, now);
    }
}

void srv_hook_halted(void *arg)
{
    struct srv *s = arg;
    s->cluster.halted = true;
}

void srv_tick(struct srv *s)
{
    if (s->cluster.halted) { /* rn_fsm.c logged why */
        srv_stop(s);
        return;
    }
    srv_poll_leadership(s);
    srv_status_tick(s);
    rn_tick(s->rn);
    srv_members_tick(s);
    uint64_t now = clock_ms();
    srv_watch_tick(s, now);
    srv_observe_tick(s, now);
    srv_latch_tick(s, now);
    if (lease_damaged(&s->lease.rules))
        repair_lease(s, now);
    if (!srv_ready(s))
        return;
    srv_format_tick(s);
    srv_settings_tick(s);
    struct lease_action a;
    while (lease_next(&s->lease.rules, now, &a))
        do_action(s, &a, now);
}
