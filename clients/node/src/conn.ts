// SPDX-License-Identifier: Apache-2.0
/**
 * Connections and the call path: the endpoints, the known leader, a pool of ioredis
 * connections per address, redirects, reconnects and retries. The rules are libfencelock's
 * (src/client/conn.c; docs/client.md "Fail-over, retries and exactly-once"):
 *
 * - a call has a deadline; within it -NOTLEADER is followed, -NOLEADER waited out, other
 *   endpoints tried, with a short backoff once every address failed in a row;
 * - a call made with retry (reads, and writes that carry `REQ sid seq`) is resent after a lost
 *   answer or -UNKNOWN: the servers answer a repeated (sid, seq) from their cache;
 * - a call made without retry (a write without a session) is sent once: a lost answer or
 *   -UNKNOWN throws OutcomeUnknownError;
 * - a server that does not answer within connectTimeoutMs (plus the time the command may
 *   block) is treated as gone (a SIGSTOPped leader accepts connections but never answers), and
 *   a blocked wait is abandoned as soon as another call learns of a different leader.
 *
 * Resending is this module's decision alone. Every ioredis connection is made with
 * `retryStrategy: () => null` (a broken connection is never reconnected by ioredis, its
 * commands are rejected, and it is dropped from the pool), `autoResendUnfulfilledCommands:
 * false`, `enableOfflineQueue: false` and `maxRetriesPerRequest: 0`, so ioredis never sends a
 * command a second time behind the library's back (test/fake.test.js checks it).
 *
 * Ownership: a connection is used by one call at a time: taken out of the pool for the call,
 * put back after a complete reply (replies leave a connection in request order, so a blocked
 * LOCK ... WAIT must not hold up a keepalive). A connection whose reply was abandoned is
 * disconnected, never reused. Pool.close() disconnects every connection it made.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import Redis, { ReplyError } from 'ioredis';
import {
  AbortError,
  AuthError,
  FencelockError,
  OutcomeUnknownError,
  TlsError,
  UnavailableError,
  fromReply,
} from './errors';

const BACKOFF_MIN = 10;
// the longest pause between rounds over the endpoints; short, so that a call reaches a follower
// waiting for the new leader soon after the dead one is given up (docs/client.md), ~20 rounds/s
const BACKOFF_MAX = 50;
const WAIT_SLICE = 100; // how often a long wait checks whether the leader moved
const QUICK_REDIRECTS = 3;
const POOL_MAX = 16; // idle connections kept per address

/** The monotonic clock of the client, in milliseconds (performance.now()). */
export const now = (): number => performance.now();

/** TLS settings: file paths (PEM). `serverName`: the name checked instead of the host. */
export interface TlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
  serverName?: string;
}

export interface PoolOptions {
  username?: string;
  password?: string;
  tls?: TlsOptions | boolean;
  timeoutMs: number;
  connectTimeoutMs: number;
}

/** [host, port] of "host:port" or "[v6]:port"; throws on a malformed address. */
export function splitAddr(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  const host = addr.slice(0, i);
  const port = addr.slice(i + 1);
  if (i <= 0 || !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw new TypeError(`not a host:port: ${JSON.stringify(addr)}`);
  }
  return [host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, Number(port)];
}

/** One command's arguments. A command with a WAIT asks, on every resend, for the wait left. */
export class Cmd {
  readonly argv: (string | number | Buffer)[];
  private waitIdx = -1;
  private waitEnd = 0;
  blockEnd = -1; // monotonic end of a server-side block (XREAD BLOCK, ELECT.OBSERVE WAIT)

  constructor(...args: (string | number | Buffer)[]) {
    this.argv = args;
  }

  /** Append `WAIT ms` for a wait that ends at `end` (monotonic ms). */
  wait(end: number): this {
    this.argv.push('WAIT', 1);
    this.waitIdx = this.argv.length - 1;
    this.waitEnd = end;
    return this;
  }

  add(...args: (string | number | Buffer)[]): this {
    this.argv.push(...args);
    return this;
  }

