/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_agent: libfencelock's conformance agent. The conformance harness (tests/conformance/run.py)
 * starts it and drives one fl_client through it with JSON lines on stdin and stdout, as
 * tests/conformance/PROTOCOL.md defines; the same scenarios drive the Go, Java, Node.js and
 * Python agents, so this program uses the public API (include/fencelock.h) and nothing else.
 *
 * Ownership: main() owns the client, the session table and the watcher table. Each request
 * runs on a detached thread of its own (a waiting lock never delays a later request); it
 * borrows the client and the session or watcher it names. The harness never closes a session
 * or stops a watcher while another request uses it. A session entry is freed by
 * session.close (after fl_session_close, so its on_lost callback cannot run any more); a
 * watcher entry by watch.stop, after its monitor thread joined the watcher; an on_revoke
 * registration by session.close of its session (or quit), after its watcher joined and before
 * fl_session_close. quit (or EOF on stdin) waits for the requests in flight (bounded), closes
 * everything, and exits 0.
 *
 * Output lines (replies and events) are written whole under one mutex, each flushed.
 * Limits: a request line is at most AGENT_LINE_MAX bytes (longer: an OTHER error reply
 * without an id is impossible, so the line is answered with id -1 and skipped).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fencelock.h"

#define AGENT_LINE_MAX (1 << 20)
#define AGENT_DEPTH_MAX 16

/* ---- a small JSON reader: the requests are flat objects of scalars and short arrays ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
    enum jtype t;
    int b;
    double num;
    char *s; /* J_STR: NUL-terminated (slen excludes it; may hold NULs) */
    size_t slen;
    size_t n;       /* J_ARR, J_OBJ: number of items */
    char **keys;    /* J_OBJ */
    struct jv *its; /* J_ARR, J_OBJ */
};

struct jp {
    const char *p, *end;
    int depth;
};

static void jv_free(struct jv *v)
{
    free(v->s);
    for (size_t i = 0; i < v->n; i++) {
        if (v->keys)
            free(v->keys[i]);
        jv_free(&v->its[i]);
    }
    free(v->keys);
    free(v->its);
    memset(v, 0, sizeof(*v));
}

