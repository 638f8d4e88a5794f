// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code -COMPACTED}: the events after the id a watcher needs are no longer retained. {@link
 * #oldest()} is the oldest retained id, {@link #after()} the id just before it: reload the
 * state, then watch again from {@code after()}. Never from "0": the next read may go to a new
 * leader that retains more history, and "0" there starts before what was already handed out.
 */
public class CompactedException extends FencelockException {
  private static final long serialVersionUID = 1L;
  private static final Pattern OLDEST = Pattern.compile("oldest=([0-9]+)-([0-9]+)");
  private final String oldest;

  public CompactedException(String message, String oldest) {
    super(message);
    this.oldest = oldest;
  }

  static CompactedException ofReply(String text) {
    Matcher m = OLDEST.matcher(text);
    return new CompactedException(text, m.find() ? m.group(1) + "-" + m.group(2) : "");
  }

  @Override
  public String word() {
    return "COMPACTED";
  }

  /** The oldest retained id ("" if the server named none). */
  public String oldest() {
    return oldest;
  }

  /** The id just before {@link #oldest()} ("" if the server named none). */
  public String after() {
    int dash = oldest.indexOf('-');
    if (dash < 0) {
      return "";
    }
    long rev = Long.parseUnsignedLong(oldest.substring(0, dash));
    long n = Long.parseUnsignedLong(oldest.substring(dash + 1));
    if (n != 0) {
      return rev + "-" + Long.toUnsignedString(n - 1);
    }
    return rev == 0 ? "0-0" : (rev - 1) + "-" + Long.toUnsignedString(-1L);
  }
}
