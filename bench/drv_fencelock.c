/*
 * drv_fencelock — the fencelock driver of lockbench (bench/driver.h), through libfencelock.
 * Owns, per bench client, one fl_client and one fl_session; client_free closes the session
 * (releasing anything it still holds) and frees the client.
 *
 * Careful-user recipe (docs/client.md): open a session with the lease TTL (cfg->ttl_ms, no
 * lock-delay), whose own thread keeps it alive; acquire = fl_lock(session, name, wait) — the
 * server queues the waiter (FIFO) and grants it with a fencing token (the log revision of the
 * grant), which is returned; release = fl_unlock. Every call carries REQ sid seq, so retries
 * across a fail-over apply once. Nothing is tuned for the benchmark (default timeouts).
 */
#include "driver.h"

#include <fencelock.h>
#include <stdio.h>
#include <stdlib.h>

struct fl_bench_client {
    fl_client *c;
    fl_session *s;
};

static void fill_err(fl_client *c, const char *what, fl_err e, char *err, size_t errlen)
{
    const char *msg = c ? fl_client_errmsg(c) : "";
    snprintf(err, errlen, "%s: %s%s%s", what, fl_strerror(e), *msg ? ": " : "", msg);
}

static void *flb_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    struct fl_bench_client *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    fl_err e;
    b->c = fl_client_new(cfg->endpoints, NULL, &e);
    if (!b->c) {
        fill_err(NULL, "fl_client_new", e, err, errlen);
        free(b);
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof(name), "lockbench-%d", client_id);
    e = fl_session_open(b->c, (uint64_t)cfg->ttl_ms, 0, name, &b->s);
    if (e) {
        fill_err(b->c, "fl_session_open", e, err, errlen);
        fl_client_free(b->c);
        free(b);
        return NULL;
    }
    return b;
}

static void flb_free(void *cl)
{
    struct fl_bench_client *b = cl;
    if (!b)
        return;
    fl_session_close(b->s);
    fl_client_free(b->c);
    free(b);
}

static int flb_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                       size_t errlen)
{
    struct fl_bench_client *b = cl;
    fl_err e = fl_lock(b->s, name, wait_ms > 0 ? (uint64_t)wait_ms : 0, token);
    if (e == FL_OK)
        return 0;
    if (e == FL_ETIMEOUT || e == FL_EBUSY)
        return BENCH_TIMEOUT;
    fill_err(b->c, "fl_lock", e, err, errlen);
    return -1;
}

static int flb_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct fl_bench_client *b = cl;
    fl_err e = fl_unlock(b->s, name);
    if (e == FL_OK)
        return 0;
    fill_err(b->c, "fl_unlock", e, err, errlen);
    return -1;
}

const struct bench_driver bench_fencelock = {
    .name = "fencelock",
    .client_new = flb_new,
    .client_free = flb_free,
    .acquire = flb_acquire,
    .release = flb_release,
};
