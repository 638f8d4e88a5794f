/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client object, its endpoints, connection pool and the call path with redirects,
 * reconnects and retries (see client.h).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "client/client.h"

#define BACKOFF_MIN_MS 10
/* The longest pause between rounds over the endpoints. Short: during a fail-over the rounds
 * bounce between the dead leader's refused port and a follower that still names it until the
 * followers give it up; from then on a request waits on a follower for the new leader
 * (--noleader-wait-ms) and is redirected at once, so the pause in progress then is what the
 * client adds. 50 ms bounds that and still caps a client at ~20 rounds a second. */
#define BACKOFF_MAX_MS 50
#define CL_WAIT_SLICE_MS 100 /* how often a long wait checks whether the leader moved */
/* Redirects to a newly learned leader followed at once before backing off: one hop is the
 * normal case, a few cover an election that moved on meanwhile, more means a loop. */
#define CL_QUICK_REDIRECTS 3

int64_t fl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cl_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int64_t cl_deadline(const fl_client *c)
{
    return fl_now_ms() + c->opt.timeout_ms;
}

/* ---- per-thread error messages ---- */

static struct cl_errslot *errslot(fl_client *c)
{
    pthread_t me = pthread_self();
    for (struct cl_errslot *e = c->errs; e; e = e->next)
        if (pthread_equal(e->tid, me))
            return e;
    struct cl_errslot *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->tid = me;
    e->next = c->errs;
    c->errs = e;
    return e;
}

fl_err cl_fail(fl_client *c, fl_err err, const char *fmt, ...)
{
    pthread_mutex_lock(&c->mu);
    struct cl_errslot *e = errslot(c);
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&c->mu);
    return err;
}

void cl_clear_err(fl_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct cl_errslot *e = errslot(c);
    if (e)
        e->msg[0] = e->tls[0] = 0;
    pthread_mutex_unlock(&c->mu);
}

/* Remember the current message as the call's TLS failure (cl_errslot.tls). */
static void tls_note(fl_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct cl_errslot *e = errslot(c);
    if (e)
        memcpy(e->tls, e->msg, sizeof e->tls);
    pthread_mutex_unlock(&c->mu);
}

/* The call's TLS failure, or else the last message, into out. */
static void last_reason(fl_client *c, char *out, size_t n)
{
    pthread_mutex_lock(&c->mu);
    struct cl_errslot *e = errslot(c);
    snprintf(out, n, "%s", !e ? "" : e->tls[0] ? e->tls : e->msg);
    pthread_mutex_unlock(&c->mu);
}

/* The slot outlives the call: it is freed only with the client. */
const char *fl_client_errmsg(fl_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct cl_errslot *e = errslot(c);
    pthread_mutex_unlock(&c->mu);
    return e ? e->msg : "out of memory";
}

/* ---- endpoints ---- */

/* Add an endpoint unless known or the list is full; c->mu held. */
static void endpoint_add_locked(fl_client *c, const char *a, size_t n)
{
    if (!proto_addr_valid(a, n))
        return;
    for (int i = 0; i < c->n_endpoints; i++)
        if (strlen(c->endpoints[i]) == n && memcmp(c->endpoints[i], a, n) == 0)
            return;
    if (c->n_endpoints == CL_ENDPOINTS_MAX)
        return;
    memcpy(c->endpoints[c->n_endpoints], a, n);
    c->endpoints[c->n_endpoints][n] = 0;
    c->n_endpoints++;
}

static int parse_endpoints(fl_client *c, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && (*p == ' ')) {
            p++;
            n--;
        }
        while (n && p[n - 1] == ' ')
            n--;
        if (!proto_addr_valid(p, n))
            return -1;
        endpoint_add_locked(c, p, n);
        if (!end)
            break;
        p = end + 1;
    }
    return c->n_endpoints ? 0 : -1;
}

static void cl_free_credentials(fl_client *c)
{
    if (c->password) {
        memset(c->password, 0, strlen(c->password)); /* not kept in freed memory */
        __asm__ __volatile__("" : : "r"(c->password) : "memory");
    }
    free(c->password);
    free(c->user);
    c->password = c->user = NULL;
}

/* The TLS context fl_options asks for: 0, or -1 out of memory. Files that do not load leave
 * tls_err set (every call then fails with it) rather than failing fl_client_new silently. */
