/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace — the W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/): the one
 * parser and printer of it in the tree (server, libfencelock, CLI).
 *
 * Owns nothing: functions read the caller's bytes and fill the caller's struct. The text form
 * is exactly "00-<32 hex>-<16 hex>-<2 hex>" (55 bytes, lowercase hex): version 00, a trace id
 * and a parent id that are not all zeros, and the trace flags. Anything else is refused
 * (strictly: no other version, no upper case, no trailing fields, no whitespace), so a stored
 * traceparent always prints back as the bytes it was given. The binary form is the 26 bytes
 * version, trace id, parent id, flags, in that order.
 */
#ifndef FENCELOCK_COMMON_TRACE_H
#define FENCELOCK_COMMON_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_TEXT_LEN 55 /* "00-" 32 "-" 16 "-" 2 */
#define TRACE_BIN_LEN 26  /* version, 16-byte trace id, 8-byte parent id, flags */

struct trace_ctx {
    uint8_t b[TRACE_BIN_LEN];
};

/* Parse the text form (n bytes at s, no NUL needed): 0, or -1 (and *out untouched). */
int trace_parse(const char *s, size_t n, struct trace_ctx *out);
/* Whether 26 binary bytes are a valid traceparent (version 0, ids not all zeros). */
int trace_bin_valid(const uint8_t b[TRACE_BIN_LEN]);
/* The text form into out (TRACE_TEXT_LEN bytes and a NUL: at least TRACE_TEXT_LEN + 1). */
void trace_format(const struct trace_ctx *t, char out[TRACE_TEXT_LEN + 1]);

#endif
