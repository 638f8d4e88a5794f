// SPDX-License-Identifier: Apache-2.0
/**
 * Session: a lease on the servers, renewed by the library every TTL/3 on the leader, and the
 * numbering (`REQ sid seq`) that makes every mutation through it apply exactly once however
 * often it is resent across fail-overs. The rules are libfencelock's (src/client/session.c,
 * lock.c, prims.c; docs/client.md "Sessions and the safe deadline"):
 *
 * - safeUntil() = send time of the last acknowledged keepalive + TTL - margin - TTL*drift, on
 *   performance.now(): never later than the servers' deadline, which they count from the
 *   keepalive's arrival on the leader;
 * - the session is LOST when a server answers -NOSESSION or when the safe deadline passes
 *   without an acknowledged keepalive. Lost is terminal: `signal` aborts (reason: a
 *   SessionLostError), and with it the signal of every hold (Lock) taken through the session;
 *   safeUntil() returns 0 and every call throws SessionLostError;
 * - mutations are serialized (their seqs must reach the server in order): use one session per
 *   concurrent waiter if several waits must run at once;
 * - a wait (lock, permit, campaign) whose outcome could not be learned, or that the caller
 *   cancelled, sends the release with a fresh seq before throwing, so no grant the caller never
 *   saw outlives the call.
 *
 * The keepalive and deadline timers are unref()'d: an open session alone does not keep the
 * process running. close() stops them and ends the session on the servers.
 */
import type { Client } from './client';
import { Cmd, now } from './conn';
import type { Txn } from './txn';
import type { WatchEvent } from './watch';
import {
  AbortError,
  BusyError,
  CompactedError,
  FencelockError,
  LockTimeoutError,
  NotHolderError,
  OutcomeUnknownError,
  ProtocolError,
  SessionLostError,
  UnavailableError,
} from './errors';

const KA_PER_TTL = 3;
const KA_RETRIES_PER_TTL = 10;
const KA_RETRY_MIN = 20;

export interface SessionOptions {
  /** The lease, milliseconds. */
  ttlMs: number;
  /** After an expiry, nobody gets this session's locks for this long (ms). Default 0. */
  lockDelayMs?: number;
  /** A name shown by SESSION.INFO. */
  name?: string;
  /**
   * A reentrant session (SESSION.OPEN ... REENTRANT): its lock() of a lock it already holds
   * exclusively counts up and returns the same token; each Hold's release() (or unlock())
   * counts down, and only the last one releases. Expiry, close, a revoke and an admin's UNLOCK
   * end every hold at once (docs/protocol.md "Reentrant sessions").
   */
  reentrant?: boolean;
  /**
   * With `reentrant`: how many times it may hold one lock (MAXCOUNT; default the servers'
   * --reentrant-max-count); a lock() over it is a ServerError and changes nothing.
   */
  maxCount?: number;
}

export interface WaitOptions {
  /** How long to wait for the grant, ms (0: try once). Default 30000. */
  waitMs?: number;
  /** Cancels the wait: the session leaves the queue, the call throws AbortError. */
  signal?: AbortSignal;
}

export interface LockOptions extends WaitOptions {
  /** A read lock: any number of shared holders, or one exclusive holder. */
  shared?: boolean;
  /**
   * LOCK ... NOTIFY: when the request queues behind an exclusive holder, that holder is told
   * someone waits (Session.onWaiter), once per waiting session. Not with `shared`.
   */
  notify?: boolean;
  /**
   * LOCK ... VALUE v: the grant carries v (who holds it, on which host, for which job), shown
   * by Client.lockState and the grant event. Not with `shared`.
   */
  value?: string | Buffer;
  /**
   * LOCK ... MAXHOLD ms: the servers end the grant this long after they made it, even if the
   * session lives on, as an expiry would (its token is stale from then on). The Hold's
   * `maxHoldDeadline` is the local deadline. Not with `shared`.
   */
  maxHoldMs?: number;
}

