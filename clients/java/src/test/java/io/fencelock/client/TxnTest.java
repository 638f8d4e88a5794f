// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TXN: the words the builder lays out, the reply read, the refusals typed (no server); then
 * against one real fencelockd: both branches with each op's result, a stale fence refused
 * whole, the servers' refusals typed, none of which changes a key.
 */
class TxnTest {
  @TempDir Path root;

  private static List<String> words(Txn t) {
    List<String> out = new ArrayList<>();
    for (Object o : t.args()) {
      out.add(o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : o.toString());
    }
    return out;
  }

  @Test
  void encoding() {
    Txn t =
        new Txn(null, null)
            .ifRev("cfg", Txn.Rel.EQ, 7)
            .ifValue("v", Txn.Rel.NE, "a b")
            .ifExists("e")
            .ifMissing("m")
            .ifToken("L", Txn.Rel.EQ, 5)
            .ifHolds("L", 12)
            .ifRev("cfg", Txn.Rel.LT, 9)
            .ifRev("cfg", Txn.Rel.GT, 0)
            .thenPut("cfg", "v2")
            .thenIncr("n", -3)
            .thenDelete("old")
            .elsePut("log", "lost")
            .elseIncr("misses", 1)
            .elseDelete("x")
            .fence("L", 5);
    assertEquals(
        List.of(
            "TXN", "IF", "REV", "cfg", "=", "7", "IF", "VALUE", "v", "!=", "a b", "IF", "EXISTS",
            "e", "IF", "MISSING", "m", "IF", "TOKEN", "L", "=", "5", "IF", "HOLDS", "L", "12", "IF",
            "REV", "cfg", "<", "9", "IF", "REV", "cfg", ">", "0", "THEN", "PUT", "cfg", "v2",
            "INCR", "n", "-3", "DEL", "old", "ELSE", "PUT", "log", "lost", "INCR", "misses", "1",
            "DEL", "x", "FENCE", "L", "5"),
        words(t));
    assertEquals(List.of("TXN", "THEN", "PUT", "k", "v"), words(new Txn(null, null).thenPut("k", "v")));
    assertEquals(
        List.of("TXN", "IF", "MISSING", "k", "THEN", "ELSE", "DEL", "k"),
        words(new Txn(null, null).ifMissing("k").elseDelete("k")));
    assertThrows(IllegalStateException.class, () -> new Txn(null, null).commit());
  }

  @Test
  void replyAndErrors() {
    TxnResult r = Txn.result(List.of("THEN", 42L, List.of(40L, -2L, 1L)));
    assertEquals(new TxnResult(true, 42, List.of(40L, -2L, 1L)), r);
    List<Object> nil = new ArrayList<>(List.of("ELSE", 9L));
    nil.add(null);
    r = Txn.result(nil);
    assertFalse(r.succeeded());
    assertFalse(r.resultsKnown());
    assertNull(r.results());
    assertThrows(ProtocolException.class, () -> Txn.result(List.of("MAYBE", 1L, List.of())));
    assertThrows(ProtocolException.class, () -> Txn.result(List.of("THEN", 1L)));
    assertThrows(ProtocolException.class, () -> Txn.result("OK"));

    FencelockException e =
        FencelockException.fromReply("ERR TXN op 2: value of key k is not a signed 64-bit integer");
    assertTrue(e instanceof TxnOpException x && x.op() == 2 && e.word().equals("OTHER"), e.toString());
    e = FencelockException.fromReply("ERR key 'k' is written twice in one branch of the TXN");
    assertTrue(e instanceof ServerException && !(e instanceof TxnOpException), e.toString());
    e = FencelockException.fromReply("TOOLARGE TXN of more than 4 compares and ops");
    assertTrue(e instanceof TooLargeException && e.word().equals("TOOLARGE"), e.toString());
    assertTrue(FencelockException.fromReply("STALE token 5") instanceof StaleException);
    assertTrue(FencelockException.fromReply("NOSPACE quota") instanceof NoSpaceException);
    assertTrue(FencelockException.fromReply("NOPERM key") instanceof PermissionException);
  }

  @Test
  void againstANode() throws Exception {
    try (Fencelockd node = new Fencelockd(root, 1)) {
      node.args.addAll(List.of("--max-txn-ops", "4"));
      node.start();
      try (FencelockClient c = Fencelockd.readyClient(node.addr());
          Session s = c.openSession(Duration.ofSeconds(10))) {
        long r1 = c.put("t/cfg", "v1");
        long tok = s.acquire("t/L", Duration.ofSeconds(5));
        TxnResult r =
            s.txn()
                .ifRev("t/cfg", Txn.Rel.EQ, r1)
                .ifHolds("t/L", s.sid())
                .thenPut("t/cfg", "v2")
                .thenIncr("t/n", 5)
                .fence("t/L", tok)
                .commit();
        assertTrue(r.succeeded());
        assertEquals(List.of(r.results().get(0), 5L), r.results());
        assertEquals(r.results().get(0) + 1, r.revision());
        assertEquals(r.results().get(0), c.kvGet("t/cfg").modRev());

        r = c.txn().ifRev("t/cfg", Txn.Rel.EQ, r1).thenPut("t/cfg", "v3")
            .elseIncr("t/n", -1).elseDelete("t/none").commit();
        assertFalse(r.succeeded());
        assertEquals(List.of(4L, 0L), r.results());

        s.unlock("t/L");
        s.acquire("t/L", Duration.ofSeconds(5));
        assertThrows(
            StaleException.class, () -> s.txn().thenPut("t/cfg", "late").fence("t/L", tok).commit());
        TooLargeException tl =
            assertThrows(
                TooLargeException.class,
                () -> c.txn().thenPut("a", "1").thenPut("b", "1").thenPut("c", "1")
                        .thenPut("d", "1").thenPut("e", "1").commit());
        assertEquals("TOOLARGE", tl.word());
        TxnOpException op =
            assertThrows(
                TxnOpException.class,
                () -> s.txn().thenPut("t/z", "x").thenIncr("t/cfg", 1).commit());
        assertEquals(2, op.op());
        ServerException twice =
            assertThrows(
                ServerException.class,
                () -> c.txn().thenPut("t/cfg", "x").thenDelete("t/cfg").commit());
        assertFalse(twice instanceof TxnOpException);
        assertEquals("v2", c.kvGet("t/cfg").valueString());
        assertNull(c.kvGet("t/z"));
      }
    }
  }
}
