/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fl_reads — lockbench's fencelock-only workloads W5 (reads) and W6 (sessions), in raw RESP
 * over hiredis to the leader (the library's one-keepalive-thread-per-session model is not what
 * these measure). Owns its connections and the sessions it opens; everything it opened is
 * closed or left to expire (W6: TTL 10 s) when it returns.
 *
 * W5: one connection, one command at a time, interleaved: PUT (the reference), GET, KV.GET,
 *     FENCE.CHECK, LOCK.INFO, SESSION.KEEPALIVE, INCR, LOCK.WAITS, SESSION.LIST, LOCK.HISTORY,
 *     LATCH.INFO and TXN (a holder's IF HOLDS-guarded PUT and INCR), PUT, GET, ... for a bounded
 *     count of rounds and
 *     time; p50/p99 per command and its ratio to PUT's. Then each of GET and SESSION.KEEPALIVE
 *     pipelined on one connection (4 x count of each, W5_WINDOW in flight): answers per second.
 *     Interleaved with them, the HTTP API's twin of LOCK.INFO: `GET /v1/locks/{name}` on the
 *     leader's HTTP port (client port + FR_HTTP_OFFSET, bench/servers/fencelock.sh's layout),
 *     linearizable and with ?stale, one request per connection as the port serves them (the
 *     connect is part of the time, as for curl).
 * W6: opens `sessions` sessions (TTL ttl_ms) over W6_CONNS pipelined connections, then keeps
 *     every one alive every TTL/3 for `seconds`, paced evenly, at most W6_WINDOW keepalives in
 *     flight per connection: keepalive p50/p99 (send to answer), sessions lost (-NOSESSION),
 *     other errors; meanwhile one W1 client (the fencelock driver: LOCK + UNLOCK through
 *     libfencelock) measures its pair latency, compared with the same client idle just before.
 * W6C: the C client's own model: N fl_sessions, each with its keepalive thread, in this one
 *     process: the smallest safe margin over time and the sessions lost.
 * W7: many idle connections to the leader, a few active, a W1 client beside them.
 * Each prints one JSON line. Errors go into the JSON; nothing aborts.
 */
#include "driver.h"
#include "flraw.h"

#include <fencelock.h>
#include <hiredis/hiredis.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define W5_WINDOW 1000   /* pipelined reads in flight (the server queues up to 1024) */
#define FR_HTTP_OFFSET 2 /* the HTTP port is the client port + 2 (bench/servers/fencelock.sh) */
#define W6_CONNS 4
#define W6_WINDOW 512

static double fr_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fr_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p50 and p99 of v[0..n) (sorts v). */
static void fr_pct(double *v, long n, double *p50, double *p99)
{
    *p50 = *p99 = 0;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof(double), fr_cmp);
    *p50 = v[n / 2];
    *p99 = v[n * 99 / 100];
}

/* A connection to the leader: tries each endpoint, follows -NOTLEADER host:port once. */
redisContext *fr_connect_leader(const char *endpoints, char *err, size_t errlen)
{
    char list[512];
    snprintf(list, sizeof(list), "%s", endpoints);
    struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
    for (char *save = NULL, *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
        char host[128];
        snprintf(host, sizeof(host), "%s", ep);
        for (int hop = 0; hop < 2; hop++) {
            char *colon = strrchr(host, ':');
            if (!colon)
                break;
            *colon = 0;
            redisContext *c = redisConnectWithTimeout(host, atoi(colon + 1), tv);
            if (!c || c->err) {
                if (c)
                    redisFree(c);
                break;
            }
            redisSetTimeout(c, tv);
            redisReply *r = redisCommand(c, "GET fl-bench-probe");
            if (r && r->type != REDIS_REPLY_ERROR) {
                freeReplyObject(r);
                return c;
            }
            int follow = r && !strncmp(r->str, "NOTLEADER ", 10);
            if (follow)
                snprintf(host, sizeof(host), "%s", r->str + 10);
            if (r)
                freeReplyObject(r);
            redisFree(c);
            if (!follow)
                break;
        }
    }
    snprintf(err, errlen, "no ready leader among %s", endpoints);
    return NULL;
}

