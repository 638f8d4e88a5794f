/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_watch.c — the event stream as Redis streams: XREAD (COUNT, BLOCK, STREAMS), XLEN,
 * XINFO STREAM, and the refusal of the stream writes (XADD, ...). The history is s->watch
 * (watch.h); XREAD ... BLOCK parks its slot as a struct srv_watcher until an applied event
 * matches one of its streams (srv_watch_wake), its BLOCK runs out (srv_watch_tick: nil), the
 * node steps down (srv_watch_fail: -NOTLEADER, unless READONLY) or stops.
 *
 * Flow control: one reply holds at most --event-buffer bytes minus what the connection has not
 * read yet (at least one entry); a connection already holding --event-buffer unread bytes gets
 * -SLOWREADER naming the last id it was sent and is closed after its queued replies.
 * A watcher owns its copy of the stream names; its slot is freed through srv_slot_done.
 *
 * Wake-ups by prefix: each of a parked watcher's streams is a member of its group in
 * s->wake (wakeidx.h: the whole stream's, or its exact prefix's). After an applied command,
 * srv_watch_wake looks only at the watchers whose groups the new entries match: O(len(name) +
 * woken) per entry, not O(watchers). A watcher not woken by an entry is one it does not match,
 * so everything up to the previous wake's `last` (s->xread.woke) is known not to match any
 * parked watcher's streams: a woken watcher reads after max(its seen, that). When entries no
 * watcher has looked at were dropped (the floor passed s->xread.woke: a command with more
 * events than the history holds, a lost event, a restored snapshot), every watcher looks, and
 * -COMPACTED goes to those that may have missed one, as before the index.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/list.h"
#include "server/cmd/cmd.h"

#define ORPHAN_SWEEP_MS 1000

struct xstream {
    struct watch_id after;
    bool all;
    const char *name, *prefix; /* name: as the client wrote it (echoed in the reply) */
    size_t name_len, plen;
};

struct srv_watcher {
    struct srv_watcher *prev, *next;
    struct srv_watcher *wake_next; /* srv_watch_wake's list of the woken */
    uint64_t stamp;                /* the s->xread.stamp of the wake that listed it */
    struct wake_member *mem;       /* one per stream, in s->wake (after st[] in this block) */
    struct srv_slot *slot;
    uint64_t *parked;     /* its user's parked count (srv_parked_counter), or NULL */
    uint64_t deadline;    /* monotonic ms; 0 = BLOCK 0, no end */
    uint64_t count;       /* 0 = no limit */
    bool stale;           /* READONLY: stays when this node steps down */
    struct watch_id seen; /* entries up to it matched none of the streams */
    size_t n;
    struct xstream st[];
};

static void w_null(struct buf *out, int proto)
{
    buf_append_str(out, proto == RESP_V3 ? "_\r\n" : "*-1\r\n");
}

static int parse_stream(struct srv_req *r, size_t i, struct xstream *x)
{
    x->name = r->argv[i].p;
    x->name_len = r->argv[i].len;
    if (watch_stream_parse(x->name, x->name_len, &x->all, &x->prefix, &x->plen) == 0)
        return 0;
    resp_w_errorf(r->out, PROTO_ERR " unknown stream: fencelock serves " WATCH_STREAM
                                    " and " WATCH_STREAM ":<prefix>");
    return -1;
}

static int parse_id(struct srv_req *r, size_t i, struct xstream *x)
{
    if (r->argv[i].len == 1 && r->argv[i].p[0] == '$') {
        x->after = r->s->watch.last;
        return 0;
    }
    if (watch_id_parse(r->argv[i].p, r->argv[i].len, &x->after) == 0)
        return 0;
    resp_w_error(r->out, PROTO_ERR " Invalid stream ID specified as stream command argument");
    return -1;
}

static void reply_compacted(struct buf *out, const struct watch *w)
{
    char id[WATCH_ID_BUF];
    watch_id_format(watch_oldest(w), id);
    resp_w_errorf(out,
                  PROTO_COMPACTED " oldest=%s: the events after the id asked for are no longer "
                                  "retained; read from 0 (the oldest retained) or $",
                  id);
}

