// SPDX-License-Identifier: Apache-2.0
/**
 * The conformance agent of the Node.js client (tests/conformance/PROTOCOL.md): one JSON object
 * per line on stdin and stdout, driven by the conformance harness. Written on the package's
 * public API only (./index), so the suite checks what a user of the package gets. Every
 * request runs as its own async task, so a lock that waits never delays a later request;
 * replies may come in any order. Diagnostics go to stderr.
 *
 *   FL_ENDPOINTS=127.0.0.1:7480 node dist/agent.js
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import {
  Client,
  type ClientOptions,
  FencelockError,
  NotFoundError,
  type Revoke,
  type RevokeWatch,
  type Session,
  type Waiter,
  StaleError,
  LockTimeoutError,
  VERSION,
  type Txn,
  TxnOpError,
  type TxnRel,
  type Watcher,
} from './index';

type Req = Record<string, unknown> & { id: number; op: string };
type Result = Record<string, unknown>;

function emit(o: Result): void {
  process.stdout.write(`${JSON.stringify(o)}\n`);
}

function word(e: unknown): string {
  return e instanceof FencelockError ? e.word : 'OTHER';
}

function clientOptions(env: NodeJS.ProcessEnv): ClientOptions {
  const o: ClientOptions = { endpoints: env.FL_ENDPOINTS ?? '' };
  if (env.FL_TIMEOUT) o.timeoutMs = Math.round(Number(env.FL_TIMEOUT) * 1000);
  if (env.FL_USER) o.username = env.FL_USER;
  if (env.FL_PASSWORD !== undefined) o.password = env.FL_PASSWORD;
  if (env.FL_TLS_CA) o.tls = { ca: env.FL_TLS_CA, cert: env.FL_TLS_CERT, key: env.FL_TLS_KEY };
  return o;
}

class Agent {
  private readonly sessions = new Map<string, Session>();
  private readonly closing = new Set<string>();
  private readonly watchers = new Map<string, { w: Watcher; done: Promise<void> }>();
  /** on_revoke registrations by session handle: stopped before that session closes. */
  private readonly revokes = new Map<string, RevokeWatch[]>();
  private nSessions = 0;
  private nWatchers = 0;

  constructor(private readonly client: Client) {}

  private session(r: Req): Session {
    const s = this.sessions.get(String(r.session));
    if (!s) throw new TypeError(`no session ${String(r.session)}`);
    return s;
  }

  private opt(r: Req): Session | undefined {
    return r.session === undefined || r.session === null ? undefined : this.session(r);
  }

  /** The request's TXN (PROTOCOL.md "txn") built with the package's builder. */
  private txn(r: Req): Txn {
    const t = this.client.txn({ session: this.opt(r) });
    const list = (v: unknown): unknown[][] => (Array.isArray(v) ? v.map((x) => (Array.isArray(x) ? x : [])) : []);
    for (const x of list(r.if)) {
      const [kind, name] = [String(x[0]), String(x[1])];
      if (kind === 'exists' && x.length === 2) t.ifExists(name);
      else if (kind === 'missing' && x.length === 2) t.ifMissing(name);
      else if (kind === 'holds' && x.length === 3) t.ifHolds(name, Number(x[2]));
      else if (kind === 'rev' && x.length === 4) t.ifRev(name, String(x[2]) as TxnRel, Number(x[3]));
      else if (kind === 'value' && x.length === 4) t.ifValue(name, String(x[2]) as TxnRel, String(x[3]));
      else if (kind === 'token' && x.length === 4) t.ifToken(name, String(x[2]) as TxnRel, Number(x[3]));
      else throw new TypeError(`unknown compare ${JSON.stringify(x)}`);
    }
    for (const branch of ['then', 'else']) {
      const els = branch === 'else';
      for (const x of list(r[branch])) {
        const [kind, key] = [String(x[0]), String(x[1])];
        if (kind === 'put' && x.length === 3) (els ? t.elsePut(key, String(x[2])) : t.thenPut(key, String(x[2])));
        else if (kind === 'del' && x.length === 2) (els ? t.elseDel(key) : t.thenDel(key));
        else if (kind === 'incr' && x.length === 3) (els ? t.elseIncr(key, Number(x[2])) : t.thenIncr(key, Number(x[2])));
        else throw new TypeError(`unknown op ${JSON.stringify(x)}`);
      }
    }
    if (Array.isArray(r.fence) && r.fence.length === 2) t.fence(String(r.fence[0]), Number(r.fence[1]));
    return t;
  }

  private static strs(v: unknown): string[] {
    return Array.isArray(v) ? v.map(String) : [];
  }

  private static ms(seconds: unknown, dflt: number): number {
    return seconds === undefined || seconds === null ? dflt : Math.round(Number(seconds) * 1000);
  }

  private writeOpts(r: Req) {
    const o: { session?: Session; fence?: [string, number]; ifRev?: number } = { session: this.opt(r) };
    if (Array.isArray(r.fence)) o.fence = [String(r.fence[0]), Number(r.fence[1])];
    if (r.ifrev !== undefined && r.ifrev !== null) o.ifRev = Number(r.ifrev);
    return o;
  }

  async run(r: Req): Promise<Result> {
    const c = this.client;
    switch (r.op) {
      case 'session.open': {
        const s = await c.session({
          ttlMs: Agent.ms(r.ttl, 10000),
          lockDelayMs: Agent.ms(r.lock_delay, 0),
          name: r.name as string | undefined,
          reentrant: Boolean(r.reentrant),
          maxCount: r.max_count === undefined || r.max_count === null ? undefined : Number(r.max_count),
        });
        const h = `s${++this.nSessions}`;
        this.sessions.set(h, s);
        s.signal.addEventListener('abort', () => {
          if (this.closing.has(h)) return; // closed by the harness: not a loss
          emit({ event: 'lost', session: h, mono_ms: performance.now(), wall_ms: Date.now() });
        });
        return { session: h, sid: s.sid };
      }
      case 'session.close': {
        const s = this.session(r);
        this.closing.add(String(r.session));
        await this.stopRevokes(String(r.session));
        await s.close();
        return {};
      }
      case 'session.safe': {
        const s = this.session(r);
        return { remaining_ms: s.remainingMs(), lost: s.lost };
      }
      case 'lock': {
        const h = await this.session(r).lock(String(r.name), {
          waitMs: Agent.ms(r.wait, 0),
          shared: Boolean(r.shared),
          notify: Boolean(r.notify),
          value: r.value === undefined || r.value === null ? undefined : String(r.value),
          maxHoldMs: r.max_hold === undefined || r.max_hold === null ? undefined : Agent.ms(r.max_hold, 0),
        });
        return { token: h.token };
      }
      case 'unlock':
        await this.session(r).unlock(String(r.name));
        return {};
      case 'lock.multi': {
        const names = Agent.strs(r.names);
        const h = await this.session(r).lockMulti(names, { waitMs: Agent.ms(r.wait, 0), shared: Agent.strs(r.shared) });
        return { tokens: [...h.tokens] };
      }
      case 'unlock.multi':
        await this.session(r).unlockMulti(Agent.strs(r.names));
        return {};
      case 'sem.acquire': {
        const h = await this.session(r).acquire(String(r.name), Number(r.limit), {
          waitMs: Agent.ms(r.wait, 0),
          permits: r.permits === undefined ? 1 : Number(r.permits),
        });
        return { token: h.token };
      }
      case 'sem.release':
        await this.session(r).releasePermit(String(r.name));
        return {};
      case 'elect.campaign': {
        const h = await this.session(r).campaign(String(r.name), String(r.value ?? ''), { waitMs: Agent.ms(r.wait, 0) });
        return { token: h.token };
      }
      case 'elect.resign':
        await this.session(r).resign(String(r.name));
        return {};
      case 'elect.leader': {
        const l = await c.leader(String(r.name));
        if (!l) throw new NotFoundError(`election ${String(r.name)} has no leader`);
        return { sid: l.sid, value: l.value, token: l.token };
      }
      case 'elect.observe': {
        const l = await c.observe(String(r.name), { afterRev: Number(r.after_rev ?? 0), waitMs: Agent.ms(r.wait, 0) });
        if (!l) throw new LockTimeoutError(`election ${String(r.name)}: no change within the wait`);
        return { sid: l.sid, value: l.value, rev: l.rev };
      }
      case 'put':
        return { rev: await c.put(String(r.key), String(r.value), this.writeOpts(r)) };
      case 'del':
        return { deleted: await c.del(String(r.key), this.writeOpts(r)) };
      case 'incr':
        return { value: await c.incr(String(r.key), r.by === undefined ? 1 : Number(r.by), this.writeOpts(r)) };
      case 'txn': {
        const res = await this.txn(r).commit();
        return { succeeded: res.succeeded, rev: res.revision, results: res.results };
      }
      case 'get': {
        const kv = await c.kvGet(String(r.key));
        if (!kv) throw new NotFoundError(`no key ${String(r.key)}`);
        return { value: kv.value, mod_rev: kv.modRev, version: kv.version };
      }
      case 'fence.check':
        if (!(await c.fenceCheck(String(r.name), Number(r.token)))) {
          throw new StaleError(`token ${String(r.token)} is not a current holder's of ${String(r.name)}`);
        }
        return {};
      case 'watch.start': {
        const w = c.watch(String(r.prefix ?? ''), { from: r.from ? String(r.from) : '$' });
        await w.ready(); // "from now" is from this reply on
        const h = `w${++this.nWatchers}`;
        const done = (async () => {
          let error: string | null = null;
          try {
            for await (const ev of w) emit({ event: 'watch', watch: h, id: ev.id, type: ev.type, name: ev.name });
          } catch (e) {
            error = word(e);
            process.stderr.write(`agent: watcher ${h}: ${(e as Error).message}\n`);
          }
          emit({ event: 'watch_end', watch: h, error, last: w.lastId });
        })();
        this.watchers.set(h, { w, done });
        return { watch: h };
      }
      case 'watch.stop': {
        const x = this.watchers.get(String(r.watch));
        if (!x) throw new TypeError(`no watcher ${String(r.watch)}`);
        x.w.stop();
        await x.done;
        this.watchers.delete(String(r.watch));
        return { last: x.w.lastId };
      }
      case 'lock.info': {
        const li = await c.lockState(String(r.name));
        if (!li) throw new NotFoundError(`lock ${String(r.name)} is free`);
        return { holder: li.holder, token: li.token, value: li.value, max_hold_ms: li.maxHoldMs, transitions: li.transitions, count: li.count };
      }
      case 'lock.history': {
        const o: { count?: number; before?: number } = {};
        if (r.count) o.count = Number(r.count);
        if (r.before) o.before = Number(r.before);
        const hs = await c.lockHistory(String(r.name), o);
        return {
          entries: hs.map((e) => ({
            session: e.sid,
            session_name: e.sessionName,
            value: e.value,
            token: e.token,
            ended_by: e.endedBy,
            granted_ms: e.grantedMs,
            ended_ms: e.endedMs,
            held_ms: e.heldMs,
            waited_ms: e.waitedMs,
            waiters_total: e.waitersTotal,
            waiters: e.waiters.map((w) => ({ session: w.sid, waited_ms: w.waitedMs })),
          })),
        };
      }
      case 'latch.create':
        await c.latchCreate(String(r.name), Number(r.count));
        return {};
      case 'latch.join':
        await this.session(r).latchJoin(String(r.name));
        return {};
      case 'latch.countdown':
        return { remaining: await this.session(r).latchCountdown(String(r.name)) };
      case 'latch.wait':
        if (!(await c.latchWait(String(r.name), { waitMs: Agent.ms(r.wait, 0) }))) {
          throw new LockTimeoutError(`latch ${String(r.name)} not at zero within the wait`);
        }
        return {};
      case 'latch.info': {
        const li = await c.latchInfo(String(r.name));
        if (!li) throw new NotFoundError(`no latch or barrier ${String(r.name)}`);
        return { type: li.type, state: li.state, count: li.count, remaining: li.remaining, broken_sid: li.brokenSid };
      }
      case 'latch.delete':
        return { deleted: await c.latchDelete(String(r.name)) };
      case 'barrier.enter':
        if (!(await this.session(r).barrierEnter(String(r.name), Number(r.count), { waitMs: Agent.ms(r.wait, 0) }))) {
          throw new LockTimeoutError(`barrier ${String(r.name)} not full within the wait`);
        }
        return {};
      case 'barrier.leave':
        if (!(await this.session(r).barrierLeave(String(r.name), { waitMs: Agent.ms(r.wait, 0) }))) {
          throw new LockTimeoutError(`barrier ${String(r.name)} not left by all within the wait`);
        }
        return {};
      case 'revoke': {
        const dl = Number(r.deadline_ms ?? 0);
        const o: { deadlineMs?: number; reason?: string } = {};
        if (dl > 0) o.deadlineMs = dl;
        if (r.reason !== undefined && r.reason !== null) o.reason = String(r.reason);
        return { token: await c.revoke(String(r.name), o) };
      }
      case 'on_revoke': {
        // No await from here to the return: the reply is written in the microtask that
        // follows, and the callback needs an XREAD answer (I/O, a later turn of the loop),
        // so its lines come after the reply (PROTOCOL.md's order rule).
        const h = String(r.session);
        const rw = this.session(r).onRevoke(String(r.name), Number(r.token), (x: Revoke) =>
          emit({ event: 'revoke', session: h, name: x.name, token: x.token, deadline_ms: x.deadlineMs, reason: x.reason, by: x.by }),
        );
        const list = this.revokes.get(h) ?? [];
        list.push(rw);
        this.revokes.set(h, list);
        return {};
      }
      case 'on_waiter': {
        // As on_revoke: no await before the return, so the reply comes before any line.
        const h = String(r.session);
        const ww = this.session(r).onWaiter(String(r.name), Number(r.token), (x: Waiter) =>
          emit({ event: 'waiter', session: h, name: x.name, token: x.token, sid: x.sid, wait_ms: x.waitMs }),
        );
        const list = this.revokes.get(h) ?? [];
        list.push(ww);
        this.revokes.set(h, list);
        return {};
      }
      case 'quit':
        await this.quit();
        return {};
    }
    throw new TypeError(`unknown op ${JSON.stringify(r.op)}`);
  }

  private async stopRevokes(h: string): Promise<void> {
    const list = this.revokes.get(h) ?? [];
    this.revokes.delete(h);
    for (const rw of list) rw.stop();
    await Promise.allSettled(list.map((rw) => rw.done));
  }

  async quit(): Promise<void> {
    await Promise.all([...this.revokes.keys()].map((h) => this.stopRevokes(h)));
    for (const x of this.watchers.values()) x.w.stop();
    await Promise.all([...this.watchers.values()].map((x) => x.done));
    await Promise.all(
      [...this.sessions.entries()].map(async ([h, s]) => {
        this.closing.add(h);
        try {
          await s.close();
        } catch (e) {
          process.stderr.write(`agent: close ${h}: ${(e as Error).message}\n`);
        }
      }),
    );
    this.client.close();
  }
}

function main(): void {
  let client: Client;
  try {
    client = new Client(clientOptions(process.env));
  } catch (e) {
    emit({ ready: false, error: word(e), message: (e as Error).message });
    return;
  }
  const agent = new Agent(client);
  emit({ ready: true, client: 'node', version: VERSION });
  const rl = createInterface({ input: process.stdin });
  let quitting = false;
  rl.on('line', (line) => {
    if (!line.trim()) return;
    let r: Req;
    try {
      r = JSON.parse(line) as Req;
    } catch {
      process.stderr.write(`agent: not JSON: ${line}\n`);
      return;
    }
    void agent.run(r).then(
      (res) => {
        emit({ id: r.id, ok: true, ...res });
        if (r.op === 'quit') {
          quitting = true;
          rl.close();
          process.exit(0);
        }
      },
      (e: unknown) => {
        const message = (e as Error)?.message ?? String(e);
        const rep: Result = { id: r.id, ok: false, error: word(e), message };
        if (e instanceof TxnOpError) rep.op = e.op; // the TXN's failing op, typed (PROTOCOL.md)
        emit(rep);
      },
    );
  });
  rl.on('close', () => {
    if (!quitting) void agent.quit().finally(() => process.exit(0));
  });
}

main();
