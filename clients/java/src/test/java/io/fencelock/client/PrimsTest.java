// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against one real fencelockd: LOCK ... NOTIFY told to the holder through onWaiter (once per
 * waiting session, never for a waiter that did not ask), INCR (signed, fenced, through a
 * session, an error for a value that is no integer) and weighted semaphores (k permits at once,
 * FIFO without overtaking, SEM.SETLIMIT).
 */
class PrimsTest {
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

  /** The sids queued on a lock (LOCK.INFO) or a semaphore (SEM.INFO), in order. */
  static List<Long> waiters(String cmd, String name) {
    Map<String, Object> m = Resp.map(client.call(new Cmd(cmd, name)));
    List<Long> out = new ArrayList<>();
    if (m != null && m.get("waiters") instanceof List) {
      for (Object o : (List<?>) m.get("waiters")) {
        out.add(Resp.num(o));
      }
    }
    return out;
  }

  static void awaitWaiters(String cmd, String name, List<Long> want) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!waiters(cmd, name).equals(want)) {
      assertTrue(System.nanoTime() < end, "queued on " + name + ": " + waiters(cmd, name));
      Thread.sleep(20);
    }
  }

  @Test
  void aNotifyingWaiterIsToldToTheHolder() throws Exception {
    try (Session h = client.openSession(Duration.ofSeconds(10));
        Session quiet = client.openSession(Duration.ofSeconds(10));
        Session loud = client.openSession(Duration.ofSeconds(10));
        Session loud2 = client.openSession(Duration.ofSeconds(10))) {
      long t = h.acquire("nt/job", Duration.ofSeconds(5));
      BlockingQueue<Waiter> got = new LinkedBlockingQueue<>();
      try (WaiterWatch ww = h.onWaiter("nt/job", t, got::add)) {
        List<Long> want = new ArrayList<>();
        List<CompletableFuture<Long>> granted = new ArrayList<>();
        granted.add(
            CompletableFuture.supplyAsync(() -> quiet.acquire("nt/job", Duration.ofSeconds(60))));
        want.add(quiet.sid());
        awaitWaiters("LOCK.INFO", "nt/job", want);
        for (Session s : List.of(loud, loud2)) {
          granted.add(
              CompletableFuture.supplyAsync(
                  () -> s.acquireNotify("nt/job", Duration.ofSeconds(60))));
          want.add(s.sid());
          awaitWaiters("LOCK.INFO", "nt/job", want);
        }
        // In stream order: loud's, then loud2's; quiet asked for nothing and is not told.
        for (Session s : List.of(loud, loud2)) {
          Waiter w = got.poll(30, TimeUnit.SECONDS);
          assertNotNull(w, "no waiter told for " + s.sid());
          assertEquals("nt/job", w.name());
          assertEquals(t, w.token());
          assertEquals(s.sid(), w.sid());
          assertTrue(w.waitTime().toMillis() > 0 && w.waitTime().toMillis() <= 60_000, w.toString());
        }
        assertNull(got.poll(), "an extra waiter told");
        assertNull(ww.error(), "the watch ended by itself");
        // NOTIFY changes no order: each waiter in turn, with rising tokens.
        h.unlock("nt/job");
        long last = t;
        List<Session> order = List.of(quiet, loud, loud2);
        for (int i = 0; i < order.size(); i++) {
          long ti = granted.get(i).get(60, TimeUnit.SECONDS);
          assertTrue(ti > last, "token " + ti + " after " + last);
          last = ti;
          order.get(i).unlock("nt/job");
        }
      }
    }
  }

  @Test
  void incrCountsSignedAndFenced() {
    assertEquals(1, client.incr("ctr/a", 1));
    assertEquals(-4, client.incr("ctr/a", -5));
    try (Session s = client.openSession(Duration.ofSeconds(10))) {
      long t = s.acquire("ctr/lock", Duration.ofSeconds(5));
      assertEquals(6, s.incr("ctr/a", 10, WriteOptions.fenced("ctr/lock", t)));
      assertThrows(
          StaleException.class,
          () -> client.incr("ctr/a", 1, WriteOptions.fenced("ctr/lock", t + 100)));
    }
    assertEquals("6", client.kvGet("ctr/a").valueString());
    client.put("ctr/text", "abc");
    assertThrows(ServerException.class, () -> client.incr("ctr/text", 1));
  }

  @Test
  void weightedPermitsAreFifoWithoutOvertaking() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10));
        Session d = client.openSession(Duration.ofSeconds(10))) {
      assertThrows(
          IllegalArgumentException.class, () -> a.semAcquire("ws/pool", 3, 4, Duration.ZERO));
      long ta = a.semAcquire("ws/pool", 3, 2, Duration.ofSeconds(5));
      assertTrue(b.semTryAcquire("ws/pool", 3, 2).isEmpty(), "2 permits with 1 free");
      CompletableFuture<Long> tb =
          CompletableFuture.supplyAsync(() -> b.semAcquire("ws/pool", 3, 2, Duration.ofSeconds(60)));
      awaitWaiters("SEM.INFO", "ws/pool", List.of(b.sid()));
      // one permit is free, but b asked first for two: d's one does not overtake it
      assertTrue(d.semTryAcquire("ws/pool", 3).isEmpty(), "1 permit overtook a queued 2");
      a.semRelease("ws/pool");
      assertTrue(tb.get(60, TimeUnit.SECONDS) > ta, "b's token above a's");
      assertTrue(client.semSetLimit("ws/pool", 4));
      assertTrue(d.semTryAcquire("ws/pool", 4, 2).isPresent(), "2 of 4 free after SETLIMIT");
      assertTrue(client.semSetLimit("ws/none", 4), "an operator's limit before the semaphore");
      assertTrue(d.semTryAcquire("ws/none", 3, 3).isPresent(), "3 of the operator's 4, limit 3");
      assertTrue(client.semLimitReset("ws/none"));
      assertFalse(client.semLimitReset("ws/none"));
    }
  }
}
