/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sign.c — signed fencing tokens: fl_sign (FENCE.SIGN), fl_lock_signed (a grant and its
 * signature) and fl_verify (FENCE.VERIFY). The servers hold the key (--token-key); the client
 * never sees it. A signature is 64 lowercase hex digits (docs/fencing.md "Signed tokens").
 */
#include <string.h>

#include "client/client.h"

#define SIG_HEX 64

fl_err fl_sign(fl_client *c, const char *name, uint64_t token, char out[65])
{
    if (!c || !name || !name[0] || !out)
        return FL_EINVAL;
    out[0] = 0;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "FENCE.SIGN");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, token);
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type != REDIS_REPLY_STRING || r->len != SIG_HEX)
        e = cl_fail(c, FL_EPROTO, "FENCE.SIGN: unexpected reply");
    else {
        memcpy(out, r->str, SIG_HEX);
        out[SIG_HEX] = 0;
    }
    freeReplyObject(r);
    return e;
}

fl_err fl_lock_signed(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token,
                      char sig[65])
{
    if (!sig)
        return FL_EINVAL;
    sig[0] = 0;
    fl_err e = fl_lock(s, name, wait_ms, token);
    if (e)
        return e;
    return fl_sign(cl_session_client(s), name, *token, sig);
}

fl_err fl_verify(fl_client *c, const char *name, uint64_t token, const char *sig, int *valid)
{
    if (!c || !name || !name[0] || !sig || !valid)
        return FL_EINVAL;
    struct cl_cmd m;
    uint64_t v = 0;
    cl_cmd_init(&m, "FENCE.VERIFY");
    cl_arg_str(&m, name);
    cl_arg_u64(&m, token);
    cl_arg_str(&m, sig);
    fl_err e = cl_call_int(c, &m, cl_deadline(c), CL_RETRY, &v);
    *valid = e == FL_OK && v == 1;
    return e;
}
