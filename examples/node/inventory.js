#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Inventory service with fencing, on the Node.js client (clients/node).
//
// The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
// pause): its session stops renewing. Its lease runs out, our worker is granted the lock, sells
// one item with a fenced write, and the zombie, waking up, writes with its old token: the server
// refuses it (fencelock.StaleError). That refusal is what fencing is for. The same story with a
// plain Redis client (ioredis) and no fencelock library is any_redis_client.js.
//
//   node examples/node/inventory.js [host:port,...]
//
// The endpoints are argv[2], else $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480. Any node will do:
// the client follows -NOTLEADER. Exits 0 if everything behaved as fencelock promises, 1 otherwise.
'use strict';

const fencelock = require('fencelock');

class Unexpected extends Error {}

// Queued behind the zombie (FIFO), granted once its lease expired: sell one item.
async function sell(c, me, zombieToken) {
  const t0 = performance.now();
  // lock.signal aborts (reason: a SessionLostError) once the lease can no longer be trusted.
  const lock = await me.lock('inventory', { waitMs: 10000 });
  try {
    if (lock.token <= zombieToken) {
      throw new Unexpected(`token ${lock.token} does not exceed the zombie's ${zombieToken}`);
    }
    const waited = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(`worker: got inventory after ${waited} s, fencing token ${lock.token}`);
    const raw = await c.get('stock');
    const stock = raw === null ? 100 : Number(raw); // first run: start with 100 items
    console.log(`worker: stock is ${stock}`);
    lock.signal.throwIfAborted(); // our lease may be gone: not acting
    // Accepted only while our token is the current holder's; exactly once (REQ).
    const rev = await me.put('stock', String(stock - 1), { fence: lock });
    console.log(`worker: sold one, stock ${stock - 1} written at revision ${rev}`);

    // The zombie wakes up and writes what it computed before freezing.
    try {
      await c.put('stock', '0', { fence: ['inventory', zombieToken] });
      throw new Unexpected(`the zombie's write with stale token ${zombieToken} was accepted`);
    } catch (e) {
      if (!(e instanceof fencelock.StaleError)) throw e;
      console.log(`zombie: write with token ${zombieToken} refused: -${e.message}`);
    }
    if (Number(await c.get('stock')) !== stock - 1) {
      throw new Unexpected('the stock changed after a refused write');
    }
  } finally {
    await lock.release();
  }
}

async function main(c) {
  // The zombie: a 1 s lease whose keepalives stop at once, so it runs out while "frozen".
  const zombie = await c.session({ ttlMs: 1000, name: 'zombie' });
  const held = await zombie.tryLock('inventory');
  if (held === null) {
    await zombie.close();
    throw new Unexpected('the inventory lock is already taken; is another example running?');
  }
  zombie.abandon();
  console.log(`zombie: session ${zombie.sid} holds inventory with token ${held.token}, `
    + 'then freezes');

  const ttlMs = 2000;
  const me = await c.session({ ttlMs, name: 'inventory-worker' });
  try {
    console.log(`worker: session ${me.sid} (ttl ${ttlMs} ms) on ${c.leaderAddress}`);
    await sell(c, me, held.token);
  } finally {
    await me.close();
  }
  console.log(`worker: unlocked and closed session ${me.sid}`);
}

const endpoints = process.argv[2]
  || (process.env.FENCELOCK_ENDPOINTS || '').trim()
  || '127.0.0.1:7480';
const client = new fencelock.Client({ endpoints });
main(client)
  .catch((e) => {
    console.error(`inventory: unexpected: ${e.message}`);
    process.exitCode = 1;
  })
  .finally(() => client.close());
