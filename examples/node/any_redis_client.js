#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Inventory service with fencing: fencelock from Node.js with no fencelock library.
//
// fencelock speaks the Redis protocol, so a plain Redis client (ioredis) is enough: every
// command goes through its generic `redis.call(name, ...args)`. The same story on the fencelock
// package (clients/node), which does the keepalive, the -NOTLEADER following and the REQ
// numbering written out here, is inventory.js.
//
// The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
// pause) without renewing its session. Its lease runs out, our worker is granted the lock, sells
// one item with a fenced write, and the zombie, waking up, tries to write with its old token: the
// server refuses it with -STALE. That refusal is what fencing is for.
//
//   node examples/node/any_redis_client.js [host:port]
//
// The endpoint is argv[2], else the first entry of $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480.
// Exits 0 if everything behaved as fencelock promises, 1 otherwise.
'use strict';

const Redis = require('ioredis');

class Unexpected extends Error {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One connection that follows the leader and retries safely. Any node may be given: a follower
// answers writes with -NOTLEADER host:port and we simply reconnect there. -UNKNOWN means a leader
// change left the outcome open; resending the very same command (with the same REQ sid seq) is
// safe because the server deduplicates it.
class Client {
  constructor(endpoint) {
    this.connect(endpoint);
  }

  connect(endpoint) {
    this.closed = false;
    const i = endpoint.lastIndexOf(':');
    this.endpoint = endpoint;
    this.redis = new Redis({
      host: endpoint.slice(0, i),
      port: Number(endpoint.slice(i + 1)),
      // Fail a command as soon as its connection is lost (our loop below resends it) and
      // reconnect at a steady pace instead of ioredis' growing back-off.
      maxRetriesPerRequest: 0,
      retryStrategy: () => 100,
      enableReadyCheck: false, // the ready check parses Redis' INFO, which fencelock's is not
    });
    // Connection errors also reject the pending commands, and call() handles them there;
    // without a listener ioredis would print each reconnect failure.
    this.redis.on('error', () => {});
  }

  async call(...args) {
    let last = null;
    for (let attempt = 0; attempt < 50; attempt++) { // bounded: never hang on a broken cluster
      if (this.closed) throw new Unexpected(`${args[0]}: client closed`);
      try {
        return await this.redis.call(...args);
      } catch (e) {
        last = e;
        if (!(e instanceof Redis.ReplyError)) { // connection lost: the same REQ makes a resend safe
          await sleep(100);
          continue;
        }
        const [code, where] = e.message.split(' ');
        if (code === 'NOTLEADER' && where) {
          this.redis.disconnect();
          this.connect(where);
          continue;
        }
        if (code === 'UNKNOWN' || code === 'NOLEADER') { // election under way: wait, then resend
          await sleep(100);
          continue;
        }
        throw e;
      }
    }
    throw new Unexpected(`${args[0]}: no answer after 50 attempts (last: ${last.message})`);
  }

  close() {
    this.closed = true;
    this.redis.disconnect();
  }
}

// A lease plus the numbering every mutating command needs for exactly-once retries.
class Session {
  static async open(client, ttlMs, name) {
    const s = new Session();
    s.sid = await client.call('SESSION.OPEN', ttlMs, 'NAME', name);
    s.seq = 0;
    return s;
  }

