// SPDX-License-Identifier: Apache-2.0
package io.fencelock.examples;

import io.fencelock.client.FencedLock;
import io.fencelock.client.FencelockClient;
import io.fencelock.client.FencelockException;
import io.fencelock.client.Session;
import io.fencelock.client.StaleException;
import io.fencelock.client.WriteOptions;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

/**
 * Inventory service with fencing, on the Java client (clients/java).
 *
 * <p>The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long
 * GC pause): its session stops renewing. Its lease runs out, our worker is granted the lock,
 * sells one item with a fenced write, and the zombie, waking up, writes with its old token: the
 * server refuses it ({@link StaleException}). That refusal is what fencing is for.
 *
 * <p>Arguments: the endpoints ({@code host:port,...}), else $FENCELOCK_ENDPOINTS, else
 * 127.0.0.1:7480. Any node will do: the client follows -NOTLEADER. Exits 0 if everything
 * behaved as fencelock promises, 1 otherwise.
 */
public final class Inventory {
  /** Something fencelock should not have done: the example fails. */
  static final class Unexpected extends Exception {
    private static final long serialVersionUID = 1L;

    Unexpected(String message) {
      super(message);
    }
  }

  private Inventory() {}

  public static void main(String[] args) {
    String env = System.getenv().getOrDefault("FENCELOCK_ENDPOINTS", "").strip();
    String endpoints = args.length > 0 ? args[0] : env.isEmpty() ? "127.0.0.1:7480" : env;
    try (FencelockClient c = FencelockClient.builder().endpoints(endpoints).build()) {
      run(c);
    } catch (Unexpected | FencelockException | InterruptedException e) {
      System.err.println("inventory: unexpected: " + e.getMessage());
      System.exit(1);
    }
  }

  static void run(FencelockClient c) throws Unexpected, InterruptedException {
    // The zombie: a 1 s lease whose keepalives stop at once, so it runs out while "frozen".
    Session zombie = c.openSession(Duration.ofSeconds(1), Duration.ZERO, "zombie");
    OptionalLong taken = zombie.tryAcquire("inventory");
    if (taken.isEmpty()) {
      zombie.close();
      throw new Unexpected("the inventory lock is already taken; is another example running?");
    }
    long zombieToken = taken.getAsLong();
    zombie.abandon();
    System.out.printf("zombie: session %d holds inventory with token %d, then freezes%n",
        zombie.sid(), zombieToken);

    Duration ttl = Duration.ofSeconds(2);
    try (Session me = c.openSession(ttl, Duration.ZERO, "inventory-worker")) {
      System.out.printf("worker: session %d (ttl %d ms) on %s%n", me.sid(), ttl.toMillis(),
          c.leaderAddress());
      sell(c, me, zombieToken);
      System.out.printf("worker: unlocked and closed session %d%n", me.sid());
    }
  }

  /** Queued behind the zombie (FIFO), granted once its lease expired: sell one item. */
  static void sell(FencelockClient c, Session me, long zombieToken)
      throws Unexpected, InterruptedException {
    long t0 = System.nanoTime();
    FencedLock lock = me.lock("inventory");
    if (!lock.tryLock(10, TimeUnit.SECONDS)) {
      throw new Unexpected("no lock after 10 s: the zombie's lease should have expired");
    }
    try {
      long token = lock.getToken();
      if (token <= zombieToken) {
        throw new Unexpected("token " + token + " does not exceed the zombie's " + zombieToken);
      }
      System.out.printf("worker: got inventory after %.1f s, fencing token %d%n",
          (System.nanoTime() - t0) / 1e9, token);
      String raw = c.getString("stock");
      int stock = raw != null ? Integer.parseInt(raw) : 100; // first run: start with 100 items
      System.out.printf("worker: stock is %d%n", stock);
      // A lost lease interrupts this thread (the lock's holder) before it can lapse.
      if (Thread.currentThread().isInterrupted() || me.remaining().toNanos() <= 0) {
        throw new Unexpected("our lease may be gone: not acting");
      }
      // Accepted only while our token is the current holder's; exactly once (REQ).
      long rev = c.put("stock", String.valueOf(stock - 1),
          WriteOptions.fenced("inventory", token).session(me));
      System.out.printf("worker: sold one, stock %d written at revision %d%n", stock - 1, rev);

      // The zombie wakes up and writes what it computed before freezing.
      try {
        c.put("stock", "0", WriteOptions.fenced("inventory", zombieToken));
        throw new Unexpected("the zombie's write with stale token " + zombieToken
            + " was accepted");
      } catch (StaleException e) {
        System.out.printf("zombie: write with token %d refused: -%s%n", zombieToken,
            e.getMessage());
      }
      if (!String.valueOf(stock - 1).equals(c.getString("stock"))) {
        throw new Unexpected("the stock changed after a refused write");
      }
    } finally {
      lock.unlock();
    }
  }
}
