// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One grant of a lock, semaphore or election ({@link FencelockClient#lockHistory},
 * LOCK.HISTORY; docs/protocol.md "Lock history"): the kind, the grantee's session with its name
 * and owner, the lock's value at the grant, the token (the revision it was granted at), the
 * permits (a semaphore's; 1 otherwise), when it was granted and how long the grantee had
 * waited, when and how it ended ({@code endedRev} 0 and {@code endedBy} "" while held: else
 * unlock, release, resign, expiry, session-close, session-revoke, revoke, upgrade, or the op
 * that ended it), how long it was held, and the sessions queued at the grant (the total and
 * the first few). Times are the leaders' wall clocks (ms since the epoch) the entries carry.
 */
public record HistoryEntry(
    String kind,
    long sid,
    String sessionName,
    String user,
    String value,
    long token,
    long permits,
    long grantedMs,
    long waitedMs,
    long endedRev,
    long endedMs,
    String endedBy,
    long heldMs,
    long waitersTotal,
    List<Waiting> waiters) {

  /** A session queued at the grant, and how long it had waited by then. */
  public record Waiting(long sid, long waitedMs) {}

  static HistoryEntry of(Object reply) {
    Map<String, Object> m = Resp.map(reply);
    List<Waiting> ws = new ArrayList<>();
    if (m.get("waiters") instanceof List) {
      for (Object o : (List<?>) m.get("waiters")) {
        Map<String, Object> w = Resp.map(o);
        ws.add(
            new Waiting(
                Resp.num(w.getOrDefault("session", 0L)),
                Resp.num(w.getOrDefault("waited_ms", 0L))));
      }
    }
    return new HistoryEntry(
        text(m, "kind"),
        Resp.num(m.getOrDefault("session", 0L)),
        text(m, "session_name"),
        text(m, "user"),
        text(m, "value"),
        Resp.num(m.getOrDefault("token", 0L)),
        Resp.num(m.getOrDefault("permits", 1L)),
        Resp.num(m.getOrDefault("granted_ms", 0L)),
        Resp.num(m.getOrDefault("waited_ms", 0L)),
        Resp.num(m.getOrDefault("ended_rev", 0L)),
        Resp.num(m.getOrDefault("ended_ms", 0L)),
        text(m, "ended_by"),
        Resp.num(m.getOrDefault("held_ms", 0L)),
        Resp.num(m.getOrDefault("waiters_total", 0L)),
        List.copyOf(ws));
  }

  private static String text(Map<String, Object> m, String k) {
    String s = Resp.str(m.get(k));
    return s == null ? "" : s;
  }
}
