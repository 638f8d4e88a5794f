// SPDX-License-Identifier: Apache-2.0
/* fencelock console: plain JavaScript, no framework, no build step.
 *
 * Every figure comes from this node's read-only JSON API (/v1/...) with the browser's HTTP
 * Basic credentials, so the console shows exactly what its user may read. Names are user data:
 * they only ever reach the page as text (textContent), never as HTML.
 *
 * Live updates: one EventSource on /v1/events stays open while the console is (it reconnects by
 * itself and resumes after the last id it saw: Last-Event-ID). Every event re-renders the page
 * shown when it lists state that events change (locks, one lock, sessions, elections,
 * semaphores, waits): the page is read again from the API, at most one read at a time, so a
 * burst of events costs one more read, not one per event. The events page shows the stream
 * itself. What no event reports (this node's role, term and applied index; the members) is
 * read by a slow poll of /health, which also re-renders the cluster page. On a follower every
 * read uses ?stale (this node's own state) and a banner names the leader: without it the API
 * answers 307 to the leader's HTTP port, another origin, which the Content-Security-Policy
 * (connect-src 'self') and the Basic credentials of this origin do not reach (docs/server.md
 * "The web console").
 *
 * The page says how it was last drawn (#main's data-cause: "nav", "event" or "poll", and
 * data-event: the id of the last event seen then) and #live how the stream is, so a test can
 * tell a live update from a reload or a poll.
 */
'use strict';

const POLL_MS = 5000; /* /health: the role, the leader and the cluster page */
const PAGE = 25; /* locks per page: each one's detail is read too */
const EVENT_KINDS = ['put', 'del', 'expire-key', 'grant', 'release', 'expire', 'wait', 'wait-end',
  'lockdelay', 'lockdelay-end', 'leader', 'proclaim', 'deadlock', 'session-open', 'session-end',
  'revoke-requested', 'wait-notify', 'latch-zero', 'latch-broken', 'barrier-full', 'barrier-done',
  'barrier-broken', 'latch-deleted'];
const MAX_EVENT_LINES = 500;
const LIVE_VIEWS = ['locks', 'lock', 'sessions', 'elections', 'semaphores', 'waits'];

const state = { stale: null, leader: 0, source: null, lastEventId: '', events: [], busy: false,
  again: null, page: { after: '', prev: [] }, view: '', retry: null };

/* el('td', {class: 'num'}, 'text', child...): every string becomes a text node. */
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function table(id, heads, rows) {
  const t = el('table', { id: id });
  t.append(el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', {}, h)))));
  const body = el('tbody');
  for (const r of rows) body.append(r);
  t.append(body);
  return t;
}

function banner(text, isError) {
  const b = document.getElementById('banner');
  b.hidden = !text;
  b.textContent = text || '';
  b.className = isError ? 'error' : '';
}

function withStale(path) {
  if (!state.stale) return path;
  return path + (path.includes('?') ? '&' : '?') + 'stale';
}

/* GET a JSON path of this node (location.origin: never the userinfo of the page's URL). */
async function api(path) {
  const r = await fetch(location.origin + withStale(path), { cache: 'no-store' });
  if (r.status === 404) return null;
  if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()).trim());
  return r.json();
}

/* Which node this is and whether it leads: a follower's reads are stale ones. A change of role
 * or leader reopens the event stream (with or without ?stale). */
async function health() {
  const r = await fetch(location.origin + '/health', { cache: 'no-store' });
  const h = await r.json();
  const stale = h.role !== 'leader';
  const moved = state.stale !== stale || state.leader !== h.leader_id;
  state.stale = stale;
  state.leader = h.leader_id;
  const node = document.getElementById('node');
  node.textContent = 'node ' + h.id + ' (' + h.role + ', term ' + h.term + ', applied ' +
    h.applied_index + ')';
  node.dataset.role = h.role;
  node.dataset.leader = String(h.leader_id || 0);
  if (h.status !== 'ok') banner('this node knows no leader: the figures may be old', true);
  else if (state.stale) banner('this node is a follower (leader: node ' + h.leader_id +
    '): what you see is its own state, possibly a little behind the leader');
  else banner('');
  if (moved) openEvents();
  return h;
}

function when(ms) {
  if (!ms) return '';
  const held = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') + ' (' + held + ' s)';
}

