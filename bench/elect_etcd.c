/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elect_etcd — W12's etcd side (bench/elect.h): v3election over etcd's JSON gateway with
 * libcurl, as drv_etcd.c and watch_etcd.c speak it, all calls to the first endpoint (the
 * gateway forwards to the leader). L and C each have a lease (TTL EL_ET_TTL_S) and campaign
 * with it (`/v3/election/campaign`: L wins at once, C blocks until it leads; its leader key's
 * `rev` is the token); each observer streams `/v3/election/observe` until a message carries
 * C's value; the kill is `/v3/lease/revoke` of L's lease (what a crashed leader's lease expiry
 * does, without waiting the TTL). round_free revokes the leases left. Owns its handles.
 */
#include "elect.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EL_ET_TTL_S 15
#define EL_ET_BODY 1024

void bench_etcd_b64(const char *s, char *out); /* drv_etcd.c */

struct et_ctx {
    char base[300]; /* http://host:port */
    struct curl_slist *hdrs;
};

struct et_round {
    struct et_ctx *x;
    char name64[128], cval64[16];
    long long llease, clease;
};

struct et_buf {
    char p[EL_ET_BODY];
    size_t len;
};

static size_t et_collect(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct et_buf *b = ud;
    size_t n = size * nmemb, room = sizeof(b->p) - 1 - b->len;
    memcpy(b->p + b->len, ptr, n < room ? n : room); /* a reply longer is cut, not needed */
    b->len += n < room ? n : room;
    b->p[b->len] = '\0';
    return n;
}

static CURL *et_handle(struct et_ctx *x, const char *path, const char *body, long timeout_ms)
{
    char url[400];
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    snprintf(url, sizeof(url), "%s%s", x->base, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, body);
    return h;
}

/* One POST answered 200, its body in *b: 0, or -1 with err. */
static int et_post(struct et_ctx *x, const char *path, const char *body, long timeout_ms,
                   struct et_buf *b, char *err, size_t el)
{
    b->len = 0;
    b->p[0] = '\0';
    CURL *h = et_handle(x, path, body, timeout_ms);
    if (!h) {
        snprintf(err, el, "curl_easy_init failed");
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, et_collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    if (rc == CURLE_OK && code == 200 && !strstr(b->p, "\"error\""))
        return 0;
    snprintf(err, el, "etcd %s: %s %.150s", path, rc ? curl_easy_strerror(rc) : "", b->p);
    return -1;
}

/* The number after the first "field":"  (or "field": ) in s, or -1. */
static long long et_num(const char *s, const char *field)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", field);
    const char *p = strstr(s, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    return strtoll(p + (*p == '"'), NULL, 10);
}

static void *et_ctx_new(const char *endpoints, char *err, size_t el)
{
    struct et_ctx *x = calloc(1, sizeof(*x));
    if (!x) {
        snprintf(err, el, "out of memory");
        return NULL;
    }
    snprintf(x->base, sizeof(x->base), "http://%.*s", (int)strcspn(endpoints, ","), endpoints);
    x->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    return x;
}

static void et_ctx_free(void *p)
{
    struct et_ctx *x = p;
    curl_slist_free_all(x->hdrs);
    free(x);
}

static long long et_grant(struct et_ctx *x, char *err, size_t el)
{
    struct et_buf b;
    char body[64];
    snprintf(body, sizeof(body), "{\"TTL\":\"%d\"}", EL_ET_TTL_S);
    if (et_post(x, "/v3/lease/grant", body, 5000, &b, err, el))
        return -1;
    long long id = et_num(b.p, "ID");
    if (id <= 0)
        snprintf(err, el, "etcd lease grant: %.150s", b.p);
    return id;
}

static int et_revoke(struct et_ctx *x, long long *lease, char *err, size_t el)
{
    struct et_buf b;
    char body[64];
    if (*lease <= 0)
        return 0;
    snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", *lease);
    int rc = et_post(x, "/v3/lease/revoke", body, 5000, &b, err, el);
    if (!rc)
        *lease = 0;
    return rc;
}

static void et_round_free(void *p)
{
    struct et_round *d = p;
    char err[256];
    et_revoke(d->x, &d->llease, err, sizeof(err));
    et_revoke(d->x, &d->clease, err, sizeof(err));
    free(d);
}

/* Campaign with `lease` and value64: the leader key's rev, or -1 with err. */
static long long et_campaign(struct et_round *d, long long lease, const char *val64,
                             long timeout_ms, char *err, size_t el)
{
    struct et_buf b;
    char body[400];
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"lease\":\"%lld\",\"value\":\"%s\"}", d->name64,
             lease, val64);
    if (et_post(d->x, "/v3/election/campaign", body, timeout_ms, &b, err, el))
        return -1;
    const char *leader = strstr(b.p, "\"leader\"");
    long long rev = leader ? et_num(leader, "rev") : -1;
    if (rev <= 0)
        snprintf(err, el, "etcd campaign: %.150s", b.p);
    return rev;
}

