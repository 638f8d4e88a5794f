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
import { Txn } from './txn';
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

/**
 * A lock's state (Client.lockState, LOCK.INFO): the exclusive holder (0 if none: free, held
 * shared or in lock-delay) and its token, the mode and queue, the exclusive grant's value and
 * max hold (0: none), the lock record's transitions (exclusive grants that ended: 0 for its
 * first holder) and the holder's count.
 */
export interface LockState {
  holder: number;
  token: number;
  heldSinceMs: number;
  lockDelay: boolean;
  mode: string;
  waiters: number[];
  value: string;
  maxHoldMs: number;
  transitions: number;
  count: number;
}

/**
 * One grant of a lock, semaphore or election (Client.lockHistory; docs/protocol.md "Lock
 * history"). endedRev 0 and endedBy '' while held; else unlock, release, resign, expiry,
 * session-close, session-revoke, revoke, upgrade, or the op that ended it. Times are the
 * leaders' wall clocks (ms since the epoch) the entries carry; `waiters` are the first few of
 * the sessions queued at the grant, with how long each had waited by then.
 */
export interface HistoryEntry {
  kind: string;
  sid: number;
  sessionName: string;
  user: string;
  value: string;
  token: number;
  permits: number;
  grantedMs: number;
  waitedMs: number;
  endedRev: number;
  endedMs: number;
  endedBy: string;
  heldMs: number;
  waitersTotal: number;
  waiters: { sid: number; waitedMs: number }[];
}

/**
 * A latch's or barrier's state (Client.latchInfo, LATCH.INFO): state is counting / zero /
 * broken for a latch, filling / full / broken for a barrier; remaining: a latch's counts left,
 * a barrier's sessions to come (or still inside once full).
 */
export interface LatchInfo {
  type: string;
  state: string;
  count: number;
  remaining: number;
  joiners: number[];
  counted: boolean[];
  brokenSid: number;
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

