// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.function.Consumer;

/**
 * What {@link Session#onRevoke} returned: a {@link GrantWatch} that calls the listener for each
 * revoke request of that grant, until {@link #close()} or the end of the session.
 */
public final class RevokeWatch extends GrantWatch {
  RevokeWatch(Session session, String name, long token, Consumer<Revoke> listener) {
    super(
        session,
        name,
        token,
        "revoke",
        ev -> {
          Revoke rv = Revoke.of(ev, name, session.sid(), token);
          if (rv != null) {
            listener.accept(rv);
          }
        });
  }
}