export interface SemOptions extends WaitOptions {
  /**
   * Take this many permits at once (1..limit; default 1): one acquisition with one token,
   * released whole. Queued requests are granted in FIFO order only: a later request for fewer
   * permits never overtakes this one.
   */
  permits?: number;
}

/**
 * A session that queued behind a held lock with `notify` (LOCK ... NOTIFY): the lock, the
 * holder's grant it queued behind, the waiting session and how long it said it would wait.
 */
export interface Waiter {
  name: string;
  token: number;
  sid: number;
  waitMs: number;
}

function waiterOf(ev: WatchEvent, name: string, token: number): Waiter | null {
  const f = ev.fields;
  if (ev.type !== 'wait-notify' || ev.name !== name || f.token !== String(token)) return null;
  return { name, token, sid: Number(f.sid ?? 0), waitMs: Number(f.wait_ms ?? 0) };
}

/**
 * A request to a holder to let go of a lock (LOCK.REVOKE in docs/protocol.md): the
 * lock, the grant's token and session, the deadline in ms counted from when the request
 * applied on the leader (0: asked only, never forced), the reason and who asked.
 */
export interface Revoke {
  name: string;
  token: number;
  sid: number;
  deadlineMs: number;
  reason: string;
  by: string;
}

/** What Session.onRevoke returned: stop() ends it; `done` settles when it ended. */
export interface RevokeWatch {
  stop(): void;
  done: Promise<void>;
}

/** What Session.onWaiter returned: the same watch of a grant's events as onRevoke's. */
export type WaiterWatch = RevokeWatch;

function revokeOf(ev: WatchEvent, name: string, sid: number, token: number): Revoke | null {
  const f = ev.fields;
  if (ev.type !== 'revoke-requested' || ev.name !== name || f.sid !== String(sid) || f.token !== String(token)) return null;
  return { name, token, sid, deadlineMs: Number(f.deadline_ms ?? 0), reason: f.reason ?? '', by: f.by ?? '' };
}

export interface MultiLockOptions extends WaitOptions {
  /** The names (among those asked for) taken in shared mode; the others are exclusive. */
  shared?: string[];
}

type Kind = 'lock' | 'semaphore' | 'election';

/**
 * A lock, permit or leadership held through a session. `signal` aborts when the hold can no
 * longer be trusted (the session is lost) or once it was released. Release it with
 * `await using` (Symbol.asyncDispose) or `try { ... } finally { await hold.release(); }`.
 */
export class Hold implements AsyncDisposable {
  private readonly ac = new AbortController();
  private released = false;

  /** @internal */
  constructor(
    readonly session: Session,
    readonly kind: Kind,
    readonly name: string,
    /** The fencing token: pass it with every write to the protected resource. */
    readonly token: number,
  ) {}

  /**
   * performance.now() value before which the grant's max hold (LockOptions.maxHoldMs) cannot
   * have ended it on the servers: measured from before the LOCK was sent, less the margins of
   * safeUntil(); null without a max hold. Act on the resource only while performance.now() is
   * below both this and safeUntil(). A retry (or a reentrant re-lock) keeps the first ask's.
   */
  maxHoldDeadline: number | null = null;

  /** Aborts when the session is lost (reason: SessionLostError) or the hold was released. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** performance.now() value before which the hold surely lives on the servers (0: lost). */
  safeUntil(): number {
    return this.released ? 0 : this.session.safeUntil();
  }

  /** @internal */
  abort(reason: unknown): void {
    this.ac.abort(reason);
  }