static void jp_ws(struct jp *p)
{
    while (p->p < p->end && (*p->p == ' ' || *p->p == '\t' || *p->p == '\r' || *p->p == '\n'))
        p->p++;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static int jp_hex4(struct jp *p, unsigned *out)
{
    if (p->end - p->p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + (unsigned)h;
    }
    p->p += 4;
    *out = v;
    return 0;
}

static size_t utf8_put(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string after its opening quote; the decoded text is never longer than the encoded one. */
static int jp_string(struct jp *p, char **out, size_t *outlen)
{
    char *o = malloc((size_t)(p->end - p->p) + 1);
    size_t n = 0;
    if (!o)
        return -1;
    while (p->p < p->end && *p->p != '"') {
        char ch = *p->p++;
        if ((unsigned char)ch < 0x20)
            goto bad;
        if (ch != '\\') {
            o[n++] = ch;
            continue;
        }
        if (p->p >= p->end)
            goto bad;
        ch = *p->p++;
        unsigned cp, lo;
        switch (ch) {
        case '"':
            o[n++] = '"';
            break;
        case '\\':
            o[n++] = '\\';
            break;
        case '/':
            o[n++] = '/';
            break;
        case 'b':
            o[n++] = '\b';
            break;
        case 'f':
            o[n++] = '\f';
            break;
        case 'n':
            o[n++] = '\n';
            break;
        case 'r':
            o[n++] = '\r';
            break;
        case 't':
            o[n++] = '\t';
            break;
        case 'u':
            if (jp_hex4(p, &cp))
                goto bad;
            if (cp >= 0xD800 && cp < 0xDC00 && p->end - p->p >= 6 && p->p[0] == '\\' &&
                p->p[1] == 'u') {
                p->p += 2;
                if (jp_hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    goto bad;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += utf8_put(o + n, cp);
            break;
        default:
            goto bad;
        }
    }
    if (p->p >= p->end)
        goto bad;
    p->p++; /* the closing quote */
    o[n] = 0;
    *out = o;
    *outlen = n;
    return 0;
bad:
    free(o);
    return -1;
}

static int jp_value(struct jp *p, struct jv *v);

static int jp_items(struct jp *p, struct jv *v, int obj)
{
    char close = obj ? '}' : ']';
    jp_ws(p);
    if (p->p < p->end && *p->p == close) {
        p->p++;
        return 0;
    }
    for (;;) {
        if (v->n % 8 == 0) {
            struct jv *its = realloc(v->its, (v->n + 8) * sizeof(*its));
            if (!its)
                return -1;
            v->its = its;
            if (obj) {
                char **keys = realloc(v->keys, (v->n + 8) * sizeof(*keys));
                if (!keys)
                    return -1;
                v->keys = keys;
            }
        }
        memset(&v->its[v->n], 0, sizeof(v->its[0]));
        if (obj) {
            size_t kl;
            jp_ws(p);
            if (p->p >= p->end || *p->p++ != '"' || jp_string(p, &v->keys[v->n], &kl))
                return -1;
            jp_ws(p);
            if (p->p >= p->end || *p->p++ != ':') {
                free(v->keys[v->n]);
                return -1;
            }
        }
        v->n++;
        if (jp_value(p, &v->its[v->n - 1]))
            return -1;
        jp_ws(p);
        if (p->p < p->end && *p->p == ',') {
            p->p++;
            continue;
        }
        if (p->p < p->end && *p->p == close) {
            p->p++;
            return 0;
        }
        return -1;
    }
}

static int jp_value(struct jp *p, struct jv *v)
{
    jp_ws(p);
    if (p->p >= p->end || p->depth > AGENT_DEPTH_MAX)
        return -1;
    size_t left = (size_t)(p->end - p->p);
    char ch = *p->p;
    if (ch == '{' || ch == '[') {
        p->p++;
        p->depth++;
        v->t = ch == '{' ? J_OBJ : J_ARR;
        int rc = jp_items(p, v, ch == '{');
        p->depth--;
        return rc;
    }
    if (ch == '"') {
        p->p++;
        v->t = J_STR;
        return jp_string(p, &v->s, &v->slen);
    }
    if (left >= 4 && memcmp(p->p, "null", 4) == 0) {
        p->p += 4;
        v->t = J_NULL;
        return 0;
    }
    if (left >= 4 && memcmp(p->p, "true", 4) == 0) {
        p->p += 4;
        v->t = J_BOOL;
        v->b = 1;
        return 0;
    }
    if (left >= 5 && memcmp(p->p, "false", 5) == 0) {
        p->p += 5;
        v->t = J_BOOL;
        return 0;
    }
    char *e;
    errno = 0;
    v->num = strtod(p->p, &e); /* the line ends in a NUL, so strtod stops inside it */
    if (e == p->p || errno)
        return -1;
    p->p = e;
    v->t = J_NUM;
    return 0;
}

/* Parse one line into an object; 0 or -1. */
static int json_parse(const char *s, size_t len, struct jv *out)
{
    struct jp p = {s, s + len, 0};
    memset(out, 0, sizeof(*out));
    if (jp_value(&p, out) || out->t != J_OBJ) {
        jv_free(out);
        return -1;
    }
    jp_ws(&p);
    if (p.p != p.end) {
        jv_free(out);
        return -1;
    }
    return 0;
}

static const struct jv *jget(const struct jv *o, const char *key)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0 && o->its[i].t != J_NULL)
            return &o->its[i];
    return NULL;
}

static const char *jstr(const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_STR ? v->s : NULL;
}

static double jnum(const struct jv *o, const char *key, double dflt)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_NUM ? v->num : dflt;
}

static int jbool(const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_BOOL && v->b;
}

/* Seconds (a float) to milliseconds, never negative. */
static uint64_t secs_ms(double s)
{
    return s <= 0 ? 0 : (uint64_t)(s * 1000.0 + 0.5);
}

/* ---- a JSON line writer ---- */

struct jw {
    char *buf;
    size_t len, cap;
    int oom; /* sticky: the line is dropped (and an error said on stderr) */
    int first;
};

static void jw_raw(struct jw *w, const char *s, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n + 2 > w->cap) {
        size_t cap = (w->cap ? w->cap * 2 : 256) + n;
        char *b = realloc(w->buf, cap);
        if (!b) {
            w->oom = 1;
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void jw_rawf(struct jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jw_rawf(struct jw *w, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    jw_raw(w, tmp, n < 0 ? 0 : (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A JSON string; bytes that are not UTF-8 text pass through (the harness decodes leniently). */
static void jw_strn(struct jw *w, const char *s, size_t n)
{
    jw_raw(w, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            jw_raw(w, esc, 2);
        } else if (ch < 0x20) {
            jw_rawf(w, "\\u%04x", ch);
        } else {
            jw_raw(w, (const char *)&s[i], 1);
        }
    }
    jw_raw(w, "\"", 1);
}

static void jw_key(struct jw *w, const char *key)
{
    if (!w->first)
        jw_raw(w, ",", 1);
    w->first = 0;
    jw_strn(w, key, strlen(key));
    jw_raw(w, ":", 1);
}

static void jw_begin(struct jw *w)
{
    memset(w, 0, sizeof(*w));
    w->first = 1;
    jw_raw(w, "{", 1);
}

static void jw_str(struct jw *w, const char *key, const char *v)
{
    jw_key(w, key);
    if (v)
        jw_strn(w, v, strlen(v));
    else
        jw_raw(w, "null", 4);
}

static void jw_int(struct jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    jw_rawf(w, "%lld", (long long)v);
}

static void jw_bool(struct jw *w, const char *key, int v)
{
    jw_key(w, key);
    jw_raw(w, v ? "true" : "false", v ? 4 : 5);
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* Close the object, write it as one line, free the buffer. */
static void jw_emit(struct jw *w)
{
    jw_raw(w, "}\n", 2);
    if (w->oom) {
        fprintf(stderr, "fl_agent: out of memory writing a line\n");
    } else {
        pthread_mutex_lock(&out_mu);
        fwrite(w->buf, 1, w->len, stdout);
        fflush(stdout);
        pthread_mutex_unlock(&out_mu);
    }
    free(w->buf);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the agent's state ---- */

struct sess {
    char name[24];
    fl_session *s;
    struct sess *next;
};

struct watch {
    char name[24];
    fl_watcher *w;
    pthread_t monitor;
    int stop; /* under agent.mu: watch.stop or quit asked the monitor to stop it */
    char last[FL_WATCH_ID_MAX];
    struct watch *next;
};

/* An on_revoke or on_waiter registration (fl_revoke_watch, fl_waiter_watch) of session
   `sess`. Its callback writes no line before the reply to the registration is out
   (PROTOCOL.md's order rule): it waits for `answered`, which run_job sets after writing that
   reply. Freed by revokes_stop, after the join. */
struct revoke_reg {
    char sess[24];
    fl_watcher *w;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int answered; /* under mu */
    struct revoke_reg *next;
};

static struct {
    fl_client *c;
    pthread_mutex_t mu; /* the lists, the counters, inflight */
    pthread_cond_t cv;  /* inflight fell */
    struct sess *sessions;
    struct watch *watches;
    struct revoke_reg *revokes;
    unsigned n_sessions, n_watches;
    int inflight;
} agent = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static struct sess *sess_find(const char *name)
{
    pthread_mutex_lock(&agent.mu);
    struct sess *s = agent.sessions;
    while (s && (!name || strcmp(s->name, name) != 0))
        s = s->next;
    pthread_mutex_unlock(&agent.mu);
    return s;
}

static void sess_unlink(struct sess *x)
{
    pthread_mutex_lock(&agent.mu);
    for (struct sess **pp = &agent.sessions; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    pthread_mutex_unlock(&agent.mu);
}

/* on_lost: on the session's keepalive thread. */
static void on_lost(fl_session *s, void *ctx)
{
    struct sess *x = ctx;
    struct jw w;
    jw_begin(&w);
    jw_str(&w, "event", "lost");
    jw_str(&w, "session", x->name);
    jw_int(&w, "mono_ms", fl_now_ms());
    jw_int(&w, "wall_ms", wall_ms());
    jw_emit(&w);
}

/* ---- replies ---- */

/* The protocol's word for a libfencelock error. The library has no code of its own for a
   refused TLS handshake: it is FL_EUNAVAILABLE with OpenSSL's reason after "TLS". */
static const char *err_word(fl_err e, const char *msg)
{
    switch (e) {
    case FL_ETIMEOUT:
        return "TIMEOUT";
    case FL_EBUSY:
        return "BUSY";
    case FL_EUNAVAILABLE:
        return msg && strstr(msg, "TLS") ? "TLS" : "UNAVAILABLE";
    case FL_EUNKNOWN:
        return "UNKNOWN";
    case FL_ESESSION:
        return "SESSION";
    case FL_ENOTHOLDER:
        return "NOTHOLDER";
    case FL_ESTALE:
        return "STALE";
    case FL_EIFREV:
        return "IFREV";
    case FL_ENOTFOUND:
        return "NOTFOUND";
    case FL_ENOSPACE:
        return "NOSPACE";
    case FL_EPERM:
        return "PERM";
    case FL_EWRONGTYPE:
        return "WRONGTYPE";
    case FL_EAUTH:
        return "AUTH";
    case FL_ECOMPACTED:
        return "COMPACTED";
    case FL_EDEADLOCK:
        return "DEADLOCK";
    case FL_EBROKEN:
        return "BROKEN";
    case FL_ETOOLARGE:
        return "TOOLARGE";
    default:
        return "OTHER";
    }
}

/* The op a failed TXN named (fl_txn_failed_op), set by op_txn on the job's own thread and
   sent as the error reply's "op" (PROTOCOL.md); 0: none. */
static _Thread_local int job_txn_op;

static void reply_err(int64_t id, const char *word, const char *msg)
{
    struct jw w;
    jw_begin(&w);
    jw_int(&w, "id", id);
    jw_bool(&w, "ok", 0);
    jw_str(&w, "error", word);
    jw_str(&w, "message", msg ? msg : "");
    if (job_txn_op > 0)
        jw_int(&w, "op", job_txn_op);
    jw_emit(&w);
}

/* An op fills `w` (opened with id and ok) and returns FL_OK, or returns an error; bad
   arguments are FL_EINVAL with the reason in *why. */
typedef fl_err (*op_fn)(const struct jv *req, struct jw *w, const char **why);

#define NEED(cond, msg)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            *why = (msg);                                                                          \
            return FL_EINVAL;                                                                      \
        }                                                                                          \
    } while (0)

/* A handle this agent does not know (never opened, or closed): the protocol's SESSION. */
#define NEED_SESSION(x)                                                                            \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            *why = "no such session (never opened, or closed)";                                    \
            return FL_ESESSION;                                                                    \
        }                                                                                          \
    } while (0)

static struct sess *req_session(const struct jv *req)
{
    const char *name = jstr(req, "session");
    return name ? sess_find(name) : NULL;
}

/* ---- sessions ---- */

static fl_err op_session_open(const struct jv *req, struct jw *w, const char **why)
{
    NEED(jget(req, "ttl"), "ttl is required");
    struct sess *x = calloc(1, sizeof(*x));
    NEED(x, "out of memory");
    fl_err e;
    if (jbool(req, "reentrant"))
        e = fl_session_open_reentrant(agent.c, secs_ms(jnum(req, "ttl", 0)),
                                      secs_ms(jnum(req, "lock_delay", 0)), jstr(req, "name"),
                                      (uint32_t)jnum(req, "max_count", 0), &x->s);
    else
        e = fl_session_open(agent.c, secs_ms(jnum(req, "ttl", 0)),
                            secs_ms(jnum(req, "lock_delay", 0)), jstr(req, "name"), &x->s);
    if (e) {
        free(x);
        return e;
    }
    pthread_mutex_lock(&agent.mu);
    snprintf(x->name, sizeof(x->name), "s%u", ++agent.n_sessions);
    x->next = agent.sessions;
    agent.sessions = x;
    pthread_mutex_unlock(&agent.mu);
    fl_session_on_lost(x->s, on_lost, x); /* at once if already lost */
    jw_str(w, "session", x->name);
    jw_int(w, "sid", (int64_t)fl_session_id(x->s));
    return FL_OK;
}

static void revokes_stop(const char *sess);

static fl_err op_session_close(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    NEED_SESSION(x);
    revokes_stop(x->name); /* before fl_session_close, as fl_revoke_watch asks */
    sess_unlink(x);
    fl_err e = fl_session_close(x->s);
    free(x);
    return e;
}

static fl_err op_session_safe(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    NEED_SESSION(x);
    int64_t until = fl_session_safe_until(x->s);
    int64_t now = fl_now_ms();
    jw_int(w, "remaining_ms", until > now ? until - now : 0);
    jw_bool(w, "lost", fl_session_is_lost(x->s));
    return FL_OK;
}

/* ---- locks, semaphores, elections ---- */

static fl_err op_lock(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    uint64_t wait = secs_ms(jnum(req, "wait", 0)), token = 0;
    fl_err e;
    const char *value = jstr(req, "value");
    if (value || jget(req, "max_hold")) { /* LOCK ... VALUE v MAXHOLD ms */
        struct fl_lock_opts o = {sizeof(o), value, value ? strlen(value) : 0,
                                 secs_ms(jnum(req, "max_hold", 0)), jbool(req, "notify")};
        e = fl_lock_with(x->s, name, wait, &o, &token, NULL);
        if (e == FL_ETIMEOUT && wait == 0)
            e = FL_EBUSY; /* a try: not granted now */
    } else if (jbool(req, "shared")) {
        e = fl_lock_shared(x->s, name, wait, &token);
        if (e == FL_ETIMEOUT && wait == 0)
            e = FL_EBUSY;                          /* a try: not granted now */
    } else if (jbool(req, "notify") && wait > 0) { /* a try never queues: nobody to tell */
        e = fl_lock_notify(x->s, name, wait, &token);
    } else {
        e = wait == 0 ? fl_trylock(x->s, name, &token) : fl_lock(x->s, name, wait, &token);
    }
    if (e == FL_OK)
        jw_int(w, "token", (int64_t)token);
    return e;
}

static fl_err op_unlock(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    return fl_unlock(x->s, name);
}

/* names (an array of strings, 1..FL_LOCK_MULTI_MAX) into v[]; the count, or 0 if malformed. */
static size_t req_names(const struct jv *req, const char **v)
{
    const struct jv *a = jget(req, "names");
    if (!a || a->t != J_ARR || a->n == 0 || a->n > FL_LOCK_MULTI_MAX)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->its[i].t != J_STR)
            return 0;
        v[i] = a->its[i].s;
    }
    return a->n;
}

static fl_err op_lock_multi(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    NEED_SESSION(x);
    const char *names[FL_LOCK_MULTI_MAX];
    uint8_t shared[FL_LOCK_MULTI_MAX] = {0};
    uint64_t tokens[FL_LOCK_MULTI_MAX];
    size_t n = req_names(req, names);
    NEED(n, "names must be 1..40 strings");
    const struct jv *sh = jget(req, "shared");
    NEED(!sh || sh->t == J_ARR, "shared must be an array of names");
    for (size_t j = 0; sh && j < sh->n; j++) {
        NEED(sh->its[j].t == J_STR, "shared must be an array of names");
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], sh->its[j].s) == 0)
                shared[i] = 1;
    }
    uint64_t wait = secs_ms(jnum(req, "wait", 0));
    fl_err e = fl_lock_multi(x->s, n, names, shared, wait, tokens);
    if (e == FL_ETIMEOUT && wait == 0)
        e = FL_EBUSY; /* a try: not granted now */
    if (e == FL_OK) {
        jw_key(w, "tokens");
        jw_raw(w, "[", 1);
        for (size_t i = 0; i < n; i++)
            jw_rawf(w, "%s%llu", i ? "," : "", (unsigned long long)tokens[i]);
        jw_raw(w, "]", 1);
    }
    return e;
}

