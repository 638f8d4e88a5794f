/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building commands (struct cl_cmd) and reading replies: integers, fields of a map reply, and
 * the mapping of the server's error words (src/common/proto.h) to fl_err (see client.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

bool cl_err_is(const redisReply *r, const char *code)
{
    size_t n = strlen(code);
    return r->type == REDIS_REPLY_ERROR && r->len >= n && memcmp(r->str, code, n) == 0 &&
           (r->len == n || r->str[n] == ' ');
}

void cl_cmd_init(struct cl_cmd *m, const char *name)
{
    m->argc = 0;
    m->block_ms = 0;
    m->wait_idx = 0;
    m->cancel = NULL;
    m->sends = 0;
    cl_arg_str(m, name);
}

void cl_arg(struct cl_cmd *m, const char *p, size_t len)
{
    if (m->argc == CL_ARGS_MAX)
        return; /* callers build at most CL_ARGS_MAX arguments */
    m->argv[m->argc] = p;
    m->len[m->argc++] = len;
}

void cl_arg_str(struct cl_cmd *m, const char *s)
{
    cl_arg(m, s, strlen(s));
}

void cl_arg_u64(struct cl_cmd *m, uint64_t v)
{
    if (m->argc == CL_ARGS_MAX)
        return;
    int n = snprintf(m->num[m->argc], sizeof(m->num[0]), "%llu", (unsigned long long)v);
    cl_arg(m, m->num[m->argc], (size_t)n);
}

/* A resent LOCK asks for the wait that is left, not the whole wait again. */
void cl_wait_refresh(struct cl_cmd *m)
{
    int64_t left = m->wait_end - fl_now_ms();
    int i = m->wait_idx;
    m->block_ms = left > 0 ? left : 0;
    m->len[i] =
        (size_t)snprintf(m->num[i], sizeof(m->num[i]), "%lld", (long long)(left > 1 ? left : 1));
}

void cl_arg_wait(struct cl_cmd *m, int64_t wait_end)
{
    m->wait_idx = m->argc;
    m->wait_end = wait_end;
    cl_arg_u64(m, 1);
    cl_wait_refresh(m);
}

void cl_arg_req(struct cl_cmd *m, uint64_t sid, uint64_t seq)
{
    cl_arg_str(m, "REQ");
    cl_arg_u64(m, sid);
    cl_arg_u64(m, seq);
}

fl_err cl_call_int(fl_client *c, struct cl_cmd *m, int64_t deadline, unsigned flags, uint64_t *v)
{
    redisReply *r;
    fl_err e = cl_call(c, m, deadline, flags, &r);
    if (e)
        return e;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0)
        *v = (uint64_t)r->integer;
    else
        e = cl_reply_err(c, r);
    freeReplyObject(r);
    return e;
}

fl_err cl_reply_err(fl_client *c, const redisReply *r)
{
    static const struct {
        const char *code;
        fl_err err;
    } map[] = {
        {PROTO_NOSESSION, FL_ESESSION},   {PROTO_NOTHOLDER, FL_ENOTHOLDER},
        {PROTO_STALE, FL_ESTALE},         {PROTO_IFREV, FL_EIFREV},
        {PROTO_TOOLARGE, FL_ETOOLARGE},   {PROTO_UNKNOWN, FL_EUNKNOWN},
        {PROTO_NOSPACE, FL_ENOSPACE},     {PROTO_NOAUTH, FL_EAUTH},
        {PROTO_WRONGPASS, FL_EAUTH},      {PROTO_NOPERM, FL_EPERM},
        {PROTO_WRONGTYPE, FL_EWRONGTYPE}, {PROTO_DEADLOCK, FL_EDEADLOCK},
        {PROTO_BROKEN, FL_EBROKEN},
    };
    if (r->type != REDIS_REPLY_ERROR)
        return cl_fail(c, FL_EPROTO, "unexpected reply type %d", r->type);
    fl_err e = FL_ESERVER;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (cl_err_is(r, map[i].code))
            e = map[i].err;
    return cl_fail(c, e, "%.*s", (int)r->len, r->str);
}

const redisReply *cl_field(const redisReply *map, const char *key)
{
    if (!map || map->type != REDIS_REPLY_ARRAY)
        return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i + 1 < map->elements; i += 2) {
        const redisReply *k = map->element[i];
        if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) && k->len == kl &&
            memcmp(k->str, key, kl) == 0)
            return map->element[i + 1];
    }
    return NULL;
}

uint64_t cl_field_u64(const redisReply *map, const char *key)
{
    const redisReply *v = cl_field(map, key);
    return v && v->type == REDIS_REPLY_INTEGER && v->integer > 0 ? (uint64_t)v->integer : 0;
}

char *cl_field_dup(const redisReply *map, const char *key)
{
    const redisReply *v = cl_field(map, key);
    if (v && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS))
        return strndup(v->str, v->len);
    return strdup("");
}

const char *fl_strerror(fl_err err)
{
    static const char *const names[] = {
        [FL_OK] = "ok",
        [FL_EINVAL] = "invalid argument",
        [FL_ENOMEM] = "out of memory",
        [FL_ETIMEOUT] = "timed out",
        [FL_EUNAVAILABLE] = "cluster unavailable",
        [FL_EUNKNOWN] = "outcome unknown",
        [FL_ESESSION] = "session lost",
        [FL_ENOTHOLDER] = "not the holder",
        [FL_EBUSY] = "lock busy",
        [FL_ESTALE] = "stale fencing token",
        [FL_EIFREV] = "revision condition failed",
        [FL_ENOTFOUND] = "not found",
        [FL_ETOOLARGE] = "too large",
        [FL_ESERVER] = "server error",
        [FL_EPROTO] = "protocol error",
        [FL_ENOSPACE] = "server quota full",
        [FL_EAUTH] = "authentication failed",
        [FL_EPERM] = "permission denied",
        [FL_ECOMPACTED] = "events no longer retained",
        [FL_EWRONGTYPE] = "wrong kind of lock",
        [FL_EIO] = "local file error",
        [FL_EDEADLOCK] = "deadlock: the wait would close a cycle",
        [FL_EBROKEN] = "broken: a participant's session ended",
    };
    if ((unsigned)err < sizeof(names) / sizeof(names[0]) && names[err])
        return names[err];
    return "unknown error";
}