  /**
   * Release (UNLOCK, SEM.RELEASE, ELECT.RESIGN). A hold already gone with its session, or
   * released before, is not an error: there is nothing left to give back.
   */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.session._forget(this);
    try {
      const cmd = { lock: 'UNLOCK', semaphore: 'SEM.RELEASE', election: 'ELECT.RESIGN' }[this.kind];
      await this.session._mutate(new Cmd(cmd, this.name, this.session.sid));
    } catch (e) {
      if (!(e instanceof SessionLostError || e instanceof NotHolderError)) throw e;
    } finally {
      this.ac.abort(new FencelockError(`${this.kind} ${this.name} released`));
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** ELECT.PROCLAIM: the leader replaces its value; the revision (StaleError if deposed). */
  async proclaim(value: string | Buffer): Promise<number> {
    if (this.kind !== 'election') throw new TypeError('proclaim is for a leadership');
    return Number(await this.session._mutate(new Cmd('ELECT.PROCLAIM', this.name, this.session.sid, this.token, value)));
  }

  /** ELECT.RESIGN: step down (release() of a leadership). */
  resign(): Promise<void> {
    return this.release();
  }
}

/**
 * Several locks held at once through a session (Session.lockMulti): `tokens[i]` is the fencing
 * token of `names[i]`. `signal` aborts when the session is lost or the set was released.
 * release() unlocks every name; `await using` works as for a Hold.
 */
export class MultiHold implements AsyncDisposable {
  private readonly ac = new AbortController();
  private released = false;

  /** @internal */
  constructor(
    readonly session: Session,
    readonly names: readonly string[],
    /** The fencing tokens, one per name in the order given. */
    readonly tokens: readonly number[],
  ) {}

  /** Aborts when the session is lost (reason: SessionLostError) or the set was released. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** The token of one of the names. */
  token(name: string): number {
    const i = this.names.indexOf(name);
    if (i < 0) throw new TypeError(`${name} is not one of the names held`);
    return this.tokens[i];
  }

  /** @internal */
  abort(reason: unknown): void {
    this.ac.abort(reason);
  }

  /** UNLOCK every name. A set already gone with its session is not an error. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.session._forget(this);
    try {
      await this.session.unlockMulti([...this.names]);
    } catch (e) {
      if (!(e instanceof SessionLostError || e instanceof NotHolderError)) throw e;
    } finally {
      this.ac.abort(new FencelockError(`locks ${this.names.join(', ')} released`));
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}

export class Session implements AsyncDisposable {
  readonly sid: number;
  readonly ttlMs: number;
  private readonly ac = new AbortController();
  private readonly kaAc = new AbortController(); // cancels a keepalive in flight on close
  private safe: number;
  private seq = 0;
  private chain: Promise<void> = Promise.resolve();
  private isLost = false;
  private stopping = false;
  private kaTimer: NodeJS.Timeout | null = null;
  private lostTimer: NodeJS.Timeout | null = null;
  private readonly holds = new Set<{ abort(reason: unknown): void }>();
  /** By lock name: the max-hold deadline of the last grant, with its token. */
  private readonly maxHold = new Map<string, { token: number; deadline: number }>();

  /** @internal use Client.session() */
  constructor(
    private readonly client: Client,
    sid: number,
    ttlMs: number,
    sent: number,
  ) {
    this.sid = sid;
    this.ttlMs = ttlMs;
    this.safe = sent + this.span(ttlMs);
    this.armLostTimer();
    this.scheduleKeepalive(sent + ttlMs / KA_PER_TTL - now());
  }

  /** @internal */
  static async open(client: Client, o: SessionOptions): Promise<Session> {
    const ttl = Math.floor(o.ttlMs);
    if (!(ttl > 0)) throw new TypeError('ttlMs must be positive');
    const cmd = new Cmd('SESSION.OPEN', ttl);
    if (o.lockDelayMs) cmd.add('LOCKDELAY', Math.floor(o.lockDelayMs));
    if (o.name) cmd.add('NAME', o.name);
    if (o.maxCount !== undefined && !o.reentrant) throw new TypeError('maxCount needs reentrant: true');
    if (o.maxCount !== undefined && !(Number.isInteger(o.maxCount) && o.maxCount >= 1)) {
      throw new TypeError(`maxCount must be an integer >= 1, not ${o.maxCount}`);
    }
    if (o.reentrant) cmd.add('REENTRANT');
    if (o.maxCount !== undefined) cmd.add('MAXCOUNT', o.maxCount);
    const sent = now();
    // A resend after a lost answer may leave an unused session behind; it expires.
    const sid = Number(await client._call(cmd));
    return new Session(client, sid, ttl, sent);
  }

