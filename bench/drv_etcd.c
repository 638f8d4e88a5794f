/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench driver for etcd 3.4: `bench_etcd`, over etcd's gRPC-gateway JSON API with libcurl.
 *
 * Owns, per bench client: one etcd lease, two persistent curl easy handles (keep-alive
 * connections; one for the client's thread, one for its keepalive thread), the keepalive thread
 * itself, and the table of locks the client holds (name -> its lock key).
 *
 * Recipe (etcd's own clientv3/concurrency Session + Mutex, which the v3lock service wraps):
 * - session: POST /v3/lease/grant {"TTL": ceil(ttl_ms / 1000), at least 1 s; the server raises
 *   it to its minimum, 2 s with the default election timeout}; a thread per client keeps it alive
 *   with POST /v3/lease/keepalive every TTL/3 for as long as the client lives, as the Go
 *   Session does (so a waiter blocked longer than the TTL, or a long hold, keeps its lease). A
 *   keepalive answered without a TTL means the lease is gone; the next acquire grants a new one.
 *   client_free revokes the lease (POST /v3/lease/revoke), which deletes its keys at once.
 * - acquire(name): the lock key is "<name>/<lease id in hex>", as in concurrency.Mutex. First
 *   the Mutex's own transaction (POST /v3/kv/txn): if the key's create_revision is 0, put it with
 *   the lease and read the oldest key under "<name>/" (sort by create revision, limit 1); else
 *   read our key and that oldest key. If the oldest key is ours we hold the lock. Otherwise, with
 *   wait_ms == 0, delete our key (POST /v3/kv/deleterange) and return BENCH_TIMEOUT: that is
 *   Mutex.TryLock of etcd 3.5. With wait_ms > 0, call the lock service, POST /v3/lock/lock
 *   {"name", "lease"}, which finds our key (same lease), waits server-side for the deletion of
 *   every key created before it, and returns it; the call is bounded by a curl timeout of the
 *   time left. On timeout curl closes the connection, the gateway cancels the call and the server
 *   deletes the waiter's key; to be sure nothing is left queued (the cancel races with a grant,
 *   and a late request could put the key again) the driver also removes it: by revoking the lease
 *   and granting a new one when the client holds no other lock, else by deleting the key.
 * - fencing token: the lock key's create_revision, known from the transaction (the header
 *   revision of the put when we created it, or the key's create_revision when it already
 *   existed). Verified: the lock service's reply header revision equals it only when the lock
 *   was free (the put was that transaction); after a wait it is the revision of the service's
 *   last read, larger than the create revision, so the driver never uses it.
 * - hand-off: the lock service waits with a watch on the key before ours, opened at the revision
 *   of its last read; etcd puts a watch whose start revision is not in the future in its
 *   "unsynced" group, which is caught up every 100 ms (mvcc syncWatchersLoop). So a waiter that
 *   queued less than ~100 ms before the release learns of it up to 100 ms late (measured: 85 ms
 *   when queued 10 ms before, 3 ms when queued 120 ms or more before). The Go client's Mutex has
 *   the same wait; it is what etcd's recipe costs under contention, and it is kept.
 * - release(name): POST /v3/lock/unlock {"key"} (a delete of the key). A delete that fails (no
 *   endpoint answered) is remembered and retried at the next call; until it succeeds the client
 *   refuses to acquire that lock again (it would get the old key back, with its old token).
 * Endpoints: "h:p,h:p,..."; a request that cannot connect, loses its connection, hangs (1.5 s per
 * endpoint, 5 s in all; the waiting lock call only by its wait), or meets a leader change (HTTP
 * 503, "leader changed", "no leader") moves to the next endpoint, up to three rounds. Repeating
 * any call is safe: the transaction and the lock call find the key of the same lease, deletes
 * and unlocks are idempotent, a repeated grant only leaves a lease to expire.
 */
#include "driver.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#define ETCD_MAX_NAME 200
#define ETCD_MAX_HELD 8
#define ETCD_MAX_EPS 16
#define ETCD_KEY_B64 400     /* base64 of "<name>/<16 hex digits>" */
#define ETCD_CALL_MS 5000    /* bound of every call but the waiting lock call */
#define ETCD_ATTEMPT_MS 1500 /* ... and of its attempt on one endpoint */
#define ETCD_TIMEDOUT 2      /* etcd_call: the curl timeout fired */

struct buf {
    char *p;
    size_t len, cap;
};

struct etcd_held {
    char name[ETCD_MAX_NAME + 1];
    char key[ETCD_KEY_B64]; /* base64 */
};

