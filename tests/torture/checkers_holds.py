# SPDX-License-Identifier: Apache-2.0
"""Checkers of holds on one lock name: the read-write lock workload ``rw``, and the
interval logic a semaphore checker (at most ``limit`` live permits) will reuse.

A *hold* is one acknowledged grant (an ok ``acquire``) with the real-time interval in which
it was **certainly** live on the servers:

    lo = the acquire's completion (the grant was applied before its answer arrived)
    hi = the earliest moment the hold can have ended: the invoke of the session's next
         ``release`` (an UNLOCK applies after it is sent), and the invoke of the session's
         ``expire`` (dated back by the worker to the last safe deadline it saw: the servers
         cannot have expired the session before it; see worker.c), whichever is first.

A hold whose session has neither (the history ends) is only known live at ``lo``. If
``hi < lo`` the session may already have expired when the answer arrived: the hold is
dropped (nothing certain). Grants with an unknown outcome (info) are ignored: they can only
add holds. So every conflict reported between certain intervals is a real one: at one
instant the servers' state had both holds.

Everything is on CLOCK_MONOTONIC ns, the clock of every worker and of the servers' leases.
"""

import bisect
import time
from collections import defaultdict

import checkers as ck

INF = float("inf")


class Hold:
    __slots__ = ("token", "mode", "session", "lo", "hi", "acq", "end")

    def __init__(self, token, mode, session, lo, hi, acq, end):
        self.token, self.mode, self.session = token, mode, session
        self.lo, self.hi, self.acq, self.end = lo, hi, acq, end

    def describe(self):
        d = {"token": self.token, "mode": self.mode, "session": self.session,
             "live_from": self.lo, "live_until": self.hi,
             "acquire_line": self.acq.describe().get("line")}
        if self.end is not None:
            d["ended_by"] = self.end.f
        return d

    def __repr__(self):
        return f"Hold({self.describe()})"


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def certain_holds(ops, violations, mode_of=lambda o: o.get("mode", prefer="inv")):
    """The holds of ok acquires (see the module docstring), by session.  Returns
    (holds, dropped): dropped counts grants whose answer may have come after their end."""
    by_session = defaultdict(list)
    for o in ops:
        sid = _int(o.get("session", prefer="inv"))
        if o.f in ("acquire", "release", "expire") and sid is not None:
            by_session[sid].append(o)
    holds, dropped = [], 0
    for sid, lst in by_session.items():
        lst.sort(key=lambda o: o.t0)
        expire = next((o for o in lst if o.f == "expire"), None)
        for k, o in enumerate(lst):
            if o.f != "acquire" or o.type != "ok":
                continue
            tok = _int(o.get("token"))
            if tok is None:
                violations.append({"kind": "history-error", "msg": "ok acquire without "
                                   "integer token", "op": o.describe()})
                continue
            end = next((r for r in lst[k + 1:] if r.f == "release" and r.t0 >= o.t0), None)
            cands = [x for x in (end, expire) if x is not None]
            if cands:
                end = min(cands, key=lambda x: x.t0)
                hi = end.t0
            else:
                end, hi = None, o.t1
            if hi < o.t1:
                dropped += 1
                continue
            holds.append(Hold(tok, mode_of(o), sid, o.t1, hi, o, end))
    holds.sort(key=lambda h: (h.lo, h.token))
    return holds, dropped


def sweep(holds, conflict):
    """Walk the certain intervals (sorted by start) in time.  Each time a hold h starts,
    ``conflict(h, live)`` returns None or a violation dict, where live are the holds that
    started no later and end strictly after h.lo: all of them and h were certainly live at
    the instant h.lo (an end equal to h.lo is not counted: clocks of two processes).  Every
    instant where the live set is largest is the start of one of its holds, so checking at
    starts finds every conflict.  Returns (violations, max_live)."""
    out, live, max_live = [], [], 0
    for h in holds:
        live = [x for x in live if x.hi > h.lo]
        v = conflict(h, live)
        if v is not None:
            out.append(v)
        live.append(h)
        max_live = max(max_live, len(live))
    return out, max_live


