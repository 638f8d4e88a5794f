// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** Unlock, release or resign by a session that neither holds nor waits ({@code -NOTHOLDER}). */
public class NotHolderException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public NotHolderException(String message) {
    super(message);
  }

  public NotHolderException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "NOTHOLDER";
  }
}