  // ---- the safe deadline and loss ----
  private span(grantedMs: number): number {
    const c = this.client;
    return grantedMs - c.marginMs - Math.floor((grantedMs * c.driftPpm) / 1e6);
  }

  /** Aborts when the session is lost (reason: SessionLostError) or closed. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** performance.now() value before which the session surely lives on the servers; 0 once lost. */
  safeUntil(): number {
    return this.checkLost() ? 0 : this.safe;
  }

  /** The safe deadline minus now, ms (0 or less once passed). */
  remainingMs(): number {
    return this.checkLost() ? 0 : this.safe - now();
  }

  get lost(): boolean {
    return this.checkLost();
  }

  private checkLost(): boolean {
    if (!this.isLost && now() >= this.safe) {
      this.markLost(new SessionLostError(`session ${this.sid}: safe deadline passed without an acknowledged keepalive`));
    }
    return this.isLost;
  }

  private markLost(reason: FencelockError): void {
    if (this.isLost) return;
    this.isLost = true;
    if (this.kaTimer) clearTimeout(this.kaTimer);
    if (this.lostTimer) clearTimeout(this.lostTimer);
    this.kaAc.abort(reason);
    this.ac.abort(reason);
    for (const h of this.holds) h.abort(reason);
    this.holds.clear();
  }

  private armLostTimer(): void {
    if (this.lostTimer) clearTimeout(this.lostTimer);
    if (this.isLost) return;
    this.lostTimer = setTimeout(() => {
      this.lostTimer = null;
      if (!this.checkLost()) this.armLostTimer(); // fired a little early: again
    }, Math.max(0, Math.ceil(this.safe - now())));
    this.lostTimer.unref();
  }

  private scheduleKeepalive(delay: number): void {
    if (this.stopping || this.isLost) return;
    this.kaTimer = setTimeout(() => void this.renew(), Math.max(0, delay));
    this.kaTimer.unref();
  }

  /** Renew; after a failure retry sooner (TTL/10, at least 20 ms) until the deadline passes. */
  private async renew(): Promise<void> {
    this.kaTimer = null;
    if (this.stopping || this.checkLost()) return;
    const sent = now();
    let next: number;
    try {
      const ttl = Number(
        await this.client._call(new Cmd('SESSION.KEEPALIVE', this.sid), { deadline: this.safe, signal: this.kaAc.signal }),
      );
      const granted = Math.min(ttl, this.ttlMs);
      if (!this.isLost && !this.stopping) {
        this.safe = Math.max(this.safe, sent + this.span(granted));
        this.armLostTimer();
      }
      next = sent + this.ttlMs / KA_PER_TTL - now();
    } catch (e) {
      if (e instanceof SessionLostError && !this.stopping) {
        this.markLost(e);
        return;
      }
      next = Math.max(KA_RETRY_MIN, this.ttlMs / KA_RETRIES_PER_TTL);
    }
    this.scheduleKeepalive(next);
  }

  // ---- mutations ----
  /** Run fn with the next seq, after every mutation before it (seqs reach the server in order). */
  private async withSeq<T>(fn: (seq: number) => Promise<T>): Promise<T> {
    if (this.checkLost()) throw new SessionLostError(`session ${this.sid} is lost`);
    const prev = this.chain;
    let release!: () => void;
    this.chain = new Promise<void>((r) => (release = r));
    try {
      await prev;
      if (this.checkLost()) throw new SessionLostError(`session ${this.sid} is lost`);
      return await fn(++this.seq);
    } finally {
      release();
    }
  }

  private async send(cmd: Cmd, seq: number, deadline?: number, signal?: AbortSignal): Promise<unknown> {
    cmd.add('REQ', this.sid, seq);
    try {
      return await this.client._call(cmd, { deadline, signal });
    } catch (e) {
      if (e instanceof SessionLostError) this.markLost(e);
      throw e;
    }
  }

