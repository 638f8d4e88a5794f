// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * A key, name or value over the servers' limit ({@code -TOOLARGE}); a TXN of more compares and
 * ops, or bytes, than the servers take.
 */
public class TooLargeException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public TooLargeException(String message) {
    super(message);
  }

  public TooLargeException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "TOOLARGE";
  }
}
