/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_events.c — GET /v1/events[?prefix=P][&after=ID] as Server-Sent Events: the event stream
 * XREAD reads (watch.h), each entry as `id: <rev>-<n>`, `event: <type>` and `data: {JSON}`
 * (watch_render_json). A reconnecting EventSource sends `Last-Event-ID`, which takes the place
 * of `after`, so a client that reconnects gets every event once, in order.
 *
 * Owns (in struct srv_hapi): the open streams (struct hev, a list). A stream is pumped when
 * events are applied (srv_http_events_wake, from the apply hook, beside the parked XREADs) and
 * when one of its writes completes; a pump writes only while fewer than --event-buffer bytes
 * wait to be sent, so a slow client falls behind in the history instead of growing a buffer,
 * and when the history it needs is gone it gets `event: compacted` and the stream closes
 * (counted: fencelock_http_sse_closes_total{reason="compacted"}), as a slow XREAD reader gets
 * -COMPACTED on its next read. How many streams are open is bounded by --http-max-conns (each
 * holds a connection). A stream belongs to http.c's connection; http.c tells us when it closes
 * (the callback with closed = true), and we free the struct hev then, or end it ourselves.
 *
 * Who sees what: a stream opened by an ACL user remembers the user's name and looks the user
 * up again at every pump (a SIGHUP reload may change or remove it: a user gone, or without
 * `read`, gets `event: forbidden` and the stream ends). A user without keys= / locks= globs
 * gets every event, as XREAD gives it. A user with globs gets each event only if it may name
 * what the event names (may_see): a key event under its keys= globs, a lock, semaphore,
 * election, latch or barrier event under its locks= globs; a `deadlock` event only without
 * locks= globs (its value is a cycle through other locks' names); the session events (no
 * name) only with `admin` (SESSION.LIST's rule: a session's id and TTL are its owner's). The
 * entries it may not see are passed over (the stream's position moves past them), so ids stay
 * XREAD's and a reconnect with Last-Event-ID resumes the same filtered sequence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "server/obs/http_args.h"
#include "server/server.h"

struct hev {
    struct hev *prev, *next;
    struct srv *s;
    struct srv_http_stream *st;
    struct watch_id after;
    bool all;
    bool gated;                  /* opened by an ACL user (named in user) */
    char user[ACL_NAME_MAX + 1]; /* looked up at every pump: a reload may change it */
    size_t plen;
    char prefix[];
};

static void hev_unlink(struct hev *e)
{
    struct srv_hapi *h = &e->s->hapi;
    if (e->prev)
        e->prev->next = e->next;
    else
        h->streams = e->next;
    if (e->next)
        e->next->prev = e->prev;
    h->nstreams--;
}

static void hev_end(struct hev *e, const char *why)
{
    struct srv_http_stream *st = e->st;
    if (why) {
        e->s->hapi.sse_closes[why[0] == 'c' ? 0 : 1]++;
        char msg[160];
        int n = snprintf(msg, sizeof(msg), "event: %s\ndata: {}\n\n", why);
        srv_http_stream_write(st, msg, (size_t)n);
    }
    hev_unlink(e);
    free(e);
    srv_http_stream_end(st); /* queued bytes are still sent before the close */
}

/* Whether u (NULL: no users, every event) may see w: the rule in the header comment. */
static bool may_see(const struct acl_user *u, const struct watch_entry *w)
{
    if (!u || (!u->keys && !u->locks))
        return true;
    switch (watch_entry_ns(w)) {
    case WATCH_NS_KEY:
        return acl_may_key(u, w->data, w->name_len);
    case WATCH_NS_LOCK:
        if (watch_entry_type(w) == FSM_EV_DEADLOCK)
            return !u->locks;
        return acl_may_lock(u, w->data, w->name_len);
    case WATCH_NS_NONE:
        return (u->perms & ACL_ADMIN) != 0;
    }
    return false;
}

/* The stream's user in the rules now; *gone when it no longer may read events. */
static const struct acl_user *stream_user(const struct hev *e, bool *gone)
{
    const struct srv *s = e->s;
    *gone = false;
    if (!e->gated || !s->auth.on)
        return NULL;
    const struct acl_user *u = acl_user_find(&s->auth.acl, e->user, strlen(e->user));
    *gone = !u || !(u->perms & ACL_READ);
    return u;
}

/* Write what the history has after e->after, while the client keeps up. */
static void pump(struct hev *e)
{
    struct srv *s = e->s;
    if (srv_http_stream_pending(e->st) >= s->cfg.event_buffer)
        return;
    bool gone;
    const struct acl_user *u = stream_user(e, &gone);
    if (gone) {
        hev_end(e, "forbidden");
        return;
    }
    if (watch_check(&s->watch, e->after)) {
        hev_end(e, "compacted");
        return;
    }
    struct watch_iter it;
    struct buf out;
    buf_init(&out);
    watch_iter_start(&it, &s->watch, e->all, e->prefix, e->plen, e->after, WATCH_AUTO);
    const struct watch_entry *w;
    while (srv_http_stream_pending(e->st) + out.len < s->cfg.event_buffer &&
           (w = watch_iter_next(&it))) {
        if (!may_see(u, w)) {
            e->after = w->id;
            continue;
        }
        char id[WATCH_ID_BUF];
        watch_id_format(w->id, id);
        buf_printf(&out, "id: %s\nevent: %s\ndata: ", id, watch_kind_name(w->kind));
        struct json j;
        json_init(&j, &out);
        watch_render_json(&j, w); /* one line: JSON strings escape every LF */
        buf_append_str(&out, "\n\n");
        e->after = w->id;
        s->hapi.sse_events++;
    }
    watch_iter_end(&it);
    if (buf_failed(&out) || (out.len && srv_http_stream_write(e->st, out.p, out.len))) {
        buf_free(&out);
        hev_end(e, "error");
        return;
    }
    buf_free(&out);
}

static void stream_cb(void *arg, bool closed)
{
    struct hev *e = arg;
    if (closed) {
        hev_unlink(e);
        free(e);
        return;
    }
    pump(e);
}

void srv_http_events_wake(struct srv *s)
{
    struct hev *e = s->hapi.streams;
    while (e) {
        struct hev *next = e->next; /* pump may end e */
        pump(e);
        e = next;
    }
}

int srv_http_events_begin(struct srv *s, struct srv_http_pending *p,
                          const struct srv_http_request *req, const char *user, const char *prefix,
                          size_t plen, const char *after, size_t alen, bool has_after, char *err,
                          size_t errlen)
{
    struct watch_id id = {0, 0};
    size_t hl = 0;
    unsigned cap = s->cfg.http_max_streams;
    if (s->cfg.http_max_conns && cap > s->cfg.http_max_conns - 1)
        cap = s->cfg.http_max_conns - 1; /* a connection stays for /health */
    if (s->hapi.nstreams >= cap) {
        snprintf(err, errlen, "%u event streams are open (--http-max-streams): try later", cap);
        return 503;
    }
    const char *last = srv_http_header(req, "Last-Event-ID", &hl);
    if (last && hl == SIZE_MAX) {
        snprintf(err, errlen, "Last-Event-ID given twice");
        return 400;
    }
    if (last ? watch_id_parse(last, hl, &id) : has_after && watch_id_parse(after, alen, &id)) {
        snprintf(err, errlen, "%s: not an event id <rev>-<n>", last ? "Last-Event-ID" : "after");
        return 400;
    }
    if (!last && !has_after)
        id = s->watch.last; /* from now on, as XREAD's $ */
    if (watch_check(&s->watch, id)) {
        char old[WATCH_ID_BUF];
        watch_id_format(watch_oldest(&s->watch), old);
        snprintf(err, errlen, "compacted: the oldest retained event is %s", old);
        return 410;
    }
    struct hev *e = calloc(1, sizeof(*e) + plen + 1);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return 503;
    }
    e->s = s;
    e->after = id;
    e->all = plen == 0;
    e->gated = user != NULL;
    snprintf(e->user, sizeof(e->user), "%s", user ? user : "");
    e->plen = plen;
    memcpy(e->prefix, prefix, plen);
    e->st = srv_http_stream_begin(p, "text/event-stream", NULL, stream_cb, e);
    if (!e->st) {
        free(e);
        return 0; /* the connection is gone: nobody to answer */
    }
    struct srv_hapi *h = &s->hapi;
    e->next = h->streams;
    if (h->streams)
        h->streams->prev = e;
    h->streams = e;
    h->nstreams++;
    pump(e);
    return 0;
}
