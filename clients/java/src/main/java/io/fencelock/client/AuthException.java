// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The credentials were refused or missing ({@code -WRONGPASS}, {@code -NOAUTH}). Not retried. */
public class AuthException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public AuthException(String message) {
    super(message);
  }

  public AuthException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "AUTH";
  }
}
