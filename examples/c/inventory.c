/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inventory service, with fencing: N workers each sell items from one stock counter.
 * A sale is lock -> read stock -> (work) -> fenced write of stock-1 -> unlock. The write
 * carries the lock's fencing token, so a worker whose lock silently expired (a long pause)
 * cannot write over the next holder's sale: the server answers FL_ESTALE and changes nothing.
 *
 *   inventory ENDPOINTS [WORKERS] [SALES_PER_WORKER]
 *
 * Exits 0 when the final stock equals the initial stock minus the sales acknowledged.
 * Build: cc inventory.c $(pkg-config --cflags --libs fencelock) -lhiredis -lpthread
 */
#include <fencelock.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_STOCK 1000

struct worker {
    fl_client *client;
    int id, sales;
    int sold, stale; /* sales acknowledged; writes fenced out */
    fl_err err;
};

/* One sale. The session is the worker's lease: its locks die with it. */
static fl_err sell_one(struct worker *w, fl_session *s)
{
    uint64_t token;
    fl_err e = fl_lock(s, "inventory", 10000, &token);
    if (e)
        return e;
    struct fl_kv kv;
    e = fl_get(w->client, "stock", &kv);
    if (e == FL_OK) {
        char next[32];
        snprintf(next, sizeof(next), "%ld", strtol(kv.value, NULL, 10) - 1);
        fl_kv_free(&kv);
        /* Before acting on what the lock protects, the lease must still be ours locally;
           the fence makes the write safe even if this check was passed just in time. */
        if (fl_now_ms() >= fl_session_safe_until(s)) {
            e = FL_ESESSION;
        } else {
            struct fl_write_opts fence = {.fence_name = "inventory", .fence_token = token};
            e = fl_put(w->client, s, "stock", next, strlen(next), &fence, NULL);
        }
    }
    if (e == FL_OK)
        w->sold++;
    else if (e == FL_ESTALE)
        w->stale++;
    fl_err ue = fl_unlock(s, "inventory");
    return e ? e : (ue == FL_ENOTHOLDER ? FL_OK : ue);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    fl_session *s;
    w->err = fl_session_open(w->client, 5000, 0, "inventory-worker", &s);
    if (w->err)
        return NULL;
    for (int i = 0; i < w->sales && w->err == FL_OK; i++) {
        fl_err e = sell_one(w, s);
        if (e != FL_OK && e != FL_ESTALE)
            w->err = e;
    }
    fl_session_close(s);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s ENDPOINTS [WORKERS] [SALES_PER_WORKER]\n", argv[0]);
        return 2;
    }
    int nw = argc > 2 ? atoi(argv[2]) : 4, per = argc > 3 ? atoi(argv[3]) : 25;
    if (nw < 1 || nw > 64 || per < 1) {
        fprintf(stderr, "%s: 1..64 workers and at least one sale each\n", argv[0]);
        return 2;
    }
    fl_err e;
    fl_client *c = fl_client_new(argv[1], NULL, &e);
    if (!c) {
        fprintf(stderr, "%s: bad endpoints: %s\n", argv[0], fl_strerror(e));
        return 2;
    }
    char init[16];
    snprintf(init, sizeof(init), "%d", INITIAL_STOCK);
    e = fl_put(c, NULL, "stock", init, strlen(init), NULL, NULL);
    if (e) {
        fprintf(stderr, "put stock: %s: %s\n", fl_strerror(e), fl_client_errmsg(c));
        return 1;
    }
    struct worker w[64];
    pthread_t t[64];
    for (int i = 0; i < nw; i++) {
        w[i] = (struct worker){.client = c, .id = i, .sales = per};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int sold = 0, stale = 0, failed = 0;
    for (int i = 0; i < nw; i++) {
        pthread_join(t[i], NULL);
        sold += w[i].sold;
        stale += w[i].stale;
        if (w[i].err) {
            fprintf(stderr, "worker %d: %s\n", i, fl_strerror(w[i].err));
            failed++;
        }
    }
    struct fl_kv kv;
    e = fl_get(c, "stock", &kv);
    long final = e == FL_OK ? strtol(kv.value, NULL, 10) : -1;
    if (e == FL_OK)
        fl_kv_free(&kv);
    printf("sold %d, fenced out %d, stock %d -> %ld\n", sold, stale, INITIAL_STOCK, final);
    fl_client_free(c);
    return failed || final != INITIAL_STOCK - sold ? 1 : 0;
}
