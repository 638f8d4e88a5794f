// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The conformance agent driven as the harness drives it (tests/conformance/PROTOCOL.md): a
 * process, JSON lines in and out, a lost event from a frozen server. A small driver of its own
 * until the shared harness runs every agent.
 */
class AgentTest {
  @TempDir Path dir;
  Process agent;
  BufferedReader out;
  Writer in;
  final List<String> events = new ArrayList<>();
  int id;

  String call(String req) throws Exception {
    int n = ++id;
    in.write("{\"id\": " + n + ", " + req.substring(1) + "\n");
    in.flush();
    while (true) {
      String line = out.readLine();
      if (line == null) {
        throw new AssertionError("agent exited");
      }
      if (line.contains("\"id\": " + n + ",")) {
        return line;
      }
      events.add(line);
    }
  }

  @Test
  void theAgentSpeaksTheProtocol() throws Exception {
    try (Fencelockd node = new Fencelockd(dir, 1)) {
      node.start();
      Fencelockd.readyClient(node.addr()).close();
      ProcessBuilder pb = new ProcessBuilder(
          new File(System.getProperty("java.home"), "bin/java").toString(),
          "-cp", System.getProperty("java.class.path"), "io.fencelock.agent.Agent")
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      pb.environment().put("FL_ENDPOINTS", node.addr());
      pb.environment().put("FL_TIMEOUT", "5.0");
      agent = pb.start();
      out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
      in = new java.io.OutputStreamWriter(agent.getOutputStream(), StandardCharsets.UTF_8);
      String ready = out.readLine();
      assertTrue(ready.contains("\"ready\": true") && ready.contains("\"client\": \"java\""), ready);
      assertTrue(call("{\"op\": \"session.open\", \"ttl\": 2}").contains("\"session\": \"s1\""));
      String lock = call("{\"op\": \"lock\", \"session\": \"s1\", \"name\": \"L\", \"wait\": 1}");
      assertTrue(lock.contains("\"token\": "), lock);
      String tok = lock.replaceAll(".*\"token\": ([0-9]+).*", "$1");
      assertTrue(call("{\"op\": \"session.open\", \"ttl\": 5}").contains("\"s2\""));
      assertTrue(call("{\"op\": \"lock\", \"session\": \"s2\", \"name\": \"L\", \"wait\": 0}")
          .contains("\"error\": \"BUSY\""));
      assertTrue(call("{\"op\": \"lock\", \"session\": \"s2\", \"name\": \"L\", \"wait\": 0.3}")
          .contains("\"error\": \"TIMEOUT\""));
      assertTrue(call("{\"op\": \"put\", \"key\": \"k\", \"value\": \"v\", \"session\": \"s1\","
          + " \"fence\": [\"L\", " + tok + "]}").contains("\"rev\": "));
      assertTrue(call("{\"op\": \"put\", \"key\": \"k\", \"value\": \"v\", \"fence\": [\"L\", "
          + (Long.parseLong(tok) - 1) + "]}").contains("\"error\": \"STALE\""));
      assertTrue(call("{\"op\": \"get\", \"key\": \"nokey\"}").contains("\"error\": \"NOTFOUND\""));
      assertTrue(call("{\"op\": \"elect.leader\", \"name\": \"E\"}").contains("\"NOTFOUND\""));
      node.signal("STOP");
      try {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (events.stream().noneMatch(e -> e.contains("\"event\": \"lost\"")
            && e.contains("\"s1\"")) && System.nanoTime() < end) {
          String l = out.readLine();
          events.add(l);
        }
        String safe = call("{\"op\": \"session.safe\", \"session\": \"s1\"}");
        assertTrue(safe.contains("\"lost\": true"), safe);
      } finally {
        node.signal("CONT");
      }
      assertTrue(events.stream().anyMatch(e -> e.contains("\"event\": \"lost\"")
          && e.contains("\"mono_ms\"") && e.contains("\"wall_ms\"")), events.toString());
      assertTrue(call("{\"op\": \"quit\"}").contains("\"ok\": true"));
      assertTrue(agent.waitFor(30, TimeUnit.SECONDS));
      assertEquals(0, agent.exitValue());
    } finally {
      if (agent != null) {
        agent.destroyForcibly();
      }
    }
  }
}
