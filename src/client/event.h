/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfencelock's reading of the event stream (fl_watch): event ids, XREAD replies, entries
 * and the -COMPACTED error, as pure functions of a hiredis reply (no I/O, no clock), so the
 * unit tests can feed them any bytes.
 *
 * Ownership: a parsed struct fl_event borrows the reply's strings (valid while the reply
 * lives) and the caller's struct cl_evbuf for its field array (grown by cl_event_parse, freed
 * by cl_evbuf_free). Nothing here allocates anything else.
 * Invariant: an id that parses is "<rev>-<seq>" with both parts decimal and under 2^64.
 */
#ifndef FL_CLIENT_EVENT_H
#define FL_CLIENT_EVENT_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fencelock.h"

struct cl_wid {
    uint64_t rev, seq;
};

/* "<rev>-<seq>" or "<rev>" (seq 0), the whole n bytes of s: 0, or -1 if malformed. */
int cl_wid_parse(const char *s, size_t n, struct cl_wid *id);
int cl_wid_cmp(struct cl_wid a, struct cl_wid b);
void cl_wid_format(struct cl_wid id, char out[FL_WATCH_ID_MAX]);

/*
 * Where a reader goes on after "-COMPACTED oldest=<oldest>", having read after `after`: after
 * the id just before `oldest` (so the next read starts at it), or after `after` when that is
 * later. Never back to "0": the next read may land on another node (a new leader) that retains
 * more history, and "0" there would hand out again events already delivered.
 */
struct cl_wid cl_wid_past_gap(struct cl_wid after, struct cl_wid oldest);

struct cl_evbuf {
    struct fl_watch_field *v;
    size_t cap;
};
void cl_evbuf_free(struct cl_evbuf *b);

enum cl_parse { CL_PARSE_OK = 0, CL_PARSE_BAD = -1, CL_PARSE_NOMEM = -2 };

/* One XREAD entry, [id, [field, value, ...]], into ev (kind FL_WATCH_EVENT). */
enum cl_parse cl_event_parse(const redisReply *entry, struct cl_evbuf *b, struct fl_event *ev);

/*
 * The entries of `stream` in an XREAD reply of one stream: *out is its array of entries, or
 * NULL when the reply is nil (nothing new). CL_PARSE_BAD for any other shape, or another
 * stream's name.
 */
enum cl_parse cl_xread_entries(const redisReply *r, const char *stream, const redisReply **out);

/* The oldest retained id named by "-COMPACTED oldest=<id> ...": 0, or -1 if not there. */
int cl_compacted_oldest(const redisReply *r, struct cl_wid *oldest);

#endif
