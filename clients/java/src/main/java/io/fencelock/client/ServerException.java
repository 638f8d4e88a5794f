// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** Any other error reply of a server ({@code -ERR ...}: syntax, a refused request). */
public class ServerException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public ServerException(String message) {
    super(message);
  }

  public ServerException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "OTHER";
  }
}
