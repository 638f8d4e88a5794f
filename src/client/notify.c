/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LOCK ... NOTIFY from both sides: a waiter that tells the holder it queued (fl_lock_notify)
 * and a holder that hears it (fl_waiter_watch: a watcher of the lock's events that hands the
 * wait-notify events of one grant to a callback).
 *
 * Owns struct waiter_ctx (the lock name, the grant, the caller's callback), adopted by the
 * watcher and freed with it by fl_watch_join.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static const struct cl_hold notify = {
    .acquire = "LOCK", .release = "UNLOCK", .what = "lock", .arg = "NOTIFY", .arg_len = 6};

fl_err fl_lock_notify(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token)
{
    /* the acquire is fl_lock's (REQ ids, fail-overs, an unknown outcome released); the server
       tells the holder once per waiting session, so a resend tells nobody again */
    return cl_acquire(s, &notify, name, wait_ms, token);
}

struct waiter_ctx {
    fl_waiter_cb cb;
    void *ctx;
    uint64_t token;
    char name[]; /* NUL-terminated */
};

static uint64_t field_u64(const struct fl_event *ev, const char *key)
{
    const char *v = fl_event_field(ev, key, NULL);
    return v ? strtoull(v, NULL, 10) : 0;
}

/* Only this grant's waiters: the prefix stream also carries other names and other events. */
static int waiter_event(const struct fl_event *ev, void *arg)
{
    struct waiter_ctx *x = arg;
    if (ev->kind != FL_WATCH_EVENT)
        return 0; /* a compacted history goes on from the oldest retained event */
    if (strcmp(ev->type, "wait-notify") != 0 || strcmp(ev->name, x->name) != 0 ||
        field_u64(ev, "token") != x->token)
        return 0;
    struct fl_waiter w = {.name = x->name, .token = x->token};
    w.sid = field_u64(ev, "sid");
    w.wait_ms = field_u64(ev, "wait_ms");
    x->cb(&w, x->ctx);
    return 0;
}

fl_err fl_waiter_watch(fl_session *s, const char *name, uint64_t token, fl_waiter_cb cb, void *ctx,
                       fl_watcher **out)
{
    if (!s || !name || !name[0] || !token || !cb || !out)
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    size_t n = strlen(name);
    struct waiter_ctx *x = malloc(sizeof(*x) + n + 1);
    if (!x)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    x->cb = cb;
    x->ctx = ctx;
    x->token = token;
    memcpy(x->name, name, n + 1);
    /* from just before the grant's revision: a waiter that queued before the watcher's first
       read is not missed */
    char from[32];
    snprintf(from, sizeof from, "%" PRIu64, token - 1);
    fl_err e = fl_watch(c, name, from, waiter_event, x, out);
    if (e != FL_OK) {
        free(x);
        return e;
    }
    cl_watch_adopt(*out, x);
    return FL_OK;
}
