/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_parse.c — the HTTP port's request-head parser (RFC 9112, the subset a read-only API
 * needs): pure functions over bytes a client sent before anything authenticated it, kept apart
 * from the socket code (http.c) so the fuzz target fuzz/fuzz_http_head.c reaches them directly.
 * The rules are in http_parse.h.
 */
#include "server/obs/http_parse.h"

#include <stdint.h>
#include <string.h>

static int is_tchar(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return 1;
    return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Bytes of empty lines (CRLF or LF) before the request line, which RFC 9112 says a server
 * should ignore. */
static size_t leading_blank(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == '\n' || (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')))
        i += p[i] == '\r' ? 2 : 1;
    return i;
}

/* Length of the head through its blank line, or 0 if it has not all arrived. Bare LF line ends
 * are accepted, as RFC 9112 allows. Empty lines before the request line are not its end. */
size_t http_head_end(const char *p, size_t n)
{
    for (size_t i = leading_blank(p, n); i < n; i++) {
        if (p[i] != '\n')
            continue;
        if (i + 1 < n && p[i + 1] == '\n')
            return i + 2;
        if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

/* The line at p[*off..], without its CR LF; *off moves past it. */
static void next_line(const char *p, size_t n, size_t *off, const char **line, size_t *len)
{
    const char *s = p + *off;
    const char *nl = memchr(s, '\n', n - *off);
    size_t l = nl ? (size_t)(nl - s) : n - *off;
    *off += nl ? l + 1 : l;
    if (l > 0 && s[l - 1] == '\r')
        l--;
    *line = s;
    *len = l;
}

static int parse_version(const char *p, size_t n)
{
    return n == 8 && memcmp(p, "HTTP/1.", 7) == 0 && (p[7] == '0' || p[7] == '1');
}

/* "METHOD SP target SP HTTP/1.x"; 0 or -1. The query string is cut from the path. */
static int parse_request_line(const char *p, size_t n, struct http_req *r)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)p[i]))
        i++;
    if (i == 0 || i > HTTP_MAX_METHOD || i == n || p[i] != ' ')
        return -1;
    memcpy(r->method, p, i);
    r->method[i] = '\0';
    size_t t = ++i;
    while (i < n && (unsigned char)p[i] > ' ' && (unsigned char)p[i] != 0x7f)
        i++;
    if (i == t || i == n || p[i] != ' ' || p[t] != '/')
        return -1;
    const char *q = memchr(p + t, '?', i - t);
    size_t plen = q ? (size_t)(q - (p + t)) : i - t;
    memcpy(r->path, p + t, plen);
    r->path[plen] = '\0';
    size_t qlen = q ? (size_t)(p + i - q - 1) : 0;
    if (qlen)
        memcpy(r->query, q + 1, qlen);
    r->query[qlen] = '\0';
    return parse_version(p + i + 1, n - i - 1) ? 0 : -1;
}

/* "name: value" with a token name and no control bytes in the value (HTAB allowed). Lines
 * starting with whitespace (obsolete folding) are rejected, as RFC 9112 allows. */
static int valid_header(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)p[i]))
        i++;
    if (i == 0 || i == n || p[i] != ':')
        return 0;
    for (i++; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch < ' ' && ch != '\t') || ch == 0x7f)
            return 0;
    }
    return 1;
}

/* Parse the complete head p[0..n); 0 or -1 (a 400). Leading empty lines are skipped. */
int http_parse_head(const char *p, size_t n, struct http_req *r)
{
    size_t off = 0, len;
    const char *line;
    do {
        if (off >= n)
            return -1;
        next_line(p, n, &off, &line, &len);
    } while (len == 0);
    if (parse_request_line(line, len, r))
        return -1;
    for (;;) {
        if (off >= n)
            return -1;
        next_line(p, n, &off, &line, &len);
        if (len == 0)
            return 0;
        if (!valid_header(line, len))
            return -1;
    }
}

static int ascii_casecmp_n(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return 1;
    }
    return 0;
}

const char *http_parse_header(const char *head, size_t head_len, const char *name, size_t *len)
{
    size_t off = leading_blank(head, head_len), n = strlen(name), l;
    const char *line, *found = NULL;
    next_line(head, head_len, &off, &line, &l); /* the request line */
    while (off < head_len) {
        next_line(head, head_len, &off, &line, &l);
        if (l == 0)
            break;
        if (l <= n || line[n] != ':' || ascii_casecmp_n(line, name, n))
            continue;
        if (found) {
            *len = SIZE_MAX;
            return found;
        }
        const char *v = line + n + 1, *e = line + l;
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        found = v;
        *len = (size_t)(e - v);
    }
    return found;
}
