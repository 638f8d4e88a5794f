// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The outcome of a write is unknown: it was sent and its answer lost ({@code -UNKNOWN}, or the connection broke after the send), so it may have applied. Writes through a {@link Session} are resent with their {@code REQ sid seq} instead and end here only when their deadline passed after such a loss. */
public class OutcomeUnknownException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public OutcomeUnknownException(String message) {
    super(message);
  }

  public OutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "UNKNOWN";
  }
}
