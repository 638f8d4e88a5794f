/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease.c — the leader's deadline rules (lease.h). No clock, no I/O: `now` comes in, actions
 * go out.
 */
#include "server/lease/lease.h"

#include <stdlib.h>
#include <string.h>

#define LEASE_SID_BYTES 8 /* a wait's key: the lock name then the sid (map_key_u64) */

void lease_init(struct lease *l, uint64_t checkpoint_min_ttl)
{
    memset(l, 0, sizeof(*l));
    map_init(&l->sessions);
    map_init(&l->waits);
    map_init(&l->delays);
    map_init(&l->revokes);
    map_init(&l->maxholds);
    heap_init(&l->timers);
    buf_init(&l->scratch);
    l->checkpoint_min_ttl = checkpoint_min_ttl;
}

static void free_val(void *v)
{
    free(v);
}

void lease_clear(struct lease *l)
{
    heap_free(&l->timers);
    map_free(&l->sessions, free_val);
    map_free(&l->waits, free_val);
    map_free(&l->delays, free_val);
    map_free(&l->revokes, free_val);
    map_free(&l->maxholds, free_val);
}

void lease_free(struct lease *l)
{
    lease_clear(l);
    buf_free(&l->scratch);
}

/* Queue (or move) a timer. A failure can only happen when the item was not queued: it stays
 * unqueued and the module is marked damaged, so lease_repair queues it later. */
static void arm(struct lease *l, struct heap_item *t, uint64_t deadline)
{
    if (heap_set(&l->timers, t, deadline))
        l->damaged = true;
}

static void item_init(struct heap_item *t, uint8_t kind)
{
    t->idx = HEAP_NONE;
    t->kind = kind;
}

/* ---- sessions ---- */

static struct lease_sess *sess_get(struct lease *l, uint64_t sid)
{
    char k[8];
    return map_get(&l->sessions, k, map_key_u64(sid, k));
}

const struct lease_sess *lease_session(struct lease *l, uint64_t sid)
{
    return sess_get(l, sid);
}

bool lease_session_live(struct lease *l, uint64_t sid)
{
    const struct lease_sess *e = sess_get(l, sid);
    return e && !e->expiring;
}

uint64_t lease_session_remaining(struct lease *l, uint64_t sid, uint64_t now)
{
    const struct lease_sess *e = sess_get(l, sid);
    if (e && e->t.idx != HEAP_NONE && e->t.deadline > now)
        return e->t.deadline - now;
    return 0;
}

/* The lease restarts at `now`: deadline after the TTL, checkpoint half-way. */
static void sess_restart(struct lease *l, struct lease_sess *e, uint64_t now)
{
    arm(l, &e->t, now + e->ttl_ms);
    if (e->ttl_ms >= l->checkpoint_min_ttl)
        arm(l, &e->ck, now + e->ttl_ms / 2);
}

int lease_session_opened(struct lease *l, uint64_t sid, uint64_t ttl_ms, uint64_t now)
{
    char k[8];
    struct lease_sess *e = sess_get(l, sid);
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e || map_put(&l->sessions, k, map_key_u64(sid, k), e)) {
            free(e);
            l->damaged = true;
            return -1;
        }
        item_init(&e->t, LEASE_SESSION);
        item_init(&e->ck, LEASE_CHECKPOINT);
    }
    e->sid = sid;
    e->ttl_ms = ttl_ms;
    e->expiring = false;
    sess_restart(l, e, now);
    return 0;
}

int lease_session_ensure(struct lease *l, uint64_t sid, uint64_t ttl_ms, uint64_t now)
{
    return sess_get(l, sid) ? 0 : lease_session_opened(l, sid, ttl_ms, now);
}

void lease_session_ended(struct lease *l, uint64_t sid)
{
    char k[8];
    struct lease_sess *e = map_del(&l->sessions, k, map_key_u64(sid, k));
    if (e) {
        heap_remove(&l->timers, &e->t);
        heap_remove(&l->timers, &e->ck);
        free(e);
    }
}

/* Not logged: the deadline lives only in this leader's memory (a new leader starts over),
 * except after a checkpoint recorded a shorter lease (or one is in flight): then a clearing
 * checkpoint must commit before the client is told its lease is whole again. */