  /** Client.txn() through this session: REQ sid seq, resent until known, applied once. */
  txn(): Txn {
    return this.client.txn({ session: this });
  }

  /** @internal Send cmd with the next REQ sid seq, resent until its outcome is known. */
  _mutate(cmd: Cmd): Promise<unknown> {
    return this.withSeq((seq) => this.send(cmd, seq));
  }

  /** @internal */
  _forget(h: { abort(reason: unknown): void }): void {
    this.holds.delete(h);
  }

  private async waitGrant(kind: Kind, cmd: Cmd, o: WaitOptions, releaseCmd: string): Promise<Hold | null> {
    const name = String(cmd.argv[1]);
    const r = await this.waitReply(cmd, o, `${kind} ${name}`, releaseCmd, [name]);
    if (r === null) return null;
    const h = new Hold(this, kind, name, Number(r));
    if (this.isLost) h.abort(this.ac.signal.reason);
    else this.holds.add(h);
    return h;
  }

  /**
   * waitGrant for any granting command (LOCK.MULTI too): its reply, or null for a try not
   * granted. When the outcome cannot be learned, `releaseCmd name sid` is sent for each name.
   */
  private async waitReply(cmd: Cmd, o: WaitOptions, what: string, releaseCmd: string, names: string[]): Promise<unknown> {
    const waitMs = o.waitMs ?? 30000;
    const end = now() + waitMs;
    if (waitMs > 0) cmd.wait(end);
    let r: unknown;
    try {
      r = await this.withSeq((seq) => this.send(cmd, seq, end + this.client.timeoutMs, o.signal));
    } catch (e) {
      if (e instanceof UnavailableError || e instanceof OutcomeUnknownError || e instanceof AbortError) {
        // Leave the queue, or give back a grant never seen, before telling the caller.
        for (const name of names) {
          try {
            await this._mutate(new Cmd(releaseCmd, name, this.sid));
          } catch {
            /* the session or the cluster is gone: so is the grant, with the session */
          }
        }
      }
      throw e;
    }
    if (r === null && waitMs > 0) throw new LockTimeoutError(`${what} not granted within ${waitMs} ms`);
    return r;
  }

  // ---- revocation ----
  /**
   * Call `cb` for each revoke request (LOCK.REVOKE) of the grant `token` of lock `name` held
   * through this session, until the returned watcher is stopped or the session ends. It reads
   * the lock's events from the grant on, so a request made before its first read is not
   * missed; it needs the read permission on the event stream (without keys=/locks= globs).
   * `cb` should make the holder's work stop and release: the deadline runs on the servers.
   * `done` settles when the watch ends (rejected with what ended it by itself).
   */
  onRevoke(name: string, token: number, cb: (r: Revoke) => void): RevokeWatch {
    return this.grantWatch(name, token, (ev) => {
      const rv = revokeOf(ev, name, this.sid, token);
      if (rv) cb(rv);
    });
  }

  /**
   * Call `cb` for each session that queued with `notify` (LOCK ... NOTIFY) behind the grant
   * `token` of lock `name` held through this session, once per waiting session, until the
   * returned watcher is stopped or the session ends. The holder may let go early, or ignore
   * it. It reads the lock's events from the grant on, as onRevoke, with the same permission.
   */
  onWaiter(name: string, token: number, cb: (w: Waiter) => void): WaiterWatch {
    return this.grantWatch(name, token, (ev) => {
      const w = waiterOf(ev, name, token);
      if (w) cb(w);
    });
  }

