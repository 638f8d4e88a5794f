// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A watcher of the event stream (docs/protocol.md "Watch"), read with XREAD on the leader.
 *
 * <p>Each event is delivered once, in id order: every read asks for the entries after the last
 * id handed out ({@link #lastId()}), so a read resent to a new leader after a fail-over or a
 * lost connection picks up exactly there, and {@code client.watch(prefix, w.lastId())} resumes
 * another watcher's stream on any node. "$" (from now) is turned into the newest id once,
 * before the first read, because resending "$" after a lost answer would skip what happened
 * meanwhile. When the events after the needed id are gone, {@link #read} throws {@link
 * CompactedException}: never a silent gap. One thread reads; {@link #stop()} may be called from
 * any thread and ends a blocked read within about 100 ms.
 */
public final class Watch implements AutoCloseable {
  static final String STREAM = "fencelock:events";
  private final FencelockClient client;
  private final String stream;
  private volatile String lastId;
  private final FencelockClient.Cancel cancel = new FencelockClient.Cancel();
  private final int count;

  Watch(FencelockClient client, String prefix, String fromId) {
    this.client = client;
    this.stream = prefix == null || prefix.isEmpty() ? STREAM : STREAM + ":" + prefix;
    this.lastId = fromId;
    this.count = 1000;
  }

  /** The id of the last event handed out (resume from it). */
  public String lastId() {
    return lastId;
  }

  public boolean isStopped() {
    return cancel.cancelled;
  }

  private void resolve() {
    if ("$".equals(lastId)) {
      Map<String, Object> m = Resp.map(client.call(new Cmd("XINFO", "STREAM", stream)));
      String id = Resp.str(m.get("last-generated-id"));
      lastId = id == null || id.isEmpty() ? "0-0" : id;
    }
  }

  /**
   * One XREAD after {@link #lastId()}, blocking up to blockMs on the servers: the events (empty
   * when none came, or once stopped).
   */
  public List<Event> read(long blockMs) {
    if (cancel.cancelled) {
      return Collections.emptyList();
    }
    try {
      resolve();
      long end = System.nanoTime() + blockMs * 1_000_000L;
      Cmd cmd =
          new Cmd("XREAD", "COUNT", count, "BLOCK", blockMs, "STREAMS", stream, lastId)
              .blockUntil(end);
      Object r = client.call(cmd, end + client.opts.timeoutMs * 1_000_000L, true, false, false, cancel);
      if (r == null) {
        return Collections.emptyList();
      }
      List<?> streams = (List<?>) r;
      List<?> entries = (List<?>) ((List<?>) streams.get(0)).get(1);
      List<Event> out = new ArrayList<>(entries.size());
      for (Object e : entries) {
        List<?> pair = (List<?>) e;
        String id = Resp.str(pair.get(0));
        Map<String, String> f = new LinkedHashMap<>();
        List<?> kv = (List<?>) pair.get(1);
        for (int i = 0; i + 1 < kv.size(); i += 2) {
          f.put(Resp.str(kv.get(i)), Resp.str(kv.get(i + 1)));
        }
        out.add(new Event(id, f.getOrDefault("type", ""), f.getOrDefault("name", ""), f));
      }
      if (!out.isEmpty()) {
        lastId = out.get(out.size() - 1).id();
      }
      return out;
    } catch (FencelockClient.Interrupted e) {
      return Collections.emptyList(); // stopped
    } catch (ClassCastException | IndexOutOfBoundsException e) {
      throw new ProtocolException("XREAD reply of an unexpected shape: " + e);
    }
  }

  /** End the watcher: a blocked read returns (empty) within about 100 ms. */
  public void stop() {
    cancel.cancelled = true;
  }

  @Override
  public void close() {
    stop();
  }
}
