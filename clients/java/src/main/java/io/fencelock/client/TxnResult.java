// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.List;

/**
 * A committed TXN's outcome (docs/protocol.md "TXN"): {@code succeeded} when THEN ran (every
 * compare held, or none was given), else ELSE ran; {@code revision} the store's revision after
 * the TXN (unchanged when the branch changed nothing); {@code results} one number per op of the
 * branch that ran, in order: a put's revision (the key's new mod_rev), a delete's count (0 or
 * 1), an incr's new value; null for a resend answered by a node that got the session's request
 * table from a snapshot (the branch and revision are still the first ones).
 */
public record TxnResult(boolean succeeded, long revision, List<Long> results) {
  /** Whether the per-op results are known (see the class comment). */
  public boolean resultsKnown() {
    return results != null;
  }
}
