// SPDX-License-Identifier: Apache-2.0
// Several locks at once and deadlocks against one real fencelockd: lockMulti's all-or-nothing
// grant with a token per name in the order given, shared names, a waiting request granted when
// the last of its names is released, unlockMulti, withLocks; a two-session cycle refused with
// DeadlockError and its cycle text.
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

async function waits(name, sid) {
  const r = await raw(node.port, ['LOCK.INFO', name]);
  return r !== null && (asMap(r).waiters ?? []).map(String).includes(String(sid));
}

test('lockMulti: all or nothing, a token per name in the order given, shared names', async () => {
  const a = await client.session({ ttlMs: 10000 });
  const b = await client.session({ ttlMs: 10000 });
  const h = await a.lockMulti(['m/z', 'm/a', 'm/r'], { shared: ['m/r'], waitMs: 5000 });
  const t = h.tokens;
  assert.equal(t.length, 3);
  // one entry: consecutive revisions in the byte order of the names, listed as given
  assert.equal(t[1] + 1, t[2]);
  assert.equal(t[2] + 1, t[0]);
  assert.equal(h.token('m/a'), t[1]);
  assert.equal(await client.fenceCheck('m/z', t[0]), true);
  assert.equal(await client.fenceCheck('m/a', t[1]), true);
  // m/r is shared: b reads it too
  const r = await b.tryLock('m/r', { shared: true });
  assert.ok(r);
  await r.release();
  // a try over a held name takes nothing
  assert.equal(await b.tryLockMulti(['m/free', 'm/a']), null);
  await assert.rejects(b.lockMulti(['m/free', 'm/a'], { waitMs: 0 }), fl.BusyError);
  const f = await b.tryLock('m/free');
  assert.ok(f, 'all or nothing');
  await f.release();

  // b waits for {m/a, m/z}: granted only when both are released, above a's tokens
  let granted = null;
  const wait = b.lockMulti(['m/a', 'm/z'], { waitMs: 30000 }).then((x) => (granted = x));
  await until(() => waits('m/z', b.sid), 30000, 'b queued');
  await a.unlock('m/a');
  assert.equal(h.signal.aborted, false);
  assert.equal(granted, null, 'granted while a still holds m/z');
  await h.release();
  assert.equal(h.signal.aborted, true, 'a released set aborts its signal');
  const bh = await wait;
  assert.ok(bh.tokens.every((x) => x > t[0]), "b's tokens above a's");
  await b.unlockMulti(['m/a', 'm/z']);

  // the callback form: held inside, released after, also when the callback throws
  const v = await a.withLocks(['w/1', 'w/2'], {}, async (held) => {
    assert.equal(held.tokens.length, 2);
    assert.equal(await b.tryLock('w/2'), null);
    return 7;
  });
  assert.equal(v, 7);
  await assert.rejects(
    a.withLocks(['x/1'], {}, async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  const both = await b.tryLockMulti(['w/1', 'w/2', 'x/1']);
  assert.ok(both, 'released after withLocks');
  await a.close();
  await b.close();
});

test('a wait that closes a cycle is refused DeadlockError with the cycle', async () => {
  const a = await client.session({ ttlMs: 10000 });
  const b = await client.session({ ttlMs: 10000 });
  await a.lock('d/a');
  await b.lock('d/b');
  const aw = a.lock('d/b', { waitMs: 30000 });
  await until(() => waits('d/b', a.sid), 30000, 'a queued');
  const e = await b.lock('d/a', { waitMs: 20000 }).then(
    () => null,
    (x) => x,
  );
  assert.ok(e instanceof fl.DeadlockError, `got ${e}`);
  assert.equal(e.word, 'DEADLOCK');
  assert.match(e.cycle, /^cycle of 2:/);
  assert.ok(e.cycle.includes('-d/a->') && e.cycle.includes('-d/b->'), e.cycle);
  assert.equal(await waits('d/a', b.sid), false, 'the refused wait was not queued');
  // nothing else changed: b still holds d/b, a still waits and is granted when b lets go
  await b.unlock('d/b');
  const ha = await aw;
  assert.ok(ha.token > 0);
  await a.close();
  await b.close();
});
