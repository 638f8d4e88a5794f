// SPDX-License-Identifier: Apache-2.0
/* The web console (GET /ui/, docs/console.md) in a real browser: Debian's headless Chromium
 * driven by playwright-core, against real fencelockd clusters (fixture.py), commands typed
 * through redis-cli. Run by scripts/run-tests.sh (`node --test`), FENCELOCK_BIN naming the
 * server; every page's screenshot goes to build/console-screenshots/.
 *
 * The properties: every page renders on a 3-node cluster; a lock taken by redis-cli appears
 * with its token without a reload, drawn because of an event of /v1/events (the page says why
 * it was drawn last); a release moves the next waiter up; a follower's console shows its own
 * state, names the leader, and follows a change of leader; under ACLs the console needs a login
 * and a user with locks= globs sees (live) only its own locks; a name that is HTML stays text
 * everywhere and fires no dialog; the Content-Security-Policy forbids inline script (the header,
 * and a script element added to the page does not run); "who blocks whom" shows who waits for
 * which lock held by whom, marks a cycle of waits and lists a wait refused as a deadlock;
 * 10,000 locks page and are found by prefix. No page logs a browser error. */
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness');

const XSS = '<img src=x onerror=alert(1)>';
let browser;

before(async () => { browser = await h.launch(); });
after(async () => { if (browser) await browser.close(); });

function noErrors(page, what, allowed) {
  const bad = page.errors.filter((e) => !(allowed && allowed(e)));
  assert.deepEqual(bad, [], what + ': browser errors');
  assert.deepEqual(page.dialogs, [], what + ': no dialog fired');
}

async function go(page, hash) {
  await page.evaluate((x) => { location.hash = x; }, hash);
}

