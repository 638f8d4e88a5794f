// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** A reply of a shape the client does not expect, or a malformed RESP stream. */
public class ProtocolException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public ProtocolException(String message) {
    super(message);
  }

  public ProtocolException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "OTHER";
  }
}
