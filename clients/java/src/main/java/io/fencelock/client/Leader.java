// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * An election's state (ELECT.LEADER, ELECT.OBSERVE): sid 0 when nobody leads. compacted: the
 * servers' history did not reach back to the asked revision, so changes in between may have
 * been skipped (this is the current state).
 */
public record Leader(long sid, long token, byte[] value, long sinceRev, long rev, boolean compacted) {
  static Leader of(Object reply) {
    Map<String, Object> m = Resp.map(reply);
    Object v = m.get("value");
    return new Leader(
        Resp.num(m.getOrDefault("sid", 0L)),
        Resp.num(m.getOrDefault("token", 0L)),
        v instanceof byte[] ? (byte[]) v : new byte[0],
        Resp.num(m.getOrDefault("since_rev", 0L)),
        Resp.num(m.getOrDefault("rev", 0L)),
        Resp.num(m.getOrDefault("compacted", 0L)) == 1);
  }

  public String valueString() {
    return new String(value, StandardCharsets.UTF_8);
  }
}
