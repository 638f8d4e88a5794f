/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resp — RESP2/RESP3 request parser and reply writers.
 *
 * Owns: the parser's argv array and a scratch block for inline arguments whose quotes/escapes
 * had to be decoded; both are freed by resp_parser_free. Arguments borrow the caller's input
 * (or the scratch block) and stay valid until the next resp_parse call or until the input moves.
 * The parser keeps no stream state between calls, so any call may be given any bytes: header
 * lines are re-scanned on each call (O(argc)), bulk bodies are skipped by length, never scanned;
 * an unfinished inline line is searched again for its newline (at most max_inline + 2 bytes).
 * Writers append to a struct buf owned by the caller; on OOM they return -1, write nothing and
 * set the buffer's sticky flag, so every later writer into it fails too (common/buf.h). A reply
 * is written unchecked and finished once with resp_w_finish, which turns a failed one into a
 * single "-ERR out of memory".
 */
#ifndef FENCELOCK_RESP_H
#define FENCELOCK_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct resp_limits {
    size_t max_bulk;   /* bytes of one bulk, e.g. 16 MiB */
    size_t max_args;   /* e.g. 1024 */
    size_t max_inline; /* bytes of an inline line, 64 KiB */
};

struct resp_arg {
    const char *p; /* borrowed from the input (or the parser's scratch block) */
    size_t len;
};

struct resp_parser {
    struct resp_limits lim;
    struct resp_arg *argv;
    size_t cap;
    struct buf scratch; /* decoded quoted inline arguments */
};

void resp_parser_init(struct resp_parser *ps, const struct resp_limits *lim);
void resp_parser_free(struct resp_parser *ps);

enum { RESP_OK = 0, RESP_INCOMPLETE = 1, RESP_ERROR = -1 };

/* Parse one command from data[0..len). RESP_OK: *argc and *argv set, *consumed = bytes used (argc
 * may be 0 for an empty command: skip it). RESP_INCOMPLETE: need more bytes, *consumed = 0.
 * RESP_ERROR: protocol error, message in err ("Protocol error: ..."); reply -ERR <msg> and close.
 * Accepts multibulk (*N then N x $len) and inline commands (space-separated, "double" quotes with
 * \xHH \n \r \t \b \a \\ \" escapes, 'single' quotes with \'). */
int resp_parse(struct resp_parser *ps, const char *data, size_t len, size_t *consumed, size_t *argc,
               struct resp_arg **argv, char *err, size_t errlen);

/* The protocol versions a connection speaks (HELLO 2 / HELLO 3). */
enum { RESP_V2 = 2, RESP_V3 = 3 };

/* Writers append to a buf; return 0 or -1 on OOM. proto is RESP_V2 or RESP_V3. */
int resp_w_simple(struct buf *b, const char *s);  /* +s\r\n */
int resp_w_error(struct buf *b, const char *msg); /* -msg\r\n ; CR/LF in msg become spaces */
int resp_w_errorf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int resp_w_int(struct buf *b, int64_t v);                /* :v\r\n */
int resp_w_uint(struct buf *b, uint64_t v);              /* :v\r\n */
int resp_w_bulk(struct buf *b, const char *p, size_t n); /* $n\r\n...\r\n */
int resp_w_bulk_str(struct buf *b, const char *s);
int resp_w_nil(struct buf *b, int proto);                /* RESP2 $-1\r\n ; RESP3 _\r\n */
int resp_w_array(struct buf *b, size_t n);               /* *n\r\n */
int resp_w_map(struct buf *b, int proto, size_t npairs); /* RESP3 %n\r\n ; RESP2 *2n\r\n */
/* RESP3 =n+4\r\ntxt:...\r\n ; RESP2 a bulk of the bytes */
int resp_w_verbatim(struct buf *b, int proto, const char *p, size_t n);

/*
 * Finish the reply written into b since offset `start`. If a writer failed on its way (b's flag
 * is set), its partial bytes are dropped and it becomes one "-ERR out of memory" error reply.
 * Returns 0 if the reply stands, 1 if it was replaced, -1 if not even the error fits (then b is
 * back at `start`, the flag is clear and the reply is missing: the caller must drop the
 * connection, or the replies that follow would answer the wrong requests).
 */
int resp_w_finish(struct buf *b, size_t start);

/* A RESP integer argument: common/num.h's strict decimal (digits only, leading zeros allowed)
 * bounded to 9223372036854775807, the signed 64-bit range of RESP integers. 0 ok, -1 otherwise. */
int resp_parse_u64(const char *p, size_t len, uint64_t *out);
/* Case-insensitive comparison of an argument with a NUL-terminated ASCII word: 1 if equal. */
int resp_arg_is(const struct resp_arg *a, const char *word);
/* The same with the word's length known (a table scanned per command need not strlen). */
int resp_arg_eq(const struct resp_arg *a, const char *word, size_t n);

#endif