enum lease_ka lease_keepalive(struct lease *l, uint64_t sid, bool checkpointed, uint64_t now,
                              uint64_t *ttl_ms)
{
    struct lease_sess *e = sess_get(l, sid);
    if (!e || e->expiring)
        return LEASE_KA_NOSESSION;
    sess_restart(l, e, now);
    *ttl_ms = e->ttl_ms;
    return e->ck_inflight || checkpointed ? LEASE_KA_CLEAR : LEASE_KA_ANSWER;
}

void lease_checkpoint_proposed(struct lease *l, uint64_t sid)
{
    struct lease_sess *e = sess_get(l, sid);
    if (e)
        e->ck_inflight = true;
}

void lease_checkpoint_done(struct lease *l, uint64_t sid)
{
    struct lease_sess *e = sess_get(l, sid);
    if (e)
        e->ck_inflight = false;
}

/* ---- waits ---- */

static size_t wait_key(struct lease *l, const char *name, size_t namelen, uint64_t sid)
{
    char k[8];
    buf_reset(&l->scratch);
    if (buf_append(&l->scratch, name, namelen) || buf_append(&l->scratch, k, map_key_u64(sid, k)))
        return 0;
    return l->scratch.len;
}

static struct lease_wait *wait_get(struct lease *l, const char *name, size_t namelen, uint64_t sid)
{
    size_t n = wait_key(l, name, namelen, sid);
    return n ? map_get(&l->waits, l->scratch.p, n) : NULL;
}

int lease_wait_started(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                       uint64_t wait_ms, uint64_t now)
{
    size_t n = wait_key(l, name, namelen, sid);
    struct lease_wait *w = n ? calloc(1, sizeof(*w) + n) : NULL;
    struct lease_wait *old = w ? map_get(&l->waits, l->scratch.p, n) : NULL;
    if (!w || map_put(&l->waits, l->scratch.p, n, w)) {
        free(w);
        l->damaged = true;
        return -1;
    }
    if (old) { /* replaced: its timer must not outlive it */
        heap_remove(&l->timers, &old->t);
        free(old);
    }
    memcpy(w->key, l->scratch.p, n);
    w->keylen = n;
    item_init(&w->t, LEASE_WAIT);
    w->sid = sid;
    w->wait_ms = wait_ms;
    w->started_ms = now;
    arm(l, &w->t, now + wait_ms);
    return 0;
}

int lease_wait_ensure(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                      uint64_t wait_ms, uint64_t now)
{
    if (wait_get(l, name, namelen, sid))
        return 0;
    return lease_wait_started(l, name, namelen, sid, wait_ms, now);
}

int64_t lease_wait_ended(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                         uint64_t now)
{
    size_t n = wait_key(l, name, namelen, sid);
    struct lease_wait *w = n ? map_del(&l->waits, l->scratch.p, n) : NULL;
    if (!w)
        return -1;
    int64_t waited = (int64_t)(now - w->started_ms);
    heap_remove(&l->timers, &w->t);
    free(w);
    return waited;
}

int lease_wait_refresh(struct lease *l, const char *name, size_t namelen, uint64_t sid,
                       uint64_t wait_ms, uint64_t now)
{
    struct lease_wait *w = wait_get(l, name, namelen, sid);
    if (!w)
        return lease_wait_started(l, name, namelen, sid, wait_ms, now);
    w->wait_ms = wait_ms;
    w->cancelling = false;
    arm(l, &w->t, now + wait_ms);
    return 0;
}

/* ---- lock-delays ---- */

int lease_delay_started(struct lease *l, const char *name, size_t namelen, uint64_t delay_ms,
                        uint64_t now)
{
    struct lease_delay *d = map_get(&l->delays, name, namelen);
    if (!d) {
        d = calloc(1, sizeof(*d) + namelen);
        if (!d || map_put(&l->delays, name, namelen, d)) {
            free(d);
            l->damaged = true;
            return -1;
        }
        memcpy(d->name, name, namelen);
        d->namelen = namelen;
        item_init(&d->t, LEASE_DELAY);
    }
    d->delay_ms = delay_ms;
    d->ending = false;
    arm(l, &d->t, now + delay_ms);
    return 0;
}

int lease_delay_ensure(struct lease *l, const char *name, size_t namelen, uint64_t delay_ms,
                       uint64_t now)
{
    if (map_get(&l->delays, name, namelen))
        return 0;
    return lease_delay_started(l, name, namelen, delay_ms, now);
}

