// SPDX-License-Identifier: Apache-2.0
// The client's API against one real fencelockd: sessions, locks, fencing, conditional writes,
// shared locks, semaphores, elections, watch, cancellation and the lost signal.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fl = require('fencelock');
const { Nodes, raw, until } = require('./helpers');

let nodes;
let node;
let client;

before(async () => {
  nodes = new Nodes();
  node = await nodes.start(['--event-history', '64']);
  client = new fl.Client({ endpoints: node.endpoint, timeoutMs: 5000 });
});

after(async () => {
  client.close();
  await nodes.finish();
});

test('lock, fenced put, stale token refused, release with await using', async () => {
  const s = await client.session({ ttlMs: 3000, name: 'single' });
  let token;
  {
    await using h = await s.lock('inv', { waitMs: 1000 });
    token = h.token;
    assert.ok(token > 0);
    assert.equal(h.signal.aborted, false);
    const rev = await s.put('stock', '9', { fence: h });
    assert.ok(rev > token);
    assert.equal(await client.get('stock'), '9');
    assert.equal(await client.fenceCheck('inv', token), true);
  }
  // released at the end of the block: the token is no longer current
  assert.equal(await client.fenceCheck('inv', token), false);
  await assert.rejects(client.put('stock', '0', { fence: ['inv', token] }), fl.StaleError);
  await assert.rejects(s.put('stock', '0', { fence: { name: 'inv', token } }), (e) => e.word === 'STALE');
  assert.equal(await client.get('stock'), '9');
  await s.close();
  assert.equal(s.signal.aborted, true);
  await assert.rejects(s.lock('inv'), fl.SessionLostError);
});

test('try: busy while held; try/finally release; a second session gets a higher token', async () => {
  const a = await client.session({ ttlMs: 3000 });
  const b = await client.session({ ttlMs: 3000 });
  const h = await a.lock('busy');
  try {
    assert.equal(await b.tryLock('busy'), null);
    await assert.rejects(b.lock('busy', { waitMs: 0 }), fl.BusyError);
    await assert.rejects(b.lock('busy', { waitMs: 200 }), fl.LockTimeoutError);
  } finally {
    await h.release();
  }
  assert.equal(h.signal.aborted, true, 'a released hold aborts its signal');
  const h2 = await b.lock('busy', { waitMs: 1000 });
  assert.ok(h2.token > h.token);
  await h2.release();
  await assert.rejects(b.unlock('busy'), fl.NotHolderError);
  await a.close();
  await b.close();
});

test('an AbortSignal cancels a wait and the session leaves the queue', async () => {
  const a = await client.session({ ttlMs: 3000 });
  const b = await client.session({ ttlMs: 3000 });
  const h = await a.lock('cancel');
  const ac = new AbortController();
  const p = b.lock('cancel', { waitMs: 20000, signal: ac.signal });
  await until(async () => {
    const i = await client.lockInfo('cancel');
    return i && Array.isArray(i.waiters) && i.waiters.length === 1;
  }, 10000, 'b queued');
  ac.abort();
  await assert.rejects(p, fl.AbortError);
  const i = await client.lockInfo('cancel');
  assert.deepEqual(i.waiters, [], 'the cancelled waiter left the queue');
  await h.release();
  assert.equal(await client.lockInfo('cancel'), null, 'nobody was granted the lock');
  await a.close();
  await b.close();
});

test('ifRev, del, kvGet, keys, writes without a session', async () => {
  const rev = await client.put('c/k', 'v1', { ifRev: 0 });
  await assert.rejects(client.put('c/k', 'v2', { ifRev: 0 }), fl.IfRevError);
  const kv = await client.kvGet('c/k');
  assert.equal(kv.value, 'v1');
  assert.equal(kv.modRev, rev);
  const rev2 = await client.put('c/k', 'v2', { ifRev: rev });
  assert.ok(rev2 > rev);
  assert.deepEqual(await client.keys('c/'), ['c/k']);
  assert.equal(await client.del('c/k', { ifRev: rev2 }), true);
  assert.equal(await client.del('c/k'), false);
  assert.equal(await client.get('c/k'), null);
  assert.equal(await client.kvGet('c/k'), null);
});

test('shared locks: readers together, a writer waits', async () => {
  const r1 = await client.session({ ttlMs: 3000 });
  const r2 = await client.session({ ttlMs: 3000 });
  const w = await client.session({ ttlMs: 3000 });
  const a = await r1.lock('rw', { shared: true });
  const b = await r2.lock('rw', { shared: true, waitMs: 0 });
  assert.notEqual(a.token, b.token);
  assert.equal(await w.tryLock('rw'), null);
  await assert.rejects(client.put('rw/x', '1', { fence: a }), fl.StaleError, 'readers do not write');
  await a.release();
  await b.release();
  const x = await w.lock('rw', { waitMs: 1000 });
  await x.release();
  await Promise.all([r1.close(), r2.close(), w.close()]);
});

