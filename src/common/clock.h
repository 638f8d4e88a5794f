/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock — the one clock of the processes that run a libuv loop (src/server, src/raft): a
 * monotonic reading as ms for deadlines and as ns for histograms, and the wall clock for
 * stamps a person reads. Header-only; only the loop's layers include it (src/fsm never reads
 * a clock: time is its argument, `make check-purity`; the client library has its own waits).
 *
 * Owns: nothing (no state). Invariants: clock_ms() and clock_ns() are the same clock
 * (uv_hrtime, CLOCK_MONOTONIC), so any two stamps compare and a later reading is never smaller
 * than an earlier one: `now - stamp` cannot wrap. `make check-purity` fails when src/server
 * reads a clock any other way (uv_now, uv_hrtime, clock_gettime).
 *
 * Why not the loop-cached uv_now(loop), for any of the server's uses:
 *  - lease deadlines and keepalive answers (lease/, cmd_session.c): a cached `now` is as old
 *    as the loop iteration (a snapshot apply, a batch of 1,000 commands); a deadline computed
 *    from it can start before the client sent the request, so the server could expire a lease
 *    the client still counts as held: the unsafe side.
 *  - WAIT / BLOCK / OBSERVE deadlines, hold times, uptime, the join and announce retries: a
 *    fresh reading costs one vDSO call (tens of ns) beside a request that costs tens of us.
 *  - idle, TLS-handshake and authentication deadlines and the log throttles: a cached `now`
 *    would do (they are swept by timers on the same loop), but libuv derives it from
 *    CLOCK_MONOTONIC_COARSE where that ticks at 1 ms, which runs up to a tick behind
 *    uv_hrtime; a cached reading compared with a fresh stamp can be "before" it and wrap to
 *    2^64. The idle sweep read both clocks for two deadlines of one connection; nothing
 *    compared across them yet, but one clock removes the question for the next field.
 * src/raft keeps uv_now for the transport's rate windows, which compare only with each other.
 */
#ifndef FENCELOCK_CLOCK_H
#define FENCELOCK_CLOCK_H

#include <stdint.h>
#include <time.h>
#include <uv.h>

/* Monotonic nanoseconds (never the wall clock): durations for histograms. */
static inline uint64_t clock_ns(void)
{
    return uv_hrtime();
}

/* Monotonic milliseconds, the same clock as clock_ns(): deadlines, ages, retry times. */
static inline uint64_t clock_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* Wall-clock ms since the Unix epoch: only for stamps a person or another node reads
 * (held_since, the audit log); never for a deadline (it jumps when the clock is set). */
static inline uint64_t clock_wall_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
