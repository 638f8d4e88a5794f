// SPDX-License-Identifier: Apache-2.0
/**
 * Watcher: the event stream (docs/protocol.md "Watch"), read with XREAD on the leader, as an
 * async iterator.
 *
 * Each event is delivered once, in id order: every read asks for the entries after the last
 * id handed out (lastId), so a read resent to a new leader after a fail-over or a lost
 * connection picks up exactly there, and a new watcher started `from: w.lastId` resumes
 * another's stream on any node. `from: "$"` (events after now) is turned into the newest id
 * once, before the first read, because resending "$" after a lost answer would skip what
 * happened meanwhile. An unreachable cluster is retried until stop(). When the events after
 * the needed id are gone the iteration throws CompactedError (.oldest, .after): reload the
 * state, then watch again from its .after. Never a silent gap, never back.
 */
import type { Client } from './client';
import { Cmd, asMap, now, sleep } from './conn';
import { AbortError, ProtocolError, UnavailableError } from './errors';

const STREAM = 'fencelock:events';

export interface WatchOptions {
  /** The id to read after; "$" (default): only events after now. */
  from?: string;
  /** Ends the iteration (as stop()). */
  signal?: AbortSignal;
  /** Entries per read, and how long one read blocks on the server (ms). */
  count?: number;
  blockMs?: number;
}

/** One entry: id "<rev>-<n>", type (put, del, grant, ...), name ("" for session events). */
export interface WatchEvent {
  id: string;
  type: string;
  name: string;
  rev: number;
  fields: Record<string, string>;
}

export class Watcher implements AsyncIterable<WatchEvent>, AsyncDisposable {
  /** The id of the last event handed out (where a new watcher resumes). */
  lastId: string;
  private readonly stream: string;
  private readonly ac = new AbortController();
  private readonly count: number;
  private readonly blockMs: number;

  /** @internal use Client.watch() */
  constructor(
    private readonly client: Client,
    prefix: string,
    o: WatchOptions,
  ) {
    this.stream = prefix ? `${STREAM}:${prefix}` : STREAM;
    this.lastId = o.from ?? '$';
    this.count = o.count ?? 1000;
    this.blockMs = o.blockMs ?? 500;
    if (o.signal) {
      if (o.signal.aborted) this.stop();
      else o.signal.addEventListener('abort', () => this.stop(), { once: true });
    }
  }

  get stopped(): boolean {
    return this.ac.signal.aborted;
  }

  /** End the iteration (a read in flight is abandoned at once). */
  stop(): void {
    this.ac.abort();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.stop();
  }

  /**
   * Turn "$" into the newest id now (the first read does it otherwise): after this resolves,
   * every event later than this call is delivered. Resolves to lastId.
   */
  async ready(): Promise<string> {
    await this.resolve();
    return this.lastId;
  }

  private async resolve(): Promise<void> {
    if (this.lastId !== '$') return;
    const info = asMap(await this.client._call(new Cmd('XINFO', 'STREAM', this.stream), { signal: this.ac.signal }));
    const id = info?.['last-generated-id'];
    this.lastId = typeof id === 'string' && id ? id : '0-0';
  }

  /** One XREAD after lastId: the events (empty when the block ran out). */
  private async read(): Promise<WatchEvent[]> {
    await this.resolve();
    const cmd = new Cmd('XREAD', 'COUNT', this.count, 'BLOCK', this.blockMs, 'STREAMS', this.stream, this.lastId);
    cmd.blockEnd = now() + this.blockMs;
    const r = await this.client._call(cmd, {
      deadline: now() + this.blockMs + this.client.timeoutMs,
      signal: this.ac.signal,
    });
    if (r === null) return [];
    if (!Array.isArray(r) || !Array.isArray(r[0]) || !Array.isArray(r[0][1])) {
      throw new ProtocolError('XREAD: unexpected reply');
    }
    return (r[0][1] as unknown[]).map((entry) => {
      const [id, kv] = entry as [string, unknown[]];
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < kv.length; i += 2) f[String(kv[i])] = String(kv[i + 1]);
      return { id: String(id), type: f.type ?? '', name: f.name ?? '', rev: Number(String(id).split('-')[0]), fields: f };
    });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    while (!this.stopped) {
      let evs: WatchEvent[];
      try {
        evs = await this.read();
      } catch (e) {
        if (this.stopped && e instanceof AbortError) return;
        if (e instanceof UnavailableError && !(e.word === 'TLS')) {
          await sleep(100, this.ac.signal); // the cluster is unreachable: retry until stop()
          continue;
        }
        throw e;
      }
      for (const ev of evs) {
        if (this.stopped) return;
        this.lastId = ev.id;
        yield ev;
      }
    }
  }
}
