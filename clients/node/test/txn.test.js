// SPDX-License-Identifier: Apache-2.0
// TXN: the command the builder sends and the reply it reads, against a scripted fake server
// (the words exactly, REQ last and the same on a resend), then against one real fencelockd:
// both branches with each op's result, a stale fence refused whole, the servers' refusals
// typed (TooLargeError, TxnOpError), none of which changes a key.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const fl = require('fencelock');
const { Nodes, freePort } = require('./helpers');

/** A RESP server answering by script(argv); `seen` collects every command. */
async function fake(script) {
  const port = await freePort();
  const seen = [];
  const srv = net.createServer((sock) => {
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (!buf.length || buf[0] !== 0x2a) return;
        let i = buf.indexOf('\r\n');
        if (i < 0) return;
        const n = Number(buf.subarray(1, i).toString());
        let off = i + 2;
        const args = [];
        for (let k = 0; k < n; k++) {
          const j = buf.indexOf('\r\n', off);
          if (j < 0) return;
          const len = Number(buf.subarray(off + 1, j).toString());
          if (buf.length < j + 2 + len + 2) return;
          args.push(buf.subarray(j + 2, j + 2 + len).toString());
          off = j + 2 + len + 2;
        }
        buf = buf.subarray(off);
        seen.push(args);
        const out = args[0] === 'CLUSTER.MEMBERS' ? '*0\r\n' : script(args);
        if (out === null) {
          sock.destroy();
          return;
        }
        sock.write(out);
      }
    });
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  return { endpoint: `127.0.0.1:${port}`, seen, close: () => new Promise((r) => srv.close(r)) };
}

test('txn: an op is named only by "ERR TXN op N:" with N from 1, as the other clients read it', () => {
  const e = fl.fromReply('ERR TXN op 3: increment would overflow: key n is 1');
  assert.ok(e instanceof fl.TxnOpError && e.op === 3);
  for (const t of ['ERR TXN op 0: x', 'ERR TXN op : x', 'ERR TXN op 2 x', 'ERR syntax in TXN op 2: x']) {
    const x = fl.fromReply(t);
    assert.ok(x instanceof fl.ServerError && !(x instanceof fl.TxnOpError), t);
  }
});

test('txn: the words sent, the reply read, a resend with the same REQ', async () => {
  let txns = 0;
  const f = await fake((argv) => {
    if (argv[0] === 'SESSION.OPEN') return ':7\r\n';
    if (argv[0] === 'SESSION.KEEPALIVE') return ':60000\r\n';
    if (argv[0] === 'SESSION.CLOSE') return '+OK\r\n';
    if (argv[0] !== 'TXN') return '-ERR unexpected\r\n';
    txns++;
    if (txns === 1) return '*3\r\n+THEN\r\n:42\r\n*3\r\n:40\r\n:-2\r\n:1\r\n';
    if (txns === 2) return null; // the session's TXN: its answer lost, resent
    if (txns === 3) return '*3\r\n+ELSE\r\n:43\r\n*-1\r\n';
    if (txns === 4) return '-ERR TXN op 2: value of key n is not a signed 64-bit decimal integer\r\n';
    if (txns === 5) return '-TOOLARGE TXN of more than 4 compares and ops (--max-txn-ops)\r\n';
    return '-STALE token 5 is not current\r\n';
  });
  const c = new fl.Client({ endpoints: f.endpoint, timeoutMs: 3000 });
  try {
    const r = await c.txn().ifRev('cfg', '=', 7).ifValue('v', '!=', 'a b').ifExists('e').ifMissing('m')
      .ifToken('L', '=', 5).ifHolds('L', 12).ifRev('cfg', '<', 9).ifRev('cfg', '>', 0)
      .thenPut('cfg', 'v2').thenIncr('n', -3).thenDel('old')
      .elsePut('log', 'lost').elseIncr('misses').elseDel('x').fence('L', 5).commit();
    assert.deepEqual(r, { succeeded: true, revision: 42, results: [40, -2, 1] });
    assert.deepEqual(f.seen.find((a) => a[0] === 'TXN'), ['TXN',
      'IF', 'REV', 'cfg', '=', '7', 'IF', 'VALUE', 'v', '!=', 'a b', 'IF', 'EXISTS', 'e',
      'IF', 'MISSING', 'm', 'IF', 'TOKEN', 'L', '=', '5', 'IF', 'HOLDS', 'L', '12',
      'IF', 'REV', 'cfg', '<', '9', 'IF', 'REV', 'cfg', '>', '0',
      'THEN', 'PUT', 'cfg', 'v2', 'INCR', 'n', '-3', 'DEL', 'old',
      'ELSE', 'PUT', 'log', 'lost', 'INCR', 'misses', '1', 'DEL', 'x', 'FENCE', 'L', '5']);

    const s = await c.session({ ttlMs: 60000 });
    const r2 = await s.txn().ifMissing('k').elsePut('k', 'v').commit();
    assert.deepEqual(r2, { succeeded: false, revision: 43, results: null });
    const sent = f.seen.filter((a) => a[0] === 'TXN').slice(1);
    assert.deepEqual(sent[0], ['TXN', 'IF', 'MISSING', 'k', 'THEN', 'ELSE', 'PUT', 'k', 'v', 'REQ', '7', '1']);
    assert.deepEqual(sent[1], sent[0], 'the resend is the same command with the same seq');

    await assert.rejects(c.txn().thenPut('a', '1').thenIncr('n', 1).commit(),
      (e) => e instanceof fl.TxnOpError && e instanceof fl.ServerError && e.op === 2 && e.word === 'OTHER');
    await assert.rejects(c.txn().thenPut('a', '1').commit(), (e) => e instanceof fl.TooLargeError && e.word === 'TOOLARGE');
    await assert.rejects(c.txn().thenPut('a', '1').fence('L', 5).commit(), fl.StaleError);
    assert.throws(() => c.txn().ifRev('k', '<=', 1), TypeError);
    await assert.rejects(c.txn().commit(), TypeError);
    await s.close();
  } finally {
    c.close();
    await f.close();
  }
});

