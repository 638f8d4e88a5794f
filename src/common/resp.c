/* SPDX-License-Identifier: Apache-2.0 */
#include "common/resp.h"
#include "common/num.h"
#include "common/proto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A header integer has at most 19 significant digits; a few leading zeros are tolerated, but a
 * longer run is rejected so that a hostile header cannot make every call rescan megabytes. */
#define HDR_MAX_DIGITS 20

/* RESP3 verbatim strings open with a 3-letter format and a colon; fencelock sends plain text. */
#define VERBATIM_TAG "txt:"
#define VERBATIM_TAG_LEN (sizeof(VERBATIM_TAG) - 1)

/* What a reply becomes when a writer failed on its way (resp_w_finish). */
#define OOM_REPLY "-" PROTO_ERR " out of memory\r\n"

enum { HDR_OK = 1, HDR_MORE = 0, HDR_BAD = -1 };

/* ---- parser helpers ---- */

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "Protocol error: %s", msg);
    return RESP_ERROR;
}

static int fail_type(char *err, size_t errlen, unsigned char got)
{
    if (!err || !errlen)
        return RESP_ERROR;
    if (got >= 0x20 && got < 0x7f)
        snprintf(err, errlen, "Protocol error: expected '$', got '%c'", got);
    else
        snprintf(err, errlen, "Protocol error: expected '$', got '\\x%02x'", got);
    return RESP_ERROR;
}

/* Make room for n arguments; n is already bounded by max_args. */
static int ensure_argv(struct resp_parser *ps, size_t n)
{
    if (n <= ps->cap)
        return 0;
    size_t cap = ps->cap ? ps->cap * 2 : 8;
    if (cap < n)
        cap = n;
    if (cap > ps->lim.max_args && ps->lim.max_args >= n)
        cap = ps->lim.max_args;
    if (cap > SIZE_MAX / sizeof(struct resp_arg))
        return -1;
    struct resp_arg *a = realloc(ps->argv, cap * sizeof(*a));
    if (!a)
        return -1;
    ps->argv = a;
    ps->cap = cap;
    return 0;
}

/* Parse "<int>\r\n" at data[*off] ('-' allowed when allow_neg). HDR_OK moves *off past the LF. */
static int parse_hdr_int(const char *data, size_t len, size_t *off, int allow_neg, int64_t *out)
{
    size_t i = *off, ndig = 0;
    int neg = 0;
    uint64_t v = 0;
    if (i < len && allow_neg && data[i] == '-') {
        neg = 1;
        i++;
    }
    for (; i < len && data[i] >= '0' && data[i] <= '9'; i++) {
        unsigned d = (unsigned)(data[i] - '0');
        if (++ndig > HDR_MAX_DIGITS || v > ((uint64_t)INT64_MAX - d) / 10)
            return HDR_BAD;
        v = v * 10 + d;
    }
    if (i == len)
        return HDR_MORE;
    if (ndig == 0 || data[i] != '\r')
        return HDR_BAD;
    if (i + 1 == len)
        return HDR_MORE;
    if (data[i + 1] != '\n')
        return HDR_BAD;
    *off = i + 2;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return HDR_OK;
}

/* One "$len\r\n<bytes>\r\n" at data[*off]. The body is located by its length, never scanned. */
static int parse_bulk(const struct resp_parser *ps, const char *data, size_t len, size_t *off,
                      struct resp_arg *a, char *err, size_t errlen)
{
    size_t i = *off;
    if (i == len)
        return RESP_INCOMPLETE;
    if (data[i] != '$')
        return fail_type(err, errlen, (unsigned char)data[i]);
    i++;
    int64_t blen;
    int r = parse_hdr_int(data, len, &i, 0, &blen);
    if (r == HDR_MORE)
        return RESP_INCOMPLETE;
    if (r == HDR_BAD || (uint64_t)blen > ps->lim.max_bulk)
        return fail(err, errlen, "invalid bulk length");
    size_t n = (size_t)blen, avail = len - i;
    if (avail < n + 1)
        return RESP_INCOMPLETE;
    if (data[i + n] != '\r' || (avail > n + 1 && data[i + n + 1] != '\n'))
        return fail(err, errlen, "expected CRLF after bulk");
    if (avail < n + 2)
        return RESP_INCOMPLETE;
    a->p = data + i;
    a->len = n;
    *off = i + n + 2;
    return RESP_OK;
}

