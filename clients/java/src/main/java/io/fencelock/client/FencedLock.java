// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A fencelock lock as a {@link java.util.concurrent.locks.Lock}, held through one {@link
 * Session} ({@link Session#lock}). Reentrant for its holder thread; threads of this process
 * queue on a local lock first, then one of them waits on the servers (FIFO). While held,
 * {@link #getToken()} is the fencing token: pass it to every write the lock protects ({@link
 * WriteOptions#fenced}), and check {@code session.remaining()} before acting.
 *
 * <p>The holder thread is registered with the session: when the session is lost (its safe
 * deadline passed without a renewal, or the servers ended it) the thread is interrupted before
 * the servers can have granted the lock to anybody else; its next fenced write fails with
 * {@link StaleException} anyway. {@link #unlock()} after a loss just ends the local hold.
 *
 * <p>{@link #lock()} waits without end (in rounds of {@link #ROUND_MS}, each a FIFO wait on
 * the servers) and is not interruptible; its failures ({@link SessionLostException}, {@link
 * UnavailableException}) are unchecked, as the Lock interface allows. {@link #newCondition()}
 * is not supported.
 */
public final class FencedLock implements Lock {
  /** The longest single wait lock() and lockInterruptibly() ask the servers for. */
  static final long ROUND_MS = 30_000;

  private final Session session;
  private final String name;
  private final boolean shared;
  private final ReentrantLock local = new ReentrantLock(true);
  private volatile long token;

  FencedLock(Session session, String name, boolean shared) {
    this.session = session;
    this.name = name;
    this.shared = shared;
  }

  public String getName() {
    return name;
  }

  public Session getSession() {
    return session;
  }

  public boolean isShared() {
    return shared;
  }

  /** The fencing token of the current hold; 0 when not held. */
  public long getToken() {
    return token;
  }

  public boolean isHeldByCurrentThread() {
    return local.isHeldByCurrentThread();
  }

  private Cmd cmd() {
    return shared
        ? new Cmd("LOCK", name, session.sid(), "SHARED")
        : new Cmd("LOCK", name, session.sid());
  }

  /** One server-side wait; true when granted. waitMs 0 is a try. */
  private boolean grant(long waitMs, boolean interruptible) throws InterruptedException {
    Long t;
    try {
      t = session.waitGrant(cmd(), waitMs, "UNLOCK", "lock", interruptible);
    } catch (LockTimeoutException e) {
      return false;
    }
    if (t == null) {
      return false;
    }
    token = t;
    session.registerThread(Thread.currentThread());
    return true;
  }

  @Override
  public void lock() {
    local.lock();
    if (local.getHoldCount() > 1) {
      return;
    }
    boolean ok = false;
    try {
      while (!grant(ROUND_MS, false)) {
        // another round: the wait ran out, nothing is held
      }
      ok = true;
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    } finally {
      if (!ok) {
        local.unlock();
      }
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    local.lockInterruptibly();
    if (local.getHoldCount() > 1) {
      return;
    }
    boolean ok = false;
    try {
      while (!grant(ROUND_MS, true)) {
        if (Thread.interrupted()) {
          throw new InterruptedException("lock " + name + ": interrupted");
        }
      }
      ok = true;
    } finally {
      if (!ok) {
        local.unlock();
      }
    }
  }

  @Override
  public boolean tryLock() {
    if (!local.tryLock()) {
      return false;
    }
    if (local.getHoldCount() > 1) {
      return true;
    }
    boolean ok = false;
    try {
      ok = grant(0, false);
      return ok;
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    } finally {
      if (!ok) {
        local.unlock();
      }
    }
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    long end = System.nanoTime() + unit.toNanos(time);
    if (!local.tryLock(time, unit)) {
      return false;
    }
    if (local.getHoldCount() > 1) {
      return true;
    }
    boolean ok = false;
    try {
      long left = (end - System.nanoTime()) / 1_000_000;
      ok = grant(Math.max(0, left), true);
      return ok;
    } finally {
      if (!ok) {
        local.unlock();
      }
    }
  }

  /**
   * Release (the last of the holder's holds): UNLOCK on the servers. A session already lost or
   * a lock the servers no longer count as held ends the hold without an error; an unreachable
   * cluster throws, the local hold ended all the same (the session's end releases the lock).
   */
  @Override
  public void unlock() {
    if (!local.isHeldByCurrentThread()) {
      throw new IllegalMonitorStateException("lock " + name + " is not held by this thread");
    }
    if (local.getHoldCount() > 1) {
      local.unlock();
      return;
    }
    try {
      session.unlock(name);
    } catch (SessionLostException | NotHolderException e) {
      // the hold ended with the session, or was ended by the servers
    } finally {
      token = 0;
      session.unregisterThread(Thread.currentThread());
      local.unlock();
    }
  }

  /**
   * Not supported: a condition's await would have to release the lock on the servers and take
   * it again under a new token, which code written for a local Condition does not expect. Use a
   * watch of a key, or an election, to wait for a change.
   */
  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException(
        "FencedLock has no conditions: await would release the lock on the servers and take"
            + " it back under a new token; wait for a change with a watch or an election");
  }

  @Override
  public String toString() {
    return "FencedLock[" + name + (shared ? ", shared" : "") + ", session " + session.sid()
        + ", token " + token + "]";
  }
}
