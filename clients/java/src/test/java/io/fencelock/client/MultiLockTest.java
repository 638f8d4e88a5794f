// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several locks at once and deadlocks against one real fencelockd: acquireMulti's
 * all-or-nothing grant with a token per name in the order given, shared names, a waiting
 * request granted when the last of its names is released, unlockMulti, withLocks; a
 * two-session cycle refused with DeadlockException and its cycle text.
 */
class MultiLockTest {
  @TempDir static Path root;
  static Fencelockd node;
  static FencelockClient client;

  @BeforeAll
  static void start() throws Exception {
    node = new Fencelockd(root, 1);
    node.start();
    client = Fencelockd.readyClient(node.addr());
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    node.close();
  }

  static boolean waits(String name, long sid) {
    Map<String, Object> m = client.lockInfo(name);
    if (m == null || !(m.get("waiters") instanceof List)) {
      return false;
    }
    for (Object w : (List<?>) m.get("waiters")) {
      if (String.valueOf(sid).equals(Resp.str(w))) {
        return true;
      }
    }
    return false;
  }

  @Test
  void allOrNothingWithATokenPerNameInTheOrderGiven() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      List<String> names = List.of("m/z", "m/a", "m/r");
      long[] t = a.acquireMulti(names, Set.of("m/r"), Duration.ofSeconds(5));
      assertEquals(3, t.length);
      // one entry: consecutive revisions in the byte order of the names, listed as given
      assertEquals(t[1] + 1, t[2]);
      assertEquals(t[2] + 1, t[0]);
      assertTrue(client.fenceCheck("m/z", t[0]));
      assertTrue(client.fenceCheck("m/a", t[1]));
      // m/r is shared: b reads it too
      assertTrue(b.tryAcquireShared("m/r").isPresent());
      b.unlock("m/r");
      // a try over a held name takes nothing
      assertTrue(b.tryAcquireMulti(List.of("m/free", "m/a"), Set.of()).isEmpty());
      assertThrows(
          BusyException.class, () -> b.acquireMulti(List.of("m/free", "m/a"), Duration.ZERO));
      assertTrue(b.tryAcquire("m/free").isPresent(), "all or nothing");
      b.unlock("m/free");

      AtomicReference<Object> got = new AtomicReference<>();
      Thread w = new Thread(() -> {
        try {
          got.set(b.acquireMulti(List.of("m/a", "m/z"), Duration.ofSeconds(30)));
        } catch (Throwable e) {
          got.set(e);
        }
      });
      w.start();
      Fencelockd.waitUntil(() -> waits("m/z", b.sid()), Duration.ofSeconds(30), "b queued");
      a.unlock("m/a");
      assertNull(got.get(), "granted while a still holds m/z");
      a.unlockMulti(List.of("m/z", "m/r"));
      w.join(30_000);
      assertTrue(got.get() instanceof long[], "got " + got.get());
      long[] bt = (long[]) got.get();
      assertTrue(bt[0] > t[0] && bt[1] > t[0], "b's tokens above a's");
      b.unlockMulti(List.of("m/a", "m/z"));

      // the callback form: held inside, released after
      int r = a.withLocks(List.of("w/1", "w/2"), Set.of(), Duration.ofSeconds(5), tok -> {
        assertEquals(2, tok.length);
        assertTrue(b.tryAcquire("w/2").isEmpty());
        return 7;
      });
      assertEquals(7, r);
      assertTrue(b.tryAcquireMulti(List.of("w/1", "w/2"), Set.of()).isPresent());
      assertThrows(
          IllegalStateException.class,
          () -> a.withLocks(List.of("x/1"), Set.of(), Duration.ofSeconds(5), tok -> {
            throw new IllegalStateException("boom");
          }));
      assertTrue(b.tryAcquire("x/1").isPresent(), "released after the callback threw");
    }
  }

  @Test
  void aWaitThatClosesACycleIsRefusedDeadlock() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      a.acquire("d/a", Duration.ofSeconds(5));
      b.acquire("d/b", Duration.ofSeconds(5));
      AtomicReference<Object> got = new AtomicReference<>();
      Thread w = new Thread(() -> {
        try {
          got.set(a.acquire("d/b", Duration.ofSeconds(30)));
        } catch (Throwable e) {
          got.set(e);
        }
      });
      w.start();
      Fencelockd.waitUntil(() -> waits("d/b", a.sid()), Duration.ofSeconds(30), "a queued");
      DeadlockException e =
          assertThrows(DeadlockException.class, () -> b.acquire("d/a", Duration.ofSeconds(20)));
      assertEquals("DEADLOCK", e.word());
      assertTrue(e.cycle().startsWith("cycle of 2:"), e.cycle());
      assertTrue(e.cycle().contains("-d/a->") && e.cycle().contains("-d/b->"), e.cycle());
      assertFalse(waits("d/a", b.sid()), "the refused wait was not queued");
      // nothing else changed: b still holds d/b, a still waits and is granted when b lets go
      b.unlock("d/b");
      w.join(30_000);
      assertTrue(got.get() instanceof Long, "got " + got.get());
    }
  }
}
