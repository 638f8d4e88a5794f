/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch_etcd — W10's etcd backend (bench/watch.h): etcd 3.4's v3 watch over its JSON gateway
 * (POST /v3/watch, a streaming HTTP response of one JSON message per line), with libcurl as
 * drv_etcd.c uses; the writer's PUTs are POST /v3/kv/put.
 *
 * Everything goes to the leader member (found with POST /v3/maintenance/status: "leader" equal
 * to the header's member_id; the first endpoint if none says so), as fencelock's watchers read
 * from its leader. Writer: one keep-alive easy handle for single PUTs; `window` more in a curl
 * multi for pipelined ones (HTTP/1.1 has no pipelining: a window of connections). A PUT's
 * header.revision is its event's kv.mod_revision.
 * Watchers: one streaming request each, {"create_request": {key: prefix, range_end: prefix's
 * end, start_revision: after + 1}}, all in one curl multi the caller's thread polls; each
 * complete line with "events" gives its kv.mod_revision values to the sink, stamped when the
 * bytes arrived. A line saying "canceled", a stream that ends or a transfer error fails the
 * poll. Owns the handles; *_free closes them.
 */
#include "watch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WE_KEY_B64 400
#define WE_LINE_MAX (1 << 20) /* one watch message; a longer one fails the run */

struct we_buf {
    char *p;
    size_t len, cap;
};

static int we_append(struct we_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static size_t we_collect(char *ptr, size_t size, size_t nmemb, void *ud)
{
    return we_append(ud, ptr, size * nmemb) ? 0 : size * nmemb;
}

static struct curl_slist *we_headers(void)
{
    return curl_slist_append(NULL, "Content-Type: application/json");
}

static CURL *we_handle(const char *url, struct curl_slist *hdrs)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    return h;
}

/* The value of the first "field":"digits" in s, or -1. */
static long long we_num(const char *s, const char *field)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":\"", field);
    const char *p = s ? strstr(s, pat) : NULL;
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* "host:port" of the leader member among the endpoints, into out. */
static void we_leader(const char *endpoints, char *out, size_t outlen)
{
    char list[512];
    snprintf(list, sizeof(list), "%s", endpoints);
    snprintf(out, outlen, "%.*s", (int)strcspn(list, ","), list);
    struct curl_slist *hdrs = we_headers();
    for (char *save = NULL, *ep = strtok_r(list, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
        char url[300];
        struct we_buf b = {0};
        snprintf(url, sizeof(url), "http://%s/v3/maintenance/status", ep);
        CURL *h = we_handle(url, hdrs);
        if (!h)
            break;
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, we_collect);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 3000L);
        int ok = curl_easy_perform(h) == CURLE_OK && b.p;
        long long leader = ok ? we_num(b.p, "leader") : -1;
        int mine = leader > 0 && leader == we_num(b.p, "member_id");
        curl_easy_cleanup(h);
        free(b.p);
        if (mine) {
            snprintf(out, outlen, "%s", ep);
            break;
        }
    }
    curl_slist_free_all(hdrs);
}

/* ---- writer ---- */

struct we_slot {
    CURL *h;
    struct we_buf resp;
    char body[WE_KEY_B64 + 64];
    long idx; /* the PUT it carries, -1 idle */
};

struct we_writer {
    char url[300];
    struct curl_slist *hdrs;
    struct we_slot one;
    struct we_slot *slots; /* put_many's window */
    int nslots;
};

static void we_body(struct we_slot *s, const char *key)
{
    char k[WE_KEY_B64];
    if (strlen(key) > 250)
        key = "too-long";
    bench_etcd_b64(key, k);
    snprintf(s->body, sizeof(s->body), "{\"key\":\"%s\",\"value\":\"dg==\"}", k);
    s->resp.len = 0;
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
}

static int we_slot_init(struct we_writer *w, struct we_slot *s)
{
    s->h = we_handle(w->url, w->hdrs);
    if (!s->h)
        return -1;
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, we_collect);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, &s->resp);
    curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, 5000L);
    s->idx = -1;
    return 0;
}

