// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.time.Duration;

/**
 * A session that queued behind a held lock with NOTIFY ({@link Session#acquireNotify}; LOCK ...
 * NOTIFY in docs/protocol.md "Revocation"): the lock, the holder's grant it queued behind, the
 * waiting session and how long it said it would wait (waitTime).
 */
public record Waiter(String name, long token, long sid, Duration waitTime) {

  /** The Waiter a wait-notify event carries for that grant, or null for any other event. */
  static Waiter of(Event ev, String name, long token) {
    if (!"wait-notify".equals(ev.type()) || !name.equals(ev.name())) {
      return null;
    }
    if (!String.valueOf(token).equals(ev.fields().get("token"))) {
      return null;
    }
    return new Waiter(
        name,
        token,
        Long.parseLong(ev.fields().getOrDefault("sid", "0")),
        Duration.ofMillis(Long.parseLong(ev.fields().getOrDefault("wait_ms", "0"))));
  }
}
