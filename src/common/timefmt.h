/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timefmt — the one RFC 3339 form of a wall-clock time: "2026-12-05T05:00:39.123Z" (UTC,
 * milliseconds, 'Z'), as the text log, the JSON log, the audit log and the CLI print it.
 *
 * Owns: nothing (pure; the caller reads the clock and owns out). Invariants: the output is
 * always exactly TIME_RFC3339_LEN bytes plus a NUL; milliseconds are truncated, never rounded
 * up (a time never shows a later second than it had); a time outside years 0000..9999 is not
 * written as a wrong date: the placeholder TIME_RFC3339_NONE is written and -1 returned.
 */
#ifndef FENCELOCK_TIMEFMT_H
#define FENCELOCK_TIMEFMT_H

#include <stdint.h>

#define TIME_RFC3339_LEN 24 /* strlen("2026-12-05T05:00:39.123Z") */
#define TIME_RFC3339_BUF (TIME_RFC3339_LEN + 1)
#define TIME_RFC3339_NONE "0000-00-00T00:00:00.000Z" /* no representable time */

/* ms since the Unix epoch, UTC, into out. 0 ok; -1 (out = TIME_RFC3339_NONE) when the year
 * would be past 9999. */
int time_rfc3339(char out[TIME_RFC3339_BUF], uint64_t ms);

#endif
