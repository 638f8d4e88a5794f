/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.c — AUTH and HELLO ... AUTH against the rules of --acl-file, the -WRONGPASS delay, the
 * verified-password cache and the SIGHUP reload (auth.h has the flow and the ownership).
 */
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/env.h"
#include "server/cmd/cmd.h"

/* The reply words of a failed or refused AUTH (Redis's texts: clients match on them). */
#define AUTH_WRONGPASS PROTO_WRONGPASS " invalid username-password pair or user is disabled."
#define AUTH_NOPASS                                                                                \
    PROTO_ERR " AUTH <password> called without any password configured for the default user. "     \
              "Are you sure your configuration is correct?"

/* The answer to an AUTH refused because --auth-queue verifications already wait. */
#define AUTH_TRYAGAIN PROTO_TRYAGAIN " too many AUTHs being verified; retry later"

/* A verification waiting for or running on the pool, then (failed) a delay before its
 * answer. */
struct auth_wait {
    struct auth_wait *pnext; /* the pool's waiting or done list */
    uv_timer_t timer;
    struct auth_wait *next; /* srv_auth.waits while the timer runs */
    struct srv *s;
    struct srv_slot *slot;
    char user[ACL_NAME_MAX + 1];
    char hash[ACL_HASH_BUF]; /* the hash verified against: a reload may change the user's */
    char *pw;                /* wiped and freed once verified */
    size_t pwlen;
    char addr[AUTH_ADDR_BUF];
    char prefix[AUTH_ADDR_BUF]; /* its network (/24, /64): back-off is also kept per network */
    char setname[129];          /* HELLO ... SETNAME, applied only on success */
    int hello_proto;            /* 0: AUTH */
    bool ok;
    /* of (user, stored hash, password): an identical AUTH while this one is on the pool waits
     * for its result instead of a hash of its own (a pool of clients connecting at once) */
    unsigned char tag[ACL_TAG_BYTES];
    struct auth_wait *inext;     /* auth_pool.inflight (loop thread only) */
    struct auth_wait *followers; /* the identical AUTHs, linked by fnext */
    struct auth_wait *fnext;
    /* an HTTP Basic check (srv_auth_http): no slot; the answer goes to http_cb */
    srv_auth_http_cb http_cb;
    void *http_arg;
};

uint64_t auth_delay_ms(unsigned failures)
{
    uint64_t d = AUTH_DELAY_MIN_MS;
    for (unsigned i = 1; i < failures && d < AUTH_DELAY_MAX_MS; i++)
        d *= 2;
    return d > AUTH_DELAY_MAX_MS ? AUTH_DELAY_MAX_MS : d;
}

/* ---- loading and reloading ---- */

static int pool_start(struct srv *s);

int srv_auth_init(struct srv *s)
{
    struct srv_auth *a = &s->auth;
    char err[512];
    if (!s->cfg.acl_file[0])
        return 0;
    a->cache = malloc(sizeof(*a->cache));
    if (!a->cache || acl_cache_init(a->cache)) {
        LOGE(&s->log, "--acl-file: out of memory or libsodium unavailable");
        return -1;
    }
    if (acl_load_file(s->cfg.acl_file, &a->acl, err, sizeof err)) {
        LOGE(&s->log, "--acl-file %s", err);
        return -1;
    }
    a->on = true;
    if (pool_start(s))
        return -1;
    LOGI(&s->log, "ACL: %zu users from %s (rules hash %s)", a->acl.n, s->cfg.acl_file,
         a->acl.digest);
    return 0;
}

/* Every authenticated connection to the user of its name in `next`, or closed. */
static void repoint_conns(struct srv *s, const struct acl *next)
{
    struct srv_conn *c = s->net.conns;
    while (c) {
        struct srv_conn *after = c->next;
        if (c->user) {
            c->user = acl_user_find(next, c->user->name, strlen(c->user->name));
            if (!c->user) {
                LOGI(&s->log, "client %llu closed: its user is no longer in the ACL file",
                     (unsigned long long)c->id);
                srv_conn_close(c);
            }
        }
        c = after;
    }
}

