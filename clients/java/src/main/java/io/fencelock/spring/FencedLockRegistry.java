// SPDX-License-Identifier: Apache-2.0
package io.fencelock.spring;

import io.fencelock.client.FencedLock;
import io.fencelock.client.FencelockClient;
import io.fencelock.client.FencelockException;
import io.fencelock.client.Session;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.integration.support.locks.ExpirableLockRegistry;

/**
 * A Spring Integration lock registry whose locks are fencelock's: {@link #obtain} gives a
 * {@link FencedLock} (a {@link java.util.concurrent.locks.Lock} with {@link
 * FencedLock#getToken()}), held through a session of its own per lock key, so that a wait for
 * one key never holds up another key's calls. The holder thread is interrupted when its
 * session is lost (before the servers could grant the lock to anybody else); fence the writes
 * the lock protects with its token.
 *
 * <p>A key's session is opened at the first {@code obtain} of the key and renewed by the
 * client until {@link #expireUnusedOlderThan} (Spring's hook) or {@link #close()} closes it; a
 * lost session is replaced at the next {@code obtain}. Keys are the lock names (toString()).
 */
public class FencedLockRegistry implements ExpirableLockRegistry, AutoCloseable {
  private final FencelockClient client;
  private final Duration ttl;
  private final Map<String, Entry> entries = new ConcurrentHashMap<>();

  private static final class Entry {
    final Session session;
    final FencedLock lock;
    volatile long lastUsed = System.currentTimeMillis();

    Entry(Session session, FencedLock lock) {
      this.session = session;
      this.lock = lock;
    }
  }

  /** Locks of this client, each key's session with this TTL. */
  public FencedLockRegistry(FencelockClient client, Duration ttl) {
    this.client = client;
    this.ttl = ttl;
  }

  @Override
  public FencedLock obtain(Object lockKey) {
    String name = lockKey.toString();
    Entry e =
        entries.compute(
            name,
            (k, old) -> {
              if (old != null && !old.session.isLost()) {
                return old;
              }
              Session s = client.openSession(ttl);
              return new Entry(s, s.lock(k));
            });
    e.lastUsed = System.currentTimeMillis();
    return e.lock;
  }

  /** Close the sessions of keys not obtained for age ms whose lock nobody holds. */
  @Override
  public void expireUnusedOlderThan(long age) {
    long now = System.currentTimeMillis();
    for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, Entry> me = it.next();
      Entry e = me.getValue();
      if (now - e.lastUsed > age && e.lock.getToken() == 0 && entries.remove(me.getKey(), e)) {
        closeQuietly(e.session);
      }
    }
  }

  /** Close every key's session (their locks are released at once, without lock-delay). */
  @Override
  public void close() {
    for (String k : entries.keySet()) {
      Entry e = entries.remove(k);
      if (e != null) {
        closeQuietly(e.session);
      }
    }
  }

  private static void closeQuietly(Session s) {
    try {
      s.close();
    } catch (FencelockException ignored) {
      // the lease runs out on the servers
    }
  }
}