function lockLink(name) {
  return el('a', { href: '#/lock/' + encodeURIComponent(name), class: 'lock-link' }, name);
}

function waitersCell(lk) {
  const td = el('td', { class: 'waiters' });
  (lk.waiters || []).forEach((sid, i) => {
    const on = (lk.waits_for && lk.waits_for[i]) || [];
    td.append(el('div', { class: 'waiter', 'data-sid': String(sid) },
      'session ' + sid + (on.length ? ' waits for ' + on.join(', ') : '')));
  });
  return td;
}

/* ---- pages: each returns the node to show ---- */

async function pageCluster() {
  const h = await health();
  const m = await api('/v1/members');
  /* `leader` is 1 on the leader's row (CLUSTER.MEMBERS) */
  const rows = m.members.map((x) => el('tr', { 'data-id': String(x.id), class: x.leader ? 'leader' : '' },
    el('td', { class: 'num' }, x.id), el('td', {}, x.role + (x.leader ? ' (leader)' : '')),
    el('td', {}, x.client_address), el('td', {}, x.raft_address)));
  const lead = m.members.find((x) => x.leader);
  const leader = lead ? lead.id : 0;
  return el('section', {},
    el('h2', {}, 'Cluster'),
    el('p', { id: 'health' }, 'health: ' + h.status + ', leader: ',
      el('span', { id: 'leader-id' }, leader ? 'node ' + leader : 'none'),
      ', members: ', el('span', { id: 'member-count' }, m.members.length)),
    table('members', ['id', 'role', 'client address', 'raft address'], rows));
}

function prefixForm(prefix, view) {
  const input = el('input', { id: 'prefix', name: 'prefix', placeholder: 'name prefix' });
  input.value = prefix;
  const f = el('form', { class: 'filter', id: 'filter' }, 'Prefix: ', input, ' ',
    el('button', { type: 'submit' }, 'Filter'));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/' + view + '?prefix=' + encodeURIComponent(input.value);
  });
  return f;
}

function pager(next) {
  const p = el('div', { class: 'pager' });
  if (state.page.prev.length) {
    const b = el('button', { id: 'prev' }, 'Previous');
    b.addEventListener('click', () => { state.page.after = state.page.prev.pop(); render('nav'); });
    p.append(b);
  }
  if (next !== null && next !== undefined) {
    const b = el('button', { id: 'next' }, 'Next');
    b.addEventListener('click', () => {
      state.page.prev.push(state.page.after); state.page.after = String(next); render('nav');
    });
    p.append(b);
  }
  return p;
}

async function pageLocks(params) {
  const prefix = params.get('prefix') || '';
  let q = '/v1/locks?limit=' + PAGE + '&prefix=' + encodeURIComponent(prefix);
  if (state.page.after) q += '&after=' + encodeURIComponent(state.page.after);
  const list = await api(q);
  /* a lock's detail (held since, whom each waiter waits for); the list's row for the others */
  const isLock = (l) => ['exclusive', 'shared', 'none'].includes(l.mode);
  const details = await Promise.all(list.locks.map((l) => (isLock(l)
    ? api('/v1/locks/' + encodeURIComponent(l.name)).catch(() => null) : Promise.resolve(null))));
  const rows = list.locks.map((l, i) => {
    const d = details[i] || l;
    return el('tr', { 'data-name': l.name }, el('td', {}, lockLink(l.name)),
      el('td', {}, l.mode), el('td', { class: 'num holder' }, l.holder || ''),
      el('td', { class: 'num token' }, l.holder || l.holders ? l.token : ''),
      el('td', { class: 'since' }, when(d.held_since_ms)),
      el('td', {}, l.lockdelay ? 'yes' : ''), waitersCell(d));
  });
  return el('section', {}, el('h2', {}, 'Locks'), prefixForm(prefix, 'locks'),
    list.locks.length ? table('locks', ['name', 'mode', 'holder', 'token', 'held since',
      'lock-delay', 'waiters (and whom each waits for)'], rows)
      : el('p', { id: 'locks-empty', class: 'muted' }, 'no locks' + (prefix ? ' under this prefix' : '')),
    pager(list.next));
}

function ms(v) {
  return v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + ' s' : v + ' ms';
}

/* The lock's timeline (GET /v1/locks/{name}/history): one row per grant, newest first, with
 * its token, holder, hold and wait times and the waiters at the grant. Names are text nodes. */
