// SPDX-License-Identifier: Apache-2.0
// The client against a 3-node cluster: a lock waiting across a kill -9 of the leader is
// granted once with a rising token; every server SIGSTOPped until the safe deadline passes
// (the session's signal aborts, and the safe deadline is never later than the leader's own);
// a watcher across a leader kill gets every event once, in order; a follower-only endpoint.
'use strict';

const { test, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fl = require('fencelock');
const { Nodes, asMap, leaderOf, raw, sleep, until } = require('./helpers');

let nodes;
let servers;
let client;

beforeEach(async () => {
  nodes = new Nodes();
  servers = await nodes.cluster(3);
  client = new fl.Client({ endpoints: servers.map((s) => s.endpoint), timeoutMs: 15000 });
});

afterEach(async () => {
  client.close();
  await nodes.finish();
});

test('kill -9 of the leader while a lock waits: granted once, tokens rising', async () => {
  const a = await client.session({ ttlMs: 4000 });
  const b = await client.session({ ttlMs: 4000 });
  const ha = await a.lock('job', { waitMs: 5000 });
  const pb = b.lock('job', { waitMs: 30000 });
  await until(async () => {
    const i = await client.lockInfo('job');
    return i && Array.isArray(i.waiters) && i.waiters.map(Number).includes(b.sid);
  }, 10000, 'b queued');
  const old = await leaderOf(servers);
  await old.kill9();
  const next = await leaderOf(servers.filter((s) => s !== old));
  // the holder's session survives the fail-over (its keepalives follow the new leader)
  await ha.release();
  const hb = await pb;
  assert.ok(hb.token > ha.token, `${hb.token} > ${ha.token}`);
  const info = asMap(await raw(next.port, ['LOCK.INFO', 'job']));
  assert.equal(Number(info.holder), b.sid);
  assert.equal(Number(info.token), hb.token, 'the holder and token the new leader shows');
  assert.deepEqual(info.waiters, [], 'granted once: b does not wait again');
  assert.equal(a.lost, false);
  assert.equal(b.lost, false);
  await hb.release();
  await a.close();
  await b.close();
});

test('all servers SIGSTOPped: the signal aborts once the safe deadline passed, never later than the servers', async () => {
  const s = await client.session({ ttlMs: 2000 });
  const h = await s.lock('frozen');
  // The safe deadline is never later than the leader's own deadline for the session: the
  // leader computed remaining_ms between our send (t0) and its reply (t1), so its deadline lies
  // in [t0 + rem, t1 + rem]; only a safe deadline provably later than that is a failure.
  for (let i = 0; i < 10; i++) {
    const leader = await leaderOf(servers);
    const safe = s.safeUntil();
    const d = asMap(await raw(leader.port, ['SESSION.INFO', s.sid]));
    const t1 = fl.now();
    assert.ok(safe <= t1 + Number(d.remaining_ms) + 1, `safe ${safe} <= ${t1} + ${d.remaining_ms}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const aborted = new Promise((r) => s.signal.addEventListener('abort', () => r(fl.now())));
  const holdAborted = new Promise((r) => h.signal.addEventListener('abort', () => r(h.signal.reason)));
  const lastSafe = s.safeUntil();
  for (const x of servers) x.sigstop();
  const at = await Promise.race([aborted, sleep(30000).then(() => assert.fail('the signal did not abort in 30 s'))]);
  assert.ok(at >= lastSafe - 1, 'not before the safe deadline the last acknowledgement gave');
  assert.ok(s.signal.reason instanceof fl.SessionLostError);
  assert.ok((await holdAborted) instanceof fl.SessionLostError);
  assert.equal(s.lost, true);
  assert.ok(s.remainingMs() <= 0);
  for (const x of servers) x.sigcont();
  await assert.rejects(s.put('k', 'v'), fl.SessionLostError);
  await s.close(); // still closed on the servers if it lives there
});

test('watch across a kill -9 of the leader: every acknowledged event once, in order', async () => {
  const start = await client.put('other', 'x');
  const w = client.watch('wk/', { from: `${start}-0` });
  const got = [];
  const total = 60;
  // Until it has as many events as there are writes: the last events may well arrive before
  // the last write's acknowledgement does (deciding when to stop from the acknowledgements
  // left the reader waiting for an event that never came).
  const reader = (async () => {
    for await (const ev of w) {
      got.push(ev);
      if (got.length >= total) break;
    }
  })();
  const s = await client.session({ ttlMs: 4000 });
  const acked = [];
  for (let i = 0; i < total; i++) {
    if (i === 20) await (await leaderOf(servers)).kill9();
    acked.push(await s.put(`wk/${i}`, String(i)));
  }
  await Promise.race([reader, sleep(30000).then(() => assert.fail(`${got.length} of ${total} events in 30 s`))]);
  const ids = got.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, 'no duplicate');
  const revs = got.map((e) => e.rev);
  assert.deepEqual([...revs].sort((x, y) => x - y), revs, 'in order');
  assert.deepEqual(revs, acked, 'each acknowledged write, once, nothing else');
  await s.close();
});

test('a follower-only endpoint: -NOTLEADER is followed', async () => {
  const leader = await leaderOf(servers);
  const follower = servers.find((x) => x !== leader);
  const c = new fl.Client({ endpoints: follower.endpoint, timeoutMs: 10000 });
  try {
    const s = await c.session({ ttlMs: 3000 });
    const h = await s.lock('f');
    await c.put('f/k', 'v', { fence: h });
    assert.equal(await c.get('f/k'), 'v');
    assert.equal(c.leaderAddress, leader.endpoint);
    await h.release();
    await s.close();
  } finally {
    c.close();
  }
});
