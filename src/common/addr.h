/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addr — an IP-literal "host:port" as a socket address, for the server's listeners and its
 * outgoing member connections (the text grammar itself is proto.h's proto_addr_parse).
 *
 * Owns: nothing (pure; writes only the caller's sockaddr_storage). One IPv6 rule: in
 * "host:port" text an IPv6 literal is bracketed ("[::1]:7000", proto_addr_parse's grammar); a
 * host already split from its port (brackets removed) is IPv6 when it parses as one. A zone
 * ("fe80::1%eth0") names an interface or gives its index, as libuv's uv_ip6_addr read it.
 * No name is resolved here (no DNS on the event loop): "localhost" is refused; the client
 * library and the raft transport resolve names with getaddrinfo themselves.
 */
#ifndef FENCELOCK_ADDR_H
#define FENCELOCK_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* host: an IPv4 or IPv6 literal without brackets; port 0..65535 (0: any free port). 0 ok, with
 * *ss (port in network order, the rest zeroed); -1 otherwise. */
int addr_ip_sockaddr(const char *host, int port, struct sockaddr_storage *ss);

/* The len bytes "host:port" (proto_addr_parse: port 1..65535, IPv6 bracketed) whose host is an
 * IP literal: 0 ok, -1 otherwise. */
int addr_ip_parse(const char *s, size_t len, struct sockaddr_storage *ss);

/* The address bytes of an IP literal host (no brackets, no zone) into out: 4 (IPv4, in out[0..3])
 * or 16 (IPv6); an IPv4-mapped IPv6 address ("::ffff:127.0.0.1") counts as the IPv4 address it
 * maps (4), the one rule for the loopback test and the /24 network of the limits. 0 when host is
 * not an IP literal (a name: the caller resolves or verifies it as a name). */
int addr_ip_bytes(const char *host, unsigned char out[16]);

/* The length of the address in *ss for bind/connect: sizeof its family's struct. */
socklen_t addr_ip_len(const struct sockaddr_storage *ss);

#endif
