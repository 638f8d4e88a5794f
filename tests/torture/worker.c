/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker: one client loop of the torture suite (tests/torture/torture.py) on libfencelock. It
 * owns its fl_client, at most one fl_session at a time and its history file, to which it
 * appends one JSON line per event with a single write() (O_APPEND), so several workers may
 * share a file.
 *
 *   worker --endpoints EP --workload W --proc-base P --ops N --seconds S --seed X
 *          --history FILE [--ttl ms] [--pause-ms max] [--prefix P] [--observe 1]
 *          [--group N] [--user U --password-file F] [--tls-ca F] [--tls-cert F --tls-key F]
 *          (--user and --tls-*: torture --secure; --group: latch, the workers of the workload)
 *
 * History contract (read by tests/torture/checkers*.py and tests/porcupine; every field in
 * tests/torture/HISTORY.md):
 *   {"proc":int,"type":"invoke|ok|fail|info","f":...,"workload":...,"time":ns, ...}
 * "time" is CLOCK_MONOTONIC in ns. Every ok/fail/info completes the last invoke of the same
 * proc. After an info (unknown outcome) the worker goes on as a new proc, P + k*1000.
 *
 * Workloads:
 *   register        r0..r4: read (ok value: string|null), write (value), cas (expected, value:
 *                   KV.GET then PUT IFREV mod_rev; only the PUT is recorded). Writes carry the
 *                   session (REQ sid seq: retries apply once).
 *   mutex           lock "mutex": acquire (ok token), hold, release. When the session ends
 *                   (lost, or closed after an info) the release of whatever it held is the op
 *                   f "expire" of the same proc ("session": sid), its last: invoke dated back
 *                   to a time before which the servers cannot have expired it (the last safe
 *                   deadline seen, or the close), so it may overlap the proc's earlier ops; ok
 *                   once a linearizable LOCK.INFO shows the session neither holds nor waits
 *                   (info if that was never seen).
 *   fenced-counter  lock "counter-lock", key "counter": acquire, read, pause (a whole-process
 *                   freeze, sometimes longer than the TTL), write read+1 with FENCE and no
 *                   session (a naive client), release. With --revoke-pct N, N % of the ops
 *                   first revoke whoever holds the lock (LOCK.REVOKE, a deadline of 1-50 ms;
 *                   not in the history: a fault, as a nemesis's), so holders lose the lock
 *                   while they pause and their late writes must be refused by the fence.
 *   control         the same on "control-lock"/"control" with a plain PUT: loses updates.
 *   rw              read-write lock "rw" in shared or exclusive mode (worker_rw.c).
 *   watch           XREAD watchers of the event stream, --prefix P for a prefix stream
 *                   (worker_watch.c).
 *   sem, elect      semaphore "sem" (limit 3) and election "elect"; with --observe 1 an elect
 *                   worker observes the election instead (worker_prims.c).
 *   deadlock        two of three locks "dl/0".."dl/2" in random order: waits that close
 *                   cycles, refused -DEADLOCK (worker_deadlock.c).
 *   multilock       LOCK.MULTI over overlapping sets of "ml/a".."ml/d" (worker_multi.c).
 *   latch           countdown latches "lt/K" and double barriers "bt/K" of the --group
 *                   workers, met by the clock; participants' sessions end before they count
 *                   down (worker_latch.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fencelock.h"
#include "worker.h"

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t rnd(struct worker *w, uint64_t n)
{
    /* xorshift64* */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return n ? (w->rng * 2685821657736338717ULL) % n : 0;
}

int proc_of(const struct worker *w)
{
    return w->proc_base + w->gen * 1000;
}

void ev_add(struct ev *e, const char *fmt, ...)
{
    if (e->n >= sizeof(e->buf))
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(e->buf + e->n, sizeof(e->buf) - e->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        e->n += (size_t)k;
    if (e->n > sizeof(e->buf))
        e->n = sizeof(e->buf);
}

void ev_esc(struct ev *e, const char *s, size_t n)
{
    for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n; p++) {
        if (*p == '"' || *p == '\\')
            ev_add(e, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            ev_add(e, "\\u%04x", *p);
        else
            ev_add(e, "%c", *p);
    }
}

void ev_str(struct ev *e, const char *key, const char *s)
{
    if (!s) {
        ev_add(e, ",\"%s\":null", key);
        return;
    }
    ev_add(e, ",\"%s\":\"", key);
    ev_esc(e, s, strlen(s));
    ev_add(e, "\"");
}

void ev_begin(struct ev *e, const struct worker *w, int proc, const char *type, const char *f,
              int64_t t)
{
    e->n = 0;
    ev_add(e, "{\"proc\":%d,\"type\":\"%s\",\"f\":\"%s\",\"workload\":\"%s\",\"time\":%" PRId64,
           proc, type, f, w->wl_name, t);
}

void ev_emit(struct worker *w, struct ev *e)
{
    if (e->n + 3 > sizeof(e->buf)) {
        /* a cut line would be garbage to the checkers: stop loudly (a non-zero exit is a
           problem of the run) */
        fprintf(stderr, "worker: history line over %zu bytes\n", sizeof(e->buf));
        exit(3);
    }
    e->buf[e->n++] = '}';
    e->buf[e->n++] = '\n';
    const char *p = e->buf;
    size_t left = e->n;
    while (left > 0) {
        ssize_t k = write(w->fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            perror("worker: history write");
            exit(2);
        }
        p += k;
        left -= (size_t)k;
    }
}

/* The completion of the current proc's op: counts it; an info moves on to a new proc. */
void ev_complete(struct worker *w, struct ev *e, const char *type)
{
    ev_emit(w, e);
    if (!strcmp(type, "ok"))
        w->n_ok++;
    else if (!strcmp(type, "fail"))
        w->n_fail++;
    else
        w->n_info++;
}

void after_info(struct worker *w, const char *type)
{
    if (!strcmp(type, "info"))
        w->gen++;
}

/* How a mutating call ended: a definite refusal is "fail", anything unsure "info". */
const char *write_outcome(fl_err e, fl_err refused)
{
    if (e == FL_OK)
        return "ok";
    if (e == refused || e == FL_EIFREV || e == FL_ESTALE || e == FL_ETOOLARGE || e == FL_EINVAL ||
        e == FL_ESERVER || e == FL_ENOTHOLDER)
        return "fail";
    return "info"; /* FL_EUNKNOWN, FL_EUNAVAILABLE, FL_ETIMEOUT, FL_ESESSION, FL_EPROTO, ... */
}

void ev_error(struct ev *e, struct worker *w, fl_err err)
{
    ev_str(e, "error", fl_strerror(err));
    ev_str(e, "msg", fl_client_errmsg(w->c));
}

int time_left(const struct worker *w)
{
    return now_ns() < w->end_ns && (w->max_ops <= 0 || w->ops < w->max_ops);
}

void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/*
 * A stop-the-world pause: the whole process, the session's keepalive thread included, is
 * frozen for ms milliseconds, as a garbage collector or a VM migration would freeze it. A
 * child process sends SIGSTOP, sleeps, sends SIGCONT and exits; short pauses just sleep.
 */
void gc_pause(int64_t ms)
{
    if (ms < 50) {
        sleep_ms(ms);
        return;
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        sleep_ms(ms);
        return;
    }
    if (child == 0) {
        kill(parent, SIGSTOP);
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        kill(parent, SIGCONT);
        _exit(0);
    }
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void on_lost(fl_session *s, void *ctx)
{
    struct worker *w = ctx;
    atomic_store(&w->lost_at_ms, (long long)fl_now_ms());
}

void note_safe(struct worker *w)
{
    if (!w->s)
        return;
    int64_t su = fl_session_safe_until(w->s);
    if (su > w->safe_seen)
        w->safe_seen = su;
}

/* A live session in w->s, opened (after dropping a lost one) if needed; 0 if none by the end. */
int ensure_session(struct worker *w)
{
    if (w->s && fl_session_is_lost(w->s)) {
        fl_session_abandon(w->s);
        w->s = NULL;
        w->n_lost++;
    }
    while (!w->s && now_ns() < w->end_ns) {
        char name[64];
        snprintf(name, sizeof(name), "torture-%s-%d", w->wl_name, proc_of(w));
        fl_err e = fl_session_open(w->c, w->ttl_ms, 0, name, &w->s);
        if (e == FL_OK) {
            atomic_store(&w->lost_at_ms, 0);
            w->safe_seen = 0;
            fl_session_on_lost(w->s, on_lost, w);
            note_safe(w);
            return 1;
        }
        w->s = NULL;
        sleep_ms(50 + (int64_t)rnd(w, 100));
    }
    return w->s != NULL;
}

/* ---- register ---- */

static void op_register(struct worker *w)
{
    char key[8], val[64];
    snprintf(key, sizeof(key), "r%d", (int)rnd(w, 5));
    int kind = (int)rnd(w, 3);
    struct ev e;
    if (kind == 0) {
        int proc = proc_of(w);
        ev_begin(&e, w, proc, "invoke", "read", now_ns());
        ev_str(&e, "key", key);
        ev_emit(w, &e);
        w->ops++;
        struct fl_kv kv;
        fl_err err = fl_get(w->c, key, &kv);
        const char *type = err == FL_OK || err == FL_ENOTFOUND ? "ok" : "fail";
        ev_begin(&e, w, proc, type, "read", now_ns());
        ev_str(&e, "key", key);
        if (err == FL_OK) {
            ev_str(&e, "value", kv.value);
            fl_kv_free(&kv);
        } else if (err == FL_ENOTFOUND) {
            ev_str(&e, "value", NULL);
        } else {
            ev_error(&e, w, err);
        }
        ev_complete(w, &e, type);
        return;
    }
    if (!ensure_session(w))
        return;
    int proc = proc_of(w);
    snprintf(val, sizeof(val), "p%d-%ld", proc, ++w->uniq);
    struct fl_write_opts opts = {0};
    char *expected = NULL;
    const char *f = "write";
    if (kind == 2) {
        f = "cas";
        struct fl_kv kv;
        fl_err err = fl_get(w->c, key, &kv);
        if (err == FL_OK) {
            expected = strdup(kv.value);
            opts.ifrev = kv.mod_rev;
            fl_kv_free(&kv);
        } else if (err != FL_ENOTFOUND) {
            return; /* no read, no cas: nothing recorded */
        }
        opts.use_ifrev = 1;
    }
    ev_begin(&e, w, proc, "invoke", f, now_ns());
    ev_str(&e, "key", key);
    if (kind == 2)
        ev_str(&e, "expected", expected);
    ev_str(&e, "value", val);
    ev_emit(w, &e);
    w->ops++;
    uint64_t rev = 0;
    fl_err err = fl_put(w->c, w->s, key, val, strlen(val), kind == 2 ? &opts : NULL, &rev);
    /* A failed cas tells the checker the register did not hold `expected`: only -IFREV. */
    const char *type = write_outcome(err, FL_EIFREV);
    if (kind == 2 && err != FL_OK && err != FL_EIFREV)
        type = "info";
    ev_begin(&e, w, proc, type, f, now_ns());
    ev_str(&e, "key", key);
    if (kind == 2)
        ev_str(&e, "expected", expected);
    ev_str(&e, "value", val);
    if (err == FL_OK)
        ev_add(&e, ",\"rev\":%" PRIu64, rev);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    after_info(w, type);
    free(expected);
}

/* ---- locks shared by mutex and the counters ---- */

/* acquire: 1 if granted (token in *token); an info moves to a new proc. */
static int acquire(struct worker *w, const char *lock, uint64_t *token, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    note_safe(w);
    ev_begin(&e, w, proc, "invoke", "acquire", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_lock(w->s, lock, 300 + rnd(w, 2000), token);
    const char *type = err == FL_OK ? "ok" : err == FL_ETIMEOUT ? "fail" : "info";
    ev_begin(&e, w, proc, type, "acquire", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err == FL_OK)
        ev_add(&e, ",\"token\":%" PRIu64, *token);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    *outcome = type;
    return err == FL_OK;
}

const char *release(struct worker *w, const char *lock)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "release", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_unlock(w->s, lock);
    const char *type = err == FL_OK ? "ok" : "info";
    ev_begin(&e, w, proc, type, "release", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err != FL_OK)
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    return type;
}

/* A pause while holding a lock: mostly short, sometimes up to pause_ms (past the TTL). */
void hold_pause(struct worker *w)
{
    int64_t ms = (int64_t)rnd(w, 30);
    if (w->pause_ms > 0 && rnd(w, 5) == 0)
        ms = (int64_t)rnd(w, (uint64_t)w->pause_ms + 1);
    gc_pause(ms);
}

/* Is `sid` gone from lock `name` (neither holder nor waiter), by a linearizable read? */
static int lock_free_of(struct worker *w, const char *name, uint64_t sid)
{
    struct fl_lock_info li;
    fl_err e = fl_lock_info(w->c, name, &li);
    if (e == FL_ENOTFOUND)
        return 1;
    if (e != FL_OK)
        return 0;
    int gone = li.holder != sid;
    for (size_t i = 0; i < li.n_waiters; i++)
        if (li.waiters[i] == sid)
            gone = 0;
    fl_lock_info_free(&li);
    return gone;
}

/*
 * The session ends (lost, or given up after an info): close it if it is still live, then
 * record the release of `lock` by the servers as the op "expire", the proc's last; it
 * completes when gone() (a linearizable read) shows the session neither holds nor waits.
 */
void end_lock_session(struct worker *w, const char *lock,
                      int (*gone)(struct worker *w, const char *name, uint64_t sid))
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    int64_t t0 = w->safe_seen * 1000000;
    if (fl_session_is_lost(w->s)) {
        fl_session_abandon(w->s);
        w->n_lost++;
    } else {
        int64_t t = now_ns();
        if (t0 == 0 || t < t0)
            t0 = t;
        fl_session_close(w->s);
    }
    w->s = NULL;
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "expire", t0);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    int64_t give_up = now_ns() + 30000000000LL;
    int seen = 0;
    while (!(seen = gone(w, lock, sid)) && now_ns() < give_up)
        sleep_ms(50);
    const char *type = seen ? "ok" : "info";
    ev_begin(&e, w, proc, type, "expire", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    long long lost_at = atomic_load(&w->lost_at_ms);
    if (lost_at)
        ev_add(&e, ",\"lost_at\":%lld", lost_at * 1000000);
    ev_emit(w, &e);
    w->gen++;
}

static void op_mutex(struct worker *w)
{
    if (!ensure_session(w))
        return;
    uint64_t token;
    const char *outcome;
    if (!acquire(w, "mutex", &token, &outcome)) {
        if (!strcmp(outcome, "info") || fl_session_is_lost(w->s))
            end_lock_session(w, "mutex", lock_free_of);
        return;
    }
    hold_pause(w);
    note_safe(w);
    if (fl_session_is_lost(w->s)) {
        end_lock_session(w, "mutex", lock_free_of);
        return;
    }
    if (!strcmp(release(w, "mutex"), "info"))
        end_lock_session(w, "mutex", lock_free_of);
}

/* ---- fenced-counter and control ---- */

static void op_counter(struct worker *w)
{
    int fenced = w->wl == WL_FENCED;
    const char *lock = fenced ? "counter-lock" : "control-lock";
    const char *key = fenced ? "counter" : "control";
    if (!ensure_session(w))
        return;
    if (fenced && w->revoke_pct && (int)rnd(w, 100) < w->revoke_pct)
        fl_lock_revoke(w->c, lock, 1 + rnd(w, 50), "torture", NULL); /* any outcome: a fault */
    uint64_t token;
    const char *outcome;
    if (!acquire(w, lock, &token, &outcome)) {
        after_info(w, outcome);
        return;
    }
    int proc = proc_of(w), gen = w->gen;
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "read", now_ns());
    ev_emit(w, &e);
    w->ops++;
    struct fl_kv kv;
    fl_err err = fl_get(w->c, key, &kv);
    long long v = 0;
    const char *type = err == FL_OK || err == FL_ENOTFOUND ? "ok" : "fail";
    ev_begin(&e, w, proc, type, "read", now_ns());
    if (err == FL_OK) {
        v = strtoll(kv.value, NULL, 10);
        fl_kv_free(&kv);
    }
    if (*type == 'o')
        ev_add(&e, ",\"value\":%lld", v);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    if (*type == 'o' && time_left(w)) {
        hold_pause(w);
        char val[32];
        snprintf(val, sizeof(val), "%lld", v + 1);
        struct fl_write_opts fence = {.fence_name = lock, .fence_token = token};
        ev_begin(&e, w, proc, "invoke", "write", now_ns());
        ev_add(&e, ",\"value\":%lld,\"token\":%" PRIu64, v + 1, token);
        ev_emit(w, &e);
        w->ops++;
        uint64_t rev = 0;
        /* No session: a naive client that does not check its lease before it writes. */
        err = fl_put(w->c, NULL, key, val, strlen(val), fenced ? &fence : NULL, &rev);
        type = write_outcome(err, FL_ESTALE);
        ev_begin(&e, w, proc, type, "write", now_ns());
        ev_add(&e, ",\"value\":%lld,\"token\":%" PRIu64, v + 1, token);
        if (err == FL_OK)
            ev_add(&e, ",\"rev\":%" PRIu64, rev);
        else
            ev_error(&e, w, err);
        ev_complete(w, &e, type);
        after_info(w, type);
    }
    after_info(w, release(w, lock)); /* also after an info write, as the next proc */
    if (w->gen == gen && fl_session_is_lost(w->s))
        w->gen++; /* a new session: a new proc */
}

/* ---- main ---- */

fl_client *new_client(const struct worker *w)
{
    struct fl_options o;
    fl_options_init(&o);
    o.timeout_ms = 3000;
    o.connect_timeout_ms = 500;
    o.user = w->user;
    o.password = w->user ? w->password : NULL;
    o.tls_ca = w->tls_ca;
    o.tls_cert = w->tls_cert;
    o.tls_key = w->tls_key;
    fl_err err;
    fl_client *c = fl_client_new(w->endpoints, &o, &err);
    if (!c)
        fprintf(stderr, "worker: fl_client_new: %s\n", fl_strerror(err));
    return c;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: worker --endpoints EP --workload register|mutex|fenced-counter|"
            "control|rw|watch|sem|elect|deadlock|multilock|latch --proc-base P --ops N "
            "--seconds S --seed "
            "X --history FILE "
            "[--ttl ms] [--pause-ms max] [--revoke-pct N] [--prefix P] [--observe 1] [--group N] "
            "[--user U "
            "--password-file F] [--tls-ca F] [--tls-cert F --tls-key F]\n");
    exit(2);
}

/* --password-file: its first line (a password never goes on the command line). */
static void read_password(struct worker *w, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(w->password, sizeof(w->password), f)) {
        fprintf(stderr, "worker: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    w->password[strcspn(w->password, "\r\n")] = 0;
}

static void parse_args(struct worker *w, int argc, char **argv, const char **history)
{
    double seconds = 0;
    uint64_t seed = 1;
    w->ttl_ms = 1500;
    w->proc_base = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--endpoints"))
            w->endpoints = v;
        else if (!strcmp(a, "--workload"))
            w->wl_name = v;
        else if (!strcmp(a, "--proc-base"))
            w->proc_base = atoi(v);
        else if (!strcmp(a, "--ops"))
            w->max_ops = atol(v);
        else if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--history"))
            *history = v;
        else if (!strcmp(a, "--ttl"))
            w->ttl_ms = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--pause-ms"))
            w->pause_ms = atoi(v);
        else if (!strcmp(a, "--revoke-pct"))
            w->revoke_pct = atoi(v);
        else if (!strcmp(a, "--prefix"))
            w->prefix = v;
        else if (!strcmp(a, "--observe"))
            w->observe = atoi(v);
        else if (!strcmp(a, "--group"))
            w->group = atoi(v);
        else if (!strcmp(a, "--user"))
            w->user = v;
        else if (!strcmp(a, "--password-file"))
            read_password(w, v);
        else if (!strcmp(a, "--tls-ca"))
            w->tls_ca = v;
        else if (!strcmp(a, "--tls-cert"))
            w->tls_cert = v;
        else if (!strcmp(a, "--tls-key"))
            w->tls_key = v;
        else
            usage();
    }
    if (!w->endpoints || !w->wl_name || !*history || w->proc_base < 0 || w->proc_base >= 500 ||
        seconds <= 0 || w->ttl_ms == 0)
        usage();
    if (!strcmp(w->wl_name, "register"))
        w->wl = WL_REGISTER;
    else if (!strcmp(w->wl_name, "mutex"))
        w->wl = WL_MUTEX;
    else if (!strcmp(w->wl_name, "fenced-counter"))
        w->wl = WL_FENCED;
    else if (!strcmp(w->wl_name, "control"))
        w->wl = WL_CONTROL;
    else if (!strcmp(w->wl_name, "rw"))
        w->wl = WL_RW;
    else if (!strcmp(w->wl_name, "watch"))
        w->wl = WL_WATCH;
    else if (!strcmp(w->wl_name, "sem"))
        w->wl = WL_SEM;
    else if (!strcmp(w->wl_name, "elect"))
        w->wl = WL_ELECT;
    else if (!strcmp(w->wl_name, "deadlock"))
        w->wl = WL_DEADLOCK;
    else if (!strcmp(w->wl_name, "multilock"))
        w->wl = WL_MULTI;
    else if (!strcmp(w->wl_name, "latch"))
        w->wl = WL_LATCH;
    else
        usage();
    w->end_ns = now_ns() + (int64_t)(seconds * 1e9);
    w->rng = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (!w->rng)
        w->rng = 1;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    struct worker w = {0};
    const char *history = NULL;
    parse_args(&w, argc, argv, &history);
    w.fd = open(history, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (w.fd < 0) {
        perror(history);
        return 2;
    }
    w.c = new_client(&w);
    if (!w.c)
        return 2;
    while (time_left(&w)) {
        if (w.wl == WL_REGISTER)
            op_register(&w);
        else if (w.wl == WL_MUTEX)
            op_mutex(&w);
        else if (w.wl == WL_RW)
            op_rw(&w);
        else if (w.wl == WL_WATCH)
            run_watch(&w);
        else if (w.wl == WL_SEM)
            op_sem(&w);
        else if (w.wl == WL_ELECT && w.observe)
            run_observe(&w);
        else if (w.wl == WL_ELECT)
            op_elect(&w);
        else if (w.wl == WL_DEADLOCK)
            op_deadlock(&w);
        else if (w.wl == WL_MULTI)
            op_multi(&w);
        else if (w.wl == WL_LATCH)
            op_latch(&w);
        else
            op_counter(&w);
        sleep_ms((int64_t)rnd(&w, 10));
    }
    if (w.s) {
        if (fl_session_is_lost(w.s))
            fl_session_abandon(w.s);
        else
            fl_session_close(w.s);
    }
    fl_client_free(w.c);
    close(w.fd);
    printf("worker %s proc-base %d: %ld ops (%ld ok, %ld fail, %ld info), %d procs, %ld sessions "
           "lost\n",
           w.wl_name, w.proc_base, w.ops, w.n_ok, w.n_fail, w.n_info, w.gen + 1, w.n_lost);
    return 0;
}
