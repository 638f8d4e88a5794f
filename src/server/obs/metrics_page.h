/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_page — the Prometheus text page served at /metrics: renders the server's counters
 * (struct srv_metrics), the FSM's gauges, quotas and raft transport counters.
 *
 * Owns nothing: appends to the caller's buffer, reads the server's state.
 */
#ifndef FENCELOCK_METRICS_PAGE_H
#define FENCELOCK_METRICS_PAGE_H

#include <stdbool.h>

#include "common/buf.h"

struct srv;

/* Append the whole /metrics page to `out`. */
void srv_render_metrics(struct srv *s, struct buf *out);

/* What /health answers "ok" for: a ready leader, or a follower that knows a leader (also the
 * fencelock_healthy gauge, so an alert needs no separate probe). */
bool srv_healthy(struct srv *s);

#endif
