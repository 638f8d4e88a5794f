/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmdstat — what every command answered: the counts behind
 * fencelock_commands_total{command, result} (result: "ok", or the reply's error word, or
 * "other" for a word not in the list). Pure: no clock, no I/O; the server feeds it each finished
 * reply (srv_dispatch for a reply written at once, srv_slot_done for one that waited).
 *
 * Owns: one calloc'd table of counts, (commands + 1) rows by CMDSTAT_NRESULTS columns; the last
 * row is "unknown" (a command name not in the table). cmdstat_free releases it.
 */
#ifndef FENCELOCK_CMDSTAT_H
#define FENCELOCK_CMDSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct cmdstat {
    uint64_t *n;
    size_t ncmd; /* rows 0..ncmd-1: commands by table index; row ncmd: unknown */
};

#define CMDSTAT_UNKNOWN_NAME "unknown"

/* 0, or -1 out of memory (then every count is dropped, nothing breaks). */
int cmdstat_init(struct cmdstat *cs, size_t ncmd);
void cmdstat_free(struct cmdstat *cs);

/* The result column of a reply: 0 = ok (anything but an error), else its error word's. */
size_t cmdstat_result(const char *reply, size_t len);
const char *cmdstat_result_name(size_t result);
size_t cmdstat_nresults(void);

/* Count one reply of command `cmd` (ncmd for an unknown command). */
void cmdstat_count(struct cmdstat *cs, size_t cmd, const char *reply, size_t len);
uint64_t cmdstat_get(const struct cmdstat *cs, size_t cmd, size_t result);

/* fencelock_commands_total: every command with result="ok" (zeros too, so rate() works from
 * the start), error results and the unknown row only once seen. */
void cmdstat_render(const struct cmdstat *cs, struct buf *out, const char *(*name_of)(size_t cmd));

#endif