int srv_auth_reload(struct srv *s)
{
    struct acl next = {.n = 0};
    char err[512];
    if (!s->auth.on)
        return 0;
    if (acl_load_file(s->cfg.acl_file, &next, err, sizeof err)) {
        LOGE(&s->log, "SIGHUP: --acl-file %s; the previous rules stay (hash %s)", err,
             s->auth.acl.digest);
        srv_audit(s, NULL, "acl.reload_refused", "--acl-file %s; the previous rules stay (hash %s)",
                  err, s->auth.acl.digest);
        return -1;
    }
    repoint_conns(s, &next);
    acl_free(&s->auth.acl);
    s->auth.acl = next;
    s->m.acl_reloads++;
    LOGI(&s->log, "SIGHUP: ACL reloaded, %zu users (rules hash %s)", next.n, next.digest);
    srv_audit(s, NULL, "acl.reload", "%zu users, rules hash %s", next.n, next.digest);
    return 0;
}

/* ---- peer credentials ---- */

/* The first line of the file (its newline not part of it) into the peer password. */
static int read_peer_file(struct srv *s, char *pw, size_t *n)
{
    FILE *f = fopen(s->cfg.peer_password_file, "r");
    if (!f) {
        LOGE(&s->log, "--peer-password-file %s cannot be read", s->cfg.peer_password_file);
        return -1;
    }
    size_t got = fread(pw, 1, AUTH_PW_MAX + 1, f);
    fclose(f);
    char *nl = memchr(pw, '\n', got);
    if (nl)
        got = (size_t)(nl - pw);
    if (got && pw[got - 1] == '\r')
        got--;
    if (got == 0 || got > AUTH_PW_MAX) {
        LOGE(&s->log, "--peer-password-file %s: its first line must be a password of 1..%d bytes",
             s->cfg.peer_password_file, AUTH_PW_MAX);
        return -1;
    }
    *n = got;
    return 0;
}

int srv_peer_load(struct srv *s)
{
    char pw[AUTH_PW_MAX + 2];
    size_t n = 0;
    if (!s->cfg.peer_user[0])
        return 0;
    if (s->cfg.peer_password_file[0]) {
        if (read_peer_file(s, pw, &n))
            return -1;
    } else {
        long e = env_take("FENCELOCK_PEER_PASSWORD", pw, AUTH_PW_MAX + 1);
        if (e <= 0) {
            LOGE(&s->log,
                 "--peer-user %s needs a password: --peer-password-file FILE or "
                 "FENCELOCK_PEER_PASSWORD (1..%d bytes)",
                 s->cfg.peer_user, AUTH_PW_MAX);
            return -1;
        }
        n = (size_t)e;
    }
    memcpy(s->auth.peer_pw, pw, n);
    s->auth.peer_pw[n] = '\0';
    s->auth.peer_pwlen = n;
    sodium_memzero(pw, sizeof pw);
    return 0;
}

/* SIGHUP, part of server.c's handler: re-read --peer-password-file. */
void srv_peer_reload(struct srv *s)
{
    if (s->cfg.peer_password_file[0] && srv_peer_load(s) == 0) {
        LOGI(&s->log, "SIGHUP: peer password re-read from %s", s->cfg.peer_password_file);
        s->cluster.peer_retry_ms = 0; /* a corrected password is tried at once */
        s->cluster.peer_refusals = 0;
    }
}

static void pool_free(struct srv *s);

void srv_auth_free(struct srv *s)
{
    pool_free(s);
    acl_free(&s->auth.acl);
    if (s->auth.cache)
        sodium_memzero(s->auth.cache, sizeof(*s->auth.cache));
    sodium_memzero(s->auth.peer_pw, sizeof s->auth.peer_pw);
    free(s->auth.cache);
    s->auth.cache = NULL;
}

/* ---- failures by address ---- */

_Static_assert(AUTH_ADDR_BUF == SRV_ADDR_BUF, "one address buffer size");

static void peer_addr(struct srv_conn *c, char out[AUTH_ADDR_BUF])
{
    srv_conn_addr(c, out);
    if (!out[0])
        snprintf(out, AUTH_ADDR_BUF, "?");
}

