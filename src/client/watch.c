/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_watch: a thread that reads one event stream with XREAD BLOCK in a loop and hands each
 * entry to a callback exactly once, in id order, across leader changes and reconnects.
 *
 * Why it cannot lose or repeat an event: ids are global revisions, the same on every node, and
 * every XREAD asks for the entries strictly after the last id the callback was given (`after`),
 * so a read resent to a new leader after a fail-over or a -SLOWREADER picks up exactly there.
 * "$" (only new events) is turned into a concrete id once, with XINFO STREAM, before the first
 * read: resending "$" after a lost reply would skip what happened meanwhile. An id not above
 * `after` is never delivered (a guard: the server does not send one).
 *
 * Ownership: the watcher owns a client of its own (a copy of the caller's endpoints and
 * options), so its blocked reads hold none of the caller's pooled connections and its
 * leader knowledge and error messages are its own. fl_watch_join frees everything.
 * Thread safety: `stop` and `done` are atomics; everything else belongs to the watcher's
 * thread until fl_watch_join has joined it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/event.h"

#define WATCH_STREAM "fencelock:events"
/* Each XREAD blocks at most this long (fl_watch_stop cancels it at once, cl_cmd.cancel). */
#define WATCH_BLOCK_MS 500
#define WATCH_COUNT 1000   /* entries per XREAD: one reply stays small */
#define WATCH_CALL_MS 2000 /* a read nobody answers is given up (INTERRUPTED) and retried */
#define WATCH_RETRY_MS 50  /* pause after a failed read, so a dead cluster is not spun on */

struct fl_watcher {
    fl_client *c; /* the watcher's own client */
    char *stream; /* "fencelock:events[:prefix]" */
    fl_watch_cb cb;
    void *ctx;
    pthread_t thread;
    atomic_int stop, done;
    bool from_now;       /* "$": `after` is still to be learned (XINFO) */
    struct cl_wid after; /* read the entries after this id */
    bool delivered;      /* `last` is valid */
    struct cl_wid last;  /* the last id given to the callback */
    bool interrupted;    /* a read failed since the last one that answered: say RESUMED */
    char why[CL_ERRMSG_MAX];
    char leader[PROTO_ADDR_BUF]; /* the leader of the last answered read */
    fl_err err;                  /* why the thread ended (FL_OK: asked to) */
    char msg[CL_ERRMSG_MAX];
    struct cl_evbuf buf;
    void *owned; /* freed with the watcher (cl_watch_adopt): a wrapper's context */
};

const char *fl_event_field(const struct fl_event *ev, const char *key, size_t *len)
{
    for (size_t i = 0; ev && key && i < ev->n_fields; i++)
        if (strcmp(ev->fields[i].key, key) == 0) {
            if (len)
                *len = ev->fields[i].value_len;
            return ev->fields[i].value;
        }
    return NULL;
}

/* End the thread with err and its message. */
static void watch_fail(fl_watcher *w, fl_err err, const char *msg)
{
    w->err = err;
    snprintf(w->msg, sizeof(w->msg), "%s", msg);
    atomic_store(&w->stop, 1);
}

static void watch_interrupted(fl_watcher *w, const char *why)
{
    if (!w->interrupted)
        snprintf(w->why, sizeof(w->why), "%s", why);
    w->interrupted = true;
}

/* A callback with a non-event kind; its return value. */
static int tell(fl_watcher *w, enum fl_watch_kind kind, struct cl_wid id, bool has_id,
                const char *message)
{
    struct fl_event ev = {.kind = kind, .type = "", .name = "", .message = message};
    if (has_id) {
        cl_wid_format(id, ev.id);
        ev.rev = id.rev;
        ev.seq = id.seq;
    }
    return w->cb(&ev, w->ctx);
}

/* After an answered read: if reads failed before it, or the leader changed, say so once. */
static void note_answered(fl_watcher *w)
{
    char now[PROTO_ADDR_BUF];
    pthread_mutex_lock(&w->c->mu);
    strcpy(now, w->c->leader);
    pthread_mutex_unlock(&w->c->mu);
    if (w->leader[0] && now[0] && strcmp(now, w->leader) != 0)
        watch_interrupted(w, "the leader changed");
    if (now[0])
        strcpy(w->leader, now);
    if (!w->interrupted)
        return;
    w->interrupted = false;
    char msg[CL_ERRMSG_MAX + PROTO_ADDR_BUF + 16];
    snprintf(msg, sizeof(msg), "%s; resumed on %s", w->why, w->leader);
    if (tell(w, FL_WATCH_RESUMED, w->last, w->delivered, msg))
        atomic_store(&w->stop, 1);
}

