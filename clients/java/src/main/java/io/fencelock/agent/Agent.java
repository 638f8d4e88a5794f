// SPDX-License-Identifier: Apache-2.0
package io.fencelock.agent;

import io.fencelock.client.BusyException;
import io.fencelock.client.CompactedException;
import io.fencelock.client.Event;
import io.fencelock.client.FencelockClient;
import io.fencelock.client.FencelockException;
import io.fencelock.client.GrantWatch;
import io.fencelock.client.HistoryEntry;
import io.fencelock.client.KeyValue;
import io.fencelock.client.LatchInfo;
import io.fencelock.client.Leader;
import io.fencelock.client.LockInfo;
import io.fencelock.client.LockOptions;
import io.fencelock.client.LockTimeoutException;
import io.fencelock.client.NotFoundException;
import io.fencelock.client.Revoke;
import io.fencelock.client.RevokeWatch;
import io.fencelock.client.Session;
import io.fencelock.client.StaleException;
import io.fencelock.client.Txn;
import io.fencelock.client.TxnOpException;
import io.fencelock.client.TxnResult;
import io.fencelock.client.Waiter;
import io.fencelock.client.WaiterWatch;
import io.fencelock.client.Watch;
import io.fencelock.client.WriteOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The conformance agent (tests/conformance/PROTOCOL.md): one client made from the FL_*
 * environment, driven by JSON requests on stdin, one reply line per request on stdout, events
 * as they happen. Written on the client's public API only. Each request runs on a thread of
 * its own, so a waiting lock never delays a later request.
 */
public final class Agent {
  public static final String VERSION = "0.1.0";
  private final PrintStream out;
  private final FencelockClient client;
  private final Map<String, Session> sessions = new ConcurrentHashMap<>();
  private final Map<String, Watcher> watchers = new ConcurrentHashMap<>();
  private final AtomicInteger nextSession = new AtomicInteger();
  private final AtomicInteger nextWatch = new AtomicInteger();
  /** The on_revoke registrations by session handle: closed before that session closes. */
  private final Map<String, List<GrantWatch>> revokes = new ConcurrentHashMap<>();
  /**
   * Set by on_revoke on the request's thread: counted down once its reply is out, so the
   * callback's lines come after it (PROTOCOL.md's order rule).
   */
  private static final ThreadLocal<CountDownLatch> AFTER_REPLY = new ThreadLocal<>();

