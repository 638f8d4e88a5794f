# SPDX-License-Identifier: Apache-2.0
"""The checker of the ``latch`` workload (worker_latch.c): countdown latches ``lt/K`` and
double barriers ``bt/K`` whose participants are sessions (docs/protocol.md "Latches and
barriers").  Everything is judged from the ops' invocation and completion times
(CLOCK_MONOTONIC, the clock of every worker and of the servers' leases) and answers; the
names are never deleted, so a latch's state only moves counting -> zero or counting -> broken,
and a barrier name is one barrier (its count is more than half the workers, each of which
enters a name once: a second full barrier of that name would need more enterers than exist).

Evidence, per latch of count n:
    a count-down that may have applied: a ``countdown`` not refused (ok, info or pending); each
        session counts once (a joined session counts down once; the worker sends one per
        session); it applied after its invoke;
    zero at T: a ``wait`` answered +OK, an ``info`` state zero or a count-down answered 0,
        completed at T (the state was zero at some instant before T);
    broken at T: an answer -BROKEN or an ``info`` state broken completed at T, or the ok
        ``close`` of a session whose join was acknowledged and which never counted down (its
        promise can no longer be kept: the close's commit broke the latch).
    B = the earliest broken-at time (infinite if none).

Violations:
    early-release      a wait answered +OK (or any zero evidence) at T although fewer than n
                       sessions had invoked a count-down before T: the release came before the
                       commit of the last count-down;
    zero-despite-promise  zero evidence although a session's join was acknowledged and that
                       session never sent a count-down (the joiners alone hold the counts);
    count-mismatch     an ``info`` or a count-down's answer ``remaining`` r outside
                       [n - could-have-applied by its completion, n - certainly applied before
                       its invoke];
    zero-and-broken    one latch both at zero and broken (both are final);
    state-regress      an ``info`` invoked after zero / broken was certain shows another state,
                       or a wait invoked after zero was certain is not answered +OK;
    false-break        -BROKEN (or info's broken_sid) names a session that never joined, or
                       whose count-down was acknowledged (it counted down: its end breaks
                       nothing); break-disagree: two answers name different sessions;
    stale-nil          a wait invoked after B answered nil (it must see the break at once);
    stuck-waiter       a wait answered nil although its WAIT ran until more than BOUND_NS after
                       B: it slept through the break.  The bound: a parked waiter is answered
                       -BROKEN by the apply of the break on the node it waits on; the only
                       node that can still answer nil after B is a deposed leader that does
                       not know yet (paused, or cut off by a partition when the break was
                       committed elsewhere), and the nemesis runs one server fault at a time,
                       each at most 5 s (partitions and lag 1-5 s, pauses up to 3 s), that
                       began before B; 3 s more cover the stale node's first turn after the
                       fault and ASan on a loaded machine.  (The expiry itself, a TTL after the
                       last keepalive and later across leader changes, is not in the bound: B
                       is measured from the break's evidence; ``expiry_ms_max`` reports how long
                       abandoned sessions took);
    never-broken       an ``info`` more than NEVER_BROKEN_NS after a participant with an
                       acknowledged join was abandoned (its keepalives stopped) still shows the
                       latch counting: the session never ended.
Barriers (count m):
    early-enter        an enter answered +OK at T although fewer than m sessions had invoked
                       an enter before T (refused enters do not count);
    early-leave        a leave answered +OK by a session whose enter was +OK (so the barrier was
                       full) although another session whose enter was +OK had not invoked its
                       leave before the answer;
    false-break        -BROKEN names a session that never entered.
Unknown outcomes: info / pending ops only add possibilities (a count-down that may apply, an
enter that may be inside) and are never evidence themselves, as in the other checkers.
"""

import copy
import time
from collections import Counter, defaultdict

import checkers as ck

INF = float("inf")
BOUND_NS = 8_000_000_000           # stuck-waiter: see the module docstring
NEVER_BROKEN_NS = 30_000_000_000   # never-broken
LATCH_OPS = ("create", "join", "countdown", "wait", "info", "close", "abandon")
BARRIER_OPS = ("enter", "leave")


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _res(o):
    """The answer's kind (ok|int|nil|broken|err), None when unknown (info / pending)."""
    if o.ret is None or o.type == "info":
        return None
    return o.get("result") or ("ok" if o.f in ("info", "close", "abandon") else None)


