/*
 * server.c — lifecycle, leadership, the leader's timers and the FSM event hooks.
 *
 * Leadership (polled from the tick: libraft has no state-change callback):
 *   not leader --raft says leader--> ready_pending (barrier of this term proposed)
 *   ready_pending --barrier applied, same term--> ready (timers restarted at full length)
 *   any --raft says not leader / term changed--> not leader (parked and waiting requests are
 *   answered -NOTLEADER / -NOLEADER; their sessions keep their queue places in the log)
 */
#include "server/server.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

uint64_t srv_now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

uint64_t srv_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *srv_role_name(int role)
{
    switch (role) {
    case RN_LEADER:
        return "leader";
    case RN_FOLLOWER:
        return "follower";
    case RN_CANDIDATE:
        return "candidate";
    default:
        return "unavailable";
    }
}

size_t srv_key_name_sid(const char *name, size_t namelen, uint64_t sid, struct buf *out)
{
    char k[8];
    buf_reset(out);
    if (buf_append(out, name, namelen) || buf_append(out, k, map_key_u64(sid, k)))
        return 0;
    return out->len;
}

/* ---- timer tables ---- */

struct srv_sess *srv_sess_get(struct srv *s, uint64_t sid)
{
    char k[8];
    return map_get(&s->sessions, k, map_key_u64(sid, k));
}

static void sess_add(struct srv *s, uint64_t sid, uint64_t ttl_ms)
{
    char k[8];
    struct srv_sess *e = srv_sess_get(s, sid);
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e || map_put(&s->sessions, k, map_key_u64(sid, k), e)) {
            free(e);
            LOGE(&s->log, "out of memory tracking session %llu", (unsigned long long)sid);
            return;
        }
        e->t.idx = HEAP_NONE;
        e->t.kind = TK_SESSION;
        e->ck.idx = HEAP_NONE;
        e->ck.kind = TK_CHECKPOINT;
    }
    e->sid = sid;
    e->ttl_ms = ttl_ms;
    e->expiring = false;
    srv_sess_keepalive(s, e);
}

/* The lease restarts now: deadline after a TTL, checkpoint half-way. */
void srv_sess_keepalive(struct srv *s, struct srv_sess *e)
{
    uint64_t now = srv_now_ms();
    heap_set(&s->timers, &e->t, now + e->ttl_ms);
    if (e->ttl_ms >= s->cfg.checkpoint_min_ttl)
        heap_set(&s->timers, &e->ck, now + e->ttl_ms / 2);
}

