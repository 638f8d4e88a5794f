/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmdstat.c — per-command reply counts (cmdstat.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "server/cmd/cmdstat.h"

/* Column 0 is ok; then the error words of proto.h; the last is "other". */
static const char *const results[] = {
    "ok",           PROTO_ERR,     PROTO_NOSESSION, PROTO_STALE,     PROTO_NOTHOLDER,
    PROTO_IFREV,    PROTO_NOSPACE, PROTO_NOLEADER,  PROTO_NOTLEADER, PROTO_UNKNOWN,
    PROTO_TOOLARGE, PROTO_NOPROTO, PROTO_WRONGPASS, PROTO_COMPACTED, PROTO_SLOWREADER,
    PROTO_NOAUTH,   PROTO_NOPERM,  PROTO_DEADLOCK,  "other",
};
#define NRESULTS (sizeof(results) / sizeof(results[0]))
#define OTHER (NRESULTS - 1)

int cmdstat_init(struct cmdstat *cs, size_t ncmd)
{
    cs->ncmd = ncmd;
    cs->n = calloc((ncmd + 1) * NRESULTS, sizeof(*cs->n));
    return cs->n ? 0 : -1;
}

void cmdstat_free(struct cmdstat *cs)
{
    free(cs->n);
    cs->n = NULL;
}

size_t cmdstat_nresults(void)
{
    return NRESULTS;
}

const char *cmdstat_result_name(size_t result)
{
    return result < NRESULTS ? results[result] : results[OTHER];
}

size_t cmdstat_result(const char *reply, size_t len)
{
    if (len == 0 || reply[0] != '-')
        return 0; /* RESP3 blob errors ('!') are never written by fencelockd */
    size_t w = 1;
    while (w < len && reply[w] != ' ' && reply[w] != '\r')
        w++;
    for (size_t i = 1; i < OTHER; i++)
        if (strlen(results[i]) == w - 1 && memcmp(reply + 1, results[i], w - 1) == 0)
            return i;
    return OTHER;
}

void cmdstat_count(struct cmdstat *cs, size_t cmd, const char *reply, size_t len)
{
    if (!cs->n)
        return;
    if (cmd > cs->ncmd)
        cmd = cs->ncmd;
    cs->n[cmd * NRESULTS + cmdstat_result(reply, len)]++;
}

uint64_t cmdstat_get(const struct cmdstat *cs, size_t cmd, size_t result)
{
    if (!cs->n || cmd > cs->ncmd || result >= NRESULTS)
        return 0;
    return cs->n[cmd * NRESULTS + result];
}

void cmdstat_render(const struct cmdstat *cs, struct buf *out, const char *(*name_of)(size_t cmd))
{
    const char *name = "fencelock_commands_total";
    buf_printf(out,
               "# HELP %s Client commands answered, by command and result (ok or the error "
               "word).\n# TYPE %s counter\n",
               name, name);
    for (size_t c = 0; c <= cs->ncmd; c++)
        for (size_t r = 0; r < NRESULTS; r++) {
            uint64_t v = cmdstat_get(cs, c, r);
            if (v == 0 && (r != 0 || c == cs->ncmd))
                continue;
            buf_printf(out, "%s{command=\"%s\",result=\"%s\"} %llu\n", name,
                       c == cs->ncmd ? CMDSTAT_UNKNOWN_NAME : name_of(c), results[r],
                       (unsigned long long)v);
        }
}
