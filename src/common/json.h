/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json — the one JSON writer of the tree (the HTTP API's answers): objects, arrays, strings,
 * unsigned numbers and booleans appended to a struct buf, with the commas and the nesting kept
 * by the writer so a caller cannot produce a missing or doubled comma. Strings go through the
 * one escaping policy (common/text.h, text_json_step), so any bytes, invalid UTF-8 included,
 * come out as one line of valid JSON.
 *
 * Owns: nothing on the heap; struct json is the caller's (usually on the stack) and borrows the
 * buffer. Invariants: depth <= JSON_MAX_DEPTH (a deeper open sets `bad`, as does a key outside
 * an object, a value where a key is due, or a close that does not match); once `bad`, every
 * call does nothing and json_end returns -1. A buffer whose append failed (buf_failed) also
 * makes json_end return -1: the caller answers 500, never a cut document.
 */
#ifndef FENCELOCK_JSON_H
#define FENCELOCK_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define JSON_MAX_DEPTH 16

struct json {
    struct buf *out;
    unsigned depth;
    bool bad;
    bool top; /* the top-level value was begun (any[0] is the first level's own flag) */
    /* per level: 'o' object, 'a' array; whether a member/element was written; in an object,
     * whether the key was written and its value is due */
    char kind[JSON_MAX_DEPTH];
    bool any[JSON_MAX_DEPTH];
    bool want_value[JSON_MAX_DEPTH];
};

void json_init(struct json *j, struct buf *out);
void json_obj(struct json *j);                          /* { */
void json_arr(struct json *j);                          /* [ */
void json_close(struct json *j);                        /* } or ] of the innermost open one */
void json_key(struct json *j, const char *key);         /* "key": (NUL-terminated, escaped) */
void json_str(struct json *j, const char *s, size_t n); /* any bytes */
void json_cstr(struct json *j, const char *s);
void json_u64(struct json *j, uint64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Shorthands inside an object: key then value. */
void json_kv_u64(struct json *j, const char *key, uint64_t v);
void json_kv_str(struct json *j, const char *key, const char *s, size_t n);
void json_kv_cstr(struct json *j, const char *key, const char *s);
void json_kv_bool(struct json *j, const char *key, bool v);
/* 0 when the document is complete (every level closed, nothing misused, no failed append), else
 * -1. */
int json_end(const struct json *j);
/* s[0..n) as a JSON string with its quotes, appended to out (the SSE data lines use it). */
void json_write_str(struct buf *out, const char *s, size_t n);

#endif
