/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_http_head — libFuzzer target for the HTTP port's request-head parser
 * (src/server/obs/http_parse.c) and the one JSON writer (src/common/json.c): the first reads
 * bytes any client sends before authenticating, the second writes names that are user data.
 *
 * Input layout: the first byte picks the part, the rest is its input.
 * Head (byte even), checks (any failure traps):
 *   - http_head_end returns 0 or a length within the input, and the head it measures ends in an
 *     empty line (LF LF or LF CR LF);
 *   - an accepted head has a token method of 1..HTTP_MAX_METHOD bytes, a path that starts with
 *     '/' and holds no '?', no space and no control byte, a query without space or control byte,
 *     and re-parsing the same bytes gives the same result (no hidden state);
 *   - every header lookup of an accepted head (a few common names and one taken from the input)
 *     returns a value inside the head without leading or trailing blanks, or NULL, or a
 *     "given twice".
 * JSON (byte odd): the rest drives the writer as a little program (open an object or an array,
 * a key, a string of input bytes, a number, a boolean, null, close); whatever json_end accepts
 * must be one valid JSON text by a strict validator here (RFC 8259 grammar, strings valid UTF-8
 * with no raw control byte), and a document json_end refuses is the writer's own verdict.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "server/obs/http_parse.h"

static void check(bool ok)
{
    if (!ok)
        __builtin_trap();
}

static bool is_tchar(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return true;
    return ch && strchr("!#$%&'*+-.^_`|~", ch);
}

static bool visible(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s == 0x7f)
            return false;
    return true;
}

static void check_value(const char *head, size_t n, const char *v, size_t len)
{
    if (!v)
        return;
    if (len == SIZE_MAX) {
        check(v >= head && v <= head + n);
        return;
    }
    check(v >= head && v + len <= head + n);
    check(len == 0 || (v[0] != ' ' && v[0] != '\t' && v[len - 1] != ' ' && v[len - 1] != '\t'));
}

static void fuzz_head(const char *p, size_t n)
{
    if (n > SRV_HTTP_MAX_HEAD)
        n = SRV_HTTP_MAX_HEAD;
    size_t end = http_head_end(p, n);
    check(end <= n);
    if (!end)
        return;
    check(p[end - 1] == '\n' && end >= 2 &&
          (p[end - 2] == '\n' || (end >= 3 && p[end - 2] == '\r' && p[end - 3] == '\n')));
    static struct http_req r, r2;
    int rc = http_parse_head(p, end, &r);
    check(rc == 0 || rc == -1);
    if (rc)
        return;
    size_t ml = strlen(r.method);
    check(ml >= 1 && ml <= HTTP_MAX_METHOD);
    for (size_t i = 0; i < ml; i++)
        check(is_tchar((unsigned char)r.method[i]));
    check(r.path[0] == '/' && !strchr(r.path, '?') && visible(r.path) && visible(r.query));
    check(http_parse_head(p, end, &r2) == 0 && !strcmp(r.method, r2.method) &&
          !strcmp(r.path, r2.path) && !strcmp(r.query, r2.query));
    static const char *const names[] = {"Host", "Authorization", "Last-Event-ID", "X"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len = 0;
        const char *v = http_parse_header(p, end, names[i], &len);
        check_value(p, end, v, len);
    }
    /* a name taken from the input's last line before the blank one, up to its colon */
    char name[64];
    const char *colon = memchr(p, ':', end);
    if (colon) {
        const char *start = colon;
        while (start > p && start[-1] != '\n' && colon - start + 1 < (long)sizeof(name))
            start--;
        size_t nl = (size_t)(colon - start);
        if (nl && nl < sizeof(name)) {
            memcpy(name, start, nl);
            name[nl] = '\0';
            size_t len = 0;
            const char *v = http_parse_header(p, end, name, &len);
            check_value(p, end, v, len);
        }
    }
}

/* ---- a strict JSON validator (RFC 8259) ---- */

struct jv {
    const unsigned char *p;
    size_t n, i;
    unsigned depth;
};

static void ws(struct jv *v)
{
    while (v->i < v->n && strchr(" \t\r\n", v->p[v->i]) && v->p[v->i])
        v->i++;
}

static bool lit(struct jv *v, const char *s)
{
    size_t l = strlen(s);
    if (v->n - v->i < l || memcmp(v->p + v->i, s, l))
        return false;
    v->i += l;
    return true;
}

