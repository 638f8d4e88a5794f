// SPDX-License-Identifier: Apache-2.0
// The conformance agent (dist/agent.js, tests/conformance/PROTOCOL.md) driven by a small
// driver of our own over its stdin/stdout, against a real fencelockd: the ready line, replies
// by id (a waiting lock does not delay a later request), error words, watch events, the lost
// event when the server is SIGSTOPped past the safe deadline, and quit.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { Nodes, sleep, until } = require('./helpers');

const AGENT = JSON.parse(require('node:fs').readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'conformance', 'agents', 'node.json'), 'utf8'));

class Driver {
  constructor(env) {
    const root = path.join(__dirname, '..', '..', '..');
    this.proc = spawn(AGENT.run[0], AGENT.run.slice(1), {
      cwd: path.join(root, AGENT.cwd), env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.lines = [];
    this.waiters = new Map();
    this.events = [];
    this.nextId = 1;
    this.exited = new Promise((r) => this.proc.once('exit', (code) => r(code)));
    readline.createInterface({ input: this.proc.stdout }).on('line', (l) => {
      const o = JSON.parse(l); // every line must be one JSON object
      this.lines.push(o);
      if (o.event) this.events.push(o); // a watch event has an "id" too: the event's
      else if (o.id !== undefined) this.waiters.get(o.id)?.(o);
    });
  }

  ready() {
    return until(() => this.lines.find((o) => 'ready' in o), 20000, 'ready line');
  }

  send(op, args = {}) {
    const id = this.nextId++;
    const p = new Promise((r) => this.waiters.set(id, r));
    this.proc.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`);
    return p;
  }

  async ok(op, args) {
    const r = await this.send(op, args);
    assert.equal(r.ok, true, `${op}: ${JSON.stringify(r)}`);
    return r;
  }
}

let nodes;
let node;

before(async () => {
  nodes = new Nodes();
  node = await nodes.start();
});

after(async () => {
  await nodes.finish();
});

test('agent: the protocol\'s operations, error words and events', async () => {
  const d = new Driver({ FL_ENDPOINTS: node.endpoint, FL_TIMEOUT: '5' });
  const rd = await d.ready();
  assert.deepEqual([rd.ready, rd.client, typeof rd.version], [true, 'node', 'string']);
  const s1 = (await d.ok('session.open', { ttl: 3, name: 'a' })).session;
  const s2 = (await d.ok('session.open', { ttl: 3 })).session;
  const t1 = (await d.ok('lock', { session: s1, name: 'L', wait: 1 })).token;
  assert.equal((await d.send('lock', { session: s2, name: 'L', wait: 0 })).error, 'BUSY');
  // a waiting lock does not delay a later request
  const waiting = d.send('lock', { session: s2, name: 'L', wait: 10 });
  const safe = await d.ok('session.safe', { session: s1 });
  assert.ok(safe.remaining_ms > 0 && safe.lost === false);
  const w = (await d.ok('watch.start', { prefix: 'k' })).watch;
  const rev = (await d.ok('put', { key: 'k1', value: 'v', session: s1, fence: ['L', t1] })).rev;
  assert.ok(rev > t1);
  await d.ok('unlock', { session: s1, name: 'L' });
  const t2 = (await waiting).token;
  assert.ok(t2 > t1);
  assert.equal((await d.send('put', { key: 'k1', value: 'x', fence: ['L', t1] })).error, 'STALE');
  assert.equal((await d.send('fence.check', { name: 'L', token: t1 })).error, 'STALE');
  await d.ok('fence.check', { name: 'L', token: t2 });
  assert.equal((await d.send('put', { key: 'k1', value: 'x', ifrev: 1 })).error, 'IFREV');
  const g = await d.ok('get', { key: 'k1' });
  assert.deepEqual([g.value, g.mod_rev], ['v', rev]);
  assert.equal((await d.send('get', { key: 'nope' })).error, 'NOTFOUND');
  assert.equal((await d.send('unlock', { session: s1, name: 'L' })).error, 'NOTHOLDER');
  assert.equal((await d.send('sem.acquire', { session: s1, name: 'L', limit: 2, wait: 0 })).error, 'WRONGTYPE');
  await d.ok('sem.acquire', { session: s1, name: 'S', limit: 1, wait: 0 });
  assert.equal((await d.send('sem.acquire', { session: s2, name: 'S', limit: 1, wait: 0.2 })).error, 'TIMEOUT');
  await d.ok('sem.release', { session: s1, name: 'S' });
  const lt = (await d.ok('elect.campaign', { session: s1, name: 'E', value: 'me', wait: 1 })).token;
  const ld = await d.ok('elect.leader', { name: 'E' });
  assert.deepEqual([ld.value, ld.token], ['me', lt]);
  const ob = await d.ok('elect.observe', { name: 'E', after_rev: 0, wait: 1 });
  assert.equal(ob.value, 'me');
  assert.equal((await d.send('elect.observe', { name: 'E', after_rev: ob.rev, wait: 0.2 })).error, 'TIMEOUT');
  await d.ok('elect.resign', { session: s1, name: 'E' });
  assert.equal((await d.send('elect.leader', { name: 'E' })).error, 'NOTFOUND');
  await d.ok('del', { key: 'k1', session: s2 });
  const stop = await d.ok('watch.stop', { watch: w });
  const evs = d.events.filter((e) => e.event === 'watch' && e.watch === w);
  assert.deepEqual(evs.map((e) => [e.type, e.name]), [['put', 'k1'], ['del', 'k1']]);
  assert.equal(stop.last, evs[1].id);
  const end = d.events.find((e) => e.event === 'watch_end' && e.watch === w);
  assert.deepEqual([end.error, end.last], [null, evs[1].id]);
  await d.ok('session.close', { session: s2 });
  assert.equal((await d.send('lock', { session: s2, name: 'L', wait: 0 })).error, 'SESSION');
  await d.ok('quit');
  assert.equal(await d.exited, 0);
  assert.equal(d.events.filter((e) => e.event === 'lost').length, 0, 'closing is not a loss');
});

test('agent: the lost event when the server stops answering past the safe deadline', async () => {
  const d = new Driver({ FL_ENDPOINTS: node.endpoint });
  await d.ready();
  const s = (await d.ok('session.open', { ttl: 1.5 })).session;
  const wallBefore = Date.now();
  node.sigstop();
  try {
    const lost = await until(() => d.events.find((e) => e.event === 'lost'), 30000, 'lost event');
    assert.equal(lost.session, s);
    assert.ok(lost.wall_ms >= wallBefore && typeof lost.mono_ms === 'number');
    const safe = await d.ok('session.safe', { session: s });
    assert.equal(safe.lost, true);
    assert.ok(safe.remaining_ms <= 0);
  } finally {
    node.sigcont();
  }
  assert.equal((await d.send('put', { key: 'x', value: '1', session: s })).error, 'SESSION');
  await d.ok('quit');
  assert.equal(await d.exited, 0);
});

test('agent: a client that cannot be made answers ready false', async () => {
  const d = new Driver({ FL_ENDPOINTS: '' });
  const r = await d.ready();
  assert.equal(r.ready, false);
  assert.equal(typeof r.error, 'string');
  assert.equal(await d.exited, 0);
  await sleep(0);
});
