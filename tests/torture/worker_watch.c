/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_watch.c: the torture workload "watch": a watcher reads the event stream
 * fencelock:events (or fencelock:events:<prefix> with --prefix) with XREAD COUNT BLOCK from
 * the id it last delivered, drops its connections at random (a new fl_client) and resumes
 * from that id. It writes nothing to the servers.
 *
 * History, one op per XREAD (proc fixed: a read has no effect to be unsure about):
 *   invoke  "stream", "from" (the id asked after; "0" at the start; after -COMPACTED the id
 *           just before the oldest retained one, or the last delivered if that is later),
 *           "resume": true on the first read over new connections
 *   ok      "events": [[id, {field: value, ...}], ...] in the order received ([] for nil)
 *   fail    "error": "COMPACTED" with "oldest" (an explicit gap: the next read is after the id
 *           just before "oldest"),
 *           "SLOWREADER", or another error word; nothing delivered
 *   info    the call failed (no answer until the deadline): nothing delivered, same id again
 *
 * XREAD goes through libfencelock's internal call path (src/client/client.h: cl_call follows
 * -NOTLEADER and reconnects across fail-overs); switch to fl_watch when it lands.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/event.h"
#include "worker.h"

#define WATCH_COUNT_MAX 16 /* keeps a reply inside one history line (struct ev) */
#define WATCH_ID_MAX 48

struct watcher {
    char stream[128];
    char from[WATCH_ID_MAX];
    int fresh; /* the next read is the first on new connections (a resume) */
    long delivered, reconnects, compacted;
};

static int is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static int is_arr(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY; /* libfencelock speaks RESP2 */
}

/* ,"key":"<bytes>" */
static void ev_bytes(struct ev *e, const char *key, const char *p, size_t n)
{
    ev_add(e, ",\"%s\":\"", key);
    ev_esc(e, p, n);
    ev_add(e, "\"");
}

/*
 * One stream's entries [[id, [f, v, ...]], ...] as JSON into e; the last id into wt->from.
 * 0 if the shape is not Redis's (then nothing is taken from it).
 */
static int put_entries(struct watcher *wt, struct ev *e, const redisReply *entries)
{
    if (!is_arr(entries))
        return 0;
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *x = entries->element[i];
        if (!is_arr(x) || x->elements != 2 || !is_str(x->element[0]) || !is_arr(x->element[1]) ||
            x->element[0]->len >= WATCH_ID_MAX)
            return 0;
    }
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *id = entries->element[i]->element[0];
        const redisReply *fv = entries->element[i]->element[1];
        ev_add(e, "%s[\"", i ? "," : "");
        ev_esc(e, id->str, id->len);
        ev_add(e, "\",{");
        for (size_t k = 0; k + 1 < fv->elements; k += 2) {
            const redisReply *f = fv->element[k], *v = fv->element[k + 1];
            ev_add(e, "%s\"", k ? "," : "");
            if (is_str(f))
                ev_esc(e, f->str, f->len);
            ev_add(e, "\":");
            if (v->type == REDIS_REPLY_INTEGER) {
                ev_add(e, "\"%lld\"", v->integer);
            } else {
                ev_add(e, "\"");
                if (is_str(v))
                    ev_esc(e, v->str, v->len);
                ev_add(e, "\"");
            }
        }
        ev_add(e, "}]");
        memcpy(wt->from, id->str, id->len);
        wt->from[id->len] = '\0';
        wt->delivered++;
    }
    return 1;
}

/* The reply of XREAD on one stream (RESP2): nil, or [[stream, entries]]. */
static int put_reply(struct watcher *wt, struct ev *e, const redisReply *r)
{
    ev_add(e, ",\"events\":[");
    int ok = 1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && is_arr(r->element[0]) &&
        r->element[0]->elements == 2)
        ok = put_entries(wt, e, r->element[0]->element[1]);
    else if (r->type != REDIS_REPLY_NIL)
        ok = 0;
    ev_add(e, "]");
    return ok;
}

/* After -COMPACTED: on just before the oldest retained id (libfencelock's rule), never back
 * to "0", which a new leader retaining more history would answer with delivered events. */