void lease_delay_ended(struct lease *l, const char *name, size_t namelen)
{
    struct lease_delay *d = map_del(&l->delays, name, namelen);
    if (d) {
        heap_remove(&l->timers, &d->t);
        free(d);
    }
}

/* ---- revoke deadlines ---- */

static int grant_add(struct lease *l, struct map *m, enum lease_kind kind, const char *name,
                     size_t namelen, uint64_t token, uint64_t stored_ms, uint64_t deadline)
{
    struct lease_revoke *v = map_get(m, name, namelen);
    if (v && v->token == token) { /* a second revoke of the grant: its countdown restarts */
        v->deadline_ms = stored_ms;
        if (!v->ending)
            arm(l, &v->t, deadline);
        return 0;
    }
    if (!v) {
        v = calloc(1, sizeof(*v) + namelen);
        if (!v || map_put(m, name, namelen, v)) {
            free(v);
            l->damaged = true;
            return -1;
        }
        memcpy(v->name, name, namelen);
        v->namelen = namelen;
        item_init(&v->t, kind);
    }
    v->token = token; /* an entry of an older grant is replaced */
    v->deadline_ms = stored_ms;
    v->ending = false;
    arm(l, &v->t, deadline);
    return 0;
}

int lease_revoke_started(struct lease *l, const char *name, size_t namelen, uint64_t token,
                         uint64_t deadline_ms, uint64_t now)
{
    return grant_add(l, &l->revokes, LEASE_REVOKE, name, namelen, token, deadline_ms,
                     now + deadline_ms);
}

bool lease_revoke_left(struct lease *l, const char *name, size_t namelen, uint64_t token,
                       uint64_t now, uint64_t *left)
{
    const struct lease_revoke *v = map_get(&l->revokes, name, namelen);
    if (!l->leading || !v || v->token != token || v->ending || v->t.idx == HEAP_NONE)
        return false;
    *left = v->t.deadline > now ? v->t.deadline - now : 1; /* due: the tick ends it next */
    return true;
}

int lease_revoke_ensure(struct lease *l, const char *name, size_t namelen, uint64_t token,
                        uint64_t deadline_ms, uint64_t now)
{
    struct lease_revoke *v = map_get(&l->revokes, name, namelen);
    if (v && v->token == token)
        return 0;
    return grant_add(l, &l->revokes, LEASE_REVOKE, name, namelen, token, deadline_ms,
                     now + deadline_ms);
}

static void grant_ended(struct lease *l, struct map *m, const char *name, size_t namelen,
                        uint64_t token)
{
    struct lease_revoke *v = map_get(m, name, namelen);
    if (!v || v->token != token)
        return;
    map_del(m, name, namelen);
    heap_remove(&l->timers, &v->t);
    free(v);
}

void lease_revoke_ended(struct lease *l, const char *name, size_t namelen, uint64_t token)
{
    grant_ended(l, &l->revokes, name, namelen, token);
}

/* ---- max-hold deadlines: the same entries as a revoke's, in a table of their own ---- */

int lease_maxhold_started(struct lease *l, const char *name, size_t namelen, uint64_t token,
                          uint64_t maxhold_ms, uint64_t now)
{
    return grant_add(l, &l->maxholds, LEASE_MAXHOLD, name, namelen, token, maxhold_ms,
                     now + maxhold_ms);
}

int lease_maxhold_ensure(struct lease *l, const char *name, size_t namelen, uint64_t token,
                         uint64_t maxhold_ms, uint64_t now)
{
    struct lease_revoke *v = map_get(&l->maxholds, name, namelen);
    if (v && v->token == token)
        return 0;
    return lease_maxhold_started(l, name, namelen, token, maxhold_ms, now);
}

void lease_maxhold_ended(struct lease *l, const char *name, size_t namelen, uint64_t token)
{
    grant_ended(l, &l->maxholds, name, namelen, token);
}

/* ---- leadership ---- */

struct takeover_arg {
    struct lease *l;
    uint64_t now;
    lease_checkpoint_fn ck;
    void *ck_arg;
};

/* A session checkpointed by an earlier leader restarts at what that leader measured as left
 * (never less than the truth: time only passed since). */
