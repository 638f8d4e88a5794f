// SPDX-License-Identifier: Apache-2.0
/* What the console's browser tests (console.test.js) stand on: real fencelockd clusters
 * (fixture.py: tests/integration's helpers), redis-cli for the commands (as an operator would
 * type them), plain HTTP reads of the API, and Debian's Chromium driven by playwright-core.
 *
 * Every wait is a bounded poll of a property (a generous bound: ASan, a loaded machine), never
 * a sleep that hopes; every page records the browser's console errors, page errors and
 * dialogs, which the tests assert on. */
'use strict';

const { spawn, execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.resolve(ROOT, process.env.FENCELOCK_BIN || 'build/asan/fencelockd');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = path.join(ROOT, 'build', 'console-screenshots');
const WORK = path.join(ROOT, 'build', 'console-tests');
const BOUND_MS = 60000; /* what "eventually" means here */

let clusterSeq = 0;

/* Start a cluster: { nodes: [{id, port, http_port}], leader, node(id), stop() }. stop() fails
 * the test when a server printed a sanitizer report or did not stop cleanly. */
async function startCluster(opts = {}) {
  const dir = path.join(WORK, process.pid + '-' + (++clusterSeq));
  fs.rmSync(dir, { recursive: true, force: true });
  const args = [path.join(__dirname, 'fixture.py'), '--bin', BIN, '--dir', dir,
    '--nodes', String(opts.nodes || 3)];
  if (opts.acl) args.push('--acl');
  if (opts.extra && opts.extra.length) args.push('--', ...opts.extra);
  const p = spawn('python3', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: p.stdout });
  const it = lines[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) throw new Error('fixture.py ended before the cluster was up');
  const info = JSON.parse(first.value);
  if (info.problems) throw new Error('fixture.py: ' + info.problems.join('\n'));
  const c = {
    nodes: info.nodes,
    leader: info.nodes.find((n) => n.id === info.leader),
    node: (id) => info.nodes.find((n) => n.id === id),
    async stop() {
      p.stdin.end('stop\n');
      const last = await it.next();
      const r = last.done ? { problems: ['fixture.py printed no last line'] } : JSON.parse(last.value);
      if (r.problems.length) throw new Error('the servers: ' + r.problems.join('\n'));
    },
  };
  return c;
}

function cliArgs(node, auth, args) {
  const a = ['-p', String(node.port), '--no-auth-warning'];
  if (auth) a.push('--user', auth[0], '--pass', auth[1]);
  return a.concat(args.map(String));
}

/* One command through redis-cli; its reply as redis-cli prints it (no tty: raw). */
function cli(node, args, auth) {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', cliArgs(node, auth, args), { timeout: BOUND_MS }, (err, out, errout) => {
      if (err) reject(new Error('redis-cli ' + args.join(' ') + ': ' + err.message + ' ' + errout));
      else resolve(out.trim());
    });
  });
}

async function cliInt(node, args, auth) {
  const r = await cli(node, args, auth);
  if (!/^\d+$/.test(r)) throw new Error('redis-cli ' + args.join(' ') + ': not an integer: ' + r);
  return Number(r);
}

/* A command that blocks (LOCK ... WAIT): { done: promise of its reply, kill() }. */
function cliBackground(node, args, auth) {
  const p = spawn('redis-cli', cliArgs(node, auth, args), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  const done = new Promise((resolve) => p.on('close', () => resolve(out.trim())));
  return { done, kill: () => p.kill() };
}

/* The commands of --pipe (RESP), for many at once. */
function respCommands(cmds) {
  return cmds.map((c) => '*' + c.length + '\r\n' +
    c.map((x) => { const s = String(x); return '$' + Buffer.byteLength(s) + '\r\n' + s + '\r\n'; }).join('')).join('');
}

function cliPipe(node, cmds, auth) {
  return new Promise((resolve, reject) => {
    const p = execFile('redis-cli', cliArgs(node, auth, ['--pipe']), { timeout: 10 * BOUND_MS },
      (err, out) => (err ? reject(err) : resolve(out)));
    p.stdin.end(respCommands(cmds));
  });
}

/* GET a JSON path of a node's HTTP port (Basic credentials when auth), or its status. */
async function http(node, p, auth) {
  const headers = {};
  if (auth) headers.Authorization = 'Basic ' + Buffer.from(auth[0] + ':' + auth[1]).toString('base64');
  const r = await fetch('http://127.0.0.1:' + node.http_port + p, { headers });
  const body = await r.text();
  let json = null;
  try { json = JSON.parse(body); } catch (e) { /* not JSON */ }
  return { status: r.status, headers: r.headers, body, json };
}

/* Poll fn (async, truthy when done) until it is, within the bound. */
async function until(fn, what, ms = BOUND_MS) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error('not within ' + ms + ' ms: ' + what + ' (last: ' + last + ')');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/* Until `sid` is queued on `name` (the node's /v1/locks/{name}). */
function queued(node, name, sid, auth) {
  return until(async () => {
    const r = await http(node, '/v1/locks/' + encodeURIComponent(name), auth);
    return r.json && r.json.waiters.includes(sid);
  }, 'session ' + sid + ' queued on ' + name);
}

async function launch() {
  const { chromium } = require('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/* A page with what it records: console errors, page errors, dialogs (each dismissed). */
async function newPage(browser, opts = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 700 },
    httpCredentials: opts.auth ? { username: opts.auth[0], password: opts.auth[1] } : undefined });
  /* helpers the tests' page functions call (an init script: not subject to the page's CSP) */
  await ctx.addInitScript({ content: 'window.__lockRow = ' + lockRow.toString() + ';' });
  const page = await ctx.newPage();
  page.errors = [];
  page.dialogs = [];
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('dialog', (d) => { page.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.close_ = () => ctx.close();
  return page;
}

function consoleUrl(node, hash) {
  return 'http://127.0.0.1:' + node.http_port + '/ui/#' + hash;
}

/* Wait until fn(arg) is truthy in the page; what the page showed goes into the failure. */
async function pageUntil(page, fn, arg, what) {
  try {
    const h = await page.waitForFunction(fn, arg, { timeout: BOUND_MS, polling: 100 });
    return await h.jsonValue();
  } catch (e) {
    const shown = await page.evaluate(() => ({ main: document.getElementById('main').innerText,
      banner: document.getElementById('banner').textContent,
      live: document.getElementById('live').textContent })).catch(() => ({}));
    throw new Error(what + ': ' + e.message.split('\n')[0] + '\n  page: ' + JSON.stringify(shown) +
      '\n  browser errors: ' + JSON.stringify(page.errors));
  }
}

async function screenshot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}

/* The locks table's row of a name (in the page). */
function lockRow(name) {
  const r = [...document.querySelectorAll('#locks tbody tr')].find((x) => x.dataset.name === name);
  if (!r) return null;
  return { holder: r.querySelector('.holder').textContent, token: r.querySelector('.token').textContent,
    since: r.querySelector('.since').textContent, name: r.cells[0].textContent,
    waiters: [...r.querySelectorAll('.waiter')].map((w) => w.dataset.sid + ':' + w.textContent),
    cause: document.getElementById('main').dataset.cause };
}

module.exports = { ROOT, BIN, CHROMIUM, BOUND_MS, startCluster, cli, cliInt, cliBackground, cliPipe,
  http, until, queued, launch, newPage, consoleUrl, pageUntil, screenshot, lockRow };