/* One stream's entries after x->after (and after `from`, what is known not to match), at most
 * `count`, while the reply is under `budget`; returns how many were written to ents. */
static size_t render_stream(struct srv *s, const struct xstream *x, struct watch_id from,
                            uint64_t count, size_t budget, size_t used, bool some, struct buf *ents,
                            struct watch_id *maxid)
{
    if (watch_id_cmp(x->after, from) > 0)
        from = x->after;
    size_t k = 0;
    struct watch_iter it;
    watch_iter_start(&it, &s->watch, x->all, x->prefix, x->plen, from, WATCH_AUTO);
    for (;;) {
        if ((count && k >= count) || ((k || some) && ents->len + used >= budget))
            break;
        const struct watch_entry *e = watch_iter_next(&it);
        if (!e)
            break;
        watch_render(ents, e);
        if (watch_id_cmp(e->id, *maxid) > 0)
            *maxid = e->id;
        k++;
    }
    watch_iter_end(&it);
    return k;
}

/* The XREAD reply for `n` streams into out; the number of entries (0: nothing written). */
static size_t render_reply(struct srv *s, struct srv_conn *c, int proto, const struct xstream *st,
                           size_t n, uint64_t count, struct watch_id from, struct buf *out)
{
    size_t unread = c ? srv_conn_unread(c) : 0;
    size_t budget = s->cfg.event_buffer > unread ? s->cfg.event_buffer - unread : 1;
    struct buf body, ents;
    buf_init(&body);
    buf_init(&ents);
    size_t total = 0, nonempty = 0;
    struct watch_id maxid = {0, 0};
    for (size_t i = 0; i < n; i++) {
        buf_reset(&ents);
        size_t k =
            render_stream(s, &st[i], from, count, budget, body.len, total > 0, &ents, &maxid);
        if (!k)
            continue;
        nonempty++;
        total += k;
        if (proto != RESP_V3)
            resp_w_array(&body, 2);
        resp_w_bulk(&body, st[i].name, st[i].name_len);
        resp_w_array(&body, k);
        buf_append(&body, ents.p, ents.len);
    }
    if (total) {
        if (proto == RESP_V3)
            resp_w_map(out, proto, nonempty);
        else
            resp_w_array(out, nonempty);
        buf_append(out, body.p, body.len);
        if (c && watch_id_cmp(maxid, c->watch_sent) > 0)
            c->watch_sent = maxid;
        s->m.xreads++;
        s->m.xread_entries += total;
    }
    buf_free(&body);
    buf_free(&ents);
    return total;
}

/* Over --event-buffer: the final error, then the connection goes once its replies are out. */
static bool slow_reader(struct srv *s, struct srv_conn *c, struct buf *out)
{
    if (!c || (!c->close_after_write && srv_conn_unread(c) < s->cfg.event_buffer))
        return false;
    char id[WATCH_ID_BUF];
    watch_id_format(c->watch_sent, id);
    resp_w_errorf(out,
                  PROTO_SLOWREADER " over --event-buffer %zu unread reply bytes; last id sent "
                                   "%s: reconnect and XREAD from it",
                  s->cfg.event_buffer, id);
    if (!c->close_after_write) {
        s->m.slow_reader_closes++;
        LOGW(&s->log, "client %llu: XREAD reader over --event-buffer, closed",
             (unsigned long long)c->id);
        srv_conn_close_after_write(c);
    }
    return true;
}

/* ---- parked readers ---- */

static void watcher_unlink(struct srv *s, struct srv_watcher *w)
{
    for (size_t i = 0; i < w->n; i++)
        wake_index_del(&s->xread.wake, &w->mem[i]);
    DLIST_UNLINK(s->xread.watchers, w);
    s->xread.n_watchers--;
    if (w->parked)
        (*w->parked)--;
}

