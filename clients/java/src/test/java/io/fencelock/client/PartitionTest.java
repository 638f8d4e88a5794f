// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client cut off from a server that runs on: the server expires the session on its own
 * deadline, and the client must have stopped the holder before that. Both times are wall
 * clocks of this machine: the lost listener's, and the server's log line of the expiry. The
 * cut is an iptables rule dropping every packet to the server's client port (existing
 * connections too), tagged fencelock-test like the integration suite's and always removed;
 * without root or iptables the test is skipped.
 */
class PartitionTest {
  static final String TAG = "fencelock-test";
  @TempDir Path root;

  static int iptables(String op, int port) throws Exception {
    Process p = new ProcessBuilder("iptables", "-w", "5", op, "INPUT", "-p", "tcp", "--dport",
        Integer.toString(port), "-m", "comment", "--comment", TAG, "-j", "DROP")
        .redirectErrorStream(true).start();
    p.getInputStream().readAllBytes();
    return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
  }

  static boolean iptablesUsable() {
    try {
      return iptables("-A", 1) == 0 && iptables("-D", 1) == 0;
    } catch (Exception e) {
      return false;
    }
  }

  @Test
  void theHolderIsStoppedBeforeTheServerExpiresItsSession() throws Exception {
    Assumptions.assumeTrue(iptablesUsable(), "needs root and iptables with the comment match");
    try (Fencelockd node = new Fencelockd(root, 1)) {
      node.start();
      Fencelockd.readyClient(node.addr()).close();
      try (FencelockClient c = FencelockClient.builder().endpoints(node.addr()).build()) {
        Session s = c.openSession(Duration.ofSeconds(3));
        FencedLock lock = s.lock("part");
        AtomicLong lostWall = new AtomicLong();
        AtomicLong interruptedWall = new AtomicLong();
        CountDownLatch lost = new CountDownLatch(1);
        s.addLostListener(x -> {
          lostWall.set(System.currentTimeMillis());
          lost.countDown();
        });
        CountDownLatch held = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
          lock.lock();
          held.countDown();
          try {
            Thread.sleep(120_000);
          } catch (InterruptedException e) {
            interruptedWall.set(System.currentTimeMillis());
          }
        });
        holder.start();
        assertTrue(held.await(30, TimeUnit.SECONDS));
        boolean ruled = false;
        try {
          ruled = iptables("-I", node.port) == 0;
          assertTrue(ruled, "iptables -I");
          assertTrue(lost.await(60, TimeUnit.SECONDS), "lost");
        } finally {
          if (ruled) {
            iptables("-D", node.port);
          }
        }
        holder.join(30_000);
        assertTrue(interruptedWall.get() > 0, "the holder was interrupted");
        Pattern p = Pattern.compile("^(\\S+) W .*session " + s.sid() + " expired while holding 'part'",
            Pattern.MULTILINE);
        AtomicLong expiredWall = new AtomicLong();
        Fencelockd.waitUntil(() -> {
          try {
            Matcher m = p.matcher(node.log());
            if (m.find()) {
              expiredWall.set(Instant.parse(m.group(1)).toEpochMilli());
              return true;
            }
            return false;
          } catch (java.io.IOException e) {
            return false;
          }
        }, Duration.ofSeconds(60), "the server's expiry log line");
        assertTrue(interruptedWall.get() <= expiredWall.get(),
            "holder interrupted at " + interruptedWall + ", server expired at " + expiredWall);
        assertTrue(lostWall.get() <= expiredWall.get(),
            "listener ran at " + lostWall + ", server expired at " + expiredWall);
        s.abandon();
      }
    }
  }
}
