/* SPDX-License-Identifier: Apache-2.0 */
/* Output helpers: the --json writer and time formatting. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/out.h"
#include "common/timefmt.h"

void jw_init(struct jw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
}

/* Before any value: the comma that separates it from the previous one in its container. */
static void jw_sep(struct jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->need_comma[w->depth])
        fputc(',', w->f);
    w->need_comma[w->depth] = 1;
}

static void jw_open(struct jw *w, char c)
{
    if (w->depth >= JW_MAX_DEPTH)
        return;
    jw_sep(w);
    fputc(c, w->f);
    w->depth++;
    w->need_comma[w->depth] = 0;
    w->close[w->depth] = c == '{' ? '}' : ']';
}

void jw_obj(struct jw *w)
{
    jw_open(w, '{');
}

void jw_arr(struct jw *w)
{
    jw_open(w, '[');
}

void jw_end(struct jw *w)
{
    if (w->depth <= 0)
        return;
    fputc(w->close[w->depth], w->f);
    w->depth--;
    if (w->depth == 0)
        fputc('\n', w->f);
}

void jw_key(struct jw *w, const char *key)
{
    jw_str(w, key);
    fputc(':', w->f);
    w->after_key = 1;
}

/* Length of the valid UTF-8 sequence at s (at most len bytes), 0 if it is not valid. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp, min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

int utf8_valid(const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

/* Whether the valid UTF-8 sequence s[0..n) is a C1 control (U+0080..U+009F): a terminal may
   take U+009B as CSI, as it takes ESC [. */
static int is_c1(const unsigned char *s, size_t n)
{
    return n == 2 && s[0] == 0xC2 && s[1] < 0xA0;
}

void out_esc(FILE *f, const void *data, size_t len, int flags)
{
    const unsigned char *s = data;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = utf8_seq(s + i, len - i);
        if (c == '\\' || ((flags & OUT_QUOTE) && c == '"')) {
            fputc('\\', f);
            fputc(c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c == 0x7F || n == 0 || is_c1(s + i, n) ||
                   ((flags & OUT_ASCII) && c >= 0x80)) {
            fprintf(f, "\\x%02x", c);
            n = 1;
        } else {
            fwrite(s + i, 1, n, f);
        }
        i += n ? n : 1;
    }
}

void out_str(FILE *f, const char *s)
{
    if (s)
        out_esc(f, s, strlen(s), 0);
}

void out_pad(FILE *f, const char *s, int width)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (m == NULL)
        return;
    out_str(m, s);
    if (fclose(m) != 0) {
        free(buf);
        return;
    }
    fprintf(f, "%-*s", width, buf);
    free(buf);
}

void jw_strn(struct jw *w, const void *data, size_t len)
{
    const unsigned char *s = data;
    jw_sep(w);
    fputc('"', w->f);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        size_t n = utf8_seq(s + i, len - i);
        if (c == '"' || c == '\\') {
            fputc('\\', w->f);
            fputc(c, w->f);
        } else if (c == '\n') {
            fputs("\\n", w->f);
        } else if (c == '\r') {
            fputs("\\r", w->f);
        } else if (c == '\t') {
            fputs("\\t", w->f);
        } else if (c < 0x20 || c == 0x7F || n == 0) {
            fprintf(w->f, "\\u%04x", c); /* control character, or a byte of invalid UTF-8 */
            n = 1;
        } else {
            fwrite(s + i, 1, n, w->f);
        }
        i += n ? n : 1;
    }
    fputc('"', w->f);
}

void jw_str(struct jw *w, const char *s)
{
    if (s == NULL) {
        jw_sep(w);
        fputs("null", w->f);
        return;
    }
    jw_strn(w, s, strlen(s));
}

void jw_u64(struct jw *w, uint64_t v)
{
    jw_sep(w);
    fprintf(w->f, "%" PRIu64, v);
}

void jw_bool(struct jw *w, int v)
{
    jw_sep(w);
    fputs(v ? "true" : "false", w->f);
}

static void base64(FILE *f, const unsigned char *s, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < len)
            v |= s[i + 2];
        fputc(tab[(v >> 18) & 63], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(i + 1 < len ? tab[(v >> 6) & 63] : '=', f);
        fputc(i + 2 < len ? tab[v & 63] : '=', f);
    }
}

void jw_bytes(struct jw *w, const char *key, const void *s, size_t len)
{
    if (utf8_valid(s, len)) {
        jw_key(w, key);
        jw_strn(w, s, len);
        return;
    }
    char k[64];
    snprintf(k, sizeof k, "%s_base64", key);
    jw_key(w, k);
    jw_sep(w);
    fputc('"', w->f);
    base64(w->f, s, len);
    fputc('"', w->f);
}

void fmt_wallclock(char *buf, size_t size, uint64_t ms)
{
    char t[TIME_RFC3339_BUF];
    if (time_rfc3339(t, ms) == 0)
        snprintf(buf, size, "%s", t);
    else
        snprintf(buf, size, "%" PRIu64 " ms", ms);
}
