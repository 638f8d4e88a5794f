// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.time.Duration;

/**
 * A request to a holder to let go of a lock (LOCK.REVOKE in docs/protocol.md): the
 * lock, the grant's token and session, the deadline counted from when the request applied on
 * the leader ({@code null}: asked only, never forced), the reason and who asked.
 */
public record Revoke(
    String name, long token, long sid, Duration deadline, String reason, String by) {

  /** The Revoke an event carries for that grant, or null for any other event. */
  static Revoke of(Event ev, String name, long sid, long token) {
    if (!"revoke-requested".equals(ev.type()) || !name.equals(ev.name())) {
      return null;
    }
    if (!String.valueOf(sid).equals(ev.fields().get("sid"))
        || !String.valueOf(token).equals(ev.fields().get("token"))) {
      return null;
    }
    long dl = Long.parseLong(ev.fields().getOrDefault("deadline_ms", "0"));
    return new Revoke(
        name,
        token,
        sid,
        dl == 0 ? null : Duration.ofMillis(dl),
        ev.fields().getOrDefault("reason", ""),
        ev.fields().getOrDefault("by", ""));
  }
}
