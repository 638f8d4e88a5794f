// SPDX-License-Identifier: Apache-2.0
/**
 * Client: one per process is typical. Holds the endpoints, the known leader and a pool of
 * connections (conn.ts Pool), and offers the calls that need no session: reads (always safe to
 * resend), writes without a session (sent once: OutcomeUnknownError when the answer is lost),
 * fence checks, elections' leader and observe, watch. Writes that must apply exactly once go
 * through a Session (session.ts). close() disconnects every connection the client made;
 * close the sessions first.
 */
import { type CallOptions, Cmd, Pool, type TlsOptions, asMap, now } from './conn';
import { ProtocolError, StaleError } from './errors';
import { type Fence, Hold, Session, type SessionOptions } from './session';
import { Watcher, type WatchOptions } from './watch';

export interface ClientOptions {
  /** "host:port,host:port" or a list: any members; the others are learned. */
  endpoints: string | string[];
  /** AUTH credentials (servers with --acl-file), sent on every new connection. */
  username?: string;
  password?: string;
  /** TLS: true (the system's CAs) or PEM file paths; the server name is checked. */
  tls?: TlsOptions | boolean;
  /** Each call's deadline, ms (a wait gets its wait plus this). Default 5000. */
  timeoutMs?: number;
  /** A server that does not answer within it is treated as gone, ms. Default 1000. */
  connectTimeoutMs?: number;
  /** What a session's safe deadline keeps back: ms, and parts per million of the TTL for
   * the two machines' clock rates. Defaults 10 and 10000 (1 %). */
  marginMs?: number;
  driftPpm?: number;
}

/** An election's state (ELECT.LEADER / ELECT.OBSERVE): sid 0 when nobody leads. */
export interface LeaderInfo {
  sid: number;
  token: number;
  value: string;
  sinceRev: number;
  rev: number;
  /** ELECT.OBSERVE only: changes between the AFTER revision and this one may be skipped. */
  compacted: boolean;
}

export interface KeyValue {
  value: string;
  createRev: number;
  modRev: number;
  version: number;
  lease: number;
}

export interface WriteOptions {
  /** Apply only while this token is the current holder's (StaleError otherwise). */
  fence?: Fence;
  /** Apply only if the key's mod_rev is this (0: only if absent; IfRevError otherwise). */
  ifRev?: number;
  /** Through this session: REQ sid seq, resent until its outcome is known, applied once. */
  session?: Session;
  /** PUT only: the key is deleted when the session ends (needs `session`). */
  lease?: boolean;
}

function leaderInfo(r: unknown): LeaderInfo {
  const d = asMap(r) ?? {};
  return {
    sid: Number(d.sid ?? 0),
    token: Number(d.token ?? 0),
    value: String(d.value ?? ''),
    sinceRev: Number(d.since_rev ?? 0),
    rev: Number(d.rev ?? 0),
    compacted: Number(d.compacted ?? 0) === 1,
  };
}

function fenceArgs(f: Fence): [string, number] {
  if (f instanceof Hold) return [f.name, f.token];
  if (Array.isArray(f)) return [f[0], f[1]];
  return [f.name, f.token];
}

export class Client implements AsyncDisposable {
  readonly timeoutMs: number;
  readonly marginMs: number;
  readonly driftPpm: number;
  private readonly pool: Pool;

  constructor(o: ClientOptions) {
    this.timeoutMs = o.timeoutMs ?? 5000;
    this.marginMs = o.marginMs ?? 10;
    this.driftPpm = o.driftPpm ?? 10000;
    this.pool = new Pool(o.endpoints, {
      username: o.username,
      password: o.password,
      tls: o.tls,
      timeoutMs: this.timeoutMs,
      connectTimeoutMs: o.connectTimeoutMs ?? 1000,
    });
  }

