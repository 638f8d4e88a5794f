// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.function.Consumer;

/**
 * A daemon thread that reads a lock's events from one grant on (so an event written before its
 * first read is not missed) and hands each to a consumer, until {@link #close()} or the end of
 * the session: what {@link Session#onRevoke} and {@link Session#onWaiter} return.
 * {@link #error()} is what ended it otherwise (PermissionException: the user may not read the
 * event stream).
 */
public abstract class GrantWatch implements AutoCloseable {
  private static final long BLOCK_MS = 500;
  private final Session session;
  private final String name;
  private final long token;
  private final Consumer<Event> deliver;
  private final Thread thread;
  private volatile boolean stopped;
  private volatile Watch watch;
  private volatile FencelockException error;

  GrantWatch(Session session, String name, long token, String what, Consumer<Event> deliver) {
    this.session = session;
    this.name = name;
    this.token = token;
    this.deliver = deliver;
    this.thread = new Thread(this::run, "fencelock-" + what + "-" + session.sid());
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    Watch w = session.client().watch(name, Math.max(token - 1, 0) + "-0");
    watch = w;
    while (!stopped && !session.isLost()) {
      try {
        for (Event ev : w.read(BLOCK_MS)) {
          if (!stopped) {
            deliver.accept(ev);
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
