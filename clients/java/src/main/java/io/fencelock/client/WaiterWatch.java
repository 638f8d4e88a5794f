// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.function.Consumer;

/**
 * What {@link Session#onWaiter} returned: a {@link GrantWatch} that calls the listener for each
 * session that queued with NOTIFY behind that grant, until {@link #close()} or the end of the
 * session.
 */
public final class WaiterWatch extends GrantWatch {
  WaiterWatch(Session session, String name, long token, Consumer<Waiter> listener) {
    super(
        session,
        name,
        token,
        "waiter",
        ev -> {
          Waiter w = Waiter.of(ev, name, token);
          if (w != null) {
            listener.accept(w);
          }
        });
  }
}