  /** Disconnect every connection (close the sessions first). */
  close(): void {
    this.pool.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  /** The leader's client address as last learned, or null. */
  get leaderAddress(): string | null {
    return this.pool.knownLeader();
  }

  /** @internal the call path, for Session and Watcher */
  _call(cmd: Cmd, o: CallOptions = {}): Promise<unknown> {
    return this.pool.call(cmd, o);
  }

  /**
   * Any command, with redirects followed. `retry: false` for a write that carries no
   * `REQ sid seq`: it is then sent once and a lost answer throws OutcomeUnknownError.
   */
  execute(args: (string | number | Buffer)[], o: { retry?: boolean } = {}): Promise<unknown> {
    return this.pool.call(new Cmd(...args), { retry: o.retry ?? true });
  }

  /** Open a session: a lease kept alive by the library until close(). */
  session(o: SessionOptions): Promise<Session> {
    return Session.open(this, o);
  }

  // ---- keys ----
  /** GET: the value, or null. */
  async get(key: string): Promise<string | null> {
    const r = await this.pool.call(new Cmd('GET', key));
    return r === null ? null : String(r);
  }

  /** KV.GET: the value with its revisions, version and lease, or null. */
  async kvGet(key: string): Promise<KeyValue | null> {
    const d = asMap(await this.pool.call(new Cmd('KV.GET', key)));
    if (d === null) return null;
    return {
      value: String(d.value ?? ''),
      createRev: Number(d.create_rev ?? 0),
      modRev: Number(d.mod_rev ?? 0),
      version: Number(d.version ?? 0),
      lease: Number(d.lease ?? 0),
    };
  }

  /** KEYS: the keys with a prefix, in byte order. */
  async keys(prefix = '', limit?: number): Promise<string[]> {
    const cmd = new Cmd('KEYS', prefix);
    if (limit) cmd.add('LIMIT', limit);
    return ((await this.pool.call(cmd)) as unknown[]).map(String);
  }

  /** PUT: the revision. See WriteOptions for fence, ifRev, session and lease. */
  async put(key: string, value: string | Buffer, o: WriteOptions = {}): Promise<number> {
    const cmd = new Cmd('PUT', key, value);
    if (o.lease) {
      if (!o.session) throw new TypeError('lease needs a session');
      cmd.add('LEASE', o.session.sid);
    }
    return Number(await this.write(cmd, o));
  }

  /** DEL: true if the key existed. Same options as put() but lease. */
  async del(key: string, o: WriteOptions = {}): Promise<boolean> {
    return Number(await this.write(new Cmd('DEL', key), o)) === 1;
  }

  /**
   * INCR key BY by: the counter's new value (the key holds the decimal text of a signed 64-bit
   * integer; an absent key counts as 0). Linearizable; the options as put()'s (lease is
   * ignored: the key keeps its lease). A value that is not such an integer, or a sum that
   * overflows, is a ServerError and changes nothing. Values beyond 2^53 lose precision as a
   * number: keep counters within Number.MAX_SAFE_INTEGER.
   */
  async incr(key: string, by = 1, o: WriteOptions = {}): Promise<number> {
    if (!Number.isSafeInteger(by)) throw new TypeError(`incr: by must be a safe integer, not ${by}`);
    return Number(await this.write(new Cmd('INCR', key, 'BY', by), o));
  }

  private write(cmd: Cmd, o: WriteOptions): Promise<unknown> {
    if (o.fence !== undefined) cmd.add('FENCE', ...fenceArgs(o.fence));
    if (o.ifRev !== undefined) cmd.add('IFREV', o.ifRev);
    if (!o.session) return this.pool.call(cmd, { retry: false });
    return o.session._mutate(cmd);
  }

  // ---- locks and fencing ----
  /** FENCE.CHECK: true while token is a current holder's (permit's, leader's), else false. */
  async fenceCheck(name: string, token: number): Promise<boolean> {
    try {
      await this.pool.call(new Cmd('FENCE.CHECK', name, token));
      return true;
    } catch (e) {
      if (e instanceof StaleError) return false;
      throw e;
    }
  }

  /** LOCK.INFO: null if the lock is free and nobody waits, else its fields. */
  async lockInfo(name: string): Promise<Record<string, unknown> | null> {
    const d = asMap(await this.pool.call(new Cmd('LOCK.INFO', name)));
    if (d && Array.isArray(d.holders)) d.holders = d.holders.map(asMap);
    return d;
  }

  // ---- semaphores ----
  /**
   * SEM.SETLIMIT (admin under --acl-file): the operator's limit of the semaphore name, kept
   * until semLimitReset whether or not the semaphore exists, and winning over the acquirers'
   * limit (an acquire passing another one is accepted and the argument ignored). True (servers
   * before operators' limits answered false for a semaphore that did not exist). Holders above
   * a lower limit keep their permits; nothing is granted until the queue's head fits.
   * ServerError (nothing changes) if a queued request asks for more permits than the new
   * limit. The same limit again changes nothing, so a resend is harmless.
   */
  async semSetLimit(name: string, limit: number): Promise<boolean> {
    return (await this.pool.call(new Cmd('SEM.SETLIMIT', name, Math.floor(limit)))) !== null;
  }

  /**
   * SEM.SETLIMIT name RESET (admin under --acl-file): removes the operator's limit; true if
   * there was one (a resend after a lost reply answers false). A live semaphore keeps its
   * limit until it is dropped; then the acquirers' limit rules again.
   */
  async semLimitReset(name: string): Promise<boolean> {
    return Number(await this.pool.call(new Cmd('SEM.SETLIMIT', name, 'RESET'))) === 1;
  }

  // ---- elections ----
  /** ELECT.LEADER: the leader, or null if nobody leads. */
  async leader(name: string): Promise<LeaderInfo | null> {
    const r = await this.pool.call(new Cmd('ELECT.LEADER', name));
    return r === null ? null : leaderInfo(r);
  }

  /**
   * ELECT.OBSERVE: the first change of the election after `afterRev` (0: the current state at
   * once), sid 0 when nobody leads; null when waitMs ran out. Pass each answer's rev back: no
   * change is missed, no older leader follows a newer one. A fail-over is retried on the new
   * leader with the same afterRev.
   */
  async observe(name: string, o: { afterRev?: number; waitMs?: number; signal?: AbortSignal } = {}): Promise<LeaderInfo | null> {
    const end = now() + (o.waitMs ?? 10000);
    const cmd = new Cmd('ELECT.OBSERVE', name);
    if (o.afterRev) cmd.add('AFTER', o.afterRev);
    cmd.wait(end);
    const r = await this.pool.call(cmd, { deadline: end + this.timeoutMs, signal: o.signal });
    return r === null ? null : leaderInfo(r);
  }

  // ---- revocation ----
  /**
   * LOCK.REVOKE: ask the exclusive holder of lock `name` to let go; with `deadlineMs` the
   * servers take the grant then if it still holds the lock, as an expiry would (lock-delay,
   * then the next waiter with a larger token). `reason` is shown to the holder. The token of
   * the grant asked; NotHolderError if nobody holds the lock exclusively, PermissionError
   * without the revoke permission (or admin). Sent once.
   */
  async revoke(name: string, o: { deadlineMs?: number; reason?: string } = {}): Promise<number> {
    const cmd = new Cmd('LOCK.REVOKE', name);
    if (o.deadlineMs !== undefined && o.deadlineMs > 0) cmd.add('DEADLINE', Math.max(1, Math.floor(o.deadlineMs)));
    if (o.reason !== undefined) cmd.add('REASON', o.reason);
    return Number(await this.pool.call(cmd, { retry: false }));
  }

  // ---- watch and cluster ----
  /** A Watcher of the event stream (fencelock:events[:prefix]) after `from` ("$": now). */
  watch(prefix = '', o: WatchOptions = {}): Watcher {
    return new Watcher(this, prefix, o);
  }

  /** CLUSTER.MEMBERS of any node. */
  async members(): Promise<Record<string, unknown>[]> {
    const r = await this.pool.call(new Cmd('CLUSTER.MEMBERS'), { anynode: true });
    if (!Array.isArray(r)) throw new ProtocolError('CLUSTER.MEMBERS: not an array');
    return r.map((m) => asMap(m) ?? {});
  }

  /** SESSION.INFO of a session id. */
  async sessionInfo(sid: number): Promise<Record<string, unknown> | null> {
    return asMap(await this.pool.call(new Cmd('SESSION.INFO', sid)));
  }
}
