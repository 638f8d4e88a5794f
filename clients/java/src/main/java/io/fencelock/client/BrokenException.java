// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * -BROKEN: a latch a joined session can no longer count down (its session ended before it
 * did), or a barrier a session ended inside (the message names both). Every waiter and every
 * later step gets it until the latch or barrier is deleted ({@link
 * FencelockClient#latchDelete}): nobody waits forever for a participant that is gone.
 */
public class BrokenException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public BrokenException(String message) {
    super(message);
  }

  @Override
  public String word() {
    return "BROKEN";
  }
}
