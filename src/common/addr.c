/* SPDX-License-Identifier: Apache-2.0 */
/* addr.c — the one "host:port" parser and its inverse (see proto.h), and its conversion to a
 * socket address (addr.h). */
#include "common/addr.h"
#include "common/proto.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The zone of "fe80::1%eth0": an interface name or a decimal index; unknown names give 0, as
 * uv_ip6_addr did (the kernel then refuses a link-local address without a scope). */
static uint32_t zone_index(const char *zone)
{
    unsigned idx = if_nametoindex(zone);
    if (idx == 0 && zone[0] >= '0' && zone[0] <= '9')
        idx = (unsigned)strtoul(zone, NULL, 10);
    return idx;
}

int addr_ip_sockaddr(const char *host, int port, struct sockaddr_storage *ss)
{
    if (!host || port < 0 || port > PORT_MAX)
        return -1;
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return 0;
    }
    char ip[PROTO_ADDR_BUF];
    size_t n = strlen(host);
    const char *pct = memchr(host, '%', n);
    size_t ipn = pct ? (size_t)(pct - host) : n;
    if (ipn >= sizeof(ip))
        return -1;
    memcpy(ip, host, ipn);
    ip[ipn] = '\0';
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET6, ip, &in6->sin6_addr) != 1) {
        memset(ss, 0, sizeof(*ss));
        return -1;
    }
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)port);
    if (pct)
        in6->sin6_scope_id = zone_index(pct + 1);
    return 0;
}

int addr_ip_parse(const char *s, size_t len, struct sockaddr_storage *ss)
{
    char host[PROTO_ADDR_BUF];
    int port;
    if (proto_addr_parse(s, len, host, sizeof(host), &port))
        return -1;
    return addr_ip_sockaddr(host, port, ss);
}

socklen_t addr_ip_len(const struct sockaddr_storage *ss)
{
    return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int addr_ip_bytes(const char *host, unsigned char out[16])
{
    static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
    if (inet_pton(AF_INET, host, out) == 1)
        return 4;
    if (inet_pton(AF_INET6, host, out) != 1)
        return 0;
    if (memcmp(out, mapped, sizeof mapped))
        return 16;
    memmove(out, out + 12, 4);
    return 4;
}
