# SPDX-License-Identifier: Apache-2.0
"""Checker of the watch workload: watchers reading fencelock:events[:<prefix>] with
XREAD from the last id they delivered, across random disconnects and fail-overs
(worker_watch.c).

A watcher's history is a chain of ``xread`` ops: invoke ``from`` (the id asked after; "0" at
the start only; after an explicit -COMPACTED gap the id just before ``oldest``, or the last
delivered id if later), ok ``events`` ([[id, {fields}], ...]), fail
``error`` (COMPACTED with ``oldest``: a reported gap), info (nothing delivered).  Its
*segments* are the id ranges it covered without a reported gap: from the id it first asked
after (exclusive; from "0": its first delivered id, inclusive) to its last delivered id.

Violations:
  order / duplicate   a delivered id not above the previous one of the same watcher;
  resume              a read not resumed from the last delivered id, or after a -COMPACTED not
                      from just before ``oldest`` (worker contract; "0" again could go back);
  disagreement        two deliveries of one id with different fields (one global sequence);
  gap                 an event another watcher got, inside a segment of this watcher and in
                      its stream, that this watcher never delivered (silent loss);
  wrong-stream        a prefix watcher got an event whose name does not start with the prefix;
  lost-put            an acknowledged PUT (register / rw / counter histories: key, rev) inside
                      a segment of a watcher whose stream includes the key, without a ``put``
                      event of that key at that revision (or with another value).
-COMPACTED is no violation: it is counted (stats ``compacted``) and ends a segment.
"""

import bisect
import time
from collections import defaultdict

import checkers as ck

ALL = "fencelock:events"
KEY_OF_WORKLOAD = {"fenced-counter": "counter", "control": "control"}


def parse_id(s):
    """'<rev>-<n>' (or '<rev>') -> (rev, n); None if malformed."""
    if not isinstance(s, str):
        return None
    a, sep, b = s.partition("-")
    if not a.isdigit() or (sep and not b.isdigit()):
        return None
    return (int(a), int(b) if sep else 0)


def stream_prefix(stream):
    """None for the whole stream, the prefix for fencelock:events:<prefix>."""
    if stream == ALL:
        return None
    return stream[len(ALL) + 1:] if isinstance(stream, str) and stream.startswith(ALL + ":") \
        else ""


def in_stream(prefix, fields):
    if prefix is None:
        return True
    name = fields.get("name")
    return isinstance(name, str) and name.startswith(prefix)


class Segment:
    __slots__ = ("lo", "lo_incl", "hi")

    def __init__(self, lo, lo_incl):
        self.lo, self.lo_incl, self.hi = lo, lo_incl, None

    def covers(self, i):
        if self.hi is None or i > self.hi:
            return False
        return i >= self.lo if self.lo_incl else i > self.lo

    def describe(self):
        return {"after" if not self.lo_incl else "from": "%d-%d" % self.lo,
                "to": "%d-%d" % self.hi if self.hi else None}


class Watcher:
    def __init__(self, proc, stream):
        self.proc, self.stream, self.prefix = proc, stream, stream_prefix(stream)
        self.segments = []
        self.delivered = {}          # id -> fields
        self.puts = {}               # rev -> (name, value) of delivered put events
        self.compacted = 0
        self.resumes = 0


def before(i):
    """The id just before i: where a reader goes on after -COMPACTED oldest=i."""
    rev, n = i
    return (rev, n - 1) if n else ((rev - 1, 2 ** 64 - 1) if rev else (0, 0))


