/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_fence — GET /v1/fence on the HTTP port: FENCE.CHECK for a resource's gatekeeper (nginx's
 * auth_request), answered after a read barrier, like FENCE.CHECK on the client port.
 *
 * Owns (struct srv_hfence, in struct srv as `hfence`): the checks waiting for the next barrier
 * and those the barrier in flight covers. At most one barrier is in flight; a check that finds
 * none issues one at once, the checks arriving meanwhile share the next one (issued from the
 * callback), so a burst of requests costs one log entry per round trip, not one each. Every
 * check is answered from a barrier's callback (which libraft runs for success, failure and
 * shutdown alike) and freed there; its HTTP request may have closed meanwhile (http.h: the
 * answer is dropped). How many checks wait is bounded by the HTTP connection cap
 * (--http-max-conns): each holds its connection.
 */
#ifndef FENCELOCK_HTTP_FENCE_H
#define FENCELOCK_HTTP_FENCE_H

#include <stdbool.h>

#include "server/obs/http.h"

struct hf_check;

struct srv_hfence {
    struct hf_check *waiting, *waiting_tail; /* for the next barrier */
    struct hf_check *inflight;               /* covered by the barrier in flight */
    bool busy;                               /* a barrier is in flight */
};

/* The async handler (http.h) of fencelockd's HTTP port: takes /v1/fence, nothing else.
 * arg is the struct srv. */
int srv_http_async_route(void *arg, const struct srv_http_request *req, struct srv_http_pending *p);

#endif
