/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_sign.c — signed fencing tokens: FENCE.SIGN and FENCE.VERIFY, and the --token-key keys
 * they use (struct tsig in struct srv; tokensig.h has the encoding). The keys are read at
 * start (a missing or short file stops the server) and again on SIGHUP (a bad file keeps the
 * old keys: a typo during a rotation must not take signing away). No key byte is ever logged.
 *
 * FENCE.SIGN is a linearizable read that always goes behind a barrier on the leader, even on
 * a READONLY connection (CMD_FRESH): a signature outlives the read, so it is only made for a
 * token that FENCE.CHECK's rule accepts at that moment on a ready leader. FENCE.VERIFY reads
 * no state and is answered by any node.
 */
#include <string.h>

#include "server/cmd/cmd.h"

int srv_tsig_init(struct srv *s)
{
    char err[TSIG_PATH_MAX + 128];
    if (!s->cfg.n_token_keys)
        return 0;
    if (tsig_load(&s->tsig, s->cfg.token_key, s->cfg.n_token_keys, err, sizeof err)) {
        LOGE(&s->log, "%s; fencelockd does not start without its token keys", err);
        return -1;
    }
    LOGI(&s->log, "--token-key: %zu key(s) read, signing with %s", s->tsig.n, s->cfg.token_key[0]);
    return 0;
}

void srv_tsig_reload(struct srv *s)
{
    char err[TSIG_PATH_MAX + 128];
    if (!s->cfg.n_token_keys)
        return;
    if (tsig_load(&s->tsig, s->cfg.token_key, s->cfg.n_token_keys, err, sizeof err)) {
        LOGE(&s->log, "SIGHUP: %s; the previous token keys stay", err);
        return;
    }
    LOGI(&s->log, "SIGHUP: --token-key re-read, %zu key(s), signing with %s", s->tsig.n,
         s->cfg.token_key[0]);
}

static int need_key(struct srv_req *r, const char *cmd)
{
    if (r->s->tsig.n)
        return 0;
    resp_w_errorf(r->out, PROTO_ERR " %s needs fencelockd started with --token-key", cmd);
    return -1;
}

void fenceSignCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t token;
    if (cmd_arg_name(r, 1, "lock name", &name) || cmd_arg_u64(r, 2, "token", &token) ||
        need_key(r, "FENCE.SIGN"))
        return;
    if (fsm_fence_check(r->s->fsm, name.p, name.len, token) != 0) {
        resp_w_errorf(r->out, PROTO_STALE " token %llu is not the current token of lock %.*s",
                      (unsigned long long)token, (int)name.len, name.p);
        return;
    }
    char sig[TSIG_HEX + 1];
    if (tsig_sign(&r->s->tsig.key[0], name.p, name.len, token, sig)) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    resp_w_bulk(r->out, sig, TSIG_HEX);
}

void fenceVerifyCommand(struct srv_req *r)
{
    struct fsm_str name;
    uint64_t token;
    if (cmd_arg_name(r, 1, "lock name", &name) || cmd_arg_u64(r, 2, "token", &token) ||
        need_key(r, "FENCE.VERIFY"))
        return;
    bool ok = tsig_verify(&r->s->tsig, name.p, name.len, token, r->argv[3].p, r->argv[3].len);
    resp_w_int(r->out, ok ? 1 : 0);
}
