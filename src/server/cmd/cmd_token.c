/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_token.c — AUTH.TOKEN [TTL ms]: a bearer token for the HTTP API (`Authorization: Bearer`)
 * naming the connection's user, valid for TTL ms (--http-token-ttl without it, at most
 * --http-token-max-ttl), and the key it is signed with (struct htok in struct srv;
 * security/httptoken.h has the format).
 *
 * A token carries no permission of its own: each HTTP request presenting it is served with
 * the rights its user has in the ACL at that moment, and it dies with the user (removed from
 * the ACL file, or given a new password) or with the key (a new --http-token-key file). It is
 * answered by any node, from its own clock and key: no state is read, nothing is replicated.
 * Minting one is audited (auth.token): a token is a credential.
 */
#include <sodium.h>
#include <string.h>

#include "common/clock.h"
#include "server/cmd/cmd.h"
#include "server/security/audit.h"

int srv_htok_init(struct srv *s)
{
    char err[700];
    if (htok_load(&s->htok, s->cfg.http_token_key, err, sizeof err)) {
        LOGE(&s->log, "%s; fencelockd does not start without its bearer-token key", err);
        return -1;
    }
    if (s->htok.from_file)
        LOGI(&s->log, "--http-token-key: bearer tokens signed with the key of %s",
             s->cfg.http_token_key);
    return 0;
}

void srv_htok_reload(struct srv *s)
{
    char err[700];
    if (!s->cfg.http_token_key[0])
        return; /* the random key stays: tokens stay valid until the restart */
    if (htok_load(&s->htok, s->cfg.http_token_key, err, sizeof err)) {
        LOGE(&s->log, "SIGHUP: %s; the previous bearer-token key stays", err);
        return;
    }
    LOGI(&s->log, "SIGHUP: --http-token-key re-read (tokens signed with another key are now "
                  "refused)");
}

void authTokenCommand(struct srv_req *r)
{
    struct srv *s = r->s;
    uint64_t ttl = s->cfg.http_token_ttl < s->cfg.http_token_max_ttl ? s->cfg.http_token_ttl
                                                                     : s->cfg.http_token_max_ttl;
    if (r->argc != 1 && (r->argc != 3 || !resp_arg_is(&r->argv[1], "TTL"))) {
        cmd_reply_err(r, PROTO_ERR " syntax error: AUTH.TOKEN [TTL ms]");
        return;
    }
    if (r->argc == 3 && cmd_arg_range(r, 2, "TTL ms", 1000, s->cfg.http_token_max_ttl, &ttl))
        return;
    if (!s->auth.on || !r->c || !r->c->user) {
        cmd_reply_err(r, PROTO_ERR " AUTH.TOKEN needs users (--acl-file): without them the "
                                   "HTTP API asks for no credentials");
        return;
    }
    uint64_t exp = clock_wall_ms() + ttl;
    char tok[HTOK_MAX];
    size_t n = htok_sign(&s->htok, r->c->user, exp, tok);
    if (!n) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    srv_audit(s, r->c, "auth.token", "ttl_ms=%llu expires_ms=%llu", (unsigned long long)ttl,
              (unsigned long long)exp);
    resp_w_bulk(r->out, tok, n);
    sodium_memzero(tok, sizeof tok);
}
