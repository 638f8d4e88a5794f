// SPDX-License-Identifier: Apache-2.0
// Against one real fencelockd: LOCK ... NOTIFY told to the holder through session.onWaiter()
// (once per waiting session, never for a waiter that did not ask), INCR (signed, fenced,
// through a session, an error for a value that is no integer) and weighted semaphores (k
// permits at once, FIFO without overtaking, SEM.SETLIMIT).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fl = require('fencelock');
const { Nodes, asMap, raw, until } = require('./helpers');

let nodes;
let node;
let client;

before(async () => {
  nodes = new Nodes();
  node = await nodes.start();
  client = new fl.Client({ endpoints: node.endpoint, timeoutMs: 5000 });
});

after(async () => {
  client.close();
  await nodes.finish();
});

/** The sids queued on a lock (LOCK.INFO) or semaphore (SEM.INFO), as "sid,sid". */
async function waiters(cmd, name) {
  const r = await raw(node.port, [cmd, name]);
  return r ? (asMap(r).waiters ?? []).map(String).join(',') : '';
}

test('notify: the holder is told of each waiter that asked, once', async () => {
  const [h, quiet, loud, loud2] = await Promise.all([0, 1, 2, 3].map(() => client.session({ ttlMs: 10000 })));
  await assert.rejects(h.lock('nt/job', { shared: true, notify: true }), TypeError);
  const held = await h.lock('nt/job');
  const got = [];
  const ww = h.onWaiter('nt/job', held.token, (w) => got.push(w));
  const want = [];
  for (const [s, notify] of [[quiet, false], [loud, true], [loud2, true]]) {
    s.lock('nt/job', { waitMs: 60000, notify }).catch(() => {}); // ends with its session
    want.push(String(s.sid));
    await until(async () => (await waiters('LOCK.INFO', 'nt/job')) === want.join(','), 30000, 'queued');
  }
  // In stream order: loud's, then loud2's; quiet asked for nothing and is not told.
  await until(() => got.length >= 2, 30000, 'two waiters told');
  assert.deepEqual(
    got.map((w) => [w.name, w.token, w.sid]),
    [['nt/job', held.token, loud.sid], ['nt/job', held.token, loud2.sid]],
  );
  for (const w of got) assert.ok(w.waitMs > 0 && w.waitMs <= 60000, `wait_ms ${w.waitMs}`);
  ww.stop();
  await ww.done;
  assert.equal(got.length, 2, 'an extra waiter told');
  for (const s of [h, quiet, loud, loud2]) await s.close();
});

test('incr: signed, fenced, exactly once through a session', async () => {
  assert.equal(await client.incr('ctr/a'), 1);
  assert.equal(await client.incr('ctr/a', -5), -4);
  const s = await client.session({ ttlMs: 10000 });
  const h = await s.lock('ctr/lock');
  assert.equal(await client.incr('ctr/a', 10, { session: s, fence: h }), 6);
  await assert.rejects(client.incr('ctr/a', 1, { fence: ['ctr/lock', h.token + 100] }), fl.StaleError);
  assert.equal((await client.kvGet('ctr/a')).value, '6');
  await client.put('ctr/text', 'abc');
  await assert.rejects(client.incr('ctr/text', 1), fl.ServerError);
  await s.close();
});

test('weighted semaphore: k permits at once, FIFO without overtaking, setlimit', async () => {
  const [a, b, d] = await Promise.all([0, 1, 2].map(() => client.session({ ttlMs: 10000 })));
  await assert.rejects(a.acquire('ws/pool', 3, { permits: 4 }), TypeError);
  const ha = await a.acquire('ws/pool', 3, { permits: 2 });
  await assert.rejects(b.acquire('ws/pool', 3, { permits: 2, waitMs: 0 }), fl.BusyError);
  const pb = b.acquire('ws/pool', 3, { permits: 2, waitMs: 60000 });
  await until(async () => (await waiters('SEM.INFO', 'ws/pool')) === String(b.sid), 30000, 'b queued');
  // one permit is free, but b asked first for two: d's one does not overtake it
  await assert.rejects(d.acquire('ws/pool', 3, { waitMs: 0 }), fl.BusyError);
  await ha.release();
  const hb = await pb;
  assert.ok(hb.token > ha.token, `b's token ${hb.token} above a's ${ha.token}`);
  assert.equal(await client.semSetLimit('ws/pool', 4), true);
  await d.acquire('ws/pool', 4, { permits: 2, waitMs: 0 }); // 2 of 4 free now
  assert.equal(await client.semSetLimit('ws/none', 4), true); // before the semaphore exists
  await d.acquire('ws/none', 3, { permits: 3, waitMs: 0 }); // the operator's 4 wins over 3
  assert.equal(await client.semLimitReset('ws/none'), true);
  assert.equal(await client.semLimitReset('ws/none'), false);
  for (const s of [a, b, d]) await s.close();
});