/* The whole tour on a 3-node cluster without users. */
test('pages on a 3-node cluster: live locks, a release, HTML names, waits, a follower', { timeout: 600000 }, async () => {
  const c = await h.startCluster({ nodes: 3 });
  const bg = [];
  try {
    const L = c.leader;
    const page = await h.newPage(browser);
    const resp = await page.goto(h.consoleUrl(L, '/locks'));
    assert.equal(resp.status(), 200);
    const csp = resp.headers()['content-security-policy'];
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /default-src 'none'/);
    assert.ok(!csp.includes('unsafe'), 'no inline script or eval: ' + csp);
    await h.pageUntil(page, () => document.getElementById('live').dataset.state === 'live', null, 'the stream open');
    await h.pageUntil(page, () => !!document.getElementById('locks-empty'), null, 'the first drawing: no locks');
    await page.evaluate(() => { window.__samePage = 1; });

    // a lock taken by redis-cli appears with its token, drawn because of the stream
    const s1 = await h.cliInt(L, ['SESSION.OPEN', 120000]);
    const s2 = await h.cliInt(L, ['SESSION.OPEN', 120000]);
    const t1 = await h.cliInt(L, ['LOCK', 'job/a', s1]);
    let row = await h.pageUntil(page, (a) => { const r = window.__lockRow(a.name); return r && r.token === a.token ? r : null; },
      { name: 'job/a', token: String(t1) }, 'job/a with its token, live');
    assert.equal(row.holder, String(s1));
    assert.ok(row.since, 'held since is shown');
    assert.equal(row.cause, 'event', 'drawn because of an event, not a reload or a poll');

    // a name that is HTML is text, and nothing runs
    await h.cliInt(L, ['LOCK', XSS, s1]);
    row = await h.pageUntil(page, (a) => window.__lockRow(a), XSS, 'the HTML-named lock');
    assert.equal(row.name, XSS);
    assert.equal(await page.evaluate(() => document.querySelectorAll('main img').length), 0, 'no <img> from a name');

    // a waiter, then a release hands job/a to it: the open page follows without a reload
    const w = h.cliBackground(L, ['LOCK', 'job/a', s2, 'WAIT', 600000]);
    bg.push(w);
    await h.queued(L, 'job/a', s2);
    row = await h.pageUntil(page, (a) => { const r = window.__lockRow(a); return r && r.waiters.length ? r : null; },
      'job/a', 'job/a with its waiter');
    assert.deepEqual(row.waiters, [s2 + ':session ' + s2 + ' waits for ' + s1]);
    await h.screenshot(page, 'locks');
    assert.equal(await h.cli(L, ['UNLOCK', 'job/a', s1]), 'OK');
    const t2 = Number(await w.done);
    assert.ok(t2 > t1, 'the waiter got a newer token: ' + t2);
    row = await h.pageUntil(page, (a) => { const r = window.__lockRow(a.name); return r && r.holder === a.sid ? r : null; },
      { name: 'job/a', sid: String(s2) }, 'the waiter moved up to holder');
    assert.deepEqual([row.token, row.waiters, row.cause], [String(t2), [], 'event']);
    assert.equal(await page.evaluate(() => window.__samePage), 1, 'no reload');
    noErrors(page, 'locks page');

    // one lock's page, and its HTML-named neighbour's
    await go(page, '/lock/' + encodeURIComponent('job/a'));
    await h.pageUntil(page, (t) => { const e = document.getElementById('lock-token'); return e && e.textContent === t; },
      String(t2), 'the lock page');
    assert.equal(await page.evaluate(() => document.getElementById('lock-holder').textContent), String(s2));
    await h.screenshot(page, 'lock');
    await go(page, '/lock/' + encodeURIComponent(XSS));
    await h.pageUntil(page, (n) => { const e = document.getElementById('lock-name'); return e && e.textContent === n; },
      XSS, 'the HTML-named lock page');
    assert.equal(await page.evaluate(() => document.querySelectorAll('main img').length), 0);

    // who blocks whom: s1 waits for dl/b held by s2; s2's wait for dl/a (held by s1) would
    // close a cycle: refused, and the page lists the refusal with the cycle
    await h.cliInt(L, ['LOCK', 'dl/a', s1]);
    await h.cliInt(L, ['LOCK', 'dl/b', s2]);
    const w1 = h.cliBackground(L, ['LOCK', 'dl/b', s1, 'WAIT', 600000]);
    bg.push(w1);
    await h.queued(L, 'dl/b', s1);
    await go(page, '/waits');
    const wr = await h.pageUntil(page, (a) => {
      const r = document.querySelector('#waits tbody tr[data-sid="' + a.sid + '"][data-lock="dl/b"]');
      return r && { held: r.querySelector('.held-by').textContent, by: r.querySelector('.blockers').textContent,
        cycle: r.querySelector('.cycle').textContent };
    }, { sid: String(s1) }, 'the waits page: s1 waits for dl/b');
    assert.deepEqual(wr, { held: String(s2), by: String(s2), cycle: '' });
    const refused = await h.cli(L, ['LOCK', 'dl/a', s2, 'WAIT', 600000]);
    assert.match(refused, /DEADLOCK/);
    const line = await h.pageUntil(page, (sid) => { const e = document.querySelector('#refused li[data-sid="' + sid + '"]'); return e && e.textContent; },
      String(s2), 'the refused wait, live');
    assert.ok(line.includes('dl/a') && line.includes(s2 + ' -dl/a-> ' + s1), line);
    assert.ok(await page.evaluate(() => !!document.getElementById('no-cycle')), 'nothing queued is deadlocked');
    await h.screenshot(page, 'waits');
    noErrors(page, 'lock and waits pages');

    // the cluster: three members, the leader marked
    await go(page, '/cluster');
    await h.pageUntil(page, () => document.querySelectorAll('#members tbody tr').length === 3, null, 'three members');
    assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('#members tr.leader')].map((r) => r.dataset.id)),
      [String(L.id)]);
    assert.equal(await page.evaluate(() => document.getElementById('leader-id').textContent), 'node ' + L.id);
    await h.screenshot(page, 'cluster');

    // sessions, semaphores, elections
    await h.cliInt(L, ['SEM.ACQUIRE', 'pool', s1, 2]);
    await h.cliInt(L, ['ELECT.CAMPAIGN', 'boss', s1, 'me']);
    await go(page, '/sessions');
    await h.pageUntil(page, (want) => [...document.querySelectorAll('#sessions tbody tr')].map((r) => r.dataset.sid).join(',') === want,
      s1 + ',' + s2, 'the sessions page');
    await h.screenshot(page, 'sessions');
    await go(page, '/semaphores');
    await h.pageUntil(page, () => !!document.querySelector('#semaphores tr[data-name="pool"]'), null, 'the semaphores page');
    await h.screenshot(page, 'semaphores');
    await go(page, '/elections');
    await h.pageUntil(page, () => !!document.querySelector('#elections tr[data-name="boss"]'), null, 'the elections page');
    await h.screenshot(page, 'elections');

    // the event tail: a PUT made after it opened
    await go(page, '/events');
    await h.pageUntil(page, () => !!document.getElementById('events-log'), null, 'the events page');
    const rev = await h.cliInt(L, ['PUT', 'console/k', 'v-' + process.pid]);
    const ev = await h.pageUntil(page, () => {
      const e = [...document.querySelectorAll('#events-log .event')].find((x) => x.dataset.type === 'put' && x.textContent.includes('console/k'));
      return e && e.textContent;
    }, null, 'the PUT in the event tail');
    assert.ok(ev.startsWith(rev + '-') && ev.includes('v-' + process.pid), ev);
    assert.ok(await page.evaluate((x) => [...document.querySelectorAll('#events-log .event')].some((e) => e.textContent.includes(x)), XSS),
      'the HTML name as text in the event tail');
    assert.equal(await page.evaluate(() => document.querySelectorAll('main img').length), 0);
    await h.screenshot(page, 'events');
    noErrors(page, 'cluster, sessions, semaphores, elections, events pages');

    // a follower's console: its own state, live, and a banner naming the leader; after a
    // transfer to the other follower it names the new leader and still follows
    const others = c.nodes.filter((n) => n !== L);
    const F = others[0];
    const T = others[1];
    const fp = await h.newPage(browser);
    await fp.goto(h.consoleUrl(F, '/locks'));
    await h.pageUntil(fp, (a) => { const r = window.__lockRow(a.name); return r && r.holder === a.sid ? r : null; },
      { name: 'job/a', sid: String(s2) }, "the follower's console shows job/a");
    let banner = await fp.evaluate(() => document.getElementById('banner').textContent);
    assert.ok(banner.includes('follower') && banner.includes('node ' + L.id), banner);
    await h.pageUntil(fp, () => document.getElementById('live').dataset.state === 'live', null, "the follower's stream");
    const tf = await h.cliInt(L, ['LOCK', 'job/f', s1]);
    row = await h.pageUntil(fp, (a) => { const r = window.__lockRow(a.name); return r && r.token === a.token ? r : null; },
      { name: 'job/f', token: String(tf) }, 'a lock taken on the leader, live on the follower');
    assert.equal(row.cause, 'event');
    await h.screenshot(fp, 'follower-locks');
    await h.until(async () => {
      const lead = (await h.http(T, '/health')).json;
      if (lead && lead.role === 'leader') return true;
      for (const n of c.nodes) {
        const x = (await h.http(n, '/health')).json;
        if (x && x.role === 'leader') await h.cli(n, ['CLUSTER.TRANSFER', T.id]).catch(() => '');
      }
      return false;
    }, 'node ' + T.id + ' leads');
    await h.pageUntil(fp, (id) => document.getElementById('node').dataset.leader === id &&
      document.getElementById('banner').textContent.includes('node ' + id), String(T.id), 'the banner names the new leader');
    const tg = await h.cliInt(T, ['LOCK', 'job/g', s1]);
    await h.pageUntil(fp, (a) => { const r = window.__lockRow(a.name); return r && r.token === a.token; },
      { name: 'job/g', token: String(tg) }, "a lock taken on the new leader, live on the follower's console");
    noErrors(fp, "a follower's locks page");
    await page.close_();
    await fp.close_();
  } finally {
    for (const b of bg) b.kill();
    await c.stop();
  }
});

