// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLContext;

/**
 * A fencelock client: one per process is typical; thread-safe. It holds the endpoints, the
 * known leader and a pool of connections, runs the call path, and offers the calls that need no
 * session: reads (always safe to resend), writes without a session (sent once: {@link
 * OutcomeUnknownException} when the answer is lost), fence checks, elections' leader and
 * observe, watch. Writes that must apply exactly once go through a {@link Session}.
 *
 * <p>The call path keeps libfencelock's rules (docs/client.md "Fail-over, retries and
 * exactly-once"): a call has a deadline; within it {@code -NOTLEADER host:port} is followed,
 * {@code -NOLEADER} waited out and the other endpoints tried, with a short backoff once every
 * address failed in a row. A call that may be resent (reads, writes carrying {@code REQ sid
 * seq}) is resent after a lost answer or {@code -UNKNOWN}; one that may not is sent once. A
 * server that does not answer within the connect timeout (plus the time the command may
 * legitimately block) is treated as gone: a SIGSTOPped leader accepts connections but never
 * answers. A blocked wait is abandoned as soon as any thread learns of a different leader.
 *
 * <p>Thread safety: the pool and the leader are guarded by this object's monitor; a connection
 * is used by one thread at a time (out of the pool for the call, back after a complete reply).
 */
public final class FencelockClient implements AutoCloseable {
  static final long BACKOFF_MIN_MS = 10;
  // the longest pause between rounds over the endpoints; short, so that a call reaches a follower
  // waiting for the new leader soon after the dead one is given up (docs/client.md), ~20 rounds/s
  static final long BACKOFF_MAX_MS = 50;
  static final int WAIT_SLICE_MS = 100; // how often a waiting read checks leader, cancel, interrupt
  static final int QUICK_REDIRECTS = 3;
  static final int POOL_MAX = 16; // idle connections kept per address

  final Options opts;
  private final List<String> endpoints;
  private String leader;
  private int nextEp;
  private boolean membersLearned;
  private boolean closed;
  private final Map<String, ArrayDeque<RespConnection>> idle = new HashMap<>();
  /** Runs the sessions' lost deadlines: one daemon thread for the whole client. */
  final ScheduledExecutorService timer;