  /**
   * A TXN builder (docs/protocol.md "TXN"): compares, then all of one branch's writes, or
   * nothing. `session`: sent through it (REQ, exactly once); without: sent once.
   * `await client.txn().ifRev('cfg', '=', 7).thenPut('cfg', 'v2').elseIncr('misses').commit()`.
   */
  txn(o: { session?: Session } = {}): Txn {
    const s = o.session;
    return new Txn((cmd) => (s ? s._mutate(cmd) : this.pool.call(cmd, { retry: false })));
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

  /**
   * LOCK.INFO as a LockState: null if the lock is free and nobody waits. `count` is the
   * exclusive holder's holds (a reentrant session's count, 1 for any other holder, 0 without an
   * exclusive holder).
   */
  async lockState(name: string): Promise<LockState | null> {
    const d = asMap(await this.pool.call(new Cmd('LOCK.INFO', name)));
    if (d === null) return null;
    const holder = Number(d.holder ?? 0);
    return {
      holder,
      token: Number(d.token ?? 0),
      heldSinceMs: Number(d.held_since_ms ?? 0),
      lockDelay: Number(d.lockdelay ?? 0) === 1,
      mode: String(d.mode ?? ''),
      waiters: Array.isArray(d.waiters) ? d.waiters.map(Number) : [],
      value: String(d.value ?? ''),
      maxHoldMs: Number(d.max_hold_ms ?? 0),
      transitions: Number(d.transitions ?? 0),
      count: d.count !== undefined ? Number(d.count) : holder !== 0 ? 1 : 0, // only a reentrant holder's is sent
    };
  }

  /**
   * LOCK.HISTORY: the grants of lock (semaphore, election) `name`, newest first: at most
   * `count` (default the servers', 100), only tokens below `before` (the next page: the last
   * entry's token). CompactedError when the range asked was dropped (the oldest grants go
   * first).
   */
  async lockHistory(name: string, o: { count?: number; before?: number } = {}): Promise<HistoryEntry[]> {
    const cmd = new Cmd('LOCK.HISTORY', name);
    if (o.count) cmd.add('COUNT', Math.floor(o.count));
    if (o.before) cmd.add('BEFORE', o.before);
    const r = await this.pool.call(cmd);
    if (r !== null && !Array.isArray(r)) throw new ProtocolError('LOCK.HISTORY: not an array');
    return ((r ?? []) as unknown[]).map((x: unknown): HistoryEntry => {
      const d = asMap(x) ?? {};
      const ws = Array.isArray(d.waiters) ? d.waiters : [];
      return {
        kind: String(d.kind ?? ''),
        sid: Number(d.session ?? 0),
        sessionName: String(d.session_name ?? ''),
        user: String(d.user ?? ''),
        value: String(d.value ?? ''),
        token: Number(d.token ?? 0),
        permits: Number(d.permits ?? 1),
        grantedMs: Number(d.granted_ms ?? 0),
        waitedMs: Number(d.waited_ms ?? 0),
        endedRev: Number(d.ended_rev ?? 0),
        endedMs: Number(d.ended_ms ?? 0),
        endedBy: String(d.ended_by ?? ''),
        heldMs: Number(d.held_ms ?? 0),
        waitersTotal: Number(d.waiters_total ?? 0),
        waiters: ws.map((w: unknown) => {
          const m = asMap(w) ?? {};
          return { sid: Number(m.session ?? 0), waitedMs: Number(m.waited_ms ?? 0) };
        }),
      };
    });
  }

  // ---- latches and barriers (docs/protocol.md "Latches and barriers") ----
  /**
   * LATCH.CREATE: a countdown latch of `count` (1..1048576) counts. The same count again changes
   * nothing (so a resend is harmless); another count is a ServerError; a broken latch a
   * BrokenError (latchDelete it first).
   */
  async latchCreate(name: string, count: number): Promise<void> {
    if (!(Number.isInteger(count) && count >= 1)) throw new TypeError(`a latch's count must be an integer >= 1, not ${count}`);
    await this.pool.call(new Cmd('LATCH.CREATE', name, count));
  }

  /**
   * LATCH.WAIT: true once the latch is at zero, false when waitMs ran out (0: checked once);
   * BrokenError if a joined session ended before counting down, ServerError if there is no such
   * latch. A waiter is released only by the commit of the last count-down; a fail-over during
   * the wait is asked again of the new leader.
   */
  async latchWait(name: string, o: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const waitMs = o.waitMs ?? 30000;
    const cmd = new Cmd('LATCH.WAIT', name);
    if (waitMs > 0) {
      const end = now() + waitMs;
      cmd.wait(end);
      return (await this.pool.call(cmd, { deadline: end + this.timeoutMs, signal: o.signal })) !== null;
    }
    return (await this.pool.call(cmd, { signal: o.signal })) !== null;
  }

  /** LATCH.INFO: the latch's or barrier's state, or null if there is none of that name. */
  async latchInfo(name: string): Promise<LatchInfo | null> {
    const d = asMap(await this.pool.call(new Cmd('LATCH.INFO', name)));
    if (d === null) return null;
    return {
      type: String(d.type ?? ''),
      state: String(d.state ?? ''),
      count: Number(d.count ?? 0),
      remaining: Number(d.remaining ?? 0),
      joiners: Array.isArray(d.joiners) ? d.joiners.map(Number) : [],
      counted: Array.isArray(d.counted) ? d.counted.map((x) => Number(x) === 1) : [],
      brokenSid: Number(d.broken_sid ?? 0),
    };
  }

  /**
   * LATCH.DELETE: delete a latch or barrier in any state (a broken one too: latchCreate then
   * starts afresh); its waiters get a ServerError. True if one existed. Sent once.
   */
  async latchDelete(name: string): Promise<boolean> {
    return Number(await this.pool.call(new Cmd('LATCH.DELETE', name), { retry: false })) === 1;
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
