// SPDX-License-Identifier: Apache-2.0
// The README's example runs as written: its ts block, compiled by the package's own tsc
// (importing "fencelock" resolves to this package), run against a real fencelockd.
'use strict';

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Nodes, raw } = require('./helpers');

const PKG = path.join(__dirname, '..');
let nodes;

after(async () => {
  await nodes?.finish();
});

test('the README example runs as written', async () => {
  const md = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8');
  const m = /```ts\n([\s\S]*?)```/.exec(md);
  assert.ok(m, 'a ts block in the README');
  assert.ok(m[1].trim().split('\n').length <= 12, 'about ten lines');
  nodes = new Nodes();
  const node = await nodes.start();
  const dir = path.join(PKG, '.readme-test');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'example.mts'), m[1]);
  const tsc = path.join(PKG, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022',
    '--lib', 'es2022,esnext.disposable', '--types', 'node', '--strict', '--skipLibCheck', '--rootDir', dir, '--outDir', dir, path.join(dir, 'example.mts')],
  { cwd: PKG, stdio: 'pipe' });
  for (let i = 0; i < 2; i++) {
    execFileSync(process.execPath, [path.join(dir, 'example.mjs')], {
      cwd: dir, env: { ...process.env, FENCELOCK_ENDPOINTS: node.endpoint }, stdio: 'pipe', timeout: 60000,
    });
  }
  assert.equal(await raw(node.port, ['GET', 'stock']), '98');
  assert.equal(await raw(node.port, ['LOCK.INFO', 'inventory']), null, 'released');
  fs.rmSync(dir, { recursive: true, force: true });
});
