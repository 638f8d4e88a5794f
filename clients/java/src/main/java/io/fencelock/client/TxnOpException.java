// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * A TXN refused because an op of the branch that ran cannot apply ({@code -ERR TXN op N: ...}:
 * an INCR of a value that is not a counter, or one that would overflow). {@link #op()} is its
 * place in the branch (1 = the first). Nothing of the TXN applied.
 */
public class TxnOpException extends ServerException {
  private static final long serialVersionUID = 1L;
  private final int op;

  public TxnOpException(String message, int op) {
    super(message);
    this.op = op;
  }

  /** The failing op's place in its branch, from 1. */
  public int op() {
    return op;
  }
}
