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

#include "server/cmd.h"

/* The reply words of a failed or refused AUTH (Redis's texts: clients match on them). */
#define AUTH_WRONGPASS PROTO_WRONGPASS " invalid username-password pair or user is disabled."
#define AUTH_NOPASS                                                                                \
    PROTO_ERR " AUTH <password> called without any password configured for the default user. "     \
              "Are you sure your configuration is correct?"

/* A verification in flight on the thread pool, then (failed) a delay before its answer. */
struct auth_wait {
    uv_work_t work;
    uv_timer_t timer;
    struct auth_wait *next; /* srv_auth.waits while the timer runs */
    struct srv *s;
    struct srv_slot *slot;
    char user[ACL_NAME_MAX + 1];
    char hash[ACL_HASH_BUF]; /* the hash verified against: a reload may change the user's */
    char *pw;                /* wiped and freed once verified */
    size_t pwlen;
    char addr[AUTH_ADDR_BUF];
    char setname[129]; /* HELLO ... SETNAME, applied only on success */
    int hello_proto;   /* 0: AUTH */
    bool ok;
};

uint64_t auth_delay_ms(unsigned failures)
{
    uint64_t d = AUTH_DELAY_MIN_MS;
    for (unsigned i = 1; i < failures && d < AUTH_DELAY_MAX_MS; i++)
        d *= 2;
    return d > AUTH_DELAY_MAX_MS ? AUTH_DELAY_MAX_MS : d;
}

/* ---- loading and reloading ---- */

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
    LOGI(&s->log, "ACL: %zu users from %s (rules hash %s)", a->acl.n, s->cfg.acl_file,
         a->acl.digest);
    return 0;
}

/* Every authenticated connection to the user of its name in `next`, or closed. */
static void repoint_conns(struct srv *s, const struct acl *next)
{
    struct srv_conn *c = s->conns;
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
        const char *e = getenv("FENCELOCK_PEER_PASSWORD");
        n = e ? strlen(e) : 0;
        if (n == 0 || n > AUTH_PW_MAX) {
            LOGE(&s->log,
                 "--peer-user %s needs a password: --peer-password-file FILE or "
                 "FENCELOCK_PEER_PASSWORD (1..%d bytes)",
                 s->cfg.peer_user, AUTH_PW_MAX);
            return -1;
        }
        memcpy(pw, e, n);
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
        s->peer_retry_ms = 0; /* a corrected password is tried at once */
        s->peer_refusals = 0;
    }
}

void srv_auth_free(struct srv *s)
{
    acl_free(&s->auth.acl);
    if (s->auth.cache)
        sodium_memzero(s->auth.cache, sizeof(*s->auth.cache));
    sodium_memzero(s->auth.peer_pw, sizeof s->auth.peer_pw);
    free(s->auth.cache);
    s->auth.cache = NULL;
}

/* ---- failures by address ---- */

static void peer_addr(struct srv_conn *c, char out[AUTH_ADDR_BUF])
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    snprintf(out, AUTH_ADDR_BUF, "?");
    if (!c || uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len))
        return;
    if (ss.ss_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)&ss, out, AUTH_ADDR_BUF);
    else if (ss.ss_family == AF_INET6)
        uv_ip6_name((const struct sockaddr_in6 *)&ss, out, AUTH_ADDR_BUF);
}

/* The address's entry (a new one replaces the least recently failed); counts one failure. */
static unsigned note_failure(struct srv_auth *a, const char *addr, uint64_t now)
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
    resp_w_bulk_str(out, srv_role_name(s->role));
}

/* The connection is now `u` (NULL when no ACL file: nothing to record): reply OK or HELLO. */
static void auth_succeed(struct srv *s, struct srv_conn *c, struct buf *out,
                         const struct acl_user *u, int hello_proto, const char *setname)
{
    if (c) {
        c->user = u;
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
    const char *what = w->hello_proto ? "HELLO AUTH" : "AUTH";
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
    struct srv_conn *c = w->slot->conn;
    const struct acl_user *u =
        s->auth.on ? acl_user_find(&s->auth.acl, w->user, strlen(w->user)) : NULL;
    if (w->ok && u && strcmp(u->hash, w->hash) == 0) {
        unsigned char tag[ACL_TAG_BYTES];
        acl_cache_tag(s->auth.cache, u, w->pw, w->pwlen, tag);
        acl_cache_put(s->auth.cache, tag);
        forget_failures(&s->auth, w->addr);
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

/* A failed AUTH: counted, logged, answered after the address's delay. */
static void auth_fail_later(struct auth_wait *w)
{
    struct srv *s = w->s;
    unsigned n = note_failure(&s->auth, w->addr, srv_now_ms());
    uint64_t delay = auth_delay_ms(n);
    s->m.auth_failures++;
    LOGW(&s->log, "AUTH failed for user '%s' from %s (%u in a row from there; answered in %llu ms)",
         w->user, w->addr, n, (unsigned long long)delay);
    audit_auth(w, w->user, "auth.failure", n);
    w->ok = false;
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    w->next = s->auth.waits;
    s->auth.waits = w;
    uv_timer_start(&w->timer, delay_fired, delay, 0);
}

static void verify_work(uv_work_t *req)
{
    struct auth_wait *w = req->data;
    w->ok = acl_verify(w->hash, w->pw, w->pwlen);
}

static void verify_done(uv_work_t *req, int status)
{
    struct auth_wait *w = req->data;
    (void)status; /* a cancelled check left ok false */
    if (w->ok || w->s->stopping)
        wait_finish(w); /* when stopping the connection is gone: nobody reads the answer */
    else
        auth_fail_later(w);
}

void srv_auth_stop(struct srv *s)
{
    while (s->auth.waits) {
        struct auth_wait *w = s->auth.waits;
        s->auth.waits = w->next;
        uv_timer_stop(&w->timer);
        uv_close((uv_handle_t *)&w->timer, delay_closed);
    }
}

static struct auth_wait *wait_new(struct srv_req *r, const struct resp_arg *user,
                                  const struct resp_arg *pw, int hello_proto,
                                  const struct resp_arg *setname)
{
    struct auth_wait *w = calloc(1, sizeof(*w));
    if (!w || !(w->pw = malloc(pw->len + 1))) {
        free(w);
        return NULL;
    }
    w->s = r->s;
    w->slot = r->slot;
    w->work.data = w;
    w->hello_proto = hello_proto;
    memcpy(w->pw, pw->p, pw->len);
    w->pwlen = pw->len;
    size_t un = user->len > ACL_NAME_MAX ? ACL_NAME_MAX : user->len;
    for (size_t i = 0; i < un; i++) /* shown in the log: printable bytes only */
        w->user[i] = user->p[i] > ' ' && user->p[i] < 0x7f ? user->p[i] : '?';
    if (setname)
        snprintf(w->setname, sizeof w->setname, "%.*s", (int)setname->len, setname->p);
    peer_addr(r->c, w->addr);
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
        snprintf(w->hash, sizeof w->hash, "%s", u->hash);
        if (acl_cache_has(s->auth.cache, tag)) {
            s->m.auth_cache_hits++;
            w->ok = true;
            wait_finish(w);
            return;
        }
        if (uv_queue_work(s->loop, &w->work, verify_work, verify_done) == 0)
            return;
    }
    auth_fail_later(w); /* unknown user, absurd password, or no thread pool */
}
