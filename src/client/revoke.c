/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cooperative revocation: asking a lock's holder to let go (fl_lock_revoke, LOCK.REVOKE) and
 * hearing such a request as a holder (fl_revoke_watch: a watcher of the lock's events that
 * hands the revoke-requested events of one grant to a callback).
 *
 * Owns struct revoke_ctx (the lock name, the grant, the caller's callback), adopted by the
 * watcher and freed with it by fl_watch_join.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

fl_err fl_lock_revoke(fl_client *c, const char *name, uint64_t deadline_ms, const char *reason,
                      uint64_t *token)
{
    if (!c || !name || !name[0])
        return FL_EINVAL;
    struct cl_cmd m;
    cl_cmd_init(&m, "LOCK.REVOKE");
    cl_arg_str(&m, name);
    if (deadline_ms) {
        cl_arg_str(&m, "DEADLINE");
        cl_arg_u64(&m, deadline_ms);
    }
    if (reason) {
        cl_arg_str(&m, "REASON");
        cl_arg_str(&m, reason);
    }
    /* a resend is harmless: a second revoke of the grant only brings the deadline forward */
    uint64_t t = 0;
    fl_err e = cl_call_int(c, &m, cl_deadline(c), CL_RETRY, &t);
    if (e == FL_OK && token)
        *token = t;
    return e;
}

struct revoke_ctx {
    fl_revoke_cb cb;
    void *ctx;
    uint64_t sid, token;
    char name[]; /* NUL-terminated */
};

static uint64_t field_u64(const struct fl_event *ev, const char *key)
{
    const char *v = fl_event_field(ev, key, NULL);
    return v ? strtoull(v, NULL, 10) : 0;
}

/* Only this grant's requests: the prefix stream also carries other names and other events. */
static int revoke_event(const struct fl_event *ev, void *arg)
{
    struct revoke_ctx *x = arg;
    if (ev->kind != FL_WATCH_EVENT)
        return 0; /* a compacted history goes on from the oldest retained event */
    if (strcmp(ev->type, "revoke-requested") != 0 || strcmp(ev->name, x->name) != 0 ||
        field_u64(ev, "sid") != x->sid || field_u64(ev, "token") != x->token)
        return 0;
    struct fl_revoke rv = {.name = x->name, .token = x->token, .sid = x->sid};
    rv.deadline_ms = field_u64(ev, "deadline_ms");
    rv.reason = fl_event_field(ev, "reason", &rv.reason_len);
    rv.by = fl_event_field(ev, "by", &rv.by_len);
    if (!rv.reason)
        rv.reason = "";
    if (!rv.by)
        rv.by = "";
    x->cb(&rv, x->ctx);
    return 0;
}

fl_err fl_revoke_watch(fl_session *s, const char *name, uint64_t token, fl_revoke_cb cb, void *ctx,
                       fl_watcher **out)
{
    if (!s || !name || !name[0] || !token || !cb || !out)
        return FL_EINVAL;
    fl_client *c = cl_session_client(s);
    size_t n = strlen(name);
    struct revoke_ctx *x = malloc(sizeof(*x) + n + 1);
    if (!x)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    x->cb = cb;
    x->ctx = ctx;
    x->sid = fl_session_id(s);
    x->token = token;
    memcpy(x->name, name, n + 1);
    /* from just before the grant's revision: a request made before the watcher's first read
       is not missed */
    char from[32];
    snprintf(from, sizeof from, "%" PRIu64, token - 1);
    fl_err e = fl_watch(c, name, from, revoke_event, x, out);
    if (e != FL_OK) {
        free(x);
        return e;
    }
    cl_watch_adopt(*out, x);
    return FL_OK;
}