def _v(kind, msg, o, **kw):
    d = {"kind": kind, "msg": msg, "op": o.describe() if o is not None else None}
    d.update(kw)
    return d


def _describe(o):
    d = o.describe()
    for k in ("session", "result", "state", "remaining", "broken_sid", "wait_ms"):
        v = o.get(k)
        if v is not None:
            d[k] = v
    return d


def _count_before(times, t):
    """How many of the sorted times are < t."""
    lo, hi = 0, len(times)
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _first_per_session(ops, pick):
    """{session: the earliest pick(o)} over ops."""
    out = {}
    for o in ops:
        sid = _int(o.get("session", prefer="inv"))
        t = pick(o)
        if sid is not None and t is not None and t < out.get(sid, INF):
            out[sid] = t
    return out


def _check_latch(name, lst, violations, st):
    counts = {_int(o.get("count", prefer="inv")) for o in lst}
    if len(counts) != 1 or None in counts or min(counts) < 1:
        violations.append(_v("history-error", f"latch {name}: counts {sorted(map(str, counts))}",
                             lst[0]))
        return
    n = counts.pop()
    by_f = defaultdict(list)
    for o in lst:
        by_f[o.f].append(o)
    cds = [o for o in by_f["countdown"] if _res(o) not in ("nil", "broken", "err")]
    could = sorted(_first_per_session(cds, lambda o: o.t0).values())
    certain = sorted(_first_per_session([o for o in cds if o.type == "ok"],
                                        lambda o: o.t1).values())
    cd_sessions = {_int(o.get("session", prefer="inv")) for o in by_f["countdown"]}
    joined_ok = {_int(o.get("session", prefer="inv")) for o in by_f["join"] if o.type == "ok"}
    joined_any = {_int(o.get("session", prefer="inv")) for o in by_f["join"]
                  if _res(o) not in ("nil", "broken", "err")}
    cd_ok = {_int(o.get("session", prefer="inv")) for o in by_f["countdown"] if o.type == "ok"}

    zero, broken = [], []  # (T, op)
    for o in lst:
        r = _res(o)
        if r is None:
            continue
        if (o.f == "wait" and r == "ok") or (o.f == "info" and o.get("state") == "zero") or \
                (o.f == "countdown" and r == "int" and _int(o.get("value")) == 0):
            zero.append((o.t1, o))
        if r == "broken" or (o.f == "info" and o.get("state") == "broken"):
            broken.append((o.t1, o))
    for o in by_f["close"]:
        sid = _int(o.get("session", prefer="inv"))
        if o.type == "ok" and sid in joined_ok and sid not in cd_sessions:
            broken.append((o.t1, o))
    z_known = min((t for t, _ in zero), default=INF)
    b_known = min((t for t, _ in broken), default=INF)

    # releases only after the last count-down was sent, and only if every promise was kept
    for t, o in zero:
        k = _count_before(could, t)
        if k < n:
            violations.append(_v("early-release", f"latch {name} (count {n}): {o.f} showed "
                                 f"zero although only {k} session(s) had sent a count-down "
                                 "before the answer", o, detail=_describe(o)))
    unkept = sorted(s for s in joined_ok if s not in cd_sessions)
    if zero and unkept:
        t, o = min(zero, key=lambda x: x[0])
        violations.append(_v("zero-despite-promise", f"latch {name}: {o.f} showed zero "
                             f"although session(s) {unkept[:5]} joined (acknowledged) and never "
                             "counted down", o, detail=_describe(o)))
    # counts left against the count-downs that can / must have applied
    for o in lst:
        r = None
        if o.f == "info" and o.type == "ok" and o.get("state") in ("counting", "zero"):
            r, own = _int(o.get("remaining")), 0
        elif o.f == "countdown" and _res(o) == "int":
            r, own = _int(o.get("value")), 1
        if r is None:
            continue
        lo = n - _count_before(could, o.t1)
        hi = n - min(n, _count_before(certain, o.t0) + own)
        if not lo <= r <= max(hi, 0):
            violations.append(_v("count-mismatch", f"latch {name} (count {n}): {o.f} answered "
                                 f"{r} counts left, possible only {max(lo, 0)}..{max(hi, 0)}",
                                 o, detail=_describe(o)))
    if zero and broken:
        violations.append(_v("zero-and-broken", f"latch {name} was both at zero and broken",
                             zero[0][1], broken_by=broken[0][1].describe()))
    sids = set()
    for t, o in broken:
        x = _int(o.get("broken_sid")) if o.f != "close" else _int(o.get("session", prefer="inv"))
        if x:
            sids.add(x)
            if x not in joined_any or x in cd_ok:
                violations.append(_v("false-break", f"latch {name}: broken by session {x}, "
                                     + ("which never joined" if x not in joined_any else
                                        "whose count-down was acknowledged"),
                                     o, detail=_describe(o)))
    named = {_int(o.get("broken_sid")) for _, o in broken if o.f != "close"} - {None, 0}
    if len(named) > 1:
        violations.append(_v("break-disagree", f"latch {name}: answers name the sessions "
                             f"{sorted(named)} as the one that broke it", broken[0][1]))
    # state after certainty
    for o in by_f["info"]:
        s = o.get("state") if o.type == "ok" else None
        if s is None:
            continue
        if (o.t0 > z_known and s != "zero") or (o.t0 > b_known and s != "broken"):
            violations.append(_v("state-regress", f"latch {name}: info shows {s} after "
                                 + ("zero" if o.t0 > z_known else "the break") + " was certain",
                                 o, detail=_describe(o)))
    judged = 0
    for o in by_f["wait"]:
        r = _res(o)
        if r is None:
            continue
        wait_end = _int(o.get("wait_end", prefer="inv")) or o.t0
        if o.t0 > z_known and r != "ok":
            violations.append(_v("state-regress", f"latch {name}: a wait invoked after zero was "
                                 f"certain answered {r}", o, detail=_describe(o)))
        if b_known < INF and wait_end > max(o.t0, b_known) + BOUND_NS or o.t0 > b_known:
            judged += 1
        if r != "nil" or b_known == INF:
            continue
        if o.t0 > b_known:
            violations.append(_v("stale-nil", f"latch {name}: a wait invoked "
                                 f"{(o.t0 - b_known) / 1e6:.0f} ms after the break was certain "
                                 "answered nil", o, detail=_describe(o)))
        elif wait_end > b_known + BOUND_NS:
            violations.append(_v("stuck-waiter", f"latch {name}: a wait whose WAIT ran "
                                 f"{(wait_end - b_known) / 1e6:.0f} ms past the certain break "
                                 f"(bound {BOUND_NS / 1e6:.0f} ms) answered nil", o,
                                 detail=_describe(o),
                                 broken_by=min(broken, key=lambda x: x[0])[1].describe()))
    # abandoned participants: their session must end
    for o in by_f["abandon"]:
        sid = _int(o.get("session", prefer="inv"))
        if sid not in joined_ok:
            continue
        st["abandons_judged"] += 1
        if b_known < INF and b_known > o.t0:
            st["expiry_ms_max"] = max(st["expiry_ms_max"], round((b_known - o.t0) / 1e6))
        for i in by_f["info"]:
            if i.type == "ok" and i.get("state") == "counting" and \
                    i.t0 > o.t0 + NEVER_BROKEN_NS:
                violations.append(_v("never-broken", f"latch {name}: still counting "
                                     f"{(i.t0 - o.t0) / 1e9:.1f} s after session {sid}, which "
                                     "had joined, was abandoned", i, abandon=o.describe()))
                break
    st["latches"] += 1
    st["releases"] += sum(1 for o in by_f["wait"] if _res(o) == "ok")
    st["breaks"] += bool(broken)
    st["zeros"] += bool(zero)
    st["broken_waits"] += sum(1 for o in by_f["wait"] if _res(o) == "broken")
    st["nil_waits"] += sum(1 for o in by_f["wait"] if _res(o) == "nil")
    st["waits_judged_after_break"] += judged
    st["countdowns_ok"] += len(cd_ok)


