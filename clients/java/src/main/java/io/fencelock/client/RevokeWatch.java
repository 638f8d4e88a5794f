// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.function.Consumer;

/**
 * What {@link Session#onRevoke} returned: a daemon thread that reads the lock's events from
 * the grant on (so a request made before its first read is not missed) and calls the listener
 * for each revoke request of that grant, until {@link #close()} or the end of the session.
 * {@link #error()} is what ended it otherwise (PermissionException: the user may not read the
 * event stream).
 */
public final class RevokeWatch implements AutoCloseable {
  private static final long BLOCK_MS = 500;
  private final Session session;
  private final String name;
  private final long token;
  private final Consumer<Revoke> listener;
  private final Thread thread;
  private volatile boolean stopped;
  private volatile Watch watch;
  private volatile FencelockException error;

  RevokeWatch(Session session, String name, long token, Consumer<Revoke> listener) {
    this.session = session;
    this.name = name;
    this.token = token;
    this.listener = listener;
    this.thread = new Thread(this::run, "fencelock-revoke-" + session.sid());
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    Watch w = session.client().watch(name, Math.max(token - 1, 0) + "-0");
    watch = w;
    while (!stopped && !session.isLost()) {
      try {
        for (Event ev : w.read(BLOCK_MS)) {
          Revoke rv = Revoke.of(ev, name, session.sid(), token);
          if (rv != null && !stopped) {
            listener.accept(rv);
          }
        }
      } catch (CompactedException e) { // go on from the oldest retained
        w.stop();
        w = session.client().watch(name, e.after());
        watch = w;
      } catch (UnavailableException e) {
        sleep();
      } catch (FencelockException e) {
        error = e;
        return;
      }
    }
  }

  private static void sleep() {
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Why the watch ended by itself, or null. */
  public FencelockException error() {
    return error;
  }

  /** Stop: the listener is not called after this returns (unless called from it). */
  @Override
  public void close() {
    stopped = true;
    Watch w = watch;
    if (w != null) {
      w.stop();
    }
    if (Thread.currentThread() != thread) {
      try {
        thread.join(BLOCK_MS + 5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