static fl_err op_unlock_multi(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    NEED_SESSION(x);
    const char *names[FL_LOCK_MULTI_MAX];
    size_t n = req_names(req, names);
    NEED(n, "names must be 1..40 strings");
    return fl_unlock_multi(x->s, n, names);
}

static fl_err op_sem_acquire(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    double limit = jnum(req, "limit", 0);
    NEED_SESSION(x);
    NEED(name, "name is required");
    NEED(limit >= 1 && limit <= UINT32_MAX, "limit is required (1 or more)");
    double permits = jnum(req, "permits", 1);
    NEED(permits >= 1 && permits <= limit, "permits must be 1..limit");
    uint64_t token = 0, wait = secs_ms(jnum(req, "wait", 0));
    fl_err e = fl_sem_acquire_n(x->s, name, (uint32_t)limit, (uint32_t)permits, wait, &token);
    if (e == FL_ETIMEOUT && wait == 0)
        e = FL_EBUSY; /* a try: not granted now */
    if (e == FL_OK)
        jw_int(w, "token", (int64_t)token);
    return e;
}

static fl_err op_sem_release(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    return fl_sem_release(x->s, name);
}

static fl_err op_campaign(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name"), *value = jstr(req, "value");
    NEED_SESSION(x);
    NEED(name && value, "name and value are required");
    uint64_t token = 0;
    fl_err e = fl_campaign(x->s, name, value, secs_ms(jnum(req, "wait", 0)), &token);
    if (e == FL_OK)
        jw_int(w, "token", (int64_t)token);
    return e;
}