static void we_writer_free(void *p)
{
    struct we_writer *w = p;
    for (int i = 0; i <= w->nslots; i++) {
        struct we_slot *s = i == 0 ? &w->one : &w->slots[i - 1];
        if (s->h)
            curl_easy_cleanup(s->h);
        free(s->resp.p);
    }
    free(w->slots);
    curl_slist_free_all(w->hdrs);
    free(w);
    curl_global_cleanup();
}

static void *we_writer_new(const char *endpoints, char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init failed");
        return NULL;
    }
    struct we_writer *w = calloc(1, sizeof(*w));
    char ep[256];
    if (!w) {
        snprintf(err, errlen, "out of memory");
        curl_global_cleanup();
        return NULL;
    }
    we_leader(endpoints, ep, sizeof(ep));
    snprintf(w->url, sizeof(w->url), "http://%s/v3/kv/put", ep);
    if (!(w->hdrs = we_headers()) || we_slot_init(w, &w->one)) {
        snprintf(err, errlen, "etcd: curl setup failed");
        we_writer_free(w);
        return NULL;
    }
    return w;
}

/* The revision of a finished PUT, or -1 with err. */
static int we_put_rev(struct we_slot *s, CURLcode rc, long long *rev, char *err, size_t errlen)
{
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    *rev = status == 200 ? we_num(s->resp.p, "revision") : -1;
    if (*rev > 0)
        return 0;
    snprintf(err, errlen, "etcd put: %s %.150s", rc ? curl_easy_strerror(rc) : "",
             s->resp.p ? s->resp.p : "");
    return -1;
}

static int we_put(void *p, const char *key, long long *rev, char *err, size_t errlen)
{
    struct we_writer *w = p;
    we_body(&w->one, key);
    return we_put_rev(&w->one, curl_easy_perform(w->one.h), rev, err, errlen);
}

static int we_put_many(void *p, char *const *keys, long n, int window, long long *revs,
                       double *ack_ms, char *err, size_t errlen)
{
    struct we_writer *w = p;
    if (!w->slots) {
        if (!(w->slots = calloc((size_t)window, sizeof(*w->slots))))
            return snprintf(err, errlen, "out of memory"), -1;
        for (; w->nslots < window; w->nslots++)
            if (we_slot_init(w, &w->slots[w->nslots]))
                return snprintf(err, errlen, "etcd: curl setup failed"), -1;
    }
    CURLM *m = curl_multi_init();
    long next = 0, done = 0;
    int rc = m ? 0 : -1, running = 0;
    while (!rc && done < n) {
        for (int i = 0; i < w->nslots && next < n; i++)
            if (w->slots[i].idx < 0) {
                w->slots[i].idx = next;
                we_body(&w->slots[i], keys[next++]);
                curl_multi_add_handle(m, w->slots[i].h);
            }
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while (!rc && (msg = curl_multi_info_read(m, &left)))
            for (int i = 0; msg->msg == CURLMSG_DONE && i < w->nslots; i++)
                if (w->slots[i].h == msg->easy_handle) {
                    struct we_slot *s = &w->slots[i];
                    ack_ms[s->idx] = wb_now_ms();
                    rc = we_put_rev(s, msg->data.result, &revs[s->idx], err, errlen);
                    curl_multi_remove_handle(m, s->h);
                    s->idx = -1;
                    done++;
                }
        if (!rc && done < n)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    for (int i = 0; i < w->nslots; i++)
        if (w->slots[i].idx >= 0) {
            curl_multi_remove_handle(m, w->slots[i].h);
            w->slots[i].idx = -1;
        }
    if (m)
        curl_multi_cleanup(m);
    return rc;
}

/* ---- watchers ---- */

struct we_watch {
    CURL *h;
    struct we_buf line; /* bytes of the message not complete yet */
    int idx;
    struct we_watchers *ws;
};

struct we_watchers {
    CURLM *m;
    struct curl_slist *hdrs;
    struct we_watch *w;
    int n;
    char body[3 * WE_KEY_B64];
    /* set during one poll */
    wb_sink sink;
    void *ctx;
    int bad;
    char err[256];
};

/* Every kv.mod_revision of a message's events to the sink. */
static void we_message(struct we_watch *w, const char *msg, double t)
{
    struct we_watchers *ws = w->ws;
    if (strstr(msg, "\"canceled\":true") || strstr(msg, "\"error\"")) {
        ws->bad = 1;
        snprintf(ws->err, sizeof(ws->err), "etcd watch: %.200s", msg);
        return;
    }
    const char *p = strstr(msg, "\"events\"");
    static const char pat[] = "\"mod_revision\":\"";
    while (p && (p = strstr(p, pat))) {
        p += sizeof(pat) - 1;
        ws->sink(ws->ctx, w->idx, strtoll(p, NULL, 10), t);
    }
}

static size_t we_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct we_watch *w = ud;
    size_t n = size * nmemb;
    double t = wb_now_ms();
    if (we_append(&w->line, ptr, n) || w->line.len > WE_LINE_MAX)
        return 0;
    char *start = w->line.p, *nl;
    while ((nl = memchr(start, '\n', w->line.len - (size_t)(start - w->line.p)))) {
        *nl = '\0';
        we_message(w, start, t);
        start = nl + 1;
    }
    w->line.len -= (size_t)(start - w->line.p);
    memmove(w->line.p, start, w->line.len + 1);
    return n;
}

