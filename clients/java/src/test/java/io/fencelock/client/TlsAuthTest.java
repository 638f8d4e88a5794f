// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS (the server's name checked, a wrong CA refused) and AUTH (--acl-file) on one node, with
 * certificates made here by openssl: a CA, a server certificate for IP:127.0.0.1 and another
 * CA that signed nothing of the server's.
 */
class TlsAuthTest {
  @TempDir static Path dir;
  static Fencelockd node;

  static void openssl(String... args) throws Exception {
    List<String> argv = new java.util.ArrayList<>(List.of("openssl"));
    argv.addAll(List.of(args));
    Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), "openssl " + args[0] + ": " + out);
  }

  static void ca(String name) throws Exception {
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", name + ".key", "-out", name + ".crt", "-days", "30", "-subj", "/CN=" + name);
  }

  static void cert(String name, String ca, String ext) throws Exception {
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name);
    Files.writeString(dir.resolve(name + ".ext"), ext + "\n");
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
        "-CAcreateserial", "-out", name + ".crt", "-days", "30", "-extfile", name + ".ext");
  }

  static String hash(String pw) throws Exception {
    Process p = new ProcessBuilder(Fencelockd.binary(), "--hash-password").start();
    p.getOutputStream().write((pw + "\n").getBytes(StandardCharsets.UTF_8));
    p.getOutputStream().close();
    String h = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.waitFor());
    return h;
  }

  @BeforeAll
  static void start() throws Exception {
    ca("ca");
    ca("otherca");
    cert("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth");
    cert("wrongname", "ca", "subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth");
    Path acl = dir.resolve("acl");
    Files.writeString(acl, "user app " + hash("apppw") + " perm=read,lock,write\n");
    Files.setPosixFilePermissions(acl, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    node = new Fencelockd(dir, 1);
    node.args.addAll(List.of("--tls-cert", dir.resolve("server.crt").toString(), "--tls-key",
        dir.resolve("server.key").toString(), "--acl-file", acl.toString()));
    node.start();
  }

  @AfterAll
  static void stop() throws Exception {
    node.close();
  }

  FencelockClient.Builder tls(String ca) {
    return FencelockClient.builder().endpoints(node.addr())
        .tls(dir.resolve(ca + ".crt"), null, null).timeout(Duration.ofSeconds(60));
  }

  @Test
  void tlsAndAuthWorkTogetherAndAWaitCrossesTlsReadSlices() throws Exception {
    try (FencelockClient c = tls("ca").credentials("app", "apppw").build()) {
      c.put("t", "1");
      assertEquals("1", c.getString("t"));
      try (Session a = c.openSession(Duration.ofSeconds(10));
          Session b = c.openSession(Duration.ofSeconds(10))) {
        a.acquire("tl", Duration.ofSeconds(5));
        // A wait read in slices on a TLS socket: the connection stays good afterwards.
        assertThrows(LockTimeoutException.class, () -> b.acquire("tl", Duration.ofMillis(700)));
        a.unlock("tl");
        assertTrue(b.acquire("tl", Duration.ofSeconds(5)) > 0);
      }
    }
  }

  @Test
  void aWrongCaOrAWrongNameIsRefusedAsTls() {
    try (FencelockClient c = tls("otherca").credentials("app", "apppw")
        .timeout(Duration.ofSeconds(5)).build()) {
      assertThrows(TlsException.class, () -> c.put("x", "1"));
    }
  }

  @Test
  void aCertificateForAnotherNameIsRefusedAsTls() throws Exception {
    // Signed by the trusted CA, but for DNS:elsewhere.example, not IP:127.0.0.1.
    try (Fencelockd other = new Fencelockd(dir, 2)) {
      other.args.addAll(List.of("--tls-cert", dir.resolve("wrongname.crt").toString(),
          "--tls-key", dir.resolve("wrongname.key").toString()));
      other.start();
      try (FencelockClient c = FencelockClient.builder().endpoints(other.addr())
          .tls(dir.resolve("ca.crt"), null, null).timeout(Duration.ofSeconds(30)).build()) {
        TlsException e = assertThrows(TlsException.class, () -> c.put("x", "1"));
        assertEquals("TLS", e.word());
      }
    }
  }

  @Test
  void wrongCredentialsAndNoCredentialsAreAuthErrors() {
    try (FencelockClient c = tls("ca").credentials("app", "nope").build()) {
      assertThrows(AuthException.class, () -> c.put("x", "1"));
    }
    try (FencelockClient c = tls("ca").build()) {
      assertThrows(AuthException.class, () -> c.put("x", "1"));
    }
  }
}
