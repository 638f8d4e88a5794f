/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c — the W3C traceparent's text and binary forms (trace.h has the rules).
 */
#include "common/trace.h"

#include <string.h>

#define TRACE_ID_AT 1   /* binary: the trace id's first byte */
#define TRACE_ID_LEN 16 /* bytes */
#define TRACE_PARENT_AT 17
#define TRACE_PARENT_LEN 8
#define TRACE_FLAGS_AT 25

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case too: the text form is lowercase only */
}

/* n bytes of hex text at s into n/2 bytes at out; -1 on a non-hex digit. */
static int hex_bytes(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

int trace_bin_valid(const uint8_t b[TRACE_BIN_LEN])
{
    return b[0] == 0 && !all_zero(b + TRACE_ID_AT, TRACE_ID_LEN) &&
           !all_zero(b + TRACE_PARENT_AT, TRACE_PARENT_LEN);
}

int trace_parse(const char *s, size_t n, struct trace_ctx *out)
{
    struct trace_ctx t;
    if (n != TRACE_TEXT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return -1;
    if (hex_bytes(s, 2, t.b) || hex_bytes(s + 3, 2 * TRACE_ID_LEN, t.b + TRACE_ID_AT) ||
        hex_bytes(s + 36, 2 * TRACE_PARENT_LEN, t.b + TRACE_PARENT_AT) ||
        hex_bytes(s + 53, 2, t.b + TRACE_FLAGS_AT) || !trace_bin_valid(t.b))
        return -1;
    *out = t;
    return 0;
}

void trace_format(const struct trace_ctx *t, char out[TRACE_TEXT_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < TRACE_BIN_LEN; i++) {
        if (i == TRACE_ID_AT || i == TRACE_PARENT_AT || i == TRACE_FLAGS_AT)
            out[o++] = '-';
        out[o++] = hex[t->b[i] >> 4];
        out[o++] = hex[t->b[i] & 15];
    }
    out[o] = '\0';
}
