// SPDX-License-Identifier: Apache-2.0
// Real fencelockd processes for the Node client's tests: free loopback ports from
// FL_TEST_PORTS=lo-hi (default 20000-32767, as tests/integration/server.py), a data directory
// and a log per node in a temp directory, sanitizer reports in the log failing the test.
// The binary: $FENCELOCK_BIN, else build/asan/fencelockd of this source tree.
'use strict';

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const Redis = require('ioredis');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BIN = path.resolve(process.env.FENCELOCK_BIN || path.join(ROOT, 'build', 'asan', 'fencelockd'));
const TIMING = ['--election-ms', '400', '--heartbeat-ms', '40'];
const SANITIZER = /ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: UndefinedBehaviorSanitizer/;

const used = new Set();

function portRange() {
  const spec = process.env.FL_TEST_PORTS;
  if (!spec) return [20000, 32767];
  const [lo, hi] = spec.split('-').map(Number);
  return [lo, hi];
}

function bindable(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function freePort() {
  const [lo, hi] = portRange();
  for (let i = 0; i < 2000; i++) {
    const p = lo + Math.floor(Math.random() * (hi - lo + 1));
    if (used.has(p) || (p >= 7480 && p <= 7482)) continue;
    if (await bindable(p)) {
      used.add(p);
      return p;
    }
  }
  throw new Error(`no free port in ${lo}-${hi}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One raw command to one server (no fencelock library), or null if it does not answer. */
async function raw(port, args, opts = {}) {
  const r = new Redis({
    host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: false,
    maxRetriesPerRequest: 0, enableReadyCheck: false, connectTimeout: 1000, commandTimeout: 2000, ...opts,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return await r.call(...args);
  } finally {
    r.disconnect();
  }
}

function asMap(a) {
  const o = {};
  for (let i = 0; i + 1 < a.length; i += 2) o[String(a[i])] = a[i + 1];
  return o;
}

class Server {
  constructor(dir, id, args = []) {
    this.dir = dir;
    this.id = id;
    this.args = args;
    this.proc = null;
    this.stopped = false;
  }

  async ports() {
    this.port = await freePort();
    this.raftPort = await freePort();
    this.httpPort = await freePort();
    return this;
  }

  get endpoint() {
    return `127.0.0.1:${this.port}`;
  }

  start() {
    fs.mkdirSync(this.dir, { recursive: true });
    this.log = path.join(this.dir, 'server.log');
    const out = fs.openSync(this.log, 'a');
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FENCELOCK_')));
    env.ASAN_OPTIONS = env.ASAN_OPTIONS || 'detect_leaks=1:abort_on_error=0';
    env.LSAN_OPTIONS = `suppressions=${path.join(ROOT, 'tests', 'lsan.supp')}`;
    this.proc = spawn(BIN, ['--id', String(this.id), '--data-dir', path.join(this.dir, 'data'),
      '--listen', this.endpoint, '--raft-listen', `127.0.0.1:${this.raftPort}`,
      '--http-listen', `127.0.0.1:${this.httpPort}`, ...this.args], { stdio: ['ignore', out, out], env });
    fs.closeSync(out);
    this.stopped = false;
    this.exited = new Promise((r) => this.proc.once('exit', (code, sig) => r([code, sig])));
    return this;
  }

  get running() {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  sigstop() {
    this.proc.kill('SIGSTOP');
    this.stopped = true;
  }

  sigcont() {
    if (this.running) this.proc.kill('SIGCONT');
    this.stopped = false;
  }

  async kill9() {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  async stop() {
    if (!this.running) return;
    this.sigcont();
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 15000);
    await this.exited;
    clearTimeout(t);
  }

  sanitizerReport() {
    try {
      const s = fs.readFileSync(this.log, 'utf8');
      return SANITIZER.test(s) ? s.slice(-4000) : null;
    } catch {
      return null;
    }
  }

  /** CLUSTER.INFO as an object, or null if it does not answer. */
  async info(opts) {
    try {
      const r = await raw(this.port, ['CLUSTER.INFO'], opts);
      return Array.isArray(r) ? asMap(r) : null;
    } catch {
      return null;
    }
  }
}

/** The servers of one test: started in a temp dir, stopped and checked by finish(). */
class Nodes {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fl-node-'));
    this.servers = [];
  }

  async start(args = [], opts = {}) {
    const s = await new Server(path.join(this.dir, `node${this.servers.length + 1}`), 1, args).ports();
    this.servers.push(s);
    s.start();
    await leaderOf([s], 20000, opts);
    return s;
  }

  async cluster(n = 3, args = []) {
    const ss = [];
    for (let i = 1; i <= n; i++) ss.push(await new Server(path.join(this.dir, `c${i}`), i).ports());
    const members = ss.map((s) => `${s.id}=127.0.0.1:${s.raftPort}`).join(',');
    for (const s of ss) {
      s.args = ['--initial-cluster', members, ...TIMING, ...args];
      this.servers.push(s);
      s.start();
    }
    await leaderOf(ss);
    return ss;
  }

  /** Stop every server; throws on a sanitizer report. */
  async finish() {
    await Promise.all(this.servers.map((s) => s.stop()));
    const bad = this.servers.map((s) => s.sanitizerReport()).filter((r) => r);
    if (bad.length === 0) fs.rmSync(this.dir, { recursive: true, force: true });
    if (bad.length) throw new Error(`sanitizer report:\n${bad.join('\n')}`);
  }
}

/** The one running, not stopped server that is a ready leader (bounded wait). */
async function leaderOf(servers, timeoutMs = 20000, opts) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const up = servers.filter((s) => s.running && !s.stopped);
    const infos = await Promise.all(up.map((s) => s.info(opts)));
    const ls = up.filter((s, i) => infos[i] && Number(infos[i].ready) === 1 && String(infos[i].role) === 'leader');
    if (ls.length === 1) return ls[0];
    await sleep(50);
  }
  throw new Error(`no ready leader within ${timeoutMs} ms`);
}

/** `fencelockd --hash-password` of pw. */
function hashPassword(pw) {
  return execFileSync(BIN, ['--hash-password'], { input: `${pw}\n` }).toString().trim();
}

/** A CA, a server certificate for IP:127.0.0.1 and a second, foreign CA, in dir. */
function makeCerts(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const ossl = (...a) => execFileSync('openssl', a, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'otherca']) {
    ossl('req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2', '-subj', `/CN=${ca}`);
  }
  ossl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  ossl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext');
  return dir;
}

/** Polls pred until it is truthy (bounded): its value. */
async function until(pred, timeoutMs = 20000, what = 'condition') {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

module.exports = { BIN, ROOT, Nodes, Server, asMap, freePort, hashPassword, leaderOf, makeCerts, raw, sleep, until };
