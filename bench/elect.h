/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elect.h — W12 (election fail-over, bench/electbench.c) and the systems it drives, one
 * `el_ops` table each: fencelock (elect_fl.c, raw RESP) and etcd (elect_etcd.c, v3election
 * over the JSON gateway). A ctx lives for the whole run (its admin connection); a round holds
 * one election's leader, candidate and observers, all created by round_new and ended by
 * round_free (sessions closed, leases revoked). candidate and observe run on threads of their
 * own, one per call, each on its own connection of the round; kill_leader on the caller's.
 */
#ifndef BENCH_ELECT_H
#define BENCH_ELECT_H

#include <stddef.h>

#define EL_ROUND_MS 8000 /* a round's bound: the candidate's wait and the observers' */
#define EL_SETTLE_MS 150 /* after the candidate and observers started, before the kill */

struct el_ops {
    void *(*ctx_new)(const char *endpoints, char *err, size_t errlen);
    void (*ctx_free)(void *ctx);
    /* A fresh election `r` with its leader elected (its token in *ltok) and nobs observers'
       connections ready: NULL with err on failure. */
    void *(*round_new)(void *ctx, int r, int nobs, long long *ltok, char *err, size_t errlen);
    void (*round_free)(void *round);
    /* Campaigns as C and waits until C leads: 0 with C's token, or -1 with err. */
    int (*candidate)(void *round, long long *token, char *err, size_t errlen);
    /* Observer idx: returns 0 once it sees C lead, -1 with err (also past deadline_ms). */
    int (*observe)(void *round, int idx, double deadline_ms, char *err, size_t errlen);
    /* Ends L's session (lease) from outside: 0, or -1 with err. */
    int (*kill_leader)(void *round, char *err, size_t errlen);
};

extern const struct el_ops el_fencelock, el_etcd;

double el_now_ms(void);
void el_sleep_ms(int ms);

#endif