async function historyTimeline(name) {
  let h;
  try {
    h = await api('/v1/locks/' + encodeURIComponent(name) + '/history');
  } catch (e) {
    return el('p', { id: 'history-none', class: 'muted' }, 'history: ' + e.message);
  }
  if (!h) return el('p', { id: 'history-none', class: 'muted' }, 'no history (the lock history is off)');
  if (!h.history.length) return el('p', { id: 'history-none', class: 'muted' }, 'no grants recorded');
  const rows = h.history.map((e) => el('tr', { 'data-token': String(e.token), class: e.ended_rev ? 'ended' : 'held' },
    el('td', { class: 'num' }, e.token),
    el('td', {}, 'session ' + e.session + (e.session_name ? ' (' + e.session_name + ')' : '') +
      (e.user ? ' by ' + e.user : '')),
    el('td', {}, new Date(e.granted_ms).toISOString().replace('T', ' ').replace(/Z$/, 'Z')),
    el('td', { class: 'held-for' }, e.ended_rev ? ms(e.held_ms) : 'held'),
    el('td', { class: 'ended-by' }, e.ended_by || '-'),
    el('td', { class: 'waited' }, ms(e.waited_ms)),
    el('td', { class: 'waiters' }, ...e.waiters.map((w) => el('div', { class: 'waiter', 'data-sid': String(w.session) },
      'session ' + w.session + ' waited ' + ms(w.waited_ms))),
      e.waiters_total > e.waiters.length ? '+' + (e.waiters_total - e.waiters.length) + ' more' : '')));
  return table('history', ['token', 'holder', 'granted at', 'held for', 'ended by', 'waited',
    'queued at the grant'], rows);
}

async function pageLock(name) {
  const d = await api('/v1/locks/' + encodeURIComponent(name));
  const timeline = [el('h3', {}, 'History'), await historyTimeline(name)];
  if (!d) return el('section', {}, el('h2', {}, name), el('p', { id: 'no-lock' }, 'no such lock (free and nobody waits, or not yours to see)'), ...timeline);
  const holders = d.holders.map((h) => el('tr', {}, el('td', { class: 'num' }, h.sid),
    el('td', { class: 'num' }, h.token)));
  const waiters = d.waiters.map((sid, i) => el('tr', { 'data-sid': String(sid) },
    el('td', { class: 'num' }, i + 1), el('td', { class: 'num' }, sid),
    el('td', {}, (d.waits_for[i] || []).join(', '))));
  return el('section', {}, el('h2', { id: 'lock-name' }, d.name),
    el('dl', {}, el('dt', {}, 'mode'), el('dd', {}, d.mode),
      el('dt', {}, 'holder'), el('dd', { id: 'lock-holder' }, d.holder || 'none'),
      el('dt', {}, 'token'), el('dd', { id: 'lock-token' }, d.token),
      el('dt', {}, 'held since'), el('dd', {}, when(d.held_since_ms)),
      el('dt', {}, 'lock-delay'), el('dd', {}, d.lockdelay ? 'yes' : 'no'),
      el('dt', {}, 'value'), el('dd', { id: 'lock-value' }, d.value || ''),
      el('dt', {}, 'max hold'), el('dd', { id: 'lock-max-hold' }, d.max_hold_ms ? d.max_hold_ms + ' ms' : 'none'),
      el('dt', {}, 'transitions'), el('dd', { id: 'lock-transitions' }, d.transitions || 0)),
    el('h3', {}, 'Holders'), table('holders', ['session', 'token'], holders),
    el('h3', {}, 'Queue'), table('queue', ['#', 'session', 'waits for sessions'], waiters),
    ...(d.waits_for_cut ? [el('p', { id: 'waits-cut', class: 'muted' },
      'The lists of whom each waits for stop at the server\'s --max-keys-reply sessions in all.')] : []),
    ...timeline);
}

