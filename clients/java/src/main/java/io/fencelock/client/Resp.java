// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The RESP2 codec: commands out as multibulk arrays, replies in as Java values. A simple
 * string is a {@link String}, an integer a {@link Long}, a bulk string {@code byte[]}, an array a
 * {@code List<Object>}, nil {@code null}, an error reply an {@link Err} (a value, not an
 * exception: the call path decides what each error word means). Limits guard against a broken
 * or hostile stream: a bulk over {@link #MAX_BULK} bytes, an array over {@link #MAX_ARRAY}
 * elements or nested deeper than {@link #MAX_DEPTH} is a {@link ProtocolException}.
 */
final class Resp {
  static final int MAX_BULK = 512 << 20;
  static final int MAX_ARRAY = 1 << 24;
  static final int MAX_DEPTH = 16;
  private static final int MAX_LINE = 64 << 10;

  private Resp() {}

  /** An error reply: its text without the leading '-'. */
  static final class Err {
    final String text;

    Err(String text) {
      this.text = text;
    }

    String word() {
      int sp = text.indexOf(' ');
      return sp < 0 ? text : text.substring(0, sp);
    }

    String rest() {
      int sp = text.indexOf(' ');
      return sp < 0 ? "" : text.substring(sp + 1).trim();
    }

    @Override
    public String toString() {
      return "-" + text;
    }
  }

  static byte[] bytes(Object a) {
    if (a instanceof byte[]) {
      return (byte[]) a;
    }
    return String.valueOf(a).getBytes(StandardCharsets.UTF_8);
  }

  /** Write one command (no flush). */
  static void write(OutputStream out, List<Object> argv) throws IOException {
    out.write(('*' + Integer.toString(argv.size()) + "\r\n").getBytes(StandardCharsets.US_ASCII));
    for (Object a : argv) {
      byte[] b = bytes(a);
      out.write(('$' + Integer.toString(b.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(b);
      out.write('\r');
      out.write('\n');
    }
  }

  /** Read one reply whose type byte was already read as {@code type}. */
  static Object read(InputStream in, int type) throws IOException {
    return read(in, type, 0);
  }

  static Object read(InputStream in) throws IOException {
    return read(in, next(in), 0);
  }

  private static int next(InputStream in) throws IOException {
    int b = in.read();
    if (b < 0) {
      throw new EOFException("connection closed by the server");
    }
    return b;
  }

  private static Object read(InputStream in, int type, int depth) throws IOException {
    switch (type) {
      case '+':
        return line(in);
      case '-':
        return new Err(line(in));
      case ':':
        return number(line(in));
      case '$':
        {
          long n = number(line(in));
          if (n < 0) {
            return null;
          }
          if (n > MAX_BULK) {
            throw new ProtocolException("bulk of " + n + " bytes is over the limit");
          }
          byte[] b = in.readNBytes((int) n);
          if (b.length != n || next(in) != '\r' || next(in) != '\n') {
            throw new EOFException("connection closed inside a bulk reply");
          }
          return b;
        }
      case '*':
        {
          long n = number(line(in));
          if (n < 0) {
            return null;
          }
          if (n > MAX_ARRAY || depth >= MAX_DEPTH) {
            throw new ProtocolException("array too large or too deep");
          }
          List<Object> l = new ArrayList<>((int) Math.min(n, 1024));
          for (long i = 0; i < n; i++) {
            l.add(read(in, next(in), depth + 1));
          }
          return l;
        }
      default:
        throw new ProtocolException("unexpected RESP type byte " + type);
    }
  }

  private static long number(String s) {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new ProtocolException("not a RESP number: " + s);
    }
  }

  private static String line(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
    while (true) {
      int b = next(in);
      if (b == '\r') {
        if (next(in) != '\n') {
          throw new ProtocolException("CR without LF in a RESP line");
        }
        return sb.append(buf.toString(StandardCharsets.UTF_8)).toString();
      }
      if (buf.size() >= MAX_LINE) {
        throw new ProtocolException("RESP line over " + MAX_LINE + " bytes");
      }
      buf.write(b);
    }
  }

  /** A bulk or simple string as text (UTF-8); null stays null. */
  static String str(Object o) {
    if (o == null) {
      return null;
    }
    if (o instanceof byte[]) {
      return new String((byte[]) o, StandardCharsets.UTF_8);
    }
    return o.toString();
  }

  /** An integer reply (or a number as a string) as a long. */
  static long num(Object o) {
    if (o instanceof Long) {
      return (Long) o;
    }
    String s = str(o);
    if (s == null) {
      throw new ProtocolException("expected an integer, got nil");
    }
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new ProtocolException("expected an integer, got " + s);
    }
  }

  /** A flat array of field, value pairs as a map with String keys; null stays null. */
  static java.util.Map<String, Object> map(Object o) {
    if (o == null) {
      return null;
    }
    if (!(o instanceof List)) {
      throw new ProtocolException("expected an array, got " + o);
    }
    List<?> l = (List<?>) o;
    java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i + 1 < l.size(); i += 2) {
      m.put(str(l.get(i)), l.get(i + 1));
    }
    return m;
  }
}
