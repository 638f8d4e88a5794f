#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checkers for the fencelock torture suite.

Histories are JSON lines, one operation event per line (every field of every op:
tests/torture/HISTORY.md): ``proc``, ``type`` (invoke/ok/fail/info), ``f``, ``time``
(CLOCK_MONOTONIC ns), ``workload`` and per-operation fields.

Workloads and what is checked:

register        linearizability of each key against a single-register model (read, write,
                cas), with a WGL search (Wing & Gong, Lowe's list + memo variant).
mutex           linearizability of each lock against an owner-aware mutex model (acquire,
                release, expire) whose state also carries the last fencing token, plus
                token uniqueness and real-time monotonicity.
fenced-counter  ok writes ordered by revision form the chain 1, 2, 3 ... (gaps only where
                indeterminate writes may have applied), fencing tokens increase with it, the
                final value agrees; any deviation is a violation.
control         the same analysis on unfenced writes; deviations are *expected* and counted
                in ``anomalies`` (lost updates), not reported as violations.
rw              read-write lock "rw": no exclusive hold shares an instant with any other
                hold (certain intervals, checkers_holds.py), tokens unique and rising, fenced
                writes only by the current exclusive holder; stat shared_overlaps.
multilock       LOCK.MULTI over overlapping name sets: judged per name as rw is (no
                exclusive hold of a name shares an instant with another hold of it, tokens
                rise per name, fenced writes per name only by its exclusive holder); stat
                multi_grants, disjoint_overlaps (multi holds certainly live together).
watch           event-stream watchers: ordered, duplicate- and gap-free deliveries that
                agree on every id, every acknowledged PUT delivered (checkers_watch.py).
deadlock        waits that close cycles: replaying the event stream of "dl/", no cycle of
                queued waits survives a log entry, every -DEADLOCK names a real cycle, one
                event per refusal (checkers_deadlock.py).
latch           countdown latches and double barriers bound to sessions: no waiter released
                before the last count-down was sent, none left waiting (nil) past a bound
                after a participant's session ended, no barrier enter before count sessions
                entered, no leave before all left (checkers_latch.py).

Every checker returns a dict: workload, key, valid (True / False / "unknown"), ops (completed
operations), violations (short dicts), anomalies, stats.

Python 3.11 standard library only.  Usage:

    python3 tests/torture/checkers.py HISTORY.jsonl [--workload W] [--final N] [--budget S]

prints one JSON verdict per workload/key and exits 1 if any verdict has violations.
"""

import argparse
import json
import sys
import time
from collections import Counter, defaultdict

INF = float("inf")
WORKLOADS = ("register", "mutex", "fenced-counter", "control", "rw", "watch", "sem", "elect",
             "deadlock", "multilock", "latch")
COUNTER_WORKLOADS = ("fenced-counter", "control")
MAX_VIOLATIONS = 20       # violations listed per verdict (the count is always complete)
MAX_CONTEXT_OPS = 12      # concurrent ops listed with a linearizability violation


class HistoryError(Exception):
    """The history file itself is unreadable (bad JSON, missing time)."""


# --------------------------------------------------------------------------------------------
# Loading and pairing

def load_history(path):
    """Read a JSON-lines history; return its events sorted by time (stable)."""
    events = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError as exc:
                raise HistoryError(f"{path}:{lineno}: not JSON: {exc}") from None
            if not isinstance(ev, dict):
                raise HistoryError(f"{path}:{lineno}: not a JSON object")
            if not isinstance(ev.get("time"), (int, float)) or isinstance(ev.get("time"), bool):
                raise HistoryError(f"{path}:{lineno}: missing or non-numeric \"time\"")
            ev["_line"] = lineno
            events.append(ev)
    return sort_history(events)


def sort_history(events):
    return sorted(events, key=lambda e: e["time"])


class Op:
    """One operation: its invoke event and its completion (None if none was recorded)."""

    __slots__ = ("idx", "proc", "f", "inv", "ret", "type", "t0", "t1")

    def __init__(self, idx, inv):
        self.idx = idx
        self.proc = inv.get("proc")
        self.f = inv.get("f")
        self.inv = inv
        self.ret = None
        self.type = "info"          # pending until completed
        self.t0 = inv["time"]
        self.t1 = INF

    def complete(self, ev):
        self.ret = ev
        self.type = ev["type"]
        # an indeterminate op may take effect at any time after its invoke, even after the
        # info was recorded (a retry still in flight): its interval never closes
        self.t1 = ev["time"] if self.type in ("ok", "fail") else INF

    def get(self, name, prefer="ret"):
        """A field from the completion or the invoke (the preferred one first)."""
        first, second = (self.ret, self.inv) if prefer == "ret" else (self.inv, self.ret)
        if first is not None and name in first:
            return first[name]
        if second is not None and name in second:
            return second[name]
        return None

    def describe(self):
        d = {"proc": self.proc, "f": self.f, "type": self.type if self.ret else "pending",
             "invoke": self.t0, "complete": self.ret["time"] if self.ret else None}
        for name in ("key", "value", "expected", "token", "rev"):
            for ev in (self.inv, self.ret):
                if ev is not None and name in ev:
                    d[name] = ev[name]
        for ev in (self.inv, self.ret):
            if ev is not None and "_line" in ev:
                d.setdefault("line", ev["_line"])
        return d

    def __repr__(self):
        return f"Op({self.describe()})"


def pair_ops(events):
    """Pair invokes with completions.  Returns (ops, finals, problems).

    A completion completes the latest pending invoke of the same proc with the same ``f``
    (the latest pending invoke of the proc if none has that f: an ``expire`` invoke is dated
    back to a keepalive, so it may overlap the proc's later ops)."""
    ops, finals, problems = [], [], []
    pending = defaultdict(list)

    def complete(ev, strict):
        lst = pending.get(ev.get("proc"))
        if not lst:
            if strict:
                problems.append({"kind": "history-error", "msg": "completion without invoke",
                                 "event": _short_event(ev)})
            return False
        pick = None
        for j in range(len(lst) - 1, -1, -1):
            if lst[j].f == ev.get("f"):
                pick = j
                break
        if pick is None:
            if not strict:
                return False
            pick = len(lst) - 1
        lst.pop(pick).complete(ev)
        return True

    evs = sort_history(events)
    i = 0
    while i < len(evs):
        # events with one timestamp: first the completions of ops invoked before, then the
        # invokes, then the completions of those (file order cannot be trusted at a tie)
        j = i
        while j < len(evs) and evs[j]["time"] == evs[i]["time"]:
            j += 1
        group = evs[i:j]
        i = j
        later = []
        for ev in group:
            typ = ev.get("type")
            if typ in ("ok", "fail", "info"):
                if not complete(ev, strict=False):
                    later.append(ev)
            elif typ == "invoke":
                continue
            elif typ == "final":
                finals.append(ev)
            else:
                problems.append({"kind": "history-error", "msg": f"unknown event type {typ!r}",
                                 "event": _short_event(ev)})
        for ev in group:
            if ev.get("type") == "invoke":
                op = Op(len(ops), ev)
                pending[ev.get("proc")].append(op)
                ops.append(op)
        for ev in later:
            complete(ev, strict=True)
    return ops, finals, problems


def _short_event(ev):
    return {k: v for k, v in ev.items() if k in ("proc", "type", "f", "time", "key", "value",
                                                   "_line", "workload")}


def _verdict(workload, key, ops, violations, stats, anomalies=0, valid=None):
    n_done = sum(1 for o in ops if o.ret is not None)
    if valid is None:
        valid = not violations
    v = {"workload": workload, "valid": valid, "ops": n_done,
         "violations": violations[:MAX_VIOLATIONS], "anomalies": anomalies, "stats": stats}
    if key is not None:
        v["key"] = key
    if len(violations) > MAX_VIOLATIONS:
        stats["violations_total"] = len(violations)
    return v


def _type_counts(ops):
    c = Counter()
    for o in ops:
        c[f"{o.f}:{o.type if o.ret else 'pending'}"] += 1
    return dict(sorted(c.items()))


# --------------------------------------------------------------------------------------------
# WGL linearizability search

class Budget:
    def __init__(self, budget_s=60.0, max_steps=None, max_configs=None):
        self.budget_s = budget_s
        self.max_steps = max_steps
        self.max_configs = max_configs


def wgl(t0s, t1s, required, step, init, budget=None, cls=None, guard=None,
        state_guard=None, opt_filter=None):
    """Search for a linearization.

    t0s[i], t1s[i]: invoke and return time of op i (t1 ignored for optional ops);
    required[i]: True if op i took effect (ok); False if it may take effect at any time after
    its invoke, or never (info / pending);
    step(state, i) -> the new state, or None if op i is illegal in state.

    Required ops sit, as call and return entries sorted by time (calls before returns at the
    same time: equal stamps count as concurrent), in a doubly linked list (Lowe's version of
    Wing & Gong): the candidates at a configuration are the calls before the first return
    entry; linearizing one lifts both its entries out of the list.  Optional ops have no
    return entry: they are candidates at any point after their invoke.  The required
    candidates are tried first, then the optional ones.  A configuration is (set of linearized
    required ops, model state, set of linearized optional ops); it is pruned when one with the
    same required set and state and a subset of its optional ops was explored (that one can
    do everything this one can: an optional op may always be left out).

    Optional ops are grouped in slots:
    cls[i]: optional ops of one class (not None) are interchangeable (same step, never
      return), so only the earliest-invoked unused member of a class is a candidate: which
      member was used does not matter, only how many;
    guard[i] / state_guard(state): an optional op is only tried when guard[i] is None or
      equals state_guard(state) (a pure speed-up: the op must be illegal otherwise);
    opt_filter(state, cands) with cands the required candidates (op indices) returns None or
      a predicate: optional ops it rejects are not tried at this configuration (the caller
      guarantees they could not help here; they stay available later).

    Returns a dict: result True / False / "unknown", steps, configs; for True the
    linearization (op indices); for False the op whose return no partial linearization got
    past (blocked), the model states seen there and the ops linearized last on one path."""
    budget = budget or Budget()
    n = len(t0s)
    deadline = time.monotonic() + budget.budget_s if budget.budget_s is not None else None
    max_steps = budget.max_steps
    max_configs = budget.max_configs

    # main list: entries 1..E, head 0, tail E+1
    ents = []
    for i in range(n):
        if required[i]:
            ents.append((t0s[i], 0, i))
            ents.append((t1s[i], 1, i))
    ents.sort(key=lambda e: (e[0], e[1]))
    E = len(ents)
    HEAD, END = 0, E + 1
    nxt = list(range(1, E + 2)) + [END]
    prv = [0] + list(range(0, E + 1))
    eop = [-1] + [e[2] for e in ents] + [-1]
    iscall = [False] + [e[1] == 0 for e in ents] + [False]
    etime = [0] + [e[0] for e in ents] + [INF]
    ret_ent = [-1] * n
    for k, e in enumerate(ents, 1):
        if e[1] == 1:
            ret_ent[e[2]] = k

    # optional slots: a slot is a list of interchangeable ops sorted by invoke time (a
    # singleton unless classed); slot_used[s] of them are linearized (always the first ones)
    if cls is None:
        cls = [None] * n
    if guard is None:
        guard = [None] * n
    slots = []
    by_class = {}
    for i in sorted((i for i in range(n) if not required[i]), key=lambda i: (t0s[i], i)):
        c = cls[i]
        if c is None:
            slots.append([i])
        elif c in by_class:
            slots[by_class[c]].append(i)
        else:
            by_class[c] = len(slots)
            slots.append([i])
    slot_used = [0] * len(slots)
    slot_of = [-1] * n
    by_guard = defaultdict(list)          # guard -> slot numbers
    for s, members in enumerate(slots):
        for i in members:
            slot_of[i] = s
        by_guard[guard[members[0]]].append(s)
    free_slots = by_guard.pop(None, [])
    guarded = bool(by_guard)
    no_slots = []

    # bit per op, in separate numberings for required and optional ops
    bit = [0] * n
    rk = ok_ = 0
    for i in range(n):
        if required[i]:
            bit[i] = 1 << rk
            rk += 1
        else:
            bit[i] = 1 << ok_
            ok_ += 1

    remaining = rk
    state = init
    rbits = obits = 0
    cache = {}
    nconfigs = 0
    stack = []
    steps = 0
    best_t = -INF
    best_op = None
    best_states = []
    best_prefix = []

    def path(stk):
        return [f[1] for f in stk]

    phase = 1
    entry = nxt[HEAD]
    cands = None          # phase 2: the optional candidates and the position in them
    ci = 0
    limit = 0

    while True:
        if remaining == 0:
            return {"result": True, "steps": steps, "configs": nconfigs,
                    "linearization": path(stack)}
        steps += 1
        if (steps & 1023) == 0:
            if deadline is not None and time.monotonic() > deadline:
                return {"result": "unknown", "reason": "time budget exceeded",
                        "steps": steps, "configs": nconfigs}
            if max_steps is not None and steps > max_steps:
                return {"result": "unknown", "reason": "step budget exceeded",
                        "steps": steps, "configs": nconfigs}
            if max_configs is not None and nconfigs > max_configs:
                return {"result": "unknown", "reason": "configuration budget exceeded",
                        "steps": steps, "configs": nconfigs}
        if phase == 1:
            if iscall[entry]:
                i = eop[entry]
                ns = step(state, i)
                if ns is not None:
                    nr = rbits | bit[i]
                    key = (nr, ns)
                    lst = cache.get(key)
                    if lst is None or not _dominated(lst, obits):
                        if lst is None:
                            cache[key] = [obits]
                        else:
                            _remember(lst, obits)
                        nconfigs += 1
                        stack.append((entry, i, state, rbits, obits, None, 0, 0))
                        state, rbits = ns, nr
                        remaining -= 1
                        # lift the call and return entries
                        nxt[prv[entry]] = nxt[entry]
                        prv[nxt[entry]] = prv[entry]
                        r = ret_ent[i]
                        nxt[prv[r]] = nxt[r]
                        prv[nxt[r]] = prv[r]
                        entry = nxt[HEAD]
                        continue
                entry = nxt[entry]
                continue
            # a return entry: its op must be linearized before anything later
            j = eop[entry]
            t = etime[entry]
            if t > best_t:
                best_t, best_op = t, j
                best_states = [state]
                best_prefix = path(stack[-6:])
            elif j == best_op and len(best_states) < 8 and state not in best_states:
                best_states.append(state)
            # phase 2: optional candidates invoked no later than this return
            limit = t
            cands = []
            for sl in (free_slots, by_guard.get(state_guard(state), no_slots) if guarded
                       else no_slots):
                for s in sl:
                    u = slot_used[s]
                    members = slots[s]
                    if u < len(members) and t0s[members[u]] <= limit:
                        cands.append(members[u])
            if cands and opt_filter is not None:
                req_cands = []
                x = nxt[HEAD]
                while x != entry:
                    req_cands.append(eop[x])
                    x = nxt[x]
                keep = opt_filter(state, req_cands)
                if keep is not None:
                    cands = [i for i in cands if keep(i)]
            ci = 0
            phase = 2
            continue
        if ci < len(cands):
            i = cands[ci]
            ns = step(state, i)
            if ns is not None:
                no = obits | bit[i]
                key = (rbits, ns)
                lst = cache.get(key)
                if lst is None or not _dominated(lst, no):
                    if lst is None:
                        cache[key] = [no]
                    else:
                        _remember(lst, no)
                    nconfigs += 1
                    stack.append((-1, i, state, rbits, obits, cands, ci, limit))
                    state, obits = ns, no
                    slot_used[slot_of[i]] += 1
                    phase = 1
                    entry = nxt[HEAD]
                    continue
            ci += 1
            continue
        # backtrack
        if not stack:
            return {"result": False, "steps": steps, "configs": nconfigs,
                    "blocked": best_op, "states": best_states, "prefix": best_prefix}
        e, i, state, rbits, obits, cands, ci, limit = stack.pop()
        if e >= 0:
            r = ret_ent[i]
            nxt[prv[r]] = r
            prv[nxt[r]] = r
            nxt[prv[e]] = e
            prv[nxt[e]] = e
            remaining += 1
            phase = 1
            entry = nxt[e]
        else:
            slot_used[slot_of[i]] -= 1
            phase = 2
            ci += 1


def _dominated(lst, o):
    if o == 0:
        return 0 in lst
    for s in lst:
        if s & ~o == 0:
            return True
    return False


def _remember(lst, o):
    # drop the stored sets that contain o: o dominates them
    if len(lst) > 4:
        lst[:] = [s for s in lst if o & ~s != 0]
    lst.append(o)


def _lin_violation(kind, ops, res, describe_state, key=None, extra=None):
    """A short report of a failed WGL search: the op no partial linearization got past, the
    model states it could be tried in, the ops linearized just before it on one path, and
    the ops concurrent with it (determinate ones first; indeterminate ones only if invoked
    after the earliest determinate one, as old ones are concurrent with everything)."""
    b = ops[res["blocked"]] if res.get("blocked") is not None else None
    viol = {"kind": kind}
    if key is not None:
        viol["key"] = key
    if b is None:
        viol["msg"] = "no linearization exists"
        return viol
    viol["msg"] = ("no linearization gets past this op: no order of the ops before and "
                   "concurrent with it leaves a state in which it can take effect")
    viol["op"] = b.describe()
    viol["possible_states"] = [describe_state(s) for s in res["states"]]
    viol["last_linearized"] = [ops[i].describe() for i in res["prefix"]]
    if extra:
        viol.update(extra(b))
    conc = [o for o in ops if o is not b and o.t0 <= b.t1 and o.t1 >= b.t0]
    definite = sorted((o for o in conc if o.t1 != INF), key=lambda o: o.t0)
    since = min([o.t0 for o in definite] + [b.t0])
    maybe = sorted((o for o in conc if o.t1 == INF and o.t0 >= since), key=lambda o: o.t0)
    shown = (definite + maybe)[:MAX_CONTEXT_OPS]
    viol["concurrent"] = [o.describe() for o in shown]
    viol["concurrent_total"] = len(conc)
    return viol


# --------------------------------------------------------------------------------------------
# register

def check_register(history, budget_s=60, strict_cas_fail=True, max_steps=None,
                   max_configs=None):
    """Linearizability of every key of a register history (keys checked separately)."""
    by_key = defaultdict(list)
    for ev in history:
        if ev.get("type") == "final":
            continue
        by_key[ev.get("key")].append(ev)
    if len(by_key) == 1:
        (key, evs), = by_key.items()
        return _check_register_key(key, evs, budget_s, strict_cas_fail, max_steps, max_configs)
    verdicts = [_check_register_key(k, evs, budget_s, strict_cas_fail, max_steps, max_configs)
                for k, evs in sorted(by_key.items(), key=lambda kv: str(kv[0]))]
    return _merge_verdicts("register", verdicts)


def _merge_verdicts(workload, verdicts):
    valid = True
    if any(v["valid"] is False for v in verdicts):
        valid = False
    elif any(v["valid"] == "unknown" for v in verdicts):
        valid = "unknown"
    viols = [x for v in verdicts for x in v["violations"]]
    return {"workload": workload, "valid": valid, "ops": sum(v["ops"] for v in verdicts),
            "violations": viols[:MAX_VIOLATIONS],
            "anomalies": sum(v["anomalies"] for v in verdicts),
            "stats": {"keys": len(verdicts),
                      "per_key": {str(v.get("key")): v["stats"] for v in verdicts}}}


def _check_register_key(key, events, budget_s, strict_cas_fail, max_steps, max_configs):
    started = time.monotonic()
    ops, _, problems = pair_ops(events)
    violations = list(problems)
    stats = {"types": _type_counts(ops)}

    # what each op does to the model: (kind, a, b)
    #   ("r", v)      read: state must be v
    #   ("w", v)      write v
    #   ("c", e, v)   cas: state must be e, becomes v
    #   ("n", e)      failed cas (strict): state must not be e
    writers = defaultdict(list)          # value -> ok/info ops that may have written it
    failed_writes = set()
    for o in ops:
        if o.f in ("write", "cas"):
            v = _hkey(o.get("value", prefer="inv"))
            if o.type in ("ok", "info"):
                writers[v].append(o)
            elif o.type == "fail" and o.f == "write":
                failed_writes.add(v)
        elif o.f not in ("read",):
            violations.append({"kind": "history-error", "msg": f"unknown register op {o.f!r}",
                               "op": o.describe()})
    dup_values = {v for v, ws in writers.items() if len(ws) > 1}
    if dup_values:
        stats["duplicate_written_values"] = len(dup_values)

    def observed(o):
        """The value o needs the register to hold (equality), or a sentinel."""
        if o.f == "read" and o.type == "ok":
            return _hkey(o.get("value"))
        if o.f == "cas" and o.type in ("ok", "info"):
            return _hkey(o.get("expected", prefer="inv"))
        return _NOTHING

    # cheap, precise pre-checks: values read that nobody can have written
    for o in ops:
        v = observed(o)
        if v is _NOTHING or v is None or o.type != "ok":
            continue
        what = "read" if o.f == "read" else "cas expected"
        if v not in writers:
            why = ("its write failed" if v in failed_writes else "no write of it was invoked")
            violations.append({"kind": "unwritten-value", "key": key,
                               "msg": f"{what} {v!r}, but {why}", "op": o.describe()})
        elif all(w.t0 > o.t1 for w in writers[v]):
            violations.append({"kind": "future-value", "key": key,
                               "msg": f"{what} {v!r} completed before any write of it was "
                                      "invoked", "op": o.describe(),
                               "writer": writers[v][0].describe()})

    # model ops
    model = []          # (op, kind tuple, required, t1)
    for o in ops:
        if o.f == "read":
            if o.type == "ok":
                model.append([o, ("r", _hkey(o.get("value"))), True, o.t1])
        elif o.f == "write":
            if o.type in ("ok", "info"):
                model.append([o, ("w", _hkey(o.get("value", prefer="inv"))), o.type == "ok",
                              o.t1])
        elif o.f == "cas":
            e = _hkey(o.get("expected", prefer="inv"))
            v = _hkey(o.get("value", prefer="inv"))
            if o.type in ("ok", "info"):
                model.append([o, ("c", e, v), o.type == "ok", o.t1])
            elif o.type == "fail" and strict_cas_fail:
                model.append([o, ("n", e), True, o.t1])

    # promote indeterminate writes whose (unique) value a required op observed: they must
    # have taken effect before that op's return
    by_written = {}
    for m in model:
        if m[1][0] in ("w", "c") and m[1][-1] not in dup_values:
            by_written[m[1][-1]] = m
    changed = True
    promoted = 0
    while changed:
        changed = False
        for m in model:
            if not m[2]:
                continue
            k = m[1]
            need = k[1] if k[0] in ("r", "c") else _NOTHING
            if need is _NOTHING or need is None:
                continue
            w = by_written.get(need)
            if w is None or w is m:
                continue
            if not w[2]:
                w[2] = True
                w[3] = m[3]
                promoted += 1
                changed = True
            elif w[3] > m[3]:
                w[3] = m[3]         # it must take effect before the op that saw it
                changed = True
    stats["info_promoted"] = promoted

    # indeterminate writes whose value no op compares with (no read returned it, no cas
    # expected it) are interchangeable: each sets "some value nobody looks at".  Without
    # failed cas ops they can simply be left out (whatever a linearization with one does, it
    # can do without it: only a write can follow it usefully).  With failed cas ops (state !=
    # expected) one may be what made a cas fail, so they stay, as classes of interchangeable
    # ops: write-a-fresh-value, and cas-from-e-to-a-fresh-value per e.
    compared = set()
    for o in ops:
        if o.f == "read" and o.type == "ok":
            compared.add(_hkey(o.get("value")))
        elif o.f == "cas":
            compared.add(_hkey(o.get("expected", prefer="inv")))
    has_ne = any(m[1][0] == "n" for m in model)
    sel, cls = [], []
    class_ids = {}
    dropped = collapsed = 0
    for m in model:
        k = m[1]
        if m[2] or k[0] not in ("w", "c") or _hkey(k[-1]) in compared:
            sel.append(m)
            cls.append(None)
            continue
        if not has_ne:
            dropped += 1
            continue
        collapsed += 1
        ck = ("w",) if k[0] == "w" else ("c", _hkey(k[1]))
        cid = class_ids.setdefault(ck, len(class_ids))
        nk = ("w", FRESH) if k[0] == "w" else ("c", k[1], FRESH)
        sel.append([m[0], nk, False, m[3]])
        cls.append(cid)
    stats["info_dropped"] = dropped
    stats["info_collapsed"] = collapsed
    remaining_s = None if budget_s is None else max(0.0, budget_s - (time.monotonic() - started))
    # values some op needs the register to hold (a read returned it, an ok/info cas
    # expected it): an optional write of any other value can only matter to failed cas ops
    eq_seen = {m[1][1] for m in sel if m[1][0] in ("r", "c")}
    res = _run_register_wgl(sel, cls, Budget(remaining_s, max_steps, max_configs), eq_seen)
    stats["search_steps"] = res["steps"]
    stats["search_configs"] = res["configs"]
    stats["model_ops"] = len(sel)
    stats["seconds"] = round(time.monotonic() - started, 3)
    valid = None
    if res["result"] is False:
        def writer_of(b):
            v = observed(b)
            if v is _NOTHING or v is None or v not in writers:
                return {}
            return {"writes_of_value": [w.describe() for w in writers[v][:3]]}
        violations.append(_lin_violation("not-linearizable", [m[0] for m in sel], res,
                                         lambda s: s, key, writer_of))
    elif res["result"] == "unknown":
        stats["unknown_reason"] = res.get("reason")
        if not violations:
            valid = "unknown"
    return _verdict("register", key, ops, violations, stats, valid=valid)


_NOTHING = object()


class _Fresh:
    """The value of an indeterminate write nobody compares with."""

    def __repr__(self):
        return "<a value nobody read>"


FRESH = _Fresh()


def _hkey(v):
    """A hashable stand-in for a JSON value (values should be strings or null)."""
    try:
        hash(v)
        return v
    except TypeError:
        return json.dumps(v, sort_keys=True)


def _run_register_wgl(sel, cls, budget, eq_seen=()):
    """WGL over the selected register ops; the state is a 1-tuple (value,) so that an
    absent key (None) is a state and a bare None can mean "illegal"."""
    kinds = [m[1] for m in sel]

    def step(state, i):
        k = kinds[i]
        c = k[0]
        if c == "r":
            return state if state[0] == k[1] else None
        if c == "w":
            return (k[1],)
        if c == "c":
            return (k[2],) if state[0] == k[1] else None
        return state if state[0] != k[1] else None     # "n": a failed cas

    # an optional cas is only worth trying when the register holds its expected value
    guard = [("v", k[1]) if k[0] == "c" else None for k in kinds]
    fresh = [not m[2] and m[1][0] in ("w", "c") and (m[1][-1] is FRESH or
                                                     m[1][-1] not in eq_seen) for m in sel]

    def opt_filter(state, req_cands):
        # an optional write of a value nobody needs (no read returned it, no cas expected
        # it) only matters if a failed cas that is a candidate now expects the current value:
        # the cas can then fail after that write.  Otherwise any linearization that puts it
        # here also works without it (what follows it either overwrites it or does not care),
        # and it stays available for later.
        s = state[0]
        useful = any(kinds[j][0] == "n" and kinds[j][1] == s for j in req_cands)
        if useful:
            return None
        return lambda i: not fresh[i]

    res = wgl([m[0].t0 for m in sel], [m[3] for m in sel], [m[2] for m in sel], step, (None,),
              budget, cls=cls, guard=guard, state_guard=lambda s: ("v", s[0]),
              opt_filter=opt_filter if any(fresh) else None)
    if res["result"] is False:
        res["states"] = [s[0] for s in res["states"]]
    res["sel"] = sel
    return res


# --------------------------------------------------------------------------------------------
# mutex

def check_mutex(history, budget_s=60, max_steps=None, max_configs=None):
    by_key = defaultdict(list)
    for ev in history:
        if ev.get("type") == "final":
            continue
        by_key[ev.get("key")].append(ev)
    if len(by_key) == 1:
        (key, evs), = by_key.items()
        return _check_mutex_key(key, evs, budget_s, max_steps, max_configs)
    verdicts = [_check_mutex_key(k, evs, budget_s, max_steps, max_configs)
                for k, evs in sorted(by_key.items(), key=lambda kv: str(kv[0]))]
    return _merge_verdicts("mutex", verdicts)


def _check_tokens(acquires, violations, what="token"):
    """Ok acquires: tokens present, unique, and increasing in real time (a grant that
    completed before another was invoked has the smaller token).  LOCK by a session that
    already holds the lock answers its existing token: acquires that carry the same
    ``session`` and the same token are one grant (the first one stands for it).
    Returns the (token, op) of the distinct grants."""
    toks = []
    for o in sorted(acquires, key=lambda o: o.t0):
        t = o.get("token")
        if not isinstance(t, int) or isinstance(t, bool):
            violations.append({"kind": "history-error", "msg": f"ok acquire without integer "
                               f"{what}", "op": o.describe()})
            continue
        toks.append((t, o))
    seen = {}
    grants = []
    for t, o in toks:
        if t not in seen:
            seen[t] = o
            grants.append((t, o))
            continue
        first = seen[t]
        sid = o.get("session", prefer="inv")
        if sid is not None and sid == first.get("session", prefer="inv"):
            continue                # the same session asked again: the same grant
        violations.append({"kind": "duplicate-token",
                           "msg": f"{what} {t} granted twice", "op": o.describe(),
                           "other": first.describe()})
    _realtime_monotone(grants, violations, "token-order",
                       "{what} {b} granted after an acquire with {what} {a} had completed",
                       what=what, strict=True)
    return grants


def _realtime_monotone(items, violations, kind, fmt, strict=True, what="token", limit=5):
    """items: (number, op) with op.t0/op.t1.  If A completed before B was invoked then
    number(A) < number(B) (<= if not strict).  Reports up to ``limit`` offenders."""
    by_ret = sorted(items, key=lambda x: x[1].t1)
    by_inv = sorted(items, key=lambda x: x[1].t0)
    k = 0
    best = None        # (number, op) with the largest number among completed ones
    found = 0
    for num, o in by_inv:
        while k < len(by_ret) and by_ret[k][1].t1 < o.t0:
            if best is None or by_ret[k][0] > best[0]:
                best = by_ret[k]
            k += 1
        if best is not None and (num < best[0] or (strict and num == best[0])):
            found += 1
            if found <= limit:
                violations.append({"kind": kind,
                                   "msg": fmt.format(a=best[0], b=num, what=what),
                                   "op": o.describe(), "earlier": best[1].describe()})
    return found


def _check_mutex_key(key, events, budget_s, max_steps, max_configs):
    started = time.monotonic()
    ops, _, problems = pair_ops(events)
    violations = list(problems)
    stats = {"types": _type_counts(ops)}
    for o in ops:
        if o.f not in ("acquire", "release", "expire"):
            violations.append({"kind": "history-error", "msg": f"unknown mutex op {o.f!r}",
                               "op": o.describe()})
    acq = [o for o in ops if o.f == "acquire" and o.type == "ok"]
    _check_tokens(acq, violations)

    sel = [o for o in ops if o.f in ("acquire", "release", "expire") and o.type in ("ok", "info")]
    kinds = []
    for o in sel:
        tok = o.get("token") if (o.f == "acquire" and o.type == "ok") else None
        if isinstance(tok, bool) or not isinstance(tok, int):
            tok = None
        kinds.append((o.f, o.proc, tok))

    def step(state, i):
        owner, last = state
        f, p, tok = kinds[i]
        if f == "acquire":
            if owner is not None:
                return None
            if tok is None:
                return (p, last)
            if last is not None and tok <= last:
                return None
            return (p, tok)
        if f == "release":
            return (None, last) if owner == p else None
        return (None, last) if owner == p else state          # expire

    # optional acquires are only worth trying on a free lock, releases by the owner
    guard = [("o", None) if k[0] == "acquire" else ("o", k[1]) if k[0] == "release" else None
             for k in kinds]
    res = wgl([o.t0 for o in sel], [o.t1 for o in sel], [o.type == "ok" for o in sel], step,
              (None, None), Budget(budget_s, max_steps, max_configs), guard=guard,
              state_guard=lambda s: ("o", s[0]))
    stats["search_steps"] = res["steps"]
    stats["search_configs"] = res["configs"]
    stats["seconds"] = round(time.monotonic() - started, 3)
    valid = None
    if res["result"] is False:
        violations.append(_lin_violation(
            "not-linearizable", sel, res,
            lambda s: {"owner": s[0], "last_token": s[1]}, key))
    elif res["result"] == "unknown":
        stats["unknown_reason"] = res.get("reason")
        if not violations:
            valid = "unknown"
    return _verdict("mutex", key, ops, violations, stats, valid=valid)


# --------------------------------------------------------------------------------------------
# fenced-counter and control

def check_counter(history, workload="fenced-counter", final=None):
    """The write chain of a counter workload.  For fenced-counter every deviation is a
    violation; for control deviations (lost updates) are counted in ``anomalies``."""
    started = time.monotonic()
    fenced = workload == "fenced-counter"
    ops, finals, problems = pair_ops(history)
    violations = list(problems)
    anomalies = []
    stats = {"types": _type_counts(ops)}
    if final is None and finals:
        vals = {ev.get("value") for ev in finals}
        if len(vals) > 1:
            violations.append({"kind": "history-error",
                               "msg": f"several different final values {sorted(map(str, vals))}"})
        final = finals[-1].get("value")
    if final is not None and (isinstance(final, bool) or not isinstance(final, int)):
        violations.append({"kind": "history-error", "msg": f"final value {final!r} is not an "
                                                            "integer"})
        final = None

    for o in ops:
        if o.f not in ("acquire", "read", "write", "release", "expire"):
            violations.append({"kind": "history-error", "msg": f"unknown counter op {o.f!r}",
                               "op": o.describe()})

    # revisions of one log: acquire tokens and write revisions
    acq = [o for o in ops if o.f == "acquire" and o.type == "ok"]
    toks = _check_tokens(acq, violations)

    def intval(o, name, prefer):
        v = o.get(name, prefer=prefer)
        if v is None and name == "value":
            return 0
        return v if isinstance(v, int) and not isinstance(v, bool) else _NOTHING

    okw, infow = [], []
    for o in ops:
        if o.f != "write":
            continue
        v = intval(o, "value", "inv")
        if v is _NOTHING:
            violations.append({"kind": "history-error", "msg": "write without integer value",
                               "op": o.describe()})
            continue
        if o.type == "ok":
            rev = o.get("rev")
            if isinstance(rev, bool) or not isinstance(rev, int):
                violations.append({"kind": "history-error", "msg": "ok write without integer "
                                   "rev", "op": o.describe()})
                continue
            okw.append((rev, v, o))
        elif o.type == "info":
            infow.append((v, o))
    okw.sort(key=lambda x: x[0])

    revs = Counter(r for r, _, _ in okw)
    for r, c in revs.items():
        if c > 1:
            violations.append({"kind": "duplicate-rev", "msg": f"revision {r} assigned to {c} "
                               "ok writes",
                               "ops": [o.describe() for rr, _, o in okw if rr == r][:4]})
    _realtime_monotone([(r, o) for r, _, o in okw] + toks, violations, "revision-order",
                       "revision/token {b} assigned after an op with revision/token {a} had "
                       "completed")
    if fenced:
        last_tok = None
        for rev, v, o in okw:
            t = o.get("token", prefer="inv")
            if isinstance(t, bool) or not isinstance(t, int):
                violations.append({"kind": "history-error", "msg": "fenced write without "
                                   "integer token", "op": o.describe()})
                continue
            if rev <= t:
                violations.append({"kind": "write-before-grant", "msg": f"write applied at "
                                   f"revision {rev}, not after its token {t}",
                                   "op": o.describe()})
            # one grant may cover several writes (a session re-granted its own lock)
            if last_tok is not None and t < last_tok[0]:
                violations.append({"kind": "fence-order", "msg": f"ok write with token {t} "
                                   f"applied after an ok write with token {last_tok[0]}",
                                   "op": o.describe(), "previous": last_tok[1].describe()})
            last_tok = (t, o)

    # the chain: ok writes by revision must read 1, 2, 3 ...; a jump is fine where
    # indeterminate writes of the skipped values (invoked before it completed) may have
    # applied
    info_by_val = defaultdict(list)
    for v, o in infow:
        info_by_val[v].append(o)
    for lst in info_by_val.values():
        lst.sort(key=lambda o: o.t0)
    used = set()

    def take_info(v, before):
        for o in info_by_val.get(v, ()):
            if id(o) not in used and o.t0 < before:
                used.add(id(o))
                return o
        return None

    def fill(lo, hi, before):
        """Use info writes for values lo..hi (inclusive) if all are available."""
        picked = []
        for x in range(lo, hi + 1):
            o = take_info(x, before)
            if o is None:
                for p in picked:
                    used.discard(id(p))
                return None
            picked.append(o)
        return picked

    prev, prev_op = 0, None
    for rev, v, o in okw:
        if v == prev + 1:
            prev, prev_op = v, o
            continue
        if v > prev + 1 and fill(prev + 1, v - 1, o.t1) is not None:
            prev, prev_op = v, o
            continue
        if v <= prev:
            a = {"kind": "lost-update",
                 "msg": f"ok write of {v} at revision {rev} follows the value {prev}: it was "
                        f"computed from a stale read and overwrote {prev - v + 1} increment(s)",
                 "op": o.describe()}
        else:
            a = {"kind": "phantom-increment",
                 "msg": f"ok write of {v} at revision {rev} follows the value {prev}: no write "
                        f"(ok or indeterminate) of the values {prev + 1}..{v - 1} can explain "
                        "the jump",
                 "op": o.describe()}
        if prev_op is not None:
            a["previous"] = prev_op.describe()
        anomalies.append(a)
        prev, prev_op = v, o

    # reads: every value read was written (or is the initial 0)
    written = {v for _, v, _ in okw} | {v for v, _ in infow} | {0}
    reads = []
    for o in ops:
        if o.f == "read" and o.type == "ok":
            v = intval(o, "value", "ret")
            if v is _NOTHING:
                violations.append({"kind": "history-error", "msg": "read without integer "
                                   "value", "op": o.describe()})
                continue
            reads.append((v, o))
            if v not in written:
                violations.append({"kind": "unwritten-value", "msg": f"read {v}, a value no "
                                   "write (ok or indeterminate) wrote", "op": o.describe()})
    if fenced:
        # the fenced counter only grows: what is read or written later in real time is
        # never smaller (a read sees at least every write that completed before it)
        _realtime_monotone(reads + [(v, o) for _, v, o in okw], violations, "stale-read",
                           "value {b} read or written after {a} had been read or written",
                           strict=False)

    n_ok, n_info = len(okw), len(infow)
    stats.update({"ok_writes": n_ok, "info_writes": n_info, "last_ok_value": prev,
                  "info_writes_applied_min": len(used), "final": final})
    if final is not None:
        fin_ok = final == prev or (final > prev and fill(prev + 1, final, INF) is not None)
        if not fin_ok:
            anomalies.append({"kind": "final-mismatch",
                              "msg": f"final counter {final}, but the ok writes end at {prev} "
                                     "and no indeterminate writes explain the difference",
                              "final": final, "last_ok_value": prev})
        stats["info_writes_applied_min"] = len(used)
        if fenced and not (n_ok <= final <= n_ok + n_info):
            violations.append({"kind": "final-count",
                               "msg": f"final counter {final} outside [ok writes, ok + info "
                                      f"writes] = [{n_ok}, {n_ok + n_info}]"})
    else:
        stats["final_checked"] = False
    if fenced:
        violations = anomalies + violations
        n_anom = 0
    else:
        n_anom = len(anomalies)
        stats["anomaly_examples"] = anomalies[:MAX_VIOLATIONS]
        stats["lost_increments"] = (max(0, n_ok - final) if final is not None else None)
    stats["seconds"] = round(time.monotonic() - started, 3)
    return _verdict(workload, None, ops, violations, stats, anomalies=n_anom)


# --------------------------------------------------------------------------------------------
# entry points

def check(workload, history, final=None, budget_s=60, **kw):
    """Check one workload's history (a list of event dicts, any order)."""
    if workload == "register":
        return check_register(history, budget_s=budget_s, **kw)
    if workload == "mutex":
        return check_mutex(history, budget_s=budget_s, **kw)
    if workload in COUNTER_WORKLOADS:
        return check_counter(history, workload=workload, final=final)
    if workload == "rw":
        import checkers_holds
        return checkers_holds.check_rw(history)
    if workload == "multilock":
        import checkers_holds
        return checkers_holds.check_multilock(history)
    if workload in ("sem", "elect"):
        import checkers_holds
        return (checkers_holds.check_sem if workload == "sem" else checkers_holds.check_elect)(
            history)
    if workload == "watch":
        import checkers_watch
        return checkers_watch.check_watch(history, kw.get("all_history"))
    if workload == "deadlock":
        import checkers_deadlock
        return checkers_deadlock.check_deadlock(history)
    if workload == "latch":
        import checkers_latch
        return checkers_latch.check_latch(history)
    raise ValueError(f"unknown workload {workload!r}")


def split_history(history, workload=None):
    """Group events: register and mutex by (workload, key); counters by workload.
    Events without a workload get ``workload`` if given.  Final lines go with the counter
    workload they name, or the only counter workload of the file.
    Returns (groups: dict (workload, key) -> events, problems)."""
    groups = defaultdict(list)
    finals = []
    problems = []
    for ev in history:
        w = ev.get("workload", workload)
        if ev.get("type") == "final":
            finals.append(ev)
            continue
        if w not in WORKLOADS:
            problems.append({"kind": "history-error", "msg": f"unknown workload {w!r}",
                             "event": _short_event(ev)})
            continue
        key = ev.get("key") if w in ("register", "mutex") else None
        groups[(w, key)].append(ev)
    counters = sorted({w for w, _ in groups if w in COUNTER_WORKLOADS})
    for ev in finals:
        w = ev.get("workload", workload)
        if w in COUNTER_WORKLOADS or w == "deadlock":  # deadlock: the event stream
            groups[(w, None)].append(ev)
        elif len(counters) == 1:
            groups[(counters[0], None)].append(ev)
        else:
            problems.append({"kind": "history-error",
                             "msg": "final line names no counter workload and the file has "
                                    f"{len(counters)}", "event": _short_event(ev)})
    return groups, problems


def check_file(path, workload=None, final=None, budget_s=60, **kw):
    """Check every workload/key of a history file; returns a list of verdicts."""
    history = load_history(path)
    groups, problems = split_history(history, workload)
    out = []
    for (w, key) in sorted(groups, key=lambda g: (g[0], str(g[1]))):
        if workload is not None and w != workload:
            continue
        evs = groups[(w, key)]
        if w in COUNTER_WORKLOADS:
            v = check(w, evs, final=final, budget_s=budget_s)
        elif w in ("rw", "watch", "sem", "elect", "deadlock", "multilock", "latch"):
            v = check(w, evs, all_history=history)
        else:
            v = check(w, evs, budget_s=budget_s, **kw)
        out.append(v)
    if problems:
        out.append({"workload": workload or "?", "valid": False, "ops": 0,
                    "violations": problems[:MAX_VIOLATIONS], "anomalies": 0,
                    "stats": {"history_errors": len(problems)}})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check a fencelock torture history.")
    ap.add_argument("history")
    ap.add_argument("--workload", choices=WORKLOADS)
    ap.add_argument("--final", type=int, help="final counter value (counter workloads)")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds of linearizability search per key (default 60)")
    ap.add_argument("--lenient-cas-fail", action="store_true",
                    help="treat a failed cas as a no-op instead of 'the register did not "
                         "hold the expected value'")
    ap.add_argument("--unknown-exit", type=int, default=0,
                    help="exit status when a verdict is unknown and none failed (default 0)")
    args = ap.parse_args(argv)
    kw = {}
    if args.lenient_cas_fail:
        kw["strict_cas_fail"] = False
    try:
        verdicts = check_file(args.history, workload=args.workload, final=args.final,
                              budget_s=args.budget, **kw)
    except (OSError, HistoryError) as exc:
        print(json.dumps({"valid": False, "violations": [{"kind": "history-error",
                                                          "msg": str(exc)}]}))
        return 1
    status = 0
    for v in verdicts:
        print(json.dumps(v, default=str))
        if v["valid"] is False:
            status = 1
    if status == 0 and any(v["valid"] == "unknown" for v in verdicts):
        status = args.unknown_exit
    return status


if __name__ == "__main__":
    sys.exit(main())