async function pageSessions() {
  let q = '/v1/sessions?limit=' + PAGE;
  if (state.page.after) q += '&after=' + encodeURIComponent(state.page.after);
  const s = await api(q);
  const rows = s.sessions.map((x) => el('tr', { 'data-sid': String(x.sid) },
    el('td', { class: 'num' }, x.sid), el('td', {}, x.name), el('td', {}, x.owner),
    el('td', { class: 'num' }, x.ttl_ms), el('td', { class: 'num' }, x.remaining_ms),
    el('td', { class: 'num' }, x.locks), el('td', { class: 'num' }, x.waits),
    el('td', { class: 'num' }, x.keys)));
  return el('section', {}, el('h2', {}, 'Sessions'),
    table('sessions', ['id', 'name', 'owner', 'TTL ms', 'remaining ms', 'locks', 'waits', 'keys'], rows),
    pager(s.next));
}

async function pageElections() {
  const e = await api('/v1/elections?limit=' + PAGE);
  const rows = e.elections.map((x) => el('tr', { 'data-name': x.name }, el('td', {}, x.name),
    el('td', { class: 'num' }, x.sid || 'nobody'), el('td', { class: 'num' }, x.sid ? x.token : ''),
    el('td', {}, x.value), el('td', { class: 'num' }, x.since_rev),
    el('td', { class: 'num' }, x.candidates)));
  return el('section', {}, el('h2', {}, 'Elections'),
    table('elections', ['name', 'leader session', 'token', 'value', 'since revision', 'candidates'], rows));
}

async function pageSemaphores() {
  const e = await api('/v1/semaphores?limit=' + PAGE);
  const rows = e.semaphores.map((x) => el('tr', { 'data-name': x.name }, el('td', {}, x.name),
    el('td', { class: 'num' }, x.limit), el('td', { class: 'num' }, x.permits),
    el('td', {}, x.holders.map((h) => h.sid + ' (token ' + h.token + ')').join(', ')),
    el('td', {}, x.waiters.join(', '))));
  return el('section', {}, el('h2', {}, 'Semaphores'),
    table('semaphores', ['name', 'limit', 'permits held', 'holders', 'waiters'], rows));
}

/* ---- who blocks whom ---- */

/* The holders of each object the waits name: a lock's from /v1/locks/{name}, a semaphore's and
 * an election's from their list under the name as prefix (the name itself sorts first). */
async function holdersOf(rows) {
  const out = new Map();
  const names = [...new Map(rows.map((r) => [r.lock, r.object])).entries()];
  await Promise.all(names.map(async ([name, object]) => {
    let sids = [];
    try {
      if (object === 'semaphore' || object === 'election') {
        const key = object === 'semaphore' ? 'semaphores' : 'elections';
        const l = await api('/v1/' + key + '?limit=1&prefix=' + encodeURIComponent(name));
        const x = l && l[key].find((y) => y.name === name);
        if (x) sids = object === 'semaphore' ? x.holders.map((h) => h.sid) : (x.sid ? [x.sid] : []);
      } else {
        const d = await api('/v1/locks/' + encodeURIComponent(name));
        if (d) sids = d.holders.map((h) => h.sid);
      }
    } catch (e) { /* shown as unknown */ }
    out.set(name, sids);
  }));
  return out;
}

/* The sessions that can never proceed, by the server's rule (docs/protocol.md "Deadlocks"):
 * a session that waits for nobody (or is not seen waiting) lets go in time; a request can be
 * granted once every session it waits for can proceed, or for an "any" request (a full
 * semaphore) one of them; a session proceeds once all its requests can. What is left is
 * deadlocked. With only part of the waits in view (one page, or a row `cut` at the server's
 * --max-keys-reply sids: its list is partial, so it is taken to be granted), more sessions are
 * taken to proceed, so a session is never marked falsely. */
function stuckSessions(rows) {
  const reqs = new Map();
  for (const r of rows) {
    if (!reqs.has(r.sid)) reqs.set(r.sid, []);
    reqs.get(r.sid).push(r);
  }
  const free = new Set();
  const can = (sid) => !reqs.has(sid) || free.has(sid);
  for (let changed = true; changed;) {
    changed = false;
    for (const [sid, rs] of reqs) {
      if (free.has(sid)) continue;
      const ok = rs.every((r) => r.cut || !r.waits_for.length ||
        (r.any ? r.waits_for.some(can) : r.waits_for.every(can)));
      if (ok) { free.add(sid); changed = true; }
    }
  }
  return new Set([...reqs.keys()].filter((sid) => !free.has(sid)));
}

