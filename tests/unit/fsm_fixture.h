/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm_fixture.h — the fixture and helpers every test_fsm_*.c shares (each is linked alone, so
 * everything here is static).
 *
 * A test is TEST_F(fsm_fx, name) and gets `fx`: fresh states, empty buffers and event lists,
 * all owned by the fixture. RUN_F(fsm_fx, name) (test.h) runs fsm_fx_setup, the test, then
 * fsm_fx_teardown whatever the test did, so a CHECK that returns early frees everything too
 * (ASan's leak check would report it otherwise). A test may put into the fixture what it
 * allocates itself (`h`, `mem`); teardown frees whatever is there.
 *
 * The apply_* helpers encode a command with the real encoder, apply it to `f` and return the
 * reply; the events of that apply are in EV until the next one.
 */
#ifndef FENCELOCK_FSM_FIXTURE_H
#define FENCELOCK_FSM_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/fsm.h"
#include "test.h"

#define FX_SCRATCH 3

struct fsm_fx {
    struct fsm *f;                  /* the state under test */
    struct fsm *g;                  /* a second state: where snapshots of f are restored */
    struct fsm *h;                  /* a state a test creates and frees itself, or leaves */
    struct buf before;              /* f's snapshot before a step that must change nothing */
    struct buf scratch[FX_SCRATCH]; /* encodings and other snapshots a test builds */
    struct fsm_events ev;           /* for a test that keeps its own event list */
    void *mem;                      /* one block a test mallocs */
};

static struct fsm_events EV; /* events of the last apply_* (reset by each) */

static inline int fsm_fx_setup(struct fsm_fx *fx)
{
    memset(fx, 0, sizeof(*fx));
    fsm_events_init(&EV);
    fsm_events_init(&fx->ev);
    fx->f = fsm_new();
    fx->g = fsm_new();
    return fx->f && fx->g ? 0 : -1;
}

static inline void fsm_fx_teardown(struct fsm_fx *fx)
{
    fsm_free(fx->f);
    fsm_free(fx->g);
    fsm_free(fx->h);
    buf_free(&fx->before);
    for (int i = 0; i < FX_SCRATCH; i++)
        buf_free(&fx->scratch[i]);
    fsm_events_free(&fx->ev);
    fsm_events_free(&EV);
    free(fx->mem);
}

/* A string of a C literal (not NUL-terminated in the command). */
static inline struct fsm_str S(const char *s) {
    return (struct fsm_str){s, (uint32_t)strlen(s)};
}

/* Encode, apply to f, keep the events in EV; the reply. */
static inline struct fsm_reply
apply_cmd(struct fsm *f, const struct fsm_cmd *c)
{
    struct buf b;
    struct fsm_reply r;
    buf_init(&b);
    if (fsm_cmd_encode(c, &b))
        abort();
    fsm_events_reset(&EV);
    fsm_apply(f, (const uint8_t *)b.p, b.len, &r, &EV);
    buf_free(&b);
    return r;
}

/* SESSION_OPEN; the new sid, or 0 if refused. */
static inline uint64_t open_session(struct fsm *f, uint64_t ttl, uint64_t delay)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN,
                        .session_open = {.ttl_ms = ttl, .lockdelay_ms = delay}};
    struct fsm_reply r = apply_cmd(f, &c);
    return r.kind == FSM_REPLY_INT ? r.value : 0;
}

static inline struct fsm_reply apply_close(struct fsm *f, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = sid}};
    return apply_cmd(f, &c);
}

static inline struct fsm_reply apply_expire(struct fsm *f, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = sid}};
    return apply_cmd(f, &c);
}

/* LOCK; wait 0 = try only. */
static inline struct fsm_reply apply_lock(struct fsm *f, const char *name, uint64_t sid,
                                          uint64_t wait)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK, .lock = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

/* LOCK ... SHARED; wait 0 = try only. */
static inline struct fsm_reply apply_lock_shared(struct fsm *f, const char *name, uint64_t sid,
                                                 uint64_t wait)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK_SHARED,
                        .lock_shared = {.name = S(name), .sid = sid, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

/* SEM.ACQUIRE of one permit of `limit`; wait 0 = try only. */
static inline struct fsm_reply apply_sem_acquire(struct fsm *f, const char *name, uint64_t sid,
                                                 uint64_t limit, uint64_t wait)
{
    struct fsm_cmd c = {
        .op = FSM_OP_SEM_ACQUIRE,
        .sem_acquire = {.name = S(name), .sid = sid, .limit = limit, .wait_ms = wait}};
    return apply_cmd(f, &c);
}

static inline struct fsm_reply apply_unlock(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_UNLOCK, .unlock = {.name = S(name), .sid = sid}};
    return apply_cmd(f, &c);
}

static inline struct fsm_reply apply_cancel_wait(struct fsm *f, const char *name, uint64_t sid)
{
    struct fsm_cmd c = {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = S(name), .sid = sid}};
    return apply_cmd(f, &c);
}

