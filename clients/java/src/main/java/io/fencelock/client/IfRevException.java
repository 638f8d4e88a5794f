// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** An {@code IFREV} condition did not hold ({@code -IFREV}); nothing changed. */
public class IfRevException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public IfRevException(String message) {
    super(message);
  }

  public IfRevException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "IFREV";
  }
}
