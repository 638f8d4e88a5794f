/* SPDX-License-Identifier: Apache-2.0 */
/* text.c — UTF-8 validation, JSON escaping and printable names: the policies are in text.h. */
#include "common/text.h"

#include <string.h>

static const char hex[] = "0123456789abcdef";

size_t text_utf8_len(const void *p, size_t n)
{
    const unsigned char *s = p;
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* the allowed range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* below: an overlong form */
        else if (c == 0xed)
            hi = 0x9f; /* above: a surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* below: an overlong form */
        else if (c == 0xf4)
            hi = 0x8f; /* above: past U+10FFFF */
    } else
        return 0; /* a continuation byte, 0xc0 0xc1 (always overlong), 0xf5..0xff */
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

int text_utf8_valid(const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n;) {
        size_t k = text_utf8_len(s + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

/* The short escape of LF CR TAB (both policies use them), or 0. */
static char short_form(unsigned char c)
{
    return c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
}

static size_t two(char out[TEXT_STEP_MAX], char c)
{
    out[0] = '\\';
    out[1] = c;
    return 2;
}

size_t text_json_step(const void *p, size_t n, char out[TEXT_STEP_MAX], size_t *used)
{
    const unsigned char *s = p;
    size_t k = text_utf8_len(s, n);
    unsigned char c = s[0];
    *used = 1;
    if (c == '"' || c == '\\')
        return two(out, (char)c);
    if (short_form(c))
        return two(out, short_form(c));
    if (c < 0x20 || c == 0x7f || k == 0) { /* a control byte, or a byte of invalid UTF-8 */
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
    memcpy(out, s, k);
    *used = k;
    return k;
}

/* A C1 control (U+0080..U+009F) as the valid sequence s[0..k): a terminal may take U+009B as
 * CSI, as it takes ESC [. */
static int is_c1(const unsigned char *s, size_t k)
{
    return k == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

size_t text_name_step(const void *p, size_t n, int flags, char out[TEXT_STEP_MAX], size_t *used)
{
    const unsigned char *s = p;
    size_t k = text_utf8_len(s, n);
    unsigned char c = s[0];
    *used = 1;
    int hex_only = flags & TEXT_HEX;
    if ((c == '\\' && !hex_only) || (c == '"' && (flags & TEXT_QUOTE)))
        return two(out, (char)c);
    if (short_form(c) && !hex_only)
        return two(out, short_form(c));
    /* A C1 control is shown byte by byte: its lead here, its continuation (then alone, so
     * invalid) at the next step. */
    if (c < 0x20 || c == 0x7f || c == '\\' || k == 0 || is_c1(s, k) ||
        ((flags & TEXT_ASCII) && c >= 0x80)) {
        out[0] = '\\';
        out[1] = 'x';
        out[2] = hex[c >> 4];
        out[3] = hex[c & 15];
        return 4;
    }
    memcpy(out, s, k);
    *used = k;
    return k;
}

/* Steps of one policy into out[cap] until the input ends or the next step does not fit. */
static size_t bounded(const void *in, size_t n, int flags, int json, char *out, size_t cap)
{
    const unsigned char *s = in;
    size_t i = 0, o = 0;
    while (i < n) {
        char step[TEXT_STEP_MAX];
        size_t used;
        size_t w = json ? text_json_step(s + i, n - i, step, &used)
                        : text_name_step(s + i, n - i, flags, step, &used);
        if (o + w >= cap) /* keep a byte for the NUL */
            break;
        memcpy(out + o, step, w);
        o += w;
        i += used;
    }
    if (cap)
        out[o] = 0;
    return i;
}

size_t text_json_escape(const void *in, size_t n, char *out, size_t cap)
{
    return bounded(in, n, 0, 1, out, cap);
}

size_t text_name(const void *in, size_t n, int flags, char *out, size_t cap)
{
    return bounded(in, n, flags, 0, out, cap);
}
