// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A lease on the servers, renewed by a thread of its own every TTL/3 on the leader, and the
 * numbering ({@code REQ sid seq}) that makes every mutation through it apply exactly once
 * however often it is resent across fail-overs. The rules are libfencelock's (docs/client.md
 * "Sessions and the safe deadline"; the contract: docs/clients.md):
 *
 * <ul>
 *   <li>{@link #safeUntil()} = send time of the last acknowledged keepalive + TTL − margin −
 *       TTL × drift, on {@link System#nanoTime()}: never later than the servers' deadline,
 *       which they count from the keepalive's arrival on the leader.
 *   <li>The session is LOST when a server answers {@code -NOSESSION} or when the safe deadline
 *       passes without an acknowledged keepalive (a timer fires at that instant, whatever the
 *       keepalive thread is blocked on). Lost is terminal: the threads registered with {@link
 *       #registerThread} (every {@link FencedLock} holder) are interrupted, then the lost
 *       listeners run, once, on the client's deadline thread (keep them short); every later
 *       call throws {@link SessionLostException}.
 *   <li>Mutations are serialized (their seqs must reach the servers in order): a wait for a
 *       lock holds the session's call path, so threads that wait for different locks at the
 *       same time should use a session each.
 *   <li>A wait (lock, permit, campaign) whose outcome could not be learned, or that was
 *       interrupted, sends the release with a fresh seq before throwing, so no grant the caller
 *       never saw outlives the call.
 * </ul>
 */
public final class Session implements AutoCloseable {
  static final int KA_PER_TTL = 3;
  static final int KA_RETRIES_PER_TTL = 10;
  static final long KA_RETRY_MIN_MS = 20;

  final FencelockClient client;
  private final long sid;
  private final long ttlMs;
  private final Object mu = new Object(); // guards the fields below
  private final ReentrantLock op = new ReentrantLock(true); // held across a mutation
  private long seq;
  private long safeUntil; // System.nanoTime()
  private boolean lost;
  private boolean fired; // lost handling done, or suppressed by close()
  private boolean stopping;
  private boolean closed; // close() or abandon() ran: a second one does nothing
  private ScheduledFuture<?> deadlineTimer;
  private final Thread keepalive;
  private final List<Consumer<Session>> listeners = new CopyOnWriteArrayList<>();
  private final Map<Thread, Integer> threads = new ConcurrentHashMap<>();
  private final Map<String, FencedLock> locks = new ConcurrentHashMap<>();

  /** By lock name: {token, local max-hold deadline (System.nanoTime())} of the last grant. */
  private final Map<String, long[]> maxHold = new ConcurrentHashMap<>();
  private final boolean reentrant;

  Session(
      FencelockClient client,
      long ttlMs,
      long lockDelayMs,
      String name,
      boolean reentrant,
      int maxCount) {
    if (ttlMs <= 0) {
      throw new IllegalArgumentException("the TTL must be positive");
    }
    this.client = client;
    this.ttlMs = ttlMs;
    Cmd cmd = new Cmd("SESSION.OPEN", ttlMs);
    if (lockDelayMs > 0) {
      cmd.add("LOCKDELAY", lockDelayMs);
    }
    if (name != null && !name.isEmpty()) {
      cmd.add("NAME", name);
    }
    this.reentrant = reentrant;
    if (reentrant) {
      cmd.add("REENTRANT");
      if (maxCount > 0) {
        cmd.add("MAXCOUNT", maxCount);
      }
    }
    long sent = System.nanoTime();
    // A resend after a lost answer may leave an unused session behind; it expires there.
    this.sid = Resp.num(client.call(cmd));
    synchronized (mu) {
      safeUntil = sent + span(ttlMs);
      armDeadline();
    }
    keepalive = new Thread(this::keepaliveLoop, "fencelock-keepalive-" + sid);
    keepalive.setDaemon(true);
    keepalive.start();
  }

  public long sid() {
    return sid;
  }

  /** Whether the session was opened reentrant ({@link FencelockClient#openReentrantSession}). */
  public boolean isReentrant() {
    return reentrant;
  }

  public Duration ttl() {
    return Duration.ofMillis(ttlMs);
  }

  public FencelockClient client() {
    return client;
  }

  // ---- the safe deadline and loss ----

  /** What the servers granted, less the margin for the clocks' rates, in nanoseconds. */
  private long span(long grantedMs) {
    long drift = grantedMs * client.opts.driftPpm / 1_000_000;
    return (grantedMs - client.opts.marginMs - drift) * 1_000_000L;
  }

  /**
   * The {@link System#nanoTime()} value before which the session surely lives on the servers,
   * so that what is held through it is still held. Compare with {@code System.nanoTime() -
   * safeUntil() < 0}, or use {@link #remaining()}.
   */
  public long safeUntil() {
    synchronized (mu) {
      return safeUntil;
    }
  }

  /** The time left before the safe deadline; zero or negative once passed or lost. */
  public Duration remaining() {
    synchronized (mu) {
      if (lostLocked()) {
        return Duration.ZERO;
      }
      return Duration.ofNanos(safeUntil - System.nanoTime());
    }
  }

  public boolean isLost() {
    synchronized (mu) {
      return lostLocked();
    }
  }

  private boolean lostLocked() {
    if (!lost && System.nanoTime() - safeUntil >= 0) {
      lost = true;
      mu.notifyAll();
      scheduleFire();
    }
    return lost;
  }

  /** Run l once when the session is lost (at once, on this thread, if it already is). */
  public void addLostListener(Consumer<Session> l) {
    listeners.add(l);
    boolean now;
    synchronized (mu) {
      now = lostLocked() && fired;
    }
    if (now && listeners.remove(l)) {
      l.accept(this);
    }
  }

  public void removeLostListener(Consumer<Session> l) {
    listeners.remove(l);
  }

  /**
   * Interrupt t when the session is lost (counted: register and unregister in pairs). FencedLock
   * registers its holder thread itself. A thread registered after the loss is interrupted at
   * once.
   */
  public void registerThread(Thread t) {
    threads.merge(t, 1, Integer::sum);
    boolean now;
    synchronized (mu) {
      now = lost && fired && !stopping;
    }
    if (now) {
      t.interrupt();
    }
  }

  public void unregisterThread(Thread t) {
    threads.computeIfPresent(t, (k, n) -> n > 1 ? n - 1 : null);
  }

  private void armDeadline() { // with mu held
    if (deadlineTimer != null) {
      deadlineTimer.cancel(false);
    }
    try {
      long delay = Math.max(0, safeUntil - System.nanoTime());
      deadlineTimer = client.timer.schedule(this::onDeadline, delay, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      deadlineTimer = null; // the client is closed: the keepalive thread still sees the deadline
    }
  }

  private void onDeadline() {
    synchronized (mu) {
      if (fired || lost) {
        return;
      }
      if (System.nanoTime() - safeUntil < 0) {
        armDeadline(); // renewed meanwhile
        return;
      }
      lost = true;
      mu.notifyAll();
    }
    fire();
  }

  private void markLost() {
    synchronized (mu) {
      if (lost) {
        return;
      }
      lost = true;
      mu.notifyAll();
      scheduleFire();
    }
  }

  private void scheduleFire() { // with mu held
    if (fired) {
      return;
    }
    try {
      client.timer.execute(this::fire);
    } catch (RejectedExecutionException e) {
      Thread t = new Thread(this::fire, "fencelock-lost-" + sid);
      t.setDaemon(true);
      t.start();
    }
  }

  /** The loss's consequences, once: interrupt the registered threads, run the listeners. */
  private void fire() {
    synchronized (mu) {
      if (fired) {
        return;
      }
      fired = true;
      if (deadlineTimer != null) {
        deadlineTimer.cancel(false);
      }
    }
    for (Thread t : threads.keySet()) {
      t.interrupt();
    }
    for (Consumer<Session> l : listeners) {
      if (listeners.remove(l)) {
        try {
          l.accept(this);
        } catch (RuntimeException e) {
          Thread.currentThread()
              .getUncaughtExceptionHandler()
              .uncaughtException(Thread.currentThread(), e);
        }
      }
    }
  }

  /**
   * Renew every TTL/3; after a failure retry sooner (TTL/10, at least 20 ms) until the safe
   * deadline passes.
   */
  private void keepaliveLoop() {
    long interval = ttlMs * 1_000_000L / KA_PER_TTL;
    long retry = Math.max(KA_RETRY_MIN_MS, ttlMs / KA_RETRIES_PER_TTL) * 1_000_000L;
    long next = System.nanoTime() + interval;
    while (true) {
      long deadline;
      synchronized (mu) {
        while (true) {
          if (stopping || lostLocked()) {
            return;
          }
          long now = System.nanoTime();
          long wake = next - safeUntil < 0 ? next : safeUntil;
          if (now - wake >= 0) {
            break;
          }
          try {
            long ns = wake - now;
            mu.wait(ns / 1_000_000, (int) (ns % 1_000_000));
          } catch (InterruptedException e) {
            return; // only close() and abandon() interrupt this thread (they set stopping too)
          }
        }
        deadline = safeUntil;
      }
      long sent = System.nanoTime();
      try {
        long granted =
            Resp.num(
                client.call(new Cmd("SESSION.KEEPALIVE", sid), deadline, true, false, false, null));
        synchronized (mu) {
          long su = sent + span(Math.min(granted, ttlMs));
          if (!lost && su - safeUntil > 0) {
            safeUntil = su;
            armDeadline();
          }
        }
        next = sent + interval;
      } catch (SessionLostException e) {
        markLost();
        return;
      } catch (RuntimeException e) { // unreachable, refused: retry until the deadline passes
        next = System.nanoTime() + retry;
      }
    }
  }

  // ---- mutations ----

  private long begin(boolean interruptible) throws InterruptedException {
    if (isLost()) {
      throw new SessionLostException("session " + sid + " is lost");
    }
    if (interruptible) {
      op.lockInterruptibly();
    } else {
      op.lock();
    }
    synchronized (mu) {
      if (lost) {
        op.unlock();
        throw new SessionLostException("session " + sid + " is lost");
      }
      return ++seq;
    }
  }

  private Object send(Cmd cmd, long seq, long deadline, boolean interruptible) {
    cmd.add("REQ", sid, seq);
    try {
      return client.call(cmd, deadline, true, false, interruptible, null);
    } catch (SessionLostException e) {
      markLost();
      throw e;
    }
  }

  /** {@link FencelockClient#txn()} through this session: REQ sid seq, applied exactly once. */
  public Txn txn() {
    return new Txn(client, this);
  }

  /** Send cmd with the next REQ sid seq, resent until its outcome is known. */
  Object mutate(Cmd cmd) {
    long s;
    try {
      s = begin(false);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
    try {
      return send(cmd, s, client.deadline(0), false);
    } finally {
      op.unlock();
    }
  }

  /**
   * LOCK / SEM.ACQUIRE / ELECT.CAMPAIGN ... [WAIT] REQ: the token, or null for a try (waitMs 0)
   * that was not granted; LockTimeoutException for a wait that ran out. Interrupted (only when
   * interruptible): InterruptedException, after leaving the queue.
   */
  Long waitGrant(Cmd cmd, long waitMs, String release, String what, boolean interruptible)
      throws InterruptedException {
    String name = Resp.str(cmd.argv.get(1));
    Object r = waitReply(cmd, waitMs, release, List.of(name), what + " " + name, interruptible);
    return r == null ? null : Resp.num(r);
  }

  /**
   * waitGrant for any granting command (LOCK.MULTI too): its reply, or null for a try that was
   * not granted. When the outcome cannot be learned, "release name sid" is sent for each name.
   */
  Object waitReply(
      Cmd cmd, long waitMs, String release, List<String> names, String what, boolean interruptible)
      throws InterruptedException {
    long end = System.nanoTime() + waitMs * 1_000_000L;
    if (waitMs > 0) {
      cmd.waitUntil(end);
    }
    long s = begin(interruptible);
    Object r;
    try {
      r = send(cmd, s, end + client.opts.timeoutMs * 1_000_000L, interruptible);
    } catch (UnavailableException | OutcomeUnknownException | FencelockClient.Interrupted e) {
      op.unlock();
      for (String name : names) {
        releaseQuietly(release, name);
      }
      if (e instanceof FencelockClient.Interrupted) {
        Thread.interrupted();
        throw new InterruptedException(what + ": interrupted");
      }
      throw e;
    } catch (RuntimeException e) {
      op.unlock();
      throw e;
    }
    op.unlock();
    if (r == null && waitMs > 0) {
      throw new LockTimeoutException(what + " not granted within " + waitMs + " ms");
    }
    return r;
  }

  private void releaseQuietly(String release, String name) {
    try {
      mutate(new Cmd(release, name, sid));
    } catch (FencelockException ignored) {
      // best effort: the session's end releases it anyway
    }
  }

  private long mustGrant(Cmd cmd, Duration wait, String release, String what) {
    try {
      Long t = waitGrant(cmd, wait.toMillis(), release, what, false);
      if (t == null) {
        throw new BusyException(what + " " + Resp.str(cmd.argv.get(1)) + " is taken");
      }
      return t;
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
  }

  private OptionalLong tryGrant(Cmd cmd, String release, String what) {
    try {
      Long t = waitGrant(cmd, 0, release, what, false);
      return t == null ? OptionalLong.empty() : OptionalLong.of(t);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  // ---- locks ----

  /**
   * LOCK name: the fencing token once granted (FIFO; LockTimeoutException after wait; wait 0 is
   * a try: BusyException if held). Granted once, however many fail-overs the request crosses.
   */
  public long acquire(String name, Duration wait) {
    return mustGrant(new Cmd("LOCK", name, sid), wait, "UNLOCK", "lock");
  }

  /** A shared (read) lock: any number of readers or one writer. */
  public long acquireShared(String name, Duration wait) {
    return mustGrant(new Cmd("LOCK", name, sid, "SHARED"), wait, "UNLOCK", "lock");
  }

  /** The token if the lock was free, else empty. */
  public OptionalLong tryAcquire(String name) {
    return tryGrant(new Cmd("LOCK", name, sid), "UNLOCK", "lock");
  }

  public OptionalLong tryAcquireShared(String name) {
    return tryGrant(new Cmd("LOCK", name, sid, "SHARED"), "UNLOCK", "lock");
  }

  /**
   * {@link #acquire} with NOTIFY (LOCK ... NOTIFY): when the request queues behind an exclusive
   * holder, that holder is told someone waits ({@link #onWaiter}), once per waiting session.
   * Otherwise exactly acquire: the same waits, fail-overs and exceptions.
   */
  public long acquireNotify(String name, Duration wait) {
    return mustGrant(new Cmd("LOCK", name, sid, "NOTIFY"), wait, "UNLOCK", "lock");
  }

  /**
   * {@link #acquire} with options: NOTIFY, a value the grant carries, a max hold ({@link
   * LockOptions}). With a max hold, {@link #maxHoldDeadline} is the local deadline. Otherwise
   * exactly acquire: the same waits, fail-overs and exceptions; wait 0 is a try ({@link
   * BusyException}).
   */
  public long acquire(String name, Duration wait, LockOptions o) {
    Cmd cmd = new Cmd("LOCK", name, sid);
    o.addTo(cmd);
    long sent = System.nanoTime(); // before the first LOCK: the grant can only come later
    long token = mustGrant(cmd, wait, "UNLOCK", "lock");
    long[] prev = maxHold.get(name);
    if (prev != null && prev[0] == token) {
      return token; // the holder's retry (or a reentrant re-lock): the first ask's max hold
    }
    if (o.maxHoldMs > 0) {
      maxHold.put(name, new long[] {token, sent + span(o.maxHoldMs)});
    } else {
      maxHold.remove(name);
    }
    return token;
  }

  /**
   * The {@link System#nanoTime()} value before which the max hold of this session's last grant
   * of lock name ({@link LockOptions#maxHold}) cannot have ended it on the servers: measured
   * from before the LOCK was sent, less the margins of {@link #safeUntil()}; empty without a max
   * hold. Act on the resource only while nanoTime is below both this and safeUntil().
   */
  public OptionalLong maxHoldDeadline(String name) {
    long[] m = maxHold.get(name);
    return m == null ? OptionalLong.empty() : OptionalLong.of(m[1]);
  }

  /**
   * Release the lock or leave its queue (NotHolderException if neither). Through a reentrant
   * session it counts down: only the last hold's unlock releases.
   */
  public void unlock(String name) {
    mutate(new Cmd("UNLOCK", name, sid));
  }

  /** The exclusive {@link FencedLock} of name on this session (one object per name). */
  public FencedLock lock(String name) {
    return locks.computeIfAbsent(name, n -> new FencedLock(this, n, false));
  }

  /** The shared (read) {@link FencedLock} of name on this session. */
  public FencedLock sharedLock(String name) {
    return locks.computeIfAbsent("\0shared\0" + name, n -> new FencedLock(this, name, true));
  }

  /**
   * Call listener (on a thread of its own, one call at a time) for each revoke request
   * (LOCK.REVOKE) of the grant token of lock name held through this session, until the
   * returned watch is closed or the session ends. It reads the lock's events from the grant on,
   * so a request made before its first read is not missed; it needs the read permission on the
   * event stream (without keys=/locks= globs). The listener should make the holder's work stop
   * and unlock: the deadline runs on the servers.
   */
  public RevokeWatch onRevoke(String name, long token, Consumer<Revoke> listener) {
    return new RevokeWatch(this, name, token, listener);
  }

  /**
   * Call listener (on a thread of its own, one call at a time) for each session that queued
   * with NOTIFY ({@link #acquireNotify}) behind the grant token of lock name held through this
   * session, once per waiting session, until the returned watch is closed or the session ends.
   * The holder may let go early, or ignore it. It reads the lock's events from the grant on, as
   * {@link #onRevoke}, with the same permission.
   */
  public WaiterWatch onWaiter(String name, long token, Consumer<Waiter> listener) {
    return new WaiterWatch(this, name, token, listener);
  }

  // ---- several locks at once ----

  private Object multi(List<String> names, Set<String> shared, long waitMs) {
    if (names.isEmpty()) {
      throw new IllegalArgumentException("no lock names");
    }
    Cmd cmd = new Cmd("LOCK.MULTI", sid, names.size());
    cmd.argv.addAll(names);
    for (String n : shared) {
      cmd.add("SHARED", n);
    }
    try {
      return waitReply(cmd, waitMs, "UNLOCK", names, "locks " + String.join(", ", names), false);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
  }

  private static long[] tokens(Object r, int n) {
    if (!(r instanceof List) || ((List<?>) r).size() != n) {
      throw new ProtocolException("LOCK.MULTI answered " + r + ", want " + n + " tokens");
    }
    long[] t = new long[n];
    for (int i = 0; i < n; i++) {
      t[i] = Resp.num(((List<?>) r).get(i));
    }
    return t;
  }

  /**
   * LOCK.MULTI: every name at once, in one log entry, or none. It waits FIFO on every name and
   * holds nothing meanwhile, so sessions asking for overlapping names in any order cannot
   * deadlock. The tokens in the order of names (each resource fences with its own lock's
   * token); {@code shared}: the names taken in shared mode. LockTimeoutException after wait
   * (nothing held; wait 0 is a try: BusyException). Granted once, however many fail-overs the
   * request crosses.
   */
  public long[] acquireMulti(List<String> names, Set<String> shared, Duration wait) {
    Object r = multi(names, shared, wait.toMillis());
    if (r == null) {
      throw new BusyException("locks " + String.join(", ", names) + ": one is taken");
    }
    return tokens(r, names.size());
  }

  /** {@link #acquireMulti(List, Set, Duration)}, every name exclusive. */
  public long[] acquireMulti(List<String> names, Duration wait) {
    return acquireMulti(names, Set.of(), wait);
  }

  /** The tokens if every name could be granted at once, else empty (and nothing held). */
  public Optional<long[]> tryAcquireMulti(List<String> names, Set<String> shared) {
    Object r = multi(names, shared, 0);
    return r == null ? Optional.empty() : Optional.of(tokens(r, names.size()));
  }

  /**
   * UNLOCK each name (each releases that name only, or takes a waiting request out of all its
   * queues); every name is tried, the first exception thrown after.
   */
  public void unlockMulti(List<String> names) {
    FencelockException first = null;
    for (String n : names) {
      try {
        unlock(n);
      } catch (FencelockException e) {
        first = first == null ? e : first;
      }
    }
    if (first != null) {
      throw first;
    }
  }

  /**
   * Run fn with the tokens while holding every name ({@link #acquireMulti}), then unlock them
   * all, whatever fn did; fn's result. The thread is registered for the session's loss (it is
   * interrupted if the lease can no longer be trusted).
   */
  public <T> T withLocks(
      List<String> names, Set<String> shared, Duration wait, Function<long[], T> fn) {
    long[] t = acquireMulti(names, shared, wait);
    Thread me = Thread.currentThread();
    registerThread(me);
    try {
      return fn.apply(t);
    } finally {
      unregisterThread(me);
      try {
        unlockMulti(names);
      } catch (SessionLostException e) {
        // the locks went with the session
      }
    }
  }

  // ---- keys ----

  /** PUT through this session (exactly once), optionally fenced and conditional. */
  public long put(String key, String value, WriteOptions w) {
    return client.put(key, value, w.session(this));
  }

  public boolean delete(String key, WriteOptions w) {
    return client.delete(key, w.session(this));
  }

  /** INCR through this session (exactly once), optionally fenced and conditional. */
  public long incr(String key, long by, WriteOptions w) {
    return client.incr(key, by, w.session(this));
  }

  // ---- semaphores ----

  /** SEM.ACQUIRE: a permit's token (at most limit holders); LockTimeoutException after wait. */
  public long semAcquire(String name, int limit, Duration wait) {
    return semAcquire(name, limit, 1, wait);
  }

  /**
   * SEM.ACQUIRE ... PERMITS permits: one acquisition of permits permits at once (1..limit, else
   * IllegalArgumentException) with one token, released whole by {@link #semRelease}. Queued
   * requests are granted in FIFO order only: a later request for fewer permits never overtakes
   * this one. LockTimeoutException after wait; wait 0 is a try (BusyException).
   */
  public long semAcquire(String name, int limit, int permits, Duration wait) {
    return mustGrant(semCmd(name, limit, permits), wait, "SEM.RELEASE", "permit of");
  }

  public OptionalLong semTryAcquire(String name, int limit) {
    return semTryAcquire(name, limit, 1);
  }

  /** The token if permits permits were free (and nobody queued before), else empty. */
  public OptionalLong semTryAcquire(String name, int limit, int permits) {
    return tryGrant(semCmd(name, limit, permits), "SEM.RELEASE", "permit of");
  }

  private Cmd semCmd(String name, int limit, int permits) {
    if (limit < 1 || permits < 1 || permits > limit) {
      throw new IllegalArgumentException(
          "permits must be 1.." + limit + " (the limit), not " + permits);
    }
    Cmd cmd = new Cmd("SEM.ACQUIRE", name, sid, limit);
    if (permits > 1) { // without PERMITS: the request from before weighted semaphores
      cmd.add("PERMITS", permits);
    }
    return cmd;
  }

  /** SEM.RELEASE: give the acquisition back (all its permits), or leave the queue. */
  public void semRelease(String name) {
    mutate(new Cmd("SEM.RELEASE", name, sid));
  }

  // ---- latches and barriers (docs/protocol.md "Latches and barriers") ----

  /**
   * LATCH.JOIN: this session promises one count-down of the latch; if it ends before it counted
   * down, the latch breaks (every waiter gets {@link BrokenException}). {@link ServerException}
   * when every count left is promised already, or the latch is at zero.
   */
  public void latchJoin(String name) {
    mutate(new Cmd("LATCH.JOIN", name, sid));
  }

  /**
   * LATCH.COUNTDOWN: count down once (a joined session once; one that did not join only with a
   * count nobody promised); the counts left. Exactly once.
   */
  public long latchCountdown(String name) {
    return Resp.num(mutate(new Cmd("LATCH.COUNTDOWN", name, sid)));
  }

  /**
   * BARRIER.ENTER: enter the double barrier name of count sessions (the first enter creates it);
   * true once count are inside, false when wait ran out (zero: at once; the session stays
   * inside: enter again to wait again, or leave); {@link BrokenException} if a session ended
   * inside.
   */
  public boolean barrierEnter(String name, int count, Duration wait) {
    if (count < 1) {
      throw new IllegalArgumentException("a barrier's count must be at least 1");
    }
    return waitStep(new Cmd("BARRIER.ENTER", name, sid, count), wait);
  }

  /**
   * BARRIER.LEAVE: true once every session that entered has left, false when wait ran out (this
   * session has left all the same); {@link BrokenException}. Leaving a barrier that is still
   * filling withdraws at once.
   */
  public boolean barrierLeave(String name, Duration wait) {
    return waitStep(new Cmd("BARRIER.LEAVE", name, sid), wait);
  }

  /**
   * A mutation that then waits on the servers (BARRIER.ENTER/LEAVE ... WAIT), exactly once:
   * true for +OK, false for nil. The step stands whatever the wait's outcome: nothing is given
   * back when its answer is lost.
   */
  private boolean waitStep(Cmd cmd, Duration wait) {
    long waitMs = wait.toMillis();
    long end = System.nanoTime() + wait.toNanos();
    if (waitMs > 0) {
      cmd.waitUntil(end);
    }
    long s;
    try {
      s = begin(false);
    } catch (InterruptedException e) {
      throw new AssertionError(e); // not interruptible
    }
    try {
      long deadline = waitMs > 0 ? end + client.opts.timeoutMs * 1_000_000L : client.deadline(0);
      return send(cmd, s, deadline, false) != null;
    } finally {
      op.unlock();
    }
  }

  // ---- elections ----

  /** ELECT.CAMPAIGN: the leader's token once this session leads; LockTimeoutException after wait. */
  public long campaign(String name, String value, Duration wait) {
    return mustGrant(
        new Cmd("ELECT.CAMPAIGN", name, sid, value.getBytes(StandardCharsets.UTF_8)),
        wait,
        "ELECT.RESIGN",
        "leadership of");
  }

  /** ELECT.PROCLAIM: the leader's new value; the revision (StaleException if not the leader). */
  public long proclaim(String name, long token, String value) {
    return Resp.num(
        mutate(new Cmd("ELECT.PROCLAIM", name, sid, token, value.getBytes(StandardCharsets.UTF_8))));
  }

  public void resign(String name) {
    mutate(new Cmd("ELECT.RESIGN", name, sid));
  }

  // ---- end ----

  private void stopThread() {
    synchronized (mu) {
      stopping = true;
      fired = fired || !lost; // a closed session is not a lost one: no listeners, no interrupts
      if (deadlineTimer != null) {
        deadlineTimer.cancel(false);
      }
      mu.notifyAll();
    }
    if (Thread.currentThread() != keepalive) {
      keepalive.interrupt();
      try {
        keepalive.join(client.opts.timeoutMs + 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Stop renewing, then SESSION.CLOSE: its locks are released now, without lock-delay. A session
   * lost locally is still closed on the servers if it lives there.
   */
  @Override
  public void close() {
    op.lock(); // after any mutation in flight
    long s;
    try {
      synchronized (mu) {
        if (closed) {
          return;
        }
        closed = true;
        s = ++seq;
      }
    } finally {
      op.unlock();
    }
    stopThread();
    try {
      client.call(new Cmd("SESSION.CLOSE", sid, "REQ", sid, s));
    } catch (SessionLostException e) {
      // already gone on the servers
    } finally {
      synchronized (mu) {
        lost = true;
      }
    }
  }

  /**
   * Stop renewing without closing: the lease runs out on the servers (lock-delay applies). For
   * a process going away abnormally.
   */
  public void abandon() {
    synchronized (mu) {
      if (closed) {
        return;
      }
      closed = true;
    }
    stopThread();
    synchronized (mu) {
      lost = true;
    }
  }
}