static int parse_multibulk(struct resp_parser *ps, const char *data, size_t len, size_t *consumed,
                           size_t *argc, char *err, size_t errlen)
{
    size_t off = 1;
    int64_t n;
    int r = parse_hdr_int(data, len, &off, 1, &n);
    if (r == HDR_MORE)
        return RESP_INCOMPLETE;
    if (r == HDR_BAD)
        return fail(err, errlen, "invalid multibulk length");
    if (n <= 0) {
        *consumed = off;
        return RESP_OK;
    }
    if ((uint64_t)n > ps->lim.max_args)
        return fail(err, errlen, "too many arguments");
    if (ensure_argv(ps, (size_t)n))
        return fail(err, errlen, "out of memory");
    for (size_t k = 0; k < (size_t)n; k++) {
        r = parse_bulk(ps, data, len, &off, &ps->argv[k], err, errlen);
        if (r != RESP_OK)
            return r;
    }
    *argc = (size_t)n;
    *consumed = off;
    return RESP_OK;
}

/* ---- inline commands ---- */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static char unescape(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    case 'b':
        return '\b';
    case 'a':
        return '\a';
    default:
        return c;
    }
}

/* "..." starting at s[*pos] (the opening quote), decoded into out (room already reserved).
 * 0 with *pos past the closing quote, -1 if unterminated. */
static int dquoted(const char *s, size_t end, size_t *pos, struct buf *out)
{
    size_t i = *pos + 1;
    while (i < end) {
        char c = s[i];
        if (c == '"') {
            *pos = i + 1;
            return 0;
        }
        if (c == '\\' && i + 3 < end && s[i + 1] == 'x' && hex_val(s[i + 2]) >= 0 &&
            hex_val(s[i + 3]) >= 0) {
            out->p[out->len++] = (char)(hex_val(s[i + 2]) * 16 + hex_val(s[i + 3]));
            i += 4;
        } else if (c == '\\' && i + 1 < end) {
            out->p[out->len++] = unescape(s[i + 1]);
            i += 2;
        } else {
            out->p[out->len++] = c;
            i++;
        }
    }
    return -1;
}

/* '...' with only \' as an escape, as redis-cli does. */
static int squoted(const char *s, size_t end, size_t *pos, struct buf *out)
{
    size_t i = *pos + 1;
    while (i < end) {
        if (s[i] == '\\' && i + 1 < end && s[i + 1] == '\'') {
            out->p[out->len++] = '\'';
            i += 2;
        } else if (s[i] == '\'') {
            *pos = i + 1;
            return 0;
        } else {
            out->p[out->len++] = s[i++];
        }
    }
    return -1;
}

/* One argument at s[*pos]. Plain words borrow the input; a word with quotes is decoded into the
 * scratch block (which the caller sized to the line, so pointers into it stay put). */
static int inline_word(struct resp_parser *ps, const char *s, size_t end, size_t *pos,
                       struct resp_arg *a)
{
    size_t start = *pos, i = start;
    while (i < end && !is_space(s[i]) && s[i] != '"' && s[i] != '\'')
        i++;
    if (i == end || is_space(s[i])) {
        a->p = s + start;
        a->len = i - start;
        *pos = i;
        return 0;
    }
    struct buf *out = &ps->scratch;
    size_t from = out->len;
    memcpy(out->p + out->len, s + start, i - start);
    out->len += i - start;
    int r = s[i] == '"' ? dquoted(s, end, &i, out) : squoted(s, end, &i, out);
    /* like Redis, a closing quote must end the argument */
    if (r || (i < end && !is_space(s[i])))
        return -1;
    a->p = out->p + from;
    a->len = out->len - from;
    *pos = i;
    return 0;
}