/* The key's entry (a new one replaces the least recently failed); counts one failure. */
static unsigned note_failure_of(struct srv_auth *a, const char *addr, uint64_t now)
{
    struct auth_fail *slot = &a->fails[0];
    for (size_t i = 0; i < AUTH_FAIL_ADDRS; i++) {
        struct auth_fail *f = &a->fails[i];
        if (f->addr[0] && strcmp(f->addr, addr) == 0) {
            slot = f;
            break;
        }
        if (!f->addr[0] || f->last_ms < slot->last_ms)
            slot = f;
    }
    if (strcmp(slot->addr, addr) != 0 || now - slot->last_ms > AUTH_FAIL_FORGET_MS) {
        snprintf(slot->addr, sizeof slot->addr, "%s", addr);
        slot->count = 0;
    }
    slot->count++;
    slot->last_ms = now;
    return slot->count;
}

/* One failure of an address: counted for it and for its network. The larger count. */
static unsigned note_failure(struct srv_auth *a, const char *addr, const char *prefix, uint64_t now)
{
    unsigned n = note_failure_of(a, addr, now);
    unsigned m = strcmp(prefix, addr) ? note_failure_of(a, prefix, now) : n;
    return m > n ? m : n;
}

/* Whether an address (or network) is in back-off: a failed AUTH of it still waits for its
 * delayed answer. Its next AUTH then fails without a hash, so concurrent connections from one
 * place cost one Argon2id run per delay, not one each; a client that waits for its answer
 * (a person retyping a password) is never in back-off. At most one wait per connection (its
 * AUTH blocks its parsing): the walk is bounded by the connections. */
static bool in_backoff(const struct srv_auth *a, const char *addr, const char *prefix)
{
    for (const struct auth_wait *w = a->waits; w; w = w->next)
        if (strcmp(w->addr, addr) == 0 || strcmp(w->prefix, prefix) == 0)
            return true;
    return false;
}

/* More than --auth-fail-rate failures this second, from all addresses together. */
static bool fail_rate_over(struct srv *s, uint64_t now)
{
    struct auth_pool *p = &s->auth.pool;
    if (now - p->fail_window_ms >= 1000)
        return false;
    return p->fails_in_window >= s->cfg.auth_fail_rate;
}

static void count_fail_rate(struct srv *s, uint64_t now)
{
    struct auth_pool *p = &s->auth.pool;
    if (now - p->fail_window_ms >= 1000) {
        p->fail_window_ms = now;
        p->fails_in_window = 0;
    }
    p->fails_in_window++;
}

static void forget_failures(struct srv_auth *a, const char *addr)
{
    for (size_t i = 0; i < AUTH_FAIL_ADDRS; i++)
        if (strcmp(a->fails[i].addr, addr) == 0)
            a->fails[i].addr[0] = '\0';
}

/* ---- answering ---- */

#define HELLO_FIELDS 6

void srv_hello_reply(struct srv *s, struct srv_conn *c, struct buf *out, int proto)
{
    if (c)
        c->proto = proto;
    resp_w_map(out, proto, HELLO_FIELDS);
    resp_w_bulk_str(out, "server");
    resp_w_bulk_str(out, "fencelock");
    resp_w_bulk_str(out, "version");
    resp_w_bulk_str(out, FENCELOCK_VERSION);
    resp_w_bulk_str(out, "proto");
    resp_w_uint(out, (uint64_t)proto);
    resp_w_bulk_str(out, "id");
    resp_w_uint(out, s->cfg.id);
    resp_w_bulk_str(out, "mode");
    resp_w_bulk_str(out, "cluster");
    resp_w_bulk_str(out, "role");
    resp_w_bulk_str(out, srv_role_name(s->cluster.role));
}