/* Unpark and answer: the reply is already in the slot's out (or the slot is orphaned). */
static void watcher_finish(struct srv *s, struct srv_watcher *w)
{
    watcher_unlink(s, w);
    srv_slot_set_state(w->slot, SLOT_PENDING);
    srv_slot_done(w->slot);
    free(w);
}

static int park(struct srv_req *r, const struct xstream *st, size_t n, uint64_t count,
                uint64_t block)
{
    size_t names = 0;
    for (size_t i = 0; i < n; i++)
        names += st[i].name_len;
    struct srv_watcher *w = malloc(sizeof(*w) + n * (sizeof(*st) + sizeof(*w->mem)) + names);
    if (!w)
        return -1;
    w->mem = (struct wake_member *)&w->st[n];
    char *p = (char *)&w->mem[n];
    for (size_t i = 0; i < n; i++) {
        w->st[i] = st[i];
        memcpy(p, st[i].name, st[i].name_len);
        w->st[i].name = p;
        w->st[i].prefix = p + (st[i].prefix - st[i].name);
        p += st[i].name_len;
    }
    struct srv *s = r->s;
    for (size_t i = 0; i < n; i++)
        if (wake_index_add(&s->xread.wake, &w->mem[i], w->st[i].all, w->st[i].prefix, w->st[i].plen,
                           w)) {
            while (i--)
                wake_index_del(&s->xread.wake, &w->mem[i]);
            free(w);
            return -1;
        }
    w->stamp = 0;
    w->n = n;
    w->slot = r->slot;
    w->count = count;
    w->stale = r->c && r->c->stale_reads;
    w->seen = s->watch.last;
    w->deadline = block ? clock_ms() + block : 0;
    if (w->deadline && w->deadline < s->xread.next_due)
        s->xread.next_due = w->deadline;
    DLIST_PUSH(s->xread.watchers, w);
    s->xread.n_watchers++;
    w->parked = srv_parked_counter(s, r->c ? r->c->user : NULL);
    if (w->parked)
        (*w->parked)++;
    srv_slot_set_state(r->slot, SLOT_PARKED);
    r->async = true;
    return 0;
}

struct wake_list {
    struct srv *s;
    struct srv_watcher *head;
};

/* A watcher an entry matches: listed once per wake. */
static void wake_collect(void *arg, struct wake_member *m)
{
    struct wake_list *l = arg;
    struct srv_watcher *w = m->owner;
    if (w->stamp == l->s->xread.stamp)
        return;
    w->stamp = l->s->xread.stamp;
    w->wake_next = l->head;
    l->head = w;
}

/* The watchers the entries since the previous wake match (all of them when some of those
 * entries are gone), each listed once. */
static struct srv_watcher *woken_by_new_entries(struct srv *s, struct watch_id prev)
{
    struct watch *h = &s->watch;
    struct wake_list l = {s, NULL};
    s->xread.stamp++;
    if (watch_id_cmp(h->floor, prev) > 0) {
        for (struct srv_watcher *w = s->xread.watchers; w; w = w->next) {
            w->stamp = s->xread.stamp;
            w->wake_next = l.head;
            l.head = w;
        }
        return l.head;
    }
    for (size_t i = watch_after(h, prev); i < h->n; i++) {
        const struct watch_entry *e = watch_at(h, i);
        wake_index_match(&s->xread.wake, e->data, e->name_len, watch_named(e), wake_collect, &l);
    }
    return l.head;
}

void srv_watch_wake(struct srv *s)
{
    struct watch_id prev = s->xread.woke;
    s->xread.woke = s->watch.last;
    if (!s->xread.watchers)
        return;
    struct srv_watcher *w = woken_by_new_entries(s, prev);
    while (w) {
        struct srv_watcher *next = w->wake_next;
        struct srv_slot *slot = w->slot;
        struct watch_id seen = watch_id_cmp(prev, w->seen) > 0 ? prev : w->seen;
        s->m.watch_wakeups++;
        w->seen = s->watch.last;
        if (!slot->conn) {
            watcher_finish(s, w);
        } else if (watch_id_cmp(seen, s->watch.floor) < 0) {
            reply_compacted(&slot->out, &s->watch); /* unseen events were dropped */
            watcher_finish(s, w);
        } else if (slow_reader(s, slot->conn, &slot->out) ||
                   render_reply(s, slot->conn, slot->proto, w->st, w->n, w->count, seen,
                                &slot->out)) {
            watcher_finish(s, w);
        }
        w = next;
    }
}