/* One cycle through the stuck sessions, as the server writes one: S1 -name-> S2 ... -> S1. */
function cycleText(rows, stuck) {
  if (!stuck.size) return '';
  const start = [...stuck].sort((a, b) => a - b)[0];
  const seen = new Map();
  const hops = [];
  let at = start;
  while (!seen.has(at)) {
    seen.set(at, hops.length);
    const r = rows.find((x) => x.sid === at && x.waits_for.some((b) => stuck.has(b)));
    if (!r) return '';
    const next = r.waits_for.find((b) => stuck.has(b));
    hops.push([at, r.lock]);
    at = next;
  }
  const cyc = hops.slice(seen.get(at));
  return cyc.map(([sid, lock]) => sid + ' -' + lock + '->').join(' ') + ' ' + at;
}

async function pageWaits(params) {
  const prefix = params.get('prefix') || '';
  let q = '/v1/waits?limit=' + PAGE + '&prefix=' + encodeURIComponent(prefix);
  if (state.page.after) q += '&after=' + encodeURIComponent(state.page.after);
  const w = await api(q);
  const holders = await holdersOf(w.waits);
  const stuck = stuckSessions(w.waits);
  const rows = w.waits.map((r) => el('tr', { 'data-sid': String(r.sid), 'data-lock': r.lock,
    class: stuck.has(r.sid) ? 'deadlocked' : '' },
  el('td', { class: 'num sid' }, r.sid),
  el('td', { class: 'lock' }, lockLink(r.lock), r.object !== 'lock' ? ' (' + r.object + ')' : ''),
  el('td', { class: 'num held-by' }, (holders.get(r.lock) || []).join(', ')),
  el('td', { class: 'num blockers' }, r.waits_for.join(r.any ? ' or ' : ', ') + (r.cut ? ' ...' : '')),
  el('td', { class: 'cycle' }, stuck.has(r.sid) ? 'deadlock' : '')));
  const cyc = cycleText(w.waits, stuck);
  const refused = state.events.filter((e) => e.type === 'deadlock').slice(-10).reverse();
  return el('section', {}, el('h2', {}, 'Who blocks whom'),
    el('p', { class: 'muted' }, 'Each row: a session waiting for a lock, semaphore or election, who holds it, ' +
      'and the sessions it waits for (holders, or requests queued before it).'),
    prefixForm(prefix, 'waits'),
    cyc ? el('p', { id: 'cycle', class: 'deadlock' }, 'Deadlock: these sessions wait for each other in a cycle: ', cyc)
      : el('p', { id: 'no-cycle', class: 'muted' }, 'No deadlock among the waits shown.'),
    w.waits.length ? table('waits', ['waiting session', 'waits for', 'held by', 'blocked by sessions', 'can never proceed'], rows)
      : el('p', { id: 'waits-empty', class: 'muted' }, 'nobody waits' + (prefix ? ' under this prefix' : '')),
    pager(w.next),
    el('h3', {}, 'Waits refused as deadlocks (since this page opened)'),
    refused.length ? el('ul', { id: 'refused' }, ...refused.map((e) => el('li', { class: 'refused', 'data-sid': String(e.sid) },
      'session ' + e.sid + ' asked to wait for ' + e.name + ': refused, cycle ' + e.value)))
      : el('p', { id: 'refused-none', class: 'muted' }, 'none'));
}

/* ---- the event stream ---- */

function liveStatus(text) {
  const s = document.getElementById('live');
  s.textContent = text;
  s.dataset.state = text;
}

function eventLine(ev) {
  return el('div', { class: 'event', 'data-type': ev.type }, ev.id + ' ' + ev.type + ' ' + ev.data);
}

