/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_api.c — the gate (HTTP Basic or an AUTH.TOKEN bearer token under --acl-file) and the
 * read-only JSON API. The header
 * comment of http_api.h has who owns what; http_args.c parses.
 *
 * A request's way: srv_http_async_route copies it (struct hapi_req) -> the gate: no users, or
 * a cached/verified password (srv_auth_http: the back-off and delays of AUTH apply) -> admit:
 * /v1/fence to http_fence.c, /metrics rendered, an API path checked (`read` permission, the
 * route, the query) and then answered: with `?stale` at once from this node's state (with
 * X-Fencelock-Last-Contact and X-Fencelock-Applied-Index), on the leader after a read barrier
 * (linearizable, as LOCK.INFO on the client port), on a follower 307 to the leader's HTTP
 * address (the member table's, MEMBER_HTTP), or 503 naming the leader when that is not known.
 *
 * What a user sees: only the locks, semaphores and elections its locks= globs allow (as LOCKS
 * filters) and, once owners are recorded, its own sessions (every one to an admin), as
 * SESSION.LIST; a session it may not see is answered 404 like a missing one.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/json.h"
#include "server/cmd/cmd.h"
#include "server/cmd/inforows.h"
#include "server/cmd/waitrows.h"
#include "server/obs/console.h"
#include "server/obs/http_args.h"
#include "server/obs/metrics_page.h"
#include "server/security/peer_guard.h"
#include "server/server.h"

#define HAPI_JSON "application/json"
#define HAPI_TEXT "text/plain; charset=utf-8"
#define HAPI_REALM "WWW-Authenticate: Basic realm=\"fencelock\", charset=\"UTF-8\"\r\n"
#define HAPI_BEARER_REALM                                                                          \
    "WWW-Authenticate: Bearer realm=\"fencelock\", error=\"invalid_token\"\r\n"

struct hapi_req {
    struct hapi_req *next;
    struct srv *s;
    struct srv_http_pending *p;
    bool has_user;
    char user[ACL_NAME_MAX + 1]; /* looked up again at answer time: a reload may change it */
    char method[8];
    char peer[64];
    bool tls;           /* the request came over --http-tls */
    char *path, *query; /* into mem */
    size_t head_len;
    char mem[]; /* head, NUL, path, NUL, query, NUL */
};

static void req_free(struct hapi_req *q)
{
    free(q);
}

static void answer_text(struct hapi_req *q, int status, const char *extra, const char *msg)
{
    srv_http_complete_h(q->p, status, HAPI_TEXT, extra, msg, strlen(msg));
    req_free(q);
}

/* The request as http.h's struct, over q's copies. */
static struct srv_http_request req_of(const struct hapi_req *q)
{
    return (struct srv_http_request){q->method,   q->path, q->query, q->mem,
                                     q->head_len, q->peer, q->tls,   ""};
}

/* The user q authenticated as, in the current rules; NULL without users or when gone. */
static const struct acl_user *user_of(const struct hapi_req *q)
{
    if (!q->s->auth.on || !q->has_user)
        return NULL;
    return acl_user_find(&q->s->auth.acl, q->user, strlen(q->user));
}

static bool may_lock(const struct hapi_req *q, const struct acl_user *u, const char *n, size_t l)
{
    return !q->s->auth.on || (u && acl_may_lock(u, n, l));
}

/* ---- the JSON of each route ---- */

struct holders_arg {
    struct json *j;
};

static void holder_obj(void *arg, uint64_t sid, uint64_t token, bool shared)
{
    struct json *j = ((struct holders_arg *)arg)->j;
    (void)shared;
    json_obj(j);
    json_kv_u64(j, "sid", sid);
    json_kv_u64(j, "token", token);
    json_close(j);
}

/* One row's sids (waitrows.h) as a JSON array. */
static void write_sids(struct json *j, const struct wait_rows *x, size_t i)
{
    const uint64_t *v = waitrows_sids(x, i);
    json_arr(j);
    for (size_t k = 0; k < x->r[i].n; k++)
        json_u64(j, v[k]);
    json_close(j);
}

/* LOCK.INFO's waiters, waits_for and waits_for_cut (cmd_lock.c), all from one read of the queue
 * (waitrows.h: one row per queued request, FIFO): "waiters" the rows' sids, "waits_for" their
 * lists, at most --max-keys-reply sids over them, "waits_for_cut": 1 only when one was cut
 * there (as LOCK.INFO's, so an uncut answer is as it was). */
static void write_waiters(struct json *j, struct srv *s, const char *name, size_t nl)
{
    size_t left = s->cfg.max_keys_reply;
    struct wait_rows x;
    waitrows_read(s->fsm, name, nl, &left, &x);
    json_key(j, "waiters");
    json_arr(j);
    for (size_t i = 0; i < x.n; i++)
        json_u64(j, x.r[i].sid);
    json_close(j);
    json_key(j, "waits_for"); /* per waiter, in the order of "waiters" (LOCK.INFO's) */
    json_arr(j);
    for (size_t i = 0; i < x.n; i++)
        write_sids(j, &x, i);
    json_close(j);
    if (waitrows_cut(&x))
        json_kv_u64(j, "waits_for_cut", 1);
    waitrows_free(&x);
}

static const char *lock_mode(uint64_t holder_sid, size_t n_shared)
{
    return holder_sid ? "exclusive" : n_shared ? "shared" : "none";
}

/* The lock metadata fields (fsm/lockmeta.c), as LOCK.INFO and LOCKS write them. */
static void write_meta(struct json *j, struct fsm_str value, uint64_t maxhold_ms,
                       uint64_t transitions)
{
    json_kv_str(j, "value", value.p, value.len);
    json_kv_u64(j, "max_hold_ms", maxhold_ms);
    json_kv_u64(j, "transitions", transitions);
}

/* LOCK.INFO's fields, with the name. 0, or 404 when there is no such lock. */
static int render_lock(struct srv *s, struct json *j, const char *name, size_t nl)
{
    struct fsm_lock_view v;
    int kind = fsm_kind_of(s->fsm, name, nl);
    if (kind != FSM_KIND_LOCK || !fsm_lock_info(s->fsm, name, nl, &v))
        return 404;
    json_obj(j);
    json_kv_str(j, "name", name, nl);
    json_kv_u64(j, "holder", v.holder_sid);
    json_kv_u64(j, "token", v.token);
    json_kv_u64(j, "held_since_ms", v.held_since_ms);
    json_kv_u64(j, "lockdelay", v.in_lockdelay ? 1 : 0);
    json_kv_cstr(j, "mode", lock_mode(v.holder_sid, v.n_shared));
    json_key(j, "holders");
    json_arr(j);
    struct holders_arg ha = {j};
    fsm_lock_holders(s->fsm, name, nl, holder_obj, &ha);
    json_close(j);
    write_waiters(j, s, name, nl);
    write_meta(j, v.value, v.maxhold_ms, v.transitions);
    if (v.reentrant) /* a reentrant holder's holds, as LOCK.INFO shows them */
        json_kv_u64(j, "count", v.count);
    json_close(j);
    return 0;
}

/* GET /v1/locks/{name}/history: LOCK.HISTORY's entries (cmd_history.c) as JSON, and `next`,
 * the `before` of the next page (null at the end). Names and users are user data: JSON
 * strings, which the console shows as text. */
static int render_history(struct srv *s, struct json *j, const char *name, size_t nl,
                          const struct hapi_query *qq, char *err, size_t errlen)
{
    uint64_t count = qq->count ? qq->count : 100;
    if (count > s->cfg.max_keys_reply) {
        snprintf(err, errlen, "count: at most --max-keys-reply (%llu)",
                 (unsigned long long)s->cfg.max_keys_reply);
        return 400;
    }
    struct cmd_history h;
    int rc = cmd_history_collect(s->fsm, name, nl, qq->before, (size_t)count, &h);
    if (rc) {
        cmd_history_error(rc, h.compacted, err, errlen);
        return rc == FSM_HIST_COMPACTED ? 410 : rc == FSM_HIST_OFF ? 404 : 500;
    }
    json_obj(j);
    json_kv_str(j, "name", name, nl);
    json_key(j, "history");
    json_arr(j);
    for (size_t i = 0; i < h.n; i++) {
        const struct fsm_hist_entry *e = &h.v[i];
        json_obj(j);
        json_kv_cstr(j, "kind", fsm_kind_name(e->kind));
        json_kv_u64(j, "session", e->sid);
        json_kv_str(j, "session_name", e->session_name.p, e->session_name.len);
        json_kv_str(j, "user", e->user.p, e->user.len);
        json_kv_str(j, "value", e->value.p, e->value.len);
        char tp[TRACE_TEXT_LEN + 1];
        json_kv_cstr(j, "traceparent", cmd_history_trace(e->trace, tp));
        json_kv_cstr(j, "end_traceparent", cmd_history_trace(e->end_trace, tp));
        json_kv_u64(j, "token", e->token);
        json_kv_u64(j, "permits", e->permits);
        json_kv_u64(j, "granted_rev", e->token);
        json_kv_u64(j, "granted_ms", e->granted_ms);
        json_kv_u64(j, "waited_ms", e->waited_ms);
        json_kv_u64(j, "ended_rev", e->ended_rev);
        json_kv_u64(j, "ended_ms", e->ended_ms);
        json_kv_cstr(j, "ended_by", e->ended_by);
        json_kv_u64(j, "held_ms", e->held_ms);
        json_kv_u64(j, "waiters_total", e->n_waiters);
        json_key(j, "waiters");
        json_arr(j);
        for (uint32_t w = 0; w < e->n_shown; w++) {
            json_obj(j);
            json_kv_u64(j, "session", e->waiters[w].sid);
            json_kv_u64(j, "waited_ms", e->waiters[w].waited_ms);
            json_close(j);
        }
        json_close(j);
        json_close(j);
    }
    json_close(j);
    json_key(j, "next");
    if (h.n == count && h.n)
        json_u64(j, h.v[h.n - 1].token);
    else
        json_null(j);
    json_close(j);
    free(h.v);
    return 0;
}

/* A semaphore's acquisition: SEM.INFO's holder map. */
static void sem_holder_obj(void *arg, uint64_t sid, uint64_t token, uint32_t permits)
{
    struct json *j = arg;
    json_obj(j);
    json_kv_u64(j, "sid", sid);
    json_kv_u64(j, "token", token);
    json_kv_u64(j, "permits", permits);
    json_close(j);
}

/* SEM.INFO's fields, with the name. */
static void render_sem(struct srv *s, struct json *j, const char *name, size_t nl)
{
    struct fsm_sem_view v;
    if (!fsm_sem_info(s->fsm, name, nl, &v))
        return;
    json_obj(j);
    json_kv_str(j, "name", name, nl);
    json_kv_u64(j, "limit", v.limit);
    json_kv_u64(j, "permits", v.in_use);
    json_key(j, "holders");
    json_arr(j);
    fsm_sem_holders(s->fsm, name, nl, sem_holder_obj, j);
    json_close(j);
    struct info_rows q; /* read once: "waiters" its sids, "wanted" its permits */
    inforows_sem_queue(s->fsm, name, nl, &q);
    json_key(j, "waiters");
    json_arr(j);
    for (size_t i = 0; i < q.n; i++)
        json_u64(j, q.r[i].sid);
    json_close(j);
    json_kv_u64(j, "lockdelay", v.in_lockdelay ? 1 : 0);
    json_kv_u64(j, "limit_set_by_operator", v.by_operator ? 1 : 0);
    json_key(j, "wanted"); /* per waiter, in the order of "waiters" */
    json_arr(j);
    for (size_t i = 0; i < q.n; i++)
        json_u64(j, q.r[i].val);
    json_close(j);
    inforows_free(&q);
    json_close(j);
}

static void render_elect(struct srv *s, struct json *j, const char *name, size_t nl)
{
    struct fsm_elect_view v;
    bool led = fsm_elect_leader(s->fsm, name, nl, &v);
    json_obj(j);
    json_kv_str(j, "name", name, nl);
    json_kv_u64(j, "sid", led ? v.sid : 0);
    json_kv_u64(j, "token", led ? v.token : 0);
    json_kv_str(j, "value", led && v.value.p ? v.value.p : "", led ? v.value.len : 0);
    json_kv_u64(j, "since_rev", led ? v.token : 0);
    json_kv_u64(j, "rev", led ? v.rev : 0);
    json_kv_u64(j, "candidates", led ? v.n_candidates : 0);
    json_close(j);
}

/*
 * /v1/locks, /v1/elections, /v1/semaphores: the names from `after` (exclusive) with the prefix,
 * at most `limit` (at most --max-keys-reply, also the default) looked at, in byte order; those
 * the user may not see, or of another kind, are left out (as LOCKS: the limit bounds one
 * answer's work). "next": the last name looked at when the limit was reached (the `after` of
 * the next page), else null.
 */
static int render_list(struct hapi_req *q, struct json *j, enum hapi_route r,
                       const struct hapi_query *qq, const struct acl_user *u)
{
    struct srv *s = q->s;
    uint64_t limit = qq->limit ? qq->limit : s->cfg.max_keys_reply;
    if (limit > s->cfg.max_keys_reply)
        return 400;
    struct fsm_lock_item *it = calloc(limit ? limit : 1, sizeof(*it));
    if (!it)
        return 503;
    size_t n = fsm_locks_list_after(s->fsm, qq->prefix, qq->prefix_len,
                                    qq->has_after ? qq->after : NULL, qq->after_len, limit, it);
    uint8_t want = r == HAPI_LOCKS       ? FSM_KIND_LOCK
                   : r == HAPI_ELECTIONS ? FSM_KIND_ELECT
                                         : FSM_KIND_SEM;
    json_obj(j);
    json_key(j, r == HAPI_LOCKS ? "locks" : r == HAPI_ELECTIONS ? "elections" : "semaphores");
    json_arr(j);
    for (size_t i = 0; i < n; i++) {
        const struct fsm_lock_item *x = &it[i];
        if (!may_lock(q, u, x->name.p, x->name.len))
            continue;
        if (r == HAPI_LOCKS) { /* LOCKS's row: every kind, as LOCKS lists them */
            json_obj(j);
            json_kv_str(j, "name", x->name.p, x->name.len);
            json_kv_u64(j, "holder", x->holder_sid);
            json_kv_u64(j, "token", x->token);
            json_kv_u64(j, "lockdelay", x->in_lockdelay ? 1 : 0);
            json_kv_u64(j, "waiters", x->n_waiters);
            json_kv_cstr(j, "mode",
                         x->kind == FSM_KIND_LOCK ? lock_mode(x->holder_sid, x->n_shared)
                                                  : fsm_kind_name(x->kind));
            json_kv_u64(j, "holders", x->holder_sid ? 1 : x->n_shared);
            write_meta(j, x->value, x->maxhold_ms, x->transitions);
            if (x->reentrant) /* a reentrant holder's holds, as LOCKS shows them */
                json_kv_u64(j, "count", x->count);
            json_close(j);
        } else if (x->kind == want) {
            if (r == HAPI_ELECTIONS)
                render_elect(s, j, x->name.p, x->name.len);
            else
                render_sem(s, j, x->name.p, x->name.len);
        }
    }
    json_close(j);
    json_key(j, "next");
    if (n == limit && n > 0)
        json_str(j, it[n - 1].name.p, it[n - 1].name.len);
    else
        json_null(j);
    json_close(j);
    free(it);
    return 0;
}

/*
 * /v1/waits: LOCK.WAITS's rows (lock, object, sid, waits_for, any, cut), one per queued request
 * on the locks, semaphores and elections with the prefix, those the user may see, from the one
 * reader (waitrows.h): at most --max-keys-reply sids over the page, a row cut there with `cut`
 * 1. Paged as /v1/locks (the same limit bounds the names looked at; "next" the after of the
 * next page), so that the "who blocks whom" view works on any number of locks.
 */
static int render_waits(struct hapi_req *q, struct json *j, const struct hapi_query *qq,
                        const struct acl_user *u)
{
    struct srv *s = q->s;
    uint64_t limit = qq->limit ? qq->limit : s->cfg.max_keys_reply;
    if (limit > s->cfg.max_keys_reply)
        return 400;
    struct fsm_lock_item *it = calloc(limit ? limit : 1, sizeof(*it));
    if (!it)
        return 503;
    size_t n = fsm_locks_list_after(s->fsm, qq->prefix, qq->prefix_len,
                                    qq->has_after ? qq->after : NULL, qq->after_len, limit, it);
    size_t left = s->cfg.max_keys_reply; /* the sids this page may list, over all its rows */
    json_obj(j);
    json_key(j, "waits");
    json_arr(j);
    for (size_t i = 0; i < n; i++) {
        const struct fsm_lock_item *x = &it[i];
        if (!x->n_waiters || !may_lock(q, u, x->name.p, x->name.len))
            continue;
        struct wait_rows w;
        waitrows_read(s->fsm, x->name.p, x->name.len, &left, &w);
        for (size_t k = 0; k < w.n; k++) {
            json_obj(j);
            json_kv_str(j, "lock", x->name.p, x->name.len);
            json_kv_cstr(j, "object", fsm_kind_name(x->kind));
            json_kv_u64(j, "sid", w.r[k].sid);
            json_key(j, "waits_for");
            write_sids(j, &w, k);
            json_kv_u64(j, "any", w.r[k].any ? 1 : 0);
            json_kv_u64(j, "cut", w.r[k].cut ? 1 : 0);
            json_close(j);
        }
        waitrows_free(&w);
    }
    json_close(j);
    json_key(j, "next");
    if (n == limit && n > 0)
        json_str(j, it[n - 1].name.p, it[n - 1].name.len);
    else
        json_null(j);
    json_close(j);
    free(it);
    return 0;
}

/* SESSION.LIST's visibility rule (cmd_session.c list_may_see). */
static bool may_see_session(const struct hapi_req *q, const struct acl_user *u,
                            const struct fsm_session_view *v)
{
    if (!q->s->auth.on || fsm_format(q->s->fsm) < FSM_FORMAT_2)
        return true;
    if (!u)
        return false;
    return (u->perms & ACL_ADMIN) ||
           (v->owner.len == strlen(u->name) && memcmp(v->owner.p, u->name, v->owner.len) == 0);
}

static void session_obj(struct srv *s, struct json *j, const struct fsm_session_view *v,
                        uint64_t now)
{
    json_obj(j);
    json_kv_u64(j, "sid", v->sid);
    json_kv_u64(j, "ttl_ms", v->ttl_ms);
    json_kv_u64(j, "lockdelay_ms", v->lockdelay_ms);
    json_kv_str(j, "name", v->name.p, v->name.len);
    json_kv_str(j, "owner", v->owner.p, v->owner.len);
    json_kv_u64(j, "locks", v->n_locks);
    json_kv_u64(j, "waits", v->n_waits);
    json_kv_u64(j, "keys", v->n_keys);
    json_kv_u64(j, "remaining_ms", lease_session_remaining(&s->lease.rules, v->sid, now));
    if (v->reentrant) /* as SESSION.INFO: only a reentrant session has one */
        json_kv_u64(j, "max_count", v->max_count);
    json_close(j);
}

struct sess_list {
    struct hapi_req *q;
    const struct acl_user *u;
    struct json *j;
    uint64_t now, last;
    size_t seen;
};

static void sess_one(void *arg, uint64_t sid)
{
    struct sess_list *sl = arg;
    struct fsm_session_view v;
    sl->seen++;
    sl->last = sid;
    if (fsm_session_info(sl->q->s->fsm, sid, &v) && may_see_session(sl->q, sl->u, &v))
        session_obj(sl->q->s, sl->j, &v, sl->now);
}

static void render_members(struct srv *s, struct json *j);

/* The answer to an admitted API request: status and body (JSON, or a message). */
static int render(struct hapi_req *q, struct buf *body)
{
    struct srv *s = q->s;
    char *name = malloc(2 * (s->cfg.max_key + 1) + s->cfg.max_key + 1);
    if (!name)
        return 503;
    struct hapi_query qq = {.prefix = name + s->cfg.max_key + 1,
                            .after = name + 2 * (s->cfg.max_key + 1)};
    size_t nl = 0;
    uint64_t id = 0;
    char err[160];
    int status = 0;
    enum hapi_route r = hapi_route_of(q->path, name, s->cfg.max_key, &nl, &id);
    const struct acl_user *u = user_of(q);
    struct json j;
    json_init(&j, body);
    if (r == HAPI_NONE) {
        status = 404;
        buf_append_str(body, "not found\n");
    } else if (r == HAPI_BAD) {
        status = 400;
        buf_printf(body, "bad name in the path: an empty name, bad percent-encoding, longer "
                         "than --max-key, or a session id that is not a positive number\n");
    } else if (hapi_parse_query(q->query, &qq, s->cfg.max_key, err, sizeof(err))) {
        status = 400;
        buf_printf(body, "%s\n", err);
    } else if (r == HAPI_LOCK) {
        if (!may_lock(q, u, name, nl) || (status = render_lock(s, &j, name, nl)) == 404) {
            status = 404; /* a lock the user may not see is not there for it */
            buf_reset(body);
            buf_append_str(body, "no such lock\n");
        }
    } else if (r == HAPI_HISTORY) {
        if (!may_lock(q, u, name, nl)) {
            status = 404; /* as /v1/locks/{name}: a name the user may not see is not there */
            buf_append_str(body, "no such lock\n");
        } else if ((status = render_history(s, &j, name, nl, &qq, err, sizeof(err))) != 0) {
            buf_reset(body);
            buf_printf(body, "%s\n", err);
        }
    } else if (r == HAPI_LOCKS || r == HAPI_ELECTIONS || r == HAPI_SEMAPHORES) {
        status = render_list(q, &j, r, &qq, u);
        if (status == 400)
            buf_printf(body, "limit: at most --max-keys-reply (%llu)\n",
                       (unsigned long long)s->cfg.max_keys_reply);
    } else if (r == HAPI_WAITS) {
        status = render_waits(q, &j, &qq, u);
        if (status == 400)
            buf_printf(body, "limit: at most --max-keys-reply (%llu)\n",
                       (unsigned long long)s->cfg.max_keys_reply);
    } else if (r == HAPI_SESSION) {
        struct fsm_session_view v;
        if (!fsm_session_info(s->fsm, id, &v) || !may_see_session(q, u, &v)) {
            status = 404;
            buf_append_str(body, "no such session\n");
        } else {
            session_obj(s, &j, &v, clock_ms());
        }
    } else if (r == HAPI_SESSIONS) {
        uint64_t after = 0, limit = qq.limit ? qq.limit : s->cfg.max_keys_reply;
        if (limit > s->cfg.max_keys_reply ||
            (qq.has_after && hapi_parse_u64(qq.after, qq.after_len, &after))) {
            status = 400;
            buf_append_str(body, "after: a session id; limit: at most --max-keys-reply\n");
        } else {
            struct sess_list sl = {q, u, &j, clock_ms(), 0, 0};
            json_obj(&j);
            json_key(&j, "sessions");
            json_arr(&j);
            fsm_sessions_after(s->fsm, after, (size_t)limit, sess_one, &sl);
            json_close(&j);
            json_key(&j, "next");
            if (sl.seen == limit && sl.seen)
                json_u64(&j, sl.last);
            else
                json_null(&j);
            json_close(&j);
        }
    } else if (r == HAPI_MEMBERS) {
        render_members(s, &j);
    }
    free(name);
    if (status == 0 && json_end(&j))
        status = 500;
    if (status == 500) {
        buf_reset(body);
        buf_append_str(body, "out of memory\n");
    }
    return status ? status : 200;
}

/* ---- answering after a barrier, stale, or from a follower ---- */

static void answer_api(struct hapi_req *q, const char *extra)
{
    struct buf body;
    buf_init(&body);
    int status = render(q, &body);
    if (buf_failed(&body))
        answer_text(q, 500, NULL, "out of memory\n");
    else {
        srv_http_complete_h(q->p, status, status == 200 ? HAPI_JSON : HAPI_TEXT, extra, body.p,
                            body.len);
        req_free(q);
    }
    buf_free(&body);
}

static void api_barrier_cb(void *ctx, int status);

static void answer_list(struct srv *s, struct hapi_req *l, bool ok)
{
    while (l) {
        struct hapi_req *next = l->next;
        if (!ok)
            answer_text(l, 503, NULL,
                        "not the ready leader, or no quorum: ask another node, or "
                        "add ?stale\n");
        else
            answer_api(l, NULL);
        l = next;
    }
    (void)s;
}

static void issue(struct srv *s)
{
    struct srv_hapi *h = &s->hapi;
    if (h->busy || !h->waiting)
        return;
    h->inflight = h->waiting;
    h->waiting = h->waiting_tail = NULL;
    if (s->stopping || !srv_ready(s) || rn_barrier(s->rn, api_barrier_cb, s) != RN_OK) {
        struct hapi_req *l = h->inflight;
        h->inflight = NULL;
        answer_list(s, l, false);
        return;
    }
    h->busy = true;
}

static void api_barrier_cb(void *ctx, int status)
{
    struct srv *s = ctx;
    struct srv_hapi *h = &s->hapi;
    struct hapi_req *l = h->inflight;
    h->inflight = NULL;
    h->busy = false;
    answer_list(s, l, status == RN_OK && srv_ready(s));
    issue(s);
}

/* ?stale: this node's state now, and how old it may be. */
static void answer_stale(struct hapi_req *q)
{
    struct srv *s = q->s;
    uint64_t lid;
    const char *laddr;
    rn_leader(s->rn, &lid, &laddr);
    uint64_t ago = lid == s->cfg.id ? 0 : rn_heard_ago(s->rn, lid);
    char extra[160];
    if (ago == UINT64_MAX)
        snprintf(extra, sizeof(extra), "X-Fencelock-Applied-Index: %llu\r\n",
                 (unsigned long long)rn_applied_index(s->rn));
    else
        snprintf(extra, sizeof(extra),
                 "X-Fencelock-Last-Contact: %llu\r\nX-Fencelock-Applied-Index: %llu\r\n",
                 (unsigned long long)ago, (unsigned long long)rn_applied_index(s->rn));
    answer_api(q, extra);
}

/* Not the leader and no ?stale, the leader's HTTP address known (MEMBER_HTTP, announced by
 * each node: cluster/members.c): 307 to the same path and query there, https when its HTTP
 * port speaks TLS. A browser or `curl -L` follows it (the method and body stay, as 307 says);
 * credentials go along only where the client's own rules allow (docs/server.md). true if
 * answered. */
bool srv_http_redirect_to_leader(struct srv *s, struct srv_http_pending *p, const char *path,
                                 const char *query)
{
    uint64_t lid;
    const char *laddr;
    struct fsm_member_view v;
    rn_leader(s->rn, &lid, &laddr);
    if (!lid || lid == s->cfg.id || !fsm_member_get(s->fsm, lid, &v) || !v.http_addr.len ||
        !proto_addr_valid(v.http_addr.p, v.http_addr.len))
        return false;
    struct buf h;
    buf_init(&h);
    int rc = buf_printf(&h, "Location: %s://%.*s%s%s%s\r\nX-Fencelock-Leader: %llu %.*s\r\n",
                        v.http_flags & FSM_MEMBER_HTTP_TLS ? "https" : "http", (int)v.http_addr.len,
                        v.http_addr.p, path, query[0] ? "?" : "", query, (unsigned long long)lid,
                        (int)v.client_addr.len, v.client_addr.p);
    if (rc || buf_failed(&h)) {
        buf_free(&h);
        return false; /* the 503 names the leader instead */
    }
    char msg[PROTO_ADDR_BUF + 96];
    snprintf(msg, sizeof(msg), "not the leader: node %llu is, at %.*s\n", (unsigned long long)lid,
             (int)v.http_addr.len, v.http_addr.p);
    srv_http_complete_h(p, 307, HAPI_TEXT, h.p, msg, strlen(msg));
    buf_free(&h);
    return true;
}

/* Not the leader and no ?stale: 307 to the leader's HTTP port when the member table knows it,
 * else 503 naming the leader's client address (or that no leader is known). */
static void answer_not_leader(struct hapi_req *q)
{
    struct srv *s = q->s;
    uint64_t lid;
    const char *laddr;
    struct fsm_member_view v;
    char extra[PROTO_ADDR_BUF + 96] = "", msg[PROTO_ADDR_BUF + 160];
    if (srv_http_redirect_to_leader(s, q->p, q->path, q->query)) {
        req_free(q);
        return;
    }
    rn_leader(s->rn, &lid, &laddr);
    if (lid && fsm_member_get(s->fsm, lid, &v) && v.client_addr.len &&
        proto_addr_valid(v.client_addr.p, v.client_addr.len)) {
        snprintf(extra, sizeof(extra), "X-Fencelock-Leader: %llu %.*s\r\n", (unsigned long long)lid,
                 (int)v.client_addr.len, v.client_addr.p);
        snprintf(msg, sizeof(msg),
                 "not the leader: node %llu (clients at %.*s) is; ask its HTTP port, or add "
                 "?stale\n",
                 (unsigned long long)lid, (int)v.client_addr.len, v.client_addr.p);
    } else {
        snprintf(msg, sizeof(msg), "not the leader, and no leader known: add ?stale\n");
    }
    answer_text(q, 503, extra[0] ? extra : NULL, msg);
}

/* ---- the gate ---- */

static bool wants_api(const char *path)
{
    return !strncmp(path, "/v1/", 4) && strcmp(path, "/v1/fence") != 0;
}

/* 400 or 404 when render() would refuse the path or query (without looking at the state),
 * else 0. */
static int check_input(const struct hapi_req *q)
{
    size_t cap = q->s->cfg.max_key;
    char *m = malloc(3 * (cap + 1));
    if (!m)
        return 0; /* render() says it */
    struct hapi_query qq = {.prefix = m + cap + 1, .after = m + 2 * (cap + 1)};
    size_t nl;
    uint64_t id;
    char err[160];
    enum hapi_route r = hapi_route_of(q->path, m, cap, &nl, &id);
    int rc = r == HAPI_NONE                                           ? 404
             : r == HAPI_BAD                                          ? 400
             : hapi_parse_query(q->query, &qq, cap, err, sizeof(err)) ? 400
             : (qq.limit > q->s->cfg.max_keys_reply)                  ? 400
                                                                      : 0;
    uint64_t after;
    if (!rc && r == HAPI_SESSIONS && qq.has_after && hapi_parse_u64(qq.after, qq.after_len, &after))
        rc = 400;
    free(m);
    return rc;
}

/* CLUSTER.MEMBERS's rows. */
struct members_arg {
    struct srv *s;
    struct json *j;
    uint64_t leader;
};

static void member_obj(void *arg, uint64_t id, const char *raft_address, int role)
{
    struct members_arg *ma = arg;
    struct json *j = ma->j;
    struct fsm_member_view v = {0};
    json_obj(j);
    json_kv_u64(j, "id", id);
    json_kv_cstr(j, "raft_address", raft_address);
    bool known = fsm_member_get(ma->s->fsm, id, &v);
    json_kv_str(j, "client_address", known ? v.client_addr.p : "", known ? v.client_addr.len : 0);
    char url[PROTO_ADDR_BUF + 16] = ""; /* CLUSTER.MEMBERS's http_url */
    if (known && v.http_addr.len)
        snprintf(url, sizeof(url), "%s://%.*s",
                 v.http_flags & FSM_MEMBER_HTTP_TLS ? "https" : "http", (int)v.http_addr.len,
                 v.http_addr.p);
    json_kv_cstr(j, "http_url", url);
    json_kv_cstr(j, "role",
                 id == ma->leader     ? "leader"
                 : role == RN_VOTER   ? "follower"
                 : role == RN_STANDBY ? "standby"
                                      : "spare");
    json_kv_u64(j, "leader", id == ma->leader ? 1 : 0);
    json_close(j);
}

static void render_members(struct srv *s, struct json *j)
{
    const char *laddr;
    struct members_arg ma = {s, j, 0};
    rn_leader(s->rn, &ma.leader, &laddr);
    json_obj(j);
    json_key(j, "members");
    json_arr(j);
    rn_foreach_server(s->rn, member_obj, &ma);
    json_close(j);
    json_close(j);
}

/* GET /v1/events: a user with keys= or locks= globs gets only the events it may see
 * (http_events.c filters each one); a follower streams only with ?stale (its own applied
 * events). */
static void begin_events(struct hapi_req *q, const struct acl_user *u)
{
    struct srv *s = q->s;
    size_t cap = s->cfg.max_key;
    char *m = malloc(2 * (cap + 1));
    struct hapi_query qq = {.prefix = m, .after = m ? m + cap + 1 : NULL};
    char err[160];
    if (!m) {
        answer_text(q, 503, NULL, "out of memory\n");
        return;
    }
    if (hapi_parse_query(q->query, &qq, cap, err, sizeof(err)) || qq.limit) {
        free(m);
        answer_text(q, 400, NULL, qq.limit ? "limit: not a parameter of /v1/events\n" : err);
        return;
    }
    if (!qq.stale && !srv_ready(s)) {
        free(m);
        answer_not_leader(q);
        return;
    }
    if (!strcmp(q->method, "HEAD")) {
        free(m);
        srv_http_complete(q->p, 200, "text/event-stream", "", 0);
        req_free(q);
        return;
    }
    struct srv_http_request r = req_of(q);
    int st = srv_http_events_begin(s, q->p, &r, s->auth.on && u ? u->name : NULL, qq.prefix,
                                   qq.prefix_len, qq.after, qq.after_len, qq.has_after, err,
                                   sizeof(err));
    free(m);
    if (st) {
        size_t n = strlen(err);
        if (n + 1 < sizeof(err)) {
            err[n] = '\n';
            err[n + 1] = '\0';
        }
        answer_text(q, st, NULL, err);
        return;
    }
    req_free(q);
}

/* GET /ui/...: an embedded console file (console.h). Behind the gate like /v1/ so that the
 * browser asks for the user's credentials on opening the console, then sends them with the
 * console's API reads (the same realm). */
static void serve_console(struct hapi_req *q)
{
    const char *ctype, *headers;
    const struct console_asset *a = srv_console_find(q->path, &ctype, &headers);
    if (!a) {
        answer_text(q, 404, NULL, "not found\n");
        return;
    }
    srv_http_complete_h(q->p, 200, ctype, headers, (const char *)a->data, a->len);
    req_free(q);
}

/* The request is who it claims (or there are no users): serve it. */
static void admit(struct hapi_req *q)
{
    struct srv *s = q->s;
    const struct acl_user *u = user_of(q);
    if (!strcmp(q->method, "POST")) { /* the revoke: its own permission (http_revoke.c) */
        struct srv_http_request r = req_of(q);
        srv_http_revoke(s, &r, q->p, u);
        req_free(q);
        return;
    }
    if (s->auth.on && (!u || !(u->perms & ACL_READ))) {
        answer_text(q, 403, NULL, "this user has no read permission\n");
        return;
    }
    if (!strcmp(q->path, "/v1/fence")) {
        struct srv_http_request r = req_of(q);
        s->hfence.gated = true; /* the user's globs, for this call only */
        s->hfence.user = u;
        srv_http_fence_route(s, &r, q->p); /* reads r (q's copies) only during the call */
        s->hfence.gated = false;
        s->hfence.user = NULL;
        req_free(q);
        return;
    }
    if (srv_console_path(q->path)) {
        serve_console(q);
        return;
    }
    if (!strcmp(q->path, "/metrics")) {
        struct buf body;
        buf_init(&body);
        srv_render_metrics(s, &body);
        if (buf_failed(&body))
            answer_text(q, 500, NULL, "out of memory\n");
        else {
            srv_http_complete(q->p, 200, "text/plain; version=0.0.4", body.p, body.len);
            req_free(q);
        }
        buf_free(&body);
        return;
    }
    /* a bad path or query is answered now, whoever leads: nothing to wait for */
    int bad = check_input(q);
    if (bad) {
        answer_api(q, NULL); /* render() gives the 400/404 and its message */
        return;
    }
    if (!strcmp(q->path, "/v1/events")) {
        begin_events(q, u);
        return;
    }
    if (hapi_query_has_stale(q->query)) {
        answer_stale(q);
        return;
    }
    if (!srv_ready(s)) {
        if (s->cluster.role == RN_LEADER) {
            answer_text(q, 503, NULL, "the leader is not ready yet: try again\n");
            return;
        }
        answer_not_leader(q);
        return;
    }
    struct srv_hapi *h = &s->hapi;
    q->next = NULL;
    if (srv_read_lease(s)) { /* the leader's read lease proves what a barrier would */
        s->m.lease_reads++;
        answer_api(q, NULL);
        return;
    }
    if (h->waiting_tail)
        h->waiting_tail->next = q;
    else
        h->waiting = q;
    h->waiting_tail = q;
    issue(s);
}

static void auth_done(void *arg, const struct acl_user *u, int rc)
{
    struct hapi_req *q = arg;
    if (rc == -2) {
        answer_text(q, 503, NULL, "too many password checks waiting: try again\n");
        return;
    }
    if (!u) {
        answer_text(q, 401, HAPI_REALM, "wrong user name or password\n");
        return;
    }
    q->has_user = true;
    snprintf(q->user, sizeof(q->user), "%s", u->name);
    admit(q);
}

/* Whether a Basic password may be sent to this listener: over TLS (--http-tls) from any
 * address; over plain HTTP on loopback only (docs/security.md "The HTTP port"). */
static bool basic_allowed(const struct hapi_req *q)
{
    return q->tls || (srv_host_loopback(q->peer) && srv_host_loopback(q->s->cfg.http_host));
}

/* --tls-user-from-cn over --http-tls: a verified certificate whose CN names an ACL user
 * authenticates the request as that user, as on the client port. true if it did. */
static bool user_from_cn(struct hapi_req *q, const char *cn)
{
    struct srv *s = q->s;
    if (!q->tls || !cn || !cn[0] || !s->cfg.tls.user_from_cn)
        return false;
    const struct acl_user *u = acl_user_find(&s->auth.acl, cn, strlen(cn));
    if (!u)
        return false;
    q->has_user = true;
    snprintf(q->user, sizeof(q->user), "%s", u->name);
    return true;
}

/* "Bearer" and a blank, as RFC 6750 spells it (the scheme is case-insensitive). The token
 * after it, or NULL for another scheme. */
static const char *bearer_of(const char *hv, size_t hl, size_t *tl)
{
    if (hl < 8 || strncasecmp(hv, "Bearer ", 7) != 0)
        return NULL;
    size_t i = 7;
    while (i < hl && hv[i] == ' ')
        i++;
    *tl = hl - i;
    return hv + i;
}

/* Authorization: Bearer <token> (AUTH.TOKEN's, security/httptoken.h): the request is its user
 * when the token is well formed, unexpired, signed with this node's key and its user (with the
 * same password hash) is in the current ACL; else 401 and nothing is served. A refusal counts
 * as an authentication failure (log and audit lines within --security-log-rate). */
static void bearer_auth(struct hapi_req *q, const char *tok, size_t tl)
{
    struct srv *s = q->s;
    const struct acl_user *u;
    int st = htok_verify(&s->htok, &s->auth.acl, tok, tl, clock_wall_ms(),
                         s->cfg.http_token_max_ttl, &u);
    if (st != HTOK_OK) {
        char msg[128];
        s->m.auth_failures++;
        if (srv_seclog_allow(s)) {
            LOGW(&s->log, "HTTP bearer token refused from %s: %s", q->peer, htok_status_text(st));
            srv_audit_as(s, "", q->peer, "auth.failure", "HTTP bearer token: %s",
                         htok_status_text(st));
        }
        snprintf(msg, sizeof msg, "bearer token refused: %s\n", htok_status_text(st));
        answer_text(q, 401, HAPI_BEARER_REALM, msg);
        return;
    }
    q->has_user = true;
    snprintf(q->user, sizeof(q->user), "%s", u->name);
    admit(q);
}

int srv_http_async_route(void *arg, const struct srv_http_request *req, struct srv_http_pending *p)
{
    struct srv *s = arg;
    bool metrics = !strcmp(req->path, "/metrics") && s->auth.on && s->cfg.http_metrics_auth;
    if (!metrics && strncmp(req->path, "/v1/", 4) != 0 && !srv_console_path(req->path))
        return 0; /* /health, /metrics (open), 404s: the plain handler */
    size_t pl = strlen(req->path), ql = strlen(req->query);
    struct hapi_req *q = calloc(1, sizeof(*q) + req->head_len + pl + ql + 3);
    if (!q) {
        srv_http_complete(p, 503, HAPI_TEXT, "out of memory\n", 14);
        return 1;
    }
    q->s = s;
    q->p = p;
    snprintf(q->method, sizeof(q->method), "%s", req->method);
    snprintf(q->peer, sizeof(q->peer), "%s", req->peer ? req->peer : "");
    q->tls = req->tls;
    memcpy(q->mem, req->head, req->head_len);
    q->head_len = req->head_len;
    q->path = q->mem + req->head_len + 1;
    memcpy(q->path, req->path, pl + 1);
    q->query = q->path + pl + 1;
    memcpy(q->query, req->query, ql + 1);
    if (!strcmp(q->method, "POST") && !srv_http_revoke_path(q->path)) {
        answer_text(q, 405, "Allow: GET, HEAD\r\n", "method not allowed\n");
        return 1;
    }
    if (!strcmp(q->method, "POST") && !srv_http_revoke_csrf_ok(req)) {
        answer_text(q, 403, NULL,
                    "a POST needs the header X-Fencelock-Request: 1 (it keeps other web pages "
                    "from sending it through a browser)\n");
        return 1;
    }
    if (!wants_api(q->path) && strcmp(q->path, "/v1/fence") && !metrics &&
        !srv_console_path(q->path)) {
        answer_text(q, 404, NULL, "not found\n");
        return 1;
    }
    if (!s->auth.on) {
        admit(q);
        return 1;
    }
    size_t hl;
    const char *hv = srv_http_header(req, "Authorization", &hl);
    if (!hv && user_from_cn(q, req->cn)) {
        admit(q);
        return 1;
    }
    if (!hv) {
        answer_text(q, 401, HAPI_REALM, "authentication required (HTTP Basic)\n");
        return 1;
    }
    if (hl == SIZE_MAX) {
        answer_text(q, 400, NULL, "Authorization given twice\n");
        return 1;
    }
    if (!basic_allowed(q)) { /* a bearer token is a credential too: the same rule */
        answer_text(q, 403, NULL,
                    "credentials over plain HTTP are accepted from loopback only: this port has "
                    "no TLS (--http-tls)\n");
        return 1;
    }
    size_t tl;
    const char *tok = bearer_of(hv, hl, &tl);
    if (tok) {
        bearer_auth(q, tok, tl);
        return 1;
    }
    char user[ACL_NAME_MAX], pw[AUTH_PW_MAX + 1];
    size_t ul, pwl;
    if (hapi_basic_decode(hv, hl, user, sizeof(user), &ul, pw, sizeof(pw), &pwl)) {
        answer_text(q, 401, HAPI_REALM,
                    "Authorization: neither Basic base64(user:password) nor Bearer <token>\n");
        return 1;
    }
    srv_auth_http(s, q->peer, user, ul, pw, pwl, auth_done, q);
    sodium_memzero(pw, sizeof(pw));
    return 1;
}