  /** Read the events of lock `name` from grant `token` on and hand each to `deliver`. */
  private grantWatch(name: string, token: number, deliver: (ev: WatchEvent) => void): RevokeWatch {
    const ac = new AbortController();
    const stop = () => ac.abort();
    this.signal.addEventListener('abort', stop, { once: true });
    const done = (async () => {
      let from = `${Math.max(token - 1, 0)}-0`;
      try {
        while (!ac.signal.aborted) {
          const w = this.client.watch(name, { from, signal: ac.signal });
          try {
            for await (const ev of w) {
              if (!ac.signal.aborted) deliver(ev);
            }
          } catch (e) {
            if (!(e instanceof CompactedError) || !e.after) throw e;
            from = e.after; // go on from the oldest retained
          }
        }
      } finally {
        this.signal.removeEventListener('abort', stop);
      }
    })();
    done.catch(() => {}); // observed through `done`
    return { stop, done };
  }

  // ---- several locks at once ----
  private async multi(names: string[], o: MultiLockOptions): Promise<MultiHold | null> {
    if (names.length === 0) throw new TypeError('no lock names');
    const cmd = new Cmd('LOCK.MULTI', this.sid, names.length, ...names);
    for (const n of o.shared ?? []) cmd.add('SHARED', n);
    const r = await this.waitReply(cmd, o, `locks ${names.join(', ')}`, 'UNLOCK', names);
    if (r === null) return null;
    if (!Array.isArray(r) || r.length !== names.length) {
      throw new ProtocolError(`LOCK.MULTI answered ${String(r)}, want ${names.length} tokens`);
    }
    const h = new MultiHold(this, [...names], r.map(Number));
    if (this.isLost) h.abort(this.ac.signal.reason);
    else this.holds.add(h);
    return h;
  }

  /**
   * LOCK.MULTI: every name at once, in one log entry, or none. It waits FIFO on every name and
   * holds nothing meanwhile, so sessions asking for overlapping names in any order cannot
   * deadlock. A MultiHold with a token per name in the order given (each resource fences with
   * its own lock's token); `shared`: the names taken in shared mode. LockTimeoutError after
   * waitMs (nothing held); with waitMs 0, BusyError unless every name was free.
   */
  async lockMulti(names: string[], o: MultiLockOptions = {}): Promise<MultiHold> {
    const h = await this.multi(names, o);
    if (h === null) throw new BusyError(`locks ${names.join(', ')}: one is held or in lock-delay`);
    return h;
  }

  /** The MultiHold if every name could be granted at once, else null (and nothing held). */
  tryLockMulti(names: string[], o: { shared?: string[] } = {}): Promise<MultiHold | null> {
    return this.multi(names, { ...o, waitMs: 0 });
  }

  /**
   * UNLOCK each name (each releases that name only, or takes a waiting request out of all its
   * queues); every name is tried, the first error thrown after.
   */
  async unlockMulti(names: string[]): Promise<void> {
    let first: unknown = null;
    for (const n of names) {
      try {
        await this.unlock(n);
      } catch (e) {
        first ??= e;
      }
    }
    if (first !== null) throw first;
  }

  /**
   * Run fn while holding every name (lockMulti), then release them all, whatever fn did; fn's
   * result. Pass `hold.signal` to the work: it aborts if the lease can no longer be trusted.
   */
  async withLocks<T>(names: string[], o: MultiLockOptions, fn: (hold: MultiHold) => Promise<T>): Promise<T> {
    const h = await this.lockMulti(names, o);
    try {
      return await fn(h);
    } finally {
      await h.release();
    }
  }

  // ---- locks ----
  /**
   * LOCK name: a Hold with the fencing token once granted (FIFO). LockTimeoutError after
   * waitMs; with waitMs 0, BusyError if the lock is held. Granted once, however many
   * fail-overs the request crosses.
   */
  async lock(name: string, o: LockOptions = {}): Promise<Hold> {
    const h = await this.tryOrWait('lock', name, o);
    if (h === null) throw new BusyError(`lock ${name} is held or in lock-delay`);
    return h;
  }

  /** The Hold if the lock was free, else null. */
  tryLock(name: string, o: { shared?: boolean } = {}): Promise<Hold | null> {
    return this.tryOrWait('lock', name, { ...o, waitMs: 0 });
  }

