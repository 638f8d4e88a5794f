// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** A try (no wait) found the lock held, its permits taken or its lock-delay running. */
public class BusyException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public BusyException(String message) {
    super(message);
  }

  public BusyException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "BUSY";
  }
}
