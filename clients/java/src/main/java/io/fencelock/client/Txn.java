// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A TXN being built (docs/protocol.md "TXN"): compares, then all of one branch's writes in one
 * log entry, or none. {@link FencelockClient#txn()} or {@link Session#txn()}, then {@code if*},
 * {@code then*}, {@code else*} (each appends one compare or op, in the order given, and returns
 * the builder), optionally {@link #fence}, and {@link #commit}:
 *
 * <pre>{@code
 * TxnResult r = client.txn().ifRev("cfg", Txn.Rel.EQ, 7).thenPut("cfg", "v2")
 *     .elseIncr("misses", 1).commit();
 * }</pre>
 *
 * Through a session the TXN carries REQ sid seq and is resent until its outcome is known,
 * applying once, as the session's other writes; without one it is sent once (a lost answer is
 * {@link OutcomeUnknownException}). Not thread-safe; committing it again is a new request.
 */
public final class Txn {
  /** A compare's relation. VALUE and TOKEN take EQ and NE only (the servers refuse others). */
  public enum Rel {
    EQ("="),
    NE("!="),
    LT("<"),
    GT(">");

    final String word;

    Rel(String word) {
      this.word = word;
    }

    /** The protocol's word: =, !=, &lt; or &gt;. */
    public String word() {
      return word;
    }
  }

  private final FencelockClient client;
  private final Session session;
  private final List<Object> ifs = new ArrayList<>();
  private final List<Object> thenOps = new ArrayList<>();
  private final List<Object> elseOps = new ArrayList<>();
  private final List<Object> fence = new ArrayList<>();
  private int items;

  Txn(FencelockClient client, Session session) {
    this.client = client;
    this.session = session;
  }

  private Txn cmp(Object... args) {
    ifs.add("IF");
    for (Object a : args) {
      ifs.add(a);
    }
    items++;
    return this;
  }

  private static String rel(Rel r) {
    if (r == null) {
      throw new IllegalArgumentException("a relation is required");
    }
    return r.word;
  }

  /** The key's mod revision (0 for an absent key) compared with rev. */
  public Txn ifRev(String key, Rel r, long rev) {
    return cmp("REV", key, rel(r), rev);
  }

  /** The key's value EQ or NE value (an absent key has none: EQ false, NE true). */
  public Txn ifValue(String key, Rel r, byte[] value) {
    return cmp("VALUE", key, rel(r), value);
  }

  public Txn ifValue(String key, Rel r, String value) {
    return ifValue(key, r, value.getBytes(StandardCharsets.UTF_8));
  }

  public Txn ifExists(String key) {
    return cmp("EXISTS", key);
  }

  public Txn ifMissing(String key) {
    return cmp("MISSING", key);
  }

  /** token is (EQ) or is not (NE) a current token of lock (FENCE's rule). */
  public Txn ifToken(String lock, Rel r, long token) {
    return cmp("TOKEN", lock, rel(r), token);
  }

  /** Session sid holds lock (exclusively, shared or a permit): the ownership guard. */
  public Txn ifHolds(String lock, long sid) {
    return cmp("HOLDS", lock, sid);
  }

  private Txn op(boolean els, Object... args) {
    List<Object> l = els ? elseOps : thenOps;
    for (Object a : args) {
      l.add(a);
    }
    items++;
    return this;
  }

  /** PUT when THEN runs (as put without options: a lease the key had is dropped). */
  public Txn thenPut(String key, byte[] value) {
    return op(false, "PUT", key, value);
  }

  public Txn thenPut(String key, String value) {
    return thenPut(key, value.getBytes(StandardCharsets.UTF_8));
  }

  public Txn thenDelete(String key) {
    return op(false, "DEL", key);
  }

  /** INCR key BY by when THEN runs; its result is the new value. */
  public Txn thenIncr(String key, long by) {
    return op(false, "INCR", key, by);
  }

  public Txn elsePut(String key, byte[] value) {
    return op(true, "PUT", key, value);
  }

  public Txn elsePut(String key, String value) {
    return elsePut(key, value.getBytes(StandardCharsets.UTF_8));
  }

  public Txn elseDelete(String key) {
    return op(true, "DEL", key);
  }

  public Txn elseIncr(String key, long by) {
    return op(true, "INCR", key, by);
  }

  /** FENCE lock token on the whole TXN: {@link StaleException}, nothing applied, unless current. */
  public Txn fence(String lock, long token) {
    fence.clear();
    fence.add("FENCE");
    fence.add(lock);
    fence.add(token);
    return this;
  }

  /** The TXN command's arguments, without REQ (a session's send adds it). */
  List<Object> args() {
    List<Object> a = new ArrayList<>();
    a.add("TXN");
    a.addAll(ifs);
    a.add("THEN");
    a.addAll(thenOps);
    if (!elseOps.isEmpty()) {
      a.add("ELSE");
      a.addAll(elseOps);
    }
    a.addAll(fence);
    return a;
  }

  /**
   * Send it. Refusals (nothing applied): {@link StaleException} (a stale fence), {@link
   * TooLargeException} (more compares and ops, or bytes, than the servers take), {@link
   * NoSpaceException}, {@link PermissionException}, {@link TxnOpException} (an op that cannot
   * apply), {@link ServerException} (a malformed TXN: a key written twice in one branch, a
   * relation the compare does not take); and every write's exceptions.
   */
  public TxnResult commit() {
    if (items == 0) {
      throw new IllegalStateException("a TXN needs a compare or an op");
    }
    Cmd cmd = new Cmd(args().toArray());
    Object r =
        session != null
            ? session.mutate(cmd)
            : client.call(cmd, client.deadline(0), false, false, false, null);
    return result(r);
  }

  /** [THEN|ELSE, revision, [result, ...] | nil] as a TxnResult. */
  static TxnResult result(Object r) {
    if (!(r instanceof List<?> l) || l.size() != 3) {
      throw new ProtocolException("TXN: a reply of an unexpected shape: " + r);
    }
    String branch = Resp.str(l.get(0));
    if (!"THEN".equals(branch) && !"ELSE".equals(branch)) {
      throw new ProtocolException("TXN: branch " + branch);
    }
    long rev = Resp.num(l.get(1));
    Object res = l.get(2);
    if (res == null) {
      return new TxnResult("THEN".equals(branch), rev, null);
    }
    if (!(res instanceof List<?> rl)) {
      throw new ProtocolException("TXN: results are not a list");
    }
    List<Long> out = new ArrayList<>(rl.size());
    for (Object x : rl) {
      out.add(Resp.num(x));
    }
    return new TxnResult("THEN".equals(branch), rev, List.copyOf(out));
  }
}
