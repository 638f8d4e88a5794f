// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** No leader was reached before the call's deadline; a call that carried {@code REQ sid seq} applied nothing (a write without a session whose answer was lost is an {@link OutcomeUnknownException} instead). */
public class UnavailableException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public UnavailableException(String message) {
    super(message);
  }

  public UnavailableException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "UNAVAILABLE";
  }
}
