/* SPDX-License-Identifier: Apache-2.0 */
/* test_certexp.c — certificate expiry for /metrics (src/server/obs/certexp.c): the earliest
 * notAfter of a PEM file's certificates (a key and other blocks skipped), files without a
 * certificate refused, an entry kept when its file cannot be read again, the gauge's lines.
 * Certificates are made here (self-signed P-256, fixed notAfter) in a temporary directory. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/obs/certexp.h"
#include "test.h"

static char dir[64];
static struct logger lg = {.level = LOG_ERROR, .id = 1};

/* Append to `file` a key (when with_key) and then a certificate valid until `not_after`. */
static int add_cert(const char *file, time_t not_after, int with_key)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FILE *f = fopen(p, "a");
    int ok = k && x && f;
    if (ok) {
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
        ASN1_TIME_set(X509_getm_notBefore(x), not_after - 86400);
        ASN1_TIME_set(X509_getm_notAfter(x), not_after);
        X509_set_pubkey(x, k);
        X509_NAME *n = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"t", -1, -1, 0);
        X509_set_issuer_name(x, n);
        ok = X509_sign(x, k, EVP_sha256()) > 0 &&
             (!with_key || PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL)) &&
             PEM_write_X509(f, x);
    }
    if (f)
        fclose(f);
    X509_free(x);
    EVP_PKEY_free(k);
    return ok ? 0 : -1;
}

static void path(char *out, size_t n, const char *file)
{
    snprintf(out, n, "%s/%s", dir, file);
}

TEST(test_a_chain_file_expires_with_its_earliest_certificate)
{
    char p[128], err[256];
    int64_t t = 0;
    CHECK(add_cert("chain.pem", 2000000000, 1) == 0); /* a key first: skipped */
    CHECK(add_cert("chain.pem", 1900000000, 0) == 0);
    CHECK(add_cert("chain.pem", 1950000000, 0) == 0);
    path(p, sizeof p, "chain.pem");
    CHECK(certexp_file(p, &t, err, sizeof err) == 0);
    CHECK_EQ_U64(t, 1900000000);
}

TEST(test_a_file_without_a_certificate_is_refused_with_its_reason)
{
    char p[128], err[256];
    int64_t t = 7;
    path(p, sizeof p, "empty.pem");
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("not a certificate\n", f) >= 0);
    fclose(f);
    CHECK(certexp_file(p, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "no PEM certificate"));
    CHECK_EQ_U64(t, 7);
    path(p, sizeof p, "missing.pem");
    CHECK(certexp_file(p, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "missing.pem") && strstr(err, "No such file"));
}

TEST(test_an_entry_stays_when_its_file_cannot_be_read_and_clears_without_a_path)
{
    char p[128];
    struct srv_certs c = {0};
    CHECK(add_cert("one.pem", 1800000000, 0) == 0);
    path(p, sizeof p, "one.pem");
    certexp_note(&c, SRV_CERT_PEER_TLS, p, &lg);
    CHECK(c.known[SRV_CERT_PEER_TLS]);
    CHECK_EQ_U64(c.not_after[SRV_CERT_PEER_TLS], 1800000000);
    path(p, sizeof p, "gone.pem");
    certexp_note(&c, SRV_CERT_PEER_TLS, p, &lg);
    CHECK(c.known[SRV_CERT_PEER_TLS]);
    CHECK_EQ_U64(c.not_after[SRV_CERT_PEER_TLS], 1800000000);
    certexp_note(&c, SRV_CERT_PEER_TLS, "", &lg);
    CHECK(!c.known[SRV_CERT_PEER_TLS]);
}

TEST(test_the_gauge_has_one_line_per_known_file_and_nothing_without_any)
{
    struct srv_certs c = {0};
    struct buf b;
    buf_init(&b);
    certexp_render(&c, &b);
    CHECK_EQ_U64(b.len, 0);
    c.known[SRV_CERT_TLS] = c.known[SRV_CERT_PEER_TLS_CA] = true;
    c.not_after[SRV_CERT_TLS] = 1700000000;
    c.not_after[SRV_CERT_PEER_TLS_CA] = 1600000000;
    certexp_render(&c, &b);
    CHECK(buf_put_u8(&b, 0) == 0);
    CHECK(strstr(b.p, "# TYPE fencelock_cert_expiry_timestamp_seconds gauge\n"));
    CHECK(strstr(b.p, "\nfencelock_cert_expiry_timestamp_seconds{cert=\"tls\"} 1700000000\n"));
    CHECK(strstr(b.p,
                 "\nfencelock_cert_expiry_timestamp_seconds{cert=\"peer_tls_ca\"} 1600000000\n"));
    CHECK(!strstr(b.p, "cert=\"tls_ca\"") && !strstr(b.p, "cert=\"peer_tls\""));
    buf_free(&b);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/fl-certexp-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(test_a_chain_file_expires_with_its_earliest_certificate);
    RUN(test_a_file_without_a_certificate_is_refused_with_its_reason);
    RUN(test_an_entry_stays_when_its_file_cannot_be_read_and_clears_without_a_path);
    RUN(test_the_gauge_has_one_line_per_known_file_and_nothing_without_any);
    static const char *const files[] = {"chain.pem", "empty.pem", "one.pem"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[128];
        path(p, sizeof p, files[i]);
        unlink(p);
    }
    rmdir(dir);
    TEST_MAIN_END();
}
