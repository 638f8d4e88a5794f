/*
 * metrics_page — the Prometheus text page served at /metrics: renders the server's counters
 * (struct srv_metrics), the FSM's gauges, quotas and raft transport counters.
 *
 * Owns nothing: appends to the caller's buffer, reads the server's state.
 */
#ifndef FENCELOCK_METRICS_PAGE_H
#define FENCELOCK_METRICS_PAGE_H

#include "common/buf.h"

struct srv;

/* Append the whole /metrics page to `out`. */
void srv_render_metrics(struct srv *s, struct buf *out);

#endif
