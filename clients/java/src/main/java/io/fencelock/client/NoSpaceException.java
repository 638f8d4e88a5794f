// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** A server quota is full ({@code -NOSPACE}); nothing applied. */
public class NoSpaceException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public NoSpaceException(String message) {
    super(message);
  }

  public NoSpaceException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "NOSPACE";
  }
}