struct etcd_client {
    char *eps[ETCD_MAX_EPS];
    int neps;
    int ttl_s;
    CURL *h; /* the client thread's handle */
    struct buf resp;
    struct curl_slist *hdrs;
    pthread_mutex_t mu; /* guards everything below, shared with the keepalive thread */
    pthread_cond_t cv;
    int cur; /* endpoint in use */
    int64_t lease;
    int lease_ttl; /* seconds, as granted */
    int lease_dead;
    int stop;
    pthread_t ka;
    int ka_started;
    CURL *kah; /* the keepalive thread's handle */
    struct buf karesp;
    struct etcd_held held[ETCD_MAX_HELD];
    int nheld;
    struct etcd_held orphans[ETCD_MAX_HELD]; /* keys whose delete failed: deleted later */
    int norphans;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct buf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0; /* curl reports a write error */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, ptr, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

static void b64(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

static void b64s(const char *s, char *out)
{
    b64((const unsigned char *)s, strlen(s), out);
}

/* For W10's etcd watch (bench/watch_etcd.c). */
void bench_etcd_b64(const char *s, char *out);
void bench_etcd_b64(const char *s, char *out)
{
    b64s(s, out);
}

/* The value of the first `"field":` at or after `from`, as a string (quotes stripped) or number. */
static const char *json_find(const char *from, const char *field)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", field);
    const char *p = from ? strstr(from, pat) : NULL;
    return p ? p + strlen(pat) : NULL;
}

static int json_i64(const char *from, const char *field, int64_t *v, const char **after)
{
    const char *p = json_find(from, field);
    if (!p)
        return -1;
    if (*p == '"')
        p++;
    char *end;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno)
        return -1;
    *v = x;
    if (after)
        *after = end;
    return 0;
}

static int json_str(const char *from, const char *field, char *out, size_t outlen)
{
    const char *p = json_find(from, field);
    if (!p || *p != '"')
        return -1;
    p++;
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= outlen)
        return -1;
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
    return 0;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

static int etcd_retryable_msg(const char *body)
{
    return body && (strstr(body, "leader changed") || strstr(body, "no leader") ||
                    strstr(body, "request timed out") || strstr(body, "too many requests"));
}

/*
 * POST body to path on the endpoints, starting at the current one and moving on when one is
 * unreachable, hangs longer than attempt_ms (0: no per-endpoint bound, for the waiting lock
 * call), or has no leader; up to three rounds, all within timeout_ms. Returns 0 with the HTTP
 * 200 reply in *out, ETCD_TIMEDOUT when timeout_ms elapsed, -1 otherwise; err is set but for 0.
 * Every call the driver makes is safe to repeat (the lock key is named by the lease).
 */
static int etcd_call(struct etcd_client *c, CURL *h, struct buf *out, const char *path,
                     const char *body, long timeout_ms, long attempt_ms, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->mu);
    int ep = c->cur;
    pthread_mutex_unlock(&c->mu);
    char url[256];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(err, errlen, "etcd %s: timed out after %ld ms", path, timeout_ms);
    for (int tries = 0; tries < 3 * c->neps; tries++, ep = (ep + 1) % c->neps) {
        long left = timeout_ms - ms_since(&t0); /* one bound for all the endpoints tried */
        if (tries > 0 && tries % c->neps == 0 && left > 50) {
            struct timespec pause = {0, 50 * 1000000L}; /* a round failed: let an election end */
            nanosleep(&pause, NULL);
            left -= 50;
        }
        if (tries > 0 && left <= 0)
            return ETCD_TIMEDOUT;
        long lim = attempt_ms > 0 && attempt_ms < left ? attempt_ms : left;
        snprintf(url, sizeof(url), "http://%s%s", c->eps[ep], path);
        out->len = 0;
        if (out->p)
            out->p[0] = '\0';
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, lim > 0 ? lim : 1L);
        CURLcode rc = curl_easy_perform(h);
        if (rc == CURLE_OPERATION_TIMEDOUT && lim >= left) {
            snprintf(err, errlen, "etcd %s%s: timed out after %ld ms", c->eps[ep], path,
                     timeout_ms);
            return ETCD_TIMEDOUT;
        }
        long status = 0;
        if (rc == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_CONNECT ||
            rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
            status == 503 || (status != 200 && etcd_retryable_msg(out->p))) {
            snprintf(err, errlen, "etcd %s%s: %s%.150s", c->eps[ep], path,
                     rc != CURLE_OK ? curl_easy_strerror(rc) : "",
                     rc != CURLE_OK ? "" : (out->p ? out->p : ""));
            continue;
        }
        if (rc != CURLE_OK) {
            snprintf(err, errlen, "etcd %s%s: %s", c->eps[ep], path, curl_easy_strerror(rc));
            return -1;
        }
        pthread_mutex_lock(&c->mu);
        c->cur = ep;
        pthread_mutex_unlock(&c->mu);
        if (status != 200) {
            char msg[200];
            if (json_str(out->p, "message", msg, sizeof(msg)) != 0)
                snprintf(msg, sizeof(msg), "%.150s", out->p ? out->p : "");
            snprintf(err, errlen, "etcd %s%s: HTTP %ld: %s", c->eps[ep], path, status, msg);
            return -1;
        }
        return 0;
    }
    return -1; /* err names the last failure */
}