static int tls_setup(fl_client *c, const struct fl_options *opt)
{
    if (!(opt->tls || opt->tls_ca || opt->tls_cert))
        return 0;
    if (opt->tls_server_name && !(c->tls_name = strdup(opt->tls_server_name)))
        return -1;
    c->tls =
        cl_tls_ctx_new(opt->tls_ca, opt->tls_cert, opt->tls_key, c->tls_err, sizeof c->tls_err);
    if (!c->tls && !c->tls_err[0])
        snprintf(c->tls_err, sizeof c->tls_err, "TLS: cannot set up");
    return 0;
}

fl_client *fl_client_new(const char *endpoints, const struct fl_options *opt, fl_err *err)
{
    fl_err dummy = FL_OK;
    err = err ? err : &dummy;
    *err = FL_EINVAL;
    struct fl_options o;
    if (!endpoints || cl_options_read(&o, opt) != 0)
        return NULL;
    fl_client *c = calloc(1, sizeof(*c));
    if (!c) {
        *err = FL_ENOMEM;
        return NULL;
    }
    cl_options_read(&c->opt, NULL);
    cl_options_apply(&c->opt, &o);
    if ((o.user && !(c->user = strdup(o.user))) ||
        (o.password && !(c->password = strdup(o.password)))) {
        free(c->user);
        free(c);
        *err = FL_ENOMEM;
        return NULL;
    }
    c->opt.user = c->opt.password = NULL; /* only the copies are kept */
    c->opt.tls_ca = c->opt.tls_cert = c->opt.tls_key = c->opt.tls_server_name = NULL;
    pthread_mutex_init(&c->mu, NULL);
    if (parse_endpoints(c, endpoints) != 0) {
        fl_client_free(c);
        return NULL;
    }
    if (tls_setup(c, &o)) {
        fl_client_free(c);
        *err = FL_ENOMEM;
        return NULL;
    }
    *err = FL_OK;
    return c;
}