static void past_gap(struct watcher *wt, const char *oldest)
{
    struct cl_wid from, old;
    if (cl_wid_parse(wt->from, strlen(wt->from), &from) ||
        cl_wid_parse(oldest, strlen(oldest), &old))
        return; /* nothing to go on from: the same id again */
    char id[FL_WATCH_ID_MAX];
    cl_wid_format(cl_wid_past_gap(from, old), id);
    snprintf(wt->from, sizeof(wt->from), "%s", id);
}

static void reconnect(struct worker *w, struct watcher *wt)
{
    fl_client_free(w->c);
    w->c = NULL;
    while (!w->c) {
        w->c = new_client(w);
        if (!w->c)
            sleep_ms(100);
    }
    wt->reconnects++;
    wt->fresh = 1;
}

static void watch_once(struct worker *w, struct watcher *wt)
{
    int proc = proc_of(w);
    int64_t block = 100 + (int64_t)rnd(w, 1500);
    uint64_t count = 1 + rnd(w, WATCH_COUNT_MAX);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "xread", now_ns());
    ev_str(&e, "stream", wt->stream);
    ev_str(&e, "from", wt->from);
    if (wt->fresh)
        ev_add(&e, ",\"resume\":true");
    wt->fresh = 0;
    ev_emit(w, &e);
    w->ops++;
    struct cl_cmd m;
    redisReply *r = NULL;
    cl_cmd_init(&m, "XREAD");
    cl_arg_str(&m, "COUNT");
    cl_arg_u64(&m, count);
    cl_arg_str(&m, "BLOCK");
    cl_arg_u64(&m, (uint64_t)block);
    cl_arg_str(&m, "STREAMS");
    cl_arg_str(&m, wt->stream);
    cl_arg_str(&m, wt->from);
    m.block_ms = block;
    char asked[WATCH_ID_MAX];
    strcpy(asked, wt->from);
    fl_err err = cl_call(w->c, &m, fl_now_ms() + block + 3000, CL_RETRY, &r);
    const char *type = "ok";
    if (err != FL_OK) {
        type = "info";
        ev_begin(&e, w, proc, type, "xread", now_ns());
        ev_error(&e, w, err);
    } else if (r->type == REDIS_REPLY_ERROR) {
        type = "fail";
        ev_begin(&e, w, proc, type, "xread", now_ns());
        char word[32] = "";
        sscanf(r->str, "%31s", word);
        ev_str(&e, "error", word);
        ev_bytes(&e, "msg", r->str, r->len < 300 ? r->len : 300);
        const char *o = strstr(r->str, "oldest=");
        if (!strcmp(word, "COMPACTED") && o) {
            char oldest[WATCH_ID_MAX] = "";
            sscanf(o + 7, "%47[0-9-]", oldest);
            ev_str(&e, "oldest", oldest);
            past_gap(wt, oldest); /* an explicit, reported gap: read on from the oldest */
            wt->compacted++;
        }
    } else {
        ev_begin(&e, w, proc, type, "xread", now_ns());
        if (!put_reply(wt, &e, r)) {
            /* a shape we cannot read: report it, deliver nothing */
            strcpy(wt->from, asked);
            ev_begin(&e, w, proc, "fail", "xread", now_ns());
            ev_str(&e, "error", "SHAPE");
            type = "fail";
        }
    }
    ev_str(&e, "stream", wt->stream);
    ev_str(&e, "from", asked);
    ev_complete(w, &e, type);
    if (r)
        freeReplyObject(r);
    if (!strcmp(type, "info") || rnd(w, 10) == 0 ||
        (!strcmp(type, "fail") && strcmp(wt->from, "0"))) {
        reconnect(w, wt); /* drop every connection; resume from the last delivered id */
    }
}

void run_watch(struct worker *w)
{
    struct watcher wt = {.from = "0"};
    snprintf(wt.stream, sizeof(wt.stream), "fencelock:events%s%s", w->prefix ? ":" : "",
             w->prefix ? w->prefix : "");
    while (time_left(w)) {
        watch_once(w, &wt);
        sleep_ms((int64_t)rnd(w, 20)); /* events pile up: fuller replies, fewer reads */
    }
    printf("watcher %s: %ld events delivered, %ld reconnects, %ld compacted\n", wt.stream,
           wt.delivered, wt.reconnects, wt.compacted);
}
