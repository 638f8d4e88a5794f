/* SPDX-License-Identifier: Apache-2.0 */
/*
 * num — the one parser of unsigned decimal numbers (config values, RESP arguments, stream ids,
 * CLI arguments).
 *
 * Owns: nothing (pure functions writing only *out). Invariants: the whole of p[0..len) is
 * ASCII digits (no sign, no space, no "0x", no trailing byte), at least one; leading zeros are
 * read ("007" is 7, as every caller accepted before); a value that does not fit in 64 bits or
 * lies outside [min, max] is refused, never wrapped or clamped. On an error *out is untouched.
 * Return 0 ok, -1 otherwise.
 */
#ifndef FENCELOCK_NUM_H
#define FENCELOCK_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Any value in [min, max] (inclusive). p may be NULL only with len 0 (refused). */
int num_parse_u64_in(const char *p, size_t len, uint64_t min, uint64_t max, uint64_t *out);

/* The whole 64-bit range: num_parse_u64_in(p, len, 0, UINT64_MAX, out). */
int num_parse_u64(const char *p, size_t len, uint64_t *out);

/* The same for a NUL-terminated string (NULL refused): the length is strlen(s). */
int num_parse_u64_str(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