test('txn against a node: branches, results, stale fence, refusals typed', async () => {
  const nodes = new Nodes();
  const node = await nodes.start(['--max-txn-ops', '4']);
  const c = new fl.Client({ endpoints: node.endpoint, timeoutMs: 5000 });
  try {
    const s = await c.session({ ttlMs: 10000 });
    const r1 = await c.put('t/cfg', 'v1');
    const h = await s.lock('t/L', { waitMs: 1000 });
    const r = await s.txn().ifRev('t/cfg', '=', r1).ifHolds('t/L', s.sid)
      .thenPut('t/cfg', 'v2').thenIncr('t/n', 5).fence('t/L', h.token).commit();
    assert.equal(r.succeeded, true);
    assert.deepEqual(r.results, [r.results[0], 5]);
    assert.equal(r.revision, r.results[0] + 1);
    assert.equal((await c.kvGet('t/cfg')).modRev, r.results[0]);

    const e = await c.txn().ifRev('t/cfg', '=', r1).thenPut('t/cfg', 'v3').elseIncr('t/n', -1).elseDel('t/none').commit();
    assert.deepEqual([e.succeeded, e.results], [false, [4, 0]]);

    await h.release();
    await s.lock('t/L', { waitMs: 1000 });
    await assert.rejects(s.txn().thenPut('t/cfg', 'late').fence('t/L', h.token).commit(), fl.StaleError);
    await assert.rejects(c.txn().thenPut('a', '1').thenPut('b', '1').thenPut('c', '1').thenPut('d', '1').thenPut('e', '1').commit(),
      (x) => x instanceof fl.TooLargeError && x.word === 'TOOLARGE');
    await assert.rejects(s.txn().thenPut('t/z', 'x').thenIncr('t/cfg').commit(), (x) => x instanceof fl.TxnOpError && x.op === 2);
    await assert.rejects(c.txn().thenPut('t/cfg', 'x').thenDel('t/cfg').commit(),
      (x) => x instanceof fl.ServerError && !(x instanceof fl.TxnOpError));
    assert.equal(await c.get('t/cfg'), 'v2');
    assert.equal(await c.get('t/z'), null);
    await s.close();
  } finally {
    c.close();
    await nodes.finish();
  }
});