void fl_client_free(fl_client *c)
{
    if (!c)
        return;
    cl_free_credentials(c);
    for (int i = 0; i < c->n_pool; i++)
        cl_link_free(c->pool[i].ln);
    cl_tls_ctx_free(c->tls);
    free(c->tls_name);
    while (c->errs) {
        struct cl_errslot *e = c->errs;
        c->errs = e->next;
        free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- connections ---- */

/* The address to talk to: the leader if known, else the next endpoint in turn. */
static void pick_target(fl_client *c, char *addr)
{
    pthread_mutex_lock(&c->mu);
    if (c->leader[0])
        strcpy(addr, c->leader);
    else
        strcpy(addr, c->endpoints[c->next_endpoint++ % (unsigned)c->n_endpoints]);
    pthread_mutex_unlock(&c->mu);
}

/* AUTH [user] password on a new connection (the server answers within its -WRONGPASS delay,
   at most 5 s, inside the connection's timeout). 0; -1 (FL_EUNAVAILABLE) when no answer came:
   the link is unusable, as a late answer would be read as the next command's; -2 (FL_EAUTH)
   when the server refused the credentials. */
static int conn_auth(fl_client *c, const char *addr, struct cl_link *ln, int64_t until)
{
    const char *argv[3] = {"AUTH", c->user ? c->user : c->password, c->password};
    size_t len[3] = {4, strlen(argv[1]), strlen(c->password)};
    redisReply *r = cl_link_call(ln, c->user ? 3 : 2, argv, len, until);
    if (!r) {
        cl_fail(c, FL_EUNAVAILABLE, "AUTH on %s: %s", addr, cl_link_err(ln));
        return -1;
    }
    int bad = r->type == REDIS_REPLY_ERROR;
    if (bad)
        cl_fail(c, FL_EAUTH, "AUTH on %s: %s", addr, r->str);
    freeReplyObject(r);
    return bad ? -2 : 0;
}

/* *refused: the attempt failed because nothing listens there (ECONNREFUSED). */
static struct cl_link *connect_to(fl_client *c, const char *addr, int64_t deadline, bool *refused,
                                  bool *auth_failed)
{
    char host[PROTO_ADDR_BUF];
    int port;
    if (proto_addr_parse(addr, strlen(addr), host, sizeof(host), &port)) {
        cl_fail(c, FL_EUNAVAILABLE, "connect %s: not a host:port", addr); /* checked on entry */
        return NULL;
    }
    int64_t left = deadline - fl_now_ms();
    if (left > c->opt.connect_timeout_ms)
        left = c->opt.connect_timeout_ms;
    char err[CL_ERRMSG_MAX];
    enum cl_link_fail why;
    struct cl_link *ln =
        cl_link_open(c->tls, c->tls_name, host, port, fl_now_ms() + left, &why, err, sizeof err);
    if (!ln) {
        *refused = why == CL_LINK_REFUSED;
        cl_fail(c, FL_EUNAVAILABLE, "connect %s: %s", addr, err);
        if (why == CL_LINK_TLS)
            tls_note(c);
        return NULL;
    }
    /* a frozen server must not hold the AUTH forever: it is bounded by the call's deadline */
    int auth = c->password ? conn_auth(c, addr, ln, deadline) : 0;
    if (auth) {
        *auth_failed = auth == -2; /* a frozen server is unavailable, not a wrong password */
        cl_link_free(ln);
        return NULL;
    }
    return ln;
}

/* Take an idle connection to addr from the pool, or open one. NULL: unreachable. */
static struct cl_link *conn_get(fl_client *c, const char *addr, int64_t deadline, bool *fresh,
                                bool *refused, bool *auth_failed)
{
    struct cl_link *ln = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = c->n_pool - 1; i >= 0 && !ln; i--)
        if (strcmp(c->pool[i].addr, addr) == 0) {
            ln = c->pool[i].ln;
            c->pool[i] = c->pool[--c->n_pool];
        }
    pthread_mutex_unlock(&c->mu);
    /* a pooled connection that became readable is dead (the server sends nothing unasked) */
    if (ln && cl_link_idle_ok(ln)) {
        *fresh = false;
        return ln;
    }
    cl_link_free(ln);
    *fresh = true;
    return connect_to(c, addr, deadline, refused, auth_failed);
}

static void conn_put(fl_client *c, const char *addr, struct cl_link *ln)
{
    pthread_mutex_lock(&c->mu);
    if (c->n_pool < CL_POOL_MAX) {
        strcpy(c->pool[c->n_pool].addr, addr);
        c->pool[c->n_pool++].ln = ln;
        ln = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    cl_link_free(ln);
}

void cl_set_leader(fl_client *c, const char *addr, size_t n)
{
    pthread_mutex_lock(&c->mu);
    if (proto_addr_valid(addr, n)) {
        memcpy(c->leader, addr, n);
        c->leader[n] = 0;
        endpoint_add_locked(c, addr, n);
    } else {
        c->leader[0] = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Forget the leader if it is addr (it failed us). */
static void leader_failed(fl_client *c, const char *addr)
{
    pthread_mutex_lock(&c->mu);
    if (strcmp(c->leader, addr) == 0)
        c->leader[0] = 0;
    pthread_mutex_unlock(&c->mu);
}

/* Learn the other members' client addresses once, so that losing every given endpoint
   but one still leaves the rest reachable. Best effort on a fresh connection. */
/* Learn the other members' client addresses once, over a fresh link. false: no answer by
 * `until` (a frozen server: the kernel accepts, nobody reads). The link must then be dropped:
 * the late answer would be read as the reply to the command sent next on it. */
static bool learn_members(fl_client *c, struct cl_link *ln, int64_t until)
{
    pthread_mutex_lock(&c->mu);
    bool done = c->members_learned;
    c->members_learned = true;
    pthread_mutex_unlock(&c->mu);
    if (done)
        return true;
    const char *argv[1] = {"CLUSTER.MEMBERS"};
    size_t len[1] = {15};
    redisReply *r = cl_link_call(ln, 1, argv, len, until);
    if (r && r->type == REDIS_REPLY_ARRAY) {
        pthread_mutex_lock(&c->mu);
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *a = cl_field(r->element[i], "client_address");
            if (a && a->type == REDIS_REPLY_STRING)
                endpoint_add_locked(c, a->str, a->len);
        }
        pthread_mutex_unlock(&c->mu);
    } else {
        pthread_mutex_lock(&c->mu);
        c->members_learned = false;
        pthread_mutex_unlock(&c->mu);
    }
    if (!r)
        return false;
    freeReplyObject(r);
    return true;
}

/* ---- the call path ---- */

enum step { STEP_DONE, STEP_RETRY, STEP_FAIL };

/* What to do with one reply (or its absence) from addr. */
static enum step on_reply(fl_client *c, const char *addr, redisReply *r, unsigned flags,
                          fl_err *err)
{
    if (cl_err_is(r, PROTO_NOTLEADER)) { /* "NOTLEADER host:port" */
        const size_t skip = sizeof(PROTO_NOTLEADER " ") - 1;
        cl_set_leader(c, r->str + skip, r->len > skip ? r->len - skip : 0);
        *err = cl_fail(c, FL_EUNAVAILABLE, "%s: %.*s", addr, (int)r->len, r->str);
        return STEP_RETRY;
    }
    if (cl_err_is(r, PROTO_NOLEADER)) {
        leader_failed(c, addr);
        *err = cl_fail(c, FL_EUNAVAILABLE, "%s: %.*s", addr, (int)r->len, r->str);
        return STEP_RETRY;
    }
    if (cl_err_is(r, PROTO_UNKNOWN)) {
        *err = cl_fail(c, FL_EUNKNOWN, "%s: %.*s", addr, (int)r->len, r->str);
        return (flags & CL_RETRY) ? STEP_RETRY : STEP_FAIL;
    }
    return STEP_DONE;
}

/* Send m on ln; false if the connection failed (then nothing or part may have been sent). */
static bool send_cmd(struct cl_link *ln, struct cl_cmd *m, int64_t until)
{
    m->sends++;
    return cl_link_send(ln, m->argc, m->argv, m->len, until) == 0;
}

static bool cancelled(const struct cl_cmd *m)
{
    return m->cancel && atomic_load(m->cancel);
}

/* Someone (often the keepalive thread) found a leader other than addr. */
static bool leader_moved(fl_client *c, const char *addr)
{
    pthread_mutex_lock(&c->mu);
    bool moved = c->leader[0] && strcmp(c->leader, addr) != 0;
    pthread_mutex_unlock(&c->mu);
    return moved;
}

/*
 * Wait for the reply to what was sent on rc until `until`. Polls in short slices so that a
 * long wait (a blocked LOCK) is abandoned as soon as the client learns of another leader: a
 * deposed or frozen leader may never answer. NULL on timeout, connection loss or abandon.
 */
static redisReply *await_reply(fl_client *c, const char *addr, struct cl_link *ln,
                               const struct cl_cmd *m, int64_t until)
{
    for (;;) {
        int64_t left = until - fl_now_ms();
        if (left <= 0) {
            cl_link_set_err(ln, "no reply in time");
            return NULL;
        }
        struct pollfd p = {.fd = cl_link_fd(ln), .events = POLLIN};
        int n = cl_link_pending(ln)
                    ? 1
                    : poll(&p, 1, (int)(left < CL_WAIT_SLICE_MS ? left : CL_WAIT_SLICE_MS));
        if (n < 0 && errno != EINTR)
            return NULL;
        if (n > 0)
            return cl_link_reply(ln, until);
        if (leader_moved(c, addr)) {
            cl_link_set_err(ln, "abandoned: the leader moved");
            return NULL;
        }
        if (cancelled(m)) {
            cl_link_set_err(ln, "cancelled");
            return NULL;
        }
    }
}

/* The connection to addr failed after m was (maybe) sent. */
static enum step lost_conn(fl_client *c, const char *addr, struct cl_link *ln,
                           const struct cl_cmd *m, unsigned flags, fl_err *err)
{
    const char *why = cl_link_err(ln);
    *err = cl_fail(c, FL_EUNAVAILABLE, "%s: %s", addr, why[0] ? why : "connection lost");
    cl_link_free(ln);
    leader_failed(c, addr);
    if (flags & CL_RETRY)
        return STEP_RETRY;
    *err = cl_fail(c, FL_EUNKNOWN, "%s: no answer to %.*s: outcome unknown", addr, (int)m->len[0],
                   m->argv[0]);
    return STEP_FAIL;
}

/* One attempt against one address. STEP_DONE: *out is the reply. */
static enum step attempt(fl_client *c, struct cl_cmd *m, int64_t deadline, unsigned flags,
                         redisReply **out, fl_err *err, bool *refused)
{
    char addr[PROTO_ADDR_BUF];
    bool fresh;
    pick_target(c, addr);
    *refused = false;
    bool auth_failed = false;
    if (c->tls_err[0]) { /* the TLS files did not load: no connection can be made */
        *err = cl_fail(c, FL_EINVAL, "%s", c->tls_err);
        return STEP_FAIL;
    }
    struct cl_link *rc = conn_get(c, addr, deadline, &fresh, refused, &auth_failed);
    if (!rc && auth_failed) { /* the credentials are wrong everywhere: retrying cannot help */
        *err = FL_EAUTH;
        return STEP_FAIL;
    }
    if (!rc) {
        leader_failed(c, addr);
        *err = FL_EUNAVAILABLE;
        return STEP_RETRY; /* nothing was sent */
    }
    /* A server that does not answer within the connect timeout (plus the time the command
       may legitimately block) is treated as gone: it may be frozen while others elect. The
       probe bounds learn_members too: a frozen server accepts connections (the kernel does) but
       never answers. */
    int64_t probe = fl_now_ms() + c->opt.connect_timeout_ms;
    if (fresh && !learn_members(c, rc, probe < deadline ? probe : deadline)) {
        *err = cl_fail(c, FL_EUNAVAILABLE, "%s: CLUSTER.MEMBERS: %s", addr, cl_link_err(rc));
        cl_link_free(rc);
        leader_failed(c, addr);
        return STEP_RETRY; /* m was not sent */
    }
    if (m->wait_idx)
        cl_wait_refresh(m);
    int64_t until = fl_now_ms() + c->opt.connect_timeout_ms + m->block_ms;
    if (until > deadline)
        until = deadline;
    redisReply *r = send_cmd(rc, m, until) ? await_reply(c, addr, rc, m, until) : NULL;
    if (!r)
        return lost_conn(c, addr, rc, m, flags, err);
    conn_put(c, addr, rc);
    enum step st = on_reply(c, addr, r, flags, err);
    if (st != STEP_DONE) {
        freeReplyObject(r);
        return st;
    }
    if (!(flags & CL_ANYNODE))
        cl_set_leader(c, addr, strlen(addr)); /* it answered a leader-only command */
    *out = r;
    return st;
}

fl_err cl_call(fl_client *c, struct cl_cmd *m, int64_t deadline, unsigned flags, redisReply **out)
{
    int64_t backoff = BACKOFF_MIN_MS;
    fl_err err = FL_EUNAVAILABLE;
    int quick = 0;             /* redirects followed without sleeping */
    int64_t refused_since = 0; /* every attempt since then was refused; 0: the last was not */
    *out = NULL;
    cl_clear_err(c);
    for (;;) {
        if (cancelled(m))
            return cl_fail(c, FL_ETIMEOUT, "cancelled");
        if (fl_now_ms() >= deadline) {
            char why[CL_ERRMSG_MAX]; /* a copy: cl_fail writes the buffer it came from */
            last_reason(c, why, sizeof why);
            return cl_fail(c, err == FL_EUNKNOWN ? FL_EUNKNOWN : FL_EUNAVAILABLE,
                           "deadline passed; last: %s", why[0] ? why : "no answer");
        }
        pthread_mutex_lock(&c->mu);
        bool had_leader = c->leader[0] != 0;
        pthread_mutex_unlock(&c->mu);
        bool refused;
        enum step st = attempt(c, m, deadline, flags, out, &err, &refused);
        if (st == STEP_DONE)
            return FL_OK;
        if (st == STEP_FAIL)
            return err;
        if (!refused)
            refused_since = 0;
        else if (refused_since == 0)
            refused_since = fl_now_ms();
        else if (c->opt.refused_ms > 0 && fl_now_ms() - refused_since >= c->opt.refused_ms) {
            char why[CL_ERRMSG_MAX]; /* a copy: cl_fail writes the buffer it came from */
            snprintf(why, sizeof(why), "%s", fl_client_errmsg(c));
            return cl_fail(c, FL_EUNAVAILABLE, "nothing listens on any endpoint (%s)", why);
        }
        pthread_mutex_lock(&c->mu);
        bool redirected = !had_leader && c->leader[0] != 0;
        pthread_mutex_unlock(&c->mu);
        if (redirected && quick++ < CL_QUICK_REDIRECTS)
            continue;
        /* Every endpoint failed once in a row: wait a little (an election takes ~0.5 s). */
        int64_t left = deadline - fl_now_ms();
        cl_sleep_ms(backoff < left ? backoff : left);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
}
