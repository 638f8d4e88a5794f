/* SPDX-License-Identifier: Apache-2.0 */
/* addr.c — the one "host:port" parser and its inverse (see proto.h). */
#include "common/proto.h"

#include <stdio.h>
#include <string.h>

#define PORT_DIGITS_MAX 5 /* 65535 */
#define PORT_MAX 65535

static int port_parse(const char *p, size_t n, int *port)
{
    if (n == 0 || n > PORT_DIGITS_MAX)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > PORT_MAX)
        return -1;
    *port = v;
    return 0;
}

static int host_char_ok(char c)
{
    return (unsigned char)c > ' ' && c != 0x7f;
}

int proto_addr_parse(const char *s, size_t len, char *host, size_t hostcap, int *port)
{
    const char *colon = len ? memrchr(s, ':', len) : NULL;
    if (!colon || colon == s)
        return -1;
    const char *h = s;
    size_t hn = (size_t)(colon - s);
    size_t pn = len - hn - 1;
    if (h[0] == '[') { /* IPv6 literal */
        if (hn < 3 || h[hn - 1] != ']')
            return -1;
        h++;
        hn -= 2;
    } else if (memchr(h, ':', hn) || memchr(h, ']', hn)) {
        return -1; /* an unbracketed IPv6 address is ambiguous */
    }
    for (size_t i = 0; i < hn; i++)
        if (!host_char_ok(h[i]) || h[i] == '[')
            return -1;
    int p;
    if (hn >= hostcap || port_parse(colon + 1, pn, &p))
        return -1;
    memcpy(host, h, hn);
    host[hn] = 0;
    *port = p;
    return 0;
}

int proto_addr_valid(const char *s, size_t len)
{
    char host[PROTO_ADDR_BUF];
    int port;
    return len <= PROTO_ADDR_MAX && proto_addr_parse(s, len, host, sizeof(host), &port) == 0;
}

int proto_addr_format(char *out, size_t cap, const char *host, int port)
{
    int n = strchr(host, ':') ? snprintf(out, cap, "[%s]:%d", host, port)
                              : snprintf(out, cap, "%s:%d", host, port);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}