def _check_barrier(name, lst, violations, st):
    counts = {_int(o.get("count", prefer="inv")) for o in lst}
    if len(counts) != 1 or None in counts or min(counts) < 1:
        violations.append(_v("history-error", f"barrier {name}: counts {sorted(map(str, counts))}",
                             lst[0]))
        return
    m = counts.pop()
    enters = [o for o in lst if o.f == "enter"]
    leaves = [o for o in lst if o.f == "leave"]
    inside = sorted(_first_per_session([o for o in enters
                                        if _res(o) not in ("broken", "err")],
                                       lambda o: o.t0).values())
    ok_enter = _first_per_session([o for o in enters if _res(o) == "ok"], lambda o: o.t1)
    for o in enters:
        if _res(o) == "ok" and _count_before(inside, o.t1 + 1) < m:
            violations.append(_v("early-enter", f"barrier {name} (count {m}): enter answered "
                                 f"+OK when only {_count_before(inside, o.t1 + 1)} session(s) "
                                 "had sent an enter", o, detail=_describe(o)))
    leave_t0 = _first_per_session(leaves, lambda o: o.t0)
    if len(ok_enter) > m:
        st["barriers_ambiguous"] += 1
    else:
        for o in leaves:
            sid = _int(o.get("session", prefer="inv"))
            if _res(o) != "ok" or sid not in ok_enter or ok_enter[sid] > o.t0:
                continue
            late = sorted(s for s in ok_enter if s != sid and leave_t0.get(s, INF) > o.t1)
            if late:
                violations.append(_v("early-leave", f"barrier {name}: session {sid}'s leave "
                                     f"answered +OK before session(s) {late[:5]}, inside the "
                                     "full barrier, sent their leave", o, detail=_describe(o)))
    entered = {_int(o.get("session", prefer="inv")) for o in enters}
    for o in enters + leaves:
        x = _int(o.get("broken_sid"))
        if _res(o) == "broken" and x and x not in entered:
            violations.append(_v("false-break", f"barrier {name}: broken by session {x}, which "
                                 "never entered", o, detail=_describe(o)))
    st["barriers"] += 1
    st["barrier_full"] += bool(ok_enter)
    st["barrier_done"] += sum(1 for o in leaves if _res(o) == "ok"
                              and _int(o.get("session", prefer="inv")) in ok_enter)
    st["barrier_broken"] += any(_res(o) == "broken" for o in enters + leaves)


