/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_hint.c — what an unknown command that users of Redis try first should be told: the
 * fencelock command that does the job (docs/protocol.md "Coming from Redis"). Read-only
 * table compiled in; nothing is allocated.
 */
#include <stddef.h>

#include "server/cmd/cmd.h"

static const struct {
    const char *name;
    const char *hint;
} hints[] = {
    {"SET", "fencelock's is PUT key value [LEASE sid] [FENCE name token] [IFREV rev]"},
    {"SETNX", "fencelock's is PUT key value IFREV 0 (written only if the key is absent)"},
    {"SETEX", "keys do not expire on a timer: PUT key value LEASE sid deletes the key when the "
              "session ends (SESSION.OPEN ttl_ms opens one)"},
    {"PSETEX", "keys do not expire on a timer: PUT key value LEASE sid deletes the key when the "
               "session ends (SESSION.OPEN ttl_ms opens one)"},
    {"EXPIRE", "keys do not expire on a timer: PUT key value LEASE sid ties a key to a session "
               "(SESSION.OPEN ttl_ms), and it is deleted when the session ends"},
    {"PEXPIRE", "keys do not expire on a timer: PUT key value LEASE sid ties a key to a session "
                "(SESSION.OPEN ttl_ms), and it is deleted when the session ends"},
    {"TTL", "a leased key lives as long as its session: KV.GET key names the lease, "
            "SESSION.INFO sid its remaining_ms"},
    {"PTTL", "a leased key lives as long as its session: KV.GET key names the lease, "
             "SESSION.INFO sid its remaining_ms"},
    {"EXISTS", "fencelock's is KV.GET key (nil when absent)"},
    {"UNLINK", "fencelock's is DEL key"},
    {"MGET", "fencelock's is GET key, one key at a time, or KEYS prefix to list names"},
    {"SCAN", "fencelock's is KEYS prefix [LIMIT n]"},
    {"INCRBY", "fencelock's is INCR key BY n"},
    {"DECR", "fencelock's is INCR key BY -1"},
    {"DECRBY", "fencelock's is INCR key BY -n"},
    {"SUBSCRIBE", "changes are an event stream: XREAD BLOCK ms STREAMS fencelock:events $"},
};

const char *cmd_unknown_hint(const struct resp_arg *name)
{
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (resp_arg_is(name, hints[i].name))
            return hints[i].hint;
    return NULL;
}