/* rn_propose copies the bytes before it returns, so the shared scratch buffer is enough. */
static int propose_cmd(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx, bool lazy)
{
    cmd->now_ms = srv_wall_ms();
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

/* A LOCK that will wait behind another session (held now, or in lock-delay): nothing is
 * answered until a later UNLOCK, expiry or timeout, so its entry may wait for company. */
int srv_propose_lock(struct srv *s, struct fsm_cmd *cmd, rn_propose_cb cb, void *ctx)
{
    struct fsm_lock_view v;
    bool lazy = cmd->lock.wait_ms > 0 &&
                fsm_lock_info(s->fsm, cmd->lock.name.p, cmd->lock.name.len, &v) &&
                ((v.holder_sid && v.holder_sid != cmd->lock.sid) || v.in_lockdelay);
    return propose_cmd(s, cmd, cb, ctx, lazy);
}

int srv_propose_checkpoint(struct srv *s, uint64_t sid, uint64_t remaining_ms, rn_propose_cb cb,
                           void *ctx)
{
    struct fsm_cmd cmd = {.op = FSM_OP_SESSION_CHECKPOINT,
                          .session_checkpoint = {.sid = sid, .remaining_ms = remaining_ms}};
    int rc = srv_propose(s, &cmd, cb, ctx);
    struct srv_sess *e = rc == RN_OK ? srv_sess_get(s, sid) : NULL;
    if (e)
        e->ck_inflight = true;
    return rc;
}

static void sess_del(struct srv *s, uint64_t sid)
{
    char k[8];
    struct srv_sess *e = map_del(&s->sessions, k, map_key_u64(sid, k));
    if (e) {
        heap_remove(&s->timers, &e->t);
        heap_remove(&s->timers, &e->ck);
        free(e);
    }
}

static struct srv_wait *wait_get(struct srv *s, const char *name, size_t namelen, uint64_t sid)
{
    size_t n = srv_key_name_sid(name, namelen, sid, &s->scratch);
    return n ? map_get(&s->waits, s->scratch.p, n) : NULL;
}

static void wait_add(struct srv *s, const char *name, size_t namelen, uint64_t sid,
                     uint64_t wait_ms)
{
    size_t n = srv_key_name_sid(name, namelen, sid, &s->scratch);
    struct srv_wait *w = n ? calloc(1, sizeof(*w) + n) : NULL;
    if (!w || map_put(&s->waits, s->scratch.p, n, w)) {
        free(w);
        LOGE(&s->log, "out of memory tracking a wait");
        return;
    }
    memcpy(w->key, s->scratch.p, n);
    w->keylen = n;
    w->t.idx = HEAP_NONE;
    w->t.kind = TK_WAIT;
    w->sid = sid;
    w->wait_ms = wait_ms;
    w->started_ms = srv_now_ms();
    heap_set(&s->timers, &w->t, w->started_ms + wait_ms);
}

/* Remove a wait; returns how long it waited (ms), or -1 if there was none. */
static int64_t wait_del(struct srv *s, const char *name, size_t namelen, uint64_t sid)
{
    size_t n = srv_key_name_sid(name, namelen, sid, &s->scratch);
    struct srv_wait *w = n ? map_del(&s->waits, s->scratch.p, n) : NULL;
    if (!w)
        return -1;
    int64_t waited = (int64_t)(srv_now_ms() - w->started_ms);
    heap_remove(&s->timers, &w->t);
    free(w);
    return waited;
}

/* A LOCK retry by a session already queued: its new WAIT bound is the one that counts. */
void srv_wait_refresh(struct srv *s, const char *name, size_t namelen, uint64_t sid,
                      uint64_t wait_ms)
{
    struct srv_wait *w = wait_get(s, name, namelen, sid);
    if (!w) {
        wait_add(s, name, namelen, sid, wait_ms);
        return;
    }
    w->wait_ms = wait_ms;
    w->cancelling = false;
    heap_set(&s->timers, &w->t, srv_now_ms() + wait_ms);
}

static void delay_add(struct srv *s, const char *name, size_t namelen, uint64_t delay_ms)
{
    struct srv_delay *d = map_get(&s->delays, name, namelen);
    if (!d) {
        d = calloc(1, sizeof(*d) + namelen);
        if (!d || map_put(&s->delays, name, namelen, d)) {
            free(d);
            LOGE(&s->log, "out of memory tracking a lock-delay");
            return;
        }
        memcpy(d->name, name, namelen);
        d->namelen = namelen;
        d->t.idx = HEAP_NONE;
        d->t.kind = TK_DELAY;
    }
    d->delay_ms = delay_ms;
    d->ending = false;
    heap_set(&s->timers, &d->t, srv_now_ms() + delay_ms);
}

static void delay_del(struct srv *s, const char *name, size_t namelen)
{
    struct srv_delay *d = map_del(&s->delays, name, namelen);
    if (d) {
        heap_remove(&s->timers, &d->t);
        free(d);
    }
}

static void hold_start(struct srv *s, const char *name, size_t namelen)
{
    uint64_t *t = map_get(&s->holds, name, namelen);
    if (!t) {
        t = malloc(sizeof(*t));
        if (!t || map_put(&s->holds, name, namelen, t)) {
            free(t);
            return;
        }
    }
    *t = srv_now_ms();
}

static void hold_end(struct srv *s, const char *name, size_t namelen)
{
    uint64_t *t = map_del(&s->holds, name, namelen);
    if (t) {
        hist_observe(&s->m.lock_hold, (double)(srv_now_ms() - *t) / 1000.0);
        free(t);
    }
}

/* ---- parked LOCK requests ---- */

int srv_park(struct srv *s, struct srv_slot *slot)
{
    struct srv_slot *head = map_get(&s->parked, slot->pkey, slot->pkeylen);
    slot->lnext = head;
    if (map_put(&s->parked, slot->pkey, slot->pkeylen, slot))
        return -1;
    slot->parked = true;
    return 0;
}

/* Answer every request parked on (name, sid): with the token, or nil (token 0). */
static void wake_parked(struct srv *s, const char *name, size_t namelen, uint64_t sid,
                        uint64_t token)
{
    if (!s->ready)
        return; /* nothing is parked on a node that is not a ready leader (step_down) */
    size_t n = srv_key_name_sid(name, namelen, sid, &s->scratch);
    struct srv_slot *slot = n ? map_del(&s->parked, s->scratch.p, n) : NULL;
    struct fsm_session_view sv;
    while (slot) {
        struct srv_slot *next = slot->lnext;
        slot->lnext = NULL;
        slot->parked = false;
        if (token)
            resp_w_uint(&slot->out, token);
        else if (!fsm_session_info(s->fsm, sid, &sv))
            resp_w_errorf(&slot->out, "NOSESSION session %llu ended while waiting",
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
        struct srv_slot *next = slot->lnext;
        slot->lnext = NULL;
        slot->parked = false;
        srv_reply_status(fa->s, &slot->out, fa->status);
        srv_slot_done(slot);
        slot = next;
    }
}

static void fail_reads(struct srv *s, struct srv_read_list *l, int status)
{
    struct srv_slot *slot = l->head;
    l->head = l->tail = NULL;
    while (slot) {
        struct srv_slot *next = slot->lnext;
        slot->lnext = NULL;
        srv_reply_status(s, &slot->out, status);
        srv_slot_done(slot);
        slot = next;
    }
}

/* ---- FSM hooks (every node) ---- */

static void on_event(struct srv *s, const struct fsm_event *e)
{
    const char *nm = e->name.p;
    size_t nl = e->name.len;
    switch (e->type) {
    case FSM_EV_SESSION_OPENED:
        sess_add(s, e->sid, e->ms);
        break;
    case FSM_EV_SESSION_ENDED:
        sess_del(s, e->sid);
        if (e->expired)
            s->m.expirations++;
        break;
    case FSM_EV_GRANTED: {
        int64_t waited = wait_del(s, nm, nl, e->sid);
        if (waited >= 0)
            hist_observe(&s->m.lock_wait, (double)waited / 1000.0);
        hold_start(s, nm, nl);
        s->m.grants++;
        wake_parked(s, nm, nl, e->sid, e->token);
        break;
    }
    case FSM_EV_RELEASED:
        hold_end(s, nm, nl);
        s->m.releases++;
        break;
    case FSM_EV_WAIT_STARTED:
        wait_add(s, nm, nl, e->sid, e->ms);
        break;
    case FSM_EV_WAIT_ENDED:
        wait_del(s, nm, nl, e->sid);
        wake_parked(s, nm, nl, e->sid, 0);
        break;
    case FSM_EV_LOCKDELAY_STARTED:
        delay_add(s, nm, nl, e->ms);
        break;
    case FSM_EV_LOCKDELAY_ENDED:
        delay_del(s, nm, nl);
        break;
    case FSM_EV_FENCE_REJECTED:
        s->m.fence_rejections++;
        break;
    default:
        break;
    }
}

static void step_down(struct srv *s);

/*
 * A leader frozen (SIGSTOP, a long pause) wakes up, is told of a newer term and applies the new
 * leader's entries before the next tick has noticed: its parked requests must be failed
 * (-NOTLEADER) before any of those entries could wake them. Only the step-down half of
 * srv_poll_leadership runs here: no libraft call from inside its apply callback.
 */
static void check_deposed(struct srv *s)
{
    if (s->ready && (rn_role(s->rn) != RN_LEADER || rn_term(s->rn) != s->ready_term)) {
        s->role = rn_role(s->rn);
        step_down(s);
    }
}

static void hook_applied(void *arg, const struct fsm_reply *reply, const struct fsm_events *ev)
{
    struct srv *s = arg;
    (void)reply;
    check_deposed(s);
    for (size_t i = 0; i < ev->n; i++)
        on_event(s, &ev->ev[i]);
}

static void free_val(void *v)
{
    free(v);
}

static void rebuild_sess_cb(void *arg, uint64_t sid, uint64_t ttl_ms)
{
    sess_add(arg, sid, ttl_ms);
}

static void rebuild_wait_cb(void *arg, const char *name, size_t namelen, uint64_t sid,
                            uint64_t wait_ms)
{
    wait_add(arg, name, namelen, sid, wait_ms);
}

static void rebuild_delay_cb(void *arg, const char *name, size_t namelen, uint64_t delay_ms)
{
    delay_add(arg, name, namelen, delay_ms);
}

/* The FSM was replaced by a snapshot: derive every table again from it. */
static void hook_restored(void *arg)
{
    struct srv *s = arg;
    heap_free(&s->timers);
    map_free(&s->sessions, free_val);
    map_free(&s->waits, free_val);
    map_free(&s->delays, free_val);
    map_free(&s->holds, free_val);
    fsm_foreach_session(s->fsm, rebuild_sess_cb, s);
    fsm_foreach_waiter(s->fsm, rebuild_wait_cb, s);
    fsm_foreach_lockdelay(s->fsm, rebuild_delay_cb, s);
}

/* ---- leader duties ---- */

static void restart_cb(void *arg, const void *key, size_t len, void *val)
{
    struct srv *s = arg;
    struct heap_item *t = val; /* every table value starts with its heap item */
    uint64_t full = 0;
    (void)key;
    (void)len;
    if (t->kind == TK_SESSION) {
        struct srv_sess *e = val;
        struct fsm_session_view v;
        e->expiring = false;
        e->ck_inflight = false;
        full = e->ttl_ms;
        if (fsm_session_info(s->fsm, e->sid, &v) && v.checkpoint_ms && v.checkpoint_ms < full)
            full = v.checkpoint_ms;
        if (e->ttl_ms >= s->cfg.checkpoint_min_ttl)
            heap_set(&s->timers, &e->ck, srv_now_ms() + full / 2);
    } else if (t->kind == TK_WAIT) {
        struct srv_wait *w = val;
        w->cancelling = false;
        full = w->wait_ms;
    } else if (t->kind == TK_DELAY) {
        struct srv_delay *d = val;
        d->ending = false;
        full = d->delay_ms;
    }
    heap_set(&s->timers, t, srv_now_ms() + full);
}

/* A new leader restarts every countdown at full length: it cannot know how much of it the
 * previous leader had seen pass, and a lease must never end early. A session checkpointed by
 * an earlier leader restarts at what that leader measured as left (never less than the truth:
 * time only passed since). */
static void restart_timers(struct srv *s)
{
    map_foreach(&s->sessions, restart_cb, s);
    map_foreach(&s->waits, restart_cb, s);
    map_foreach(&s->delays, restart_cb, s);
}

struct duty {
    struct srv *s;
    uint8_t kind;
    uint64_t sid;
    size_t len;
    char key[]; /* lock name (delay) or name+sid (wait) */
};

/* The outcome of an expiry / cancel / delay-end proposal. On failure the timer fires again
 * soon; success needs nothing here, the applied events update the tables. */
static void duty_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct duty *d = ctx;
    struct srv *s = d->s;
    (void)reply;
    if (d->kind == TK_CHECKPOINT) {
        struct srv_sess *e = srv_sess_get(s, d->sid);
        if (e)
            e->ck_inflight = false;
    } else if (status != RN_OK && !s->stopping && s->ready) {
        uint64_t soon = srv_now_ms() + 10;
        if (d->kind == TK_SESSION) {
            struct srv_sess *e = srv_sess_get(s, d->sid);
            if (e) {
                e->expiring = false;
                heap_set(&s->timers, &e->t, soon);
            }
        } else if (d->kind == TK_WAIT) {
            struct srv_wait *w = map_get(&s->waits, d->key, d->len);
            if (w) {
                w->cancelling = false;
                heap_set(&s->timers, &w->t, soon);
            }
        } else {
            struct srv_delay *dl = map_get(&s->delays, d->key, d->len);
            if (dl) {
                dl->ending = false;
                heap_set(&s->timers, &dl->t, soon);
            }
        }
    }
    free(d);
}

static int propose_duty(struct srv *s, struct fsm_cmd *cmd, uint8_t kind, uint64_t sid,
                        const char *key, size_t keylen)
{
    struct duty *d = malloc(sizeof(*d) + keylen);
    if (!d)
        return -1;
    d->s = s;
    d->kind = kind;
    d->sid = sid;
    d->len = keylen;
    if (keylen)
        memcpy(d->key, key, keylen);
    if (srv_propose(s, cmd, duty_cb, d) != RN_OK) {
        free(d);
        return -1;
    }
    return 0;
}

/* Half-way through an idle lease: record what is left (fires once per keepalive or term). */
static void fire_checkpoint(struct srv *s, struct heap_item *t)
{
    struct srv_sess *e = (struct srv_sess *)((char *)t - offsetof(struct srv_sess, ck));
    uint64_t now = srv_now_ms();
    if (e->expiring || e->t.idx == HEAP_NONE || e->t.deadline <= now)
        return;
    struct duty *d = malloc(sizeof(*d));
    if (!d)
        return;
    d->s = s;
    d->kind = TK_CHECKPOINT;
    d->sid = e->sid;
    d->len = 0;
    if (srv_propose_checkpoint(s, e->sid, e->t.deadline - now, duty_cb, d) != RN_OK)
        free(d);
}

static void fire_timer(struct srv *s, struct heap_item *t)
{
    struct fsm_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    heap_remove(&s->timers, t);
    if (t->kind == TK_CHECKPOINT) {
        fire_checkpoint(s, t);
    } else if (t->kind == TK_SESSION) {
        struct srv_sess *e = (struct srv_sess *)t;
        e->expiring = true;
        cmd.op = FSM_OP_SESSION_EXPIRE;
        cmd.session_expire.sid = e->sid;
        LOGD(&s->log, "session %llu: deadline passed, proposing expiry",
             (unsigned long long)e->sid);
        if (propose_duty(s, &cmd, TK_SESSION, e->sid, NULL, 0))
            heap_set(&s->timers, t, srv_now_ms() + 10);
    } else if (t->kind == TK_WAIT) {
        struct srv_wait *w = (struct srv_wait *)t;
        w->cancelling = true;
        cmd.op = FSM_OP_CANCEL_WAIT;
        cmd.cancel_wait.sid = w->sid;
        cmd.cancel_wait.name.p = w->key;
        cmd.cancel_wait.name.len = (uint32_t)(w->keylen - 8);
        if (propose_duty(s, &cmd, TK_WAIT, w->sid, w->key, w->keylen))
            heap_set(&s->timers, t, srv_now_ms() + 10);
    } else {
        struct srv_delay *d = (struct srv_delay *)t;
        d->ending = true;
        cmd.op = FSM_OP_LOCKDELAY_END;
        cmd.lockdelay_end.name.p = d->name;
        cmd.lockdelay_end.name.len = (uint32_t)d->namelen;
        if (propose_duty(s, &cmd, TK_DELAY, 0, d->name, d->namelen))
            heap_set(&s->timers, t, srv_now_ms() + 10);
    }
}

static void ready_cb(void *ctx, int status)
{
    struct srv *s = ctx;
    s->ready_pending = false;
    if (s->stopping || status != RN_OK || rn_role(s->rn) != RN_LEADER ||
        rn_term(s->rn) != s->ready_term)
        return; /* the next tick tries again if still leader */
    s->ready = true;
    restart_timers(s);
    srv_members_on_ready(s);
    LOGI(&s->log, "leader ready in term %llu (applied index %llu, revision %llu)",
         (unsigned long long)s->ready_term, (unsigned long long)rn_applied_index(s->rn),
         (unsigned long long)fsm_revision(s->fsm));
}

static void step_down(struct srv *s)
{
    struct fail_arg fa = {s, RN_NOTLEADER};
    s->ready = false;
    map_foreach(&s->parked, fail_parked_cb, &fa);
    fail_reads(s, &s->reads_waiting, RN_NOTLEADER);
    /* reads_inflight are answered by their barrier's failure callback */
}

void srv_poll_leadership(struct srv *s)
{
    int role = rn_role(s->rn);
    uint64_t term = rn_term(s->rn);
    if (role != s->role)
        LOGI(&s->log, "raft role %s -> %s (term %llu)", srv_role_name(s->role), srv_role_name(role),
             (unsigned long long)term);
    s->role = role;
    if (s->ready && (role != RN_LEADER || term != s->ready_term))
        step_down(s);
    if (role == RN_LEADER && !s->ready && !s->ready_pending) {
        s->ready_term = term;
        if (rn_barrier(s->rn, ready_cb, s) == RN_OK)
            s->ready_pending = true;
    }
}

static void tick_cb(uv_timer_t *t)
{
    struct srv *s = t->data;
    srv_poll_leadership(s);
    rn_tick(s->rn);
    srv_members_tick(s);
    if (!s->ready)
        return;
    uint64_t now = srv_now_ms();
    struct heap_item *top;
    while ((top = heap_top(&s->timers)) && top->deadline <= now)
        fire_timer(s, top);
}

/* ---- reads: one barrier answers every read that arrived before it was issued ----
 *
 * Why no deferral of the answer: libraft 0.22's legacy API never runs a barrier callback from
 * inside raft_step; completed requests are queued and fired from its own uv_prepare and
 * uv_check handles (LegacyFireCompletedRequests, libraft src/uv.c). The reads are answered
 * right there. They used to be answered from a uv_check handle of ours started inside that
 * callback: a check handle started during the check phase only runs on the next loop turn,
 * after a poll that blocks until the next timer (the 5 ms tick), so every read and keepalive
 * took about 5 ms (docs/performance.md, "The cause of the 5 ms reads"). */

static void read_barrier_cb(void *ctx, int status);

static void issue_read_barrier(struct srv *s)
{
    if (s->barrier_inflight || !s->reads_waiting.head)
        return;
    s->reads_inflight = s->reads_waiting;
    s->reads_waiting.head = s->reads_waiting.tail = NULL;
    int rc = rn_barrier(s->rn, read_barrier_cb, s);
    if (rc != RN_OK) {
        fail_reads(s, &s->reads_inflight, rc);
        return;
    }
    s->barrier_inflight = true;
    s->m.read_barriers++;
}

/* The next loop turn, before the loop blocks: an active idle handle makes libuv poll without
 * waiting, whichever phase started it. */
static void reads_issue_cb(uv_idle_t *h)
{
    struct srv *s = h->data;
    uv_idle_stop(h);
    if (!s->stopping)
        issue_read_barrier(s);
}

/* Answer the reads the completed barrier covers, then issue the next barrier for the reads
 * that arrived meanwhile (including those parsed while answering: a connection resumes
 * parsing once its reads are answered). */
static void answer_reads(struct srv *s, int status)
{
    s->barrier_inflight = false;
    if (status != RN_OK || !s->ready) {
        fail_reads(s, &s->reads_inflight, status != RN_OK ? status : RN_NOTLEADER);
    } else {
        struct srv_slot *slot = s->reads_inflight.head;
        s->reads_inflight.head = s->reads_inflight.tail = NULL;
        while (slot) {
            struct srv_slot *next = slot->lnext;
            slot->lnext = NULL;
            s->m.reads++;
            if (!srv_run_read(s, slot))
                srv_slot_done(slot);
            slot = next;
        }
    }
    if (!s->stopping)
        issue_read_barrier(s);
}

static void read_barrier_cb(void *ctx, int status)
{
    answer_reads(ctx, status);
}

void srv_enqueue_read(struct srv *s, struct srv_slot *slot)
{
    slot->lnext = NULL;
    if (s->reads_waiting.tail)
        s->reads_waiting.tail->lnext = slot;
    else
        s->reads_waiting.head = slot;
    s->reads_waiting.tail = slot;
    if (!s->barrier_inflight && !uv_is_active((uv_handle_t *)&s->reads_issue))
        uv_idle_start(&s->reads_issue, reads_issue_cb);
}

/* ---- lifecycle ---- */

static int mkdir_p(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    struct stat st;
    if (mkdir(tmp, 0755) && (stat(tmp, &st) || !S_ISDIR(st.st_mode)))
        return -1;
    return 0;
}

static void http_handler(void *arg, const char *method, const char *path, struct buf *body,
                         int *status, const char **ctype)
{
    struct srv *s = arg;
    (void)method;
    if (!strcmp(path, "/metrics")) {
        srv_render_metrics(s, body);
        *status = 200;
        *ctype = "text/plain; version=0.0.4";
    } else if (!strcmp(path, "/health")) {
        uint64_t lid;
        const char *laddr;
        rn_leader(s->rn, &lid, &laddr);
        buf_printf(body,
                   "{\"status\":\"%s\",\"role\":\"%s\",\"id\":%llu,\"leader_id\":%llu,"
                   "\"term\":%llu,\"applied_index\":%llu}\n",
                   (s->ready || (s->role == RN_FOLLOWER && lid)) ? "ok" : "unavailable",
                   srv_role_name(s->role), (unsigned long long)s->cfg.id, (unsigned long long)lid,
                   (unsigned long long)rn_term(s->rn), (unsigned long long)rn_applied_index(s->rn));
        *status = strstr(body->p, "\"ok\"") ? 200 : 503;
        *ctype = "application/json";
    } else {
        buf_append_str(body, "not found\n");
        *status = 404;
        *ctype = "text/plain";
    }
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct srv *s = h->data;
    LOGI(&s->log, "signal %d: shutting down", signum);
    srv_stop(s);
}

int srv_init(struct srv *s, uv_loop_t *loop, const struct srv_config *cfg)
{
    char err[256];
    memset(s, 0, sizeof(*s));
    s->loop = loop;
    s->cfg = *cfg;
    s->log.level = cfg->log_level;
    s->log.id = (int)cfg->id;
    s->role = RN_UNAVAILABLE;
    heap_init(&s->timers);
    if (mkdir_p(cfg->data_dir)) {
        LOGE(&s->log, "cannot create data directory %s", cfg->data_dir);
        return -1;
    }
    s->fsm = fsm_new();
    if (!s->fsm)
        return -1;
    struct rn_config rc = {
        .id = cfg->id,
        .raft_address = s->cfg.raft_address,
        .peers = s->cfg.peers,
        .n_peers = s->cfg.n_peers,
        .join = s->cfg.n_join != 0,
        .data_dir = cfg->data_dir,
        .election_ms = cfg->election_ms,
        .heartbeat_ms = cfg->heartbeat_ms,
        .snapshot_threshold = cfg->snapshot_threshold,
        .snapshot_trailing = cfg->snapshot_trailing,
        .snapshot_log_bytes = cfg->snapshot_log_bytes,
        .lazy_ms = cfg->lazy_ms,
    };
    struct rn_hooks hooks = {.arg = s, .applied = hook_applied, .restored = hook_restored};
    if (rn_new(&s->rn, loop, &rc, s->fsm, &hooks, &s->log, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    /* The loop handles exist from here on, so srv_stop may close them whatever failed later. */
    uv_timer_init(s->loop, &s->tick);
    s->tick.data = s;
    uv_idle_init(s->loop, &s->reads_issue);
    s->reads_issue.data = s;
    uv_signal_init(s->loop, &s->sig_term);
    uv_signal_init(s->loop, &s->sig_int);
    s->sig_term.data = s->sig_int.data = s;
    return 0;
}

int srv_recover(struct srv *s)
{
    char err[256];
    if (rn_recover(s->rn, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    return 0;
}

int srv_start(struct srv *s)
{
    char err[256];
    s->started_ms = srv_now_ms();
    if (rn_start(s->rn, err, sizeof(err))) {
        LOGE(&s->log, "%s", err);
        return -1;
    }
    if (srv_listen(s))
        return -1;
    if (s->cfg.http_port && srv_http_start(s->loop, s->cfg.http_host, s->cfg.http_port,
                                           http_handler, s, &s->http, err, sizeof(err))) {
        LOGE(&s->log, "http: %s", err);
        return -1;
    }
    srv_http_set_limits(s->http, s->cfg.http_max_conns, s->cfg.http_idle_ms);
    uv_timer_start(&s->tick, tick_cb, 1, s->cfg.tick_ms);
    uv_signal_start(&s->sig_term, on_signal, SIGTERM);
    uv_signal_start(&s->sig_int, on_signal, SIGINT);
    LOGI(&s->log, "fencelockd %llu: clients on %s:%d, raft on %s, http on %s:%d, data in %s",
         (unsigned long long)s->cfg.id, s->cfg.listen_host, s->cfg.listen_port, s->cfg.raft_address,
         s->cfg.http_host, s->cfg.http_port, s->cfg.data_dir);
    return 0;
}

static void rn_closed(void *arg)
{
    struct srv *s = arg;
    s->rn = NULL;
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->reads_issue, NULL);
    uv_close((uv_handle_t *)&s->sig_term, NULL);
    uv_close((uv_handle_t *)&s->sig_int, NULL);
}

void srv_stop(struct srv *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    uv_timer_stop(&s->tick);
    srv_members_stop(s);
    struct fail_arg fa = {s, RN_ERR};
    map_foreach(&s->parked, fail_parked_cb, &fa);
    fail_reads(s, &s->reads_waiting, RN_ERR);
    uv_idle_stop(&s->reads_issue);
    srv_close_all_conns(s);
    if (s->listening && !uv_is_closing((uv_handle_t *)&s->listener))
        uv_close((uv_handle_t *)&s->listener, NULL);
    srv_http_stop(s->http);
    s->http = NULL;
    rn_close(s->rn, rn_closed, s);
}

void srv_free(struct srv *s)
{
    heap_free(&s->timers);
    map_free(&s->sessions, free_val);
    map_free(&s->waits, free_val);
    map_free(&s->delays, free_val);
    map_free(&s->holds, free_val);
    map_free(&s->parked, NULL);
    buf_free(&s->scratch);
    srv_free_slots(s);
    fsm_free(s->fsm);
    s->fsm = NULL;
}
