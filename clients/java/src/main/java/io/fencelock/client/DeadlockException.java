// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * -DEADLOCK: the wait would have closed a cycle of sessions waiting for each other. It was
 * refused and not queued; the session keeps what it holds and the other waits are untouched:
 * release something and retry. {@link #cycle()} is the server's text, "cycle of 2: 5 -a-> 7
 * -b-> 5" (session 5 waits for lock a, which session 7 holds or is queued for first, ...).
 */
public class DeadlockException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public DeadlockException(String message) {
    super(message);
  }

  /** The cycle as the server named it (the reply without its DEADLOCK word). */
  public String cycle() {
    String m = getMessage();
    return m.startsWith("DEADLOCK ") ? m.substring("DEADLOCK ".length()) : m;
  }

  @Override
  public String word() {
    return "DEADLOCK";
  }
}