/* One stream for the console, reopened when the node's role or leader changes (health). */
function openEvents() {
  if (state.source) state.source.close();
  clearTimeout(state.retry);
  let url = location.origin + withStale('/v1/events');
  if (state.lastEventId) url += (url.includes('?') ? '&' : '?') + 'after=' + encodeURIComponent(state.lastEventId);
  const src = new EventSource(url);
  state.source = src;
  liveStatus('connecting');
  src.onopen = () => liveStatus('live');
  src.onerror = () => {
    if (src.readyState !== EventSource.CLOSED) { liveStatus('reconnecting'); return; }
    /* refused (503 on a follower that turned leader-less, 401, 410): again in a while */
    liveStatus('disconnected: retrying');
    state.retry = setTimeout(() => { if (state.source === src) openEvents(); }, 3000);
  };
  const take = (ev) => {
    state.lastEventId = ev.lastEventId || state.lastEventId;
    let data = null;
    try { data = JSON.parse(ev.data); } catch (e) { /* shown raw */ }
    const d = data || {};
    /* shown as parsed, so that a name reads as itself whatever the server's JSON escapes */
    const e = { id: ev.lastEventId, type: ev.type, data: data ? JSON.stringify(data) : ev.data,
      sid: d.sid, name: d.name, value: d.value };
    state.events.push(e);
    if (state.events.length > MAX_EVENT_LINES) state.events.shift();
    const log = document.getElementById('events-log');
    if (log && state.view === 'events') {
      log.append(eventLine(e));
      while (log.childNodes.length > MAX_EVENT_LINES) log.firstChild.remove();
      log.scrollTop = log.scrollHeight;
    }
    if (LIVE_VIEWS.includes(state.view)) render('event');
  };
  for (const k of EVENT_KINDS) src.addEventListener(k, take);
  src.addEventListener('compacted', () => {
    state.events.push({ id: '', type: 'gap', data: '(the history moved past this view: events were missed)' });
    state.lastEventId = '';
    openEvents();
    if (LIVE_VIEWS.includes(state.view)) render('event');
  });
  src.addEventListener('forbidden', () => { src.close(); liveStatus('closed: no read permission'); });
}

function pageEvents() {
  const log = el('div', { id: 'events-log' }, ...state.events.map(eventLine));
  return el('section', {}, el('h2', {}, 'Events'), el('p', {}, 'Every change this node applied since the ' +
    'console opened, the newest last (only those your user may see).'), log);
}

/* ---- routing ---- */

function route() {
  const h = location.hash || '#/cluster';
  const [path, query] = h.slice(1).split('?');
  return { path: path, params: new URLSearchParams(query || '') };
}

/* Draw the page the hash names. cause: "nav" (opened, paged), "event" (the stream), "poll"
 * (the health poll). One read at a time: a render asked for meanwhile runs once after it. */
async function render(cause) {
  const r = route();
  const main = document.getElementById('main');
  const parts = r.path.split('/');
  const view = parts[1] || 'cluster';
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.id === 'nav-' + view);
  state.view = view;
  if (state.busy) { state.again = state.again === 'nav' ? 'nav' : cause; return; }
  state.busy = true;
  const seen = state.lastEventId;
  try {
    let node;
    if (view === 'events') {
      if (cause !== 'nav') return; /* the stream appends to the page itself */
      node = pageEvents();
    } else if (view === 'locks') node = await pageLocks(r.params);
    else if (view === 'lock') node = await pageLock(decodeURIComponent(parts.slice(2).join('/')));
    else if (view === 'sessions') node = await pageSessions();
    else if (view === 'elections') node = await pageElections();
    else if (view === 'semaphores') node = await pageSemaphores();
    else if (view === 'waits') node = await pageWaits(r.params);
    else node = await pageCluster();
    if (route().path !== r.path) return; /* navigated away meanwhile */
    const old = document.getElementById('prefix');
    const typing = old && document.activeElement === old;
    if (typing && node.querySelector('#filter')) { /* keep what the user is typing */
      node.replaceChild(document.getElementById('filter'), node.querySelector('#filter'));
    }
    main.replaceChildren(node);
    main.dataset.cause = cause;
    main.dataset.event = seen;
    main.dataset.renders = String(Number(main.dataset.renders || 0) + 1);
    if (typing) old.focus();
    if (view === 'events') {
      const log = document.getElementById('events-log');
      log.scrollTop = log.scrollHeight;
    }
  } catch (e) {
    banner(String(e.message || e), true);
  } finally {
    state.busy = false;
    const again = state.again;
    state.again = null;
    if (again) render(again);
  }
}

function start() {
  window.addEventListener('hashchange', () => {
    state.page = { after: '', prev: [] };
    render('nav');
  });
  health().catch((e) => banner(String(e.message || e), true)).then(() => render('nav'));
  setInterval(() => {
    health().then(() => { if (state.view === 'cluster') render('poll'); })
      .catch((e) => banner(String(e.message || e), true));
  }, POLL_MS);
}

document.addEventListener('DOMContentLoaded', start);
