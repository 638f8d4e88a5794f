/* SPDX-License-Identifier: Apache-2.0 */
/*
 * token.c — fl_auth_token (AUTH.TOKEN): a bearer token for the HTTP API naming the client's
 * user. The servers sign it; the client only passes it on. Answered by any node.
 */
#include <string.h>

#include "client/client.h"

fl_err fl_auth_token(fl_client *c, uint64_t ttl_ms, char *out, size_t cap)
{
    if (!c || !out || cap == 0)
        return FL_EINVAL;
    out[0] = 0;
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "AUTH.TOKEN");
    if (ttl_ms) {
        cl_arg_str(&m, "TTL");
        cl_arg_u64(&m, ttl_ms);
    }
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if (r->type != REDIS_REPLY_STRING || r->len == 0)
        e = cl_fail(c, FL_EPROTO, "AUTH.TOKEN: unexpected reply");
    else if (r->len >= cap)
        e = cl_fail(c, FL_EINVAL, "AUTH.TOKEN: the token does not fit in the buffer");
    else {
        memcpy(out, r->str, r->len);
        out[r->len] = 0;
    }
    freeReplyObject(r);
    return e;
}
