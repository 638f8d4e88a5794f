// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A lock's state ({@link FencelockClient#lockState}, LOCK.INFO): the exclusive holder (sid 0
 * if none: free, held shared or in lock-delay) and its token, the mode, the queue, the
 * exclusive grant's value and max hold (0: none), the lock record's transitions (exclusive
 * grants that ended: 0 for its first holder) and the holder's count (a reentrant session's
 * holds, 1 for any other holder, 0 without an exclusive holder).
 */
public record LockInfo(
    long holder,
    long token,
    long heldSinceMs,
    boolean lockDelay,
    String mode,
    List<Long> waiters,
    byte[] value,
    long maxHoldMs,
    long transitions,
    long count) {
  static LockInfo of(Object reply) {
    Map<String, Object> m = Resp.map(reply);
    List<Long> waiters = new ArrayList<>();
    if (m.get("waiters") instanceof List) {
      for (Object o : (List<?>) m.get("waiters")) {
        waiters.add(Resp.num(o));
      }
    }
    Object v = m.get("value");
    long holder = Resp.num(m.getOrDefault("holder", 0L));
    // only a reentrant holder's count is sent
    long count = m.containsKey("count") ? Resp.num(m.get("count")) : holder != 0 ? 1 : 0;
    return new LockInfo(
        holder,
        Resp.num(m.getOrDefault("token", 0L)),
        Resp.num(m.getOrDefault("held_since_ms", 0L)),
        Resp.num(m.getOrDefault("lockdelay", 0L)) == 1,
        Resp.str(m.getOrDefault("mode", "")),
        List.copyOf(waiters),
        v instanceof byte[] ? (byte[]) v : new byte[0],
        Resp.num(m.getOrDefault("max_hold_ms", 0L)),
        Resp.num(m.getOrDefault("transitions", 0L)),
        count);
  }

  /** The value as UTF-8 text ("" if none). */
  public String valueString() {
    return new String(value, StandardCharsets.UTF_8);
  }
}