/* A lock's history timeline: three grants, two with a wait; the name is HTML. */
test('the lock page shows the history timeline after three grants', { timeout: 300000 }, async () => {
  const c = await h.startCluster({ nodes: 1 });
  const bg = [];
  try {
    const N = c.leader;
    const name = 'h/' + XSS;
    const a = await h.cliInt(N, ['SESSION.OPEN', 60000, 'NAME', 'worker-a']);
    const b = await h.cliInt(N, ['SESSION.OPEN', 60000, 'NAME', 'worker-b']);
    const s3 = await h.cliInt(N, ['SESSION.OPEN', 60000, 'NAME', 'worker-c']);
    const t1 = await h.cliInt(N, ['LOCK', name, a]);
    const wb = h.cliBackground(N, ['LOCK', name, b, 'WAIT', 60000]);
    bg.push(wb);
    await h.queued(N, name, b);
    const wc = h.cliBackground(N, ['LOCK', name, s3, 'WAIT', 60000]);
    bg.push(wc);
    await h.queued(N, name, s3);
    assert.equal(await h.cli(N, ['UNLOCK', name, a]), 'OK');
    const t2 = Number(await wb.done);
    assert.equal(await h.cli(N, ['UNLOCK', name, b]), 'OK');
    const t3 = Number(await wc.done);
    const page = await h.newPage(browser);
    await page.goto(h.consoleUrl(N, '/lock/' + encodeURIComponent(name)));
    const rows = await h.pageUntil(page, () => {
      const r = [...document.querySelectorAll('#history tbody tr')];
      return r.length === 3 ? r.map((x) => [x.dataset.token, x.querySelector('.held-for').textContent,
        x.querySelector('.ended-by').textContent, [...x.querySelectorAll('.waiter')].map((w) => w.dataset.sid)]) : null;
    }, null, 'three grants in the timeline');
    assert.deepEqual(rows.map((r) => r[0]), [t3, t2, t1].map(String), 'newest first, with tokens');
    assert.equal(rows[0][1], 'held');
    assert.ok(rows.slice(1).every((r) => r[1] !== 'held'), JSON.stringify(rows));
    assert.deepEqual(rows.map((r) => r[2]), ['-', 'unlock', 'unlock']);
    assert.deepEqual(rows.map((r) => r[3]), [[], [String(s3)], []], 'c was queued at b\'s grant');
    assert.ok((await page.evaluate((t) => document.querySelector('#history tbody tr[data-token="' + t + '"]').textContent, t2)).includes('worker-b'));
    assert.equal(await page.evaluate(() => document.getElementById('lock-name').textContent), name);
    assert.equal(await page.evaluate(() => document.querySelectorAll('main img').length), 0, 'no <img> from a name');
    await h.screenshot(page, 'lock-history');
    noErrors(page, 'the lock page with its history');
    await page.close_();
  } finally {
    for (const x of bg) x.kill();
    await c.stop();
  }
});

