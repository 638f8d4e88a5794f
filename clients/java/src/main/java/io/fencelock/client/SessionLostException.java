// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The session is lost, closed, expired or unknown to the servers ({@code -NOSESSION}): terminal; open a new session. */
public class SessionLostException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public SessionLostException(String message) {
    super(message);
  }

  public SessionLostException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "SESSION";
  }
}