test('semaphores and the one namespace', async () => {
  const s = [await client.session({ ttlMs: 3000 }), await client.session({ ttlMs: 3000 }), await client.session({ ttlMs: 3000 })];
  const p1 = await s[0].acquire('pool', 2);
  const p2 = await s[1].acquire('pool', 2);
  await assert.rejects(s[2].acquire('pool', 2, { waitMs: 0 }), fl.BusyError);
  await assert.rejects(s[2].lock('pool'), fl.WrongTypeError);
  assert.equal(await client.fenceCheck('pool', p1.token), true);
  await p1.release();
  const p3 = await s[2].acquire('pool', 2, { waitMs: 1000 });
  assert.ok(p3.token > p2.token);
  await p2.release();
  await p3.release();
  await Promise.all(s.map((x) => x.close()));
});

test('elections: campaign, leader, observe, proclaim, resign', async () => {
  const a = await client.session({ ttlMs: 3000 });
  const b = await client.session({ ttlMs: 3000 });
  const la = await a.campaign('sched', 'host-a');
  let info = await client.leader('sched');
  assert.equal(info.sid, a.sid);
  assert.equal(info.value, 'host-a');
  const seen = await client.observe('sched');
  assert.equal(seen.sid, a.sid);
  const pb = b.campaign('sched', 'host-b', { waitMs: 10000 });
  const rev = await la.proclaim('host-a2');
  const ob = await client.observe('sched', { afterRev: seen.rev, waitMs: 5000 });
  assert.equal(ob.value, 'host-a2');
  assert.equal(ob.rev, rev);
  await la.resign();
  const lb = await pb;
  assert.ok(lb.token > la.token);
  info = await client.leader('sched');
  assert.equal(info.sid, b.sid);
  await assert.rejects(a.proclaim('sched', la.token, 'x'), fl.StaleError);
  assert.equal(await client.observe('sched', { afterRev: (await client.leader('sched')).rev, waitMs: 100 }), null);
  await lb.resign();
  assert.equal(await client.leader('sched'), null);
  await a.close();
  await b.close();
});

test('watch: every event once and in order, resumable; CompactedError past the history', async () => {
  // from a known id (a write outside the prefix): nothing depends on when the reader starts
  const start = await client.put('wx', 'start');
  const w = client.watch('wt/', { from: `${start}-0` });
  const got = [];
  const reader = (async () => {
    for await (const ev of w) {
      got.push(ev);
      if (got.length === 5) break;
    }
  })();
  const revs = [];
  for (let i = 0; i < 5; i++) revs.push(await client.put(`wt/${i}`, String(i)));
  await reader;
  assert.deepEqual(got.map((e) => e.rev), revs);
  assert.deepEqual(got.map((e) => e.type), ['put', 'put', 'put', 'put', 'put']);
  assert.deepEqual(got.map((e) => e.name), ['wt/0', 'wt/1', 'wt/2', 'wt/3', 'wt/4']);
  // resume after the second: the last three again, in order
  const w2 = client.watch('wt/', { from: got[1].id });
  const again = [];
  for await (const ev of w2) {
    again.push(ev.id);
    if (again.length === 3) break;
  }
  assert.deepEqual(again, got.slice(2).map((e) => e.id));
  // --event-history 64: an id from before the retained history is refused, never a gap
  for (let i = 0; i < 80; i++) await client.put('wt/fill', String(i));
  const w3 = client.watch('wt/', { from: got[0].id });
  await assert.rejects(async () => {
    for await (const ev of w3) void ev;
  }, (e) => e instanceof fl.CompactedError && /^\d+-\d+$/.test(e.oldest) && e.after !== '');
});

test('the session signal aborts when a server says the session is gone', async () => {
  const s = await client.session({ ttlMs: 1500 });
  const h = await s.lock('revoked');
  const sessionAborted = new Promise((r) => s.signal.addEventListener('abort', () => r(s.signal.reason)));
  const holdAborted = new Promise((r) => h.signal.addEventListener('abort', () => r(h.signal.reason)));
  assert.equal(await raw(node.port, ['SESSION.REVOKE', s.sid]), 'OK');
  const why = await sessionAborted; // the next keepalive (TTL/3) is answered -NOSESSION
  assert.ok(why instanceof fl.SessionLostError);
  assert.ok((await holdAborted) instanceof fl.SessionLostError);
  assert.equal(s.safeUntil(), 0);
  assert.equal(s.lost, true);
  await assert.rejects(s.put('k', 'v'), fl.SessionLostError);
  await h.release(); // gone with the session: not an error
  await s.close();
});
