// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client against one real fencelockd: every call of the contract on a healthy server. */
class SingleNodeTest {
  @TempDir static Path root;
  static Fencelockd node;
  static FencelockClient client;

  @BeforeAll
  static void start() throws Exception {
    node = new Fencelockd(root, 1);
    node.args.addAll(List.of("--event-history", "64"));
    node.start();
    client = Fencelockd.readyClient(node.addr());
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    node.close();
  }

  @Test
  void tokensRiseAndAnOldTokensFencedWriteIsRefused() {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      long t1 = a.acquire("inv", Duration.ofSeconds(5));
      assertTrue(client.fenceCheck("inv", t1));
      long r = a.put("stock", "9", WriteOptions.fenced("inv", t1));
      assertEquals(r, client.kvGet("stock").modRev());
      a.unlock("inv");
      long t2 = b.acquire("inv", Duration.ofSeconds(5));
      assertTrue(t2 > t1, "tokens rise");
      assertThrows(StaleException.class, () -> a.put("stock", "8", WriteOptions.fenced("inv", t1)));
      assertEquals("9", client.getString("stock"), "a refused write changes nothing");
      assertFalse(client.fenceCheck("inv", t1));
      assertThrows(BusyException.class, () -> a.acquire("inv", Duration.ZERO));
      assertTrue(a.tryAcquire("inv").isEmpty());
      assertThrows(LockTimeoutException.class, () -> a.acquire("inv", Duration.ofMillis(200)));
      assertThrows(NotHolderException.class, () -> a.unlock("inv"));
      b.unlock("inv");
    }
  }

  @Test
  void fencedLockIsAJavaLock() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      FencedLock la = a.lock("jl");
      Lock lb = b.lock("jl");
      assertEquals(0, la.getToken());
      la.lock();
      long t = la.getToken();
      assertTrue(t > 0);
      la.lock(); // reentrant: same hold, same token
      assertEquals(t, la.getToken());
      la.unlock();
      assertTrue(client.fenceCheck("jl", t), "still held after the inner unlock");
      assertFalse(lb.tryLock());
      assertFalse(lb.tryLock(200, TimeUnit.MILLISECONDS));
      assertThrows(UnsupportedOperationException.class, la::newCondition);
      AtomicReference<Throwable> err = new AtomicReference<>();
      Thread other = new Thread(() -> {
        try {
          la.unlock();
        } catch (Throwable e) {
          err.set(e);
        }
      });
      other.start();
      other.join();
      assertTrue(err.get() instanceof IllegalMonitorStateException, "only the holder unlocks");
      la.unlock();
      assertEquals(0, la.getToken());
      assertTrue(lb.tryLock(5, TimeUnit.SECONDS));
      assertTrue(((FencedLock) lb).getToken() > t);
      lb.unlock();
    }
  }

  @Test
  void lockInterruptiblyLeavesTheQueueWhenInterrupted() throws Exception {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      long t = a.acquire("intr", Duration.ofSeconds(5));
      AtomicReference<Throwable> got = new AtomicReference<>();
      Thread w = new Thread(() -> {
        try {
          b.lock("intr").lockInterruptibly();
          got.set(new AssertionError("granted"));
        } catch (Throwable e) {
          got.set(e);
        }
      });
      w.start();
      Fencelockd.waitUntil(() -> waiters("intr") == 1, Duration.ofSeconds(30), "b queued");
      w.interrupt();
      w.join(30_000);
      assertTrue(got.get() instanceof InterruptedException, "got " + got.get());
      assertEquals(0, waiters("intr"), "the interrupted waiter left the queue");
      a.unlock("intr");
      assertTrue(client.lockInfo("intr") == null || !client.fenceCheck("intr", t));
    }
  }

  static int waiters(String name) {
    Map<String, Object> m = client.lockInfo(name);
    if (m == null || !(m.get("waiters") instanceof List)) {
      return 0;
    }
    return ((List<?>) m.get("waiters")).size();
  }

  @Test
  void sharedLocksSemaphoresAndWrongTypes() {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10));
        Session c = client.openSession(Duration.ofSeconds(10))) {
      long r1 = a.acquireShared("cat", Duration.ofSeconds(5));
      long r2 = b.acquireShared("cat", Duration.ofSeconds(5));
      assertTrue(r2 > r1);
      assertTrue(c.tryAcquire("cat").isEmpty(), "a writer waits for the readers");
      assertThrows(StaleException.class, () -> a.put("k-cat", "x", WriteOptions.fenced("cat", r1)));
      long p1 = a.semAcquire("pool", 2, Duration.ofSeconds(5));
      long p2 = b.semAcquire("pool", 2, Duration.ofSeconds(5));
      assertTrue(p2 > p1);
      assertTrue(c.semTryAcquire("pool", 2).isEmpty());
      a.semRelease("pool");
      assertTrue(c.semTryAcquire("pool", 2).isPresent());
      assertThrows(WrongTypeException.class, () -> c.acquire("pool", Duration.ZERO));
      assertThrows(ServerException.class, () -> c.semAcquire("pool", 3, Duration.ZERO));
    }
  }

  @Test
  void electionsCampaignObserveProclaimResign() {
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = client.openSession(Duration.ofSeconds(10))) {
      assertNull(client.leader("el"));
      long ta = a.campaign("el", "host-a", Duration.ofSeconds(5));
      Leader l = client.leader("el");
      assertEquals(a.sid(), l.sid());
      assertEquals("host-a", l.valueString());
      assertEquals(ta, l.token());
      assertThrows(BusyException.class, () -> b.campaign("el", "host-b", Duration.ZERO));
      long rev = a.proclaim("el", ta, "host-a2");
      Leader o = client.observe("el", ta, Duration.ofSeconds(5)).orElseThrow();
      assertEquals(rev, o.rev());
      assertEquals("host-a2", o.valueString());
      assertTrue(client.observe("el", rev, Duration.ofMillis(200)).isEmpty(), "nothing changed");
      assertThrows(StaleException.class, () -> b.proclaim("el", ta, "x"));
      a.resign("el");
      Optional<Leader> after = client.observe("el", rev, Duration.ofSeconds(5));
      assertEquals(0, after.orElseThrow().sid(), "leaderless after the resign");
    }
  }

  @Test
  void conditionalWritesAndDeletes() {
    long r = client.put("cw", "a", WriteOptions.none().ifRev(0));
    assertThrows(IfRevException.class, () -> client.put("cw", "b", WriteOptions.none().ifRev(0)));
    long r2 = client.put("cw", "b", WriteOptions.none().ifRev(r));
    assertTrue(r2 > r);
    assertArrayEquals("b".getBytes(), client.get("cw"));
    assertThrows(IfRevException.class, () -> client.delete("cw", WriteOptions.none().ifRev(r)));
    assertTrue(client.delete("cw", WriteOptions.none().ifRev(r2)));
    assertFalse(client.delete("cw", WriteOptions.none()));
    assertNull(client.kvGet("cw"));
    Session s = client.openSession(Duration.ofSeconds(10));
    s.put("leased", "x", WriteOptions.none().leased());
    assertEquals(s.sid(), client.kvGet("leased").lease());
    s.close();
    s.close(); // a second close does nothing
    assertThrows(SessionLostException.class, () -> s.put("after", "x", WriteOptions.none()));
    assertNull(client.get("leased"), "a leased key ends with its session");
  }

  @Test
  void watchDeliversInOrderResumesAndReportsCompaction() throws Exception {
    Watch w = client.watch("wk/", null);
    List<String> ids = new ArrayList<>();
    w.read(1); // resolves "$"
    for (int i = 0; i < 5; i++) {
      client.put("wk/" + i, "v" + i);
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    List<Event> got = new ArrayList<>();
    while (got.size() < 5 && System.nanoTime() < end) {
      got.addAll(w.read(500));
    }
    assertEquals(5, got.size());
    for (int i = 0; i < 5; i++) {
      assertEquals("wk/" + i, got.get(i).name());
      assertEquals("put", got.get(i).type());
      ids.add(got.get(i).id());
    }
    Watch again = client.watch("wk/", ids.get(2));
    List<Event> rest = again.read(100);
    assertEquals(List.of(ids.get(3), ids.get(4)), List.of(rest.get(0).id(), rest.get(1).id()));
    // A watcher stopped from another thread returns at once.
    CountDownLatch in = new CountDownLatch(1);
    AtomicLong n = new AtomicLong(-1);
    Thread t = new Thread(() -> {
      in.countDown();
      n.set(w.read(60_000).size());
    });
    t.start();
    in.await();
    Thread.sleep(200);
    w.stop();
    t.join(10_000);
    assertFalse(t.isAlive(), "stop() ended the blocked read");
    assertEquals(0, n.get());
    // More events than --event-history (64): reading from the first id is refused, with the
    // oldest retained id and the one just before it.
    for (int i = 0; i < 80; i++) {
      client.put("wk/c", "v" + i);
    }
    Watch old = client.watch("wk/", ids.get(0));
    CompactedException ce = assertThrows(CompactedException.class, () -> old.read(100));
    assertNotNull(ce.oldest());
    assertFalse(ce.after().isEmpty());
    List<Event> fromAfter = client.watch("", ce.after()).read(100);
    assertEquals(ce.oldest(), fromAfter.get(0).id(), "after() resumes at the oldest retained");
  }

  @Test
  void aSessionIsLostBeforeItsDeadlineCanHavePassedOnTheServer() throws Exception {
    // The server frozen: no keepalive is acknowledged. The listener must run, and the holder
    // thread be interrupted, while the server still counts the session as alive (it is
    // frozen and has expired nothing), and safeUntil is then no longer in the future.
    Session s = client.openSession(Duration.ofSeconds(2));
    FencedLock l = s.lock("lost");
    AtomicLong lostAt = new AtomicLong();
    AtomicLong remainingAtLoss = new AtomicLong(Long.MAX_VALUE);
    CountDownLatch lost = new CountDownLatch(1);
    s.addLostListener(x -> {
      lostAt.set(System.nanoTime());
      remainingAtLoss.set(x.safeUntil() - System.nanoTime());
      lost.countDown();
    });
    CountDownLatch held = new CountDownLatch(1);
    AtomicBoolean interrupted = new AtomicBoolean();
    Thread holder = new Thread(() -> {
      l.lock();
      held.countDown();
      try {
        Thread.sleep(120_000);
      } catch (InterruptedException e) {
        interrupted.set(true);
      }
    });
    holder.start();
    assertTrue(held.await(30, TimeUnit.SECONDS));
    long token = l.getToken();
    node.signal("STOP");
    try {
      assertTrue(lost.await(60, TimeUnit.SECONDS), "the lost listener ran");
      holder.join(30_000);
      assertTrue(interrupted.get(), "the holder thread was interrupted");
      assertTrue(remainingAtLoss.get() <= 0, "lost only once the safe deadline passed");
      assertTrue(s.isLost());
      assertEquals(Duration.ZERO, s.remaining());
      assertThrows(SessionLostException.class, () -> s.acquire("other", Duration.ZERO));
    } finally {
      node.signal("CONT");
    }
    // The server, running again, ends the session by itself: the token is refused.
    Fencelockd.waitUntil(() -> !client.fenceCheck("lost", token), Duration.ofSeconds(60),
        "the server expired the session");
    s.close();
  }
}