  /** [argv, ms the server may legitimately hold the reply back]. */
  render(): [(string | number | Buffer)[], number] {
    if (this.waitIdx >= 0) {
      const left = this.waitEnd - now();
      this.argv[this.waitIdx] = Math.max(1, Math.floor(left));
      return [this.argv, Math.max(0, left)];
    }
    if (this.blockEnd >= 0) return [this.argv, Math.max(0, this.blockEnd - now())];
    return [this.argv, 0];
  }
}

/** The connection failed, or its reply was abandoned, after the command was (maybe) sent. */
class Lost extends Error {
  constructor(
    message: string,
    readonly cancelled = false,
  ) {
    super(message);
  }
}

export interface CallOptions {
  deadline?: number; // monotonic ms; default now + timeoutMs
  retry?: boolean; // default true
  anynode?: boolean; // any node may answer (not a leader-only command)
  signal?: AbortSignal; // cancels the call: AbortError
}

interface State {
  why: string;
  unknown: boolean;
  tls: boolean;
}

const RETRY = Symbol('retry');

function isTlsFailure(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? '';
  const msg = (e as Error)?.message ?? '';
  return (
    /CERT|SELF_SIGNED|ERR_TLS|ERR_SSL|UNABLE_TO|HOSTNAME|ALTNAME/.test(code) ||
    /certificate|ssl|tls|altnames|Hostname\/IP/i.test(msg)
  );
}

/** Resolves after ms, or at once when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A RESP2 flat array [k, v, k, v, ...] as an object with string keys; null stays null. */
export function asMap(r: unknown): Record<string, unknown> | null {
  if (r === null || r === undefined) return null;
  if (!Array.isArray(r)) return r as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < r.length; i += 2) out[String(r[i])] = r[i + 1];
  return out;
}

export class Pool {
  readonly endpoints: string[];
  private leader: string | null = null;
  private nextEp = 0;
  private readonly idle = new Map<string, Redis[]>();
  private readonly all = new Set<Redis>();
  private membersLearned = false;
  private closed = false;
  private readonly tlsConn: ConnectionOptions | null;

  constructor(
    endpoints: string[] | string,
    readonly opts: PoolOptions,
  ) {
    const eps = typeof endpoints === 'string' ? endpoints.split(',') : [...endpoints];
    this.endpoints = eps.map((e) => e.trim()).filter((e) => e);
    if (this.endpoints.length === 0) throw new TypeError('no endpoints');
    for (const e of this.endpoints) splitAddr(e);
    this.tlsConn = Pool.tlsConnection(opts.tls);
  }

  /** The ioredis `tls` option: files read once, here (a file that does not load throws). */
  private static tlsConnection(t: TlsOptions | boolean | undefined): ConnectionOptions | null {
    if (!t) return null;
    if (t === true) return { rejectUnauthorized: true };
    const o: ConnectionOptions = { rejectUnauthorized: true };
    if (t.ca) o.ca = readFileSync(t.ca);
    if (t.cert) o.cert = readFileSync(t.cert);
    if (t.key) o.key = readFileSync(t.key);
    if (t.serverName) {
      const name = t.serverName;
      if (!isIP(name)) o.servername = name; // SNI carries DNS names only
      o.checkServerIdentity = (_host, cert) => checkServerIdentity(name, cert);
    }
    return o;
  }

  // ---- bookkeeping ----
  pick(): string {
    if (this.leader) return this.leader;
    return this.endpoints[this.nextEp++ % this.endpoints.length];
  }

  setLeader(addr: string): void {
    try {
      splitAddr(addr);
    } catch {
      this.leader = null;
      return;
    }
    this.leader = addr;
    if (!this.endpoints.includes(addr)) this.endpoints.push(addr);
  }

  leaderFailed(addr: string): void {
    if (this.leader === addr) this.leader = null;
  }

  leaderMoved(addr: string): boolean {
    return this.leader !== null && this.leader !== addr;
  }

  knownLeader(): string | null {
    return this.leader;
  }

