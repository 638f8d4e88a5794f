// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pure parts: RESP, endpoints, error words, the compaction id arithmetic. No server. */
class CodecTest {
  static Object parse(String s) throws Exception {
    return Resp.read(new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void respRepliesAndCommands() throws Exception {
    assertEquals("OK", parse("+OK\r\n"));
    assertEquals(42L, parse(":42\r\n"));
    assertArrayEquals("ab".getBytes(), (byte[]) parse("$2\r\nab\r\n"));
    assertNull(parse("$-1\r\n"));
    assertNull(parse("*-1\r\n"));
    List<?> l = (List<?>) parse("*2\r\n:1\r\n$1\r\nx\r\n");
    assertEquals(1L, l.get(0));
    Resp.Err e = (Resp.Err) parse("-NOTLEADER 127.0.0.1:7481\r\n");
    assertEquals("NOTLEADER", e.word());
    assertEquals("127.0.0.1:7481", e.rest());
    assertThrows(EOFException.class, () -> parse("$5\r\nab"));
    assertThrows(ProtocolException.class, () -> parse("?x\r\n"));
    assertThrows(ProtocolException.class, () -> parse("$999999999999\r\n"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Resp.write(out, List.of("GET", "k", 5L));
    assertEquals("*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\n5\r\n", out.toString(StandardCharsets.UTF_8));
  }

  @Test
  void endpointsFollowTheServersGrammar() {
    assertEquals(2, Endpoints.parse("a:1, [::1]:7480").size());
    assertEquals("::1", Endpoints.split("[::1]:7480").host);
    assertThrows(IllegalArgumentException.class, () -> Endpoints.split("a:0"));
    assertThrows(IllegalArgumentException.class, () -> Endpoints.split("a:123456"));
    assertThrows(IllegalArgumentException.class, () -> Endpoints.split("nocolon"));
  }

  @Test
  void errorWordsMapToTypes() {
    assertTrue(FencelockException.fromReply("STALE token 3") instanceof StaleException);
    assertTrue(FencelockException.fromReply("NOSESSION x") instanceof SessionLostException);
    assertTrue(FencelockException.fromReply("WRONGPASS x") instanceof AuthException);
    assertTrue(FencelockException.fromReply("NOPERM x") instanceof PermissionException);
    assertTrue(FencelockException.fromReply("ERR syntax") instanceof ServerException);
    assertEquals("PERM", FencelockException.fromReply("NOPERM x").word());
    CompactedException c = (CompactedException) FencelockException.fromReply(
        "COMPACTED oldest=41-0 events before it are gone");
    assertEquals("41-0", c.oldest());
    assertEquals("40-18446744073709551615", c.after());
    assertEquals("41-2", CompactedException.ofReply("COMPACTED oldest=41-3").after());
  }
}