/* A read no server answered in time: say so once, then try again (after a pause). */
static void read_failed(fl_watcher *w, fl_err e)
{
    if (atomic_load(&w->stop))
        return; /* cancelled by fl_watch_stop */
    if (e == FL_EAUTH) {
        watch_fail(w, e, fl_client_errmsg(w->c));
        return;
    }
    bool first = !w->interrupted;
    watch_interrupted(w, fl_client_errmsg(w->c));
    if (first && tell(w, FL_WATCH_INTERRUPTED, w->last, w->delivered, w->why))
        atomic_store(&w->stop, 1);
    cl_sleep_ms(WATCH_RETRY_MS);
}

/* "$": the newest id now (XINFO STREAM's last-generated-id) is where the watch starts. */
static void resolve_now(fl_watcher *w)
{
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "XINFO");
    cl_arg_str(&m, "STREAM");
    cl_arg_str(&m, w->stream);
    m.cancel = &w->stop;
    fl_err e = cl_call(w->c, &m, fl_now_ms() + WATCH_CALL_MS, CL_RETRY, &r);
    if (e) {
        read_failed(w, e);
        return;
    }
    const redisReply *id = cl_field(r, "last-generated-id");
    if (r->type == REDIS_REPLY_ERROR)
        watch_fail(w, cl_reply_err(w->c, r), r->str);
    else if (!id || id->type != REDIS_REPLY_STRING || cl_wid_parse(id->str, id->len, &w->after))
        watch_fail(w, FL_EPROTO, "XINFO STREAM: no last-generated-id");
    else
        w->from_now = false;
    freeReplyObject(r);
}

/* An error reply to XREAD: compaction, a slow reader's disconnect, or the end. */
static void on_error(fl_watcher *w, const redisReply *r)
{
    struct cl_wid oldest;
    if (cl_err_is(r, PROTO_COMPACTED) && cl_compacted_oldest(r, &oldest) == 0) {
        if (tell(w, FL_WATCH_COMPACTED, oldest, true, r->str) == 0)
            w->after = cl_wid_past_gap(w->after, oldest); /* on from the oldest retained */
        else
            watch_fail(w, FL_ECOMPACTED, r->str);
    } else if (cl_err_is(r, PROTO_SLOWREADER)) {
        watch_interrupted(w, r->str); /* the server closed the connection: read on after `last` */
    } else {
        watch_fail(w, cl_reply_err(w->c, r), r->str);
    }
}

/* Hand the entries of one reply to the callback, in order, each once. */
static void deliver(fl_watcher *w, const redisReply *r)
{
    const redisReply *ents;
    if (cl_xread_entries(r, w->stream, &ents)) {
        watch_fail(w, FL_EPROTO, "XREAD: a reply of an unexpected shape");
        return;
    }
    for (size_t i = 0; ents && i < ents->elements && !atomic_load(&w->stop); i++) {
        struct fl_event ev;
        enum cl_parse p = cl_event_parse(ents->element[i], &w->buf, &ev);
        if (p) {
            watch_fail(w, p == CL_PARSE_NOMEM ? FL_ENOMEM : FL_EPROTO,
                       p == CL_PARSE_NOMEM ? "out of memory" : "XREAD: a malformed entry");
            return;
        }
        struct cl_wid id = {ev.rev, ev.seq};
        if (cl_wid_cmp(id, w->after) <= 0)
            continue;
        int rc = w->cb(&ev, w->ctx);
        w->after = w->last = id;
        w->delivered = true;
        if (rc)
            atomic_store(&w->stop, 1);
    }
}

static void read_once(fl_watcher *w)
{
    char after[FL_WATCH_ID_MAX];
    cl_wid_format(w->after, after);
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "XREAD");
    cl_arg_str(&m, "COUNT");
    cl_arg_u64(&m, WATCH_COUNT);
    cl_arg_str(&m, "BLOCK");
    cl_arg_u64(&m, WATCH_BLOCK_MS);
    cl_arg_str(&m, "STREAMS");
    cl_arg_str(&m, w->stream);
    cl_arg_str(&m, after);
    m.block_ms = WATCH_BLOCK_MS;
    m.cancel = &w->stop;
    fl_err e = cl_call(w->c, &m, fl_now_ms() + WATCH_BLOCK_MS + WATCH_CALL_MS, CL_RETRY, &r);
    if (e) {
        read_failed(w, e);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        on_error(w, r);
    } else {
        note_answered(w);
        if (!atomic_load(&w->stop))
            deliver(w, r);
    }
    freeReplyObject(r);
}