static int split_inline(struct resp_parser *ps, const char *s, size_t end, size_t *argc, char *err,
                        size_t errlen)
{
    buf_reset(&ps->scratch); /* also clears a failure left by an earlier line */
    if (buf_reserve(&ps->scratch, end + 1))
        return fail(err, errlen, "out of memory");
    size_t i = 0, n = 0;
    for (;;) {
        while (i < end && is_space(s[i]))
            i++;
        if (i == end)
            break;
        if (n == ps->lim.max_args)
            return fail(err, errlen, "too many arguments");
        if (ensure_argv(ps, n + 1))
            return fail(err, errlen, "out of memory");
        if (inline_word(ps, s, end, &i, &ps->argv[n]))
            return fail(err, errlen, "unbalanced quotes in request");
        n++;
    }
    *argc = n;
    return RESP_OK;
}

/* A line ends at "\n" (an optional "\r" before it is dropped). Its content may hold max_inline
 * bytes, so at most max_inline + 2 bytes are searched for the newline. */
static int parse_inline(struct resp_parser *ps, const char *data, size_t len, size_t *consumed,
                        size_t *argc, char *err, size_t errlen)
{
    size_t max = ps->lim.max_inline, scan = len;
    if (max < SIZE_MAX - 2 && scan > max + 2)
        scan = max + 2;
    const char *nl = memchr(data, '\n', scan);
    if (!nl) {
        if (max < SIZE_MAX - 2 && len >= max + 2)
            return fail(err, errlen, "too big inline request");
        return RESP_INCOMPLETE;
    }
    size_t end = (size_t)(nl - data);
    if (end > 0 && data[end - 1] == '\r')
        end--;
    if (end > max)
        return fail(err, errlen, "too big inline request");
    int r = split_inline(ps, data, end, argc, err, errlen);
    if (r == RESP_OK)
        *consumed = (size_t)(nl - data) + 1;
    return r;
}

/* ---- parser API ---- */

void resp_parser_init(struct resp_parser *ps, const struct resp_limits *lim)
{
    memset(ps, 0, sizeof(*ps));
    ps->lim = *lim;
    buf_init(&ps->scratch);
}

void resp_parser_free(struct resp_parser *ps)
{
    free(ps->argv);
    ps->argv = NULL;
    ps->cap = 0;
    buf_free(&ps->scratch);
}

int resp_parse(struct resp_parser *ps, const char *data, size_t len, size_t *consumed, size_t *argc,
               struct resp_arg **argv, char *err, size_t errlen)
{
    *consumed = 0;
    *argc = 0;
    *argv = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (len == 0)
        return RESP_INCOMPLETE;
    int r = data[0] == '*' ? parse_multibulk(ps, data, len, consumed, argc, err, errlen)
                           : parse_inline(ps, data, len, consumed, argc, err, errlen);
    if (r != RESP_OK) {
        *consumed = 0;
        *argc = 0;
        return r;
    }
    *argv = ps->argv;
    return RESP_OK;
}

/* ---- writers ---- */

/* A writer failed before touching the buffer: record it in the buffer's sticky flag, so the
 * reply is known to be incomplete wherever it is finished (resp_w_finish). */
static int w_fail(struct buf *b)
{
    b->err = 1;
    return -1;
}

/* Decimal digits of v written backwards ending at `end`; returns the first digit. */
static char *u64_digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* Append "<type>[-]<v>\r\n" and reserve `extra` more bytes, so that the payload appended next
 * cannot fail and an OOM leaves the buffer unchanged. */
