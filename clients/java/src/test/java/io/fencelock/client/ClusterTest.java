// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Fail-over on a real 3-node cluster: kill -9 and SIGSTOP of the leader. */
class ClusterTest {
  @TempDir Path root;
  List<Fencelockd> nodes;
  FencelockClient client;

  @BeforeEach
  void start() throws Exception {
    nodes = Fencelockd.cluster(root, 3);
    client = Fencelockd.readyClient(Fencelockd.endpoints(nodes));
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    Fencelockd.closeAll(nodes);
  }

  Fencelockd leader() {
    client.put("__probe", "x"); // a write learns who leads
    String a = client.leaderAddress();
    assertNotNull(a);
    for (Fencelockd n : nodes) {
      if (n.addr().equals(a)) {
        return n;
      }
    }
    throw new AssertionError("no node at " + a);
  }

  @Test
  void killingTheLeaderWhileALockWaitsGrantsItOnceWithARisingToken() throws Exception {
    FencelockClient c2 = FencelockClient.builder().endpoints(Fencelockd.endpoints(nodes))
        .timeout(Duration.ofSeconds(20)).build();
    try (Session a = client.openSession(Duration.ofSeconds(10));
        Session b = c2.openSession(Duration.ofSeconds(10))) {
      long t1 = a.acquire("fo", Duration.ofSeconds(5));
      AtomicLong t2 = new AtomicLong();
      AtomicReference<Throwable> err = new AtomicReference<>();
      Thread w = new Thread(() -> {
        try {
          t2.set(b.acquire("fo", Duration.ofSeconds(60)));
        } catch (Throwable e) {
          err.set(e);
        }
      });
      w.start();
      Fencelockd.waitUntil(() -> waiters("fo") == 1, Duration.ofSeconds(30), "b queued");
      Fencelockd old = leader();
      old.kill9();
      // The holder releases through the new leader; the waiter's resent LOCK (same seq) is
      // granted there, once.
      a.unlock("fo");
      w.join(90_000);
      assertEquals(null, err.get());
      assertTrue(t2.get() > t1, "the token rises across the fail-over");
      Map<String, Object> info = client.lockInfo("fo");
      assertEquals(b.sid(), Resp.num(info.get("holder")));
      assertEquals(t2.get(), Resp.num(info.get("token")));
      assertEquals(0, waiters("fo"), "granted once: nothing left queued");
      assertNotEquals(old.addr(), client.leaderAddress());
      b.unlock("fo");
    } finally {
      c2.close();
    }
  }

  int waiters(String name) {
    Map<String, Object> m = client.lockInfo(name);
    if (m == null || !(m.get("waiters") instanceof List)) {
      return 0;
    }
    return ((List<?>) m.get("waiters")).size();
  }

  @Test
  void aSessionOutlivesAFrozenLeaderAndKeepsItsLock() throws Exception {
    // TTL 10 s, far above a fail-over: the keepalive gives up on the frozen leader after the
    // connect timeout and renews on the new one, so the session is never lost.
    try (Session s = client.openSession(Duration.ofSeconds(10))) {
      AtomicLong lostAt = new AtomicLong();
      s.addLostListener(x -> lostAt.set(System.nanoTime()));
      long t = s.acquire("keep", Duration.ofSeconds(5));
      Fencelockd l = leader();
      l.signal("STOP");
      try {
        Fencelockd.waitUntil(() -> {
          client.get("__probe"); // a read: resent after the frozen leader's silence
          return !l.addr().equals(client.leaderAddress());
        }, Duration.ofSeconds(60), "a new leader");
        // Two keepalive intervals on the new leader: the deadline moved past the freeze.
        long before = s.safeUntil();
        Fencelockd.waitUntil(() -> s.safeUntil() - before > 0, Duration.ofSeconds(30),
            "a keepalive acknowledged by the new leader");
        assertTrue(client.fenceCheck("keep", t), "the lock is still held");
        assertEquals(0, lostAt.get(), "never lost");
        assertTrue(s.remaining().toMillis() > 0);
      } finally {
        l.signal("CONT");
      }
      s.unlock("keep");
    }
  }

  @Test
  void aFollowerOnlyEndpointIsRedirectedToTheLeader() {
    Fencelockd l = leader();
    Fencelockd f = nodes.stream().filter(n -> n != l).findFirst().orElseThrow();
    try (FencelockClient c = FencelockClient.builder().endpoints(f.addr()).build()) {
      c.put("redir", "x");
      assertEquals(l.addr(), c.leaderAddress(), "followed -NOTLEADER");
    }
  }

  @Test
  void aFrozenLeadersLostAnswerIsUnknownAndASessionWriteAppliesOnce() throws Exception {
    FencelockClient c = FencelockClient.builder().endpoints(Fencelockd.endpoints(nodes))
        .timeout(Duration.ofSeconds(30)).build();
    try (Session s = c.openSession(Duration.ofSeconds(20))) {
      c.put("warm", "x");
      Fencelockd l = leader();
      l.signal("STOP");
      try {
        // Sent to the frozen leader, no answer: it may apply later, so it is not a failure.
        assertThrows(OutcomeUnknownException.class, () -> c.put("amb", "1"));
        // Through the session the same kind of write is resent with its REQ until it is
        // known: it lands on the new leader, once.
        s.put("once", "1", WriteOptions.none());
        assertNotEquals(l.addr(), c.leaderAddress());
      } finally {
        l.signal("CONT");
      }
      assertEquals(1, c.kvGet("once").version(), "applied once");
    } finally {
      c.close();
    }
  }

  @Test
  void aWatchCrossesALeaderKillWithoutGapOrDuplicate() throws Exception {
    Watch w = client.watch("wf/", null);
    w.read(1);
    for (int i = 0; i < 5; i++) {
      client.put("wf/" + i, "v");
    }
    List<Event> got = new ArrayList<>(w.read(1000));
    leader().kill9();
    FencelockClient c = FencelockClient.builder().endpoints(Fencelockd.endpoints(nodes))
        .timeout(Duration.ofSeconds(30)).build();
    try (Session s = c.openSession(Duration.ofSeconds(10))) {
      for (int i = 5; i < 10; i++) {
        s.put("wf/" + i, "v", WriteOptions.none());
      }
    } finally {
      c.close();
    }
    long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (got.size() < 10 && System.nanoTime() < end) {
      got.addAll(w.read(500));
    }
    Set<String> names = new HashSet<>();
    String prev = "0-0";
    for (Event e : got) {
      assertTrue(names.add(e.name()), "no duplicate: " + e);
      assertTrue(e.rev() > Long.parseLong(prev.split("-")[0]) || e.id().compareTo(prev) > 0,
          "in order: " + e.id() + " after " + prev);
      prev = e.id();
    }
    assertEquals(10, got.size(), "no gap: " + got);
  }
}
