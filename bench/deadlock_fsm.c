/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deadlock_fsm — the cost of deadlock detection where it runs: fsm_apply of one LOCK ... WAIT
 * on a state with a chain of N sessions, each holding lock l<i> and waiting for l<i+1>.
 *
 *   closing  the last session's wait for l0: closes a cycle of N, refused -DEADLOCK
 *   plain    a fresh session's wait for l0: the search walks the whole chain, finds no cycle,
 *            the wait is queued (then the session leaves the queue, untimed)
 *   off      the same plain wait with detection off (--deadlock-search-limit 0)
 *
 * Prints µs per apply (the mean of R runs) for each N. No server, no disk: what a node adds to
 * the apply of such an entry; the entry's commit (an fsync, ~ms) is the same either way.
 * Usage: deadlock_fsm [N...] (default 10 100 1000 3000); `make bench-tools`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsm/fsm.h"
#include "fsm/waitgraph.h"

#define RUNS 200

static struct fsm_events ev;

static struct fsm_reply apply(struct fsm *f, const struct fsm_cmd *c)
{
    struct buf b;
    struct fsm_reply r;
    buf_init(&b);
    if (fsm_cmd_encode(c, &b))
        abort();
    fsm_events_reset(&ev);
    fsm_apply(f, (const uint8_t *)b.p, b.len, &r, &ev);
    buf_free(&b);
    return r;
}

static struct fsm_str str(const char *s)
{
    return (struct fsm_str){s, (uint32_t)strlen(s)};
}

static struct fsm_reply lock(struct fsm *f, const char *name, uint64_t sid, uint64_t wait)
{
    struct fsm_cmd c = {.op = FSM_OP_LOCK,
                        .lock = {.name = str(name), .sid = sid, .wait_ms = wait}};
    return apply(f, &c);
}

static uint64_t session(struct fsm *f)
{
    struct fsm_cmd c = {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 60000}};
    return apply(f, &c).value;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Mean µs of one LOCK name sid WAIT (then UNLOCK, untimed, if it queued). */
static double time_wait(struct fsm *f, const char *name, uint64_t sid, int want_kind)
{
    double total = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = now_us();
        struct fsm_reply r = lock(f, name, sid, 60000);
        total += now_us() - t0;
        if (r.kind != want_kind) {
            fprintf(stderr, "unexpected reply %d (%s)\n", r.kind, r.err);
            exit(1);
        }
        if (r.kind == FSM_REPLY_QUEUED) {
            struct fsm_cmd u = {.op = FSM_OP_UNLOCK, .unlock = {.name = str(name), .sid = sid}};
            apply(f, &u);
        }
    }
    return total / RUNS;
}

static void run(size_t n)
{
    struct fsm *f = fsm_new();
    struct fsm_cmd fmt = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = FSM_FORMAT_2}};
    apply(f, &fmt);
    uint64_t *s = calloc(n, sizeof(*s));
    char nm[32];
    for (size_t i = 0; i < n; i++) {
        s[i] = session(f);
        snprintf(nm, sizeof(nm), "l%zu", i);
        lock(f, nm, s[i], 0);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        snprintf(nm, sizeof(nm), "l%zu", i + 1);
        lock(f, nm, s[i], 60000);
    }
    uint64_t fresh = session(f);
    double closing = time_wait(f, "l0", s[n - 1], FSM_REPLY_ERR);
    double plain = time_wait(f, "l0", fresh, FSM_REPLY_QUEUED);
    fsm_set_deadlock_limit(f, 0);
    double off = time_wait(f, "l0", fresh, FSM_REPLY_QUEUED);
    printf("%8zu %12.1f %12.1f %12.1f\n", n, closing, plain, off);
    free(s);
    fsm_free(f);
}

int main(int argc, char **argv)
{
    static const size_t def[] = {10, 100, 1000, 3000};
    fsm_events_init(&ev);
    printf("%8s %12s %12s %12s   (us per fsm_apply, mean of %d)\n", "chain", "closing", "plain",
           "off", RUNS);
    if (argc > 1)
        for (int i = 1; i < argc; i++)
            run((size_t)strtoul(argv[i], NULL, 10));
    else
        for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
            run(def[i]);
    fsm_events_free(&ev);
    return 0;
}