void srv_watch_reauth(struct srv *s)
{
    struct srv_watcher *w = s->xread.watchers;
    while (w) {
        struct srv_watcher *next = w->next;
        const struct srv_conn *c = w->slot->conn;
        if (c && c->user && !cmd_perm_allows(c->user, srv_cmd_at(SRV_CMD_XREAD), NULL, 0)) {
            s->m.perm_denials++;
            cmd_perm_lost(&w->slot->out, c->user, srv_cmd_at(SRV_CMD_XREAD));
            watcher_finish(s, w);
        }
        w = next;
    }
}

void srv_watch_tick(struct srv *s, uint64_t now)
{
    if (!s->xread.watchers ||
        (now < s->xread.next_due && now - s->xread.sweep_ms < ORPHAN_SWEEP_MS))
        return;
    s->xread.sweep_ms = now;
    s->xread.next_due = UINT64_MAX;
    struct srv_watcher *w = s->xread.watchers;
    while (w) {
        struct srv_watcher *next = w->next;
        if (!w->slot->conn) {
            watcher_finish(s, w);
        } else if (w->deadline && now >= w->deadline) {
            w_null(&w->slot->out, w->slot->proto);
            watcher_finish(s, w);
        } else if (w->deadline && w->deadline < s->xread.next_due) {
            s->xread.next_due = w->deadline;
        }
        w = next;
    }
}

void srv_watch_fail(struct srv *s, int status, bool all)
{
    struct srv_watcher *w = s->xread.watchers;
    while (w) {
        struct srv_watcher *next = w->next;
        if (all || !w->stale) {
            srv_reply_status(s, &w->slot->out, status);
            watcher_finish(s, w);
        }
        w = next;
    }
}

/* ---- the commands ---- */

struct xread_opts {
    uint64_t count, block;
    bool has_block;
    size_t first; /* index of the first stream name */
};

static int xread_options(struct srv_req *r, struct xread_opts *o)
{
    size_t i = 1;
    memset(o, 0, sizeof(*o));
    while (i < r->argc && !resp_arg_is(&r->argv[i], "STREAMS")) {
        bool cnt = resp_arg_is(&r->argv[i], "COUNT"), blk = resp_arg_is(&r->argv[i], "BLOCK");
        if ((!cnt && !blk) || i + 1 >= r->argc) {
            cmd_reply_err(r, PROTO_ERR " syntax error");
            return -1;
        }
        if (cnt && cmd_arg_u64(r, i + 1, "COUNT", &o->count))
            return -1;
        if (blk && resp_parse_u64(r->argv[i + 1].p, r->argv[i + 1].len, &o->block)) {
            cmd_reply_err(r, PROTO_ERR " timeout is not an integer or out of range");
            return -1;
        }
        o->has_block |= blk;
        i += 2;
    }
    size_t left = i < r->argc ? r->argc - i - 1 : 0;
    if (left == 0 || left % 2) {
        cmd_reply_err(r, PROTO_ERR " Unbalanced 'xread' list of streams: for each stream key "
                                   "an ID or '$' must be specified.");
        return -1;
    }
    o->first = i + 1;
    return 0;
}

/*
 * XREAD [COUNT n] [BLOCK ms] STREAMS stream... id...: entries after each id, in Redis's shape;
 * runs after a read barrier on the leader (linearizable), or on this node's applied stream
 * after READONLY. "$" is the newest id at that moment.
 */