static CURL *etcd_handle(struct etcd_client *c)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    return h;
}

/* Grant a fresh lease (the client's thread only). */
static int etcd_grant(struct etcd_client *c, char *err, size_t errlen)
{
    char body[64];
    int64_t id, ttl;
    snprintf(body, sizeof(body), "{\"TTL\":\"%d\"}", c->ttl_s);
    if (etcd_call(c, c->h, &c->resp, "/v3/lease/grant", body, ETCD_CALL_MS, ETCD_ATTEMPT_MS, err,
                  errlen) != 0)
        return -1;
    if (json_i64(c->resp.p, "ID", &id, NULL) != 0 || json_i64(c->resp.p, "TTL", &ttl, NULL) != 0 ||
        ttl <= 0) {
        snprintf(err, errlen, "etcd lease grant: unexpected reply %.150s", c->resp.p);
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    c->lease = id;
    c->lease_ttl = (int)ttl;
    c->lease_dead = 0;
    pthread_cond_broadcast(&c->cv); /* the keepalive thread picks up the new period */
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int etcd_revoke(struct etcd_client *c, int64_t lease)
{
    char body[64], err[256];
    snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
    return etcd_call(c, c->h, &c->resp, "/v3/lease/revoke", body, ETCD_CALL_MS, ETCD_ATTEMPT_MS,
                     err, sizeof(err));
}

static void *etcd_keepalive(void *arg)
{
    struct etcd_client *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec dl;
        int period_ms = c->lease_ttl * 1000 / 3;
        if (period_ms < 300)
            period_ms = 300;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += period_ms / 1000;
        dl.tv_nsec += (long)(period_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        int64_t lease = c->lease;
        int rc = 0;
        while (!c->stop && lease == c->lease && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&c->cv, &c->mu, &dl);
        if (c->stop || lease != c->lease || c->lease_dead)
            continue;
        pthread_mutex_unlock(&c->mu);
        char body[64], err[256];
        int64_t ttl = 0;
        snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", lease);
        int r = etcd_call(c, c->kah, &c->karesp, "/v3/lease/keepalive", body, 2000, 700, err,
                          sizeof(err));
        /* A streaming call: errors come in-band ({"error":...}, HTTP 200); only an answer
         * ({"result":...}) without a TTL says the lease is gone. */
        int gone = r == 0 && strstr(c->karesp.p, "\"result\"") &&
                   (json_i64(c->karesp.p, "TTL", &ttl, NULL) != 0 || ttl <= 0);
        pthread_mutex_lock(&c->mu);
        if (gone && lease == c->lease)
            c->lease_dead = 1; /* expired: the next acquire grants a new lease */
        /* A failed call (no endpoint answered) is retried at the next period. */
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void etcd_client_free(void *cl)
{
    struct etcd_client *c = cl;
    if (!c)
        return;
    if (c->ka_started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->ka, NULL);
    }
    if (c->h && c->lease && !c->lease_dead)
        (void)etcd_revoke(c, c->lease); /* its keys (held or queued) go at once */
    if (c->h)
        curl_easy_cleanup(c->h);
    if (c->kah)
        curl_easy_cleanup(c->kah);
    curl_slist_free_all(c->hdrs);
    for (int i = 0; i < c->neps; i++)
        free(c->eps[i]);
    free(c->resp.p);
    free(c->karesp.p);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
    curl_global_cleanup();
}

static void *etcd_client_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    (void)client_id;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init failed");
        return NULL;
    }
    struct etcd_client *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        curl_global_cleanup();
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    const char *s = cfg->endpoints ? cfg->endpoints : "";
    while (*s && c->neps < ETCD_MAX_EPS) {
        size_t n = strcspn(s, ",");
        if (n > 0 && n < 200 && (c->eps[c->neps] = strndup(s, n)) != NULL)
            c->neps++;
        s += n;
        if (*s == ',')
            s++;
    }
    if (c->neps == 0) {
        snprintf(err, errlen, "etcd: no endpoints in \"%s\"", cfg->endpoints ? cfg->endpoints : "");
        etcd_client_free(c);
        return NULL;
    }
    c->cur = client_id >= 0 ? client_id % c->neps : 0; /* spread clients over the members */
    c->ttl_s = cfg->ttl_ms > 0 ? (cfg->ttl_ms + 999) / 1000 : 10;
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    c->h = etcd_handle(c);
    c->kah = etcd_handle(c);
    if (!c->hdrs || !c->h || !c->kah) {
        snprintf(err, errlen, "etcd: curl setup failed");
        etcd_client_free(c);
        return NULL;
    }
    if (etcd_grant(c, err, errlen) != 0) {
        etcd_client_free(c);
        return NULL;
    }
    if (pthread_create(&c->ka, NULL, etcd_keepalive, c) != 0) {
        snprintf(err, errlen, "etcd: cannot start keepalive thread");
        etcd_client_free(c);
        return NULL;
    }
    c->ka_started = 1;
    return c;
}

static int etcd_held_index(struct etcd_client *c, const char *name)
{
    for (int i = 0; i < c->nheld; i++)
        if (strcmp(c->held[i].name, name) == 0)
            return i;
    return -1;
}

static int etcd_delete_key(struct etcd_client *c, const char *key, char *err, size_t errlen)
{
    char body[ETCD_KEY_B64 + 32];
    snprintf(body, sizeof(body), "{\"key\":\"%s\"}", key);
    return etcd_call(c, c->h, &c->resp, "/v3/kv/deleterange", body, ETCD_CALL_MS, ETCD_ATTEMPT_MS,
                     err, errlen) == 0
               ? 0
               : -1;
}

static void etcd_orphan(struct etcd_client *c, const char *name, const char *key)
{
    if (c->norphans < ETCD_MAX_HELD) {
        struct etcd_held *o = &c->orphans[c->norphans++];
        snprintf(o->name, sizeof(o->name), "%s", name);
        snprintf(o->key, sizeof(o->key), "%s", key);
    }
}

/* Retry the deletes that failed; 0 when none is left for lock `name` (NULL: any). */
static int etcd_reap_orphans(struct etcd_client *c, const char *name)
{
    char err[256];
    int left = 0;
    for (int i = 0; i < c->norphans;) {
        if (etcd_delete_key(c, c->orphans[i].key, err, sizeof(err)) == 0) {
            c->orphans[i] = c->orphans[--c->norphans];
            continue;
        }
        if (!name || strcmp(c->orphans[i].name, name) == 0)
            left = 1;
        i++;
    }
    return left ? -1 : 0;
}

static int etcd_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                        size_t errlen)
{
    struct etcd_client *c = cl;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!*name || strlen(name) > ETCD_MAX_NAME) {
        snprintf(err, errlen, "etcd: bad lock name");
        return -1;
    }
    if (c->nheld == ETCD_MAX_HELD || etcd_held_index(c, name) >= 0) {
        snprintf(err, errlen, "etcd: %s already held or too many locks held", name);
        return -1;
    }
    if (etcd_reap_orphans(c, name) != 0) {
        snprintf(err, errlen, "etcd: an earlier release of %s is still unsettled", name);
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    int dead = c->lease_dead;
    pthread_mutex_unlock(&c->mu);
    if (dead) {
        c->nheld = 0; /* the lease took its keys with it */
        c->norphans = 0;
        if (etcd_grant(c, err, errlen) != 0)
            return -1;
    }

    char raw[ETCD_MAX_NAME + 32], key[ETCD_KEY_B64], pfx[ETCD_KEY_B64], end[ETCD_KEY_B64];
    snprintf(raw, sizeof(raw), "%s/%" PRIx64, name, (uint64_t)c->lease);
    b64s(raw, key);
    snprintf(raw, sizeof(raw), "%s/", name);
    b64s(raw, pfx);
    snprintf(raw, sizeof(raw), "%s0", name); /* '/' + 1: the end of the prefix range */
    b64s(raw, end);
    char owner[ETCD_KEY_B64 * 2 + 128];
    snprintf(owner, sizeof(owner),
             "{\"request_range\":{\"key\":\"%s\",\"range_end\":\"%s\",\"sort_order\":\"ASCEND\","
             "\"sort_target\":\"CREATE\",\"limit\":\"1\"}}",
             pfx, end);
    char body[ETCD_KEY_B64 * 8 + 1024];
    snprintf(body, sizeof(body),
             "{\"compare\":[{\"target\":\"CREATE\",\"key\":\"%s\",\"create_revision\":\"0\","
             "\"result\":\"EQUAL\"}],"
             "\"success\":[{\"request_put\":{\"key\":\"%s\",\"lease\":\"%" PRId64 "\"}},%s],"
             "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},%s]}",
             key, key, c->lease, owner, key, owner);
    if (etcd_call(c, c->h, &c->resp, "/v3/kv/txn", body, ETCD_CALL_MS, ETCD_ATTEMPT_MS, err,
                  errlen) != 0) {
        etcd_orphan(c, name, key); /* it may have been applied: delete the key later */
        return -1;
    }
    const char *js = c->resp.p, *after = NULL;
    int64_t myrev, ownerrev;
    int ok;
    if (strstr(js, "\"succeeded\":true"))
        ok = json_i64(js, "revision", &myrev, NULL) == 0 &&
             json_i64(js, "create_revision", &ownerrev, NULL) == 0;
    else
        ok = json_i64(js, "create_revision", &myrev, &after) == 0 &&
             json_i64(after, "create_revision", &ownerrev, NULL) == 0;
    if (!ok) {
        snprintf(err, errlen, "etcd txn: unexpected reply %.200s", js);
        return -1;
    }
    if (ownerrev != myrev) {
        long left = wait_ms - ms_since(&t0);
        if (wait_ms <= 0 || left <= 0) {
            if (etcd_delete_key(c, key, err, errlen) != 0) {
                etcd_orphan(c, name, key);
                return -1;
            }
            return BENCH_TIMEOUT;
        }
        b64s(name, raw);
        snprintf(body, sizeof(body), "{\"name\":\"%s\",\"lease\":\"%" PRId64 "\"}", raw, c->lease);
        int r = etcd_call(c, c->h, &c->resp, "/v3/lock/lock", body, left, 0, err, errlen);
        if (r == ETCD_TIMEDOUT) {
            if (c->nheld == 0 && etcd_revoke(c, c->lease) == 0) {
                pthread_mutex_lock(&c->mu);
                c->lease_dead = 1; /* if the grant fails, the next acquire tries again */
                pthread_mutex_unlock(&c->mu);
                if (etcd_grant(c, err, errlen) != 0)
                    return -1;
            } else if (etcd_delete_key(c, key, err, errlen) != 0) {
                etcd_orphan(c, name, key);
                return -1;
            }
            return BENCH_TIMEOUT;
        }
        char got[ETCD_KEY_B64];
        if (r == 0 &&
            (json_str(c->resp.p, "key", got, sizeof(got)) != 0 || strcmp(got, key) != 0)) {
            snprintf(err, errlen, "etcd lock: unexpected reply %.200s", c->resp.p);
            r = -1;
        }
        if (r != 0) {
            /* Best effort: do not leave our key queued (it would be granted to nobody). */
            char err2[256];
            if (etcd_delete_key(c, key, err2, sizeof(err2)) != 0)
                etcd_orphan(c, name, key);
            return -1;
        }
    }
    struct etcd_held *h = &c->held[c->nheld++];
    snprintf(h->name, sizeof(h->name), "%s", name);
    snprintf(h->key, sizeof(h->key), "%s", key);
    *token = (uint64_t)myrev;
    return 0;
}

