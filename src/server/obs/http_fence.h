/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_fence — GET /v1/fence on the HTTP port: FENCE.CHECK for a resource's gatekeeper (nginx's
 * auth_request), answered after a read barrier (or at once under the leader's read lease,
 * srv_read_lease), like FENCE.CHECK on the client port.
 *
 * Owns (struct srv_hfence, in struct srv as `hfence`): the checks waiting for the next barrier
 * and those the barrier in flight covers. At most one barrier is in flight; a check that finds
 * none issues one at once, the checks arriving meanwhile share the next one (issued from the
 * callback), so a burst of requests costs one log entry per round trip, not one each. A check
 * not answered at once under the lease is answered from a barrier's callback (which libraft runs
 * for success, failure and shutdown alike) and freed there; its HTTP request may have closed
 * meanwhile (http.h: the answer is dropped). How many checks wait is bounded by the HTTP connection
 * cap
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
    /* set by the gate (http_api.c) only during its call of srv_http_fence_route: the user the
     * request authenticated as, whose locks= globs the name must match (FENCE.CHECK's rule) */
    bool gated;
    const struct acl_user *user;
};

/* GET /v1/fence, called by the gate (http_api.h: srv_http_fence_route) once the request is
 * admitted. */

#endif