  // Each mutating command gets a fresh, increasing seq; a resend reuses its args as-is.
  req() {
    this.seq += 1;
    return ['REQ', this.sid, this.seq];
  }
}

// Renews the session every TTL/3 on its own connection, so a long blocked LOCK ... WAIT on the
// main connection never delays a renewal (replies on one connection come back in order).
// Stops at the first failure and remembers it: after that the lease may be gone and nothing done
// under the lock can be trusted.
function startKeepalive(endpoint, sid, ttlMs) {
  const ka = { client: new Client(endpoint), error: null, renewals: 0, stopped: false };
  // A timeout chain rather than setInterval: a renewal that is still retrying never overlaps
  // the next one.
  const renew = async () => {
    try {
      await ka.client.call('SESSION.KEEPALIVE', sid);
      ka.renewals += 1;
    } catch (e) {
      if (ka.stopped) return; // stop() closed the connection under a renewal in flight
      ka.error = e;
      console.log(`keepalive: FAILED (${e.message}); the lock may be lost`);
      return;
    }
    if (!ka.stopped) ka.timer = setTimeout(renew, ttlMs / 3);
  };
  ka.timer = setTimeout(renew, ttlMs / 3);
  ka.stop = () => {
    ka.stopped = true;
    clearTimeout(ka.timer);
    ka.client.close();
  };
  return ka;
}

async function main(c) {
  // The zombie: 1 s lease, never renewed, so it runs out while the zombie is "frozen".
  const zombie = await Session.open(c, 1000, 'zombie');
  const zombieToken = await c.call('LOCK', 'inventory', zombie.sid, ...zombie.req());
  if (zombieToken === null) {
    throw new Unexpected('the inventory lock is already taken; is another example running?');
  }
  console.log(`zombie: session ${zombie.sid} holds inventory with token ${zombieToken}, `
    + 'then freezes');

  const ttl = 2000; // short so that a renewal or two happen during this brief demo
  const me = await Session.open(c, ttl, 'inventory-worker');
  console.log(`worker: session ${me.sid} (ttl ${ttl} ms) on ${c.endpoint}`);
  const ka = startKeepalive(c.endpoint, me.sid, ttl);
  try {
    // Queued behind the zombie; granted once its lease expires. WAIT bounds how long we block.
    const t0 = Date.now();
    const token = await c.call('LOCK', 'inventory', me.sid, 'WAIT', 10000, ...me.req());
    if (token === null) {
      throw new Unexpected("LOCK timed out: the zombie's lease should have expired");
    }
    if (token <= zombieToken) {
      throw new Unexpected(`token ${token} does not exceed the zombie's ${zombieToken}`);
    }
    const waited = ((Date.now() - t0) / 1000).toFixed(1);
    console.log(`worker: got inventory after ${waited} s, fencing token ${token}`);

    const raw = await c.call('GET', 'stock');
    const stock = raw === null ? 100 : Number(raw); // first run: start with 100 items
    console.log(`worker: stock is ${stock}`);

    // The resource (here fencelock's own KV) accepts the write only while our token is the
    // current holder's: if our lease had lapsed in between, this would fail with -STALE.
    const rev = await c.call('PUT', 'stock', stock - 1, 'FENCE', 'inventory', token, ...me.req());
    console.log(`worker: sold one, stock ${stock - 1} written at revision ${rev}`);

    // The zombie wakes up and writes what it computed before freezing. Its session ended with
    // its lease, so it has no REQ to number the write with (that alone would be -NOSESSION);
    // the token is what the resource checks, and it is no longer the holder's.
    let refused = null;
    try {
      await c.call('PUT', 'stock', 0, 'FENCE', 'inventory', zombieToken);
    } catch (e) {
      if (!(e instanceof Redis.ReplyError) || !e.message.startsWith('STALE')) throw e;
      refused = e;
    }
    if (refused === null) {
      throw new Unexpected(`the zombie's write with stale token ${zombieToken} was accepted`);
    }
    console.log(`zombie: write with token ${zombieToken} refused: -${refused.message}`);
    if (Number(await c.call('GET', 'stock')) !== stock - 1) {
      throw new Unexpected('the stock changed after a refused write');
    }
  } finally {
    ka.stop(); // before UNLOCK/CLOSE: a renewal of a closed session would be a false alarm
  }
  if (ka.error !== null) throw new Unexpected(`keepalive failed: ${ka.error.message}`);
  await c.call('UNLOCK', 'inventory', me.sid, ...me.req());
  await c.call('SESSION.CLOSE', me.sid, ...me.req());
  console.log(`worker: unlocked and closed session ${me.sid} (${ka.renewals} keepalives sent)`);
}

const endpoint = process.argv[2]
  || (process.env.FENCELOCK_ENDPOINTS || '').split(',')[0].trim()
  || '127.0.0.1:7480';
const client = new Client(endpoint);
main(client)
  .catch((e) => {
    console.error(`inventory: unexpected: ${e.message}`);
    process.exitCode = 1;
  })
  .finally(() => client.close());
