// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** A fenced write, fence check or proclaim with a token that is not the current one ({@code -STALE}); nothing changed. */
public class StaleException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public StaleException(String message) {
    super(message);
  }

  public StaleException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "STALE";
  }
}