static uint64_t sess_full(struct takeover_arg *ta, struct lease_sess *e)
{
    uint64_t full = e->ttl_ms, left = ta->ck ? ta->ck(ta->ck_arg, e->sid) : 0;
    return left && left < full ? left : full;
}

static void takeover_cb(void *arg, const void *key, size_t len, void *val)
{
    struct takeover_arg *ta = arg;
    struct heap_item *t = val; /* every table value starts with its heap item */
    uint64_t full = 0;
    (void)key;
    (void)len;
    if (t->kind == LEASE_SESSION) {
        struct lease_sess *e = val;
        e->expiring = false;
        e->ck_inflight = false;
        full = sess_full(ta, e);
        if (e->ttl_ms >= ta->l->checkpoint_min_ttl)
            arm(ta->l, &e->ck, ta->now + full / 2);
    } else if (t->kind == LEASE_WAIT) {
        struct lease_wait *w = val;
        w->cancelling = false;
        full = w->wait_ms;
    } else if (t->kind == LEASE_DELAY) {
        struct lease_delay *d = val;
        d->ending = false;
        full = d->delay_ms;
    } else if (t->kind == LEASE_REVOKE) {
        struct lease_revoke *v = val;
        v->ending = false;
        full = v->deadline_ms;
    } else if (t->kind == LEASE_MAXHOLD) {
        /* Kept as armed when this node applied the grant (after the old leader committed it,
         * so never earlier than the old leader's deadline); one this node already popped while
         * it led before is due now (its MAXHOLD_END is harmless if stale). */
        ((struct lease_revoke *)val)->ending = false;
        if (t->idx != HEAP_NONE)
            return;
    }
    arm(ta->l, t, ta->now + full);
}

/* A new leader restarts every countdown at full length: it cannot know how much of it the
 * previous leader had seen pass, and a lease must never end early. */
void lease_takeover(struct lease *l, uint64_t now, lease_checkpoint_fn ck, void *arg)
{
    struct takeover_arg ta = {l, now, ck, arg};
    l->leading = true;
    map_foreach(&l->sessions, takeover_cb, &ta);
    map_foreach(&l->waits, takeover_cb, &ta);
    map_foreach(&l->delays, takeover_cb, &ta);
    map_foreach(&l->revokes, takeover_cb, &ta);
    map_foreach(&l->maxholds, takeover_cb, &ta);
}

void lease_step_down(struct lease *l)
{
    l->leading = false;
}

/* ---- due deadlines ---- */

uint64_t lease_next_deadline(const struct lease *l)
{
    const struct heap_item *t = heap_top(&l->timers);
    return t ? t->deadline : UINT64_MAX;
}

/* Half-way through an idle lease: record what is left (once per keepalive or term). Nothing
 * when the session's expiry is in flight or already due. */
static bool checkpoint_due(struct heap_item *t, uint64_t now, struct lease_action *a)
{
    struct lease_sess *e = (struct lease_sess *)((char *)t - offsetof(struct lease_sess, ck));
    if (e->expiring || e->t.idx == HEAP_NONE || e->t.deadline <= now)
        return false;
    a->sid = e->sid;
    a->remaining_ms = e->t.deadline - now;
    return true;
}

/* Mark the popped timer's action in flight and describe it. */
static bool describe(struct heap_item *t, uint64_t now, struct lease_action *a)
{
    memset(a, 0, sizeof(*a));
    a->kind = (enum lease_kind)t->kind;
    if (t->kind == LEASE_CHECKPOINT)
        return checkpoint_due(t, now, a);
    if (t->kind == LEASE_SESSION) {
        struct lease_sess *e = (struct lease_sess *)t;
        e->expiring = true;
        a->sid = e->sid;
    } else if (t->kind == LEASE_WAIT) {
        struct lease_wait *w = (struct lease_wait *)t;
        w->cancelling = true;
        a->sid = w->sid;
        a->key = w->key;
        a->keylen = w->keylen;
        a->name = w->key;
        a->namelen = w->keylen - LEASE_SID_BYTES;
    } else if (t->kind == LEASE_REVOKE || t->kind == LEASE_MAXHOLD) {
        struct lease_revoke *v = (struct lease_revoke *)t;
        v->ending = true;
        a->token = v->token;
        a->key = a->name = v->name;
        a->keylen = a->namelen = v->namelen;
    } else {
        struct lease_delay *d = (struct lease_delay *)t;
        d->ending = true;
        a->key = a->name = d->name;
        a->keylen = a->namelen = d->namelen;
    }
    return true;
}

