/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fencelock CLI output: a streaming JSON writer for --json, and the few helpers the human
 * output shares.
 *
 * struct jw writes straight to a FILE (no buffer of its own, nothing to free). It tracks
 * nesting so commas come out right: call jw_key() before every value inside an object, none
 * inside an array. Strings are escaped by the one JSON policy of common/text.h (bytes that are
 * not valid UTF-8 as \u00XX of the byte, so the output is always valid JSON); jw_bytes() instead
 * writes "KEY": text or "KEY_base64": data, so binary values survive exactly.
 * Invariant: depth <= JW_MAX_DEPTH (deeper calls are ignored: a programming error).
 */
#ifndef FENCELOCK_CLI_OUT_H
#define FENCELOCK_CLI_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/text.h"

#define JW_MAX_DEPTH 8

struct jw {
    FILE *f;
    int depth;
    int need_comma[JW_MAX_DEPTH + 1];
    char close[JW_MAX_DEPTH + 1]; /* the bracket that closes each open level */
    int after_key;                /* a key was just written: the value needs no comma */
};

void jw_init(struct jw *w, FILE *f);
void jw_obj(struct jw *w); /* { */
void jw_arr(struct jw *w); /* [ */
void jw_end(struct jw *w); /* } or ]; a newline after the outermost one */
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s); /* NULL writes null */
void jw_strn(struct jw *w, const void *s, size_t len);
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_bool(struct jw *w, int v);
/* Key `key` with the bytes as a string if they are valid UTF-8, else `key`_base64. */
void jw_bytes(struct jw *w, const char *key, const void *s, size_t len);

/*
 * Text from a server (names, values, addresses) for a terminal: the one escaping function of
 * the human output, text_name_step's printable-name policy (common/text.h): control bytes (C0,
 * DEL, the C1 range U+0080..U+009F) and bytes that are not valid UTF-8 as \xHH (\n \r \t as
 * such), a backslash as \\; so no server can move the cursor, retitle the window or hide text
 * with escape sequences, and the output still tells distinct names apart. OUT_QUOTE also
 * escapes '"' (inside quotes); OUT_ASCII escapes every byte >= 0x80. --json output is escaped
 * by jw_* instead (text_json_step, the one JSON policy).
 */
enum { OUT_QUOTE = TEXT_QUOTE, OUT_ASCII = TEXT_ASCII };
void out_esc(FILE *f, const void *s, size_t len, int flags);
/* out_esc of a C string (NULL writes nothing). */
void out_str(FILE *f, const char *s);

/* out_str left-aligned in a column of width characters (bytes), as printf's %-Ns. */
void out_pad(FILE *f, const char *s, int width);

/* Write a wall-clock time in ms since the epoch as "2026-12-03T07:33:40.123Z" (timefmt.h) into
   buf, or "N ms" when it has no such form (past year 9999). */
void fmt_wallclock(char *buf, size_t size, uint64_t ms);

#endif