static void *watch_main(void *arg)
{
    fl_watcher *w = arg;
    while (!atomic_load(&w->stop)) {
        if (w->from_now)
            resolve_now(w);
        else
            read_once(w);
    }
    atomic_store(&w->done, 1);
    return NULL;
}

/* A client of the watcher's own with c's endpoints, leader, options and credentials. */
static fl_client *clone_client(fl_client *c)
{
    char list[CL_ENDPOINTS_MAX * PROTO_ADDR_BUF];
    size_t n = 0;
    struct fl_options o;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_endpoints; i++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? "," : "", c->endpoints[i]);
    char leader[PROTO_ADDR_BUF];
    strcpy(leader, c->leader);
    o = c->opt;
    o.user = c->user;
    o.password = c->password;
    /* c->opt keeps no TLS file names (fl_client_new drops them once the context is built), so
     * the watcher's client shares c's context and server name instead of building its own. */
    o.tls = 0;
    fl_client *wc = fl_client_new(list, &o, NULL);
    if (wc && c->tls) {
        wc->tls = cl_tls_ctx_ref(c->tls);
        if (c->tls_name && !(wc->tls_name = strdup(c->tls_name))) {
            fl_client_free(wc);
            wc = NULL;
        }
    }
    if (wc && c->tls_err[0])
        memcpy(wc->tls_err, c->tls_err, sizeof wc->tls_err);
    pthread_mutex_unlock(&c->mu);
    if (wc && leader[0])
        cl_set_leader(wc, leader, strlen(leader));
    return wc;
}

static void watcher_free(fl_watcher *w)
{
    free(w->owned);
    if (w->c)
        fl_client_free(w->c);
    cl_evbuf_free(&w->buf);
    free(w->stream);
    free(w);
}

/* from_id into w: NULL / "$" (from now), "0", "<rev>-<n>", "<rev>". */
static int parse_from(fl_watcher *w, const char *from_id)
{
    if (!from_id || strcmp(from_id, "$") == 0) {
        w->from_now = true;
        return 0;
    }
    return cl_wid_parse(from_id, strlen(from_id), &w->after);
}

fl_err fl_watch(fl_client *c, const char *prefix, const char *from_id, fl_watch_cb cb, void *ctx,
                fl_watcher **out)
{
    if (!c || !cb || !out)
        return FL_EINVAL;
    *out = NULL;
    fl_watcher *w = calloc(1, sizeof(*w));
    if (!w)
        return FL_ENOMEM;
    if (parse_from(w, from_id)) {
        free(w);
        return cl_fail(c, FL_EINVAL, "fl_watch: bad id '%s' (want $, 0, REV or REV-N)", from_id);
    }
    w->cb = cb;
    w->ctx = ctx;
    size_t len = sizeof(WATCH_STREAM) + 1 + (prefix ? strlen(prefix) : 0);
    w->stream = malloc(len);
    w->c = clone_client(c);
    if (!w->stream || !w->c) {
        watcher_free(w);
        return FL_ENOMEM;
    }
    snprintf(w->stream, len, "%s%s%s", WATCH_STREAM, prefix && *prefix ? ":" : "",
             prefix ? prefix : "");
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        watcher_free(w);
        return cl_fail(c, FL_ENOMEM, "fl_watch: no thread could be made");
    }
    *out = w;
    return FL_OK;
}

void cl_watch_adopt(fl_watcher *w, void *p)
{
    w->owned = p;
}

void fl_watch_stop(fl_watcher *w)
{
    if (w)
        atomic_store(&w->stop, 1);
}

int fl_watch_done(fl_watcher *w)
{
    return w ? atomic_load(&w->done) : 1;
}

fl_err fl_watch_join(fl_watcher *w, char *last_id, char *errmsg, size_t n)
{
    if (!w)
        return FL_EINVAL;
    pthread_join(w->thread, NULL);
    if (last_id) {
        last_id[0] = 0;
        if (w->delivered)
            cl_wid_format(w->last, last_id);
    }
    if (errmsg && n)
        snprintf(errmsg, n, "%s", w->msg);
    fl_err e = w->err;
    watcher_free(w);
    return e;
}
