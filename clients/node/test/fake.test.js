// SPDX-License-Identifier: Apache-2.0
// Against a scripted fake server (a RESP listener on loopback): a command is sent a second
// time only by the library's own decision, never by ioredis' reconnect. A write without a
// session whose connection breaks after the send is OutcomeUnknownError and reached the server
// once; a write through a session is resent with the very same REQ sid seq.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const fl = require('fencelock');
const { freePort } = require('./helpers');

/** Parse complete RESP arrays of bulk strings out of buf: [commands, rest]. */
function parse(buf) {
  const cmds = [];
  for (;;) {
    if (buf.length === 0 || buf[0] !== 0x2a) return [cmds, buf];
    let i = buf.indexOf('\r\n');
    if (i < 0) return [cmds, buf];
    const n = Number(buf.subarray(1, i).toString());
    let off = i + 2;
    const args = [];
    for (let k = 0; k < n; k++) {
      const j = buf.indexOf('\r\n', off);
      if (j < 0) return [cmds, buf];
      const len = Number(buf.subarray(off + 1, j).toString());
      if (buf.length < j + 2 + len + 2) return [cmds, buf];
      args.push(buf.subarray(j + 2, j + 2 + len).toString());
      off = j + 2 + len + 2;
    }
    cmds.push(args);
    buf = buf.subarray(off);
  }
}

/** A server answering by script(argv, conn) -> RESP text, or null to close the connection. */
async function fake(script) {
  const port = await freePort();
  const seen = [];
  const socks = new Set();
  const srv = net.createServer((sock) => {
    socks.add(sock);
    sock.on('close', () => socks.delete(sock));
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      let cmds;
      [cmds, buf] = parse(Buffer.concat([buf, d]));
      for (const argv of cmds) {
        seen.push(argv);
        const out = argv[0] === 'CLUSTER.MEMBERS' ? '*0\r\n' : script(argv);
        if (out === null) {
          sock.destroy();
          return;
        }
        sock.write(out);
      }
    });
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  return {
    endpoint: `127.0.0.1:${port}`,
    seen,
    close: () => new Promise((r) => {
      for (const s of socks) s.destroy();
      srv.close(r);
    }),
  };
}

test('a write without a session is sent once: its lost answer is OutcomeUnknownError', async () => {
  const f = await fake((argv) => (argv[0] === 'PUT' ? null : '+OK\r\n'));
  const c = new fl.Client({ endpoints: f.endpoint, timeoutMs: 3000 });
  try {
    await assert.rejects(c.put('k', 'v'), fl.OutcomeUnknownError);
    // nothing more reaches the server afterwards either (no reconnect resends it later)
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(f.seen.filter((a) => a[0] === 'PUT').length, 1, JSON.stringify(f.seen));
  } finally {
    c.close();
    await f.close();
  }
});

test('-UNKNOWN to a write without a session is OutcomeUnknownError, not resent', async () => {
  const f = await fake((argv) => (['PUT', 'DEL'].includes(argv[0]) ? '-UNKNOWN leadership lost\r\n' : '+OK\r\n'));
  const c = new fl.Client({ endpoints: f.endpoint, timeoutMs: 3000 });
  try {
    await assert.rejects(c.del('k'), fl.OutcomeUnknownError);
    await assert.rejects(c.put('k', 'v'), (e) => e instanceof fl.OutcomeUnknownError && e.word === 'UNKNOWN');
    assert.equal(f.seen.filter((a) => a[0] === 'PUT').length, 1);
    assert.equal(f.seen.filter((a) => a[0] === 'DEL').length, 1);
  } finally {
    c.close();
    await f.close();
  }
});

test('a session write whose answer is lost is resent with the same REQ sid seq, once more', async () => {
  let puts = 0;
  const f = await fake((argv) => {
    if (argv[0] === 'SESSION.OPEN') return ':7\r\n';
    if (argv[0] === 'SESSION.KEEPALIVE') return ':60000\r\n';
    if (argv[0] === 'SESSION.CLOSE') return '+OK\r\n';
    if (argv[0] === 'PUT') return ++puts === 1 ? null : ':42\r\n';
    return '-ERR unexpected\r\n';
  });
  const c = new fl.Client({ endpoints: f.endpoint, timeoutMs: 3000 });
  try {
    const s = await c.session({ ttlMs: 60000 });
    assert.equal(s.sid, 7);
    assert.equal(await s.put('k', 'v'), 42);
    assert.equal(await s.put('k', 'w'), 42);
    await s.close();
    const ps = f.seen.filter((a) => a[0] === 'PUT');
    assert.equal(ps.length, 3, JSON.stringify(ps));
    assert.deepEqual(ps[0], ['PUT', 'k', 'v', 'REQ', '7', '1']);
    assert.deepEqual(ps[1], ps[0], 'the resend is the same command with the same seq');
    assert.deepEqual(ps[2], ['PUT', 'k', 'w', 'REQ', '7', '2']);
    const close = f.seen.find((a) => a[0] === 'SESSION.CLOSE');
    assert.deepEqual(close, ['SESSION.CLOSE', '7', 'REQ', '7', '3']);
  } finally {
    c.close();
    await f.close();
  }
});

test('-NOTLEADER is followed to the address it names', async () => {
  const leader = await fake((argv) => (argv[0] === 'GET' ? '$3\r\nyes\r\n' : '+OK\r\n'));
  const follower = await fake(() => `-NOTLEADER ${leader.endpoint}\r\n`);
  const c = new fl.Client({ endpoints: follower.endpoint, timeoutMs: 3000 });
  try {
    assert.equal(await c.get('k'), 'yes');
    assert.equal(c.leaderAddress, leader.endpoint);
  } finally {
    c.close();
    await leader.close();
    await follower.close();
  }
});