def check_latch(history):
    """The latch workload; violations and the evidence they rest on: the module docstring.
    Stats: latches, releases (waits answered +OK), zeros / breaks (latches seen at zero /
    broken), broken_waits, nil_waits, waits_judged_after_break (waits the stale-nil /
    stuck-waiter rules applied to), abandons_judged, expiry_ms_max (the longest from an
    abandon to the break's first evidence), barriers, barrier_full, barrier_done (leaves
    answered +OK after a full barrier), barrier_broken."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    st = defaultdict(int)
    st["types"] = ck._type_counts(ops)
    by_name = defaultdict(list)
    for o in ops:
        kind = o.get("kind", prefer="inv")
        allowed = BARRIER_OPS if kind == "barrier" else LATCH_OPS
        if kind not in ("latch", "barrier") or o.f not in allowed or \
                not isinstance(o.get("key", prefer="inv"), str):
            violations.append(_v("history-error", f"unknown latch op {o.f!r} (kind {kind!r})",
                                 o))
            continue
        by_name[(kind, o.get("key", prefer="inv"))].append(o)
    for (kind, name) in sorted(by_name):
        lst = sorted(by_name[(kind, name)], key=lambda o: o.t0)
        (_check_barrier if kind == "barrier" else _check_latch)(name, lst, violations, st)
    st["violation_kinds"] = dict(sorted(Counter(x["kind"] for x in violations).items()))
    st["seconds"] = round(time.monotonic() - started, 3)
    return ck._verdict("latch", None, ops, violations, dict(st))


# --------------------------------------------------------------------------------------------
# negative controls on a run's own history (torture.py): one fabricated op each, which the
# checker must flag with the named kind

def _ops_of(events):
    ops, _, _ = ck.pair_ops([e for e in events if e.get("workload") == "latch"])
    return ops


def _fake(template, proc, t0, t1, inv=None, ret=None):
    """An invoke and a completion like template's op, on a proc of its own."""
    a = {k: v for k, v in copy.deepcopy(template.inv).items() if k != "_line"}
    b = {k: v for k, v in copy.deepcopy(template.ret).items() if k != "_line"}
    a.update(proc=proc, time=int(t0), **(inv or {}))
    b.update(proc=proc, time=int(t1), **(ret or {}))
    return [a, b]


