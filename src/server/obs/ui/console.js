// SPDX-License-Identifier: Apache-2.0
/* fencelock console: plain JavaScript, no framework, no build step.
 *
 * Every figure comes from this node's read-only JSON API (/v1/...) with the browser's HTTP
 * Basic credentials, so the console shows exactly what its user may read. Names are user data:
 * they only ever reach the page as text (textContent), never as HTML. The pages re-read the
 * API every second; the event tail is an EventSource on /v1/events, which reconnects by itself
 * and resumes after the last id it saw (Last-Event-ID). On a follower the reads use ?stale
 * (this node's own state) and a banner says so: without it the API answers 307 to the leader's
 * HTTP port, another origin, which the Content-Security-Policy (connect-src 'self') and the
 * Basic credentials of this origin do not reach (docs/server.md "The web console").
 */
'use strict';

const REFRESH_MS = 1000;
const PAGE = 25; /* locks per page: each one's detail is read too */
const EVENT_KINDS = ['put', 'del', 'expire-key', 'grant', 'release', 'expire', 'wait', 'wait-end',
  'lockdelay', 'lockdelay-end', 'leader', 'proclaim', 'deadlock', 'session-open', 'session-end'];
const MAX_EVENT_LINES = 500;

const state = { stale: false, timer: null, busy: false, source: null, lastEventId: '',
  page: { after: '', prev: [] }, view: '' };

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

/* Which node this is and whether it leads: a follower's reads are stale ones. */
async function health() {
  const r = await fetch(location.origin + '/health', { cache: 'no-store' });
  const h = await r.json();
  state.stale = h.role !== 'leader';
  document.getElementById('node').textContent =
    'node ' + h.id + ' (' + h.role + ', term ' + h.term + ', applied ' + h.applied_index + ')';
  if (h.status !== 'ok') banner('this node knows no leader: the figures may be old', true);
  else if (state.stale) banner('this node is a follower (leader: node ' + h.leader_id +
    '): what you see is its own state, possibly a little behind the leader');
  else banner('');
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

function prefixForm(prefix) {
  const input = el('input', { id: 'prefix', name: 'prefix', placeholder: 'name prefix' });
  input.value = prefix;
  const f = el('form', { class: 'filter', id: 'filter' }, 'Prefix: ', input, ' ',
    el('button', { type: 'submit' }, 'Filter'));
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = '#/locks?prefix=' + encodeURIComponent(input.value);
  });
  return f;
}

function pager(next, go) {
  const p = el('div', { class: 'pager' });
  if (state.page.prev.length) {
    const b = el('button', { id: 'prev' }, 'Previous');
    b.addEventListener('click', () => { state.page.after = state.page.prev.pop(); go(); });
    p.append(b);
  }
  if (next !== null && next !== undefined) {
    const b = el('button', { id: 'next' }, 'Next');
    b.addEventListener('click', () => {
      state.page.prev.push(state.page.after); state.page.after = String(next); go();
    });
    p.append(b);
  }
  return p;
}

async function pageLocks(params) {
  await health();
  const prefix = params.get('prefix') || '';
  let q = '/v1/locks?limit=' + PAGE + '&prefix=' + encodeURIComponent(prefix);
  if (state.page.after) q += '&after=' + encodeURIComponent(state.page.after);
  const list = await api(q);
  const details = await Promise.all(list.locks.map((l) =>
    api('/v1/locks/' + encodeURIComponent(l.name)).catch(() => null)));
  const rows = list.locks.map((l, i) => {
    const d = details[i] || l;
    return el('tr', { 'data-name': l.name }, el('td', {}, lockLink(l.name)),
      el('td', {}, l.mode), el('td', { class: 'num holder' }, l.holder || ''),
      el('td', { class: 'num token' }, l.holder || l.holders ? l.token : ''),
      el('td', { class: 'since' }, when(d.held_since_ms)),
      el('td', {}, l.lockdelay ? 'yes' : ''), waitersCell(d));
  });
  return el('section', {}, el('h2', {}, 'Locks'), prefixForm(prefix),
    list.locks.length ? table('locks', ['name', 'mode', 'holder', 'token', 'held since',
      'lock-delay', 'waiters (and whom each waits for)'], rows)
      : el('p', { id: 'locks-empty', class: 'muted' }, 'no locks' + (prefix ? ' under this prefix' : '')),
    pager(list.next, render));
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
  await health();
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
    ...timeline);
}

async function pageSessions() {
  await health();
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
    pager(s.next, render));
}

