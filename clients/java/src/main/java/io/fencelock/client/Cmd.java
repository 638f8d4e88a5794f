// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One command's arguments. A command with a WAIT (LOCK, SEM.ACQUIRE, ELECT.CAMPAIGN,
 * ELECT.OBSERVE) asks, on every resend, for the wait that is left, never for the whole wait
 * again; a blocking XREAD tells the call path how long the server may hold its reply back.
 */
final class Cmd {
  final List<Object> argv;
  private int waitIdx = -1;
  private long waitEnd;
  private long blockEnd;
  private boolean blocking;

  Cmd(Object... args) {
    argv = new ArrayList<>(Arrays.asList(args));
  }

  Cmd add(Object... args) {
    argv.addAll(Arrays.asList(args));
    return this;
  }

  /** Append {@code WAIT ms} for a wait that ends at waitEnd (System.nanoTime()). */
  Cmd waitUntil(long waitEnd) {
    argv.add("WAIT");
    argv.add(1L);
    waitIdx = argv.size() - 1;
    this.waitEnd = waitEnd;
    blocking = true;
    return this;
  }

  /** The server may hold the reply back until blockEnd (System.nanoTime()). */
  Cmd blockUntil(long blockEnd) {
    this.blockEnd = blockEnd;
    blocking = true;
    return this;
  }

  boolean blocking() {
    return blocking;
  }

  String name() {
    return Resp.str(argv.get(0));
  }

  /** Fill in the wait that is left; the ms the server may legitimately hold the reply back. */
  long render() {
    long now = System.nanoTime();
    if (waitIdx >= 0) {
      long left = Math.max(0, (waitEnd - now) / 1_000_000);
      argv.set(waitIdx, Math.max(1L, left));
      return left;
    }
    if (blocking) {
      return Math.max(0, (blockEnd - now) / 1_000_000);
    }
    return 0;
  }
}