def negative_controls(events):
    """[(what, expected kind, mutated events or None when the run has no such situation)]:
    early-release (a +OK wait answered just before the last count-down was sent), stuck-waiter
    (a wait parked before the latch's first op, with a WAIT past the bound after the
    break, answered nil) and early-enter
    (an enter answered +OK just before the last enterer sent its enter)."""
    ops = _ops_of(events)
    base = [e for e in events if e.get("workload") == "latch"]
    proc = 1 + max((_int(e.get("proc")) or 0 for e in base), default=0) + 100000
    out = []
    by_name = defaultdict(list)
    for o in ops:
        by_name[o.get("key", prefer="inv")].append(o)

    def pick(what, kind, make):
        for name in sorted(by_name, key=str):
            evs = make(by_name[name])
            if evs:
                out.append((f"{what} on {name}", kind, base + evs))
                return
        out.append((what, kind, None))

    def early_release(lst):
        ok = [o for o in lst if o.f == "wait" and _res(o) == "ok"]
        n = _int(ok[0].get("count", prefer="inv")) if ok else None
        cds = sorted(_first_per_session([o for o in lst if o.f == "countdown" and
                                         _res(o) not in ("nil", "broken", "err")],
                                        lambda o: o.t0).values())
        if not ok or not n or len(cds) < n:
            return None
        t = cds[n - 1]
        return _fake(ok[0], proc, t - 2_000_000, t - 1_000_000)

    def stuck(lst):
        tmpl = next((o for o in lst if o.f == "wait" and _res(o) in ("broken", "nil", "ok")),
                    None)
        b = min((o.t1 for o in lst if _res(o) == "broken" or
                 (o.f == "info" and o.get("state") == "broken" and o.type == "ok")),
                default=INF)
        if tmpl is None or b == INF:
            return None
        t0 = min(o.t0 for o in lst)  # parked before any evidence of the break
        end = b + BOUND_NS + 2_000_000_000
        wait_ms = (end - t0) // 1_000_000
        return _fake(tmpl, proc, t0, end, inv={"wait_ms": wait_ms, "wait_end": end},
                     ret={"type": "fail", "result": "nil"})

    def early_enter(lst):
        ok = [o for o in lst if o.f == "enter" and _res(o) == "ok"]
        if not ok:
            return None
        m = _int(ok[0].get("count", prefer="inv"))
        first = _first_per_session([o for o in lst if o.f == "enter" and
                                    _res(o) not in ("broken", "err")], lambda o: o.t0)
        ts = sorted(first.values())
        if not m or m < 2 or len(ts) < m or ts[m - 2] >= ts[m - 1]:
            return None
        sid = min(first, key=first.get)  # the first enterer: no new session
        t1 = ts[m - 1] - 1  # just before the m-th enterer sent its enter (enters may be
        t0 = min(ts[0], t1 - 1)  # sent within a millisecond of each other)
        return _fake(ok[0], proc, t0, t1, inv={"session": sid}, ret={"session": sid})

    pick("early release", "early-release", early_release)
    pick("stuck waiter", "stuck-waiter", stuck)
    pick("early barrier enter", "early-enter", early_enter)
    return out
