/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certexp — when the certificates this node loaded expire: the gauge
 * fencelock_cert_expiry_timestamp_seconds{cert=...}, one sample per file in use.
 *
 * Owns plain numbers (struct srv_certs, inside struct srv; no allocation). A file's entry is
 * set after the server loaded it successfully (at start, and again after every SIGHUP reload
 * that took effect), from the same file: a reload that was refused leaves the entry of the
 * files still in use. A file may hold several certificates (a chain, a CA bundle): its entry is
 * the earliest notAfter among them, the first expiry that breaks a handshake.
 */
#ifndef FENCELOCK_CERTEXP_H
#define FENCELOCK_CERTEXP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/log.h"

/* The label `cert` names the flag the file came from (docs/monitoring.md). */
enum srv_cert_kind {
    SRV_CERT_TLS,         /* --tls-cert: the client port's certificate chain */
    SRV_CERT_TLS_CA,      /* --tls-ca */
    SRV_CERT_PEER_TLS,    /* --peer-tls-cert: the Raft port's certificate chain */
    SRV_CERT_PEER_TLS_CA, /* --peer-tls-ca */
    SRV_CERT_HTTP_TLS,    /* --http-tls-cert: the HTTP port's own certificate chain */
    SRV_CERT_N
};

struct srv_certs {
    int64_t not_after[SRV_CERT_N]; /* Unix seconds */
    bool known[SRV_CERT_N];
};

/* The earliest notAfter (Unix seconds) of the PEM certificates in `path`: 0, or -1 with the
 * reason in err (unreadable, no certificate, a date that does not parse). */
int certexp_file(const char *path, int64_t *not_after, char *err, size_t errlen);

/* Record the expiry of `path` (just loaded) as `kind`; a file that cannot be read now keeps
 * the previous entry, with a warning logged. An empty path clears the entry. */
void certexp_note(struct srv_certs *c, enum srv_cert_kind kind, const char *path,
                  const struct logger *log);

/* The gauge (nothing when no file is known). */
void certexp_render(const struct srv_certs *c, struct buf *out);

#endif
