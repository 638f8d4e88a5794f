// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/**
 * How a PUT or DEL applies: fenced by a lock's token, conditional on a revision, through a
 * session (exactly once, with {@code REQ sid seq}), leased to that session. Immutable: each
 * method returns a new value.
 */
public final class WriteOptions {
  final String fenceName;
  final long fenceToken;
  final Long ifRev;
  final Session session;
  final boolean lease;

  private WriteOptions(String fenceName, long fenceToken, Long ifRev, Session session, boolean lease) {
    this.fenceName = fenceName;
    this.fenceToken = fenceToken;
    this.ifRev = ifRev;
    this.session = session;
    this.lease = lease;
  }

  /** An unconditional write without a session (sent once). */
  public static WriteOptions none() {
    return new WriteOptions(null, 0, null, null, false);
  }

  /** Applies only while token is the current holder's token of lock name. */
  public static WriteOptions fenced(String name, long token) {
    return none().fence(name, token);
  }

  public WriteOptions fence(String name, long token) {
    return new WriteOptions(name, token, ifRev, session, lease);
  }

  /** Applies only if the key's mod_rev is rev (0: only if the key does not exist). */
  public WriteOptions ifRev(long rev) {
    return new WriteOptions(fenceName, fenceToken, rev, session, lease);
  }

  /** Through this session: exactly once, retried across fail-overs. */
  public WriteOptions session(Session s) {
    return new WriteOptions(fenceName, fenceToken, ifRev, s, lease);
  }

  /** The key is deleted when the session ends (needs {@link #session}). */
  public WriteOptions leased() {
    return new WriteOptions(fenceName, fenceToken, ifRev, session, true);
  }
}