static int w_num_line(struct buf *b, char type, int neg, uint64_t v, size_t extra)
{
    char t[24]; /* type, sign, 20 digits, CRLF */
    char *end = t + sizeof(t), *p = end;
    *--p = '\n';
    *--p = '\r';
    p = u64_digits(p, v);
    if (neg)
        *--p = '-';
    *--p = type;
    size_t n = (size_t)(end - p);
    if (extra > SIZE_MAX / 2)
        return w_fail(b);
    if (buf_reserve(b, n + extra))
        return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* "<type><s>\r\n" with CR and LF in s turned into spaces: they would end the line early and let
 * a message smuggle a second reply onto the wire. */
static int w_text_line(struct buf *b, char type, const char *s, size_t n)
{
    if (n > SIZE_MAX / 2)
        return w_fail(b);
    if (buf_reserve(b, n + 3))
        return -1;
    char *o = b->p + b->len;
    *o++ = type;
    for (size_t i = 0; i < n; i++)
        o[i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    o += n;
    *o++ = '\r';
    *o++ = '\n';
    b->len += n + 3;
    return 0;
}

static void w_raw(struct buf *b, const void *p, size_t n)
{
    if (n) {
        memcpy(b->p + b->len, p, n);
        b->len += n;
    }
}

int resp_w_simple(struct buf *b, const char *s)
{
    return w_text_line(b, '+', s ? s : "", s ? strlen(s) : 0);
}

int resp_w_error(struct buf *b, const char *msg)
{
    return w_text_line(b, '-', msg ? msg : "", msg ? strlen(msg) : 0);
}

int resp_w_errorf(struct buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return w_fail(b);
    if ((size_t)n < sizeof(small))
        return w_text_line(b, '-', small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return w_fail(b);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int r = w_text_line(b, '-', big, (size_t)n);
    free(big);
    return r;
}

int resp_w_int(struct buf *b, int64_t v)
{
    /* negate in unsigned arithmetic so INT64_MIN does not overflow */
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return w_num_line(b, ':', v < 0, mag, 0);
}

int resp_w_uint(struct buf *b, uint64_t v)
{
    return w_num_line(b, ':', 0, v, 0);
}

int resp_w_bulk(struct buf *b, const char *p, size_t n)
{
    if (n > SIZE_MAX / 2)
        return w_fail(b);
    if (w_num_line(b, '$', 0, n, n + 2))
        return -1;
    w_raw(b, p, n);
    w_raw(b, "\r\n", 2);
    return 0;
}

int resp_w_bulk_str(struct buf *b, const char *s)
{
    return resp_w_bulk(b, s, s ? strlen(s) : 0);
}

int resp_w_nil(struct buf *b, int proto)
{
    static const char nil3[] = "_\r\n", nil2[] = "$-1\r\n";
    return proto == RESP_V3 ? buf_append(b, nil3, sizeof(nil3) - 1)
                            : buf_append(b, nil2, sizeof(nil2) - 1);
}

int resp_w_array(struct buf *b, size_t n)
{
    return w_num_line(b, '*', 0, n, 0);
}

int resp_w_map(struct buf *b, int proto, size_t npairs)
{
    if (proto == RESP_V3)
        return w_num_line(b, '%', 0, npairs, 0);
    if (npairs > SIZE_MAX / 2)
        return w_fail(b);
    return w_num_line(b, '*', 0, (uint64_t)npairs * 2, 0);
}

int resp_w_verbatim(struct buf *b, int proto, const char *p, size_t n)
{
    if (proto != RESP_V3)
        return resp_w_bulk(b, p, n);
    if (n > SIZE_MAX / 2)
        return w_fail(b);
    if (w_num_line(b, '=', 0, (uint64_t)n + VERBATIM_TAG_LEN, n + VERBATIM_TAG_LEN + 2))
        return -1;
    w_raw(b, VERBATIM_TAG, VERBATIM_TAG_LEN);
    w_raw(b, p, n);
    w_raw(b, "\r\n", 2);
    return 0;
}

int resp_w_finish(struct buf *b, size_t start)
{
    if (!buf_failed(b))
        return 0;
    if (start > b->len) { /* the reply's start is gone: nothing to roll back to */
        buf_truncate(b, b->len);
        return -1;
    }
    buf_truncate(b, start);
    if (buf_append(b, OOM_REPLY, sizeof(OOM_REPLY) - 1) == 0)
        return 1;
    buf_truncate(b, start);
    return -1;
}

/* ---- argument helpers ---- */

int resp_parse_u64(const char *p, size_t len, uint64_t *out)
{
    return num_parse_u64_in(p, len, 0, (uint64_t)INT64_MAX, out);
}

static unsigned char ascii_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

int resp_arg_is(const struct resp_arg *a, const char *word)
{
    return resp_arg_eq(a, word, strlen(word));
}

int resp_arg_eq(const struct resp_arg *a, const char *word, size_t n)
{
    if (a->len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower((unsigned char)a->p[i]) != ascii_lower((unsigned char)word[i]))
            return 0;
    return 1;
}