  private async tryOrWait(kind: Kind, name: string, o: LockOptions): Promise<Hold | null> {
    if (o.shared && o.notify) throw new TypeError('notify is for an exclusive lock, not with shared');
    const meta = (o.value !== undefined && o.value.length > 0) || o.maxHoldMs !== undefined;
    if (o.shared && meta) throw new TypeError('value and maxHoldMs are for an exclusive lock, not with shared');
    if (o.maxHoldMs !== undefined && !(o.maxHoldMs >= 1)) throw new TypeError(`maxHoldMs must be at least 1, not ${o.maxHoldMs}`);
    const cmd = new Cmd('LOCK', name, this.sid);
    if (o.shared) cmd.add('SHARED');
    if (o.notify) cmd.add('NOTIFY');
    if (o.value !== undefined && o.value.length > 0) cmd.add('VALUE', o.value);
    if (o.maxHoldMs !== undefined) cmd.add('MAXHOLD', Math.floor(o.maxHoldMs));
    const sent = now(); // before the first LOCK: the grant can only come later
    const h = await this.waitGrant(kind, cmd, o, 'UNLOCK');
    if (h === null) return null;
    const prev = this.maxHold.get(name);
    if (prev !== undefined && prev.token === h.token) {
      h.maxHoldDeadline = prev.deadline; // the holder's retry: the first ask's max hold
    } else if (o.maxHoldMs !== undefined) {
      h.maxHoldDeadline = sent + this.span(Math.floor(o.maxHoldMs));
      this.maxHold.set(name, { token: h.token, deadline: h.maxHoldDeadline });
    } else {
      this.maxHold.delete(name);
    }
    return h;
  }

  /** UNLOCK: release the lock or leave its queue (NotHolderError if neither). */
  async unlock(name: string): Promise<void> {
    await this._mutate(new Cmd('UNLOCK', name, this.sid));
  }

  // ---- semaphores ----
  /**
   * SEM.ACQUIRE: an acquisition of `permits` (default 1) of at most `limit` permits in use;
   * LockTimeoutError after waitMs; with waitMs 0, BusyError if not enough are free.
   */
  async acquire(name: string, limit: number, o: SemOptions = {}): Promise<Hold> {
    const permits = o.permits ?? 1;
    if (!Number.isInteger(permits) || permits < 1 || permits > limit) {
      throw new TypeError(`permits must be 1..${limit} (the limit), not ${permits}`);
    }
    const cmd = new Cmd('SEM.ACQUIRE', name, this.sid, Math.floor(limit));
    if (permits > 1) cmd.add('PERMITS', permits); // without: the request from before weights
    const h = await this.waitGrant('semaphore', cmd, o, 'SEM.RELEASE');
    if (h === null) throw new BusyError(`semaphore ${name} has not ${permits} free permit(s)`);
    return h;
  }

  /** SEM.RELEASE by name. */
  async releasePermit(name: string): Promise<void> {
    await this._mutate(new Cmd('SEM.RELEASE', name, this.sid));
  }

  // ---- latches and barriers (docs/protocol.md "Latches and barriers") ----
  /**
   * LATCH.JOIN: this session promises one count-down of the latch; if it ends before it counted
   * down, the latch breaks (every waiter gets BrokenError). ServerError when every count left
   * is promised already, or the latch is at zero.
   */
  async latchJoin(name: string): Promise<void> {
    await this._mutate(new Cmd('LATCH.JOIN', name, this.sid));
  }

  /**
   * LATCH.COUNTDOWN: count down once (a joined session once; one that did not join only with a
   * count nobody promised); the counts left. Exactly once.
   */
  async latchCountdown(name: string): Promise<number> {
    return Number(await this._mutate(new Cmd('LATCH.COUNTDOWN', name, this.sid)));
  }

  /**
   * BARRIER.ENTER: enter the double barrier `name` of `count` sessions (the first enter creates
   * it); true once `count` are inside, false when waitMs ran out (0: at once; the session stays
   * inside: enter again to wait again, or leave); BrokenError if a session ended inside.
   */
  async barrierEnter(name: string, count: number, o: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    if (!(Number.isInteger(count) && count >= 1)) throw new TypeError(`a barrier's count must be an integer >= 1, not ${count}`);
    return this.waitStep(new Cmd('BARRIER.ENTER', name, this.sid, count), o);
  }