/* Under --acl-file: a login is required; a user with locks= globs sees only its locks, live. */
test('under ACLs the console needs a login and a glob user sees only its locks, live', { timeout: 600000 }, async () => {
  const c = await h.startCluster({ nodes: 3, acl: true });
  try {
    const L = c.leader;
    const admin = ['admin', 'adminpw'];
    // no credentials: a Basic challenge, so a browser asks for them; one that has none to give
    // (or the wrong ones) shows no console
    const r0 = await h.http(L, '/ui/');
    assert.equal(r0.status, 401);
    assert.match(r0.headers.get('www-authenticate') || '', /^Basic realm=/);
    for (const auth of [undefined, ['jobs', 'wrong']]) {
      const p = await h.newPage(browser, { auth });
      const r = await p.goto(h.consoleUrl(L, '/locks')).catch((e) => e);
      if (r instanceof Error) { /* Chromium gave up on the challenge: the navigation failed */
        assert.match(r.message, /ERR_INVALID_AUTH_CREDENTIALS/);
      } else {
        assert.equal(r.status(), 401);
        assert.equal(await p.locator('#main').count(), 0, 'no console without a login');
      }
      await p.close_();
    }

    const sid = await h.cliInt(L, ['SESSION.OPEN', 120000], admin);
    const t = await h.cliInt(L, ['LOCK', 'job/1', sid], admin);
    await h.cliInt(L, ['LOCK', 'secret/1', sid], admin);
    const page = await h.newPage(browser, { auth: ['jobs', 'jobspw'] });
    assert.equal((await page.goto(h.consoleUrl(L, '/locks'))).status(), 200);
    const row = await h.pageUntil(page, (n) => window.__lockRow(n), 'job/1', "job/1 on the jobs user's page");
    assert.equal(row.token, String(t));
    assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('#locks tbody tr')].map((r) => r.dataset.name)),
      ['job/1'], 'only the locks its globs allow');
    // the stream is open for this user (it used to be 403) and carries its locks only
    await h.pageUntil(page, () => document.getElementById('live').dataset.state === 'live', null, "the jobs user's stream");
    await h.cliInt(L, ['LOCK', 'secret/2', sid], admin);
    const t2 = await h.cliInt(L, ['LOCK', 'job/2', sid], admin);
    const r2 = await h.pageUntil(page, (a) => { const r = window.__lockRow(a.name); return r && r.token === a.token ? r : null; },
      { name: 'job/2', token: String(t2) }, 'job/2, live for the jobs user');
    assert.equal(r2.cause, 'event');
    await h.screenshot(page, 'locks-acl');
    await go(page, '/events');
    await h.pageUntil(page, () => [...document.querySelectorAll('#events-log .event')].some((e) => e.textContent.includes('job/2')),
      null, 'job/2 in the events');
    const shown = await page.evaluate(() => document.getElementById('events-log').textContent);
    assert.ok(!shown.includes('secret/'), 'no event of a lock outside the globs: ' + shown);
    await go(page, '/lock/' + encodeURIComponent('secret/1'));
    await h.pageUntil(page, () => !!document.getElementById('no-lock'), null, "secret/1's page: no such lock");
    // the lock outside the globs is 404 to this user (a logged failed load): that one only
    noErrors(page, "the jobs user's pages", (e) => e.includes('404'));
    await page.close_();

    const ap = await h.newPage(browser, { auth: admin });
    await ap.goto(h.consoleUrl(L, '/locks'));
    await h.pageUntil(ap, () => document.querySelectorAll('#locks tbody tr').length === 4, null, 'the admin sees every lock');
    noErrors(ap, "the admin's locks page");
    await ap.close_();
  } finally {
    await c.stop();
  }
});