void xreadCommand(struct srv_req *r)
{
    struct xread_opts o;
    if (xread_options(r, &o))
        return;
    size_t n = (r->argc - o.first) / 2;
    struct xstream *st = calloc(n, sizeof(*st));
    if (!st) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    size_t i = 0;
    for (; i < n; i++)
        if (parse_stream(r, o.first + i, &st[i]) || parse_id(r, o.first + n + i, &st[i]))
            break;
    for (size_t k = 0; i == n && k < n; k++)
        if (watch_check(&r->s->watch, st[k].after)) {
            reply_compacted(r->out, &r->s->watch);
            i = 0;
            break;
        }
    struct watch_id none = {0, 0};
    if (i < n || slow_reader(r->s, r->c, r->out) ||
        render_reply(r->s, r->c, r->proto, st, n, o.count, none, r->out)) {
        free(st);
        return;
    }
    if (o.has_block && r->slot && r->c && srv_parked_admit(r)) {
        free(st); /* -NOSPACE written: --max-parked or the user's max_parked= */
        return;
    }
    if (!o.has_block || !r->slot || !r->c || park(r, st, n, o.count, o.block))
        w_null(r->out, r->proto);
    free(st);
}

void xlenCommand(struct srv_req *r)
{
    struct xstream x;
    struct watch_span sp;
    if (parse_stream(r, 1, &x) == 0) {
        watch_span(&r->s->watch, x.all, x.prefix, x.plen, &sp);
        resp_w_uint(r->out, sp.n);
    }
}

static void info_id(struct buf *out, const char *field, struct watch_id id)
{
    char s[WATCH_ID_BUF];
    resp_w_bulk_str(out, field);
    resp_w_bulk(out, s, (size_t)watch_id_format(id, s));
}

/* first-entry / last-entry: the entry, or nil. */
static void info_entry(struct buf *out, int proto, const char *field, const struct watch_entry *e)
{
    resp_w_bulk_str(out, field);
    if (e)
        watch_render(out, e);
    else
        resp_w_nil(out, proto);
}

#define XINFO_FIELDS 8

/* XINFO STREAM name: what Redis answers, from the retained history (no consumer groups). */
void xinfoCommand(struct srv_req *r)
{
    if (r->argc >= 2 && resp_arg_is(&r->argv[1], "GROUPS") && r->argc == 3) {
        struct xstream x;
        if (parse_stream(r, 2, &x) == 0)
            resp_w_array(r->out, 0); /* no consumer groups exist */
        return;
    }
    if (r->argc != 3 || !resp_arg_is(&r->argv[1], "STREAM")) {
        cmd_reply_err(r, PROTO_ERR " only XINFO STREAM <stream> and XINFO GROUPS <stream> are "
                                   "supported on fencelock's event streams");
        return;
    }
    struct xstream x;
    if (parse_stream(r, 2, &x))
        return;
    struct watch *w = &r->s->watch;
    struct watch_span sp;
    watch_span(w, x.all, x.prefix, x.plen, &sp);
    const struct watch_entry *first = sp.first, *last = sp.last;
    resp_w_map(r->out, r->proto, XINFO_FIELDS);
    resp_w_bulk_str(r->out, "length");
    resp_w_uint(r->out, sp.n);
    info_id(r->out, "last-generated-id", w->last);
    info_id(r->out, "max-deleted-entry-id", w->floor);
    info_id(r->out, "recorded-first-entry-id", first ? first->id : watch_oldest(w));
    resp_w_bulk_str(r->out, "entries-added");
    resp_w_uint(r->out, w->n + w->dropped);
    resp_w_bulk_str(r->out, "groups");
    resp_w_uint(r->out, 0);
    info_entry(r->out, r->proto, "first-entry", first);
    info_entry(r->out, r->proto, "last-entry", last);
}

/* XADD, XDEL, XTRIM, ...: the streams are written by the log alone. */
void xwriteCommand(struct srv_req *r)
{
    resp_w_errorf(r->out,
                  PROTO_ERR " fencelock's event streams are read-only (the Raft log writes "
                            "them); %.*s is not supported",
                  (int)(r->argv[0].len > 32 ? 32 : r->argv[0].len), r->argv[0].p);
}