/* The connection is now `u` (NULL when no ACL file: nothing to record): reply OK or HELLO. */
static void auth_succeed(struct srv *s, struct srv_conn *c, struct buf *out,
                         const struct acl_user *u, int hello_proto, const char *setname)
{
    if (c) {
        if (c->user != u)
            srv_push_conn_sid(c, 0); /* a session opened as another user: no pushes here */
        c->user = u;
        if (u)
            srv_limits_authed(c);
        if (setname && setname[0])
            snprintf(c->name, sizeof c->name, "%s", setname);
    }
    if (hello_proto)
        srv_hello_reply(s, c, out, hello_proto);
    else
        resp_w_simple(out, "OK");
}

/* An AUTH's audit line (failures: how many in a row from that address). The client's
 * ip:port, or only its ip if it hung up while its password was being checked. */
static void audit_auth(struct auth_wait *w, const char *user, const char *event, unsigned fails)
{
    char addr[AUDIT_ADDR_BUF];
    const char *what = w->http_cb ? "HTTP Basic" : w->hello_proto ? "HELLO AUTH" : "AUTH";
    addr[0] = '\0';
    if (w->slot)
        srv_audit_conn_addr(w->slot->conn, addr);
    if (!addr[0])
        snprintf(addr, sizeof addr, "%s", w->addr);
    if (fails)
        srv_audit_as(w->s, user, addr, event, "%s; %u in a row from %s", what, fails, w->addr);
    else
        srv_audit_as(w->s, user, addr, event, "%s", what);
}

static void wait_free(struct auth_wait *w)
{
    if (w->pw) {
        sodium_memzero(w->pw, w->pwlen);
        free(w->pw);
    }
    free(w);
}

/* The end of an AUTH that went through the pool or a delay: its slot is answered. */
static void wait_finish(struct auth_wait *w)
{
    struct srv *s = w->s;
    struct srv_conn *c = w->slot ? w->slot->conn : NULL;
    const struct acl_user *u =
        s->auth.on ? acl_user_find(&s->auth.acl, w->user, strlen(w->user)) : NULL;
    bool ok = w->ok && u && strcmp(u->hash, w->hash) == 0;
    if (ok) {
        unsigned char tag[ACL_TAG_BYTES];
        acl_cache_tag(s->auth.cache, u, w->pw, w->pwlen, tag);
        acl_cache_put(s->auth.cache, tag);
        forget_failures(&s->auth, w->addr);
    }
    if (w->http_cb) { /* an HTTP request: its answer is the caller's */
        if (ok)
            audit_auth(w, u->name, "auth.success", 0);
        w->http_cb(w->http_arg, ok ? u : NULL, ok ? 0 : -1);
        wait_free(w);
        return;
    }
    if (ok) {
        auth_succeed(s, c, &w->slot->out, u, w->hello_proto, w->setname);
        audit_auth(w, u->name, "auth.success", 0);
    } else {
        resp_w_error(&w->slot->out, AUTH_WRONGPASS);
    }
    if (c)
        c->auth_pending = false;
    srv_slot_done(w->slot);
    wait_free(w);
}

static void delay_closed(uv_handle_t *h)
{
    wait_finish(h->data);
}

