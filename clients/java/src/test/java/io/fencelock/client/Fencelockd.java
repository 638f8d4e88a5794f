// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Real fencelockd processes for the tests: free loopback ports from FL_TEST_PORTS (lo-hi, default
 * 20000-32767, never 7480-7482), a data directory each, stdout+stderr in node.log. The binary:
 * system property fencelock.bin, else $FENCELOCK_BIN, else build/asan/fencelockd of this source
 * tree. {@link #close()} stops the processes and fails on a sanitizer report in a log.
 */
final class Fencelockd implements AutoCloseable {
  static final List<String> TIMING = List.of("--election-ms", "400", "--heartbeat-ms", "40");
  private static final Set<Integer> USED = new HashSet<>();
  private static final Random RNG = new Random();
  /** Every process started, killed when the JVM exits however the test run ended. */
  private static final Set<Process> STARTED = java.util.concurrent.ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> STARTED.forEach(Process::destroyForcibly)));
  }

  final int id;
  final int port;
  final int raftPort;
  final int httpPort;
  final Path dir;
  final List<String> args = new ArrayList<>();
  Process proc;

  Fencelockd(Path root, int id) throws IOException {
    this.id = id;
    this.port = freePort();
    this.raftPort = freePort();
    this.httpPort = freePort();
    this.dir = Files.createDirectories(root.resolve("node" + id));
  }

  static String binary() {
    String b = System.getProperty("fencelock.bin");
    if (b == null || b.isEmpty() || b.startsWith("${")) {
      b = System.getenv("FENCELOCK_BIN");
    }
    if (b == null || b.isEmpty()) {
      b = new File("../../build/asan/fencelockd").getAbsolutePath();
    }
    if (!new File(b).canExecute()) {
      throw new IllegalStateException(
          "no fencelockd at " + b + " (-Dfencelock.bin=PATH or $FENCELOCK_BIN)");
    }
    return b;
  }

  static synchronized int freePort() {
    int lo = 20000;
    int hi = 32767;
    String spec = System.getenv("FL_TEST_PORTS");
    if (spec != null && spec.contains("-")) {
      lo = Integer.parseInt(spec.split("-")[0]);
      hi = Integer.parseInt(spec.split("-")[1]);
    }
    for (int i = 0; i < 2000; i++) {
      int p = lo + RNG.nextInt(hi - lo + 1);
      if (USED.contains(p) || (p >= 7480 && p <= 7482)) {
        continue;
      }
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress("127.0.0.1", p));
      } catch (IOException e) {
        continue;
      }
      USED.add(p);
      return p;
    }
    throw new IllegalStateException("no free port in " + lo + "-" + hi);
  }

  String addr() {
    return "127.0.0.1:" + port;
  }

  Fencelockd start() throws IOException {
    List<String> argv =
        new ArrayList<>(
            Arrays.asList(
                binary(),
                "--id", Integer.toString(id),
                "--data-dir", dir.resolve("data").toString(),
                "--listen", addr(),
                "--raft-listen", "127.0.0.1:" + raftPort,
                "--http-listen", "127.0.0.1:" + httpPort));
    argv.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("FENCELOCK_"));
    pb.environment().putIfAbsent("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0");
    pb.redirectErrorStream(true);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("node.log").toFile()));
    pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    proc = pb.start();
    STARTED.add(proc);
    return this;
  }

  boolean running() {
    return proc != null && proc.isAlive();
  }

  void kill9() throws InterruptedException {
    proc.destroyForcibly();
    proc.waitFor(30, TimeUnit.SECONDS);
  }

  void signal(String sig) throws IOException, InterruptedException {
    new ProcessBuilder("kill", "-" + sig, Long.toString(proc.pid())).inheritIO().start().waitFor();
  }

  void stop() throws InterruptedException, IOException {
    if (!running()) {
      return;
    }
    signal("CONT");
    proc.destroy();
    if (!proc.waitFor(30, TimeUnit.SECONDS)) {
      proc.destroyForcibly();
      proc.waitFor(30, TimeUnit.SECONDS);
    }
  }

  String log() throws IOException {
    Path p = dir.resolve("node.log");
    return Files.exists(p) ? Files.readString(p) : "";
  }

  @Override
  public void close() throws IOException {
    try {
      stop();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    String log = log();
    for (String bad : new String[] {"ERROR: AddressSanitizer", "runtime error:"}) {
      if (log.contains(bad)) {
        throw new AssertionError("node " + id + ": sanitizer report in " + dir + "/node.log");
      }
    }
  }

  /** n nodes with one --initial-cluster, started; the caller waits for a leader. */
  static List<Fencelockd> cluster(Path root, int n, String... extra) throws IOException {
    List<Fencelockd> nodes = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      nodes.add(new Fencelockd(root, i));
    }
    StringBuilder members = new StringBuilder();
    for (Fencelockd s : nodes) {
      members.append(members.length() > 0 ? "," : "").append(s.id).append("=127.0.0.1:").append(s.raftPort);
    }
    for (Fencelockd s : nodes) {
      s.args.add("--initial-cluster");
      s.args.add(members.toString());
      s.args.addAll(TIMING);
      s.args.addAll(Arrays.asList(extra));
      s.start();
    }
    return nodes;
  }

  static String endpoints(List<Fencelockd> nodes) {
    StringBuilder b = new StringBuilder();
    for (Fencelockd s : nodes) {
      b.append(b.length() > 0 ? "," : "").append(s.addr());
    }
    return b.toString();
  }

  /** Poll cond every 50 ms until true; AssertionError after the (generous) bound. */
  static void waitUntil(BooleanSupplier cond, Duration bound, String what)
      throws InterruptedException {
    long end = System.nanoTime() + bound.toNanos();
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() - end > 0) {
        throw new AssertionError("not within " + bound + ": " + what);
      }
      Thread.sleep(50);
    }
  }

  /** A client of these nodes that has reached a ready leader (a write went through). */
  static FencelockClient readyClient(String endpoints) {
    try (FencelockClient c =
        FencelockClient.builder().endpoints(endpoints).timeout(Duration.ofSeconds(60)).build()) {
      c.put("__ready", "1");
    }
    return FencelockClient.builder().endpoints(endpoints).timeout(Duration.ofSeconds(5)).build();
  }

  static void closeAll(List<Fencelockd> nodes) throws Exception {
    AssertionError first = null;
    for (Fencelockd s : nodes) {
      try {
        s.close();
      } catch (AssertionError e) {
        first = first == null ? e : first;
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