async function pageElections() {
  await health();
  const e = await api('/v1/elections?limit=' + PAGE);
  const rows = e.elections.map((x) => el('tr', { 'data-name': x.name }, el('td', {}, x.name),
    el('td', { class: 'num' }, x.sid || 'nobody'), el('td', { class: 'num' }, x.sid ? x.token : ''),
    el('td', {}, x.value), el('td', { class: 'num' }, x.since_rev),
    el('td', { class: 'num' }, x.candidates)));
  return el('section', {}, el('h2', {}, 'Elections'),
    table('elections', ['name', 'leader session', 'token', 'value', 'since revision', 'candidates'], rows));
}

async function pageSemaphores() {
  await health();
  const e = await api('/v1/semaphores?limit=' + PAGE);
  const rows = e.semaphores.map((x) => el('tr', { 'data-name': x.name }, el('td', {}, x.name),
    el('td', { class: 'num' }, x.limit), el('td', { class: 'num' }, x.permits),
    el('td', {}, x.holders.map((h) => h.sid + ' (token ' + h.token + ')').join(', ')),
    el('td', {}, x.waiters.join(', '))));
  return el('section', {}, el('h2', {}, 'Semaphores'),
    table('semaphores', ['name', 'limit', 'permits held', 'holders', 'waiters'], rows));
}

/* ---- the event tail ---- */

function closeEvents() {
  if (state.source) state.source.close();
  state.source = null;
}

function openEvents(log, status) {
  closeEvents();
  let url = location.origin + withStale('/v1/events');
  if (state.lastEventId) url += (url.includes('?') ? '&' : '?') + 'after=' + encodeURIComponent(state.lastEventId);
  const src = new EventSource(url);
  state.source = src;
  src.onopen = () => { status.textContent = 'live'; };
  src.onerror = () => {
    if (src.readyState === EventSource.CLOSED) {
      /* refused (not the leader any more, 403, 410): try again from the state we have */
      status.textContent = 'disconnected: retrying';
      setTimeout(() => { if (state.source === src && state.view === 'events') openEvents(log, status); }, 3000);
    } else status.textContent = 'reconnecting';
  };
  const show = (ev) => {
    state.lastEventId = ev.lastEventId || state.lastEventId;
    log.append(el('div', { class: 'event', 'data-type': ev.type }, ev.lastEventId + ' ' + ev.type + ' ' + ev.data));
    while (log.childNodes.length > MAX_EVENT_LINES) log.firstChild.remove();
    log.scrollTop = log.scrollHeight;
  };
  for (const k of EVENT_KINDS) src.addEventListener(k, show);
  src.addEventListener('compacted', () => {
    log.append(el('div', { class: 'event gap' }, '(the history moved past this view: events were missed)'));
    state.lastEventId = '';
    openEvents(log, status);
  });
}

function pageEvents() {
  const status = el('span', { id: 'events-status' }, 'connecting');
  const log = el('div', { id: 'events-log' });
  const sec = el('section', {}, el('h2', {}, 'Events'), el('p', {}, 'Stream: ', status,
    ' (every change from now on; the newest last)'), log);
  health().then(() => openEvents(log, status)).catch((e) => banner(String(e), true));
  return sec;
}

/* ---- routing ---- */

function route() {
  const h = location.hash || '#/cluster';
  const [path, query] = h.slice(1).split('?');
  return { path: path, params: new URLSearchParams(query || '') };
}

async function render() {
  const r = route();
  const main = document.getElementById('main');
  const parts = r.path.split('/');
  const view = parts[1] || 'cluster';
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.id === 'nav-' + view);
  if (view === 'events') {
    if (state.view !== 'events') main.replaceChildren(pageEvents());
    state.view = view;
    return;
  }
  closeEvents();
  state.view = view;
  if (state.busy) return;
  state.busy = true;
  try {
    let node;
    if (view === 'locks') node = await pageLocks(r.params);
    else if (view === 'lock') node = await pageLock(decodeURIComponent(parts.slice(2).join('/')));
    else if (view === 'sessions') node = await pageSessions();
    else if (view === 'elections') node = await pageElections();
    else if (view === 'semaphores') node = await pageSemaphores();
    else node = await pageCluster();
    if (route().path !== r.path) return; /* navigated away meanwhile */
    const old = document.getElementById('prefix');
    const typing = old && document.activeElement === old;
    if (typing) { /* keep what the user is typing: refresh everything but the form */
      const form = document.getElementById('filter');
      node.replaceChild(form, node.querySelector('#filter'));
    }
    main.replaceChildren(node);
    if (typing) old.focus();
  } catch (e) {
    banner(String(e.message || e), true);
  } finally {
    state.busy = false;
  }
}

function start() {
  window.addEventListener('hashchange', () => {
    state.page = { after: '', prev: [] };
    render();
  });
  render();
  state.timer = setInterval(() => { if (state.view !== 'events') render(); }, REFRESH_MS);
}

document.addEventListener('DOMContentLoaded', start);
