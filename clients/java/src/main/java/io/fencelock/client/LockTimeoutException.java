// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** A lock, permit or leadership was not granted within the wait (the session left the queue on the servers), or an observe saw no change within its wait. */
public class LockTimeoutException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public LockTimeoutException(String message) {
    super(message);
  }

  public LockTimeoutException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "TIMEOUT";
  }
}