def _walk(proc, ops, glob, violations):
    """One watcher's reads in time order: its deliveries, segments and own violations."""
    ops.sort(key=lambda o: o.t0)
    w = Watcher(proc, ops[0].get("stream", prefer="inv"))
    cur, seg = None, None
    expect = None                    # the id the next read must ask after (None: "0")
    for o in ops:
        frm = o.get("from", prefer="inv")
        if o.get("stream", prefer="inv") != w.stream:
            violations.append({"kind": "history-error", "msg": "a watcher changed streams",
                               "op": o.describe()})
        if o.type == "fail" and o.get("error") == "COMPACTED":
            w.compacted += 1
            seg = None               # a reported gap ends the segment
            old = parse_id(o.get("oldest"))
            if old is not None:      # on just before the oldest retained, never back
                expect = max(expect, before(old)) if expect is not None else before(old)
            continue
        if o.type != "ok":
            continue
        evs = o.get("events")
        if not isinstance(evs, list):
            violations.append({"kind": "history-error", "msg": "ok xread without events",
                               "op": o.describe()})
            continue
        if frm == "0":
            if expect is not None:
                violations.append({"kind": "resume", "msg": f"read from 0 after {expect}: a "
                                   "node retaining more history answers with older events",
                                   "op": o.describe()})
            if seg is None or seg.hi is None:
                seg = None           # lower end: the first id delivered
        else:
            f = parse_id(frm)
            if f is None or (expect is not None and f != expect):
                violations.append({"kind": "resume", "msg": f"read after {frm!r}, but it "
                                   f"should read after {expect} (last delivered {cur})",
                                   "op": o.describe()})
            if seg is None and f is not None:
                seg = Segment(f, False)
                w.segments.append(seg)
            elif cur is not None and f == cur and o.get("resume", prefer="inv"):
                w.resumes += 1       # the first read over new connections
        for item in evs:
            i = parse_id(item[0]) if isinstance(item, list) and len(item) == 2 else None
            fields = item[1] if i is not None else None
            if i is None or not isinstance(fields, dict):
                violations.append({"kind": "history-error", "msg": f"bad event {item!r:.200}",
                                   "op": o.describe()})
                continue
            if cur is not None and i <= cur:
                kind = "duplicate" if i in w.delivered else "order"
                violations.append({"kind": kind, "msg": f"watcher {proc} delivered "
                                   f"{item[0]} after {'%d-%d' % cur}", "op": o.describe()})
                continue
            if seg is None:
                seg = Segment(i, True)
                w.segments.append(seg)
            cur = seg.hi = expect = i
            w.delivered[i] = fields
            if not in_stream(w.prefix, fields):
                violations.append({"kind": "wrong-stream", "msg": f"{w.stream} delivered "
                                   f"{item[0]} {fields}", "op": o.describe()})
            if fields.get("type") == "put":
                w.puts[i[0]] = (fields.get("name"), fields.get("value"))
            other = glob.get(i)
            if other is None:
                glob[i] = (fields, proc, o)
            elif other[0] != fields:
                violations.append({"kind": "disagreement", "msg": f"id {item[0]}: watcher "
                                   f"{proc} got {fields}, watcher {other[1]} got {other[0]}",
                                   "op": o.describe(), "other": other[2].describe()})
    return w


def acked_puts(history):
    """(rev, key, value, op-event) of every acknowledged PUT in the other workloads."""
    out = []
    for ev in history:
        if ev.get("type") != "ok" or ev.get("f") not in ("write", "cas"):
            continue
        rev = ev.get("rev")
        key = ev.get("key", KEY_OF_WORKLOAD.get(ev.get("workload")))
        if isinstance(rev, int) and not isinstance(rev, bool) and isinstance(key, str):
            val = ev.get("value")
            out.append((rev, key, str(val) if val is not None else None, ev))
    return out


def check_watch(history, all_history=None):
    """history: the watch workload's events; all_history: the whole run (for the PUTs)."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    stats = {"types": ck._type_counts(ops)}
    by_proc = defaultdict(list)
    for o in ops:
        if o.f != "xread":
            violations.append({"kind": "history-error", "msg": f"unknown watch op {o.f!r}",
                               "op": o.describe()})
            continue
        by_proc[o.proc].append(o)
    glob = {}
    watchers = [_walk(p, lst, glob, violations) for p, lst in sorted(by_proc.items())]
    ids = sorted(glob)
    for w in watchers:
        _gaps(w, ids, glob, violations)
    n_puts = _puts(watchers, acked_puts(all_history or []), violations)
    stats.update({"watchers": len(watchers), "events": len(glob),
                  "delivered": sum(len(w.delivered) for w in watchers),
                  "segments": sum(len(w.segments) for w in watchers),
                  "compacted": sum(w.compacted for w in watchers),
                  "resumes": sum(w.resumes for w in watchers),
                  "puts_checked": n_puts, "seconds": round(time.monotonic() - started, 3)})
    return ck._verdict("watch", None, ops, violations, stats)


def _gaps(w, ids, glob, violations):
    for seg in w.segments:
        if seg.hi is None:
            continue
        a = bisect.bisect_left(ids, seg.lo) if seg.lo_incl else bisect.bisect_right(ids, seg.lo)
        b = bisect.bisect_right(ids, seg.hi)
        for i in ids[a:b]:
            fields, proc, o = glob[i]
            if i not in w.delivered and in_stream(w.prefix, fields):
                violations.append({"kind": "gap", "msg": f"watcher {w.proc} ({w.stream}) "
                                   f"covered {seg.describe()} but never delivered "
                                   f"{'%d-%d' % i} {fields}, which watcher {proc} got",
                                   "op": o.describe()})


def _puts(watchers, puts, violations):
    n = 0
    for rev, key, val, ev in puts:
        for w in watchers:
            if not in_stream(w.prefix, {"name": key}):
                continue
            if not any(s.covers((rev, 0)) for s in w.segments):
                continue
            n += 1
            got = w.puts.get(rev)
            if got is None or got[0] != key or (val is not None and got[1] is not None
                                                 and got[1] != val):
                violations.append({"kind": "lost-put", "msg": f"PUT {key}={val!r} "
                                   f"acknowledged at revision {rev}; watcher {w.proc} "
                                   f"({w.stream}) covered it but delivered {got}",
                                   "op": ck._short_event(ev)})
    return n