static fl_err op_resign(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    return fl_resign(x->s, name);
}

static fl_err op_leader(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    struct fl_leader_info li;
    fl_err e = fl_leader(agent.c, name, &li);
    if (e)
        return e;
    jw_int(w, "sid", (int64_t)li.sid);
    jw_key(w, "value");
    jw_strn(w, li.value, li.value_len);
    jw_int(w, "token", (int64_t)li.token);
    fl_leader_info_free(&li);
    return FL_OK;
}

static fl_err op_observe(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    struct fl_leader_info li;
    fl_err e = fl_observe(agent.c, name, (uint64_t)jnum(req, "after_rev", 0),
                          secs_ms(jnum(req, "wait", 0)), &li);
    if (e)
        return e;
    jw_int(w, "sid", (int64_t)li.sid);
    jw_key(w, "value");
    if (li.value)
        jw_strn(w, li.value, li.value_len);
    else
        jw_raw(w, "\"\"", 2);
    jw_int(w, "rev", (int64_t)li.rev);
    fl_leader_info_free(&li);
    return FL_OK;
}

/* ---- keys ---- */

/* fence [name, token] and ifrev of a put or del; NULL when neither is given. */
static const struct fl_write_opts *write_opts(const struct jv *req, struct fl_write_opts *o,
                                              const char **why)
{
    memset(o, 0, sizeof(*o));
    const struct jv *f = jget(req, "fence");
    const struct jv *ifrev = jget(req, "ifrev");
    if (f) {
        if (f->t != J_ARR || f->n != 2 || f->its[0].t != J_STR || f->its[1].t != J_NUM) {
            *why = "fence must be [name, token]";
            return NULL;
        }
        o->fence_name = f->its[0].s;
        o->fence_token = (uint64_t)f->its[1].num;
    }
    if (ifrev) {
        if (ifrev->t != J_NUM) {
            *why = "ifrev must be a number";
            return NULL;
        }
        o->use_ifrev = 1;
        o->ifrev = (uint64_t)ifrev->num;
    }
    return o;
}

/* The session of a write: none when the request names none. */
static int write_session(const struct jv *req, fl_session **out)
{
    *out = NULL;
    if (!jstr(req, "session"))
        return 0;
    struct sess *x = req_session(req);
    if (!x)
        return -1;
    *out = x->s;
    return 0;
}

static fl_err op_put(const struct jv *req, struct jw *w, const char **why)
{
    const struct jv *key = jget(req, "key"), *value = jget(req, "value");
    fl_session *s;
    struct fl_write_opts o;
    NEED(key && key->t == J_STR && value && value->t == J_STR, "key and value are required");
    if (write_session(req, &s)) {
        *why = "no such session (never opened, or closed)";
        return FL_ESESSION;
    }
    *why = NULL;
    const struct fl_write_opts *po = write_opts(req, &o, why);
    NEED(!*why, *why);
    uint64_t rev = 0;
    fl_err e = fl_put(agent.c, s, key->s, value->s, value->slen, po, &rev);
    if (e == FL_OK)
        jw_int(w, "rev", (int64_t)rev);
    return e;
}

static fl_err op_del(const struct jv *req, struct jw *w, const char **why)
{
    const char *key = jstr(req, "key");
    fl_session *s;
    struct fl_write_opts o;
    NEED(key, "key is required");
    if (write_session(req, &s)) {
        *why = "no such session (never opened, or closed)";
        return FL_ESESSION;
    }
    *why = NULL;
    const struct fl_write_opts *po = write_opts(req, &o, why);
    NEED(!*why, *why);
    int deleted = 0;
    fl_err e = fl_del(agent.c, s, key, po, &deleted);
    if (e == FL_OK)
        jw_bool(w, "deleted", deleted);
    return e;
}

static fl_err op_incr(const struct jv *req, struct jw *w, const char **why)
{
    const char *key = jstr(req, "key");
    fl_session *s;
    struct fl_write_opts o;
    NEED(key, "key is required");
    if (write_session(req, &s)) {
        *why = "no such session (never opened, or closed)";
        return FL_ESESSION;
    }
    *why = NULL;
    const struct fl_write_opts *po = write_opts(req, &o, why);
    NEED(!*why, *why);
    int64_t value = 0;
    fl_err e = fl_incr(agent.c, s, key, (int64_t)jnum(req, "by", 1), po, &value);
    if (e == FL_OK)
        jw_int(w, "value", value);
    return e;
}

