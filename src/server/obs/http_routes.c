/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_routes.c — what the HTTP endpoint (http.c) serves: /metrics (metrics_page.c), /readyz
 * (JSON: ok when this node is a ready leader or a follower that knows a leader; /health is its
 * older name, kept) and /livez (200 whenever it is answered).
 *
 * Why two probes: /readyz is 503 on every node while a quorum is lost, so a liveness probe on
 * it would restart every pod at once, which makes the loss last longer. /livez only proves that
 * the process and its event loop run: it is answered from the loop, so a stuck loop is a
 * timeout, and nothing in the cluster's state can make it fail.
 */
#include <string.h>

#include "server/obs/metrics_page.h"
#include "server/server.h"

bool srv_healthy(struct srv *s)
{
    uint64_t lid;
    const char *laddr;
    rn_leader(s->rn, &lid, &laddr);
    return srv_ready(s) || (s->cluster.role == RN_FOLLOWER && lid);
}

void srv_http_route(void *arg, const char *method, const char *path, struct buf *body, int *status,
                    const char **ctype)
{
    struct srv *s = arg;
    (void)method;
    if (!strcmp(path, "/metrics")) {
        srv_render_metrics(s, body);
        *status = 200;
        *ctype = "text/plain; version=0.0.4";
    } else if (!strcmp(path, "/livez")) {
        buf_printf(body, "{\"status\":\"alive\",\"id\":%llu}\n", (unsigned long long)s->cfg.id);
        *status = 200;
        *ctype = "application/json";
    } else if (!strcmp(path, "/readyz") || !strcmp(path, "/health")) {
        uint64_t lid;
        const char *laddr;
        rn_leader(s->rn, &lid, &laddr);
        buf_printf(body,
                   "{\"status\":\"%s\",\"role\":\"%s\",\"id\":%llu,\"leader_id\":%llu,"
                   "\"term\":%llu,\"applied_index\":%llu}\n",
                   srv_healthy(s) ? "ok" : "unavailable", srv_role_name(s->cluster.role),
                   (unsigned long long)s->cfg.id, (unsigned long long)lid,
                   (unsigned long long)rn_term(s->rn), (unsigned long long)rn_applied_index(s->rn));
        *status = strstr(body->p, "\"ok\"") ? 200 : 503;
        *ctype = "application/json";
    } else {
        buf_append_str(body, "not found\n");
        *status = 404;
        *ctype = "text/plain";
    }
}