static inline struct fsm_reply apply_lockdelay_end(struct fsm *f, const char *name)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCKDELAY_END, .lockdelay_end = {.name = S(name)}};
    return apply_cmd(f, &c);
}

/* PUT without conditions; lease 0 = no lease. */
static inline struct fsm_reply apply_put(struct fsm *f, const char *key, const char *val,
                                         uint64_t lease)
{
    struct fsm_cmd c = {.op = FSM_OP_PUT,
                        .put = {.key = S(key), .value = S(val), .lease_sid = lease}};
    return apply_cmd(f, &c);
}

static inline struct fsm_reply apply_del(struct fsm *f, const char *key)
{
    struct fsm_cmd c = {.op = FSM_OP_DEL, .del = {.key = S(key)}};
    return apply_cmd(f, &c);
}

/* The value of an INT reply (a token, sid or revision), 0 otherwise. */
static inline uint64_t token_of(struct fsm_reply r)
{
    return r.kind == FSM_REPLY_INT ? r.value : 0;
}

/* Replace b's contents with f's snapshot (b must be empty or initialised). */
static inline void snapshot_into(const struct fsm *f, struct buf *b)
{
    buf_init(b);
    if (fsm_snapshot(f, b))
        abort();
}

/* 1 if f's snapshot equals `b` byte for byte. */
static inline int snapshot_equals(const struct fsm *f, const struct buf *b)
{
    struct buf now;
    snapshot_into(f, &now);
    int eq = now.len == b->len && memcmp(now.p, b->p, b->len) == 0;
    buf_free(&now);
    return eq;
}

/* fsm_check_invariants, printing the broken one. */
static inline int invariants_hold(const struct fsm *f)
{
    char err[200];
    if (fsm_check_invariants(f, err, sizeof(err)) == 0)
        return 1;
    fprintf(stderr, "  invariant: %s\n", err);
    return 0;
}

/* 1 if a copy restored from f's snapshot passes the audit and snapshots to the same bytes. */
static inline int restores_identically(const struct fsm *f)
{
    struct fsm *g = fsm_new();
    struct buf b;
    char err[128];
    snapshot_into(f, &b);
    int ok = fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err)) == 0 &&
             snapshot_equals(g, &b) && invariants_hold(g);
    buf_free(&b);
    fsm_free(g);
    return ok;
}

/* The sid holding lock `name`, 0 if none. */
static inline uint64_t holder_of(const struct fsm *f, const char *name)
{
    struct fsm_lock_view v;
    return fsm_lock_info(f, name, strlen(name), &v) ? v.holder_sid : 0;
}

/* 1 if the last apply emitted an event of `type` (for session `sid`, any if 0). */
static inline int has_event(uint8_t type, uint64_t sid)
{
    for (size_t i = 0; i < EV.n; i++)
        if (EV.ev[i].type == type && (sid == 0 || EV.ev[i].sid == sid))
            return 1;
    return 0;
}

static inline int decodes(const void *p, size_t n)
{
    struct fsm_cmd c;
    char err[64];
    return fsm_cmd_decode(p, n, &c, err, sizeof(err)) == 0;
}

/* Sessions with names and request tables, held/queued/delayed locks, leased and plain keys. */
static inline void build_rich(struct fsm *f, uint64_t *sids)
{
    for (int i = 0; i < 6; i++)
        sids[i] = open_session(f, 1000 + (uint64_t)i, i % 2 ? 250 : 0);
    char name[16];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "lock/%d", (i * 7) % 12);
        apply_lock(f, name, sids[i % 6], 0);
        apply_lock(f, name, sids[(i + 1) % 6], 1000);
        apply_lock(f, name, sids[(i + 3) % 6], 2000);
    }
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "key/%02d", (i * 13) % 20);
        struct fsm_cmd c = {
            .op = FSM_OP_PUT,
            .put = {.key = S(name), .value = S(name), .lease_sid = i % 3 ? sids[i % 6] : 0}};
        apply_cmd(f, &c);
        if (i % 4 == 0)
            apply_cmd(f, &c);
    }
    struct fsm_cmd r = {.op = FSM_OP_UNLOCK,
                        .req_sid = sids[2],
                        .req_seq = 4,
                        .unlock = {.name = S("nope"), .sid = sids[2]}};
    apply_cmd(f, &r); /* cached ERR */
    struct fsm_cmd q = {.op = FSM_OP_LOCK,
                        .req_sid = sids[4],
                        .req_seq = 2,
                        .lock = {.name = S("lock/0"), .sid = sids[4], .wait_ms = 9}};
    apply_cmd(f, &q);         /* cached QUEUED or INT */
    apply_expire(f, sids[1]); /* lock-delay on its locks */
}

/* 1 if `n` bytes restore into a fresh state. */
static inline int restores(const uint8_t *p, size_t n)
{
    struct fsm *g = fsm_new();
    char err[128];
    int ok = fsm_restore(g, p, n, err, sizeof(err)) == 0;
    fsm_free(g);
    return ok;
}

#endif