static fl_err op_get(const struct jv *req, struct jw *w, const char **why)
{
    const char *key = jstr(req, "key");
    NEED(key, "key is required");
    struct fl_kv kv;
    fl_err e = fl_get(agent.c, key, &kv);
    if (e)
        return e;
    jw_key(w, "value");
    jw_strn(w, kv.value, kv.len);
    jw_int(w, "mod_rev", (int64_t)kv.mod_rev);
    jw_int(w, "version", (int64_t)kv.version);
    fl_kv_free(&kv);
    return FL_OK;
}

static fl_err op_fence_check(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name && jget(req, "token"), "name and token are required");
    return fl_fence_check(agent.c, name, (uint64_t)jnum(req, "token", 0));
}

/* ---- watch ---- */

/* Events become lines; -COMPACTED ends the watcher (never back: the caller decides). */
static int watch_cb(const struct fl_event *ev, void *ctx)
{
    struct watch *x = ctx;
    if (ev->kind == FL_WATCH_COMPACTED)
        return 1;
    if (ev->kind != FL_WATCH_EVENT) {
        fprintf(stderr, "fl_agent: %s %s %s\n", x->name,
                ev->kind == FL_WATCH_RESUMED ? "resumed" : "interrupted", ev->message);
        return 0;
    }
    struct jw w;
    jw_begin(&w);
    jw_str(&w, "event", "watch");
    jw_str(&w, "watch", x->name);
    jw_str(&w, "id", ev->id);
    jw_str(&w, "type", ev->type);
    jw_str(&w, "name", ev->name);
    jw_emit(&w);
    return 0;
}

/* The one thread that touches the watcher after fl_watch: it waits until the watcher ended by
 * itself (-COMPACTED, an error) or watch.stop asks, stops and joins it, says watch_end. */
static void *watch_monitor(void *arg)
{
    struct watch *x = arg;
    for (;;) {
        pthread_mutex_lock(&agent.mu);
        int stop = x->stop;
        pthread_mutex_unlock(&agent.mu);
        if (stop || fl_watch_done(x->w))
            break;
        usleep(20000);
    }
    fl_watch_stop(x->w);
    char msg[256];
    fl_err e = fl_watch_join(x->w, x->last, msg, sizeof(msg));
    struct jw w;
    jw_begin(&w);
    jw_str(&w, "event", "watch_end");
    jw_str(&w, "watch", x->name);
    jw_str(&w, "error", e == FL_OK ? NULL : err_word(e, msg));
    jw_str(&w, "last", x->last);
    jw_emit(&w);
    return NULL;
}

static fl_err op_watch_start(const struct jv *req, struct jw *w, const char **why)
{
    struct watch *x = calloc(1, sizeof(*x));
    NEED(x, "out of memory");
    pthread_mutex_lock(&agent.mu);
    snprintf(x->name, sizeof(x->name), "w%u", ++agent.n_watches);
    pthread_mutex_unlock(&agent.mu);
    fl_err e = fl_watch(agent.c, jstr(req, "prefix"), jstr(req, "from"), watch_cb, x, &x->w);
    if (e) {
        free(x);
        return e;
    }
    if (pthread_create(&x->monitor, NULL, watch_monitor, x)) {
        fl_watch_stop(x->w);
        fl_watch_join(x->w, NULL, NULL, 0);
        free(x);
        *why = "cannot start a thread";
        return FL_EINVAL;
    }
    pthread_mutex_lock(&agent.mu);
    x->next = agent.watches;
    agent.watches = x;
    pthread_mutex_unlock(&agent.mu);
    jw_str(w, "watch", x->name);
    return FL_OK;
}

/* Stop (if still running), wait for the monitor, unlink and free. */
static void watch_finish(struct watch *x)
{
    pthread_mutex_lock(&agent.mu);
    x->stop = 1;
    pthread_mutex_unlock(&agent.mu);
    pthread_join(x->monitor, NULL);
    pthread_mutex_lock(&agent.mu);
    for (struct watch **pp = &agent.watches; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    pthread_mutex_unlock(&agent.mu);
}

static fl_err op_watch_stop(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "watch");
    NEED(name, "watch is required");
    pthread_mutex_lock(&agent.mu);
    struct watch *x = agent.watches;
    while (x && strcmp(x->name, name) != 0)
        x = x->next;
    pthread_mutex_unlock(&agent.mu);
    NEED(x, "no such watch");
    watch_finish(x);
    jw_str(w, "last", x->last);
    free(x);
    return FL_OK;
}

/* ---- cooperative revocation ---- */

/* The registration whose reply this request thread writes next (set by op_on_revoke, opened
   by run_job once the reply is out). */
static __thread struct revoke_reg *reply_gate;

static void gate_open(struct revoke_reg *r)
{
    pthread_mutex_lock(&r->mu);
    r->answered = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* On the registration's watcher thread. */
static void revoke_cb(const struct fl_revoke *rv, void *ctx)
{
    struct revoke_reg *r = ctx;
    pthread_mutex_lock(&r->mu);
    while (!r->answered)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    struct jw w;
    jw_begin(&w);
    jw_str(&w, "event", "revoke");
    jw_str(&w, "session", r->sess);
    jw_str(&w, "name", rv->name);
    jw_int(&w, "token", (int64_t)rv->token);
    jw_int(&w, "deadline_ms", (int64_t)rv->deadline_ms);
    jw_key(&w, "reason");
    jw_strn(&w, rv->reason ? rv->reason : "", rv->reason ? rv->reason_len : 0);
    jw_key(&w, "by");
    jw_strn(&w, rv->by ? rv->by : "", rv->by ? rv->by_len : 0);
    jw_emit(&w);
}

static fl_err op_revoke(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    uint64_t token = 0;
    fl_err e = fl_lock_revoke(agent.c, name, (uint64_t)jnum(req, "deadline_ms", 0),
                              jstr(req, "reason"), &token);
    if (e == FL_OK)
        jw_int(w, "token", (int64_t)token);
    return e;
}

static fl_err op_on_revoke(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    NEED(jget(req, "token"), "token is required");
    struct revoke_reg *r = calloc(1, sizeof(*r));
    NEED(r, "out of memory");
    snprintf(r->sess, sizeof(r->sess), "%s", x->name);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    fl_err e = fl_revoke_watch(x->s, name, (uint64_t)jnum(req, "token", 0), revoke_cb, r, &r->w);
    if (e) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return e;
    }
    pthread_mutex_lock(&agent.mu);
    r->next = agent.revokes;
    agent.revokes = r;
    pthread_mutex_unlock(&agent.mu);
    reply_gate = r;
    return FL_OK;
}

