// SPDX-License-Identifier: Apache-2.0
// Cooperative revocation against one real fencelockd: client.revoke() asks the holder,
// session.onRevoke() tells it (name, token, session, deadline, reason, who asked), only for
// its own grant, and a deadline takes the grant from a holder that does not let go: the waiter
// gets a larger token, the old one is stale, the holder's session lives on. Skipped on a
// server without LOCK.REVOKE.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fl = require('fencelock');
const { Nodes } = require('./helpers');

let nodes;
let client;

before(async () => {
  nodes = new Nodes();
  const node = await nodes.start();
  client = new fl.Client({ endpoints: node.endpoint, timeoutMs: 5000 });
});

after(async () => {
  client.close();
  await nodes.finish();
});

/** The next request delivered to the queue, or null after ms. */
function next(queue, ms) {
  return new Promise((resolve) => {
    if (queue.items.length) return resolve(queue.items.shift());
    const t = setTimeout(() => {
      queue.waiter = null;
      resolve(null);
    }, ms);
    queue.waiter = (r) => {
      clearTimeout(t);
      queue.waiter = null;
      resolve(r);
    };
  });
}

test('revoke: the holder is told, and a deadline takes the grant', async (t) => {
  const probe = await client.revoke('rv/none').then(
    () => null,
    (e) => e,
  );
  if (probe instanceof fl.ServerError && /unknown command/.test(probe.message)) {
    t.skip('this fencelockd has no LOCK.REVOKE');
    return;
  }
  assert.ok(probe instanceof fl.NotHolderError, `revoke of a free lock: ${probe}`);
  const a = await client.session({ ttlMs: 10000 });
  const b = await client.session({ ttlMs: 10000 });
  const h = await a.lock('rv/job');
  const other = await a.lock('rv/job2');
  const queue = { items: [], waiter: null };
  const rw = a.onRevoke('rv/job', h.token, (r) => (queue.waiter ? queue.waiter(r) : queue.items.push(r)));
  await client.revoke('rv/job2', { reason: 'other' }); // another grant: not delivered
  assert.equal(await client.revoke('rv/job', { reason: 'please' }), h.token);
  let r = await next(queue, 30000);
  assert.ok(r, 'no revoke request delivered');
  assert.deepEqual({ ...r, by: '' }, { name: 'rv/job', token: h.token, sid: a.sid, deadlineMs: 0, reason: 'please', by: '' });
  assert.ok(r.by.length > 0);

  await client.revoke('rv/job', { deadlineMs: 500, reason: 'deploy' });
  r = await next(queue, 30000);
  assert.ok(r, 'no second revoke request delivered');
  assert.equal(r.deadlineMs, 500);
  assert.equal(r.reason, 'deploy');
  const bh = await b.lock('rv/job', { waitMs: 30000 });
  assert.ok(bh.token > h.token, "the waiter's token above the revoked one");
  assert.equal(await client.fenceCheck('rv/job', h.token), false, 'the revoked token is stale');
  assert.equal(a.lost, false, "the holder's session lives on");
  assert.equal(await client.fenceCheck('rv/job2', other.token), true);
  assert.equal(queue.items.length, 0, 'a request of another grant was delivered');
  rw.stop();
  await rw.done;
  await a.close();
  await b.close();
});
