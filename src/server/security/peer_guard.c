/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peer_guard.c — see peer_guard.h. A peer CA that is also the client CA makes every
 * application certificate one the Raft port's chain check accepts; the name and EKU checks
 * (transport_tls.c) then stand alone between an application and the log, so a shared CA is
 * refused unless the operator says --peer-ca-shared-with-clients.
 */
#include "server/security/peer_guard.h"

#include "common/addr.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define PEM_CERTS_MAX 1000 /* certificates read from one CA file at most */

bool srv_host_loopback(const char *host)
{
    static const unsigned char lo6[16] = {[15] = 1};
    unsigned char a[16];
    if (!strcmp(host, "localhost"))
        return true;
    int n = addr_ip_bytes(host, a); /* an IPv4-mapped address counts as its IPv4 one */
    return n == 4 ? a[0] == 127 : n == 16 && !memcmp(a, lo6, 16);
}

/* Every certificate of a PEM file into `out` (owned by the caller). -1 if unreadable. */
static int read_certs(const char *path, STACK_OF(X509) * out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    X509 *x;
    while (sk_X509_num(out) < PEM_CERTS_MAX && (x = PEM_read_X509(f, NULL, NULL, NULL))) {
        if (!sk_X509_push(out, x)) {
            X509_free(x);
            break;
        }
    }
    fclose(f);
    ERR_clear_error(); /* the end of the file reads as an error */
    return sk_X509_num(out) > 0 ? 0 : -1;
}

int srv_pem_share_cert(const char *a, const char *b, char *err, size_t errlen)
{
    STACK_OF(X509) *xa = sk_X509_new_null(), *xb = sk_X509_new_null();
    int rc = -1;
    if (!xa || !xb) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (read_certs(a, xa) || read_certs(b, xb)) {
        snprintf(err, errlen, "cannot read a certificate from %s", sk_X509_num(xa) ? b : a);
        goto out;
    }
    rc = 0;
    for (int i = 0; i < sk_X509_num(xa) && !rc; i++)
        for (int j = 0; j < sk_X509_num(xb) && !rc; j++)
            rc = X509_cmp(sk_X509_value(xa, i), sk_X509_value(xb, j)) == 0;
out:
    sk_X509_pop_free(xa, X509_free);
    sk_X509_pop_free(xb, X509_free);
    return rc;
}