  private FencelockClient(Options opts) {
    this.opts = opts;
    this.endpoints = new ArrayList<>(opts.endpoints);
    ScheduledThreadPoolExecutor t =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread th = new Thread(r, "fencelock-deadlines");
              th.setDaemon(true);
              return th;
            });
    t.setRemoveOnCancelPolicy(true);
    this.timer = t;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The settings of a client; see {@link Options} for the defaults. */
  public static final class Builder {
    final List<String> endpoints = new ArrayList<>();
    String user;
    String password;
    SSLContext sslContext;
    Duration timeout = Duration.ofSeconds(5);
    Duration connectTimeout = Duration.ofSeconds(1);
    long marginMs = 10;
    long driftPpm = 10000;

    /** Any members of the cluster, "host:port" each (or one comma-separated string). */
    public Builder endpoints(String... eps) {
      for (String e : eps) {
        endpoints.addAll(Endpoints.parse(e));
      }
      return this;
    }

    public Builder endpoints(List<String> eps) {
      return endpoints(eps.toArray(new String[0]));
    }

    /** AUTH user password on every new connection (servers with --acl-file). */
    public Builder credentials(String user, String password) {
      this.user = user;
      this.password = password;
      return this;
    }

    /** TLS with this context; the server's name is checked against the endpoint's host. */
    public Builder tls(SSLContext ctx) {
      this.sslContext = ctx;
      return this;
    }

    /** TLS trusting caPem's CAs, with a client certificate when certPem is not null. */
    public Builder tls(Path caPem, Path certPem, Path keyPem) {
      this.sslContext = Options.sslContext(caPem, certPem, keyPem);
      return this;
    }

    /** Each call's deadline (default 5 s); a wait gets its own length plus this. */
    public Builder timeout(Duration d) {
      this.timeout = d;
      return this;
    }

    /** A server that does not answer within this (default 1 s) is treated as gone. */
    public Builder connectTimeout(Duration d) {
      this.connectTimeout = d;
      return this;
    }

    /** What a session's safe deadline keeps back: marginMs + TTL * driftPpm / 10^6. */
    public Builder safety(long marginMs, long driftPpm) {
      if (marginMs < 0 || driftPpm < 0 || driftPpm >= 1_000_000) {
        throw new IllegalArgumentException("margin and drift must be >= 0, drift < 10^6");
      }
      this.marginMs = marginMs;
      this.driftPpm = driftPpm;
      return this;
    }

    public FencelockClient build() {
      return new FencelockClient(new Options(this));
    }
  }

  // ---- bookkeeping ----

  private synchronized String pick() {
    if (leader != null) {
      return leader;
    }
    String a = endpoints.get(Math.floorMod(nextEp, endpoints.size()));
    nextEp++;
    return a;
  }

  synchronized void setLeader(String addr) {
    try {
      Endpoints.split(addr);
    } catch (IllegalArgumentException e) {
      leader = null;
      return;
    }
    leader = addr;
    if (!endpoints.contains(addr)) {
      endpoints.add(addr);
    }
  }

  private synchronized void leaderFailed(String addr) {
    if (addr.equals(leader)) {
      leader = null;
    }
  }

  private synchronized boolean leaderMoved(String addr) {
    return leader != null && !leader.equals(addr);
  }

  /** The leader's client address as last learned, or null. */
  public synchronized String leaderAddress() {
    return leader;
  }

  // ---- connections ----

  private RespConnection get(String addr, long deadline, boolean[] fresh) throws IOException {
    while (true) {
      RespConnection c;
      synchronized (this) {
        if (closed) {
          throw new FencelockException("the client is closed");
        }
        ArrayDeque<RespConnection> q = idle.get(addr);
        c = q == null ? null : q.pollLast();
      }
      if (c == null) {
        break;
      }
      if (c.idleAlive()) {
        fresh[0] = false;
        return c;
      }
      c.close();
    }
    long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    int budget = (int) Math.min(opts.connectTimeoutMs, left);
    fresh[0] = true;
    return RespConnection.open(addr, opts, budget, (int) Math.min(Integer.MAX_VALUE, Math.max(budget, left)));
  }

  private void put(String addr, RespConnection c) {
    synchronized (this) {
      if (!closed) {
        ArrayDeque<RespConnection> q = idle.computeIfAbsent(addr, k -> new ArrayDeque<>());
        if (q.size() < POOL_MAX) {
          q.addLast(c);
          return;
        }
      }
    }
    c.close();
  }

  /**
   * Close the idle connections and stop the deadline thread. Sessions should be closed first
   * (a session left open is abandoned: its lease runs out on the servers).
   */
  @Override
  public void close() {
    List<RespConnection> all = new ArrayList<>();
    synchronized (this) {
      closed = true;
      for (ArrayDeque<RespConnection> q : idle.values()) {
        all.addAll(q);
      }
      idle.clear();
    }
    for (RespConnection c : all) {
      c.close();
    }
    timer.shutdownNow();
  }

  /**
   * Learn the members' client addresses once (best effort), so that losing every given endpoint
   * but one still leaves the others reachable.
   */
  private void learnMembers(RespConnection c, long until, Call call) throws IOException {
    synchronized (this) {
      if (membersLearned) {
        return;
      }
      membersLearned = true;
    }
    boolean ok = false;
    try {
      c.send(new ArrayList<>(List.of("CLUSTER.MEMBERS")));
      Object r = await(c, null, until, call);
      ok = true;
      if (r instanceof List) {
        for (Object m : (List<?>) r) {
          String a = Resp.str(Resp.map(m).get("client_address"));
          if (a != null && !a.isEmpty()) {
            try {
              Endpoints.split(a);
              synchronized (this) {
                if (!endpoints.contains(a)) {
                  endpoints.add(a);
                }
              }
            } catch (IllegalArgumentException ignored) {
              // a member that announced no usable address yet: skip it
            }
          }
        }
      } else {
        ok = r instanceof Resp.Err; // -NOAUTH, -NOPERM: the command itself will get the same
        synchronized (this) {
          membersLearned = false;
        }
      }
    } finally {
      if (!ok) {
        synchronized (this) {
          membersLearned = false;
        }
      }
    }
  }

  /**
   * The reply to what was sent on c, waited for in slices: abandoned (IOException) when until
   * passes, another thread learned of a leader other than addr, the call was cancelled or its
   * waiting thread interrupted.
   */
  private Object await(RespConnection c, String addr, long until, Call call) throws IOException {
    while (true) {
      long left = (until - System.nanoTime()) / 1_000_000;
      if (left <= 0) {
        throw new SocketTimeoutException("no reply in time");
      }
      int t = c.awaitFirst((int) Math.min(left, WAIT_SLICE_MS));
      if (t >= 0) {
        return c.readRest(t, opts.connectTimeoutMs);
      }
      if (addr != null && leaderMoved(addr)) {
        throw new IOException("abandoned: the leader moved");
      }
      if (call.cancelled()) {
        throw new IOException("cancelled");
      }
    }
  }

  // ---- the call path ----

  /** Why a call stopped early: cancelled by another thread, or its thread interrupted. */
  static final class Interrupted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Interrupted(String m) {
      super(m, null, false, false);
    }
  }

  /** One call's state: what happened last, and how it may be cancelled. */
  static final class Call {
    final boolean interruptible;
    final Cancel cancel;
    String why = "";
    boolean unknown;

    Call(boolean interruptible, Cancel cancel) {
      this.interruptible = interruptible;
      this.cancel = cancel;
    }

    boolean cancelled() {
      return (cancel != null && cancel.cancelled)
          || (interruptible && Thread.currentThread().isInterrupted());
    }
  }

  /** A flag another thread sets to end a call (a watch's stop). */
  static final class Cancel {
    volatile boolean cancelled;
  }

  private static final Object RETRY = new Object();

  private Object attempt(Cmd cmd, long deadline, boolean retry, boolean anynode, Call st) {
    String addr = pick();
    boolean[] fresh = new boolean[1];
    RespConnection c;
    try {
      c = get(addr, deadline, fresh);
    } catch (IOException e) {
      leaderFailed(addr);
      st.why = "connect " + addr + ": " + e;
      return RETRY; // nothing was sent
    }
    if (fresh[0]) {
      try {
        long probe = System.nanoTime() + opts.connectTimeoutMs * 1_000_000L;
        learnMembers(c, Math.min(probe, deadline), st);
      } catch (IOException | ProtocolException e) { // nothing of cmd was sent
        c.close();
        leaderFailed(addr);
        st.why = addr + ": " + e;
        return RETRY;
      }
    }
    Object reply;
    try {
      long block = cmd.render();
      long until =
          Math.min(deadline, System.nanoTime() + (opts.connectTimeoutMs + block) * 1_000_000L);
      c.send(cmd.argv);
      reply = await(c, anynode ? null : addr, until, st);
    } catch (IOException | ProtocolException e) {
      c.close();
      leaderFailed(addr);
      st.why = addr + ": " + e;
      if (retry) {
        return RETRY;
      }
      throw new OutcomeUnknownException(
          addr + ": no answer to " + cmd.name() + ": outcome unknown (" + e + ")", e);
    }
    put(addr, c);
    if (reply instanceof Resp.Err) {
      return onError(addr, (Resp.Err) reply, retry, st);
    }
    if (!anynode) {
      setLeader(addr); // it answered a leader-only command
    }
    return reply;
  }

  private Object onError(String addr, Resp.Err e, boolean retry, Call st) {
    switch (e.word()) {
      case "NOTLEADER":
        setLeader(e.rest());
        st.why = addr + ": " + e.text;
        return RETRY;
      case "NOLEADER":
        leaderFailed(addr);
        st.why = addr + ": " + e.text;
        return RETRY;
      case "UNKNOWN":
        st.unknown = true;
        st.why = addr + ": " + e.text;
        if (retry) {
          return RETRY;
        }
        throw new OutcomeUnknownException(e.text);
      default:
        throw FencelockException.fromReply(e.text);
    }
  }

  /** The reply of cmd by the deadline (System.nanoTime()); see the class comment. */
  Object call(Cmd cmd, long deadline, boolean retry, boolean anynode, boolean interruptible, Cancel cancel) {
    Call st = new Call(interruptible, cancel);
    boolean hadInterrupt = false; // an uninterruptible call keeps the flag for its caller
    long backoff = BACKOFF_MIN_MS;
    int quick = 0;
    try {
      while (true) {
        if (!interruptible && Thread.interrupted()) {
          hadInterrupt = true;
        }
        if (st.cancelled()) {
          throw new Interrupted(interruptible && Thread.currentThread().isInterrupted() ? "interrupted" : "cancelled");
        }
        long now = System.nanoTime();
        if (now - deadline >= 0) {
          String msg = "deadline passed; last: " + (st.why.isEmpty() ? "no answer" : st.why);
          if (st.unknown) {
            throw new OutcomeUnknownException(msg);
          }
          throw new UnavailableException(msg);
        }
        boolean hadLeader = leaderAddress() != null;
        Object r = attempt(cmd, deadline, retry, anynode, st);
        if (r != RETRY) {
          return r;
        }
        if (!hadLeader && leaderAddress() != null && quick < QUICK_REDIRECTS) {
          quick++;
          continue;
        }
        long sleep = Math.min(backoff * 1_000_000L, deadline - System.nanoTime());
        if (sleep > 0) {
          if (!interruptible && Thread.interrupted()) {
            hadInterrupt = true;
          }
          LockSupport.parkNanos(sleep);
        }
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    } finally {
      if (hadInterrupt) {
        Thread.currentThread().interrupt();
      }
    }
  }

  Object call(Cmd cmd) {
    return call(cmd, deadline(0), true, false, false, null);
  }

  long deadline(long extraMs) {
    return System.nanoTime() + (opts.timeoutMs + extraMs) * 1_000_000L;
  }

  // ---- sessions ----

  /** Open a session with this TTL (kept alive by the library every TTL/3). */
  public Session openSession(Duration ttl) {
    return new Session(this, ttl.toMillis(), 0, null, false, 0);
  }

  /** Open a session with a TTL, a lock-delay after its expiry, and a name (may be null). */
  public Session openSession(Duration ttl, Duration lockDelay, String name) {
    return new Session(this, ttl.toMillis(), lockDelay.toMillis(), name, false, 0);
  }

  /**
   * Open a reentrant session (SESSION.OPEN ... REENTRANT [MAXCOUNT maxCount]): its {@code
   * acquire} of a lock it already holds exclusively counts up and returns the same token, {@code
   * unlock} counts down and releases only the last hold ({@link LockInfo#count()} shows the
   * count). maxCount bounds the holds of one lock (0: the servers' --reentrant-max-count); an
   * acquire over it is a {@link ServerException} and changes nothing. Expiry, close, a revoke
   * and an admin's UNLOCK end every hold at once (docs/protocol.md "Reentrant sessions").
   */
  public Session openReentrantSession(Duration ttl, Duration lockDelay, String name, int maxCount) {
    if (maxCount < 0) {
      throw new IllegalArgumentException("maxCount must be 0 (the servers' default) or more");
    }
    return new Session(this, ttl.toMillis(), lockDelay.toMillis(), name, true, maxCount);
  }

  // ---- keys ----

  /** A key's value, or null. */
  public byte[] get(String key) {
    Object r = call(new Cmd("GET", key));
    return r == null ? null : (byte[]) r;
  }

  /** A key's value as UTF-8 text, or null. */
  public String getString(String key) {
    return Resp.str(call(new Cmd("GET", key)));
  }

  /** A key's value with its revisions, or null when absent. */
  public KeyValue kvGet(String key) {
    Map<String, Object> m = Resp.map(call(new Cmd("KV.GET", key)));
    if (m == null) {
      return null;
    }
    return new KeyValue(
        key,
        m.get("value") instanceof byte[] ? (byte[]) m.get("value") : new byte[0],
        Resp.num(m.getOrDefault("create_rev", 0L)),
        Resp.num(m.getOrDefault("mod_rev", 0L)),
        Resp.num(m.getOrDefault("version", 0L)),
        Resp.num(m.getOrDefault("lease", 0L)));
  }

  /**
   * PUT: the new revision. The options add a fence (applies only while the token is the lock's
   * current one: {@link StaleException} otherwise), a condition ({@link IfRevException}), a
   * session (the write then carries {@code REQ sid seq} and applies exactly once) and a lease.
   * Without a session the write is sent once: {@link OutcomeUnknownException} if its answer is
   * lost.
   */
  public long put(String key, byte[] value, WriteOptions w) {
    Cmd cmd = new Cmd("PUT", key, value);
    if (w.lease) {
      if (w.session == null) {
        throw new IllegalArgumentException("a lease needs a session");
      }
      cmd.add("LEASE", w.session.sid());
    }
    return Resp.num(write(cmd, w));
  }

  public long put(String key, String value, WriteOptions w) {
    return put(key, value.getBytes(StandardCharsets.UTF_8), w);
  }

  public long put(String key, String value) {
    return put(key, value, WriteOptions.none());
  }

  /** DEL: true if the key existed. The options as for {@link #put}. */
  public boolean delete(String key, WriteOptions w) {
    return Resp.num(write(new Cmd("DEL", key), w)) == 1;
  }

  /**
   * INCR key BY by: the counter's new value (the key holds the decimal text of a signed 64-bit
   * integer; an absent key counts as 0). Linearizable; the options as for {@link #put} (a lease
   * is ignored: the key keeps its lease). A value that is not such an integer, or a sum that
   * overflows, is a {@link ServerException} and changes nothing.
   */
  public long incr(String key, long by, WriteOptions w) {
    return Resp.num(write(new Cmd("INCR", key, "BY", by), w));
  }

  /** INCR key BY by, sent once without a session. */
  public long incr(String key, long by) {
    return incr(key, by, WriteOptions.none());
  }

  /**
   * A TXN builder (docs/protocol.md "TXN"), sent once without a session ({@link Session#txn()}
   * sends it exactly once through one): compares, then all of one branch's writes, or nothing.
   */
  public Txn txn() {
    return new Txn(this, null);
  }

  private Object write(Cmd cmd, WriteOptions w) {
    if (w.fenceName != null) {
      cmd.add("FENCE", w.fenceName, w.fenceToken);
    }
    if (w.ifRev != null) {
      cmd.add("IFREV", w.ifRev);
    }
    if (w.session == null) {
      return call(cmd, deadline(0), false, false, false, null);
    }
    return w.session.mutate(cmd);
  }

  // ---- locks, fencing, elections (reads) ----

  /** Whether token is a current holder's (permit's, leader's) token of name. */
  public boolean fenceCheck(String name, long token) {
    try {
      call(new Cmd("FENCE.CHECK", name, token));
      return true;
    } catch (StaleException e) {
      return false;
    }
  }

  /**
   * LOCK.REVOKE: ask the exclusive holder of lock name to let go; with a deadline (null: ask
   * only) the servers take the grant then if it still holds the lock, as an expiry would
   * (lock-delay, then the next waiter with a larger token). reason (null: none) is shown to
   * the holder. The token of the grant asked; NotHolderException if nobody holds the lock
   * exclusively, PermissionException without the revoke permission (or admin). Sent once.
   */
  public long revoke(String name, Duration deadline, String reason) {
    Cmd cmd = new Cmd("LOCK.REVOKE", name);
    if (deadline != null) {
      cmd.add("DEADLINE", Math.max(1, deadline.toMillis()));
    }
    if (reason != null) {
      cmd.add("REASON", reason);
    }
    return Resp.num(call(cmd, deadline(0), false, false, false, null));
  }

  /**
   * SEM.SETLIMIT (admin under --acl-file): the operator's limit of the semaphore name, kept
   * until {@link #semLimitReset} whether or not the semaphore exists, and winning over the
   * acquirers' limit (an acquire passing another one is accepted and the argument ignored).
   * True (servers before operators' limits answered false for a semaphore that did not exist).
   * Holders above a lower limit keep their permits; nothing is granted until the queue's head
   * fits. ServerException (nothing changes) if a queued request asks for more permits than the
   * new limit. The same limit again changes nothing, so a resend is harmless.
   */
  public boolean semSetLimit(String name, int limit) {
    return call(new Cmd("SEM.SETLIMIT", name, limit)) != null;
  }

  /**
   * SEM.SETLIMIT name RESET (admin under --acl-file): removes the operator's limit; true if
   * there was one (a resend after a lost reply answers false). A live semaphore keeps its limit
   * until it is dropped; then the acquirers' limit rules again.
   */
  public boolean semLimitReset(String name) {
    return Resp.num(call(new Cmd("SEM.SETLIMIT", name, "RESET"))) == 1;
  }

  /** LOCK.INFO as a map (holder, token, waiters, mode, holders, ...), or null when unused. */
  public Map<String, Object> lockInfo(String name) {
    return Resp.map(call(new Cmd("LOCK.INFO", name)));
  }

  /** LOCK.INFO as a {@link LockInfo}, or null when the lock is free and nobody waits. */
  public LockInfo lockState(String name) {
    Object r = call(new Cmd("LOCK.INFO", name));
    return r == null ? null : LockInfo.of(r);
  }

  /**
   * LOCK.HISTORY: the grants of lock (semaphore, election) name, newest first: at most count
   * (0: the servers' default, 100), only tokens below before (0: from the newest; the next page:
   * the last entry's token). {@link CompactedException} when the range asked was dropped (the
   * oldest grants go first).
   */
  public List<HistoryEntry> lockHistory(String name, int count, long before) {
    Cmd cmd = new Cmd("LOCK.HISTORY", name);
    if (count > 0) {
      cmd.add("COUNT", count);
    }
    if (before > 0) {
      cmd.add("BEFORE", before);
    }
    List<HistoryEntry> out = new ArrayList<>();
    Object r = call(cmd);
    if (r != null) {
      for (Object e : (List<?>) r) {
        out.add(HistoryEntry.of(e));
      }
    }
    return out;
  }

  // ---- latches and barriers (docs/protocol.md "Latches and barriers") ----

  /**
   * LATCH.CREATE: a countdown latch of count (1..1048576) counts. The same count again changes
   * nothing (so a resend is harmless); another count is a {@link ServerException}; a broken
   * latch is a {@link BrokenException} (delete it first).
   */
  public void latchCreate(String name, int count) {
    if (count < 1) {
      throw new IllegalArgumentException("a latch's count must be at least 1");
    }
    call(new Cmd("LATCH.CREATE", name, count));
  }

  /**
   * LATCH.WAIT: true once the latch is at zero, false when wait ran out (zero: checked once);
   * {@link BrokenException} if a joined session ended before counting down, {@link
   * ServerException} if there is no such latch. A waiter is released only by the commit of the
   * last count-down; a fail-over during the wait is asked again of the new leader.
   */
  public boolean latchWait(String name, Duration wait) {
    Cmd cmd = new Cmd("LATCH.WAIT", name);
    long end = System.nanoTime() + wait.toNanos();
    if (wait.toMillis() > 0) {
      cmd.waitUntil(end);
      return call(cmd, end + opts.timeoutMs * 1_000_000L, true, false, false, null) != null;
    }
    return call(cmd) != null;
  }

  /** LATCH.INFO: the latch's or barrier's state, or null if there is none of that name. */
  public LatchInfo latchInfo(String name) {
    Object r = call(new Cmd("LATCH.INFO", name));
    return r == null ? null : LatchInfo.of(r);
  }

  /**
   * LATCH.DELETE: delete a latch or barrier in any state (a broken one too: latchCreate then
   * starts afresh); its waiters get a {@link ServerException}. True if one existed. Sent once.
   */
  public boolean latchDelete(String name) {
    return Resp.num(call(new Cmd("LATCH.DELETE", name), deadline(0), false, false, false, null)) == 1;
  }

  /** The election's leader, or null when nobody leads. */
  public Leader leader(String name) {
    Object r = call(new Cmd("ELECT.LEADER", name));
    return r == null ? null : Leader.of(r);
  }

  /**
   * The election's first change after afterRev (0: its current state at once): a Leader (sid 0
   * when nobody leads), or empty when nothing changed within wait. Pass each answer's rev back:
   * no change is missed, no older leader follows a newer one, across fail-overs too.
   */
  public Optional<Leader> observe(String name, long afterRev, Duration wait) {
    long end = System.nanoTime() + wait.toNanos();
    Cmd cmd = new Cmd("ELECT.OBSERVE", name);
    if (afterRev > 0) {
      cmd.add("AFTER", afterRev);
    }
    cmd.waitUntil(end);
    Object r = call(cmd, end + opts.timeoutMs * 1_000_000L, true, false, false, null);
    return r == null ? Optional.empty() : Optional.of(Leader.of(r));
  }

  // ---- watch, cluster, anything ----

  /**
   * A watcher of the events of keys and locks starting with prefix ("" for all) after fromId
   * ("$" or null: from now).
   */
  public Watch watch(String prefix, String fromId) {
    return new Watch(this, prefix, fromId == null ? "$" : fromId);
  }

  /** CLUSTER.MEMBERS of any node. */
  public List<Map<String, Object>> members() {
    List<Map<String, Object>> out = new ArrayList<>();
    Object r = call(new Cmd("CLUSTER.MEMBERS"), deadline(0), true, true, false, null);
    for (Object m : (List<?>) r) {
      out.add(Resp.map(m));
    }
    return out;
  }

  /**
   * Any command, redirects followed. retry false for a write that carries no {@code REQ sid
   * seq}: it is then sent once and a lost answer is an OutcomeUnknownException. The reply as
   * the codec gives it (String, Long, byte[], List, null).
   */
  public Object execute(boolean retry, Object... args) {
    return call(new Cmd(args), deadline(0), retry, false, false, null);
  }
}
