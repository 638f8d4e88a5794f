/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text — bytes from outside (a client's key, a server's name, a log message) as text: the one
 * UTF-8 validator, the one JSON string escaper and the one way to show a name to a person.
 * The JSON logs (log.c), the audit log (server/security/audit.c) and the CLI (cli/out.c) all call
 * these; nothing else in the tree decides what valid UTF-8 is or how a byte is escaped for JSON.
 *
 * UTF-8 (RFC 3629): text_utf8_len is the length of the valid sequence at p, or 0 for a byte
 * that starts none: a lone continuation byte, a lead byte cut short (by the end of the input or
 * a non-continuation byte), an overlong form, a surrogate (U+D800..U+DFFF), anything past
 * U+10FFFF, and 0xc0 0xc1 0xf5..0xff. ASCII, control bytes included, is valid (length 1).
 *
 * The JSON policy (RFC 8259 strings, the same in every JSON the tree writes):
 *   '"' -> \"   '\' -> \\   LF CR TAB -> \n \r \t (the short forms: the audit log and the
 *   CLI's --json wrote them before there was one policy, and their golden outputs stay);
 *   every other byte < 0x20, and DEL 0x7f -> \u00XX (lowercase hex);
 *   a valid UTF-8 sequence of 2-4 bytes -> itself (U+0080..U+009F included: JSON is not a
 *   terminal); every byte that starts no valid sequence -> \u00XX of that byte, alone.
 * So the output is always valid JSON on one line, whatever the input. In the raw JSON text,
 * \u0080..\u00ff only ever stands for a byte of invalid UTF-8 (valid UTF-8 is never escaped),
 * though a JSON decoder reads it as U+0080..U+00FF.
 *
 * The printable-name policy (a name, key or value shown on a terminal or inside error text):
 *   '\' -> \\, '"' -> \" with TEXT_QUOTE only; LF CR TAB -> \n \r \t; every other byte < 0x20,
 *   DEL, each byte of a C1 control (U+0080..U+009F, which a terminal may take as CSI) and every
 *   byte that starts no valid UTF-8 sequence -> \xHH (lowercase); with TEXT_ASCII every byte
 *   >= 0x80 -> \xHH; other valid UTF-8 -> itself. So a shown name cannot move the cursor,
 *   retitle a window or hide text, and distinct names stay distinct.
 *   TEXT_HEX writes every escape as \xHH, '\' and LF CR TAB included (\x5c \x0a \x0d \x09):
 *   the server's error replies and log lines show names so (cmd_arg_text, TEXT_HEX|TEXT_ASCII:
 *   printable ASCII or \xHH), and clients and tests match those reply bytes, so they stay.
 *
 * Invariants: a step consumes at least one input byte when n > 0 and writes at most
 * TEXT_STEP_MAX bytes; the bounded forms never cut an escape or a UTF-8 sequence (they stop
 * before a step that does not fit and say how much input they consumed).
 * Ownership: nothing is allocated; every buffer is the caller's. No state, thread-safe.
 */
#ifndef FENCELOCK_TEXT_H
#define FENCELOCK_TEXT_H

#include <stddef.h>

#define TEXT_STEP_MAX 6 /* the longest output of one step: \u00XX, or a 4-byte sequence */

enum { TEXT_QUOTE = 1, TEXT_ASCII = 2, TEXT_HEX = 4 }; /* text_name flags */

/* The length (1-4) of the valid UTF-8 sequence at p[0..n), or 0 if p[0] starts none (or n is
 * 0). */
size_t text_utf8_len(const void *p, size_t n);
/* 1 if all of p[0..n) is valid UTF-8, else 0. */
int text_utf8_valid(const void *p, size_t n);

/* One step of the JSON policy: the character at p[0..n) (n >= 1) into out, escaped. Returns
 * the bytes written (1..TEXT_STEP_MAX; out is not NUL-terminated); *used gets the input bytes
 * consumed (1..4). For writers that stream (a FILE, a growing buffer). */
size_t text_json_step(const void *p, size_t n, char out[TEXT_STEP_MAX], size_t *used);
/* in[0..n) as the inside of a JSON string (no quotes) into out: at most cap - 1 bytes and a
 * NUL (if cap > 0). Stops before a step that would not fit. Returns the input bytes consumed
 * (n if everything fit). */
size_t text_json_escape(const void *in, size_t n, char *out, size_t cap);

/* One step of the printable-name policy (flags: TEXT_QUOTE, TEXT_ASCII, TEXT_HEX); as
 * text_json_step. */
size_t text_name_step(const void *p, size_t n, int flags, char out[TEXT_STEP_MAX], size_t *used);
/* in[0..n) shown as a name into out, bounded and NUL-terminated as text_json_escape. */
size_t text_name(const void *in, size_t n, int flags, char *out, size_t cap);

#endif