static long long fr_int(redisContext *c, const char *what, char *err, size_t errlen,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static long long fr_int(redisContext *c, const char *what, char *err, size_t errlen,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else
        snprintf(err, errlen, "%s: %s", what, r && r->str ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    return v;
}

/* A command whose reply must be +OK: 0, or -1 with err. */
static int fr_ok(redisContext *c, const char *what, char *err, size_t errlen, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    int ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
    if (!ok)
        snprintf(err, errlen, "%s: %s", what, r && r->str ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

/* ,"error":"..." when err is set (quotes and control bytes replaced). */
static void fr_json_err(const char *err)
{
    if (!*err)
        return;
    printf(",\"error\":\"");
    for (; *err; err++)
        putchar(*err == '"' || *err == '\\' || (unsigned char)*err < 0x20 ? '\'' : *err);
    putchar('"');
}

/* ---- W5 ---- */

struct w5_cmd {
    const char *name;
    char line[160];   /* the command, a redisCommand format without arguments */
    const char *http; /* or a path on the leader's HTTP port: GET it (a 200 is the answer) */
    double p50, p99, rate;
    long n;
};

/* GET path on the HTTP port of c's server, on a connection of its own (the port answers one
 * request per connection); 0 on a 200 read to its end, else -1 with err. */
static int w5_http_get(redisContext *c, const char *path, char *err, size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(c->tcp.port + FR_HTTP_OFFSET)};
    char buf[4096];
    int one = 1, rc = -1, fd = socket(AF_INET, SOCK_STREAM, 0);
    int n = snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", path);
    if (fd < 0 || inet_pton(AF_INET, c->tcp.host, &a.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        snprintf(err, errlen, "HTTP %s: cannot connect: %s", path, strerror(errno));
        goto out;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (write(fd, buf, (size_t)n) != n) {
        snprintf(err, errlen, "HTTP %s: not sent", path);
        goto out;
    }
    size_t got = 0;
    ssize_t k;
    while ((k = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        if ((got += (size_t)k) == sizeof(buf) - 1)
            got = 16; /* keep the status line, drop the rest of a long body */
    buf[got] = 0;
    if (k < 0 || strncmp(buf, "HTTP/1.1 200", 12) != 0)
        snprintf(err, errlen, "HTTP %s: %.60s", path, k < 0 ? strerror(errno) : buf);
    else
        rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* One command, timed into lat[k->n]; -1 on an error reply (STALE is an answer). */
static int w5_one(redisContext *c, struct w5_cmd *k, double *lat, char *err, size_t errlen)
{
    double t0 = fr_now_ms();
    if (k->http) {
        if (w5_http_get(c, k->http, err, errlen))
            return -1;
        lat[k->n++] = fr_now_ms() - t0;
        return 0;
    }
    redisReply *r = redisCommand(c, k->line);
    double t1 = fr_now_ms();
    int bad = !r || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "STALE", 5));
    if (bad)
        snprintf(err, errlen, "%s: %s", k->name, r && r->str ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    if (bad)
        return -1;
    lat[k->n++] = t1 - t0;
    return 0;
}

/* The n commands one at a time, interleaved (PUT, GET, KV.GET, ..., PUT, GET, ...) so that
 * each sees the same moments of a shared machine, for at most `count` rounds or `ms`. lat
 * holds n x count samples, command i's from i * count. */
static int w5_serial(redisContext *c, struct w5_cmd *k, int n, long count, double ms, double *lat,
                     char *err, size_t errlen)
{
    double end = fr_now_ms() + ms;
    for (int j = 0; j < n; j++)
        k[j].n = 0;
    for (long i = 0; i < count && fr_now_ms() < end; i++)
        for (int j = 0; j < n; j++)
            if (w5_one(c, &k[j], lat + j * count, err, errlen))
                return -1;
    for (int j = 0; j < n; j++)
        fr_pct(lat + j * count, k[j].n, &k[j].p50, &k[j].p99);
    return 0;
}

/* `count` copies of the command pipelined, W5_WINDOW in flight; answers per second. */
static int w5_pipelined(redisContext *c, struct w5_cmd *k, long count, char *err, size_t errlen)
{
    long sent = 0, got = 0;
    double t0 = fr_now_ms();
    while (got < count) {
        while (sent < count && sent - got < W5_WINDOW) {
            redisAppendCommand(c, k->line);
            sent++;
        }
        void *v;
        if (redisGetReply(c, &v) != REDIS_OK || !v) {
            snprintf(err, errlen, "%s pipelined: %s", k->name, c->errstr);
            return -1;
        }
        redisReply *r = v;
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "STALE", 5)) {
            snprintf(err, errlen, "%s pipelined: %s", k->name, r->str);
            freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
        got++;
    }
    double s = (fr_now_ms() - t0) / 1e3;
    k->rate = s > 0 ? count / s : 0;
    return 0;
}

int bench_fencelock_w5(const char *endpoints, long count, int seconds)
{
    char err[256] = "";
    /* PUT first: every ratio is to its latency. INCR is a write like PUT; LOCK.WAITS and
     * SESSION.LIST are the operators' reads of the wait-for graph and the sessions;
     * LOCK.HISTORY and LATCH.INFO the reads of a lock's kept grants and of a latch; TXN is a
     * holder's guarded write of two keys (IF HOLDS, then a PUT and an INCR: one entry); the last
     * two are LOCK.INFO's twin on the HTTP port. */
    enum { W5_N = 14 };
    struct w5_cmd k[W5_N] = {
        {.name = "PUT"},
        {.name = "GET"},
        {.name = "KV.GET"},
        {.name = "FENCE.CHECK"},
        {.name = "LOCK.INFO"},
        {.name = "SESSION.KEEPALIVE"},
        {.name = "INCR"},
        {.name = "LOCK.WAITS"},
        {.name = "SESSION.LIST"},
        {.name = "LOCK.HISTORY"},
        {.name = "LATCH.INFO"},
        {.name = "TXN"},
        {.name = "HTTP /v1/locks/{name}", .http = "/v1/locks/w5-l"},
        {.name = "HTTP /v1/locks/{name}?stale", .http = "/v1/locks/w5-l?stale"}};
    struct w5_cmd pipe[2] = {{.name = "GET"}, {.name = "SESSION.KEEPALIVE"}};
    double *lat = malloc((size_t)count * W5_N * sizeof(double));
    redisContext *c = lat ? fr_connect_leader(endpoints, err, sizeof(err)) : NULL;
    long long sid = -1, token = -1;
    long pipe_n = count * 4; /* many barriers' worth */
    int rc = -1;
    if (c && fr_int(c, "PUT", err, sizeof(err), "PUT w5-k v") >= 0 &&
        (sid = fr_int(c, "SESSION.OPEN", err, sizeof(err), "SESSION.OPEN 60000")) >= 0 &&
        (token = fr_int(c, "LOCK", err, sizeof(err), "LOCK w5-l %lld", sid)) >= 0 &&
        fr_ok(c, "LATCH.CREATE", err, sizeof(err), "LATCH.CREATE w5-latch 1") == 0) {
        snprintf(k[0].line, sizeof(k[0].line), "PUT w5-k v");
        snprintf(k[1].line, sizeof(k[1].line), "GET w5-k");
        snprintf(k[2].line, sizeof(k[2].line), "KV.GET w5-k");
        snprintf(k[3].line, sizeof(k[3].line), "FENCE.CHECK w5-l %lld", token);
        snprintf(k[4].line, sizeof(k[4].line), "LOCK.INFO w5-l");
        snprintf(k[5].line, sizeof(k[5].line), "SESSION.KEEPALIVE %lld", sid);
        snprintf(k[6].line, sizeof(k[6].line), "INCR w5-c");
        snprintf(k[7].line, sizeof(k[7].line), "LOCK.WAITS w5-");
        snprintf(k[8].line, sizeof(k[8].line), "SESSION.LIST LIMIT 10");
        snprintf(k[9].line, sizeof(k[9].line), "LOCK.HISTORY w5-l");
        snprintf(k[10].line, sizeof(k[10].line), "LATCH.INFO w5-latch");
        snprintf(k[11].line, sizeof(k[11].line),
                 "TXN IF HOLDS w5-l %lld THEN PUT w5-t v INCR w5-tc 1", sid);
        snprintf(pipe[0].line, sizeof(pipe[0].line), "%s", k[1].line);
        snprintf(pipe[1].line, sizeof(pipe[1].line), "%s", k[5].line);
        rc = w5_serial(c, k, W5_N, count, seconds * 1e3, lat, err, sizeof(err));
        for (int i = 0; i < 2 && !rc; i++)
            rc = w5_pipelined(c, &pipe[i], pipe_n, err, sizeof(err));
        redisReply *r = redisCommand(c, "SESSION.CLOSE %lld", sid);
        if (r)
            freeReplyObject(r);
    } else if (!lat) {
        snprintf(err, sizeof(err), "out of memory");
    }
    printf("{\"driver\":\"fencelock\",\"workload\":\"W5\",\"errors\":%d", rc != 0);
    for (int i = 0; i < W5_N; i++)
        printf(",\"%s\":{\"n\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p50_vs_put\":%.2f,"
               "\"p99_vs_put\":%.2f}",
               k[i].name, k[i].n, k[i].p50, k[i].p99, k[0].p50 > 0 ? k[i].p50 / k[0].p50 : 0,
               k[0].p99 > 0 ? k[i].p99 / k[0].p99 : 0);
    printf(",\"pipelined_per_s\":{\"GET\":%.0f,\"SESSION.KEEPALIVE\":%.0f,\"count\":%ld}",
           pipe[0].rate, pipe[1].rate, pipe_n);
    fr_json_err(err);
    printf("}\n");
    fflush(stdout);
    if (c)
        redisFree(c);
    free(lat);
    return rc ? 1 : 0;
}

/* ---- W6 ---- */

struct w6_part {
    const char *endpoints;
    long n; /* sessions of this part */
    int ttl_ms, seconds;
    long long *sids;
    unsigned char *lost; /* per session: got -NOSESSION */
    double *lat;         /* ms, send to answer, capacity cap */
    long cap, nlat;
    long sent, nosession, lost_sessions, errors;
    double max_lag_ms; /* how far sending fell behind the schedule */
    char err[256];
};

/* Pipelined SESSION.OPEN (or .CLOSE) for every session of the part. */
static int w6_each(redisContext *c, struct w6_part *p, int close)
{
    long sent = 0, got = 0;
    while (got < p->n) {
        while (sent < p->n && sent - got < W6_WINDOW) {
            if (close)
                redisAppendCommand(c, "SESSION.CLOSE %lld", p->sids[sent]);
            else
                redisAppendCommand(c, "SESSION.OPEN %d", p->ttl_ms);
            sent++;
        }
        void *v;
        if (redisGetReply(c, &v) != REDIS_OK || !v) {
            snprintf(p->err, sizeof(p->err), "SESSION.%s: %s", close ? "CLOSE" : "OPEN", c->errstr);
            return -1;
        }
        redisReply *r = v;
        if (!close && r->type != REDIS_REPLY_INTEGER) {
            snprintf(p->err, sizeof(p->err), "SESSION.OPEN: %s", r->str ? r->str : "?");
            freeReplyObject(r);
            return -1;
        }
        if (!close)
            p->sids[got] = r->integer;
        freeReplyObject(r);
        got++;
    }
    return 0;
}

static void w6_answer(struct w6_part *p, redisReply *r, long idx, double sent_ms)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        if (p->nlat < p->cap)
            p->lat[p->nlat++] = fr_now_ms() - sent_ms;
    } else if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSESSION", 9)) {
        p->nosession++;
        if (!p->lost[idx]) {
            p->lost[idx] = 1;
            p->lost_sessions++;
        }
    } else {
        p->errors++;
        snprintf(p->err, sizeof(p->err), "KEEPALIVE: %s", r->str ? r->str : "unexpected reply");
    }
}

/* Keepalive j (of this part) is due at t0 + j * gap, for session j % n: every session once per
 * TTL/3, evenly spread. At most W6_WINDOW unanswered; answers are read as they come. */
static int w6_keepalives(redisContext *c, struct w6_part *p)
{
    double gap = (p->ttl_ms / 3.0) / (double)p->n, t0 = fr_now_ms();
    double end = t0 + p->seconds * 1e3;
    double sent_at[W6_WINDOW];
    long idx_at[W6_WINDOW], got = 0;
    for (;;) {
        double now = fr_now_ms();
        int sending = now < end;
        while (sending && p->sent - got < W6_WINDOW && t0 + p->sent * gap <= now) {
            double lag = now - (t0 + p->sent * gap);
            if (lag > p->max_lag_ms)
                p->max_lag_ms = lag;
            long idx = p->sent % p->n;
            redisAppendCommand(c, "SESSION.KEEPALIVE %lld", p->sids[idx]);
            sent_at[p->sent % W6_WINDOW] = now;
            idx_at[p->sent % W6_WINDOW] = idx;
            p->sent++;
        }
        int done = 0;
        while (!done)
            if (redisBufferWrite(c, &done) != REDIS_OK)
                goto broken;
        if (!sending && got == p->sent)
            return 0;
        double wait = sending ? t0 + p->sent * gap - fr_now_ms() : 1000;
        if (p->sent - got == W6_WINDOW)
            wait = 1000;
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&pf, 1, wait < 0 ? 0 : (int)wait + 1);
        if (pr > 0 && redisBufferRead(c) != REDIS_OK)
            goto broken;
        void *v;
        while (got < p->sent) {
            if (redisGetReplyFromReader(c, &v) != REDIS_OK)
                goto broken;
            if (!v)
                break;
            w6_answer(p, v, idx_at[got % W6_WINDOW], sent_at[got % W6_WINDOW]);
            freeReplyObject(v);
            got++;
        }
    }
broken:
    snprintf(p->err, sizeof(p->err), "KEEPALIVE connection: %s", c->errstr);
    return -1;
}

static void *w6_run(void *arg)
{
    struct w6_part *p = arg;
    redisContext *c = fr_connect_leader(p->endpoints, p->err, sizeof(p->err));
    if (!c) {
        p->errors++;
        return NULL;
    }
    if (w6_each(c, p, 0) || w6_keepalives(c, p))
        p->errors++;
    else if (w6_each(c, p, 1))
        p->errors++;
    redisFree(c);
    return NULL;
}

/* The W1 client beside the load: LOCK + UNLOCK pairs of its own lock through libfencelock. */
struct w6_w1 {
    const char *endpoints;
    void *cl;
    atomic_int stop;
    double *lat;
    long cap, n;
    char err[256];
};

static void w6_pairs(struct w6_w1 *w, double ms)
{
    char name[64];
    snprintf(name, sizeof(name), "w6-w1-%d", (int)getpid());
    double end = fr_now_ms() + ms;
    w->n = 0;
    while (!atomic_load(&w->stop) && fr_now_ms() < end && w->n < w->cap) {
        uint64_t token;
        double t0 = fr_now_ms();
        if (bench_fencelock.acquire(w->cl, name, 5000, &token, w->err, sizeof(w->err)) ||
            bench_fencelock.release(w->cl, name, w->err, sizeof(w->err)))
            return;
        w->lat[w->n++] = fr_now_ms() - t0;
    }
}

static void *w6_w1_run(void *arg)
{
    struct w6_w1 *w = arg;
    w6_pairs(w, 3600e3);
    return NULL;
}

int bench_fencelock_w6(const char *endpoints, long sessions, int ttl_ms, int seconds)
{
    struct w6_part parts[W6_CONNS];
    pthread_t t[W6_CONNS], tw;
    struct w6_w1 w1 = {.endpoints = endpoints, .cap = 2000000};
    struct bench_cfg cfg = {.endpoints = endpoints, .ttl_ms = 10000};
    char err[256] = "";
    double idle50 = 0, idle99 = 0, load50 = 0, load99 = 0;
    long idle_n = 0;
    int started = 0, w1_started = 0;
    memset(parts, 0, sizeof(parts));
    w1.lat = malloc((size_t)w1.cap * sizeof(double));
    w1.cl = w1.lat ? bench_fencelock.client_new(&cfg, 0, err, sizeof(err)) : NULL;
    if (w1.cl) { /* W1 idle, before any load */
        w6_pairs(&w1, seconds * 1e3 / 6 < 5000 ? seconds * 1e3 / 6 : 5000);
        idle_n = w1.n;
        fr_pct(w1.lat, w1.n, &idle50, &idle99);
        w1.n = 0;
        w1_started = pthread_create(&tw, NULL, w6_w1_run, &w1) == 0;
    }
    double t0 = fr_now_ms();
    for (int i = 0; i < W6_CONNS && w1_started; i++) {
        struct w6_part *p = &parts[i];
        p->endpoints = endpoints;
        p->n = sessions * (i + 1) / W6_CONNS - sessions * i / W6_CONNS;
        p->ttl_ms = ttl_ms;
        p->seconds = seconds;
        p->cap = (long)((double)seconds * 1e3 / (ttl_ms / 3.0) * p->n) + W6_WINDOW + 16;
        p->sids = calloc((size_t)p->n + 1, sizeof(long long));
        p->lost = calloc((size_t)p->n + 1, 1);
        p->lat = malloc((size_t)p->cap * sizeof(double));
        if (!p->sids || !p->lost || !p->lat || pthread_create(&t[i], NULL, w6_run, p))
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double el = (fr_now_ms() - t0) / 1e3;
    if (w1_started) {
        atomic_store(&w1.stop, 1);
        pthread_join(tw, NULL);
        fr_pct(w1.lat, w1.n, &load50, &load99);
    }
    long sent = 0, nlat = 0, lost = 0, nos = 0, errors = started < W6_CONNS;
    double lag = 0;
    for (int i = 0; i < W6_CONNS; i++)
        nlat += parts[i].nlat;
    double *all = malloc((size_t)(nlat ? nlat : 1) * sizeof(double));
    long k = 0;
    for (int i = 0; i < W6_CONNS; i++) {
        struct w6_part *p = &parts[i];
        sent += p->sent;
        lost += p->lost_sessions;
        nos += p->nosession;
        errors += p->errors;
        if (p->max_lag_ms > lag)
            lag = p->max_lag_ms;
        if (*p->err && !*err)
            snprintf(err, sizeof(err), "%s", p->err);
        if (all)
            memcpy(all + k, p->lat, (size_t)p->nlat * sizeof(double));
        k += p->nlat;
        free(p->sids);
        free(p->lost);
        free(p->lat);
    }
    double p50 = 0, p99 = 0;
    if (all)
        fr_pct(all, nlat, &p50, &p99);
    if (!w1_started && !*err)
        snprintf(err, sizeof(err), "W1 client: %.200s", *w1.err ? w1.err : "could not start");
    printf("{\"driver\":\"fencelock\",\"workload\":\"W6\",\"sessions\":%ld,\"ttl_ms\":%d,"
           "\"seconds\":%d,\"conns\":%d,\"keepalives\":%ld,\"answered\":%ld,"
           "\"target_per_s\":%.0f,\"keepalive_p50_ms\":%.3f,\"keepalive_p99_ms\":%.3f,"
           "\"lost_sessions\":%ld,\"nosession_replies\":%ld,\"errors\":%ld,\"max_lag_ms\":%.1f,"
           "\"elapsed_s\":%.1f,\"w1_idle_pairs\":%ld,\"w1_idle_p50_ms\":%.3f,"
           "\"w1_idle_p99_ms\":%.3f,\"w1_load_pairs\":%ld,\"w1_load_p50_ms\":%.3f,"
           "\"w1_load_p99_ms\":%.3f,\"w1_p50_ratio\":%.2f",
           sessions, ttl_ms, seconds, W6_CONNS, sent, nlat, sessions / (ttl_ms / 3000.0), p50, p99,
           lost, nos, errors, lag, el, idle_n, idle50, idle99, w1.n, load50, load99,
           idle50 > 0 ? load50 / idle50 : 0);
    fr_json_err(err);
    printf("}\n");
    fflush(stdout);
    free(all);
    if (w1.cl)
        bench_fencelock.client_free(w1.cl);
    free(w1.lat);
    return errors || lost ? 1 : 0;
}

/* ---- W7 ---- */

/* VmRSS of a process in KiB (0 if unknown). */
static long fr_rss_kib(int pid)
{
    char path[64], line[256];
    long kib = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

/* W1 pairs through libfencelock for `ms`: p50/p99 into *p50, *p99; pairs done, or -1. */
static long w7_w1(void *cl, double ms, double *lat, long cap, double *p50, double *p99, char *err,
                  size_t errlen)
{
    struct w6_w1 w = {.cl = cl, .lat = lat, .cap = cap};
    w6_pairs(&w, ms);
    if (*w.err) {
        snprintf(err, errlen, "W1: %.200s", w.err);
        return -1;
    }
    fr_pct(lat, w.n, p50, p99);
    return w.n;
}

/* The active connections: each keeps one GET in flight, for `ms`; answers per second. */
static double w7_active(redisContext **c, int n, double ms)
{
    long done = 0;
    double t0 = fr_now_ms(), end = t0 + ms;
    struct pollfd *pf = calloc((size_t)n, sizeof(*pf));
    if (!pf)
        return 0;
    for (int i = 0; i < n; i++) {
        redisAppendCommand(c[i], "GET w7-k");
        int wdone = 0;
        while (!wdone && redisBufferWrite(c[i], &wdone) == REDIS_OK)
            ;
        pf[i].fd = c[i]->fd;
        pf[i].events = POLLIN;
    }
    int outstanding = n;
    while (outstanding) {
        if (poll(pf, (nfds_t)n, 1000) <= 0)
            break;
        int more = fr_now_ms() < end;
        for (int i = 0; i < n; i++) {
            if (!(pf[i].revents & POLLIN))
                continue;
            void *v = NULL;
            if (redisBufferRead(c[i]) != REDIS_OK ||
                redisGetReplyFromReader(c[i], &v) != REDIS_OK) {
                pf[i].fd = -1;
                outstanding--;
                continue;
            }
            if (!v)
                continue;
            freeReplyObject(v);
            done++;
            if (more) {
                redisAppendCommand(c[i], "GET w7-k");
                int wdone = 0;
                while (!wdone && redisBufferWrite(c[i], &wdone) == REDIS_OK)
                    ;
            } else {
                pf[i].fd = -1;
                outstanding--;
            }
        }
    }
    free(pf);
    double s = (fr_now_ms() - t0) / 1e3;
    return s > 0 ? done / s : 0;
}

int bench_fencelock_w7(const char *endpoints, long conns, int active, int seconds, int server_pid)
{
    char err[256] = "", lerr[256] = "";
    struct bench_cfg cfg = {.endpoints = endpoints, .ttl_ms = 10000};
    long cap = 2000000, opened = 0, refused = 0, idle_n = -1, load_n = -1;
    double idle50 = 0, idle99 = 0, load50 = 0, load99 = 0, rate = 0;
    long rss0 = 0, rss1 = 0;
    double *lat = malloc((size_t)cap * sizeof(double));
    redisContext **c = calloc((size_t)conns + 1, sizeof(*c));
    redisContext *lc = fr_connect_leader(endpoints, err, sizeof(err));
    void *cl = lat && c && lc ? bench_fencelock.client_new(&cfg, 0, err, sizeof(err)) : NULL;
    double ms = seconds * 1e3 / 3;
    if (cl) {
        redisReply *r = redisCommand(lc, "PUT w7-k v");
        if (r)
            freeReplyObject(r);
        idle_n = w7_w1(cl, ms, lat, cap, &idle50, &idle99, err, sizeof(err));
        rss0 = fr_rss_kib(server_pid);
        struct timeval tv = {.tv_sec = 10, .tv_usec = 0};
        for (long i = 0; i < conns; i++) { /* to the leader: lc's peer */
            c[i] = redisConnectWithTimeout(lc->tcp.host, lc->tcp.port, tv);
            redisReply *p = c[i] && !c[i]->err ? redisCommand(c[i], "PING") : NULL;
            int ok = p && p->type == REDIS_REPLY_STATUS;
            if (!ok && !*lerr)
                snprintf(lerr, sizeof(lerr), "connection %ld: %s", i + 1,
                         p && p->str ? p->str
                         : c[i]      ? c[i]->errstr
                                     : "out of memory");
            if (p)
                freeReplyObject(p);
            if (!ok) {
                refused++;
                if (c[i])
                    redisFree(c[i]);
                c[i] = NULL;
                continue;
            }
            c[opened++] = c[i];
            if (opened - 1 != i)
                c[i] = NULL;
        }
        rss1 = fr_rss_kib(server_pid);
        int na = (int)(opened < active ? opened : active);
        /* the active ones read while W1 measures */
        pthread_t t;
        struct w6_w1 w = {.cl = cl, .lat = lat, .cap = cap};
        int st = pthread_create(&t, NULL, w6_w1_run, &w) == 0;
        rate = w7_active(c, na, ms);
        if (st) {
            atomic_store(&w.stop, 1);
            pthread_join(t, NULL);
            load_n = w.n;
            fr_pct(lat, w.n, &load50, &load99);
        }
    }
    printf("{\"driver\":\"fencelock\",\"workload\":\"W7\",\"conns\":%ld,\"opened\":%ld,"
           "\"refused\":%ld,\"active\":%d,\"active_gets_per_s\":%.0f,\"rss0_kib\":%ld,"
           "\"rss1_kib\":%ld,\"rss_per_conn_bytes\":%.0f,\"w1_idle_pairs\":%ld,"
           "\"w1_idle_p50_ms\":%.3f,\"w1_idle_p99_ms\":%.3f,\"w1_pairs\":%ld,\"w1_p50_ms\":%.3f,"
           "\"w1_p99_ms\":%.3f,\"errors\":%d",
           conns, opened, refused, active, rate, rss0, rss1,
           opened ? (rss1 - rss0) * 1024.0 / opened : 0, idle_n, idle50, idle99, load_n, load50,
           load99, !cl);
    if (*lerr && !*err)
        snprintf(err, sizeof(err), "%s", lerr);
    fr_json_err(err);
    printf("}\n");
    fflush(stdout);
    for (long i = 0; c && i < opened; i++)
        redisFree(c[i]);
    free(c);
    if (lc)
        redisFree(lc);
    if (cl)
        bench_fencelock.client_free(cl);
    free(lat);
    return cl ? 0 : 1;
}

/* ---- W6C: the C client's own model, one keepalive thread per fl_session ---- */

/* `sessions` fl_sessions (TTL ttl_ms) on one fl_client in this process, held for `seconds`:
 * every 100 ms the smallest safe margin (fl_session_safe_until - now) over all sessions is
 * sampled; at the end, how many were lost. A margin that shrinks towards 0 means keepalives
 * fall behind (the library keeps alive every TTL/3, so a healthy margin stays above 2/3 TTL
 * less the drift allowance). */
int bench_fencelock_w6c(const char *endpoints, long sessions, int ttl_ms, int seconds)
{
    char err[256] = "";
    fl_err e;
    long opened = 0, lost = 0, samples = 0;
    double open_s = 0, worst = 1e18, margin_sum = 0;
    fl_client *c = fl_client_new(endpoints, NULL, &e);
    fl_session **s = calloc((size_t)sessions + 1, sizeof(*s));
    if (!c || !s)
        snprintf(err, sizeof(err), "fl_client_new: %s", c ? "out of memory" : fl_strerror(e));
    double t0 = fr_now_ms();
    for (long i = 0; c && s && i < sessions; i++) {
        if ((e = fl_session_open(c, (uint64_t)ttl_ms, 0, NULL, &s[i]))) {
            snprintf(err, sizeof(err), "fl_session_open #%ld: %s", i + 1, fl_strerror(e));
            break;
        }
        opened++;
    }
    open_s = (fr_now_ms() - t0) / 1e3;
    double end = fr_now_ms() + seconds * 1e3;
    while (opened && fr_now_ms() < end) {
        double now = (double)fl_now_ms(), m = 1e18;
        for (long i = 0; i < opened; i++) {
            double left = (double)fl_session_safe_until(s[i]) - now;
            if (left < m)
                m = left;
        }
        if (m < worst)
            worst = m;
        margin_sum += m;
        samples++;
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
    }
    for (long i = 0; i < opened; i++) {
        lost += fl_session_is_lost(s[i]) != 0;
        fl_session_close(s[i]);
    }
    printf("{\"driver\":\"fencelock\",\"workload\":\"W6C\",\"sessions\":%ld,\"opened\":%ld,"
           "\"ttl_ms\":%d,\"seconds\":%d,\"open_s\":%.1f,\"lost\":%ld,"
           "\"min_safe_margin_ms\":%.0f,\"mean_min_safe_margin_ms\":%.0f",
           sessions, opened, ttl_ms, seconds, open_s, lost, samples ? worst : 0,
           samples ? margin_sum / samples : 0);
    fr_json_err(err);
    printf("}\n");
    fflush(stdout);
    free(s);
    if (c)
        fl_client_free(c);
    return *err || lost ? 1 : 0;
}