/* The CSP at work: a script element added to the page (as an injected name would be, if it
 * ever reached the DOM as HTML) does not run, and the browser reports the violation. */
test('the Content-Security-Policy refuses inline script', { timeout: 300000 }, async () => {
  const c = await h.startCluster({ nodes: 1 });
  try {
    const page = await h.newPage(browser);
    const r = await page.goto(h.consoleUrl(c.leader, '/cluster'));
    assert.ok(!r.headers()['content-security-policy'].includes('unsafe'));
    await h.pageUntil(page, () => document.querySelectorAll('#members tbody tr').length === 1, null, 'the cluster page');
    const got = await page.evaluate(() => new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (e) => resolve({ ran: !!window.__inline, directive: e.violatedDirective }));
      const s = document.createElement('script');
      s.textContent = 'window.__inline = 1';
      document.body.append(s);
      const d = document.createElement('div');
      d.innerHTML = '<img src=x onerror="window.__inline = 2">';
      document.body.append(d);
    }));
    assert.equal(got.ran, false, 'the inline script did not run');
    assert.match(got.directive, /^script-src/);
    assert.equal(await page.evaluate(() => window.__inline), undefined);
    assert.deepEqual(page.dialogs, []);
    await page.close_();
  } finally {
    await c.stop();
  }
});

