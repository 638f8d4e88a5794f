// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against one real fencelockd: countdown latches (released at zero, broken by a joined
 * session's end), double barriers, reentrant sessions (the same token, a hold count), VALUE
 * and MAXHOLD on a lock (lockState, the stale token after the max hold) and LOCK.HISTORY
 * (newest first, CompactedException).
 */
class LatchTest {
  @TempDir static Path root;
  static Fencelockd node;
  static FencelockClient client;

  @BeforeAll
  static void start() throws Exception {
    node = new Fencelockd(root, 1);
    node.args.addAll(List.of("--history-per-lock", "2"));
    node.start();
    client = Fencelockd.readyClient(node.addr());
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    node.close();
  }

  @Test
  void latchZeroAndBroken() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      client.latchCreate("lt/a", 2);
      a.latchJoin("lt/a");
      b.latchJoin("lt/a");
      assertEquals(1, a.latchCountdown("lt/a"));
      assertFalse(client.latchWait("lt/a", Duration.ZERO), "one count left");
      CompletableFuture<Boolean> w =
          CompletableFuture.supplyAsync(() -> client.latchWait("lt/a", Duration.ofSeconds(30)));
      assertEquals(0, b.latchCountdown("lt/a"));
      assertTrue(w.get(30, TimeUnit.SECONDS), "the parked wait at zero");
      LatchInfo li = client.latchInfo("lt/a");
      assertEquals(
          List.of("latch", "zero", 2L, 0L),
          List.of(li.type(), li.state(), li.count(), li.remaining()));
      assertTrue(client.latchDelete("lt/a"));
      assertNull(client.latchInfo("lt/a"));
    }
    Session c = client.openSession(Duration.ofSeconds(10));
    client.latchCreate("lt/b", 1);
    c.latchJoin("lt/b");
    CompletableFuture<Boolean> w =
        CompletableFuture.supplyAsync(() -> client.latchWait("lt/b", Duration.ofSeconds(30)));
    long sid = c.sid();
    c.close();
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> w.get(30, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof BrokenException, "the waiter: " + e.getCause());
    assertEquals("BROKEN", ((FencelockException) e.getCause()).word());
    assertThrows(BrokenException.class, () -> client.latchCreate("lt/b", 1));
    assertEquals(sid, client.latchInfo("lt/b").brokenSid());
    assertTrue(client.latchDelete("lt/b"));
  }

  @Test
  void barrierEnterLeave() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      assertFalse(a.barrierEnter("br/x", 2, Duration.ZERO), "not full yet");
      CompletableFuture<Boolean> w =
          CompletableFuture.supplyAsync(() -> a.barrierEnter("br/x", 2, Duration.ofSeconds(30)));
      assertTrue(b.barrierEnter("br/x", 2, Duration.ofSeconds(30)));
      assertTrue(w.get(30, TimeUnit.SECONDS));
      CompletableFuture<Boolean> l =
          CompletableFuture.supplyAsync(() -> a.barrierLeave("br/x", Duration.ofSeconds(30)));
      assertTrue(b.barrierLeave("br/x", Duration.ofSeconds(30)));
      assertTrue(l.get(30, TimeUnit.SECONDS));
      assertNull(client.latchInfo("br/x"), "gone once everybody left");
    }
  }

  @Test
  void reentrantHoldCount() {
    try (Session r = client.openReentrantSession(Duration.ofSeconds(10), Duration.ZERO, null, 2)) {
      assertTrue(r.isReentrant());
      long t1 = r.acquire("re/x", Duration.ofSeconds(5));
      assertEquals(t1, r.acquire("re/x", Duration.ofSeconds(5)), "the same token");
      LockInfo li = client.lockState("re/x");
      assertEquals(List.of(r.sid(), t1, 2L), List.of(li.holder(), li.token(), li.count()));
      assertThrows(ServerException.class, () -> r.acquire("re/x", Duration.ofSeconds(5)));
      r.unlock("re/x");
      assertEquals(1, client.lockState("re/x").count());
      r.unlock("re/x");
      assertNull(client.lockState("re/x"));
    }
  }

  @Test
  void valueMaxHoldHistory() throws Exception {
    try (Session h = client.openSession(Duration.ofSeconds(10), Duration.ZERO, "holder");
        Session w = client.openSession(Duration.ofSeconds(10))) {
      long before = System.nanoTime();
      long t1 =
          h.acquire(
              "mv/x",
              Duration.ofSeconds(5),
              LockOptions.none().value("host-a").maxHold(Duration.ofSeconds(1)));
      long dl = h.maxHoldDeadline("mv/x").getAsLong();
      assertTrue(dl - before <= Duration.ofSeconds(1).toNanos(), "never after the servers'");
      LockInfo li = client.lockState("mv/x");
      assertEquals(
          List.of("host-a", 1000L, 0L, 1L),
          List.of(li.valueString(), li.maxHoldMs(), li.transitions(), li.count()));
      long t2 = w.acquire("mv/x", Duration.ofSeconds(30)); // granted when the max hold ends
      assertTrue(t2 > t1);
      assertThrows(
          StaleException.class, () -> client.put("mv/k", "late", WriteOptions.fenced("mv/x", t1)));
      assertFalse(h.isLost(), "the session lives on");
      w.unlock("mv/x");
      List<HistoryEntry> hs = client.lockHistory("mv/x", 0, 0);
      assertEquals(2, hs.size());
      HistoryEntry e0 = hs.get(0);
      HistoryEntry e1 = hs.get(1);
      assertEquals(List.of(t2, w.sid(), "unlock"), List.of(e0.token(), e0.sid(), e0.endedBy()));
      assertEquals(List.of(t1, h.sid(), "holder"), List.of(e1.token(), e1.sid(), e1.sessionName()));
      assertNotEquals("unlock", e1.endedBy());
      assertNotEquals("", e1.endedBy());
      h.acquire("mv/x", Duration.ofSeconds(5)); // a third grant pushes the first out (2 kept)
      CompactedException e =
          assertThrows(CompactedException.class, () -> client.lockHistory("mv/x", 0, t2));
      assertEquals("COMPACTED", e.word());
    }
  }
}
