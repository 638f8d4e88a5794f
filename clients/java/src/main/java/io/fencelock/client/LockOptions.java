// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * How an exclusive lock is asked for ({@link Session#acquire(String, Duration, LockOptions)}):
 * with NOTIFY, with a value the grant carries ({@code LOCK ... VALUE v}: who holds it, on which
 * host, for which job; shown by {@link FencelockClient#lockState} and the grant event) and with
 * a max hold ({@code LOCK ... MAXHOLD ms}: the servers end the grant that long after they made
 * it, even if the session lives on, as an expiry would). Immutable: each method returns a new
 * value. A retry by the holder changes neither value nor max hold: unlock and lock again.
 */
public final class LockOptions {
  final boolean notify;
  final byte[] value;
  final long maxHoldMs;

  private LockOptions(boolean notify, byte[] value, long maxHoldMs) {
    this.notify = notify;
    this.value = value;
    this.maxHoldMs = maxHoldMs;
  }

  /** A plain LOCK. */
  public static LockOptions none() {
    return new LockOptions(false, null, 0);
  }

  /** LOCK ... NOTIFY: the holder the request queues behind is told ({@link Session#onWaiter}). */
  public LockOptions notifyHolder() {
    return new LockOptions(true, value, maxHoldMs);
  }

  /** LOCK ... VALUE v (bytes, at most the servers' --max-lock-value). */
  public LockOptions value(byte[] v) {
    return new LockOptions(notify, v.clone(), maxHoldMs);
  }

  /** LOCK ... VALUE v as UTF-8. */
  public LockOptions value(String v) {
    return value(v.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * LOCK ... MAXHOLD: at least 1 ms (the servers' --min-max-hold, 1 s by default, is checked
   * there). {@link Session#maxHoldDeadline} is then the local deadline.
   */
  public LockOptions maxHold(Duration d) {
    if (d.toMillis() < 1) {
      throw new IllegalArgumentException("a max hold must be at least 1 ms");
    }
    return new LockOptions(notify, value, d.toMillis());
  }

  void addTo(Cmd cmd) {
    if (notify) {
      cmd.add("NOTIFY");
    }
    if (value != null && value.length > 0) {
      cmd.add("VALUE", value);
    }
    if (maxHoldMs > 0) {
      cmd.add("MAXHOLD", maxHoldMs);
    }
  }
}