  /**
   * BARRIER.LEAVE: true once every session that entered has left, false when waitMs ran out
   * (this session has left all the same); BrokenError. Leaving a barrier that is still filling
   * withdraws at once.
   */
  async barrierLeave(name: string, o: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    return this.waitStep(new Cmd('BARRIER.LEAVE', name, this.sid), o);
  }

  /**
   * A mutation that then waits on the servers (BARRIER.ENTER/LEAVE ... WAIT), exactly once:
   * true for +OK, false for nil. The step stands whatever the wait's outcome: nothing is given
   * back when its answer is lost.
   */
  private async waitStep(cmd: Cmd, o: { waitMs?: number; signal?: AbortSignal }): Promise<boolean> {
    const waitMs = o.waitMs ?? 30000;
    const end = now() + waitMs;
    if (waitMs > 0) cmd.wait(end);
    const deadline = waitMs > 0 ? end + this.client.timeoutMs : undefined;
    const r = await this.withSeq((seq) => this.send(cmd, seq, deadline, o.signal));
    return r !== null;
  }

  // ---- elections ----
  /** ELECT.CAMPAIGN: leadership (its token) once this session leads; LockTimeoutError after waitMs. */
  async campaign(name: string, value: string | Buffer, o: WaitOptions = {}): Promise<Hold> {
    const h = await this.waitGrant('election', new Cmd('ELECT.CAMPAIGN', name, this.sid, value), o, 'ELECT.RESIGN');
    if (h === null) throw new BusyError(`election ${name} has a leader`);
    return h;
  }

  /** ELECT.RESIGN by name: step down, or withdraw a candidacy. */
  async resign(name: string): Promise<void> {
    await this._mutate(new Cmd('ELECT.RESIGN', name, this.sid));
  }

  /** ELECT.PROCLAIM by name and token. */
  async proclaim(name: string, token: number, value: string | Buffer): Promise<number> {
    return Number(await this._mutate(new Cmd('ELECT.PROCLAIM', name, this.sid, token, value)));
  }

  // ---- keys ----
  /** Client.put through this session: REQ sid seq, applied exactly once. */
  put(key: string, value: string | Buffer, o: { fence?: Fence; ifRev?: number; lease?: boolean } = {}): Promise<number> {
    return this.client.put(key, value, { ...o, session: this });
  }

  del(key: string, o: { fence?: Fence; ifRev?: number } = {}): Promise<boolean> {
    return this.client.del(key, { ...o, session: this });
  }

  // ---- end ----
  private stop(): void {
    this.stopping = true;
    if (this.kaTimer) clearTimeout(this.kaTimer);
    this.kaAc.abort();
  }

  /**
   * Stop renewing, then SESSION.CLOSE (releases its locks now, no lock-delay). The signal
   * aborts (reason: SessionLostError "closed"). A session lost locally is still closed on the
   * servers if it lives there.
   */
  async close(): Promise<void> {
    if (this.stopping) return;
    const prev = this.chain;
    let release!: () => void;
    this.chain = new Promise<void>((r) => (release = r));
    try {
      await prev;
      const seq = ++this.seq;
      this.stop();
      try {
        await this.client._call(new Cmd('SESSION.CLOSE', this.sid, 'REQ', this.sid, seq));
      } catch (e) {
        if (!(e instanceof SessionLostError)) throw e;
      }
    } finally {
      this.markLost(new SessionLostError(`session ${this.sid} closed`));
      release();
    }
  }

  /** Stop renewing without closing: the lease runs out on the servers (lock-delay applies). */
  abandon(): void {
    this.stop();
    if (this.lostTimer) clearTimeout(this.lostTimer);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** A fence: the lock (semaphore, election) name and the token its holder got. */
export type Fence = [name: string, token: number] | { name: string; token: number } | Hold;
