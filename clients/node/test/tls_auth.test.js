// SPDX-License-Identifier: Apache-2.0
// TLS on the client port (the server's name checked against its certificate) and AUTH with
// --acl-file users, against real fencelockd processes with certificates made by openssl.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const fl = require('fencelock');
const { Nodes, hashPassword, makeCerts } = require('./helpers');

let nodes;
let pki;

before(() => {
  nodes = new Nodes();
  pki = makeCerts(path.join(nodes.dir, 'pki'));
});

after(async () => {
  await nodes.finish();
});

const tlsArgs = () => ['--tls-cert', path.join(pki, 'server.crt'), '--tls-key', path.join(pki, 'server.key')];
const tlsReady = () => ({ tls: { ca: fs.readFileSync(path.join(pki, 'ca.crt')) } });

test('TLS: the right CA works; a wrong CA and a wrong name are TlsError', async () => {
  const s = await nodes.start(tlsArgs(), tlsReady());
  const good = new fl.Client({ endpoints: s.endpoint, tls: { ca: path.join(pki, 'ca.crt') }, timeoutMs: 3000 });
  try {
    const sess = await good.session({ ttlMs: 3000 });
    await using h = await sess.lock('t');
    assert.ok((await good.put('t/k', 'v', { fence: h })) > 0);
    assert.equal(await good.get('t/k'), 'v');
    await h.release();
    await sess.close();
  } finally {
    good.close();
  }
  const wrongCa = new fl.Client({ endpoints: s.endpoint, tls: { ca: path.join(pki, 'otherca.crt') }, timeoutMs: 1500 });
  await assert.rejects(wrongCa.get('t/k'), (e) => e instanceof fl.TlsError && e.word === 'TLS');
  wrongCa.close();
  const wrongName = new fl.Client({
    endpoints: s.endpoint, tls: { ca: path.join(pki, 'ca.crt'), serverName: 'fencelock.example' }, timeoutMs: 1500,
  });
  await assert.rejects(wrongName.get('t/k'), fl.TlsError);
  wrongName.close();
  const plain = new fl.Client({ endpoints: s.endpoint, timeoutMs: 1500 });
  await assert.rejects(plain.get('t/k'), fl.UnavailableError);
  plain.close();
});

test('AUTH on every connection; a wrong password is AuthError at once', async () => {
  const acl = path.join(nodes.dir, 'acl');
  fs.writeFileSync(acl, `user admin ${hashPassword('adminpw')} perm=all\nuser app ${hashPassword('apppw')} perm=read,lock,write keys=app/* locks=job-*\n`,
    { mode: 0o600 });
  const s = await nodes.start(['--acl-file', acl], { username: 'admin', password: 'adminpw' });
  const app = new fl.Client({ endpoints: s.endpoint, username: 'app', password: 'apppw', timeoutMs: 5000 });
  try {
    const sess = await app.session({ ttlMs: 3000 });
    const h = await sess.lock('job-1');
    await sess.put('app/x', '1', { fence: h });
    assert.equal(await app.get('app/x'), '1');
    await assert.rejects(app.put('other', '1'), (e) => e instanceof fl.PermissionError && e.word === 'PERM');
    await assert.rejects(sess.lock('other'), fl.PermissionError);
    await h.release();
    await sess.close();
  } finally {
    app.close();
  }
  const wrong = new fl.Client({ endpoints: s.endpoint, username: 'app', password: 'nope', timeoutMs: 5000 });
  await assert.rejects(wrong.get('app/x'), (e) => e instanceof fl.AuthError && e.word === 'AUTH');
  wrong.close();
  const none = new fl.Client({ endpoints: s.endpoint, timeoutMs: 5000 });
  await assert.rejects(none.get('app/x'), fl.AuthError);
  none.close();
});
