// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** No such key, or nobody leads that election. */
public class NotFoundException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public NotFoundException(String message) {
    super(message);
  }

  public NotFoundException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "NOTFOUND";
  }
}
