/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench drivers: one lock system each (fencelock, Redis SET NX, Redlock, etcd, ZooKeeper),
 * behind the same small table so that bench/lockbench.c runs identical workloads on all.
 *
 * Ownership: client_new returns a client that belongs to the one harness thread that made it
 * (drivers need not be thread-safe per client; different clients are used by different
 * threads at once). client_free releases whatever the driver allocated, including any
 * session/lease/connection on the servers. Each driver implements its system's careful-user
 * recipe (see the driver's file comment) and, where the system has one, returns a fencing
 * token (0 where it has none: plain Redis, Redlock).
 *
 * Errors: functions return 0 on success, BENCH_TIMEOUT when the lock was not acquired within
 * wait_ms, and -1 on any other failure with a message in err (never abort()).
 */
#ifndef BENCH_DRIVER_H
#define BENCH_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_TIMEOUT 1

struct bench_cfg {
    const char *endpoints; /* the system's own endpoint list, "h:p,h:p" */
    int ttl_ms;            /* lease / session / key TTL the recipe uses */
};

struct bench_driver {
    const char *name; /* "fencelock", "redis", "redlock", "etcd", "zookeeper" */
    void *(*client_new)(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen);
    void (*client_free)(void *cl);
    /* Acquire lock `name`, waiting up to wait_ms (0: try once); *token is the fencing token. */
    int (*acquire)(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                   size_t errlen);
    /* Release a lock this client holds. */
    int (*release)(void *cl, const char *name, char *err, size_t errlen);
};

extern const struct bench_driver bench_fencelock, bench_redis, bench_redlock, bench_etcd,
    bench_zookeeper;

#endif