/* One UTF-8 sequence at v->i (no overlongs, no surrogates, <= U+10FFFF). */
static bool utf8(struct jv *v)
{
    unsigned char c = v->p[v->i];
    size_t k = c < 0x80             ? 0
               : (c & 0xe0) == 0xc0 ? 1
               : (c & 0xf0) == 0xe0 ? 2
               : (c & 0xf8) == 0xf0 ? 3
                                    : 9;
    if (k == 9 || v->n - v->i <= k)
        return false;
    uint32_t cp = k == 0 ? c : k == 1 ? (c & 0x1fu) : k == 2 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t j = 1; j <= k; j++) {
        unsigned char d = v->p[v->i + j];
        if ((d & 0xc0) != 0x80)
            return false;
        cp = cp << 6 | (d & 0x3fu);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return false;
    v->i += k + 1;
    return true;
}

static bool string(struct jv *v)
{
    if (!lit(v, "\""))
        return false;
    while (v->i < v->n) {
        unsigned char c = v->p[v->i];
        if (c == '"') {
            v->i++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (++v->i >= v->n)
                return false;
            unsigned char e = v->p[v->i++];
            if (e == 'u') {
                for (int j = 0; j < 4; j++, v->i++)
                    if (v->i >= v->n || !strchr("0123456789abcdefABCDEF", v->p[v->i]) ||
                        !v->p[v->i])
                        return false;
            } else if (!e || !strchr("\"\\/bfnrt", e)) {
                return false;
            }
            continue;
        }
        if (!utf8(v))
            return false;
    }
    return false;
}

static bool number(struct jv *v)
{
    size_t s = v->i;
    if (v->i < v->n && v->p[v->i] == '-')
        v->i++;
    if (v->i >= v->n || v->p[v->i] < '0' || v->p[v->i] > '9')
        return false;
    if (v->p[v->i] == '0')
        v->i++;
    else
        while (v->i < v->n && v->p[v->i] >= '0' && v->p[v->i] <= '9')
            v->i++;
    return v->i > s; /* the writer writes integers only: no fraction or exponent to accept */
}

static bool value(struct jv *v);

static bool members(struct jv *v, char close, bool keyed)
{
    ws(v);
    if (lit(v, close == '}' ? "}" : "]"))
        return true;
    for (;;) {
        ws(v);
        if (keyed) {
            if (!string(v))
                return false;
            ws(v);
            if (!lit(v, ":"))
                return false;
        }
        if (!value(v))
            return false;
        ws(v);
        if (lit(v, close == '}' ? "}" : "]"))
            return true;
        if (!lit(v, ","))
            return false;
    }
}

static bool value(struct jv *v)
{
    ws(v);
    if (v->i >= v->n || ++v->depth > 64)
        return false;
    bool ok;
    unsigned char c = v->p[v->i];
    if (c == '{' || c == '[') {
        v->i++;
        ok = members(v, c == '{' ? '}' : ']', c == '{');
    } else if (c == '"') {
        ok = string(v);
    } else if (c == 't' || c == 'f' || c == 'n') {
        ok = lit(v, "true") || lit(v, "false") || lit(v, "null");
    } else {
        ok = number(v);
    }
    v->depth--;
    return ok;
}

static bool valid_json(const char *p, size_t n)
{
    struct jv v = {(const unsigned char *)p, n, 0, 0};
    if (!value(&v))
        return false;
    ws(&v);
    return v.i == n;
}

/* ---- the JSON writer driven by the input ---- */

static void fuzz_json(const uint8_t *p, size_t n)
{
    struct buf out = {0};
    struct json j;
    json_init(&j, &out);
    char key[33];
    size_t i = 0;
    while (i < n) {
        uint8_t op = p[i++];
        size_t take = n - i < (size_t)(op >> 3) ? n - i : (size_t)(op >> 3);
        switch (op & 7) {
        case 0:
            json_obj(&j);
            break;
        case 1:
            json_arr(&j);
            break;
        case 2:
            json_close(&j);
            break;
        case 3: /* a key: NUL-terminated, any other bytes */
            memcpy(key, p + i, take < 32 ? take : 32);
            key[take < 32 ? take : 32] = '\0';
            json_key(&j, key);
            i += take;
            break;
        case 4:
            json_str(&j, (const char *)p + i, take);
            i += take;
            break;
        case 5: {
            uint64_t x = 0;
            for (size_t k = 0; k < take && k < 8; k++)
                x = x << 8 | p[i + k];
            json_u64(&j, x);
            i += take;
            break;
        }
        case 6:
            json_bool(&j, take & 1);
            break;
        default:
            json_null(&j);
            break;
        }
    }
    if (json_end(&j) == 0)
        check(valid_json(out.p, out.len));
    /* json_write_str alone: any bytes become one valid JSON string */
    struct buf s = {0};
    json_write_str(&s, (const char *)p, n);
    check(!buf_failed(&s) && valid_json(s.p, s.len));
    buf_free(&s);
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_json(data + 1, size - 1);
    else
        fuzz_head((const char *)data + 1, size - 1);
    return 0;
}