static void we_watchers_free(void *p)
{
    struct we_watchers *ws = p;
    for (int i = 0; i < ws->n; i++) {
        if (ws->w[i].h) {
            curl_multi_remove_handle(ws->m, ws->w[i].h);
            curl_easy_cleanup(ws->w[i].h);
        }
        free(ws->w[i].line.p);
    }
    if (ws->m)
        curl_multi_cleanup(ws->m);
    curl_slist_free_all(ws->hdrs);
    free(ws->w);
    free(ws);
    curl_global_cleanup();
}

static void *we_watchers_new(const char *endpoints, const char *prefix, int n, long long after,
                             char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init failed");
        return NULL;
    }
    struct we_watchers *ws = calloc(1, sizeof(*ws));
    if (!ws || !(ws->w = calloc((size_t)n, sizeof(*ws->w)))) {
        free(ws);
        curl_global_cleanup();
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char ep[256], url[300], k[WE_KEY_B64], end[WE_KEY_B64], raw[256];
    we_leader(endpoints, ep, sizeof(ep));
    snprintf(url, sizeof(url), "http://%s/v3/watch", ep);
    bench_etcd_b64(prefix, k);
    snprintf(raw, sizeof(raw), "%s", prefix);
    raw[strlen(raw) - 1]++; /* the end of the prefix range ("a/" -> "a0") */
    bench_etcd_b64(raw, end);
    snprintf(ws->body, sizeof(ws->body),
             "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\",\"start_revision\":"
             "\"%lld\"}}",
             k, end, after + 1);
    ws->m = curl_multi_init();
    ws->hdrs = we_headers();
    for (; ws->m && ws->hdrs && ws->n < n; ws->n++) {
        struct we_watch *w = &ws->w[ws->n];
        w->idx = ws->n;
        w->ws = ws;
        if (!(w->h = we_handle(url, ws->hdrs)))
            break;
        curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, ws->body);
        curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, we_stream);
        curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
        curl_multi_add_handle(ws->m, w->h);
    }
    if (ws->n < n || !ws->m || !ws->hdrs) {
        snprintf(err, errlen, "etcd: curl setup failed");
        we_watchers_free(ws);
        return NULL;
    }
    return ws;
}

static int we_watchers_poll(void *p, int timeout_ms, wb_sink sink, void *ctx, char *err,
                            size_t errlen)
{
    struct we_watchers *ws = p;
    int running = 0;
    ws->sink = sink;
    ws->ctx = ctx;
    curl_multi_poll(ws->m, NULL, 0, timeout_ms, NULL);
    curl_multi_perform(ws->m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(ws->m, &left)))
        if (msg->msg == CURLMSG_DONE && !ws->bad) {
            ws->bad = 1;
            snprintf(ws->err, sizeof(ws->err), "etcd watch stream ended: %s",
                     curl_easy_strerror(msg->data.result));
        }
    if (ws->bad)
        snprintf(err, errlen, "%s", ws->err);
    return ws->bad ? -1 : 0;
}

const struct watch_backend watch_etcd = {
    .name = "etcd",
    .writer_new = we_writer_new,
    .put = we_put,
    .put_many = we_put_many,
    .writer_free = we_writer_free,
    .watchers_new = we_watchers_new,
    .watchers_poll = we_watchers_poll,
    .watchers_free = we_watchers_free,
};
