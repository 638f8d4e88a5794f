/* SPDX-License-Identifier: Apache-2.0 */
#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 64 /* the first block: most replies and records fit */

void buf_init(struct buf *b)
{
    memset(b, 0, sizeof(*b));
}

void buf_free(struct buf *b)
{
    free(b->p);
    buf_init(b);
}

/* Record the failure: it sticks until buf_reset / buf_truncate. */
static int buf_fail(struct buf *b)
{
    b->err = 1;
    return -1;
}

int buf_reserve(struct buf *b, size_t extra)
{
    if (b->err || extra > SIZE_MAX / 2 - b->len)
        return buf_fail(b);
    size_t need = b->len + extra;
    if (b->max && need > b->max)
        return buf_fail(b);
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BUF_MIN_CAP;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return buf_fail(b);
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    if (b->err)
        return -1;
    if (n == 0)
        return 0;
    if (buf_reserve(b, n))
        return -1;
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return buf_fail(b);
    if (buf_reserve(b, (size_t)n + 1))
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

void buf_truncate(struct buf *b, size_t n)
{
    if (n < b->len)
        b->len = n;
    b->err = 0;
}

int buf_put_u8(struct buf *b, uint8_t v)
{
    return buf_append(b, &v, 1);
}

int buf_put_u64(struct buf *b, uint64_t v)
{
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    return buf_append(b, t, 8);
}

int buf_put_varint(struct buf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        t[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    return buf_append(b, t, n);
}

int buf_put_bytes(struct buf *b, const void *p, size_t n)
{
    if (buf_put_varint(b, n))
        return -1;
    return buf_append(b, p, n);
}

int rd_u8(struct rd *r, uint8_t *v)
{
    if (r->err || r->off + 1 > r->len)
        return r->err = -1;
    *v = r->p[r->off++];
    return 0;
}

int rd_u64(struct rd *r, uint64_t *v)
{
    if (r->err || r->len - r->off < 8)
        return r->err = -1;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)r->p[r->off + i] << (8 * i);
    r->off += 8;
    *v = x;
    return 0;
}

int rd_varint(struct rd *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t byte;
        if (rd_u8(r, &byte))
            return -1;
        if (shift == 63 && byte > 1)
            return r->err = -1;
        x |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return r->err = -1;
}

int rd_bytes(struct rd *r, const char **p, uint32_t *n, uint32_t max)
{
    uint64_t len;
    if (rd_varint(r, &len))
        return -1;
    if (len > max || len > r->len - r->off)
        return r->err = -1;
    *p = (const char *)r->p + r->off;
    *n = (uint32_t)len;
    r->off += len;
    return 0;
}
