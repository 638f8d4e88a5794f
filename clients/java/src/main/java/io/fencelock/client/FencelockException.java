// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * Base of everything the client throws on purpose. Each subclass is one word of the contract's
 * error vocabulary (tests/conformance/PROTOCOL.md "Error words", named after the protocol's
 * error replies, docs/protocol.md "Errors"); {@link #word()} gives that word. Unchecked, like
 * the JDK's own lock and concurrency exceptions.
 */
public class FencelockException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public FencelockException(String message) {
    super(message);
  }

  public FencelockException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The contract's error word: OTHER here, the subclass's word otherwise. */
  public String word() {
    return "OTHER";
  }

  /** N of "ERR TXN op N: ..." (a TXN's failing op), 0 for any other text. */
  private static int txnOp(String text) {
    String p = "ERR TXN op ";
    int colon = text.indexOf(':');
    if (!text.startsWith(p) || colon <= p.length()) {
      return 0;
    }
    try {
      return Math.max(0, Integer.parseInt(text.substring(p.length(), colon)));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * The exception for one error reply of a server ("STALE token 5 is not ..."): the first word
   * picks the type, the whole text is the message.
   */
  public static FencelockException fromReply(String text) {
    int sp = text.indexOf(' ');
    String w = sp < 0 ? text : text.substring(0, sp);
    switch (w) {
      case "NOSESSION":
        return new SessionLostException(text);
      case "NOTHOLDER":
        return new NotHolderException(text);
      case "STALE":
        return new StaleException(text);
      case "IFREV":
        return new IfRevException(text);
      case "TOOLARGE":
        return new TooLargeException(text);
      case "NOSPACE":
        return new NoSpaceException(text);
      case "WRONGPASS":
      case "NOAUTH":
        return new AuthException(text);
      case "NOPERM":
        return new PermissionException(text);
      case "WRONGTYPE":
        return new WrongTypeException(text);
      case "UNKNOWN":
        return new OutcomeUnknownException(text);
      case "COMPACTED":
        return CompactedException.ofReply(text);
      case "DEADLOCK":
        return new DeadlockException(text);
      case "BROKEN":
        return new BrokenException(text);
      case "ERR":
        int op = txnOp(text);
        return op > 0 ? new TxnOpException(text, op) : new ServerException(text);
      default:
        return new ServerException(text);
    }
  }
}
