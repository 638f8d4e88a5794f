/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_api — the read-only JSON API on the HTTP port (/v1/locks, /v1/locks/{name},
 * /v1/sessions, /v1/sessions/{id}, /v1/members, /v1/elections, /v1/semaphores) and the gate in
 * front of every authenticated path (/v1/..., /v1/fence, and /metrics with
 * --http-metrics-auth): HTTP Basic over the --acl-file users, checked by security/auth.c as
 * AUTH is (srv_auth_http), or `Authorization: Bearer` with an AUTH.TOKEN token
 * (security/httptoken.h), under the same transport rule (TLS, or loopback on both ends).
 *
 * Owns (struct srv_hapi, in struct srv as `hapi`): the API requests waiting for the next read
 * barrier and those the barrier in flight covers, batched as http_fence.c batches its checks
 * (one barrier in flight; those arriving meanwhile share the next), unless the leader's read
 * lease answers them at once (srv_read_lease). Each struct hapi_req owns a
 * copy of its request head (the HTTP layer's is valid only during the handler call) and its
 * struct srv_http_pending until it answers it (srv_http_complete frees that); it is freed when
 * answered. A request waiting for its password check belongs to auth.c's wait until the
 * callback. How many wait is bounded by --http-max-conns: each holds its connection.
 */
#ifndef FENCELOCK_HTTP_API_H
#define FENCELOCK_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/obs/http.h"

struct hapi_req;
struct hev;
struct srv;

struct srv_hapi {
    struct hapi_req *waiting, *waiting_tail; /* for the next barrier */
    struct hapi_req *inflight;               /* covered by the barrier in flight */
    bool busy;                               /* a barrier is in flight */
    struct hev *streams;                     /* open /v1/events streams (http_events.c) */
    size_t nstreams;
    uint64_t sse_events;    /* events sent on streams */
    uint64_t sse_closes[2]; /* streams closed: [0] compacted (fell behind), [1] an error */
};

/* GET /v1/events (http_events.c), once admitted: 0 when answered (a stream, or the connection
 * was gone), else the HTTP status to answer with the reason in err. user: the ACL user's name
 * (NULL without users); the stream carries only the events that user may see. */
int srv_http_events_begin(struct srv *s, struct srv_http_pending *p,
                          const struct srv_http_request *req, const char *user, const char *prefix,
                          size_t plen, const char *after, size_t alen, bool has_after, char *err,
                          size_t errlen);
/* Events were applied: every stream sends what it can (the apply hook, lease/timers.c). */
void srv_http_events_wake(struct srv *s);

/* The async handler (http.h) of fencelockd's HTTP port: the gate, the API, /v1/fence
 * (http_fence.c) and, with --http-metrics-auth under users, /metrics. arg is the struct srv. */
int srv_http_async_route(void *arg, const struct srv_http_request *req, struct srv_http_pending *p);

/* POST /v1/locks/{name}/revoke (http_revoke.c): whether path is that route; whether the
 * request carries the CSRF header (X-Fencelock-Request: 1); and the revoke itself once the
 * gate authenticated the request as u (NULL without users): answers p now or after the
 * proposal (req is read during the call only). */
struct acl_user;
/* Not the leader, the leader's HTTP address known (MEMBER_HTTP, announced by each node:
 * cluster/members.c): answers p with 307 to the same path and query there (https when its HTTP
 * port speaks TLS; a browser or `curl -L` follows it, method and body kept, as 307 says;
 * credentials go along only where the client's own rules allow: docs/server.md) and returns
 * true; false (p untouched) when no leader or no HTTP address of it is known. */
bool srv_http_redirect_to_leader(struct srv *s, struct srv_http_pending *p, const char *path,
                                 const char *query);
bool srv_http_revoke_path(const char *path);
bool srv_http_revoke_csrf_ok(const struct srv_http_request *req);
void srv_http_revoke(struct srv *s, const struct srv_http_request *req, struct srv_http_pending *p,
                     const struct acl_user *u);

/* /v1/fence once admitted (http_fence.c). */
int srv_http_fence_route(void *arg, const struct srv_http_request *req, struct srv_http_pending *p);

#endif