  // ---- connections ----
  private async newConn(addr: string, deadline: number): Promise<Redis> {
    const [host, port] = splitAddr(addr);
    const budget = Math.max(1, Math.min(this.opts.connectTimeoutMs, deadline - now()));
    const r = new Redis({
      host,
      port,
      lazyConnect: true,
      connectTimeout: Math.ceil(budget),
      // Never let ioredis resend or queue: a resend is this module's decision (see above).
      retryStrategy: () => null,
      reconnectOnError: () => false,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false, // its INFO parsing is Redis's, not fencelockd's
      ...(this.tlsConn ? { tls: { ...this.tlsConn } } : {}),
    });
    let lastErr: unknown = null;
    r.on('error', (e: unknown) => {
      lastErr = e;
    });
    this.all.add(r);
    r.once('end', () => this.all.delete(r));
    try {
      await withTimeout(r.connect(), budget + 50, 'connect timed out');
    } catch (e) {
      r.disconnect();
      throw lastErr ?? e;
    }
    if (this.opts.password !== undefined) {
      // AUTH may take long (the server hashes the password, and delays a wrong one): bounded
      // by the call's deadline, as libfencelock's conn_auth.
      const args = this.opts.username ? [this.opts.username, this.opts.password] : [this.opts.password];
      try {
        await sendOn(r, ['AUTH', ...args], Math.max(now() + budget, deadline), null, null);
      } catch (e) {
        r.disconnect();
        if (e instanceof ReplyError) {
          const err = fromReply(String((e as Error).message));
          if (err instanceof AuthError) throw err;
          throw new Lost(`AUTH: ${(e as Error).message}`); // -TRYAGAIN: another node, later
        }
        throw e;
      }
    }
    return r;
  }

  private async get(addr: string, deadline: number): Promise<[Redis, boolean]> {
    const lst = this.idle.get(addr);
    while (lst && lst.length > 0) {
      const c = lst.pop()!;
      if (c.status === 'ready') return [c, false];
      c.disconnect();
    }
    return [await this.newConn(addr, deadline), true];
  }

  private put(addr: string, c: Redis): void {
    if (this.closed || c.status !== 'ready') {
      c.disconnect();
      return;
    }
    let lst = this.idle.get(addr);
    if (!lst) this.idle.set(addr, (lst = []));
    if (lst.length < POOL_MAX) lst.push(c);
    else c.disconnect();
  }

  close(): void {
    this.closed = true;
    for (const c of this.all) c.disconnect();
    this.all.clear();
    this.idle.clear();
  }

  /** Learn the members' client addresses once (best effort). */
  private async learnMembers(c: Redis, until: number): Promise<void> {
    if (this.membersLearned) return;
    this.membersLearned = true;
    try {
      const r = await sendOn(c, ['CLUSTER.MEMBERS'], until, null, null);
      for (const m of (r as unknown[]) ?? []) {
        const a = asMap(m)?.client_address;
        if (a && typeof a === 'string' && !this.endpoints.includes(a)) {
          try {
            splitAddr(a);
            this.endpoints.push(a);
          } catch {
            /* not an address: ignore */
          }
        }
      }
    } catch (e) {
      this.membersLearned = false;
      if (e instanceof ReplyError) return; // -NOAUTH, -NOPERM: the command will say so
      throw e instanceof Lost ? e : new Lost('CLUSTER.MEMBERS failed');
    }
  }

  // ---- the call path ----
  private async attempt(
    cmd: Cmd,
    deadline: number,
    o: CallOptions,
    state: State,
  ): Promise<unknown | typeof RETRY> {
    const addr = this.pick();
    let c: Redis;
    let fresh: boolean;
    try {
      [c, fresh] = await this.get(addr, deadline);
    } catch (e) {
      if (e instanceof AuthError) throw e;
      this.leaderFailed(addr);
      state.why = `connect ${addr}: ${(e as Error).message}`;
      if (isTlsFailure(e)) state.tls = true; // until a handshake succeeds: a late timeout does not hide it
      return RETRY; // nothing was sent
    }
    state.tls = false;
    if (fresh) {
      try {
        await this.learnMembers(c, Math.min(now() + this.opts.connectTimeoutMs, deadline));
      } catch (e) {
        c.disconnect();
        this.leaderFailed(addr);
        state.why = `${addr}: ${(e as Error).message}`;
        return RETRY; // nothing of cmd was sent: any call may try again
      }
    }
    const [argv, block] = cmd.render();
    const until = Math.min(deadline, now() + this.opts.connectTimeoutMs + block);
    let reply: unknown;
    try {
      reply = await sendOn(c, argv, until, block > WAIT_SLICE ? () => this.leaderMoved(addr) : null, o.signal ?? null);
    } catch (e) {
      if (e instanceof ReplyError) {
        this.put(addr, c);
        return this.onError(addr, String((e as Error).message), o.retry !== false, state);
      }
      c.disconnect();
      if (e instanceof Lost && e.cancelled) throw new AbortError(`${argv[0]} cancelled`, { cause: o.signal?.reason });
      this.leaderFailed(addr);
      state.why = `${addr}: ${(e as Error).message}`;
      if (o.retry !== false) return RETRY;
      throw new OutcomeUnknownError(`${addr}: no answer to ${argv[0]}: outcome unknown (${(e as Error).message})`);
    }
    this.put(addr, c);
    if (!o.anynode) this.setLeader(addr); // it answered a leader-only command
    return reply;
  }