/* On the registration's watcher thread, as revoke_cb. */
static void waiter_cb(const struct fl_waiter *wt, void *ctx)
{
    struct revoke_reg *r = ctx;
    pthread_mutex_lock(&r->mu);
    while (!r->answered)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    struct jw w;
    jw_begin(&w);
    jw_str(&w, "event", "waiter");
    jw_str(&w, "session", r->sess);
    jw_str(&w, "name", wt->name);
    jw_int(&w, "token", (int64_t)wt->token);
    jw_int(&w, "sid", (int64_t)wt->sid);
    jw_int(&w, "wait_ms", (int64_t)wt->wait_ms);
    jw_emit(&w);
}

/* on_waiter: a registration like on_revoke's (the same list, stopped the same way). */
static fl_err op_on_waiter(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    NEED(jget(req, "token"), "token is required");
    struct revoke_reg *r = calloc(1, sizeof(*r));
    NEED(r, "out of memory");
    snprintf(r->sess, sizeof(r->sess), "%s", x->name);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    fl_err e = fl_waiter_watch(x->s, name, (uint64_t)jnum(req, "token", 0), waiter_cb, r, &r->w);
    if (e) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return e;
    }
    pthread_mutex_lock(&agent.mu);
    r->next = agent.revokes;
    agent.revokes = r;
    pthread_mutex_unlock(&agent.mu);
    reply_gate = r;
    return FL_OK;
}

/* Stop, join and free the registrations of session `sess` (every one: NULL). No revoke line
   is written after this returns. */
static void revokes_stop(const char *sess)
{
    for (;;) {
        pthread_mutex_lock(&agent.mu);
        struct revoke_reg **pp = &agent.revokes;
        while (*pp && sess && strcmp((*pp)->sess, sess) != 0)
            pp = &(*pp)->next;
        struct revoke_reg *r = *pp;
        if (r)
            *pp = r->next;
        pthread_mutex_unlock(&agent.mu);
        if (!r)
            return;
        gate_open(r); /* its reply is out: the harness waited for it */
        fl_watch_stop(r->w);
        fl_watch_join(r->w, NULL, NULL, 0);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
    }
}

/* ---- lock state, history, latches and barriers ---- */

/* Nested JSON inside the reply being written: open with `[` or `{` after a key (or as an
   array item, key NULL), close with the matching bracket; items are separated here. */
static void jw_open(struct jw *w, const char *key, const char *bracket)
{
    if (key)
        jw_key(w, key);
    else if (!w->first)
        jw_raw(w, ",", 1);
    jw_raw(w, bracket, 1);
    w->first = 1;
}

static void jw_close(struct jw *w, const char *bracket)
{
    jw_raw(w, bracket, 1);
    w->first = 0;
}

/* ---- txn ---- */

/* A relation word ("=", "!=", "<", ">") into *rel: 0, or -1 if it is none of them. */
static int txn_rel(const struct jv *v, enum fl_txn_rel *rel)
{
    static const char *const w[] = {"=", "!=", "<", ">"};
    for (int i = 0; v->t == J_STR && i < 4; i++)
        if (strcmp(v->s, w[i]) == 0) {
            *rel = (enum fl_txn_rel)i;
            return 0;
        }
    return -1;
}

/* One compare (["rev", key, rel, n], ["value", key, rel, v], ["exists", key], ["missing",
   key], ["token", lock, rel, n], ["holds", lock, sid]) into t; FL_EINVAL with *why if it is
   not one, or the builder's own refusal (a relation the compare does not take). */
static fl_err txn_compare(fl_txn *t, const struct jv *c, const char **why)
{
    enum fl_txn_rel rel = FL_TXN_EQ;
    NEED(c->t == J_ARR && c->n >= 2 && c->its[0].t == J_STR && c->its[1].t == J_STR,
         "a compare is [kind, name, ...]");
    const char *k = c->its[0].s, *name = c->its[1].s;
    if (c->n == 2 && strcmp(k, "exists") == 0)
        return fl_txn_if_exists(t, name, 1);
    if (c->n == 2 && strcmp(k, "missing") == 0)
        return fl_txn_if_exists(t, name, 0);
    if (c->n == 3 && strcmp(k, "holds") == 0 && c->its[2].t == J_NUM)
        return fl_txn_if_holds(t, name, (uint64_t)c->its[2].num);
    NEED(c->n == 4 && txn_rel(&c->its[2], &rel) == 0, "a compare: unknown kind or relation");
    const struct jv *x = &c->its[3];
    if (strcmp(k, "value") == 0 && x->t == J_STR)
        return fl_txn_if_value(t, name, rel, x->s, x->slen);
    NEED(x->t == J_NUM, "a compare: unknown kind, or a number expected");
    if (strcmp(k, "rev") == 0)
        return fl_txn_if_rev(t, name, rel, (uint64_t)x->num);
    NEED(strcmp(k, "token") == 0, "a compare: unknown kind");
    return fl_txn_if_token(t, name, rel, (uint64_t)x->num);
}

/* One op (["put", key, value], ["del", key], ["incr", key, by]) of THEN (els 0) or ELSE. */
static fl_err txn_op(fl_txn *t, int els, const struct jv *o, const char **why)
{
    NEED(o->t == J_ARR && o->n >= 2 && o->its[0].t == J_STR && o->its[1].t == J_STR,
         "an op is [kind, key, ...]");
    const char *k = o->its[0].s, *key = o->its[1].s;
    if (o->n == 3 && strcmp(k, "put") == 0 && o->its[2].t == J_STR)
        return (els ? fl_txn_else_put : fl_txn_then_put)(t, key, o->its[2].s, o->its[2].slen);
    if (o->n == 2 && strcmp(k, "del") == 0)
        return (els ? fl_txn_else_del : fl_txn_then_del)(t, key);
    NEED(o->n == 3 && strcmp(k, "incr") == 0 && o->its[2].t == J_NUM, "an op: unknown kind");
    return (els ? fl_txn_else_incr : fl_txn_then_incr)(t, key, (int64_t)o->its[2].num);
}

