/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_revoke.c — POST /v1/locks/{name}/revoke[?deadline=ms&reason=text]: LOCK.REVOKE from the
 * HTTP port, the port's one write (the console's revoke button), for a request the gate in
 * http_api.c has authenticated.
 *
 * It is LOCK.REVOKE exactly: the same permission check (commands.def's row: `revoke` with a
 * locks= glob matching the name, or `admin`; cmd_perm_allows), the same bounds (deadline
 * 1..--max-wait, reason at most --max-key bytes), the same deadline merge on the leader
 * (cmd_revoke_merge_deadline), the same log entry with the acting user, and the same audit
 * line (lock.revoke, naming the HTTP client's address and the user). What it adds is the
 * CSRF rule, checked before the credentials (srv_http_revoke_csrf_ok): the request must carry
 * `X-Fencelock-Request: 1`, a header no cross-origin page can make a browser send without a
 * CORS preflight, which this server never grants; and credentials come only from the
 * Authorization header or the TLS certificate, never from a cookie. So a page a logged-in
 * operator visits cannot revoke through the browser's cached Basic credentials.
 *
 * Owns: a struct hrev per proposal in flight, with the struct srv_http_pending it answers
 * (freed by srv_http_complete) and copies of what the answer and the audit line need; freed
 * in the proposal's callback, which libraft calls exactly once (with an error status at a
 * step-down or at shutdown). Without users (no --acl-file) only loopback may revoke (a client
 * and a listener on loopback), as the client port without users is loopback-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "server/cmd/cmd.h"
#include "server/obs/http_args.h"
#include "server/security/audit.h"
#include "server/security/peer_guard.h"
#include "server/server.h"

#define HREV_TEXT "text/plain; charset=utf-8"
#define HREV_SUFFIX "/revoke"

struct hrev {
    struct srv_http_pending *p;
    uint64_t deadline_ms;
    char *name; /* the decoded name (nlen bytes), for the answer */
    size_t nlen;
};

bool srv_http_revoke_path(const char *path)
{
    size_t n = strlen(path), sl = sizeof HREV_SUFFIX - 1;
    return !strncmp(path, "/v1/locks/", 10) && n > 10 + sl && !strcmp(path + n - sl, HREV_SUFFIX);
}

bool srv_http_revoke_csrf_ok(const struct srv_http_request *req)
{
    size_t l;
    const char *v = srv_http_header(req, "X-Fencelock-Request", &l);
    return v && l == 1 && v[0] == '1';
}

static void reply(struct srv_http_pending *p, int status, const char *msg)
{
    srv_http_complete(p, status, HREV_TEXT, msg, strlen(msg));
}

/* The query: deadline=ms (1..--max-wait) and reason=text (percent-encoded, at most --max-key
 * bytes), each at most once, nothing else: the port's one query parser (http_args.h) with
 * revoke's two parameters; the --max-wait bound is revoke's own. */
static int parse_query(struct srv *s, const char *q, uint64_t *deadline, char *reason, size_t *rlen,
                       char *err, size_t errlen)
{
    struct hapi_query hq = {.reason = reason};
    if (hapi_parse_query_keys(q, HAPI_Q_REVOKE, &hq, s->cfg.max_key, err, errlen - 1)) {
        size_t n = strlen(err); /* errlen - 1 above left room for the newline */
        snprintf(err + n, errlen - n, "\n");
        return -1;
    }
    if (hq.deadline > s->cfg.max_wait) {
        snprintf(err, errlen, "deadline: milliseconds, 1..--max-wait (%llu)\n",
                 (unsigned long long)s->cfg.max_wait);
        return -1;
    }
    *deadline = hq.deadline;
    *rlen = hq.reason_len;
    return 0;
}

static void revoke_done(void *ctx, int status, const struct fsm_reply *r)
{
    struct hrev *h = ctx;
    if (status != RN_OK) {
        reply(h->p, 503,
              "the leader lost its leadership before the revoke committed: it may or may not "
              "have applied; read the lock and try again\n");
    } else if (r->kind == FSM_REPLY_ERR) {
        char msg[FSM_ERR_LEN + 2];
        snprintf(msg, sizeof msg, "%s\n", r->err);
        bool conflict = !strncmp(r->err, PROTO_NOTHOLDER, strlen(PROTO_NOTHOLDER)) ||
                        !strncmp(r->err, PROTO_WRONGTYPE, strlen(PROTO_WRONGTYPE));
        reply(h->p, conflict ? 409 : 500, msg);
    } else {
        struct buf body;
        struct json j;
        buf_init(&body);
        json_init(&j, &body);
        json_obj(&j);
        json_kv_str(&j, "name", h->name, h->nlen);
        json_kv_u64(&j, "token", r->value);
        json_kv_u64(&j, "deadline_ms", h->deadline_ms);
        json_close(&j);
        if (json_end(&j) || buf_failed(&body))
            reply(h->p, 500, "out of memory\n");
        else
            srv_http_complete(h->p, 200, "application/json", body.p, body.len);
        buf_free(&body);
    }
    free(h->name);
    free(h);
}