static void unlink_wait(struct srv_auth *a, struct auth_wait *w)
{
    for (struct auth_wait **p = &a->waits; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void delay_fired(uv_timer_t *t)
{
    struct auth_wait *w = t->data;
    unlink_wait(&w->s->auth, w);
    uv_close((uv_handle_t *)&w->timer, delay_closed);
}

/* A failed AUTH: counted, logged (--security-log-rate), answered after the address's (or its
 * network's) delay. */
static void auth_fail_later(struct auth_wait *w)
{
    struct srv *s = w->s;
    uint64_t now = clock_ms();
    unsigned n = note_failure(&s->auth, w->addr, w->prefix, now);
    uint64_t delay = auth_delay_ms(n);
    s->m.auth_failures++;
    count_fail_rate(s, now);
    if (srv_seclog_allow(s)) {
        LOGW(&s->log,
             "AUTH failed for user '%s' from %s (%u in a row from there or %s; answered in "
             "%llu ms)",
             w->user, w->addr, n, w->prefix, (unsigned long long)delay);
        audit_auth(w, w->user, "auth.failure", n);
    }
    w->ok = false;
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    w->next = s->auth.waits;
    s->auth.waits = w;
    uv_timer_start(&w->timer, delay_fired, delay, 0);
}

static void verify_done(struct auth_wait *w)
{
    if (w->ok || w->s->stopping)
        wait_finish(w); /* when stopping the connection is gone: nobody reads the answer */
    else
        auth_fail_later(w);
}

/* ---- the verification pool ---- */

/* A worker: takes the oldest waiting check, runs Argon2id, hands it to the loop. */
static void *pool_main(void *arg)
{
    struct auth_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->waiting)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break; /* what still waits is answered by the loop (pool_stop) */
        struct auth_wait *w = p->waiting;
        p->waiting = w->pnext;
        if (!p->waiting)
            p->waiting_tail = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);
        w->ok = acl_verify(w->hash, w->pw, w->pwlen);
        pthread_mutex_lock(&p->mu);
        w->pnext = p->done;
        p->done = w;
        uv_async_send(&p->async);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* A check is over: it and every identical AUTH that waited for it get its result. */
static void check_finished(struct auth_pool *p, struct auth_wait *w)
{
    for (struct auth_wait **l = &p->inflight; *l; l = &(*l)->inext)
        if (*l == w) {
            *l = w->inext;
            break;
        }
    struct auth_wait *f = w->followers;
    bool ok = w->ok;
    verify_done(w); /* frees w */
    while (f) {
        struct auth_wait *next = f->fnext;
        f->ok = ok;
        verify_done(f);
        f = next;
    }
}

/* The loop: answer every finished check. */
static void pool_async_cb(uv_async_t *h)
{
    struct auth_pool *p = h->data;
    pthread_mutex_lock(&p->mu);
    struct auth_wait *w = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->mu);
    while (w) {
        struct auth_wait *next = w->pnext;
        check_finished(p, w);
        w = next;
    }
}

static int pool_start(struct srv *s)
{
    struct auth_pool *p = &s->auth.pool;
    unsigned n = s->cfg.auth_threads ? s->cfg.auth_threads : 1;
    if (pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->cv, NULL) ||
        !(p->threads = calloc(n, sizeof(*p->threads))) ||
        uv_async_init(s->loop, &p->async, pool_async_cb)) {
        LOGE(&s->log, "--auth-threads: cannot set up the verification pool");
        return -1;
    }
    p->async.data = p;
    uv_unref((uv_handle_t *)&p->async);
    p->started = true;
    for (; p->n_threads < n; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, pool_main, p)) {
            LOGE(&s->log, "--auth-threads %u: cannot start thread %u", n, p->n_threads + 1);
            return -1;
        }
    return 0;
}

/* Stop and join the workers (a check in progress finishes first: at most one hash each). */
static void pool_join(struct auth_pool *p)
{
    if (!p->started || !p->threads)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    p->n_threads = 0;
    free(p->threads);
    p->threads = NULL;
}

/* Shutdown: the workers stop; every check not answered yet is answered (stopping: nobody
 * reads it) so its slot and password are freed. */
static void pool_stop(struct srv *s)
{
    struct auth_pool *p = &s->auth.pool;
    if (!p->started)
        return;
    pool_join(p);
    struct auth_wait *w = p->waiting;
    p->waiting = p->waiting_tail = NULL;
    p->queued = 0;
    while (w) {
        struct auth_wait *next = w->pnext;
        w->ok = false;
        check_finished(p, w);
        w = next;
    }
    pool_async_cb(&p->async);
    if (!uv_is_closing((uv_handle_t *)&p->async))
        uv_close((uv_handle_t *)&p->async, NULL);
}

static void pool_free(struct srv *s)
{
    struct auth_pool *p = &s->auth.pool;
    if (!p->started)
        return;
    pool_join(p);
    struct auth_wait *lists[2] = {p->waiting, p->done};
    p->waiting = p->waiting_tail = p->done = NULL;
    for (size_t i = 0; i < 2; i++)
        while (lists[i]) {
            struct auth_wait *w = lists[i];
            lists[i] = w->pnext;
            while (w->followers) {
                struct auth_wait *f = w->followers;
                w->followers = f->fnext;
                wait_free(f);
            }
            wait_free(w);
        }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    p->started = false;
}