bool lease_next(struct lease *l, uint64_t now, struct lease_action *a)
{
    struct heap_item *t;
    while (l->leading && (t = heap_top(&l->timers)) && t->deadline <= now) {
        heap_remove(&l->timers, t);
        if (describe(t, now, a))
            return true;
    }
    return false;
}

/* The timer of a (kind, sid, key) entry, or NULL when it is gone. */
static struct heap_item *find_timer(struct lease *l, enum lease_kind kind, uint64_t sid,
                                    const char *key, size_t keylen)
{
    if (kind == LEASE_SESSION) {
        struct lease_sess *e = sess_get(l, sid);
        return e ? &e->t : NULL;
    }
    struct map *m = kind == LEASE_WAIT      ? &l->waits
                    : kind == LEASE_DELAY   ? &l->delays
                    : kind == LEASE_REVOKE  ? &l->revokes
                    : kind == LEASE_MAXHOLD ? &l->maxholds
                                            : NULL;
    return m ? map_get(m, key, keylen) : NULL;
}

void lease_propose_failed(struct lease *l, const struct lease_action *a, uint64_t now)
{
    struct heap_item *t = find_timer(l, a->kind, a->sid, a->key, a->keylen);
    if (t)
        arm(l, t, now + LEASE_RETRY_MS);
}

static void clear_inflight(struct heap_item *t)
{
    if (t->kind == LEASE_SESSION)
        ((struct lease_sess *)t)->expiring = false;
    else if (t->kind == LEASE_WAIT)
        ((struct lease_wait *)t)->cancelling = false;
    else if (t->kind == LEASE_DELAY)
        ((struct lease_delay *)t)->ending = false;
    else if (t->kind == LEASE_REVOKE || t->kind == LEASE_MAXHOLD)
        ((struct lease_revoke *)t)->ending = false;
}

void lease_duty_failed(struct lease *l, enum lease_kind kind, uint64_t sid, const char *key,
                       size_t keylen, uint64_t now)
{
    if (!l->leading)
        return; /* the next takeover restarts it */
    struct heap_item *t = find_timer(l, kind, sid, key, keylen);
    if (!t)
        return;
    clear_inflight(t);
    arm(l, t, now + LEASE_RETRY_MS);
}

/* ---- allocation failures ---- */

bool lease_damaged(const struct lease *l)
{
    return l->damaged;
}

static bool inflight(const struct heap_item *t)
{
    if (t->kind == LEASE_SESSION)
        return ((const struct lease_sess *)t)->expiring;
    if (t->kind == LEASE_WAIT)
        return ((const struct lease_wait *)t)->cancelling;
    if (t->kind == LEASE_REVOKE || t->kind == LEASE_MAXHOLD)
        return ((const struct lease_revoke *)t)->ending;
    return ((const struct lease_delay *)t)->ending;
}

static uint64_t full_length(const struct heap_item *t)
{
    if (t->kind == LEASE_SESSION)
        return ((const struct lease_sess *)t)->ttl_ms;
    if (t->kind == LEASE_WAIT)
        return ((const struct lease_wait *)t)->wait_ms;
    if (t->kind == LEASE_REVOKE || t->kind == LEASE_MAXHOLD)
        return ((const struct lease_revoke *)t)->deadline_ms;
    return ((const struct lease_delay *)t)->delay_ms;
}

static void repair_cb(void *arg, const void *key, size_t len, void *val)
{
    struct takeover_arg *ta = arg;
    struct heap_item *t = val;
    (void)key;
    (void)len;
    if (t->idx == HEAP_NONE && !inflight(t))
        arm(ta->l, t, ta->now + full_length(t));
}

void lease_repair(struct lease *l, uint64_t now)
{
    struct takeover_arg ta = {l, now, NULL, NULL};
    l->damaged = false;
    map_foreach(&l->sessions, repair_cb, &ta);
    map_foreach(&l->waits, repair_cb, &ta);
    map_foreach(&l->delays, repair_cb, &ta);
    map_foreach(&l->revokes, repair_cb, &ta);
    map_foreach(&l->maxholds, repair_cb, &ta);
}
