/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flraw — the raw-RESP helpers lockbench's fencelock-only workloads share (defined in
 * bench/fl_reads.c): a hiredis connection to the current leader. The caller owns the context
 * it gets and frees it with redisFree.
 */
#ifndef BENCH_FLRAW_H
#define BENCH_FLRAW_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/* A blocking connection to the leader (tries each endpoint, follows -NOTLEADER once), with a
   10 s timeout on every call; NULL with err filled when no endpoint is a ready leader. */
redisContext *fr_connect_leader(const char *endpoints, char *err, size_t errlen);

#endif