  private Agent(PrintStream out, FencelockClient client) {
    this.out = out;
    this.client = client;
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    System.setOut(System.err); // anything else printed goes to stderr
    FencelockClient c;
    try {
      c = fromEnv(System.getenv());
    } catch (FencelockException | IllegalArgumentException e) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("ready", false);
      m.put("error", e instanceof FencelockException ? ((FencelockException) e).word() : "OTHER");
      m.put("message", String.valueOf(e.getMessage()));
      emit(out, m);
      return;
    }
    Agent a = new Agent(out, c);
    Map<String, Object> ready = new LinkedHashMap<>();
    ready.put("ready", true);
    ready.put("client", "java");
    ready.put("version", VERSION);
    a.emit(ready);
    a.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
  }

  static FencelockClient fromEnv(Map<String, String> env) {
    FencelockClient.Builder b = FencelockClient.builder();
    String eps = env.get("FL_ENDPOINTS");
    if (eps == null || eps.isEmpty()) {
      throw new IllegalArgumentException("FL_ENDPOINTS is not set");
    }
    b.endpoints(eps);
    String t = env.get("FL_TIMEOUT");
    if (t != null && !t.isEmpty()) {
      b.timeout(Duration.ofMillis((long) (Double.parseDouble(t) * 1000)));
    }
    if (env.get("FL_PASSWORD") != null) {
      b.credentials(env.get("FL_USER"), env.get("FL_PASSWORD"));
    }
    String ca = env.get("FL_TLS_CA");
    if (ca != null && !ca.isEmpty()) {
      String cert = env.get("FL_TLS_CERT");
      String key = env.get("FL_TLS_KEY");
      b.tls(
          Path.of(ca),
          cert == null || cert.isEmpty() ? null : Path.of(cert),
          key == null || key.isEmpty() ? null : Path.of(key));
    }
    return b.build();
  }

  private static void emit(PrintStream out, Map<String, Object> m) {
    synchronized (out) {
      out.print(Json.write(m));
      out.print('\n');
      out.flush();
    }
  }

  private void emit(Map<String, Object> m) {
    emit(out, m);
  }

  private void serve(BufferedReader in) throws Exception {
    ExecutorService pool =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "agent-request");
              t.setDaemon(true);
              return t;
            });
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) {
        continue;
      }
      Map<String, Object> req;
      try {
        @SuppressWarnings("unchecked")
        Map<String, Object> r = (Map<String, Object>) Json.parse(line);
        req = r;
      } catch (RuntimeException e) {
        System.err.println("agent: not a request: " + line);
        continue;
      }
      if ("quit".equals(req.get("op"))) {
        quit(req);
        return;
      }
      pool.execute(() -> handle(req));
    }
    quit(null);
  }

  private void quit(Map<String, Object> req) {
    for (Watcher w : watchers.values()) {
      w.watch.stop();
    }
    for (String h : revokes.keySet()) {
      stopRevokes(h);
    }
    for (Session s : sessions.values()) {
      try {
        s.close();
      } catch (FencelockException e) {
        System.err.println("agent: closing session " + s.sid() + ": " + e.getMessage());
      }
    }
    client.close();
    if (req != null) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("id", req.get("id"));
      r.put("ok", true);
      emit(r);
    }
    out.flush();
    System.exit(0);
  }

  private void handle(Map<String, Object> req) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("id", req.get("id"));
    try {
      Map<String, Object> res = run(req);
      r.put("ok", true);
      r.putAll(res);
    } catch (LockTimeoutException e) {
      fail(r, "TIMEOUT", e);
    } catch (TxnOpException e) {
      fail(r, e.word(), e);
      r.put("op", e.op()); // the TXN's failing op, typed (PROTOCOL.md)
    } catch (FencelockException e) {
      fail(r, e.word(), e);
    } catch (InterruptedException e) {
      fail(r, "OTHER", e);
    } catch (RuntimeException e) {
      fail(r, "OTHER", e);
    }
    emit(r);
    CountDownLatch gate = AFTER_REPLY.get();
    if (gate != null) {
      AFTER_REPLY.remove();
      gate.countDown();
    }
  }

  private void stopRevokes(String h) {
    List<GrantWatch> rws = revokes.remove(h);
    if (rws != null) {
      for (GrantWatch rw : rws) {
        rw.close();
      }
    }
  }

  private static void fail(Map<String, Object> r, String word, Exception e) {
    r.put("ok", false);
    r.put("error", word);
    r.put("message", e.getClass().getSimpleName() + ": " + e.getMessage());
  }

  private static Duration secs(Map<String, Object> req, String k, double dflt) {
    Object v = req.get(k);
    double d = v == null ? dflt : ((Number) v).doubleValue();
    return Duration.ofNanos((long) (d * 1e9));
  }

  private static String str(Map<String, Object> req, String k) {
    Object v = req.get(k);
    if (v == null) {
      throw new IllegalArgumentException("missing argument " + k);
    }
    return v.toString();
  }

  private static List<String> strs(Map<String, Object> req, String k) {
    List<String> out = new ArrayList<>();
    if (req.get(k) instanceof List) {
      for (Object o : (List<?>) req.get(k)) {
        out.add(o.toString());
      }
    }
    return out;
  }

  private static long num(Map<String, Object> req, String k) {
    Object v = req.get(k);
    if (!(v instanceof Number)) {
      throw new IllegalArgumentException("missing number " + k);
    }
    return ((Number) v).longValue();
  }

  private Session session(Map<String, Object> req) {
    Session s = sessions.get(str(req, "session"));
    if (s == null) {
      throw new IllegalArgumentException("no session " + req.get("session"));
    }
    return s;
  }

  private WriteOptions writeOptions(Map<String, Object> req) {
    WriteOptions w = WriteOptions.none();
    if (req.get("session") != null) {
      w = w.session(session(req));
    }
    if (req.get("fence") instanceof List) {
      List<?> f = (List<?>) req.get("fence");
      w = w.fence(f.get(0).toString(), ((Number) f.get(1)).longValue());
    }
    if (req.get("ifrev") != null) {
      w = w.ifRev(num(req, "ifrev"));
    }
    return w;
  }

  private static Txn.Rel rel(Object w) {
    for (Txn.Rel r : Txn.Rel.values()) {
      if (r.word().equals(String.valueOf(w))) {
        return r;
      }
    }
    throw new IllegalArgumentException("no relation " + w);
  }

  private static long n(Object v) {
    if (!(v instanceof Number)) {
      throw new IllegalArgumentException("not a number: " + v);
    }
    return ((Number) v).longValue();
  }

  /** The request's TXN (PROTOCOL.md "txn") built with the package's builder. */
  private Txn txn(Map<String, Object> req) {
    Txn t = req.get("session") != null ? session(req).txn() : client.txn();
    if (req.get("if") instanceof List<?> cs) {
      for (Object x : cs) {
        List<?> c = (List<?>) x;
        String kind = c.get(0).toString();
        String name = c.get(1).toString();
        if (kind.equals("exists") && c.size() == 2) {
          t.ifExists(name);
        } else if (kind.equals("missing") && c.size() == 2) {
          t.ifMissing(name);
        } else if (kind.equals("holds") && c.size() == 3) {
          t.ifHolds(name, n(c.get(2)));
        } else if (kind.equals("rev") && c.size() == 4) {
          t.ifRev(name, rel(c.get(2)), n(c.get(3)));
        } else if (kind.equals("value") && c.size() == 4) {
          t.ifValue(name, rel(c.get(2)), c.get(3).toString());
        } else if (kind.equals("token") && c.size() == 4) {
          t.ifToken(name, rel(c.get(2)), n(c.get(3)));
        } else {
          throw new IllegalArgumentException("unknown compare " + c);
        }
      }
    }
    for (String branch : new String[] {"then", "else"}) {
      boolean els = branch.equals("else");
      if (!(req.get(branch) instanceof List<?> ops)) {
        continue;
      }
      for (Object x : ops) {
        List<?> o = (List<?>) x;
        String kind = o.get(0).toString();
        String key = o.get(1).toString();
        if (kind.equals("put") && o.size() == 3) {
          if (els) {
            t.elsePut(key, o.get(2).toString());
          } else {
            t.thenPut(key, o.get(2).toString());
          }
        } else if (kind.equals("del") && o.size() == 2) {
          if (els) {
            t.elseDelete(key);
          } else {
            t.thenDelete(key);
          }
        } else if (kind.equals("incr") && o.size() == 3) {
          if (els) {
            t.elseIncr(key, n(o.get(2)));
          } else {
            t.thenIncr(key, n(o.get(2)));
          }
        } else {
          throw new IllegalArgumentException("unknown op " + o);
        }
      }
    }
    if (req.get("fence") instanceof List<?> f) {
      t.fence(f.get(0).toString(), n(f.get(1)));
    }
    return t;
  }

  private static Map<String, Object> res(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  private static long grant(OptionalLong t) {
    if (t.isEmpty()) {
      throw new BusyException("taken");
    }
    return t.getAsLong();
  }

  private Map<String, Object> run(Map<String, Object> req) throws InterruptedException {
    String op = str(req, "op");
    switch (op) {
      case "session.open":
        {
          Object n = req.get("name");
          Session s =
              Boolean.TRUE.equals(req.get("reentrant"))
                  ? client.openReentrantSession(
                      secs(req, "ttl", 10),
                      secs(req, "lock_delay", 0),
                      n == null ? null : n.toString(),
                      req.get("max_count") == null ? 0 : (int) num(req, "max_count"))
                  : client.openSession(
                      secs(req, "ttl", 10),
                      secs(req, "lock_delay", 0),
                      n == null ? null : n.toString());
          String h = "s" + nextSession.incrementAndGet();
          s.addLostListener(
              x ->
                  emit(
                      res(
                          "event", "lost",
                          "session", h,
                          "mono_ms", System.nanoTime() / 1_000_000,
                          "wall_ms", System.currentTimeMillis())));
          sessions.put(h, s);
          return res("session", h, "sid", s.sid());
        }
      case "session.close":
        {
          Session s = session(req);
          stopRevokes(str(req, "session"));
          s.close(); // the handle stays: later calls on it answer SESSION
        }
        return res();
      case "session.safe":
        {
          Session s = session(req);
          return res("remaining_ms", s.remaining().toMillis(), "lost", s.isLost());
        }
      case "lock":
        {
          Session s = session(req);
          boolean shared = Boolean.TRUE.equals(req.get("shared"));
          boolean notify = Boolean.TRUE.equals(req.get("notify"));
          Duration wait = secs(req, "wait", 0);
          String name = str(req, "name");
          long t;
          if (req.get("value") != null || req.get("max_hold") != null) {
            LockOptions o = LockOptions.none();
            if (notify) {
              o = o.notifyHolder();
            }
            if (req.get("value") != null) {
              o = o.value(str(req, "value"));
            }
            if (req.get("max_hold") != null) {
              o = o.maxHold(secs(req, "max_hold", 0));
            }
            t = s.acquire(name, wait, o); // wait 0: a try, BusyException
          } else if (wait.isZero()) { // a try never queues: nobody to notify
            t = grant(shared ? s.tryAcquireShared(name) : s.tryAcquire(name));
          } else if (notify) {
            t = s.acquireNotify(name, wait);
          } else {
            t = shared ? s.acquireShared(name, wait) : s.acquire(name, wait);
          }
          return res("token", t);
        }
      case "unlock":
        session(req).unlock(str(req, "name"));
        return res();
      case "lock.multi":
        {
          Session s = session(req);
          List<String> names = strs(req, "names");
          Set<String> shared = new HashSet<>(strs(req, "shared"));
          Duration wait = secs(req, "wait", 0);
          long[] t;
          if (wait.isZero()) {
            t = s.tryAcquireMulti(names, shared).orElseThrow(() -> new BusyException("taken"));
          } else {
            t = s.acquireMulti(names, shared, wait);
          }
          List<Long> tokens = new ArrayList<>();
          for (long x : t) {
            tokens.add(x);
          }
          return res("tokens", tokens);
        }
      case "unlock.multi":
        session(req).unlockMulti(strs(req, "names"));
        return res();
      case "sem.acquire":
        {
          Session s = session(req);
          Duration wait = secs(req, "wait", 0);
          int limit = (int) num(req, "limit");
          int permits = req.get("permits") == null ? 1 : (int) num(req, "permits");
          long t =
              wait.isZero()
                  ? grant(s.semTryAcquire(str(req, "name"), limit, permits))
                  : s.semAcquire(str(req, "name"), limit, permits, wait);
          return res("token", t);
        }
      case "sem.release":
        session(req).semRelease(str(req, "name"));
        return res();
      case "elect.campaign":
        {
          Object v = req.get("value");
          long t =
              session(req)
                  .campaign(str(req, "name"), v == null ? "" : v.toString(), secs(req, "wait", 0));
          return res("token", t);
        }
      case "elect.resign":
        session(req).resign(str(req, "name"));
        return res();
      case "elect.leader":
        {
          Leader l = client.leader(str(req, "name"));
          if (l == null) {
            throw new NotFoundException("nobody leads " + req.get("name"));
          }
          return res("sid", l.sid(), "value", l.valueString(), "token", l.token());
        }
      case "elect.observe":
        {
          Object a = req.get("after_rev");
          Optional<Leader> l =
              client.observe(
                  str(req, "name"), a == null ? 0 : ((Number) a).longValue(), secs(req, "wait", 0));
          if (l.isEmpty()) {
            throw new LockTimeoutException("no change of " + req.get("name") + " within the wait");
          }
          Leader x = l.get();
          return res("sid", x.sid(), "value", x.valueString(), "rev", x.rev(), "token", x.token());
        }
      case "put":
        return res("rev", client.put(str(req, "key"), str(req, "value"), writeOptions(req)));
      case "del":
        return res("deleted", client.delete(str(req, "key"), writeOptions(req)));
      case "incr":
        {
          long by = req.get("by") == null ? 1 : num(req, "by");
          return res("value", client.incr(str(req, "key"), by, writeOptions(req)));
        }
      case "txn":
        {
          TxnResult r = txn(req).commit();
          return res("succeeded", r.succeeded(), "rev", r.revision(), "results", r.results());
        }
      case "get":
        {
          KeyValue kv = client.kvGet(str(req, "key"));
          if (kv == null) {
            throw new NotFoundException("no key " + req.get("key"));
          }
          return res("value", kv.valueString(), "mod_rev", kv.modRev(), "version", kv.version());
        }
      case "fence.check":
        if (!client.fenceCheck(str(req, "name"), num(req, "token"))) {
          throw new StaleException("token " + req.get("token") + " is not current");
        }
        return res();
      case "watch.start":
        {
          Object p = req.get("prefix");
          Object from = req.get("from");
          Watch w = client.watch(p == null ? "" : p.toString(), from == null ? null : from.toString());
          String h = "w" + nextWatch.incrementAndGet();
          Watcher wr = new Watcher(h, w);
          watchers.put(h, wr);
          wr.thread.start();
          return res("watch", h);
        }
      case "watch.stop":
        {
          Watcher w = watchers.remove(str(req, "watch"));
          if (w == null) {
            throw new IllegalArgumentException("no watcher " + req.get("watch"));
          }
          w.watch.stop();
          w.thread.join(30_000);
          return res("last", w.watch.lastId());
        }
      case "lock.info":
        {
          LockInfo li = client.lockState(str(req, "name"));
          if (li == null) {
            throw new NotFoundException("lock " + req.get("name") + " is free");
          }
          return res(
              "holder", li.holder(),
              "token", li.token(),
              "value", li.valueString(),
              "max_hold_ms", li.maxHoldMs(),
              "transitions", li.transitions(),
              "count", li.count());
        }
      case "lock.history":
        {
          List<Object> entries = new ArrayList<>();
          int count = req.get("count") == null ? 0 : (int) num(req, "count");
          long before = req.get("before") == null ? 0 : num(req, "before");
          for (HistoryEntry e : client.lockHistory(str(req, "name"), count, before)) {
            List<Object> ws = new ArrayList<>();
            for (HistoryEntry.Waiting w : e.waiters()) {
              ws.add(res("session", w.sid(), "waited_ms", w.waitedMs()));
            }
            entries.add(
                res(
                    "session", e.sid(),
                    "session_name", e.sessionName(),
                    "value", e.value(),
                    "token", e.token(),
                    "ended_by", e.endedBy(),
                    "granted_ms", e.grantedMs(),
                    "ended_ms", e.endedMs(),
                    "held_ms", e.heldMs(),
                    "waited_ms", e.waitedMs(),
                    "waiters_total", e.waitersTotal(),
                    "waiters", ws));
          }
          return res("entries", entries);
        }
      case "latch.create":
        client.latchCreate(str(req, "name"), (int) num(req, "count"));
        return res();
      case "latch.join":
        session(req).latchJoin(str(req, "name"));
        return res();
      case "latch.countdown":
        return res("remaining", session(req).latchCountdown(str(req, "name")));
      case "latch.wait":
        if (!client.latchWait(str(req, "name"), secs(req, "wait", 0))) {
          throw new LockTimeoutException("latch " + req.get("name") + " not at zero");
        }
        return res();
      case "latch.info":
        {
          LatchInfo li = client.latchInfo(str(req, "name"));
          if (li == null) {
            throw new NotFoundException("no latch or barrier " + req.get("name"));
          }
          return res(
              "type", li.type(),
              "state", li.state(),
              "count", li.count(),
              "remaining", li.remaining(),
              "broken_sid", li.brokenSid());
        }
      case "latch.delete":
        return res("deleted", client.latchDelete(str(req, "name")));
      case "barrier.enter":
        if (!session(req)
            .barrierEnter(str(req, "name"), (int) num(req, "count"), secs(req, "wait", 0))) {
          throw new LockTimeoutException("barrier " + req.get("name") + " not full");
        }
        return res();
      case "barrier.leave":
        if (!session(req).barrierLeave(str(req, "name"), secs(req, "wait", 0))) {
          throw new LockTimeoutException("barrier " + req.get("name") + " not left by all");
        }
        return res();
      case "revoke":
        {
          long dl = req.get("deadline_ms") == null ? 0 : num(req, "deadline_ms");
          Object reason = req.get("reason");
          long t =
              client.revoke(
                  str(req, "name"),
                  dl > 0 ? Duration.ofMillis(dl) : null,
                  reason == null ? null : reason.toString());
          return res("token", t);
        }
      case "on_revoke":
        {
          Session s = session(req);
          String h = str(req, "session");
          CountDownLatch answered = new CountDownLatch(1);
          RevokeWatch rw =
              s.onRevoke(
                  str(req, "name"),
                  num(req, "token"),
                  (Revoke r) -> {
                    try {
                      answered.await();
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                    emit(
                        res(
                            "event", "revoke",
                            "session", h,
                            "name", r.name(),
                            "token", r.token(),
                            "deadline_ms", r.deadline() == null ? 0 : r.deadline().toMillis(),
                            "reason", r.reason(),
                            "by", r.by()));
                  });
          revokes.computeIfAbsent(h, k -> new CopyOnWriteArrayList<>()).add(rw);
          AFTER_REPLY.set(answered);
          return res();
        }
      case "on_waiter":
        {
          Session s = session(req);
          String h = str(req, "session");
          CountDownLatch answered = new CountDownLatch(1); // as on_revoke: no line before it
          WaiterWatch ww =
              s.onWaiter(
                  str(req, "name"),
                  num(req, "token"),
                  (Waiter w) -> {
                    try {
                      answered.await();
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                    emit(
                        res(
                            "event", "waiter",
                            "session", h,
                            "name", w.name(),
                            "token", w.token(),
                            "sid", w.sid(),
                            "wait_ms", w.waitTime().toMillis()));
                  });
          revokes.computeIfAbsent(h, k -> new CopyOnWriteArrayList<>()).add(ww);
          AFTER_REPLY.set(answered);
          return res();
        }
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  /** A watcher's reading thread: events in order, then watch_end. */
  private final class Watcher {
    final Watch watch;
    final Thread thread;

    Watcher(String handle, Watch watch) {
      this.watch = watch;
      this.thread =
          new Thread(
              () -> {
                String err = null;
                try {
                  while (!watch.isStopped()) {
                    for (Event e : watch.read(500)) {
                      emit(res("event", "watch", "watch", handle, "id", e.id(), "type", e.type(), "name", e.name()));
                    }
                  }
                } catch (CompactedException e) {
                  err = "COMPACTED";
                } catch (FencelockException e) {
                  err = e.word();
                } catch (RuntimeException e) {
                  err = "OTHER";
                }
                emit(res("event", "watch_end", "watch", handle, "error", err, "last", watch.lastId()));
              },
              "agent-watch-" + handle);
      this.thread.setDaemon(true);
    }
  }
}
