/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto — the words and limits every layer shares with the network: the error codes that open
 * a RESP error reply, and the limits and parser of "host:port" addresses.
 *
 * Owns: nothing at run time (constants, and one pure parser that writes only into the caller's
 * buffers). The error words are the protocol: clients (libfencelock's FL_E* mapping, redis-cli
 * users' scripts) match on them, so a word never changes meaning. Every reply is "WORD message";
 * write them by string concatenation, e.g. PROTO_NOSESSION " session %llu is not alive".
 */
#ifndef FENCELOCK_PROTO_H
#define FENCELOCK_PROTO_H

#include <stddef.h>

/* ---- error words (the first word of a RESP error; docs/protocol.md lists their meaning) ---- */
#define PROTO_ERR "ERR"               /* bad request: syntax, arguments, unknown command */
#define PROTO_NOSESSION "NOSESSION"   /* the session is not alive (closed, expired, unknown) */
#define PROTO_STALE "STALE"           /* a fencing token is not the lock's current one */
#define PROTO_NOTHOLDER "NOTHOLDER"   /* the session does not hold the lock */
#define PROTO_IFREV "IFREV"           /* a compare-and-set revision did not match */
#define PROTO_NOSPACE "NOSPACE"       /* a quota is reached; nothing was changed */
#define PROTO_NOLEADER "NOLEADER"     /* no ready leader known; retry */
#define PROTO_NOTLEADER "NOTLEADER"   /* this node is not the leader; the reply names the leader */
#define PROTO_UNKNOWN "UNKNOWN"       /* leadership lost after proposing: may or may not apply */
#define PROTO_TOOLARGE "TOOLARGE"     /* an argument is over its configured limit */
#define PROTO_NOPROTO "NOPROTO"       /* HELLO asked for a protocol version we do not speak */
#define PROTO_WRONGPASS "WRONGPASS"   /* AUTH with unknown user or wrong password */
#define PROTO_COMPACTED "COMPACTED"   /* XREAD after an id older than the retained history */
#define PROTO_SLOWREADER "SLOWREADER" /* XREAD reader over --event-buffer: closed; resume */
#define PROTO_TRYAGAIN "TRYAGAIN"     /* AUTH: the verification queue is full; retry later */
#define PROTO_NOAUTH "NOAUTH"         /* --acl-file: the connection has not authenticated yet */
#define PROTO_NOPERM "NOPERM"         /* the user may not run this command or name this key/lock */
/* the name is a lock, semaphore or election of another kind */
#define PROTO_WRONGTYPE "WRONGTYPE"
/* a wait would close a cycle of sessions waiting for each other: refused, nothing queued */
#define PROTO_DEADLOCK "DEADLOCK"
/* a latch or barrier participant's session ended before it counted down or left */
#define PROTO_BROKEN "BROKEN"

/* ---- addresses ---- */
/* Longest "host:port" anywhere (member table, client endpoints, CLI, config), without the NUL.
 * The member table stores up to this many bytes, so it is part of the on-disk format. */
#define PROTO_ADDR_MAX 128
/* A buffer that holds any address plus its NUL. */
#define PROTO_ADDR_BUF (PROTO_ADDR_MAX + 1)

/*
 * Parse `len` bytes "host:port" (no NUL needed): a non-empty host without spaces or control
 * characters, the last ':' separating a decimal port 1..65535 (no sign, no leading '+', at most
 * 5 digits). An IPv6 literal must be bracketed ("[::1]:7000"); the brackets are removed.
 * On success writes the host (NUL-terminated) into host[hostcap] and the port into *port and
 * returns 0; on any malformed input, or a host that does not fit, returns -1 and writes nothing
 * the caller may use.
 */
int proto_addr_parse(const char *s, size_t len, char *host, size_t hostcap, int *port);

/* 1 when `len` bytes are a valid "host:port" of at most PROTO_ADDR_MAX bytes, else 0. */
int proto_addr_valid(const char *s, size_t len);

/* The inverse of proto_addr_parse: "host:port", or "[host]:port" when host holds a ':' (an IPv6
 * literal), NUL-terminated into out[cap]. Returns its length, or -1 if it does not fit. */
int proto_addr_format(char *out, size_t cap, const char *host, int port);

#endif
