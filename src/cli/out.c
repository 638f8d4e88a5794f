/* SPDX-License-Identifier: Apache-2.0 */
/* Output helpers: the --json writer, names for a terminal and time formatting; the escaping
 * itself is common/text.c's. */
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

void out_esc(FILE *f, const void *data, size_t len, int flags)
{
    const unsigned char *s = data;
    for (size_t i = 0; i < len;) {
        char step[TEXT_STEP_MAX];
        size_t used, w = text_name_step(s + i, len - i, flags, step, &used);
        fwrite(step, 1, w, f);
        i += used;
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
        char step[TEXT_STEP_MAX];
        size_t used, n = text_json_step(s + i, len - i, step, &used);
        fwrite(step, 1, n, w->f);
        i += used;
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

void jw_i64(struct jw *w, int64_t v)
{
    jw_sep(w);
    fprintf(w->f, "%" PRId64, v);
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
    if (text_utf8_valid(s, len)) {
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
