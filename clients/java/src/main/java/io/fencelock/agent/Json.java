// SPDX-License-Identifier: Apache-2.0
package io.fencelock.agent;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the agent protocol needs (one object per line): parse into Map, List, String,
 * Long, Double, Boolean, null; write those back. Kept here so that the client jar depends on
 * nothing. Malformed input is an IllegalArgumentException.
 */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    Json j = new Json(text);
    Object v = j.value();
    j.ws();
    if (j.i != text.length()) {
      throw new IllegalArgumentException("trailing characters at " + j.i);
    }
    return v;
  }

  private void ws() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
  }

  private IllegalArgumentException bad(String what) {
    return new IllegalArgumentException("bad JSON at " + i + ": " + what);
  }

  private Object value() {
    ws();
    if (i >= s.length()) {
      throw bad("end of input");
    }
    char c = s.charAt(i);
    switch (c) {
      case '{':
        {
          i++;
          Map<String, Object> m = new LinkedHashMap<>();
          ws();
          if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
          }
          while (true) {
            ws();
            String k = string();
            ws();
            expect(':');
            m.put(k, value());
            ws();
            if (i < s.length() && s.charAt(i) == ',') {
              i++;
              continue;
            }
            expect('}');
            return m;
          }
        }
      case '[':
        {
          i++;
          List<Object> l = new ArrayList<>();
          ws();
          if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return l;
          }
          while (true) {
            l.add(value());
            ws();
            if (i < s.length() && s.charAt(i) == ',') {
              i++;
              continue;
            }
            expect(']');
            return l;
          }
        }
      case '"':
        return string();
      case 't':
        word("true");
        return Boolean.TRUE;
      case 'f':
        word("false");
        return Boolean.FALSE;
      case 'n':
        word("null");
        return null;
      default:
        return number();
    }
  }

  private void expect(char c) {
    if (i >= s.length() || s.charAt(i) != c) {
      throw bad("expected " + c);
    }
    i++;
  }

  private void word(String w) {
    if (!s.startsWith(w, i)) {
      throw bad("expected " + w);
    }
    i += w.length();
  }

  private Object number() {
    int a = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    String n = s.substring(a, i);
    if (n.isEmpty()) {
      throw bad("unexpected character");
    }
    try {
      if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) {
        return Long.parseLong(n);
      }
      return Double.parseDouble(n);
    } catch (NumberFormatException e) {
      throw bad("number " + n);
    }
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (true) {
      if (i >= s.length()) {
        throw bad("unterminated string");
      }
      char c = s.charAt(i++);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      if (i >= s.length()) {
        throw bad("unterminated escape");
      }
      char e = s.charAt(i++);
      switch (e) {
        case 'n':
          b.append('\n');
          break;
        case 't':
          b.append('\t');
          break;
        case 'r':
          b.append('\r');
          break;
        case 'b':
          b.append('\b');
          break;
        case 'f':
          b.append('\f');
          break;
        case 'u':
          if (i + 4 > s.length()) {
            throw bad("short \\u escape");
          }
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
          break;
        default:
          b.append(e);
      }
    }
  }

  static String write(Object v) {
    StringBuilder b = new StringBuilder();
    write(b, v);
    return b.toString();
  }

  private static void write(StringBuilder b, Object v) {
    if (v == null) {
      b.append("null");
    } else if (v instanceof String) {
      quote(b, (String) v);
    } else if (v instanceof Number || v instanceof Boolean) {
      b.append(v);
    } else if (v instanceof Map) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) {
          b.append(", ");
        }
        first = false;
        quote(b, String.valueOf(e.getKey()));
        b.append(": ");
        write(b, e.getValue());
      }
      b.append('}');
    } else if (v instanceof List) {
      b.append('[');
      boolean first = true;
      for (Object o : (List<?>) v) {
        if (!first) {
          b.append(", ");
        }
        first = false;
        write(b, o);
      }
      b.append(']');
    } else {
      quote(b, v.toString());
    }
  }

  private static void quote(StringBuilder b, String s) {
    b.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    b.append('"');
  }
}