/* A cycle of waits the server let in (detection off: --deadlock-search-limit 0) is marked. */
test('who blocks whom marks a cycle of waits', { timeout: 300000 }, async () => {
  const c = await h.startCluster({ nodes: 1, extra: ['--deadlock-search-limit', '0'] });
  const bg = [];
  try {
    const N = c.leader;
    // the flag becomes the cluster's limit once the leader writes it (replicated state)
    await h.until(async () => /deadlock_search_limit\s+0(\s|$)/.test(await h.cli(N, ['CLUSTER.INFO'])),
      'the cluster\'s deadlock search limit is 0');
    const s1 = await h.cliInt(N, ['SESSION.OPEN', 120000]);
    const s2 = await h.cliInt(N, ['SESSION.OPEN', 120000]);
    const s3 = await h.cliInt(N, ['SESSION.OPEN', 120000]);
    await h.cliInt(N, ['LOCK', 'x', s1]);
    await h.cliInt(N, ['LOCK', 'y', s2]);
    const page = await h.newPage(browser);
    await page.goto(h.consoleUrl(N, '/waits'));
    await h.pageUntil(page, () => !!document.getElementById('waits-empty'), null, 'nobody waits yet');
    for (const [name, sid] of [['y', s1], ['x', s2], ['x', s3]]) {
      const w = h.cliBackground(N, ['LOCK', name, sid, 'WAIT', 600000]);
      bg.push(w);
      await h.queued(N, name, sid);
    }
    // the page drawn after the third wait's event: three rows
    const [cyc, marks] = await h.pageUntil(page, () => {
      const e = document.getElementById('cycle');
      const rows = [...document.querySelectorAll('#waits tbody tr')];
      return e && rows.length === 3 && [e.textContent,
        Object.fromEntries(rows.map((r) => [r.dataset.sid, r.querySelector('.cycle').textContent]))];
    }, null, 'the cycle marked, live');
    assert.ok(cyc.includes(s1 + ' -y-> ' + s2 + ' -x-> ' + s1), cyc);
    // s3 waits behind the cycle but is not in it; it cannot proceed either
    assert.deepEqual(marks, { [s1]: 'deadlock', [s2]: 'deadlock', [s3]: 'deadlock' });
    await h.screenshot(page, 'waits-deadlock');
    noErrors(page, 'the waits page');
    await page.close_();
  } finally {
    for (const x of bg) x.kill();
    await c.stop();
  }
});

/* 10,000 locks: paged 25 a page, found by prefix. */
test('10,000 locks are paged and searchable by prefix', { timeout: 600000 }, async () => {
  const c = await h.startCluster({ nodes: 1 });
  try {
    const N = c.leader;
    const sid = await h.cliInt(N, ['SESSION.OPEN', 600000]);
    const names = Array.from({ length: 10000 }, (_, i) => 'k' + String(i).padStart(5, '0'));
    const out = await h.cliPipe(N, names.map((n) => ['LOCK', n, sid]));
    assert.match(out, /errors: 0, replies: 10000/);
    const page = await h.newPage(browser);
    await page.goto(h.consoleUrl(N, '/locks'));
    const names1 = () => [...document.querySelectorAll('#locks tbody tr')].map((r) => r.dataset.name);
    let shown = await h.pageUntil(page, () => document.querySelectorAll('#locks tbody tr').length === 25 &&
      [...document.querySelectorAll('#locks tbody tr')].map((r) => r.dataset.name), null, 'the first page');
    assert.deepEqual(shown, names.slice(0, 25));
    await page.click('#next');
    await h.pageUntil(page, (n) => { const r = document.querySelector('#locks tbody tr'); return r && r.dataset.name === n; }, names[25], 'the second page');
    assert.deepEqual(await page.evaluate(names1), names.slice(25, 50));
    await page.click('#prev');
    await h.pageUntil(page, (n) => { const r = document.querySelector('#locks tbody tr'); return r && r.dataset.name === n; }, names[0], 'back to the first page');
    await page.fill('#prefix', 'k0042');
    await page.click('#filter button');
    await h.pageUntil(page, () => location.hash === '#/locks?prefix=k0042' && document.querySelectorAll('#locks tbody tr').length === 10, null, 'the prefix k0042');
    shown = await page.evaluate(names1);
    assert.deepEqual(shown, names.slice(420, 430));
    assert.equal(await page.evaluate(() => document.getElementById('next')), null, 'one page');
    await h.screenshot(page, 'locks-prefix');
    await page.fill('#prefix', 'k09999');
    await page.click('#filter button');
    await h.pageUntil(page, () => document.querySelectorAll('#locks tbody tr').length === 1, null, 'the prefix k09999');
    assert.deepEqual(await page.evaluate(names1), ['k09999']);
    noErrors(page, 'the locks pages');
    await page.close_();
  } finally {
    await c.stop();
  }
});