def rw_conflict(h, live):
    """A read-write lock: an exclusive hold shares no instant with any other hold."""
    bad = [x for x in live if x.mode == "exclusive" or h.mode == "exclusive"]
    if not bad:
        return None
    kind = ("exclusive-overlap" if h.mode == "exclusive" and all(x.mode == "exclusive"
                                                                  for x in bad)
            else "shared-exclusive-overlap")
    return {"kind": kind,
            "msg": f"{h.mode} grant token {h.token} (session {h.session}) was certainly live "
                   f"together with {len(bad)} other grant(s), tokens "
                   f"{sorted(x.token for x in bad)[:5]}",
            "hold": h.describe(), "others": [x.describe() for x in bad[:3]]}


def limit_conflict(limit):
    """A semaphore of ``limit`` permits: never more than ``limit`` holds live at once."""
    def conflict(h, live):
        if len(live) + 1 <= limit:
            return None
        return {"kind": "over-limit",
                "msg": f"{len(live) + 1} permits certainly live at once (limit {limit})",
                "hold": h.describe(), "others": [x.describe() for x in live[:5]]}
    return conflict


def shared_overlaps(holds):
    """How many shared holds certainly ran while another shared hold was live, and the most
    that were live at one instant: the proof that readers did run concurrently."""
    n, most, live = 0, 0, []
    for h in holds:
        if h.mode != "shared":
            continue
        live = [x for x in live if x.hi > h.lo]
        if live:
            n += 1
        live.append(h)
        most = max(most, len(live))
    return n, most


# --------------------------------------------------------------------------------------------
# rw