  private onError(addr: string, text: string, retry: boolean, state: State): typeof RETRY {
    const sp = text.indexOf(' ');
    const word = sp < 0 ? text : text.slice(0, sp);
    const rest = sp < 0 ? '' : text.slice(sp + 1).trim();
    state.why = `${addr}: ${text}`;
    switch (word) {
      case 'NOTLEADER':
        this.setLeader(rest.split(' ')[0]);
        return RETRY;
      case 'NOLEADER':
      case 'TRYAGAIN':
        this.leaderFailed(addr);
        return RETRY;
      case 'SLOWREADER':
        return RETRY; // the server closed that connection; read on from the same id
      case 'UNKNOWN':
        state.unknown = true;
        if (retry) return RETRY;
        throw new OutcomeUnknownError(text);
    }
    throw fromReply(text);
  }

  /** The reply of cmd by its deadline. */
  async call(cmd: Cmd, o: CallOptions = {}): Promise<unknown> {
    const deadline = o.deadline ?? now() + this.opts.timeoutMs;
    let backoff = BACKOFF_MIN;
    let quick = 0;
    const state: State = { why: '', unknown: false, tls: false };
    for (;;) {
      if (this.closed) throw new FencelockError('client closed');
      if (o.signal?.aborted) throw new AbortError(`${cmd.argv[0]} cancelled`, { cause: o.signal.reason });
      if (now() >= deadline) {
        const msg = `deadline passed; last: ${state.why || 'no answer'}`;
        if (state.unknown) throw new OutcomeUnknownError(msg);
        if (state.tls) throw new TlsError(msg);
        throw new UnavailableError(msg);
      }
      const had = this.knownLeader() !== null;
      const r = await this.attempt(cmd, deadline, o, state);
      if (r !== RETRY) return r;
      if (!had && this.knownLeader() !== null && quick < QUICK_REDIRECTS) {
        quick++;
        continue;
      }
      await sleep(Math.min(backoff, deadline - now()), o.signal);
      backoff = Math.min(backoff * 2, BACKOFF_MAX);
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Lost(what)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * Send argv on c and wait for its reply until `until` (monotonic ms): the reply, a ReplyError,
 * or Lost (no reply in time, the leader moved, cancelled, the connection broke).
 */
function sendOn(
  c: Redis,
  argv: (string | number | Buffer)[],
  until: number,
  moved: (() => boolean) | null,
  signal: AbortSignal | null,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(t);
      if (iv) clearInterval(iv);
      signal?.removeEventListener('abort', onAbort);
      f();
    };
    const t = setTimeout(() => finish(() => reject(new Lost('no reply in time'))), Math.max(0, until - now()));
    const iv = moved
      ? setInterval(() => {
          if (moved()) finish(() => reject(new Lost('abandoned: the leader moved')));
        }, WAIT_SLICE)
      : null;
    const onAbort = () => finish(() => reject(new Lost('cancelled', true)));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    c.call(String(argv[0]), ...argv.slice(1)).then(
      (r) => finish(() => resolve(r)),
      (e: unknown) =>
        finish(() => reject(e instanceof ReplyError ? e : new Lost((e as Error)?.message ?? String(e)))),
    );
  });
}
