/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procstat — the standard Prometheus process_* metrics of this process, read from /proc at
 * scrape time (the names and meanings every exporter uses, so stock dashboards and alerts work):
 * process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds, process_max_fds, process_start_time_seconds.
 *
 * Owns nothing: procstat_parse is pure (unit-tested on fixed text); procstat_render reads
 * /proc/self/stat, /proc/stat and /proc/self/fd, and leaves out what it cannot read.
 */
#ifndef FENCELOCK_PROCSTAT_H
#define FENCELOCK_PROCSTAT_H

#include <stdint.h>

#include "common/buf.h"

struct procstat {
    double cpu_seconds;   /* utime + stime */
    double start_seconds; /* since the epoch */
    uint64_t vsize, rss;  /* bytes */
};

/* Parse /proc/self/stat's text (`stat`) with the boot time `btime` (seconds since the epoch,
 * /proc/stat's btime), clock ticks per second `hz` and page size `page`. 0, or -1 if malformed
 * (the command name in parentheses may hold spaces and ')' itself: the last ')' ends it). */
int procstat_parse(const char *stat, uint64_t btime, long hz, long page, struct procstat *ps);

void procstat_render(struct buf *out);

#endif