static void *et_round_new(void *ctx, int r, int nobs, long long *ltok, char *err, size_t el)
{
    (void)nobs; /* observers open their stream in observe */
    struct et_round *d = calloc(1, sizeof(*d));
    char name[64], lval[8];
    if (!d) {
        snprintf(err, el, "out of memory");
        return NULL;
    }
    d->x = ctx;
    snprintf(name, sizeof(name), "lb-%d-W12-%d", (int)getpid(), r);
    bench_etcd_b64(name, d->name64);
    bench_etcd_b64("C", d->cval64);
    bench_etcd_b64("L", lval);
    if ((d->llease = et_grant(d->x, err, el)) <= 0 || (d->clease = et_grant(d->x, err, el)) <= 0 ||
        (*ltok = et_campaign(d, d->llease, lval, 5000, err, el)) <= 0) {
        et_round_free(d);
        return NULL;
    }
    return d;
}

static int et_candidate(void *p, long long *token, char *err, size_t el)
{
    struct et_round *d = p;
    *token = et_campaign(d, d->clease, d->cval64, EL_ROUND_MS - 1000, err, el);
    return *token > 0 ? 0 : -1;
}

struct et_stream {
    char pat[32]; /* "value":"<C's value>" */
    char tail[64];
    int seen;
};

/* Stops the stream (a write error to curl) once C's value went by; a match may straddle two
   chunks, so the end of the last one is kept. */
static size_t et_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct et_stream *s = ud;
    size_t n = size * nmemb, keep = strlen(s->tail);
    char win[64 + 4096];
    size_t take = n < 4096 ? n : 4096;
    memcpy(win, s->tail, keep);
    memcpy(win + keep, ptr + (n - take), take);
    win[keep + take] = '\0';
    if (strstr(win, s->pat) || (n > take && memmem(ptr, n, s->pat, strlen(s->pat)))) {
        s->seen = 1;
        return 0;
    }
    size_t t = keep + take < sizeof(s->tail) - 1 ? keep + take : sizeof(s->tail) - 1;
    memcpy(s->tail, win + keep + take - t, t);
    s->tail[t] = '\0';
    return n;
}

static int et_observe(void *p, int idx, double deadline_ms, char *err, size_t el)
{
    (void)idx;
    struct et_round *d = p;
    struct et_stream s = {.seen = 0};
    char body[200];
    snprintf(s.pat, sizeof(s.pat), "\"value\":\"%s\"", d->cval64);
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", d->name64);
    long left = (long)(deadline_ms - el_now_ms());
    CURL *h = et_handle(d->x, "/v3/election/observe", body, left > 1 ? left : 1);
    if (!h) {
        snprintf(err, el, "curl_easy_init failed");
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, et_stream);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    if (s.seen)
        return 0;
    snprintf(err, el, "etcd observe: C not seen (%s)", curl_easy_strerror(rc));
    return -1;
}

static int et_kill(void *p, char *err, size_t el)
{
    struct et_round *d = p;
    return et_revoke(d->x, &d->llease, err, el);
}

const struct el_ops el_etcd = {et_ctx_new,   et_ctx_free, et_round_new, et_round_free,
                               et_candidate, et_observe,  et_kill};