def check_rw(history):
    """The rw workload (worker_rw.c).  Violations:
    exclusive-overlap / shared-exclusive-overlap  two certain holds share an instant and one
        is exclusive (sweep + rw_conflict);
    duplicate-token / token-order                 tokens unique per lock and increasing in
        real time (checkers._check_tokens);
    shared-token-write                            a fenced PUT accepted a shared holder's token;
    stale-write                                   a fenced PUT with token T succeeded although
        a grant with a larger token had been acknowledged before it was sent (T's hold had
        ended: its holder released it or its session expired);
    write-before-grant / fence-order              an ok write's revision not above its token,
        or ok writes by revision with falling tokens.
    Stats: shared_overlaps (shared holds that certainly ran alongside another: 0 means the run
    did not test read-write locks), max_shared_live, stale_writes_refused (fenced writes
    refused with -STALE), holds, holds_dropped."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    stats = {"types": ck._type_counts(ops)}
    for o in ops:
        if o.f not in ("acquire", "release", "expire", "write", "check"):
            violations.append({"kind": "history-error", "msg": f"unknown rw op {o.f!r}",
                               "op": o.describe()})
        elif o.f == "acquire" and o.get("mode", prefer="inv") not in ("shared", "exclusive"):
            violations.append({"kind": "history-error", "msg": "acquire without mode",
                               "op": o.describe()})
    acq = [o for o in ops if o.f == "acquire" and o.type == "ok"]
    grants = ck._check_tokens(acq, violations)
    holds, dropped = certain_holds(ops, violations)
    over, _ = sweep(holds, rw_conflict)
    violations += over
    n_overlap, most = shared_overlaps(holds)
    mode_of_token = {t: o.get("mode", prefer="inv") for t, o in grants}
    _check_fenced_writes(ops, grants, mode_of_token, violations, stats)
    stats.update({"holds": len(holds), "holds_dropped": dropped, "shared_overlaps": n_overlap,
                  "max_shared_live": most,
                  "shared_grants": sum(1 for h in holds if h.mode == "shared"),
                  "exclusive_grants": sum(1 for h in holds if h.mode == "exclusive"),
                  "seconds": round(time.monotonic() - started, 3)})
    return ck._verdict("rw", None, ops, violations, stats)


def _check_fenced_writes(ops, grants, mode_of_token, violations, stats):
    writes = [o for o in ops if o.f == "write"]
    okw = []
    for o in writes:
        tok = _int(o.get("token", prefer="inv"))
        if tok is None:
            violations.append({"kind": "history-error", "msg": "write without integer token",
                               "op": o.describe()})
            continue
        if o.type != "ok":
            continue
        rev = _int(o.get("rev"))
        if rev is None:
            violations.append({"kind": "history-error", "msg": "ok write without integer rev",
                               "op": o.describe()})
            continue
        okw.append((rev, tok, o))
        if mode_of_token.get(tok) == "shared" or o.get("mode", prefer="inv") == "shared":
            violations.append({"kind": "shared-token-write",
                               "msg": f"fenced PUT accepted the shared holder's token {tok}",
                               "op": o.describe()})
        if rev <= tok:
            violations.append({"kind": "write-before-grant", "msg": f"write applied at "
                               f"revision {rev}, not after its token {tok}", "op": o.describe()})
    # a grant with a larger token acknowledged before the write was sent ends the token
    by_t1 = sorted(grants, key=lambda g: g[1].t1)
    t1s = [g[1].t1 for g in by_t1]
    best, top = [], None            # best[i]: the largest-token grant among by_t1[:i + 1]
    for g in by_t1:
        if top is None or g[0] > top[0]:
            top = g
        best.append(top)
    for rev, tok, o in okw:
        i = bisect.bisect_left(t1s, o.t0) - 1       # grants acknowledged before the invoke
        newer = best[i] if i >= 0 and best[i][0] > tok else None
        if newer is not None:
            violations.append({"kind": "stale-write",
                               "msg": f"fenced PUT with token {tok} applied at revision {rev} "
                                      f"although grant {newer[0]} had been acknowledged "
                                      "before it was sent",
                               "op": o.describe(), "newer_grant": newer[1].describe()})
    okw.sort()
    for (r1, t1, o1), (r2, t2, o2) in zip(okw, okw[1:]):
        if t2 < t1:
            violations.append({"kind": "fence-order", "msg": f"ok write with token {t2} at "
                               f"revision {r2} after an ok write with token {t1} at {r1}",
                               "op": o2.describe(), "previous": o1.describe()})
    stats["ok_writes"] = len(okw)
    stats["stale_writes_refused"] = sum(1 for o in writes if o.type == "fail")
    stats["shared_writes_refused"] = sum(1 for o in writes if o.type == "fail" and
                                         o.get("mode", prefer="inv") == "shared")
    stats["checks"] = ck._type_counts([o for o in ops if o.f == "check"])


# --------------------------------------------------------------------------------------------
# multilock (worker_multi.c)

class NameView:
    """One name's part of a multi-lock acquire, shaped as a single-lock acquire (certain_holds,
    _check_tokens): the name's token and mode; everything else is the acquire's."""
    __slots__ = ("op", "name", "token", "mode", "f", "type", "t0", "t1", "idx", "proc")

    def __init__(self, op, name, token, mode):
        self.op, self.name, self.token, self.mode = op, name, token, mode
        self.f, self.type, self.t0, self.t1 = op.f, op.type, op.t0, op.t1
        self.idx, self.proc = op.idx, op.proc

    def get(self, key, prefer="ret"):
        if key == "token":
            return self.token
        if key == "mode":
            return self.mode
        if key == "key":
            return self.name
        return self.op.get(key, prefer)

    def describe(self):
        d = self.op.describe()
        d.update({"key": self.name, "token": self.token, "mode": self.mode})
        return d


def _multi_views(ops, violations):
    """{name: [NameView]} of the ok acquires, checking their shape."""
    views = defaultdict(list)
    for o in ops:
        if o.f != "acquire" or o.type != "ok":
            continue
        names, modes, toks = o.get("names"), o.get("modes"), o.get("tokens")
        if not (isinstance(names, list) and isinstance(modes, list) and isinstance(toks, list)
                and len(names) == len(modes) == len(toks) and names
                and len(set(names)) == len(names)):
            violations.append({"kind": "history-error", "msg": "ok multi acquire without "
                               "names, modes and a token per name", "op": o.describe()})
            continue
        if sorted(toks) != list(range(min(toks), min(toks) + len(toks))):
            violations.append({"kind": "not-one-entry", "msg": f"tokens {toks} of one grant are "
                               "not consecutive revisions: not granted in one entry",
                               "op": o.describe()})
        for n, m, t in zip(names, modes, toks):
            views[n].append(NameView(o, n, t, m))
    return views


def check_multilock(history):
    """The multilock workload (worker_multi.c), each name judged alone as check_rw judges
    "rw" (the sessions' release and expire end every name of their grant).  Violations:
    exclusive-overlap / shared-exclusive-overlap, duplicate-token / token-order (per name),
    shared-token-write, stale-write, write-before-grant, fence-order (per name's writes), and
    not-one-entry (a grant's tokens are not consecutive revisions).  Stats: multi_grants, holds
    per name, disjoint_overlaps (grants certainly live together: the run had concurrency)."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    stats = {"types": ck._type_counts(ops)}
    for o in ops:
        if o.f not in ("acquire", "release", "expire", "write"):
            violations.append({"kind": "history-error", "msg": f"unknown multilock op {o.f!r}",
                               "op": o.describe()})
    views = _multi_views(ops, violations)
    ends = [o for o in ops if o.f in ("release", "expire")]
    per_name, all_holds = {}, []
    writes_by_name = defaultdict(list)
    for o in ops:
        if o.f == "write":  # "key" is the key written (ml-reg/<name>), "name" the lock
            writes_by_name[o.get("name", prefer="inv")].append(o)
    for name in sorted(views):
        grants = ck._check_tokens(views[name], violations, what=f"{name} token")
        holds, dropped = certain_holds(views[name] + ends, violations)
        over, _ = sweep(holds, rw_conflict)
        violations += over
        mode_of_token = {t: o.get("mode") for t, o in grants}
        st = {}
        _check_fenced_writes(writes_by_name[name], grants, mode_of_token, violations, st)
        per_name[name] = {"holds": len(holds), "dropped": dropped,
                          "ok_writes": st.get("ok_writes"),
                          "stale_writes_refused": st.get("stale_writes_refused")}
        all_holds += holds
    # concurrency: distinct grants (by their acquire) certainly live at one instant
    by_acq = {}
    for h in all_holds:
        lo, hi = by_acq.get(id(h.acq.op), (h.lo, h.hi))
        by_acq[id(h.acq.op)] = (max(lo, h.lo), min(hi, h.hi))
    spans = sorted(by_acq.values())
    overlaps, live = 0, []
    for lo, hi in spans:
        live = [x for x in live if x > lo]
        overlaps += bool(live)
        live.append(hi)
    stats.update({"multi_grants": sum(1 for o in ops if o.f == "acquire" and o.type == "ok"),
                  "names": per_name, "holds": len(all_holds),
                  "disjoint_overlaps": overlaps,
                  "ok_writes": sum(v["ok_writes"] or 0 for v in per_name.values()),
                  "stale_writes_refused": sum(v["stale_writes_refused"] or 0
                                              for v in per_name.values()),
                  "seconds": round(time.monotonic() - started, 3)})
    return ck._verdict("multilock", None, ops, violations, stats)


# --------------------------------------------------------------------------------------------
# sem and elect (worker_prims.c)

SEM_LIMIT = 3


def _op_names(ops, allowed, what, violations):
    for o in ops:
        if o.f not in allowed:
            violations.append({"kind": "history-error", "msg": f"unknown {what} op {o.f!r}",
                               "op": o.describe()})


def _check_probes(ops, violations, stats):
    """Probe writes: fenced PUTs sent after a linearizable read showed the grant gone (its
    holder was frozen past its safe deadline and its session expired).  One that succeeded
    is an ``expired-write``; write-before-grant as for every fenced write."""
    writes = [o for o in ops if o.f == "write"]
    probes = [o for o in writes if o.get("probe", prefer="inv") is True]
    for o in writes:
        tok, rev = _int(o.get("token", prefer="inv")), _int(o.get("rev"))
        if o.type == "ok" and tok is not None and rev is not None and rev <= tok:
            violations.append({"kind": "write-before-grant", "msg": f"write applied at "
                               f"revision {rev}, not after its token {tok}", "op": o.describe()})
    for o in probes:
        if o.type == "ok":
            violations.append({"kind": "expired-write",
                               "msg": f"fenced PUT with token {o.get('token', prefer='inv')} "
                                      "applied although a read before it was sent showed the "
                                      "grant gone", "op": o.describe()})
    stats["probes"] = len(probes)
    stats["probes_refused"] = sum(1 for o in probes if o.type == "fail")
    stats["ok_writes"] = sum(1 for o in writes if o.type == "ok")


def _permits(h):
    """The permits of a hold's acquisition (its invoke's "permits"; 1 without one)."""
    v = _int(h.acq.get("permits", prefer="inv"))
    return v if v is not None and v > 0 else 1


def permit_conflict(limit, most):
    """A weighted semaphore: the permits of the holds certainly live at one instant never add
    up to more than ``limit``.  most[0] keeps the largest sum seen."""
    def conflict(h, live):
        used = _permits(h) + sum(_permits(x) for x in live)
        most[0] = max(most[0], used)
        if used <= limit:
            return None
        return {"kind": "over-limit",
                "msg": f"{used} permits certainly live at once in {len(live) + 1} "
                       f"acquisitions (limit {limit})",
                "hold": h.describe(), "permits": _permits(h),
                "others": [dict(x.describe(), permits=_permits(x)) for x in live[:5]]}
    return conflict


def permits_by_revision(ops, grants, limit, violations, stats):
    """The semaphore judged by its fenced writes, in the log's order instead of the clock's.
    A grant's token is the revision that granted it; a fenced PUT with token T accepted at
    revision R proves T still held its permits at R (the fence accepts only a current
    permit's token), and a grant once ended never comes back, so T held them at every
    revision of [T, R].  At no revision may the permits of the grants so proven live add up to
    more than ``limit`` (over-limit-rev).  Needs no clock and no interval of the worker's:
    only the servers' own revisions.  Stats: rev_max_permits (the most permits proven live at
    one revision), rev_judged_grants (grants with an accepted fenced write)."""
    permits = {t: _permits_of(o) for t, o in grants}
    last = {}
    for o in ops:
        tok, rev = _int(o.get("token", prefer="inv")), _int(o.get("rev"))
        if o.f == "write" and o.type == "ok" and tok in permits and rev is not None and rev > tok:
            last[tok] = max(last.get(tok, rev), rev)
    spans = sorted((t, r) for t, r in last.items())
    live, most = [], 0  # (end, token) of the spans that began at or before the current start
    for t, r in spans:
        live = [x for x in live if x[0] >= t]
        used = permits[t] + sum(permits[x[1]] for x in live)
        most = max(most, used)
        if used > limit:
            violations.append({"kind": "over-limit-rev",
                               "msg": f"{used} permits proven live at revision {t} by accepted "
                                      f"fenced writes (limit {limit}): grant {t} "
                                      f"({permits[t]} permits, written at revision {r}) and "
                                      + ", ".join(f"{x[1]} ({permits[x[1]]}, written at {x[0]})"
                                                  for x in live[:5]),
                               "grant": t})
        live.append((r, t))
    stats["rev_max_permits"] = most
    stats["rev_judged_grants"] = len(spans)


def check_fifo(ops, violations, stats):
    """The FIFO rule (nobody overtakes the semaphore's queue), from the ``queue`` reads
    (SEM.INFO, linearizable): a session A listed as a waiter by a read that completed at T
    was queued before T; a request B invoked after T arrived after it, so B may not be
    granted before A unless A left the queue first.  When A's pending acquire (the one
    running during the read) was granted, A never left, so every such B's token must be
    above A's (overtaken otherwise).  Stats: fifo_checked (waiters so judged), fifo_large
    (those asking for more than one permit: a head request for k not overtaken by smaller
    ones)."""
    acq = defaultdict(list)
    oks = []
    for o in ops:
        sid = _int(o.get("session", prefer="inv"))
        if o.f == "acquire" and sid is not None:
            acq[sid].append(o)
            if o.type == "ok" and _int(o.get("token")) is not None:
                oks.append(o)
    oks.sort(key=lambda o: o.t0)
    t0s = [o.t0 for o in oks]
    low = [None] * (len(oks) + 1)  # low[i]: the op of the smallest token among oks[i:]
    for i in range(len(oks) - 1, -1, -1):
        nxt = low[i + 1]
        low[i] = oks[i] if nxt is None or oks[i].get("token") < nxt.get("token") else nxt
    checked = large = 0
    for q in ops:
        if q.f != "queue" or q.type != "ok" or not isinstance(q.get("waiters"), list):
            continue
        wanted = q.get("wanted") if isinstance(q.get("wanted"), list) else []
        for k, sid in enumerate(q.get("waiters")):
            a = next((o for o in acq.get(sid, []) if o.t0 < q.t1 and o.t1 > q.t0), None)
            if a is None or a.type != "ok":
                continue
            ta = _int(a.get("token"))
            checked += 1
            large += k < len(wanted) and _int(wanted[k]) is not None and wanted[k] > 1
            b = low[bisect.bisect_right(t0s, q.t1)]
            if b is not None and b.get("token") < ta:
                violations.append({"kind": "overtaken",
                                   "msg": f"session {sid} was queued at a SEM.INFO read, then "
                                          f"granted token {ta}, but an acquire sent after the "
                                          f"read was granted token {b.get('token')} first",
                                   "queue_read": q.describe(), "waiter": a.describe(),
                                   "overtaker": b.describe()})
    stats["fifo_checked"] = checked
    stats["fifo_large"] = large


def _permits_of(o):
    v = _int(o.get("permits", prefer="inv"))
    return v if v is not None and v > 0 else 1


def check_sem(history, limit=SEM_LIMIT):
    """The sem workload (weighted: each acquire names its "permits", 1 if absent).
    Violations: over-limit (the permits of the certain holds live at one instant add up to
    more than ``limit``: sweep + permit_conflict), over-limit-rev (the same judged by the
    fenced writes in revision order: permits_by_revision), overtaken (the FIFO rule against
    the queue reads: check_fifo), duplicate-token / token-order,
    expired-write (a probe write succeeded), write-before-grant.  Stats: max_live (the most
    certain acquisitions live at once), max_permits_live (the most permits: below 2 the run
    did not test a semaphore), weighted_grants (grants of more than 1 permit), probes,
    probes_refused."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    stats = {"types": ck._type_counts(ops)}
    _op_names(ops, ("acquire", "release", "expire", "write", "queue"), "sem", violations)
    grants = ck._check_tokens([o for o in ops if o.f == "acquire" and o.type == "ok"],
                              violations)
    holds, dropped = certain_holds(ops, violations, mode_of=lambda o: "permit")
    most = [0]
    over, max_live = sweep(holds, permit_conflict(limit, most))
    violations += over
    _check_probes(ops, violations, stats)
    permits_by_revision(ops, grants, limit, violations, stats)
    check_fifo(ops, violations, stats)
    stats.update({"grants": len(grants), "holds": len(holds), "holds_dropped": dropped,
                  "max_live": max_live, "max_permits_live": most[0],
                  "weighted_grants": sum(1 for h in holds if _permits(h) > 1),
                  "seconds": round(time.monotonic() - started, 3)})
    return ck._verdict("sem", None, ops, violations, stats)


def _leader_conflict(h, live):
    v = limit_conflict(1)(h, live)
    if v is not None:
        v["kind"] = "two-leaders"
        v["msg"] = f"leader token {h.token} certainly live together with " \
                   f"{sorted(x.token for x in live)[:5]}"
    return v


def _check_observers(ops, grants, violations, stats):
    """Each observer's ok answers, in order: revisions strictly rise (an answer is newer than
    the AFTER it was asked with), leaders' tokens never fall, a leader's since_rev is its
    token, and a token that was granted is shown with the session it was granted to."""
    sid_of = {t: o.get("session", prefer="inv") for t, o in grants}
    by_obs = defaultdict(list)
    for o in ops:
        if o.f == "observe" and o.type == "ok":
            by_obs[o.get("observer", prefer="inv")].append(o)
    leaders = set()
    for obs, lst in by_obs.items():
        lst.sort(key=lambda o: o.t0)
        prev_rev, prev_tok, prev = None, 0, None
        for o in lst:
            sid, tok, rev = _int(o.get("sid")), _int(o.get("token")), _int(o.get("rev"))
            after = _int(o.get("after", prefer="inv")) or 0
            if sid is None or tok is None or rev is None:
                violations.append({"kind": "history-error", "msg": "observe without sid, "
                                   "token or rev", "op": o.describe()})
                continue
            bad = None
            if after and rev <= after:
                bad = f"answer at revision {rev} not after AFTER {after}"
            elif prev_rev is not None and rev <= prev_rev:
                bad = f"revision {rev} after revision {prev_rev}"
            elif sid and tok < prev_tok:
                bad = f"leader token {tok} after leader token {prev_tok}"
            elif sid and _int(o.get("since_rev")) != tok:
                bad = f"leader token {tok} with since_rev {o.get('since_rev')}"
            elif sid and tok in sid_of and sid_of[tok] != sid:
                bad = f"token {tok} shown with session {sid}, granted to {sid_of[tok]}"
            if bad:
                violations.append({"kind": "observe-order", "msg": f"observer {obs}: {bad}",
                                   "op": o.describe(),
                                   "previous": prev.describe() if prev else None})
            prev_rev, prev = rev, o
            if sid:
                prev_tok = tok
                leaders.add(tok)
    stats["observers"] = len(by_obs)
    stats["observed"] = sum(len(x) for x in by_obs.values())
    stats["observed_leaders"] = len(leaders)
    _check_observer_gaps(by_obs, violations, stats)


def _check_observer_gaps(by_obs, violations, stats):
    """Observers against each other.  An answer to ELECT.OBSERVE AFTER a at revision q that is
    not flagged ``compacted`` is the FIRST change after a, so no change lies strictly between
    a and q: if another observer saw a change at revision r with a < r < q (a leader, a new
    value or nobody leading), this one skipped it (observe-gap).  And two answers at the same
    revision are the same change: the same sid and token (observe-disagree).  A compacted
    answer is the current state (changes may be skipped): never checked for a gap, and a
    compacted leaderless one (possibly dated at the revision it was read at, not of a change)
    is no witness.  Stats: observe_cross (changes more than one observer saw),
    observe_compacted, observe_gaps_checked (answers checked for a gap)."""
    seen = {}  # rev -> (sid, token, observer, op)
    cross, compacted = set(), 0
    for obs, lst in by_obs.items():
        for o in lst:
            sid, tok, rev = _int(o.get("sid")), _int(o.get("token")), _int(o.get("rev"))
            if sid is None or tok is None or rev is None:
                continue
            if _int(o.get("compacted")):
                compacted += 1
                if not sid:
                    continue
            if rev not in seen:
                seen[rev] = (sid, tok, obs, o)
                continue
            sid0, tok0, obs0, o0 = seen[rev]
            if obs0 != obs:
                cross.add(rev)
            if (sid0, tok0) != (sid, tok):
                violations.append({"kind": "observe-disagree", "msg": f"revision {rev}: "
                                   f"observer {obs0} saw sid {sid0} token {tok0}, observer "
                                   f"{obs} sid {sid} token {tok}", "op": o.describe(),
                                   "other": o0.describe()})
    revs = sorted(seen)
    checked = 0
    for obs, lst in by_obs.items():
        for o in lst:
            rev, after = _int(o.get("rev")), _int(o.get("after", prefer="inv")) or 0
            if rev is None or _int(o.get("compacted")):
                continue
            lo = bisect.bisect_right(revs, after)
            hi = bisect.bisect_left(revs, rev)
            checked += 1
            if lo < hi:
                r = revs[lo]
                sid, tok, by, wit = seen[r]
                violations.append({"kind": "observe-gap", "msg": f"observer {obs} answered "
                                   f"AFTER {after} with revision {rev}, skipping the change at "
                                   f"revision {r} (sid {sid} token {tok}) observer {by} saw",
                                   "op": o.describe(), "other": wit.describe()})
    stats["observe_cross"] = len(cross)
    stats["observe_compacted"] = compacted
    stats["observe_gaps_checked"] = checked


def check_elect(history):
    """The elect workload.  Violations: two-leaders (two certain leaderships share an
    instant), duplicate-token / token-order (leader tokens strictly rise in real time),
    stale-write / fence-order / write-before-grant (fenced writes, as for rw), expired-write
    (a paused leader's probe write succeeded), proclaim-before-grant, observe-order,
    observe-gap / observe-disagree (observers against each other).  Stats: observed_leaders
    (distinct leaders observers saw: below 2 nothing was tested), observe_cross."""
    started = time.monotonic()
    ops, _, problems = ck.pair_ops(history)
    violations = list(problems)
    stats = {"types": ck._type_counts(ops)}
    _op_names(ops, ("acquire", "proclaim", "release", "expire", "write", "observe"), "elect",
              violations)
    grants = ck._check_tokens([o for o in ops if o.f == "acquire" and o.type == "ok"],
                              violations)
    holds, dropped = certain_holds(ops, violations, mode_of=lambda o: "leader")
    over, _ = sweep(holds, _leader_conflict)
    violations += over
    _check_fenced_writes(ops, grants, {}, violations, stats)
    _check_probes(ops, violations, stats)
    for o in ops:
        tok, rev = _int(o.get("token", prefer="inv")), _int(o.get("rev"))
        if o.f == "proclaim" and o.type == "ok" and (rev is None or tok is None or rev <= tok):
            violations.append({"kind": "proclaim-before-grant", "msg": f"proclaim at revision "
                               f"{rev} not after its token {tok}", "op": o.describe()})
    _check_observers(ops, grants, violations, stats)
    stats.update({"grants": len(grants), "holds": len(holds), "holds_dropped": dropped,
                  "seconds": round(time.monotonic() - started, 3)})
    return ck._verdict("elect", None, ops, violations, stats)
