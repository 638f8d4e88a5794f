/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certexp.c — certificate expiry times for /metrics (certexp.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/obs/certexp.h"

static const char *const cert_names[SRV_CERT_N] = {"tls", "tls_ca", "peer_tls", "peer_tls_ca",
                                                   "http_tls"};

int certexp_file(const char *path, int64_t *not_after, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "re");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int n = 0, bad = 0;
    int64_t first = INT64_MAX;
    X509 *x;
    /* PEM_read_X509 skips blocks of other kinds (a key in the same file) and stops at the end. */
    while ((x = PEM_read_X509(fp, NULL, NULL, NULL))) {
        struct tm tm;
        if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1) {
            int64_t t = (int64_t)timegm(&tm);
            first = t < first ? t : first;
            n++;
        } else {
            bad++;
        }
        X509_free(x);
    }
    ERR_clear_error(); /* the "no start line" that ends the loop */
    fclose(fp);
    if (bad || !n) {
        snprintf(err, errlen, "%s: %s", path,
                 bad ? "a certificate's notAfter does not parse" : "no PEM certificate");
        return -1;
    }
    *not_after = first;
    return 0;
}

void certexp_note(struct srv_certs *c, enum srv_cert_kind kind, const char *path,
                  const struct logger *log)
{
    char err[600];
    int64_t t;
    if (!path || !path[0]) {
        c->known[kind] = false;
        return;
    }
    if (certexp_file(path, &t, err, sizeof err)) {
        LOGW(log, "fencelock_cert_expiry_timestamp_seconds{cert=\"%s\"} not updated: %s",
             cert_names[kind], err);
        return;
    }
    c->not_after[kind] = t;
    c->known[kind] = true;
}

void certexp_render(const struct srv_certs *c, struct buf *out)
{
    const char *name = "fencelock_cert_expiry_timestamp_seconds";
    bool any = false;
    for (int k = 0; k < SRV_CERT_N; k++)
        any |= c->known[k];
    if (!any)
        return;
    buf_printf(out,
               "# HELP %s When a certificate file this node loaded expires (the earliest notAfter "
               "of its certificates, Unix time), by flag: tls, tls_ca, peer_tls, peer_tls_ca, "
               "http_tls.\n"
               "# TYPE %s gauge\n",
               name, name);
    for (int k = 0; k < SRV_CERT_N; k++)
        if (c->known[k])
            buf_printf(out, "%s{cert=\"%s\"} %lld\n", name, cert_names[k],
                       (long long)c->not_after[k]);
}
