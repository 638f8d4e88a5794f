/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_parse — the HTTP port's request-head parser: where a head ends, the request line and the
 * header lines checked, one header's value found. Pure (no I/O, no allocation): http.c feeds it
 * the bytes it read; fuzz/fuzz_http_head.c feeds it anything.
 *
 * Owns nothing: every function reads the caller's bytes; struct http_req is the caller's, its
 * strings NUL-terminated copies bounded by its arrays (a head is at most SRV_HTTP_MAX_HEAD bytes,
 * so a path or query always fits). What is accepted: optional empty lines, then "METHOD SP
 * /target SP HTTP/1.0|1.1" (a token method of at most HTTP_MAX_METHOD bytes, a target of visible
 * ASCII starting with '/', cut at '?' into path and query), then header lines "token: value"
 * with no control byte but HTAB in the value (no obsolete folding), CRLF or bare LF line ends,
 * and an empty line. Anything else is a 400.
 */
#ifndef FENCELOCK_HTTP_PARSE_H
#define FENCELOCK_HTTP_PARSE_H

#include <stddef.h>

#define SRV_HTTP_MAX_HEAD 8192 /* request line + headers; over this: 431 */
#define HTTP_MAX_METHOD 32

/* A parsed request head; strings are NUL-terminated copies. */
struct http_req {
    char method[HTTP_MAX_METHOD + 1];
    char path[SRV_HTTP_MAX_HEAD];
    char query[SRV_HTTP_MAX_HEAD];
};

/* The length of the head through its blank line, or 0 if it has not all arrived (n bytes). */
size_t http_head_end(const char *p, size_t n);
/* Parse a complete head p[0..n) (n <= SRV_HTTP_MAX_HEAD, through its blank line, as
 * http_head_end measured it); 0, or -1 (answer 400). */
int http_parse_head(const char *p, size_t n, struct http_req *r);
/* The value of header `name` (ASCII case-insensitive) in a head that http_parse_head accepted,
 * without surrounding blanks, length in *len; NULL if absent; *len == SIZE_MAX if it is given
 * twice (then the caller refuses the request). */
const char *http_parse_header(const char *head, size_t head_len, const char *name, size_t *len);

#endif
