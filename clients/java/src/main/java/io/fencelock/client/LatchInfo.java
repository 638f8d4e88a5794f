// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A latch's or barrier's state ({@link FencelockClient#latchInfo}, LATCH.INFO): type {@code
 * latch} or {@code barrier}; state (a latch: counting, zero, broken; a barrier: filling, full,
 * broken); its count; remaining (a latch: counts left; a barrier: sessions to come, or still
 * inside once full); the participants' sids, ascending; per joiner whether it counted down; the
 * session whose end broke it (0 if not broken).
 */
public record LatchInfo(
    String type,
    String state,
    long count,
    long remaining,
    List<Long> joiners,
    List<Boolean> counted,
    long brokenSid) {
  static LatchInfo of(Object reply) {
    Map<String, Object> m = Resp.map(reply);
    List<Long> joiners = new ArrayList<>();
    List<Boolean> counted = new ArrayList<>();
    if (m.get("joiners") instanceof List) {
      for (Object o : (List<?>) m.get("joiners")) {
        joiners.add(Resp.num(o));
      }
    }
    if (m.get("counted") instanceof List) {
      for (Object o : (List<?>) m.get("counted")) {
        counted.add(Resp.num(o) == 1);
      }
    }
    return new LatchInfo(
        Resp.str(m.getOrDefault("type", "")),
        Resp.str(m.getOrDefault("state", "")),
        Resp.num(m.getOrDefault("count", 0L)),
        Resp.num(m.getOrDefault("remaining", 0L)),
        List.copyOf(joiners),
        List.copyOf(counted),
        Resp.num(m.getOrDefault("broken_sid", 0L)));
  }
}