/* Queue a check (or join an identical one in flight): 0, or -1 when --auth-queue checks
 * already wait (counted). */
static int pool_submit(struct srv *s, struct auth_wait *w)
{
    struct auth_pool *p = &s->auth.pool;
    for (struct auth_wait *x = p->inflight; x; x = x->inext)
        if (sodium_memcmp(x->tag, w->tag, sizeof w->tag) == 0) {
            w->fnext = x->followers;
            x->followers = w;
            p->shared++;
            return 0;
        }
    pthread_mutex_lock(&p->mu);
    bool full = p->queued >= s->cfg.auth_queue || p->stop;
    if (!full) {
        w->pnext = NULL;
        if (p->waiting_tail)
            p->waiting_tail->pnext = w;
        else
            p->waiting = w;
        p->waiting_tail = w;
        p->queued++;
        if (p->queued > p->queued_max)
            p->queued_max = p->queued;
        pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (full) {
        p->rejected++;
        return -1;
    }
    w->inext = p->inflight;
    p->inflight = w;
    p->verifications++;
    return 0;
}

size_t srv_auth_queued(struct srv *s)
{
    struct auth_pool *p = &s->auth.pool;
    size_t n = 0;
    if (!p->started)
        return 0;
    pthread_mutex_lock(&p->mu);
    n = p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void srv_auth_stop(struct srv *s)
{
    pool_stop(s);
    while (s->auth.waits) {
        struct auth_wait *w = s->auth.waits;
        s->auth.waits = w->next;
        uv_timer_stop(&w->timer);
        uv_close((uv_handle_t *)&w->timer, delay_closed);
    }
}

/* Keep the password for the hash check, only if it can be checked at all: a longer one than
 * AUTH_PW_MAX is refused unread, so it is never copied (a client's megabyte-long "password"
 * costs no allocation). 0, or -1 (out of memory). */
static int wait_take_pw(struct auth_wait *w, const char *p, size_t len)
{
    if (len > AUTH_PW_MAX)
        return 0;
    if (!(w->pw = malloc(len + 1)))
        return -1;
    memcpy(w->pw, p, len);
    w->pwlen = len;
    return 0;
}

static struct auth_wait *wait_new(struct srv_req *r, const struct resp_arg *user,
                                  const struct resp_arg *pw, int hello_proto,
                                  const struct resp_arg *setname)
{
    struct auth_wait *w = calloc(1, sizeof(*w));
    if (!w || wait_take_pw(w, pw->p, pw->len)) {
        free(w);
        return NULL;
    }
    w->s = r->s;
    w->slot = r->slot;
    w->hello_proto = hello_proto;
    size_t un = user->len > ACL_NAME_MAX ? ACL_NAME_MAX : user->len;
    /* cppcheck-suppress knownConditionTrueFalse ; false positive: cppcheck 2.10 takes `un` for
     * 0 here; it is the length of the user name the client sent, up to ACL_NAME_MAX. */
    for (size_t i = 0; i < un; i++) /* shown in the log: printable bytes only */
        w->user[i] = user->p[i] > ' ' && user->p[i] < 0x7f ? user->p[i] : '?';
    if (setname)
        snprintf(w->setname, sizeof w->setname, "%.*s", (int)setname->len, setname->p);
    peer_addr(r->c, w->addr);
    srv_addr_prefix(w->addr, w->prefix);
    return w;
}

/* Without --acl-file: as a Redis whose default user has no password. */
static void auth_open(struct srv_req *r, const struct resp_arg *user, int hello_proto,
                      const struct resp_arg *setname)
{
    char name[129] = "";
    if (!user) {
        resp_w_error(r->out, AUTH_NOPASS);
        return;
    }
    if (!resp_arg_is(user, "default")) {
        resp_w_error(r->out, AUTH_WRONGPASS);
        return;
    }
    if (setname)
        snprintf(name, sizeof name, "%.*s", (int)setname->len, setname->p);
    auth_succeed(r->s, r->c, r->out, NULL, hello_proto, name);
}

void srv_auth_begin(struct srv_req *r, const struct resp_arg *user, const struct resp_arg *pw,
                    int hello_proto, const struct resp_arg *setname)
{
    struct srv *s = r->s;
    static const struct resp_arg dflt = {.p = "default", .len = 7};
    if (!s->auth.on) {
        auth_open(r, user, hello_proto, setname);
        return;
    }
    if (!user)
        user = &dflt;
    struct auth_wait *w = r->slot && r->c ? wait_new(r, user, pw, hello_proto, setname) : NULL;
    if (!w) {
        resp_w_error(r->out, PROTO_ERR " out of memory");
        return;
    }
    const struct acl_user *u = acl_user_find(&s->auth.acl, user->p, user->len);
    r->async = true;
    r->c->auth_pending = true;
    if (u && pw->len <= AUTH_PW_MAX) {
        unsigned char tag[ACL_TAG_BYTES];
        acl_cache_tag(s->auth.cache, u, pw->p, pw->len, tag);
        memcpy(w->tag, tag, sizeof w->tag);
        snprintf(w->hash, sizeof w->hash, "%s", u->hash);
        if (acl_cache_has(s->auth.cache, tag)) {
            s->m.auth_cache_hits++;
            w->ok = true;
            wait_finish(w);
            return;
        }
        if (in_backoff(&s->auth, w->addr, w->prefix) || fail_rate_over(s, clock_ms())) {
            s->auth.pool.backoff++; /* a failure without a hash */
        } else if (pool_submit(s, w) == 0) {
            return;
        } else {
            resp_w_error(&w->slot->out, AUTH_TRYAGAIN);
            r->c->auth_pending = false;
            srv_slot_done(w->slot);
            wait_free(w);
            return;
        }
    }
    auth_fail_later(w); /* unknown user, absurd password, or in back-off */
}

void srv_auth_http(struct srv *s, const char *addr, const char *user, size_t ulen, const char *pw,
                   size_t pwlen, srv_auth_http_cb cb, void *arg)
{
    struct auth_wait *w = calloc(1, sizeof(*w));
    if (!w || wait_take_pw(w, pw, pwlen)) {
        free(w);
        cb(arg, NULL, -2);
        return;
    }
    w->s = s;
    w->http_cb = cb;
    w->http_arg = arg;
    size_t un = ulen > ACL_NAME_MAX ? ACL_NAME_MAX : ulen;
    /* cppcheck-suppress knownConditionTrueFalse ; false positive as in wait_new: `un` is the
     * length of the user name the client sent, up to ACL_NAME_MAX. */
    for (size_t i = 0; i < un; i++) /* shown in the log: printable bytes only */
        w->user[i] = user[i] > ' ' && user[i] < 0x7f ? user[i] : '?';
    snprintf(w->addr, sizeof w->addr, "%s", addr && addr[0] ? addr : "?");
    srv_addr_prefix(w->addr, w->prefix);
    const struct acl_user *u = acl_user_find(&s->auth.acl, user, ulen);
    if (u && pwlen <= AUTH_PW_MAX) {
        unsigned char tag[ACL_TAG_BYTES];
        acl_cache_tag(s->auth.cache, u, pw, pwlen, tag);
        memcpy(w->tag, tag, sizeof w->tag);
        snprintf(w->hash, sizeof w->hash, "%s", u->hash);
        if (acl_cache_has(s->auth.cache, tag)) {
            s->m.auth_cache_hits++;
            w->ok = true;
            wait_finish(w);
            return;
        }
        if (in_backoff(&s->auth, w->addr, w->prefix) || fail_rate_over(s, clock_ms())) {
            s->auth.pool.backoff++; /* a failure without a hash */
        } else if (pool_submit(s, w) == 0) {
            return;
        } else {
            wait_free(w);
            cb(arg, NULL, -2); /* --auth-queue full: try again, no failure counted */
            return;
        }
    }
    auth_fail_later(w); /* unknown user, absurd password, or in back-off */
}
