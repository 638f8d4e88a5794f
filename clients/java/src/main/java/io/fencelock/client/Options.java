// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client's settings, made with {@link FencelockClient#builder()}. Immutable once built.
 *
 * <p>Defaults are libfencelock's: a 5 s call deadline, a 1 s connect timeout (a server that does
 * not answer within it is treated as gone), a safe-deadline margin of 10 ms plus 1 % of the TTL
 * for the two machines' clock rates.
 */
public final class Options {
  final List<String> endpoints;
  final String user;
  final String password;
  final SSLContext tls;
  final long timeoutMs;
  final int connectTimeoutMs;
  final long marginMs;
  final long driftPpm;

  Options(FencelockClient.Builder b) {
    if (b.endpoints.isEmpty()) {
      throw new IllegalArgumentException("no endpoints");
    }
    if (b.timeout.toMillis() <= 0 || b.connectTimeout.toMillis() <= 0) {
      throw new IllegalArgumentException("timeouts must be positive");
    }
    this.endpoints = List.copyOf(b.endpoints);
    this.user = b.user;
    this.password = b.password;
    this.tls = b.sslContext;
    this.timeoutMs = b.timeout.toMillis();
    this.connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, b.connectTimeout.toMillis());
    this.marginMs = b.marginMs;
    this.driftPpm = b.driftPpm;
  }

  public List<String> endpoints() {
    return endpoints;
  }

  public Duration timeout() {
    return Duration.ofMillis(timeoutMs);
  }

  /**
   * An SSLContext trusting the CA certificates of a PEM file (null: the JDK's default trust
   * store), with the client certificate chain and its PKCS#8 private key ("BEGIN PRIVATE KEY",
   * RSA or EC) when certPem is given. TlsException if a file cannot be used.
   */
  public static SSLContext sslContext(Path caPem, Path certPem, Path keyPem) {
    try {
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      if (caPem != null) {
        KeyStore ts = KeyStore.getInstance(KeyStore.getDefaultType());
        ts.load(null, null);
        int i = 0;
        for (Certificate c : certs(caPem)) {
          ts.setCertificateEntry("ca" + i++, c);
        }
        tmf.init(ts);
      } else {
        tmf.init((KeyStore) null);
      }
      KeyManagerFactory kmf = null;
      if (certPem != null) {
        if (keyPem == null) {
          throw new TlsException("a client certificate needs its key");
        }
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        char[] pw = new char[0];
        ks.setKeyEntry(
            "client", privateKey(keyPem), pw, certs(certPem).toArray(new Certificate[0]));
        kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, pw);
      }
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException | GeneralSecurityException e) {
      throw new TlsException("TLS material: " + e.getMessage(), e);
    }
  }

  private static Collection<? extends Certificate> certs(Path pem)
      throws IOException, GeneralSecurityException {
    try (InputStream in = Files.newInputStream(pem)) {
      Collection<? extends Certificate> c =
          CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (c.isEmpty()) {
        throw new TlsException(pem + ": no certificate");
      }
      return c;
    }
  }

  private static PrivateKey privateKey(Path pem) throws IOException, GeneralSecurityException {
    String text = Files.readString(pem, StandardCharsets.US_ASCII);
    String begin = "-----BEGIN PRIVATE KEY-----";
    int a = text.indexOf(begin);
    int b = text.indexOf("-----END PRIVATE KEY-----");
    if (a < 0 || b < a) {
      throw new TlsException(
          pem + ": not a PKCS#8 key (\"BEGIN PRIVATE KEY\"; convert with openssl pkcs8 -topk8"
              + " -nocrypt)");
    }
    byte[] der = Base64.getMimeDecoder().decode(text.substring(a + begin.length(), b));
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    List<String> tried = new ArrayList<>();
    for (String alg : new String[] {"RSA", "EC", "Ed25519", "RSASSA-PSS"}) {
      try {
        return KeyFactory.getInstance(alg).generatePrivate(spec);
      } catch (GeneralSecurityException e) {
        tried.add(alg);
      }
    }
    throw new TlsException(pem + ": a key of none of " + tried);
  }
}