static fl_err txn_build(fl_txn *t, const struct jv *req, const char **why)
{
    const struct jv *cs = jget(req, "if"), *th = jget(req, "then"), *el = jget(req, "else");
    NEED(!cs || cs->t == J_ARR, "if must be an array of compares");
    NEED(th && th->t == J_ARR, "then must be an array of ops");
    NEED(!el || el->t == J_ARR, "else must be an array of ops");
    fl_err e = FL_OK;
    for (size_t i = 0; cs && !e && i < cs->n; i++)
        e = txn_compare(t, &cs->its[i], why);
    for (size_t i = 0; !e && i < th->n; i++)
        e = txn_op(t, 0, &th->its[i], why);
    for (size_t i = 0; el && !e && i < el->n; i++)
        e = txn_op(t, 1, &el->its[i], why);
    const struct jv *f = jget(req, "fence");
    if (!e && f) {
        NEED(f->t == J_ARR && f->n == 2 && f->its[0].t == J_STR && f->its[1].t == J_NUM,
             "fence must be [name, token]");
        e = fl_txn_fence(t, f->its[0].s, (uint64_t)f->its[1].num);
    }
    if (e == FL_EINVAL && !*why)
        *why = "the TXN builder refused a compare or an op";
    return e;
}

static fl_err op_txn(const struct jv *req, struct jw *w, const char **why)
{
    fl_session *s;
    if (write_session(req, &s)) {
        *why = "no such session (never opened, or closed)";
        return FL_ESESSION;
    }
    fl_txn *t = fl_txn_new();
    NEED(t, "out of memory");
    *why = NULL;
    fl_err e = txn_build(t, req, why);
    if (e == FL_OK) {
        e = fl_txn_commit(agent.c, s, t);
        job_txn_op = fl_txn_failed_op(t);
    }
    if (e == FL_OK) {
        jw_bool(w, "succeeded", fl_txn_succeeded(t));
        jw_int(w, "rev", (int64_t)fl_txn_revision(t));
        if (fl_txn_results_known(t)) {
            jw_open(w, "results", "[");
            for (size_t i = 0; i < fl_txn_nresults(t); i++)
                jw_rawf(w, "%s%lld", i ? "," : "", (long long)fl_txn_result(t, i));
            jw_close(w, "]");
        } else {
            jw_key(w, "results");
            jw_raw(w, "null", 4);
        }
    }
    fl_txn_free(t);
    return e;
}

static fl_err op_lock_info(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    struct fl_lock_info li;
    fl_err e = fl_lock_info(agent.c, name, &li);
    if (e)
        return e;
    uint64_t holder = 0, count = 0;
    struct fl_lock_meta m;
    e = fl_lock_count(agent.c, name, &holder, &count);
    if (e == FL_OK)
        e = fl_lock_meta(agent.c, name, &m);
    if (e) {
        fl_lock_info_free(&li);
        return e;
    }
    jw_int(w, "holder", (int64_t)li.holder);
    jw_int(w, "token", (int64_t)li.token);
    jw_key(w, "value");
    jw_strn(w, m.value, m.value_len);
    jw_int(w, "max_hold_ms", (int64_t)m.maxhold_ms);
    jw_int(w, "transitions", (int64_t)m.transitions);
    jw_int(w, "count", (int64_t)count);
    fl_lock_meta_free(&m);
    fl_lock_info_free(&li);
    return FL_OK;
}

static fl_err op_lock_history(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    struct fl_history h;
    fl_err e = fl_lock_history(agent.c, name, (size_t)jnum(req, "count", 0),
                               (uint64_t)jnum(req, "before", 0), &h);
    if (e)
        return e;
    jw_open(w, "entries", "[");
    for (size_t i = 0; i < h.n; i++) {
        const struct fl_history_entry *x = &h.v[i];
        jw_open(w, NULL, "{");
        jw_int(w, "session", (int64_t)x->sid);
        jw_str(w, "session_name", x->session_name);
        jw_str(w, "value", x->value);
        jw_int(w, "token", (int64_t)x->token);
        jw_str(w, "ended_by", x->ended_by);
        jw_int(w, "granted_ms", (int64_t)x->granted_ms);
        jw_int(w, "ended_ms", (int64_t)x->ended_ms);
        jw_int(w, "held_ms", (int64_t)x->held_ms);
        jw_int(w, "waited_ms", (int64_t)x->waited_ms);
        jw_int(w, "waiters_total", (int64_t)x->waiters_total);
        jw_open(w, "waiters", "[");
        for (size_t k = 0; k < x->n_waiters; k++) {
            jw_open(w, NULL, "{");
            jw_int(w, "session", (int64_t)x->waiters[k].sid);
            jw_int(w, "waited_ms", (int64_t)x->waiters[k].waited_ms);
            jw_close(w, "}");
        }
        jw_close(w, "]");
        jw_close(w, "}");
    }
    jw_close(w, "]");
    fl_history_free(&h);
    return FL_OK;
}

static fl_err op_latch_create(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    NEED(jnum(req, "count", 0) >= 1, "count must be at least 1");
    return fl_latch_create(agent.c, name, (uint32_t)jnum(req, "count", 0));
}

static fl_err op_latch_join(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    return fl_latch_join(x->s, name);
}

static fl_err op_latch_countdown(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    uint64_t left = 0;
    fl_err e = fl_latch_countdown(x->s, name, &left);
    if (e == FL_OK)
        jw_int(w, "remaining", (int64_t)left);
    return e;
}

static fl_err op_latch_wait(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    return fl_latch_wait(agent.c, name, secs_ms(jnum(req, "wait", 0)));
}

static fl_err op_latch_info(const struct jv *req, struct jw *w, const char **why)
{
    static const char *states[2][3] = {{"counting", "zero", "broken"},
                                       {"filling", "full", "broken"}};
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    struct fl_latch_info li;
    fl_err e = fl_latch_info(agent.c, name, &li);
    if (e)
        return e;
    jw_str(w, "type", li.barrier ? "barrier" : "latch");
    jw_str(w, "state", li.state >= 0 && li.state <= 2 ? states[li.barrier != 0][li.state] : "?");
    jw_int(w, "count", (int64_t)li.count);
    jw_int(w, "remaining", (int64_t)li.remaining);
    jw_int(w, "broken_sid", (int64_t)li.broken_sid);
    return FL_OK;
}

static fl_err op_latch_delete(const struct jv *req, struct jw *w, const char **why)
{
    const char *name = jstr(req, "name");
    NEED(name, "name is required");
    int deleted = 0;
    fl_err e = fl_latch_delete(agent.c, name, &deleted);
    if (e == FL_OK)
        jw_bool(w, "deleted", deleted);
    return e;
}

static fl_err op_barrier_enter(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    NEED(jnum(req, "count", 0) >= 1, "count must be at least 1");
    return fl_barrier_enter(x->s, name, (uint32_t)jnum(req, "count", 0),
                            secs_ms(jnum(req, "wait", 0)));
}

static fl_err op_barrier_leave(const struct jv *req, struct jw *w, const char **why)
{
    struct sess *x = req_session(req);
    const char *name = jstr(req, "name");
    NEED_SESSION(x);
    NEED(name, "name is required");
    return fl_barrier_leave(x->s, name, secs_ms(jnum(req, "wait", 0)));
}

