/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls — TLS on the client port (--tls-cert/--tls-key): OpenSSL over memory BIOs, so libuv keeps
 * doing all socket I/O and the RESP code sees plaintext only.
 *
 *   socket -> uv read into the shared raw buffer -> tls_conn_feed: BIO_write(rbio), handshake
 *     or SSL_read -> the connection's input buffer (plaintext) -> RESP parser;
 *   replies in the connection's `out` -> tls_conn_seal: SSL_write -> wbio -> BIO_read -> `wbuf`
 *     -> uv_write.
 *
 * Owns: struct srv_tls (inside struct srv, allocated only when TLS is configured): the current
 * SSL_CTX, the shared raw read buffer (libuv calls alloc and read callbacks back to back on
 * one thread, so one buffer serves every connection), counters. A struct tls_conn (one per
 * client connection, freed with it by tls_conn_free) owns its SSL and, through it, both BIOs.
 * A SIGHUP reload builds a new SSL_CTX and swaps it in only if the new certificate and key
 * load and match; connections already open keep the context they were made with (each SSL
 * holds a reference), so the old one is freed when its last connection goes.
 *
 * The same files also make a client context (`client_ctx`, rebuilt by every reload): members.c
 * speaks TLS to the other members' client ports with it (CLUSTER.ANNOUNCE, --join's
 * CLUSTER.ADD). It presents this node's certificate (a server that asks for client certificates
 * gets it; it must then allow client authentication) and verifies the server against --tls-ca
 * (never the system's CAs: without --tls-ca nothing verifies) and against the address dialled
 * (an IP SAN for an IP literal, a DNS name otherwise), before anything, the peer password
 * included, is sent (docs/security.md "A TLS cluster, step by step").
 *
 * The HTTP port's own pair (--http-tls-cert/--http-tls-key, tls_new_http) is a second struct
 * srv_tls, owned by struct srv_net beside the client port's: the same server context, reload
 * and counters, no client context (it calls nobody). Its tls_config carries only the pair and
 * --tls-handshake-timeout: no CA, so no client certificate is asked for (browsers meet it;
 * docs/security.md "The HTTP port").
 *
 * Invariants: TLS 1.2 minimum, renegotiation off, compression off. Plaintext is produced only
 * after the handshake (and the client-certificate check --tls-client-auth asks for) succeeded.
 * Memory: rbio holds at most one read's worth (it is drained into the input buffer at once),
 * wbio is drained into `wbuf` by every seal; both are bounded by the connection's own limits.
 */
#ifndef FENCELOCK_TLS_H
#define FENCELOCK_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/log.h"

enum tls_client_auth { TLS_AUTH_NONE = 0, TLS_AUTH_OPTIONAL = 1, TLS_AUTH_REQUIRE = 2 };

#define TLS_PATH_MAX 512
#define TLS_RAW_CHUNK (64 * 1024)

/* The flags (docs/server.md "Flags"); cert[0] == 0 means TLS is off. */
struct tls_config {
    char cert[TLS_PATH_MAX], key[TLS_PATH_MAX], ca[TLS_PATH_MAX];
    enum tls_client_auth client_auth;
    bool user_from_cn;     /* --tls-user-from-cn: the client certificate's CN is the ACL user */
    uint64_t handshake_ms; /* --tls-handshake-timeout: a slower handshake is closed */
};

struct ssl_ctx_st;

struct srv_tls {
    struct tls_config cfg;
    struct ssl_ctx_st *ctx;
    struct ssl_ctx_st *client_ctx; /* for this node's own calls to other members (else NULL) */
    const char *port;              /* "client port" or "HTTP port": for logs (static) */
    bool calls;                    /* client_ctx is built (the client port's pair) */
    char raw[TLS_RAW_CHUNK];
    uint64_t handshakes, failures, timeouts, reloads, reload_failures;
    uint64_t fail_logged_ms; /* a failed handshake is logged at most once every 10 s */
};

struct tls_conn;

/* Parse a --tls-client-auth value. 0 or -1. */
int tls_client_auth_parse(const char *v, enum tls_client_auth *out);
/* The flags make sense together: 0, or -1 with the reason in err. */
int tls_config_check(const struct tls_config *cfg, bool acl_on, char *err, size_t errlen);

/* Load the certificate, key and CA: a new srv_tls, or NULL with the reason logged. */
struct srv_tls *tls_new(const struct tls_config *cfg, struct logger *log);
/* The same for the HTTP port's own pair: a server context only (tls_conn_new_client must not be
 * called with it). */
struct srv_tls *tls_new_http(const struct tls_config *cfg, struct logger *log);
void tls_free(struct srv_tls *t);
/* Load the files again; the old context stays on failure (logged). 0 or -1. */
int tls_reload(struct srv_tls *t, struct logger *log);

struct tls_conn *tls_conn_new(struct srv_tls *t);
/* A client-side connection to another member's client port (client_ctx) at `host` (the
 * address's host, unbracketed: the certificate must name it); its handshake starts with the
 * first tls_conn_feed (n may be 0) and tls_conn_seal. NULL: out of memory. */
struct tls_conn *tls_conn_new_client(struct srv_tls *t, const char *host);
void tls_conn_free(struct tls_conn *tc);
/* Feed n bytes read into t->raw; decrypted bytes are appended to `in`. Returns 1 when this call
 * finished the handshake, 0 when fine, -1 when the connection must close: the reason in err,
 * or err "" when the client closed its side cleanly (close_notify). */
int tls_conn_feed(struct tls_conn *tc, const char *raw, size_t n, struct buf *in, char *err,
                  size_t errlen);
/* Encrypt `out` (consumed) once the handshake is done, and append every pending ciphertext
 * byte (handshake records, alerts, data) to `wire`. 0, or -1 (out of memory). */
int tls_conn_seal(struct tls_conn *tc, struct buf *out, struct buf *wire);
bool tls_conn_ready(const struct tls_conn *tc);
/* Why the server's certificate was not accepted (a client connection), or NULL. */
const char *tls_conn_verify_error(const struct tls_conn *tc);
/* The verified client certificate's subject CN into cn: its length, or -1 (none, or longer
 * than n-1, or with a NUL inside). */
int tls_conn_peer_cn(const struct tls_conn *tc, char *cn, size_t n);

#endif
