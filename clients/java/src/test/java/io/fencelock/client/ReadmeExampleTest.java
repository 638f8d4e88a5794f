// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's example, as written, compiles and runs against a real fencelockd. */
class ReadmeExampleTest {
  @TempDir Path dir;

  @Test
  void theReadmeExampleRunsAsWritten() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    int a = readme.indexOf("```java", readme.indexOf("<!-- example"));
    int b = readme.indexOf("```", a + 7);
    String src = readme.substring(a + 7, b);
    Path file = dir.resolve("Example.java");
    Files.writeString(file, src);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String cp = System.getProperty("java.class.path");
    assertEquals(0, javac.run(null, null, null, "-d", dir.toString(), "-cp", cp, file.toString()));
    try (Fencelockd node = new Fencelockd(dir, 1)) {
      node.start();
      Fencelockd.readyClient(node.addr()).close();
      ProcessBuilder pb = new ProcessBuilder(
          new File(System.getProperty("java.home"), "bin/java").toString(),
          "-cp", dir + File.pathSeparator + cp, "Example").redirectErrorStream(true);
      pb.environment().put("FENCELOCK_ENDPOINTS", node.addr());
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), out);
      assertTrue(out.matches("(?s)sold one with token [0-9]+\\s*"), out);
    }
  }
}