/* ---- dispatch ---- */

static const struct {
    const char *name;
    op_fn fn;
} ops[] = {
    {"session.open", op_session_open},
    {"session.close", op_session_close},
    {"session.safe", op_session_safe},
    {"lock", op_lock},
    {"unlock", op_unlock},
    {"lock.multi", op_lock_multi},
    {"unlock.multi", op_unlock_multi},
    {"sem.acquire", op_sem_acquire},
    {"sem.release", op_sem_release},
    {"elect.campaign", op_campaign},
    {"elect.resign", op_resign},
    {"elect.leader", op_leader},
    {"elect.observe", op_observe},
    {"put", op_put},
    {"del", op_del},
    {"incr", op_incr},
    {"get", op_get},
    {"txn", op_txn},
    {"fence.check", op_fence_check},
    {"watch.start", op_watch_start},
    {"watch.stop", op_watch_stop},
    {"revoke", op_revoke},
    {"on_revoke", op_on_revoke},
    {"on_waiter", op_on_waiter},
    {"lock.info", op_lock_info},
    {"lock.history", op_lock_history},
    {"latch.create", op_latch_create},
    {"latch.join", op_latch_join},
    {"latch.countdown", op_latch_countdown},
    {"latch.wait", op_latch_wait},
    {"latch.info", op_latch_info},
    {"latch.delete", op_latch_delete},
    {"barrier.enter", op_barrier_enter},
    {"barrier.leave", op_barrier_leave},
};

struct job {
    struct jv req;
    int64_t id;
    op_fn fn;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    struct jw w;
    const char *why = NULL;
    jw_begin(&w);
    jw_int(&w, "id", j->id);
    jw_bool(&w, "ok", 1);
    job_txn_op = 0;
    fl_err e = j->fn(&j->req, &w, &why);
    if (e == FL_OK) {
        jw_emit(&w);
    } else {
        free(w.buf);
        if (why)
            reply_err(j->id, e == FL_ESESSION ? "SESSION" : "OTHER", why);
        else
            reply_err(j->id, err_word(e, fl_client_errmsg(agent.c)), fl_client_errmsg(agent.c));
    }
    if (reply_gate) {
        gate_open(reply_gate);
        reply_gate = NULL;
    }
    jv_free(&j->req);
    free(j);
    pthread_mutex_lock(&agent.mu);
    agent.inflight--;
    pthread_cond_broadcast(&agent.cv);
    pthread_mutex_unlock(&agent.mu);
    return NULL;
}

/* quit, or EOF: wait for the requests in flight (at most 10 s), close every session and
   watcher, answer, exit 0. A request still waiting after that keeps the client: then the
   process leaves without freeing it (_exit skips the leak check of what it still uses). */
static void quit(int64_t id)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&agent.mu);
    while (agent.inflight > 0 &&
           pthread_cond_timedwait(&agent.cv, &agent.mu, &until) != ETIMEDOUT) {
    }
    int busy = agent.inflight > 0;
    pthread_mutex_unlock(&agent.mu);
    if (busy) {
        if (id >= 0)
            reply_err(id, "OTHER", "requests still running at quit");
        fflush(stdout);
        _exit(0);
    }
    revokes_stop(NULL);
    struct sess *x;
    while ((x = sess_find(NULL))) {
        sess_unlink(x);
        fl_session_close(x->s);
        free(x);
    }
    while (agent.watches) {
        struct watch *wx = agent.watches;
        watch_finish(wx);
        free(wx);
    }
    fl_client_free(agent.c);
    if (id >= 0) {
        struct jw w;
        jw_begin(&w);
        jw_int(&w, "id", id);
        jw_bool(&w, "ok", 1);
        jw_emit(&w);
    }
    exit(0);
}

static void dispatch(const char *line, size_t len)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j || json_parse(line, len, &j->req)) {
        free(j);
        fprintf(stderr, "fl_agent: not a JSON object: %.*s\n", (int)(len > 200 ? 200 : len), line);
        reply_err(-1, "OTHER", "not a JSON object");
        return;
    }
    j->id = (int64_t)jnum(&j->req, "id", -1);
    const char *op = jstr(&j->req, "op");
    if (op && strcmp(op, "quit") == 0) {
        jv_free(&j->req);
        int64_t id = j->id;
        free(j);
        quit(id);
    }
    for (size_t i = 0; op && i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strcmp(ops[i].name, op) == 0)
            j->fn = ops[i].fn;
    if (!j->fn) {
        reply_err(j->id, "OTHER", "unknown op");
        jv_free(&j->req);
        free(j);
        return;
    }
    pthread_mutex_lock(&agent.mu);
    agent.inflight++;
    pthread_mutex_unlock(&agent.mu);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, run_job, j)) {
        reply_err(j->id, "OTHER", "cannot start a thread");
        jv_free(&j->req);
        free(j);
        pthread_mutex_lock(&agent.mu);
        agent.inflight--;
        pthread_mutex_unlock(&agent.mu);
    }
    pthread_attr_destroy(&at);
}

static void ready(void)
{
    struct fl_options o;
    fl_options_init(&o);
    const char *t = getenv("FL_TIMEOUT");
    if (t && *t)
        o.timeout_ms = (int)secs_ms(strtod(t, NULL));
    o.user = getenv("FL_USER");
    o.password = getenv("FL_PASSWORD");
    o.tls_ca = getenv("FL_TLS_CA");
    o.tls_cert = getenv("FL_TLS_CERT");
    o.tls_key = getenv("FL_TLS_KEY");
    const char *ep = getenv("FL_ENDPOINTS");
    fl_err e = FL_EINVAL;
    agent.c = ep ? fl_client_new(ep, &o, &e) : NULL;
    struct jw w;
    jw_begin(&w);
    jw_bool(&w, "ready", agent.c != NULL);
    if (agent.c) {
        jw_str(&w, "client", "c");
        jw_str(&w, "version", FL_VERSION);
    } else {
        jw_str(&w, "error", err_word(e, NULL));
        jw_str(&w, "message", ep ? fl_strerror(e) : "FL_ENDPOINTS is not set");
    }
    jw_emit(&w);
    if (!agent.c)
        exit(0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* a runner that closed our stdout: exit on EPIPE, quietly */
    ready();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0)
            continue;
        if (n > AGENT_LINE_MAX) {
            reply_err(-1, "OTHER", "request line too long");
            continue;
        }
        dispatch(line, (size_t)n);
    }
    free(line);
    quit(-1);
    return 0;
}
