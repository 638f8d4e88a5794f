// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The name is a lock, semaphore or election of another kind ({@code -WRONGTYPE}). */
public class WrongTypeException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public WrongTypeException(String message) {
    super(message);
  }

  public WrongTypeException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "WRONGTYPE";
  }
}
