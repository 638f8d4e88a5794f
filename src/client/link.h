/* SPDX-License-Identifier: Apache-2.0 */
/*
 * link — one client connection to a fencelockd: a TCP socket, optionally TLS (OpenSSL), with
 * hiredis 0.14 used only to format commands and parse replies (redisReader). Debian 12's
 * hiredis has no TLS, so the socket I/O is ours
 * (docs/decisions/0001-client-owns-its-socket-io.md: why).
 *
 * Owns: the socket, its SSL (when TLS), the reader and its buffered bytes. A link belongs to
 * one thread at a time (the pool in fl_client hands it over under fl_client.mu). The SSL_CTX
 * is the client's (cl_tls_ctx_new, freed with the client); each SSL holds a reference.
 * Every blocking step takes an absolute deadline in fl_now_ms() time; the socket itself is
 * non-blocking and waits happen in poll(2). Replies returned belong to the caller
 * (freeReplyObject). Every write is send(MSG_NOSIGNAL), under TLS too (link.c's socket BIO):
 * a server that closed the connection is an error, never a SIGPIPE in the host program.
 */
#ifndef FL_CLIENT_LINK_H
#define FL_CLIENT_LINK_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_ctx_st;
struct cl_link;

/* A TLS client context: CA file (NULL: the system's CAs), client certificate and key (both or
 * neither). NULL with the reason in err. */
struct ssl_ctx_st *cl_tls_ctx_new(const char *ca, const char *cert, const char *key, char *err,
                                  size_t errlen);
void cl_tls_ctx_free(struct ssl_ctx_st *ctx);
/* Another reference to ctx (NULL stays NULL), for a client made from another's settings; each
 * reference is dropped with cl_tls_ctx_free. */
struct ssl_ctx_st *cl_tls_ctx_ref(struct ssl_ctx_st *ctx);

/* Why cl_link_open failed: nothing listens there, or the TLS handshake was refused (a
 * certificate that does not verify, an alert: not a timeout), or anything else. */
enum cl_link_fail { CL_LINK_FAILED = 0, CL_LINK_REFUSED, CL_LINK_TLS };

/* Connect to host:port by `until` (TLS when ctx; the server's certificate must match
 * server_name, or host when server_name is NULL). NULL with the reason in err and *why. */
struct cl_link *cl_link_open(struct ssl_ctx_st *ctx, const char *server_name, const char *host,
                             int port, int64_t until, enum cl_link_fail *why, char *err,
                             size_t errlen);
void cl_link_free(struct cl_link *l);
int cl_link_fd(const struct cl_link *l);
/* The last failure's reason ("" if none). */
const char *cl_link_err(const struct cl_link *l);
void cl_link_set_err(struct cl_link *l, const char *msg);
/* Bytes already received and not yet parsed into a reply (poll(2) cannot see them). */
bool cl_link_pending(const struct cl_link *l);
/* An idle pooled link is still usable: nothing (no data, no EOF) arrived unasked. */
bool cl_link_idle_ok(struct cl_link *l);

/* Send one command: 0, or -1 (the link is broken; the reason in cl_link_err). */
int cl_link_send(struct cl_link *l, int argc, const char **argv, const size_t *len, int64_t until);
/* The next reply by `until`, or NULL (timeout, EOF, error: the reason in cl_link_err). */
redisReply *cl_link_reply(struct cl_link *l, int64_t until);
/* cl_link_send then cl_link_reply. */
redisReply *cl_link_call(struct cl_link *l, int argc, const char **argv, const size_t *len,
                         int64_t until);

#endif