/* Whether u (NULL without users) may revoke name, as LOCK.REVOKE's row says. */
static bool allowed(struct srv *s, const struct srv_http_request *req, const struct acl_user *u,
                    const char *name, size_t nl)
{
    if (!s->auth.on)
        return srv_host_loopback(req->peer) && srv_host_loopback(s->cfg.http_host);
    return cmd_perm_allows(u, srv_cmd_at(SRV_CMD_LOCK_REVOKE), name, nl);
}

/* Propose it: 0 when the answer will come from revoke_done, else the status to answer now
 * with the reason in err. name is taken over by the struct hrev on success. */
static int propose(struct srv *s, const struct srv_http_request *req, const struct acl_user *u,
                   struct hrev *h, const char *reason, size_t rlen, char *err, size_t errlen)
{
    char by[FSM_MAX_USER + AUDIT_ADDR_BUF + 16];
    snprintf(by, sizeof by, "%s@%s (HTTP)", u ? u->name : "", req->peer);
    struct fsm_cmd cmd = {.op = FSM_OP_LOCK_REVOKE, .lock_revoke = {.deadline_ms = h->deadline_ms}};
    struct fsm_cmd_lock_revoke *c = &cmd.lock_revoke;
    c->name = (struct fsm_str){h->name, (uint32_t)h->nlen};
    c->reason = (struct fsm_str){reason, (uint32_t)rlen};
    c->by = (struct fsm_str){u ? by : by + 1, (uint32_t)strlen(u ? by : by + 1)};
    uint64_t asked = c->deadline_ms;
    cmd_revoke_merge_deadline(s, c);
    h->deadline_ms = c->deadline_ms;
    struct buf gate_msg;
    buf_init(&gate_msg);
    int gate = srv_format_gate(s, &cmd, &gate_msg);
    buf_free(&gate_msg);
    if (gate < 0) {
        snprintf(err, errlen, "the cluster is being upgraded: finish it first\n");
        return 503;
    }
    if (gate == 0) { /* the entry carries the acting user, as cmd_acting_user sets it */
        cmd.checked = s->auth.on;
        if (s->auth.on && u) {
            cmd.user = (struct fsm_str){u->name, (uint32_t)strlen(u->name)};
            cmd.admin = (u->perms & ACL_ADMIN) != 0;
        }
    }
    if (srv_propose(s, &cmd, revoke_done, h) != RN_OK) {
        snprintf(err, errlen, "not proposed: not the ready leader any more, or out of memory\n");
        return 503;
    }
    char shown[CMD_ARG_TEXT];
    struct resp_arg a = {h->name, h->nlen};
    srv_audit_as(s, u ? u->name : "", req->peer, "lock.revoke",
                 "name=%s deadline_ms=%llu asked_ms=%llu via=http", cmd_arg_text(&a, shown),
                 (unsigned long long)c->deadline_ms, (unsigned long long)asked);
    return 0;
}

void srv_http_revoke(struct srv *s, const struct srv_http_request *req, struct srv_http_pending *p,
                     const struct acl_user *u)
{
    size_t cap = s->cfg.max_key;
    char err[200];
    char *name = malloc(cap + 1), *reason = malloc(cap + 1);
    struct hrev *h = calloc(1, sizeof *h);
    if (!name || !reason || !h) {
        reply(p, 503, "out of memory\n");
        goto out;
    }
    size_t plen = strlen(req->path) - 10 - (sizeof HREV_SUFFIX - 1);
    long nl = hapi_pct_decode(req->path + 10, plen, name, cap);
    size_t rlen;
    if (nl <= 0) {
        reply(p, 400,
              "bad name in the path: empty, bad percent-encoding, or longer than "
              "--max-key\n");
        goto out;
    }
    if (parse_query(s, req->query, &h->deadline_ms, reason, &rlen, err, sizeof err)) {
        reply(p, 400, err);
        goto out;
    }
    if (!allowed(s, req, u, name, (size_t)nl)) {
        char shown[CMD_ARG_TEXT];
        struct resp_arg a = {name, (size_t)nl};
        s->m.perm_denials++;
        if (s->auth.on && srv_seclog_allow(s))
            srv_audit_as(s, u ? u->name : "", req->peer, "permission.denied",
                         "POST /v1/locks/%s/revoke: needs revoke on the name, or admin",
                         cmd_arg_text(&a, shown));
        reply(p, 403,
              s->auth.on ? "this user may not revoke this lock (needs the revoke permission with "
                           "a locks= glob matching it, or admin)\n"
                         : "without users (--acl-file) only loopback may revoke\n");
        goto out;
    }
    if (!srv_ready(s)) {
        if (!srv_http_redirect_to_leader(s, p, req->path, req->query))
            reply(p, 503,
                  "not the ready leader, and its HTTP address is not known: send the "
                  "revoke to the leader's HTTP port\n");
        goto out;
    }
    h->p = p;
    h->name = name;
    h->nlen = (size_t)nl;
    int st = propose(s, req, u, h, reason, rlen, err, sizeof err);
    if (st == 0) {
        free(reason);
        return; /* revoke_done answers and frees h and name */
    }
    reply(p, st, err);
out:
    free(name);
    free(reason);
    free(h);
}
