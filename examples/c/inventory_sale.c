/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inventory service with fencing: the one sale the other languages' examples tell
 * (examples/python/inventory.py, examples/go, examples/java, examples/node).
 *
 * The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
 * pause): its session stops renewing. Its lease runs out, our worker is granted the lock, sells
 * one item with a fenced write, and the zombie, waking up, writes with its old token: the server
 * refuses it (FL_ESTALE). That refusal is what fencing is for. examples/c/inventory.c is the
 * same sale by N workers at once.
 *
 *   inventory_sale [host:port,...]
 *
 * The endpoints are argv[1], else $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480. Any node will do:
 * libfencelock follows -NOTLEADER. Exits 0 if everything behaved as fencelock promises.
 * Build: cc inventory_sale.c $(pkg-config --cflags --libs fencelock) -lhiredis -lpthread
 */
#include <fencelock.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Something fencelock should not have done (or an error): say so, fail the example. */
static int unexpected(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("inventory: unexpected: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int failed(fl_client *c, const char *what, fl_err e)
{
    return unexpected("%s: %s: %s", what, fl_strerror(e), fl_client_errmsg(c));
}

/* The leader's client address, as the cluster lists it (the node the client talks to). */
static void print_worker(fl_client *c, fl_session *s)
{
    struct fl_status st;
    const char *where = "?";
    fl_err e = fl_status(c, &st);
    for (size_t i = 0; e == FL_OK && i < st.n_members; i++)
        if (st.members[i].leader)
            where = st.members[i].client_address;
    printf("worker: session %" PRIu64 " (ttl %" PRIu64 " ms) on %s\n", fl_session_id(s),
           fl_session_ttl(s), where);
    if (e == FL_OK)
        fl_status_free(&st);
}

/* Queued behind the zombie (FIFO), granted once its lease expired: sell one item. */
static int sell(fl_client *c, fl_session *me, uint64_t zombie_token)
{
    int64_t t0 = fl_now_ms();
    uint64_t token;
    fl_err e = fl_lock(me, "inventory", 10000, &token);
    if (e)
        return failed(c, "lock inventory", e);
    if (token <= zombie_token)
        return unexpected("token %" PRIu64 " does not exceed the zombie's %" PRIu64, token,
                          zombie_token);
    printf("worker: got inventory after %.1f s, fencing token %" PRIu64 "\n",
           (fl_now_ms() - t0) / 1000.0, token);
    struct fl_kv kv;
    long stock = 100; /* first run: start with 100 items */
    e = fl_get(c, "stock", &kv);
    if (e == FL_OK) {
        stock = strtol(kv.value, NULL, 10);
        fl_kv_free(&kv);
    } else if (e != FL_ENOTFOUND) {
        return failed(c, "get stock", e);
    }
    printf("worker: stock is %ld\n", stock);
    if (fl_now_ms() >= fl_session_safe_until(me))
        return unexpected("our lease may be gone: not acting");
    /* Accepted only while our token is the current holder's; exactly once (REQ). */
    char next[32];
    snprintf(next, sizeof(next), "%ld", stock - 1);
    struct fl_write_opts fence = {.fence_name = "inventory", .fence_token = token};
    uint64_t rev;
    e = fl_put(c, me, "stock", next, strlen(next), &fence, &rev);
    if (e)
        return failed(c, "fenced put", e);
    printf("worker: sold one, stock %ld written at revision %" PRIu64 "\n", stock - 1, rev);

    /* The zombie wakes up and writes what it computed before freezing. */
    struct fl_write_opts old = {.fence_name = "inventory", .fence_token = zombie_token};
    e = fl_put(c, NULL, "stock", "0", 1, &old, NULL);
    if (e != FL_ESTALE)
        return unexpected("the zombie's write with stale token %" PRIu64 " was not refused: %s",
                          zombie_token, fl_strerror(e));
    printf("zombie: write with token %" PRIu64 " refused: -%s\n", zombie_token,
           fl_client_errmsg(c));
    e = fl_get(c, "stock", &kv);
    int same = e == FL_OK && strcmp(kv.value, next) == 0;
    if (e == FL_OK)
        fl_kv_free(&kv);
    if (!same)
        return unexpected("the stock changed after a refused write");
    e = fl_unlock(me, "inventory");
    return e ? failed(c, "unlock", e) : 0;
}

int main(int argc, char **argv)
{
    const char *env = getenv("FENCELOCK_ENDPOINTS");
    const char *endpoints = argc > 1 ? argv[1] : env && env[0] ? env : "127.0.0.1:7480";
    fl_err e;
    fl_client *c = fl_client_new(endpoints, NULL, &e);
    if (!c)
        return unexpected("bad endpoints %s: %s", endpoints, fl_strerror(e));

    /* The zombie: a 1 s lease whose keepalives stop at once, so it runs out while "frozen". */
    fl_session *zombie, *me;
    uint64_t zombie_token;
    int rc = 1;
    e = fl_session_open(c, 1000, 0, "zombie", &zombie);
    if (e) {
        rc = failed(c, "open the zombie's session", e);
        goto out;
    }
    uint64_t zombie_sid = fl_session_id(zombie);
    e = fl_trylock(zombie, "inventory", &zombie_token);
    if (e) {
        fl_session_close(zombie);
        rc = e == FL_EBUSY ? unexpected("the inventory lock is already taken; is another "
                                        "example running?")
                           : failed(c, "trylock inventory", e);
        goto out;
    }
    fl_session_abandon(zombie);
    printf("zombie: session %" PRIu64 " holds inventory with token %" PRIu64 ", then freezes\n",
           zombie_sid, zombie_token);

    e = fl_session_open(c, 2000, 0, "inventory-worker", &me);
    if (e) {
        rc = failed(c, "open the worker's session", e);
        goto out;
    }
    uint64_t sid = fl_session_id(me);
    print_worker(c, me);
    rc = sell(c, me, zombie_token);
    e = fl_session_close(me);
    if (rc == 0 && e)
        rc = failed(c, "close the session", e);
    if (rc == 0)
        printf("worker: unlocked and closed session %" PRIu64 "\n", sid);
out:
    fl_client_free(c);
    return rc;
}