static int etcd_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct etcd_client *c = cl;
    int i = etcd_held_index(c, name);
    if (i < 0) {
        snprintf(err, errlen, "etcd: %s not held by this client", name);
        return -1;
    }
    struct etcd_held h = c->held[i];
    c->held[i] = c->held[--c->nheld];
    pthread_mutex_lock(&c->mu);
    int dead = c->lease_dead;
    pthread_mutex_unlock(&c->mu);
    if (dead) {
        snprintf(err, errlen, "etcd: lease expired while %s was held: the lock was lost", name);
        return -1;
    }
    (void)etcd_reap_orphans(c, NULL);
    char body[ETCD_KEY_B64 + 32];
    snprintf(body, sizeof(body), "{\"key\":\"%s\"}", h.key);
    if (etcd_call(c, c->h, &c->resp, "/v3/lock/unlock", body, ETCD_CALL_MS, ETCD_ATTEMPT_MS, err,
                  errlen) != 0) {
        etcd_orphan(c, name, h.key); /* not released for sure: deleted on the next call */
        return -1;
    }
    return 0;
}

const struct bench_driver bench_etcd = {
    .name = "etcd",
    .client_new = etcd_client_new,
    .client_free = etcd_client_free,
    .acquire = etcd_acquire,
    .release = etcd_release,
};
