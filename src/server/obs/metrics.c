/* SPDX-License-Identifier: Apache-2.0 */
#include "server/obs/metrics.h"

/* From 100 us (a commit on a fast disk) to a day (a lock a nightly job holds): a hold of
 * minutes or hours lands in a bucket of its own, not in +Inf. */
static const double bounds[HIST_NB] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,   1,
    2.5,    5,       10,     30,    60,     120,   300,  600,   1800, 3600, 7200, 14400, 86400};

void hist_observe(struct hist *h, double seconds)
{
    int i = 0;
    while (i < HIST_NB && seconds > bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += seconds;
}

void hist_render(struct buf *out, const char *name, const char *help, const struct hist *h)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < HIST_NB; i++) {
        cum += h->counts[i];
        buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], (unsigned long long)cum);
    }
    cum += h->counts[HIST_NB];
    buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    buf_printf(out, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
               (unsigned long long)h->count);
}

void metric_render(struct buf *out, const char *name, const char *type, const char *help,
                   double value)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
}
