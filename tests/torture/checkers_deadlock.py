# SPDX-License-Identifier: Apache-2.0
"""The checker of the ``deadlock`` workload (worker_deadlock.c): sessions take two of three
exclusive locks in random order, so their waits close cycles; the servers must refuse exactly
the waits that close one (-DEADLOCK, docs/protocol.md "Deadlocks").

The judge is the event stream of the locks ``dl/``, read from the leader after the run
(torture.py writes it as [[id, {field: value}]] to a file its final line names): it
says what was held and queued after every log entry. Replaying it, the checker rebuilds the
wait-for graph independently of the servers' rule (a waiter waits for the holder and for every
session queued before it) and finds:

  cycle-left        after some log entry the queued waits form a cycle: a wait that closed
                    one was queued (a cycle not broken within its entry)
  false-deadlock    a ``deadlock`` event whose named cycle ("s1 -n1-> s2 ... -> s1") is not
                    a path of real edges of the graph at that entry (s1's refused request on
                    n1 would wait for s2; each later s_i is queued on n_i behind s_i+1 or
                    held by it)
  deadlock-count    refusals in the history (fail with the DEADLOCK error) and deadlock
                    events do not match: each acknowledged refusal has its event, and no
                    event lacks a refused (or unknown) request
  stream-unknown    the stream could not be read whole (-COMPACTED, no answer): the verdict
                    is unknown, not valid

Stats: deadlocks (events), refused (history), waits, max_queue.
"""

import json

import checkers as ck


def _stream(finals):
    """The entries of the stream file the final line names (a test may put them in "entries"),
    or a text saying why there are none."""
    for ev in finals:
        if ev.get("workload") != "deadlock":
            continue
        if "entries" in ev:
            return ev["entries"]
        try:
            with open(ev.get("stream") or "", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            return "stream file: %s" % e
    return None


def _idkey(i):
    rev, _, n = str(i).partition("-")
    return (int(rev), int(n or 0))


class Graph:
    """Holders and FIFO queues of exclusive locks, as the stream says."""

    def __init__(self):
        self.holder, self.queue = {}, {}

    def apply(self, f):
        t, name = f.get("type"), f.get("name")
        sid = int(f["sid"]) if f.get("sid") not in (None, "") else None
        q = self.queue.setdefault(name, [])
        if t == "grant":
            self.holder[name] = sid
            if sid in q:
                q.remove(sid)
        elif t in ("release", "expire"):
            self.holder.pop(name, None)
        elif t == "wait":
            q.append(sid)
        elif t == "wait-end":
            if sid in q:
                q.remove(sid)

    def blocks(self, name, frm, to):
        """Whether `to` blocks `frm`'s queued request on name (holder, or queued before)."""
        q = self.queue.get(name, [])
        if frm not in q or to == frm:
            return False
        return self.holder.get(name) == to or to in q[:q.index(frm)]

    def edges(self):
        out = {}
        for name, q in self.queue.items():
            for i, s in enumerate(q):
                tos = out.setdefault(s, set())
                h = self.holder.get(name)
                if h is not None and h != s:
                    tos.add(h)
                tos.update(x for x in q[:i] if x != s)
        return out

    def cycle(self):
        """A cycle of queued waits (a list of sids), or None."""
        adj, color = self.edges(), {}
        for root in sorted(adj):
            if color.get(root):
                continue
            stack, path = [(root, iter(sorted(adj.get(root, ()))))], [root]
            color[root] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[node] = 2
                    stack.pop()
                    path.pop()
                elif color.get(nxt) == 1:
                    return path[path.index(nxt):] + [nxt]
                elif not color.get(nxt):
                    color[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter(sorted(adj.get(nxt, ())))))
        return None


def _parse_cycle(text):
    """[(sid, name, next_sid), ...] of "s1 -n1-> s2 -n2-> ... s1", or None."""
    hops, rest = [], text.strip()
    try:
        first, rest = rest.split(" -", 1)
        cur = int(first)
        while rest:
            name, rest = rest.split("-> ", 1)
            nxt, _, rest = rest.partition(" -")
            hops.append((cur, name, int(nxt)))
            cur = int(nxt)
    except ValueError:
        return None
    return hops if hops and hops[-1][2] == hops[0][0] else None


def _real_cycle(g, f, hops):
    """Whether the named cycle is real in g, the state before the refused request."""
    sid, name = int(f["sid"]), f.get("name")
    if not hops or hops[0][0] != sid or hops[0][1] != name:
        return False
    s0, n0, t0 = hops[0]
    if s0 in g.queue.get(n0, []):  # the refused request was not queued
        return False
    if not (g.holder.get(n0) == t0 or t0 in g.queue.get(n0, [])):
        return False
    return all(g.blocks(n, a, b) for a, n, b in hops[1:])


def check_deadlock(history):
    ops, finals, problems = ck.pair_ops(history)
    violations = list(problems)
    stream = _stream(finals)
    refused = [o for o in ops if o.f == "lock" and o.type == "fail" and
               str(o.get("msg") or "").startswith("DEADLOCK")]
    unknown = [o for o in ops if o.f == "lock" and o.type == "info"]
    stats = {"types": ck._type_counts(ops), "refused": len(refused)}
    if not isinstance(stream, list):
        violations.append({"kind": "stream-unknown", "msg": "the event stream was not read: %r"
                           % (stream,)})
        return ck._verdict("deadlock", None, ops, violations, stats, valid="unknown")
    g, n_dl, n_wait, max_q = Graph(), 0, 0, 0
    entries = sorted(stream, key=lambda e: _idkey(e[0]))
    for k, (i, f) in enumerate(entries):
        if f.get("type") == "deadlock":
            n_dl += 1
            hops = _parse_cycle(f.get("value") or "")
            if hops is None or not _real_cycle(g, f, hops):
                violations.append({"kind": "false-deadlock", "id": i, "event": f,
                                   "holders": dict(g.holder),
                                   "queues": {n: list(q) for n, q in g.queue.items() if q}})
        else:
            n_wait += f.get("type") == "wait"
            g.apply(f)
        last_of_entry = k + 1 == len(entries) or \
            _idkey(entries[k + 1][0])[0] != _idkey(i)[0]
        if last_of_entry:
            max_q = max([max_q] + [len(q) for q in g.queue.values()])
            c = g.cycle()
            if c:
                violations.append({"kind": "cycle-left", "id": i, "cycle": c,
                                   "holders": dict(g.holder)})
                g = Graph()  # report it once, then go on from an empty state
    if not (len(refused) <= n_dl <= len(refused) + len(unknown)):
        violations.append({"kind": "deadlock-count",
                           "msg": "%d refusals acknowledged (%d unknown) but %d deadlock "
                                  "events" % (len(refused), len(unknown), n_dl)})
    stats.update({"deadlocks": n_dl, "waits": n_wait, "max_queue": max_q,
                  "stream_events": len(entries)})
    return ck._verdict("deadlock", None, ops, violations, stats)
