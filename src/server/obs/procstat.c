/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procstat.c — process_* metrics from /proc (procstat.h).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/obs/metrics.h"
#include "server/obs/procstat.h"

#define STAT_FIELDS_AFTER_COMM 22 /* state (3) .. rss (24): the fields read below */

int procstat_parse(const char *stat, uint64_t btime, long hz, long page, struct procstat *ps)
{
    const char *p = strrchr(stat, ')');
    if (!p || hz <= 0 || page <= 0)
        return -1;
    /* fields after the name, numbered as proc(5) does: 3 = state ... 24 = rss */
    unsigned long long f[STAT_FIELDS_AFTER_COMM + 3] = {0};
    p++;
    for (int i = 3; i <= 24; i++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -1;
        char *end;
        if (i == 3) { /* the state letter */
            end = (char *)p + 1;
        } else {
            f[i] = strtoull(p, &end, 10);
            if (end == p)
                return -1;
        }
        p = end;
    }
    ps->cpu_seconds = (double)(f[14] + f[15]) / (double)hz;
    ps->start_seconds = (double)btime + (double)f[22] / (double)hz;
    ps->vsize = f[23];
    ps->rss = f[24] * (uint64_t)page;
    return 0;
}

static int read_text(const char *path, char *out, size_t cap)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return -1;
    size_t n = fread(out, 1, cap - 1, fp);
    fclose(fp);
    out[n] = '\0';
    return n ? 0 : -1;
}

static uint64_t boot_time(void)
{
    char text[8192];
    if (read_text("/proc/stat", text, sizeof text))
        return 0;
    const char *b = strstr(text, "\nbtime ");
    return b ? strtoull(b + 7, NULL, 10) : 0;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory stream's own fd */
}

void procstat_render(struct buf *out)
{
    char stat[1024];
    struct procstat ps;
    if (read_text("/proc/self/stat", stat, sizeof stat) == 0 &&
        procstat_parse(stat, boot_time(), sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), &ps) == 0) {
        metric_render(out, "process_cpu_seconds_total", "counter",
                      "Total user and system CPU time spent in seconds.", ps.cpu_seconds);
        metric_render(out, "process_resident_memory_bytes", "gauge",
                      "Resident memory size in bytes.", (double)ps.rss);
        metric_render(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
                      (double)ps.vsize);
        metric_render(out, "process_start_time_seconds", "gauge",
                      "Start time of the process since unix epoch in seconds.", ps.start_seconds);
    }
    long fds = open_fds();
    if (fds >= 0)
        metric_render(out, "process_open_fds", "gauge", "Number of open file descriptors.",
                      (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        metric_render(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                      rl.rlim_cur == RLIM_INFINITY ? -1.0 : (double)rl.rlim_cur);
}
