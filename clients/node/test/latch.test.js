// SPDX-License-Identifier: Apache-2.0
// Against one real fencelockd: countdown latches (released at zero, broken by a joined
// session's end), double barriers, reentrant sessions (the same token, a hold count), VALUE
// and MAXHOLD on a lock (lockState, the stale token after the max hold) and LOCK.HISTORY
// (newest first, CompactedError).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fl = require('fencelock');
const { Nodes } = require('./helpers');

let nodes;
let client;

before(async () => {
  nodes = new Nodes();
  const node = await nodes.start(['--history-per-lock', '2']);
  client = new fl.Client({ endpoints: node.endpoint, timeoutMs: 5000 });
});

after(async () => {
  client.close();
  await nodes.finish();
});

test('latch: released at zero, broken by a joined session that ends', async () => {
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => client.session({ ttlMs: 10000 })));
  await client.latchCreate('lt/a', 2);
  await a.latchJoin('lt/a');
  await b.latchJoin('lt/a');
  assert.equal(await a.latchCountdown('lt/a'), 1);
  assert.equal(await client.latchWait('lt/a', { waitMs: 0 }), false, 'one count left');
  const w = client.latchWait('lt/a', { waitMs: 30000 });
  assert.equal(await b.latchCountdown('lt/a'), 0);
  assert.equal(await w, true, 'the parked wait at zero');
  const li = await client.latchInfo('lt/a');
  assert.deepEqual([li.type, li.state, li.count, li.remaining], ['latch', 'zero', 2, 0]);
  assert.equal(await client.latchDelete('lt/a'), true);
  assert.equal(await client.latchInfo('lt/a'), null);

  await client.latchCreate('lt/b', 1);
  await c.latchJoin('lt/b');
  // caught at once: it may fail while close() is awaited
  const wb = client.latchWait('lt/b', { waitMs: 30000 }).then(
    (v) => v,
    (e) => e,
  );
  await c.close();
  const e = await wb;
  assert.ok(e instanceof fl.BrokenError && e.word === 'BROKEN', String(e));
  await assert.rejects(client.latchCreate('lt/b', 1), fl.BrokenError);
  assert.equal((await client.latchInfo('lt/b')).brokenSid, c.sid);
  assert.equal(await client.latchDelete('lt/b'), true);
  await Promise.all([a.close(), b.close()]);
});

test('barrier: enter and leave together', async () => {
  const [a, b] = await Promise.all([0, 1].map(() => client.session({ ttlMs: 10000 })));
  assert.equal(await a.barrierEnter('br/x', 2, { waitMs: 0 }), false, 'not full yet');
  const ea = a.barrierEnter('br/x', 2, { waitMs: 30000 });
  assert.equal(await b.barrierEnter('br/x', 2, { waitMs: 30000 }), true);
  assert.equal(await ea, true);
  const la = a.barrierLeave('br/x', { waitMs: 30000 });
  assert.equal(await b.barrierLeave('br/x', { waitMs: 30000 }), true);
  assert.equal(await la, true);
  assert.equal(await client.latchInfo('br/x'), null, 'gone once everybody left');
  await Promise.all([a.close(), b.close()]);
});

test('reentrant: the same token, a hold count, the last unlock releases', async () => {
  await assert.rejects(client.session({ ttlMs: 10000, maxCount: 2 }), TypeError);
  const r = await client.session({ ttlMs: 10000, reentrant: true, maxCount: 2 });
  const h1 = await r.lock('re/x', { waitMs: 5000 });
  const h2 = await r.lock('re/x', { waitMs: 5000 });
  assert.equal(h2.token, h1.token, 'the same token');
  let li = await client.lockState('re/x');
  assert.deepEqual([li.holder, li.token, li.count], [r.sid, h1.token, 2]);
  await assert.rejects(r.lock('re/x', { waitMs: 5000 }), fl.ServerError);
  await h2.release();
  li = await client.lockState('re/x');
  assert.equal(li.count, 1);
  await h1.release();
  assert.equal(await client.lockState('re/x'), null);
  await r.close();
});

test('value and max hold on a lock, and its history', async () => {
  const h = await client.session({ ttlMs: 10000, name: 'holder' });
  const w = await client.session({ ttlMs: 10000 });
  await assert.rejects(h.lock('mv/x', { shared: true, value: 'v' }), TypeError);
  const before = fl.now();
  const held = await h.lock('mv/x', { waitMs: 5000, value: 'host-a', maxHoldMs: 1000 });
  assert.ok(held.maxHoldDeadline !== null && held.maxHoldDeadline - before <= 1000, 'never after the servers');
  const li = await client.lockState('mv/x');
  assert.deepEqual([li.value, li.maxHoldMs, li.transitions, li.count], ['host-a', 1000, 0, 1]);
  const next = await w.lock('mv/x', { waitMs: 30000 }); // granted when the max hold ends
  assert.ok(next.token > held.token);
  await assert.rejects(client.put('mv/k', 'late', { fence: ['mv/x', held.token] }), fl.StaleError);
  assert.equal(h.lost, false, 'the session lives on');
  await next.release();
  const hs = await client.lockHistory('mv/x');
  assert.equal(hs.length, 2);
  assert.deepEqual([hs[0].token, hs[0].sid, hs[0].endedBy], [next.token, w.sid, 'unlock']);
  assert.deepEqual([hs[1].token, hs[1].sid, hs[1].sessionName], [held.token, h.sid, 'holder']);
  assert.ok(!['', 'unlock'].includes(hs[1].endedBy), hs[1].endedBy);
  await h.lock('mv/x', { waitMs: 5000 }); // a third grant pushes the first out (2 kept)
  await assert.rejects(client.lockHistory('mv/x', { before: next.token }), (e) => e instanceof fl.CompactedError && e.word === 'COMPACTED');
  await Promise.all([h.close(), w.close()]);
});
