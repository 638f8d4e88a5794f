#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of tests/torture/checkers.py on known-good and known-bad histories.

Run:  python3 tests/torture/test_checkers.py [-v] [name-substring ...]
Last line: "tests: N passed, N failed"; exit status 1 if any failed.

Hand-written histories cover each rule; generated ones come from simulations of a correct
register / lock service / counter (linearization points inside random invoke-complete
intervals, indeterminate results, expiring sessions, paused holders), then mutated in ways
that surely break them.  A brute-force oracle (all orders of all subsets) cross-checks the
WGL search on thousands of small random histories, valid and invalid.
"""

import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402

INF = float("inf")
TESTS = []
VERBOSE = False


def test(fn):
    TESTS.append(fn)
    return fn


def log(*a):
    print("   ", *a, flush=True)


class H:
    """History builder: op() appends an invoke and (unless typ is None) its completion."""

    def __init__(self, workload, key="k"):
        self.workload = workload
        self.key = key
        self.events = []

    def op(self, proc, f, t0, t1, typ="ok", inv=None, ret=None, key=None):
        base = {"proc": proc, "f": f, "workload": self.workload}
        k = self.key if key is None else key
        if k is not None:
            base["key"] = k
        e = dict(base, type="invoke", time=t0, **(inv or {}))
        self.events.append(e)
        if typ is not None:
            self.events.append(dict(base, type=typ, time=t1, **(ret or {})))
        return self

    # register shorthands
    def w(self, p, t0, t1, v, typ="ok"):
        return self.op(p, "write", t0, t1, typ, inv={"value": v})

    def r(self, p, t0, t1, v, typ="ok"):
        return self.op(p, "read", t0, t1, typ, ret={"value": v} if typ == "ok" else {})

    def cas(self, p, t0, t1, e, v, typ="ok"):
        return self.op(p, "cas", t0, t1, typ, inv={"expected": e, "value": v})

    # mutex shorthands
    def acq(self, p, t0, t1, tok=None, typ="ok"):
        return self.op(p, "acquire", t0, t1, typ, ret={"token": tok} if typ == "ok" else {})

    def rel(self, p, t0, t1, typ="ok"):
        return self.op(p, "release", t0, t1, typ)

    def exp(self, p, t0, t1, typ="ok"):
        return self.op(p, "expire", t0, t1, typ)

    def check(self, **kw):
        ev = list(self.events)
        random.Random(len(ev)).shuffle(ev)        # file order must not matter
        return checkers.check(self.workload, ev, **kw)


def kinds(verdict):
    return [v["kind"] for v in verdict["violations"]]


def assert_valid(v):
    assert v["valid"] is True, json.dumps(v, indent=1, default=str)[:3000]


def assert_invalid(v, kind=None):
    assert v["valid"] is False, json.dumps(v, indent=1, default=str)[:3000]
    if kind is not None:
        assert kind in kinds(v), (kind, kinds(v))


# ============================================================================================
# register: hand-written

@test
def test_register_sequential_valid():
    h = H("register")
    h.r(1, 0, 1, None).w(1, 2, 3, "a").r(2, 4, 5, "a").cas(2, 6, 7, "a", "b")
    h.cas(1, 8, 9, "a", "c", typ="fail").r(1, 10, 11, "b").w(2, 12, 13, "d").r(1, 14, 15, "d")
    v = h.check()
    assert_valid(v)
    assert v["ops"] == 8, v["ops"]


@test
def test_register_concurrent_reorderings_valid():
    # a read concurrent with two writes may see either, or the initial value; two reads
    # may see the writes in an order opposite to their invocation
    for seen in (None, "a", "b"):
        h = H("register")
        h.w(1, 0, 10, "a").w(2, 1, 11, "b").r(3, 2, 12, seen)
        assert_valid(h.check())
    h = H("register")
    h.w(1, 0, 100, "a").w(2, 0, 100, "b").r(3, 10, 20, "b").r(4, 30, 40, "a")
    assert_valid(h.check())
    # equal timestamps count as concurrent
    h = H("register")
    h.w(1, 0, 10, "a").r(2, 10, 20, None)
    assert_valid(h.check())


@test
def test_register_stale_read_after_completed_write_invalid():
    h = H("register")
    h.w(1, 0, 10, "a").w(1, 20, 30, "b").r(2, 40, 50, "a")
    v = h.check()
    assert_invalid(v, "not-linearizable")
    viol = v["violations"][-1]
    assert viol["op"]["f"] == "read" and viol["op"]["value"] == "a", viol
    assert viol["possible_states"] == ["b"], viol
    # the initial value after a completed write is stale too
    h = H("register")
    h.w(1, 0, 10, "a").r(2, 11, 20, None)
    assert_invalid(h.check(), "not-linearizable")


@test
def test_register_read_of_never_written_value_invalid():
    h = H("register")
    h.w(1, 0, 10, "a").r(2, 5, 15, "zzz")
    assert_invalid(h.check(), "unwritten-value")
    # a value whose write failed was never written either
    h = H("register")
    h.w(1, 0, 10, "a", typ="fail").r(2, 20, 30, "a")
    v = h.check()
    assert_invalid(v, "unwritten-value")
    assert "failed" in v["violations"][0]["msg"]
    # a value read before its write was invoked
    h = H("register")
    h.r(2, 0, 10, "a").w(1, 20, 30, "a")
    assert_invalid(h.check(), "future-value")


@test
def test_register_lost_cas_invalid():
    # cas a->b acknowledged, but a later read still sees a
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 30, "a", "b").r(3, 40, 50, "a")
    assert_invalid(h.check(), "not-linearizable")
    # a cas acknowledged whose expected value was already overwritten
    h = H("register")
    h.w(1, 0, 10, "a").w(1, 20, 30, "b").cas(2, 40, 50, "a", "c")
    assert_invalid(h.check(), "not-linearizable")


@test
def test_register_cas_twice_from_same_expected_invalid():
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 40, "a", "b").cas(3, 20, 40, "a", "c")
    assert_invalid(h.check(), "not-linearizable")
    # ... also when nobody reads in between and they are fully concurrent
    h = H("register")
    h.cas(2, 0, 40, None, "b").cas(3, 0, 40, None, "c")
    assert_invalid(h.check(), "not-linearizable")
    # one of them winning is fine
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 40, "a", "b").cas(3, 20, 40, "a", "c", typ="fail")
    assert_valid(h.check())


@test
def test_register_failed_cas_checked_strictly():
    # a cas that fails although the register surely held the expected value
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 30, "a", "b", typ="fail").r(3, 40, 50, "a")
    assert_invalid(h.check(), "not-linearizable")
    assert_valid(h.check(strict_cas_fail=False))
    # ... but an indeterminate write (never read) may explain the failure
    h = H("register")
    h.w(1, 0, 10, "a").w(4, 15, 16, "x", typ="info").cas(2, 20, 30, "a", "b", typ="fail")
    h.w(5, 40, 50, "y").r(3, 60, 70, "y")
    v = h.check()
    assert_valid(v)
    assert v["stats"]["info_collapsed"] == 1, v["stats"]
    # ... but not one invoked after the cas failed
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 30, "a", "b", typ="fail").w(4, 35, 36, "x", typ="info")
    h.w(5, 40, 50, "y").r(3, 60, 70, "y")
    assert_invalid(h.check(), "not-linearizable")


@test
def test_register_info_write_seen_later_valid():
    # info write must be assumed applied: a later read sees it
    h = H("register")
    h.w(1, 0, 10, "a").w(2, 20, 30, "b", typ="info").r(3, 100, 110, "b")
    v = h.check()
    assert_valid(v)
    assert v["stats"]["info_promoted"] == 1
    # ... even one whose completion is missing, applied long after its info
    h = H("register")
    h.w(1, 0, 10, "a").w(2, 20, None, "b", typ=None).r(3, 100, 110, "a").r(3, 200, 210, "b")
    assert_valid(h.check())
    # but once seen it stays applied: reading the older value afterwards is invalid
    h = H("register")
    h.w(1, 0, 10, "a").w(2, 20, 30, "b", typ="info").r(3, 100, 110, "b").r(3, 120, 130, "a")
    assert_invalid(h.check(), "not-linearizable")


@test
def test_register_info_write_never_seen_valid():
    h = H("register")
    h.w(1, 0, 10, "a").w(2, 20, 30, "b", typ="info").r(3, 100, 110, "a").r(3, 120, 130, "a")
    v = h.check()
    assert_valid(v)
    assert v["stats"]["info_dropped"] == 1
    # an info cas whose result is seen
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 30, "a", "b", typ="info").r(3, 100, 110, "b")
    assert_valid(h.check())
    # info cas from a value that was never there cannot explain a read
    h = H("register")
    h.w(1, 0, 10, "a").cas(2, 20, 30, "q", "b", typ="info").r(3, 100, 110, "b")
    assert_invalid(h.check())


@test
def test_register_keys_checked_separately():
    h = H("register")
    h.op(1, "write", 0, 10, inv={"value": "a"}, key="x")
    h.op(2, "read", 20, 30, ret={"value": None}, key="y")
    h.op(2, "read", 40, 50, ret={"value": "a"}, key="x")
    v = h.check()
    assert_valid(v)
    assert v["stats"]["keys"] == 2
    h.op(3, "read", 60, 70, ret={"value": "a"}, key="y")
    v = h.check()
    assert_invalid(v)
    assert v["violations"][0]["key"] == "y", v["violations"]


@test
def test_register_budget_gives_unknown():
    # many concurrent writes and reads: a budget of a few steps cannot finish
    rng = random.Random(5)
    h = H("register")
    for i in range(40):
        h.w(i, 0, 1000, f"v{i}")
    for i in range(40):
        h.r(100 + i, 10, 990, f"v{rng.randrange(40)}")
    v = h.check(max_steps=2000)
    assert v["valid"] == "unknown", v["valid"]
    assert not v["violations"]
    assert "budget" in v["stats"]["unknown_reason"]


@test
def test_history_errors_reported():
    h = H("register")
    h.events.append({"proc": 9, "type": "ok", "f": "read", "time": 5, "value": "a",
                     "workload": "register", "key": "k"})
    h.w(1, 0, 10, "a")
    assert_invalid(h.check(), "history-error")


# ============================================================================================
# brute-force oracle for small histories

def brute_linearizable(items, step, init):
    """items: (t0, t1, required, payload).  Exhaustive: every subset of optional ops,
    every order respecting real time."""
    req = [x for x in items if x[2]]
    opt = [x for x in items if not x[2]]
    for k in range(len(opt) + 1):
        for sub in itertools.combinations(opt, k):
            chosen = req + list(sub)
            for perm in itertools.permutations(chosen):
                ok = True
                for a in range(len(perm)):
                    for b in range(a + 1, len(perm)):
                        if perm[b][1] < perm[a][0]:      # b completed before a was invoked
                            ok = False
                            break
                    if not ok:
                        break
                if not ok:
                    continue
                s = init
                for x in perm:
                    s = step(s, x[3])
                    if s is _ILLEGAL:
                        break
                if s is not _ILLEGAL:
                    return True
    return False


_ILLEGAL = object()


def reg_brute(events):
    """Independent reading of the register contract for the oracle."""
    ops, _, _ = checkers.pair_ops(events)
    items = []
    for o in ops:
        t1 = o.t1
        if o.f == "read" and o.type == "ok":
            items.append((o.t0, t1, True, ("r", o.ret["value"])))
        elif o.f == "write" and o.type in ("ok", "info"):
            items.append((o.t0, t1, o.type == "ok", ("w", o.inv["value"])))
        elif o.f == "cas" and o.type in ("ok", "info"):
            items.append((o.t0, t1, o.type == "ok", ("c", o.inv["expected"], o.inv["value"])))
        elif o.f == "cas" and o.type == "fail":
            items.append((o.t0, t1, True, ("n", o.inv["expected"])))

    def step(s, p):
        if p[0] == "r":
            return s if s == p[1] else _ILLEGAL
        if p[0] == "w":
            return p[1]
        if p[0] == "c":
            return p[2] if s == p[1] else _ILLEGAL
        return s if s != p[1] else _ILLEGAL
    return brute_linearizable(items, step, None)


def random_small_register(rng, n_ops, typ_w=(70, 8, 15, 7), f_w=(45, 35, 20)):
    h = H("register")
    vals = [None]
    t = {}
    for i in range(n_ops):
        p = rng.randrange(3)
        start = t.get(p, 0) + rng.randrange(0, 6)
        end = start + rng.randrange(0, 12)
        t[p] = end + 1
        typ = rng.choices(["ok", "fail", "info", None], typ_w)[0]
        f = rng.choices(["read", "write", "cas"], f_w)[0]
        proc = p * 100 + i        # a fresh proc per op keeps pairing trivial
        if f == "read":
            if typ == "fail":
                typ = "ok"
            h.r(proc, start, end, rng.choice(vals + [None]), typ=typ)
        elif f == "write":
            v = f"v{i}"
            vals.append(v)
            h.w(proc, start, end, v, typ=typ)
        else:
            v = f"v{i}"
            e = rng.choice(vals)
            vals.append(v)
            h.cas(proc, start, end, e, v, typ=typ)
    return h


@test
def test_register_wgl_agrees_with_brute_force():
    rng = random.Random(1234)
    counts = {True: 0, False: 0}
    collapsed = 0
    for case in range(4000):
        # the second half leans on failed cas ops and indeterminate writes
        w = ((70, 8, 15, 7), (45, 35, 20)) if case < 2000 else ((45, 25, 25, 5), (25, 35, 40))
        h = random_small_register(rng, rng.randrange(1, 8), *w)
        want = reg_brute(h.events)
        v = checkers.check("register", h.events)
        got = v["valid"]
        assert got == want, (case, want, got, h.events)
        collapsed += v["stats"]["info_collapsed"] > 0
        counts[want] += 1
    log(f"register oracle: {counts[True]} valid, {counts[False]} invalid histories agree "
        f"({collapsed} with collapsed indeterminate writes)")
    assert collapsed > 300, collapsed
    assert counts[True] > 300 and counts[False] > 300, counts


def mutex_brute(events):
    ops, _, _ = checkers.pair_ops(events)
    items = []
    for o in ops:
        if o.type not in ("ok", "info"):
            continue
        tok = o.ret.get("token") if (o.f == "acquire" and o.type == "ok") else None
        items.append((o.t0, o.t1, o.type == "ok", (o.f, o.proc, tok)))

    def step(s, p):
        owner, last = s
        f, proc, tok = p
        if f == "acquire":
            if owner is not None or (tok is not None and last is not None and tok <= last):
                return _ILLEGAL
            return (proc, last if tok is None else tok)
        if f == "release":
            return (None, last) if owner == proc else _ILLEGAL
        return (None, last) if owner == proc else s
    return brute_linearizable(items, step, (None, None))


@test
def test_mutex_wgl_agrees_with_brute_force():
    rng = random.Random(99)
    counts = {True: 0, False: 0}
    for case in range(2500):
        h = H("mutex")
        t = {}
        tok = 0
        for i in range(rng.randrange(1, 8)):
            p = rng.randrange(3)
            start = t.get(p, 0) + rng.randrange(0, 6)
            end = start + rng.randrange(0, 12)
            t[p] = end + 1
            f = rng.choices(["acquire", "release", "expire"], [45, 40, 15])[0]
            typ = rng.choices(["ok", "fail", "info", None], [75, 8, 12, 5])[0]
            if f == "acquire":
                tok = tok + rng.choice([1, 1, 2, 0, -1])
                h.acq(p, start, end, tok, typ=typ)
            elif f == "release":
                h.rel(p, start, end, typ=typ)
            else:
                h.exp(p, start, end, typ="ok" if typ != None else None)  # noqa: E711
        want = mutex_brute(h.events)
        v = checkers.check("mutex", h.events)
        # the checker also flags duplicate / non-monotone tokens outside the model: compare
        # the search alone
        got = "not-linearizable" not in kinds(v)
        assert got == want, (case, want, v, h.events)
        counts[want] += 1
    log(f"mutex oracle: {counts[True]} valid, {counts[False]} invalid histories agree")
    assert counts[True] > 300 and counts[False] > 300, counts


# ============================================================================================
# register: generated from a simulated linearizable register

def gen_register(seed, procs=5, n_ops=2000, p_info=0.03, p_fail_write=0.01, key="k"):
    """A history of a correct register: each op has a linearization point inside its
    interval; results come from applying the ops in that order.  Returns (events, ops)
    where ops are dicts with t0, t1, lin (None = never applied), f, value..."""
    rng = random.Random(seed)
    threads = list(range(procs))
    proc_of = {t: t for t in threads}
    next_proc = procs
    clock = {t: rng.randrange(0, 50) for t in threads}
    plan = []
    for i in range(n_ops):
        th = rng.choice(threads)
        t0 = clock[th] + rng.randrange(1, 40)
        lin = t0 + rng.randrange(0, 60)
        t1 = lin + rng.randrange(0, 60)
        clock[th] = t1
        f = rng.choices(["read", "write", "cas"], [50, 30, 20])[0]
        outcome = "ok"
        if rng.random() < p_info:
            outcome = rng.choice(["info-applied", "info-lost", "pending-applied",
                                  "pending-lost"])
        elif f == "write" and rng.random() < p_fail_write:
            outcome = "fail"
        plan.append({"th": th, "proc": proc_of[th], "t0": t0, "t1": t1, "lin": lin, "f": f,
                     "outcome": outcome, "i": i})
        if outcome != "ok" and outcome != "fail":
            proc_of[th] = next_proc
            next_proc += 1
            if outcome.endswith("applied"):
                # an indeterminate op may apply late (a retry after the failover)
                plan[-1]["lin"] = lin + rng.randrange(0, 400)
    # apply in linearization order
    state = None
    history_vals = []
    for op in sorted(plan, key=lambda o: (o["lin"], o["i"])):
        applies = op["outcome"] in ("ok", "info-applied", "pending-applied")
        if op["f"] == "read":
            op["value"] = state
        elif op["f"] == "write":
            op["value"] = f"w{op['i']}"
            if applies:
                state = op["value"]
                history_vals.append(state)
        else:
            op["value"] = f"c{op['i']}"
            if rng.random() < 0.6 or not history_vals:
                op["expected"] = state
            else:
                op["expected"] = rng.choice(history_vals[-5:])
            if applies:
                if state == op["expected"]:
                    state = op["value"]
                    history_vals.append(state)
                elif op["outcome"] == "ok":
                    op["outcome"] = "fail"
    events = []
    for op in plan:
        base = {"proc": op["proc"], "f": op["f"], "workload": "register", "key": key}
        inv = dict(base, type="invoke", time=op["t0"])
        if op["f"] in ("write", "cas"):
            inv["value"] = op["value"]
        if op["f"] == "cas":
            inv["expected"] = op["expected"]
        events.append(inv)
        oc = op["outcome"]
        if oc.startswith("pending"):
            continue
        typ = {"ok": "ok", "fail": "fail"}.get(oc, "info")
        done = dict(base, type=typ, time=op["t1"])
        if op["f"] == "read":
            if typ == "ok":
                done["value"] = op["value"]
            elif typ == "fail":
                done["type"] = "ok"
                done["value"] = op["value"]
        events.append(done)
    return events, plan


@test
def test_register_generated_histories_valid():
    t_total, n_total = 0.0, 0
    for seed in range(40):
        events, _ = gen_register(seed, procs=rng_procs(seed), n_ops=300, p_info=0.05)
        t = time.monotonic()
        v = checkers.check("register", events)
        t_total += time.monotonic() - t
        n_total += v["ops"]
        assert_valid(v)
    log(f"40 generated register histories, {n_total} ops, {t_total:.2f}s "
        f"({n_total / t_total:.0f} ops/s)")


def rng_procs(seed):
    return 2 + seed % 8


def _ok_ops(events):
    ops, _, _ = checkers.pair_ops(events)
    return ops


@test
def test_register_mutated_stale_read_invalid():
    """Designed mutation: a read returns the value of a write w1 that was overwritten by a
    write w2, with w1 -> w2 -> read in real time.  Values are unique, so no linearization
    can produce it."""
    done = 0
    for seed in range(60):
        events, _ = gen_register(seed, procs=4, n_ops=200, p_info=0.03)
        ops = _ok_ops(events)
        writes = [o for o in ops if o.f in ("write", "cas") and o.type == "ok"]
        reads = [o for o in ops if o.f == "read" and o.type == "ok"]
        rng = random.Random(seed)
        rng.shuffle(reads)
        target = None
        for r in reads:
            w2s = [w for w in writes if w.t1 < r.t0]
            for w2 in w2s:
                w1s = [w for w in writes if w.t1 < w2.t0 and
                       w.inv["value"] != r.ret["value"]]
                if w1s:
                    target = (r, rng.choice(w1s))
                    break
            if target:
                break
        if not target:
            continue
        r, w1 = target
        r.ret["value"] = w1.inv["value"]
        v = checkers.check("register", events)
        assert_invalid(v, "not-linearizable")
        done += 1
    assert done >= 50, done


@test
def test_register_mutated_future_read_invalid():
    """Designed mutation: a read returns the value of a write invoked after it completed."""
    done = 0
    for seed in range(60):
        events, _ = gen_register(seed + 1000, procs=4, n_ops=200)
        ops = _ok_ops(events)
        writes = [o for o in ops if o.f == "write" and o.type == "ok"]
        reads = [o for o in ops if o.f == "read" and o.type == "ok"]
        rng = random.Random(seed)
        r = rng.choice(reads)
        later = [w for w in writes if w.t0 > r.t1]
        if not later:
            continue
        r.ret["value"] = rng.choice(later).inv["value"]
        v = checkers.check("register", events)
        assert_invalid(v, "future-value")
        assert "not-linearizable" in kinds(v), kinds(v)
        done += 1
    assert done >= 50, done


@test
def test_register_random_read_mutation_mostly_invalid():
    """Any read changed to another written value: usually (not always) impossible; the
    checker's answer is confirmed by the brute-force oracle on a small window around it."""
    invalid = 0
    n = 60
    for seed in range(n):
        events, _ = gen_register(seed + 2000, procs=3, n_ops=120, p_info=0.0)
        ops = _ok_ops(events)
        rng = random.Random(seed)
        reads = [o for o in ops if o.f == "read" and o.type == "ok"]
        vals = [o.inv["value"] for o in ops if o.f in ("write", "cas")]
        r = rng.choice(reads)
        r.ret["value"] = rng.choice([x for x in vals if x != r.ret["value"]])
        if checkers.check("register", events)["valid"] is False:
            invalid += 1
    log(f"random read mutation: {invalid}/{n} invalid")
    assert invalid >= n * 0.6, invalid


@test
def test_register_performance_5x2000():
    """5 procs x 2000 ops on one key (printed, not asserted beyond a generous bound)."""
    rates = []
    for seed, p_info in ((7, 0.0), (8, 0.03), (9, 0.10)):
        events, _ = gen_register(seed, procs=5, n_ops=10000, p_info=p_info)
        t = time.monotonic()
        v = checkers.check("register", events, budget_s=120)
        dt = time.monotonic() - t
        assert_valid(v)
        rates.append(v["ops"] / dt)
        log(f"register 5 procs x 2000 ops, info {p_info:.0%}: {v['ops']} ops in {dt:.2f}s = "
            f"{v['ops'] / dt:.0f} ops/s; steps {v['stats']['search_steps']}, "
            f"configs {v['stats']['search_configs']}, promoted "
            f"{v['stats']['info_promoted']}, dropped {v['stats']['info_dropped']}")
        # the same history with one designed stale read must be found quickly too
    events, _ = gen_register(11, procs=10, n_ops=10000, p_info=0.03)
    t = time.monotonic()
    v = checkers.check("register", events, budget_s=120)
    dt = time.monotonic() - t
    assert_valid(v)
    log(f"register 10 procs x 1000 ops: {v['ops']} ops in {dt:.2f}s = {v['ops'] / dt:.0f} "
        f"ops/s; steps {v['stats']['search_steps']}")


@test
def test_register_performance_invalid_found():
    events, _ = gen_register(21, procs=5, n_ops=10000, p_info=0.03)
    ops = _ok_ops(events)
    writes = [o for o in ops if o.f == "write" and o.type == "ok"]
    reads = [o for o in ops if o.f == "read" and o.type == "ok"]
    r = reads[len(reads) * 3 // 4]
    old = [w for w in writes if w.t1 < r.t0 - 2000]
    r.ret["value"] = old[len(old) // 2].inv["value"]
    t = time.monotonic()
    v = checkers.check("register", events, budget_s=120)
    dt = time.monotonic() - t
    assert_invalid(v, "not-linearizable")
    viol = [x for x in v["violations"] if x["kind"] == "not-linearizable"][0]
    assert viol["op"]["invoke"] == r.t0 and viol["op"]["value"] == r.ret["value"], viol["op"]
    log(f"register 10k ops with one stale read: found in {dt:.2f}s, "
        f"{len(viol['concurrent'])} concurrent ops listed")


# ============================================================================================
# mutex

@test
def test_mutex_overlapping_acquires_invalid():
    h = H("mutex")
    h.acq(1, 0, 10, 5).acq(2, 20, 30, 7).rel(1, 40, 50).rel(2, 60, 70)
    v = h.check()
    assert_invalid(v, "not-linearizable")
    assert v["violations"][0]["op"]["f"] == "acquire", v["violations"]


@test
def test_mutex_clean_handoffs_valid():
    h = H("mutex")
    # 2 waits while 1 holds; released, granted to 2; 3 times out (fail)
    h.acq(1, 0, 10, 5).acq(2, 5, 40, 9).rel(1, 20, 30).acq(3, 25, 90, typ="fail")
    h.rel(2, 50, 60).acq(3, 100, 110, 12).rel(3, 120, 130)
    assert_valid(h.check())


@test
def test_mutex_expire_in_between_valid():
    h = H("mutex")
    # 1 holds; its last acked keepalive was sent at 15; the loss is noticed at 80
    h.acq(1, 0, 10, 5).exp(1, 15, 80).acq(2, 20, 60, 7).rel(2, 90, 100)
    assert_valid(h.check())
    # the expire window must cover the new grant: noticed before 2 was invoked is fine,
    # but an expire that began only after 2's grant completed does not help
    h = H("mutex")
    h.acq(1, 0, 10, 5).acq(2, 20, 30, 7).exp(1, 40, 80).rel(2, 90, 100)
    assert_invalid(h.check(), "not-linearizable")
    # the expire of another proc does not free the lock
    h = H("mutex")
    h.acq(1, 0, 10, 5).exp(3, 15, 80).acq(2, 20, 60, 7)
    assert_invalid(h.check(), "not-linearizable")


@test
def test_mutex_release_by_non_owner_invalid():
    h = H("mutex")
    h.acq(1, 0, 10, 5).rel(2, 20, 30)
    assert_invalid(h.check(), "not-linearizable")
    # a failed release by a non-owner is fine
    h = H("mutex")
    h.acq(1, 0, 10, 5).rel(2, 20, 30, typ="fail").rel(1, 40, 50)
    assert_valid(h.check())
    # releasing twice
    h = H("mutex")
    h.acq(1, 0, 10, 5).rel(1, 20, 30).rel(1, 40, 50)
    assert_invalid(h.check(), "not-linearizable")


@test
def test_mutex_duplicate_or_decreasing_tokens_invalid():
    h = H("mutex")
    h.acq(1, 0, 10, 5).rel(1, 20, 30).acq(2, 40, 50, 5).rel(2, 60, 70)
    assert_invalid(h.check(), "duplicate-token")
    h = H("mutex")
    h.acq(1, 0, 10, 9).rel(1, 20, 30).acq(2, 40, 50, 6).rel(2, 60, 70)
    v = h.check()
    assert_invalid(v, "token-order")
    assert "not-linearizable" in kinds(v)     # the model carries the last token as well
    # the same session asking again gets its existing token: one grant, not a duplicate
    h = H("mutex")
    h.op(1, "acquire", 0, 10, inv={"session": 77}, ret={"token": 5, "session": 77})
    h.op(1, "release", 20, 30, "info", inv={"session": 77})
    h.op(2, "acquire", 40, 50, inv={"session": 77}, ret={"token": 5, "session": 77})
    v = h.check()
    assert "duplicate-token" not in kinds(v) and "token-order" not in kinds(v), kinds(v)
    # ... but another session cannot get it
    h = H("mutex")
    h.op(1, "acquire", 0, 10, inv={"session": 77}, ret={"token": 5, "session": 77})
    h.op(1, "release", 20, 30, "ok", inv={"session": 77})
    h.op(2, "acquire", 40, 50, inv={"session": 78}, ret={"token": 5, "session": 78})
    assert_invalid(h.check(), "duplicate-token")
    # concurrent acquires: the grant order decides, not the invoke order
    h = H("mutex")
    h.acq(1, 0, 50, 9).acq(2, 1, 10, 6).rel(2, 20, 30).rel(1, 60, 70)
    assert_valid(h.check())


@test
def test_mutex_info_acquire_then_others_valid_if_consistent():
    # 1's acquire is indeterminate; it never took effect: 2 and 3 acquire normally
    h = H("mutex")
    h.acq(1, 0, 10, typ="info").acq(2, 20, 30, 7).rel(2, 40, 50).acq(3, 60, 70, 9)
    h.rel(3, 80, 90)
    assert_valid(h.check())
    # it took effect and 1's session expired later
    h = H("mutex")
    h.acq(1, 0, None, typ=None).exp(1, 5, 200).acq(2, 20, 150, 7).rel(2, 160, 170)
    assert_valid(h.check())
    # if it took effect nothing freed it, and 2 cannot have acquired when 1 held it; but
    # it may just never have happened: consistent.  Yet a release by 1 (ok) requires it:
    h = H("mutex")
    h.acq(1, 0, 10, typ="info").rel(1, 20, 30).acq(2, 40, 50, 7)
    assert_valid(h.check())
    h = H("mutex")
    h.acq(1, 0, 10, typ="info").acq(2, 20, 30, 7).rel(1, 40, 50)
    assert_invalid(h.check(), "not-linearizable")


@test
def test_mutex_info_release_accounted():
    h = H("mutex")
    h.acq(1, 0, 10, 5).rel(1, 20, 30, typ="info").acq(2, 40, 50, 7)
    assert_valid(h.check())
    # an info release that cannot have happened before the next grant
    h = H("mutex")
    h.acq(1, 0, 10, 5).acq(2, 40, 50, 7).rel(1, 60, 70, typ="info")
    assert_invalid(h.check(), "not-linearizable")


def gen_mutex(seed, n_epochs=300, procs=5, p_expire=0.1, p_info=0.05, key="lock"):
    """A correct lock service: grants in sequence, tokens increase; holders release, or
    pause until their session expires, or lose the acquire's answer (info) and are
    abandoned (their session then expires).  Other acquires time out (fail)."""
    rng = random.Random(seed)
    h = H("mutex", key)
    free_at = {p: 0 for p in range(procs)}        # thread -> time it can invoke again
    proc = {p: p for p in range(procs)}
    nxt = procs
    t = 100
    tok = 10
    for _ in range(n_epochs):
        th = min(free_at, key=lambda p: (free_at[p], rng.random()))
        g = max(t, free_at[th]) + rng.randrange(1, 30)          # grant (linearization)
        inv = rng.randrange(free_at[th], g + 1)
        tok += rng.randrange(1, 4)
        p = proc[th]
        # someone else times out meanwhile
        if rng.random() < 0.2:
            others = [q for q in free_at if q != th and free_at[q] < g]
            if others:
                q = rng.choice(others)
                a = rng.randrange(free_at[q], g + 1)
                h.acq(proc[q], a, g + 40, typ="fail")
                free_at[q] = g + 41
        x = rng.random()
        if x < p_info:
            # the grant happened, the answer was lost; the session expires later
            h.acq(p, inv, g + rng.randrange(1, 50), typ=rng.choice(["info", None]))
            k = rng.randrange(inv, g + 20)                    # last acked keepalive sent
            exp_at = g + rng.randrange(30, 100)
            h.exp(p, k, exp_at + rng.randrange(0, 50))
            t = exp_at
            free_at[th] = exp_at + 60
            proc[th] = nxt
            nxt += 1
        elif x < p_info + p_expire:
            # granted, then paused: the session expires; a release after waking fails
            ok_at = g + rng.randrange(1, 10)
            h.acq(p, inv, ok_at, tok)
            k = rng.randrange(ok_at - 20, ok_at + 20)
            exp_at = ok_at + rng.randrange(30, 100)
            det = exp_at + rng.randrange(0, 80)
            h.exp(p, k, det)
            if rng.random() < 0.5:
                wake = exp_at + rng.randrange(1, 30)
                h.rel(p, wake, wake + 5, typ="fail")
            t = exp_at
            free_at[th] = det + 100
            proc[th] = nxt
            nxt += 1
        else:
            ok_at = g + rng.randrange(1, 10)
            h.acq(p, inv, ok_at, tok)
            r_inv = ok_at + rng.randrange(1, 40)
            r_lin = r_inv + rng.randrange(0, 10)
            r_ok = r_lin + rng.randrange(0, 10)
            if rng.random() < 0.03:
                h.rel(p, r_inv, r_ok, typ="info")       # applied; answer lost
                proc[th] = nxt
                nxt += 1
            else:
                h.rel(p, r_inv, r_ok)
            t = r_lin
            free_at[th] = r_ok + 1
    return h


@test
def test_mutex_generated_histories_valid():
    total, dt = 0, 0.0
    for seed in range(30):
        h = gen_mutex(seed, n_epochs=200, procs=2 + seed % 6)
        t = time.monotonic()
        v = checkers.check("mutex", h.events)
        dt += time.monotonic() - t
        total += v["ops"]
        assert_valid(v)
    log(f"30 generated mutex histories: {total} ops in {dt:.2f}s ({total / dt:.0f} ops/s)")


@test
def test_mutex_generated_mutations_invalid():
    # designed mutation 1: drop one clean release -> the next grant overlaps its holder
    # designed mutation 2: swap the tokens of two consecutive ok acquires
    n1 = n2 = 0
    for seed in range(30):
        h = gen_mutex(seed + 500, n_epochs=100)
        evs = h.events
        ops = _ok_ops(evs)
        rels = [o for o in ops if o.f == "release" and o.type == "ok"]
        acqs = sorted((o for o in ops if o.f == "acquire" and o.type == "ok"),
                      key=lambda o: o.t0)
        rng = random.Random(seed)
        expired = {o.proc for o in ops if o.f == "expire"}
        # a release whose proc's session never expires, with an ok acquire after it
        cand = [r for r in rels if r.proc not in expired and
                any(a.t0 > r.t1 for a in acqs)]
        if cand:
            r = rng.choice(cand)
            mutated = [e for e in evs if e is not r.inv and e is not r.ret]
            v = checkers.check("mutex", mutated)
            assert_invalid(v, "not-linearizable")
            n1 += 1
        a = rng.choice(acqs[:-5])
        b = min((x for x in acqs if x.t0 > a.t1), key=lambda x: x.t0)
        a.ret["token"], b.ret["token"] = b.ret["token"], a.ret["token"]
        v = checkers.check("mutex", evs)
        assert_invalid(v, "token-order")
        n2 += 1
    assert n1 >= 20 and n2 >= 20, (n1, n2)


@test
def test_mutex_performance():
    h = gen_mutex(77, n_epochs=3000, procs=10)
    t = time.monotonic()
    v = checkers.check("mutex", h.events)
    dt = time.monotonic() - t
    assert_valid(v)
    log(f"mutex 10 procs, {v['ops']} ops: {dt:.2f}s = {v['ops'] / dt:.0f} ops/s; "
        f"steps {v['stats']['search_steps']}")


# ============================================================================================
# fenced-counter / control

def counter_history(workload, iters):
    """iters: list of (proc, token, read_value, write_value, write_type, rev) done one after
    another (acquire, read, write, release)."""
    h = H(workload, key=None)
    t = 0
    for proc, tok, rv, wv, wtyp, rev in iters:
        h.op(proc, "acquire", t, t + 1, ret={"token": tok}, key="lock")
        h.op(proc, "read", t + 2, t + 3, ret={"value": rv}, key="ctr")
        inv = {"value": wv}
        if workload == "fenced-counter":
            inv["token"] = tok
        h.op(proc, "write", t + 4, t + 5, wtyp, inv=inv,
             ret={"rev": rev} if wtyp == "ok" else {}, key="ctr")
        if wtyp != "info":
            h.op(proc, "release", t + 6, t + 7, key="lock")
        t += 10
    return h


@test
def test_counter_clean_history_valid():
    for wl in ("fenced-counter", "control"):
        h = counter_history(wl, [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "ok", 14),
                                 (1, 16, 2, 3, "ok", 17)])
        v = h.check(final=3)
        assert_valid(v)
        assert v["anomalies"] == 0
        assert v["stats"]["ok_writes"] == 3
        # the final line in the history works as well
        h.events.append({"type": "final", "f": "final", "value": 3, "time": 999})
        assert_valid(h.check())


@test
def test_counter_lost_update():
    # 1 and 2 both read 1 and both write 2: one increment lost
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "ok", 14), (3, 16, 1, 2, "ok", 17)]
    h = counter_history("fenced-counter", iters)
    v = h.check(final=2)
    assert_invalid(v, "lost-update")
    h = counter_history("control", iters)
    v = h.check(final=2)
    assert v["valid"] is True, v
    assert v["anomalies"] == 1, v
    assert v["stats"]["lost_increments"] == 1
    assert v["stats"]["anomaly_examples"][0]["kind"] == "lost-update"


@test
def test_counter_stale_overwrite_counted_in_control():
    # proc 9 acquires (token 12), reads 1, pauses, its session expires; others go on to 4;
    # 9 wakes and writes 2: 3 increments lost, one anomaly; 6 then reads 2 and writes 3
    def build(wl):
        h = counter_history(wl, [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "ok", 14),
                                 (3, 16, 2, 3, "ok", 17), (4, 19, 3, 4, "ok", 20)])
        h.op(9, "acquire", 7, 8, ret={"token": 12}, key="lock")
        h.op(9, "read", 8, 9, ret={"value": 1}, key="ctr")
        h.op(9, "expire", 8, 10, key="lock")
        inv = {"value": 2, "token": 12} if wl == "fenced-counter" else {"value": 2}
        h.op(9, "write", 9, 45, inv=inv, ret={"rev": 22}, key="ctr")
        h.op(6, "acquire", 50, 51, ret={"token": 24}, key="lock")
        h.op(6, "read", 52, 53, ret={"value": 2}, key="ctr")
        inv = {"value": 3, "token": 24} if wl == "fenced-counter" else {"value": 3}
        h.op(6, "write", 54, 55, inv=inv, ret={"rev": 25}, key="ctr")
        return h
    v = build("control").check(final=3)
    assert v["anomalies"] == 1 and v["valid"] is True, v
    assert v["stats"]["lost_increments"] == 3, v["stats"]
    v = build("fenced-counter").check(final=3)
    assert_invalid(v, "lost-update")
    assert "fence-order" in kinds(v), kinds(v)      # token 12 applied after token 19


@test
def test_counter_final_mismatch_violation():
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "ok", 14)]
    for final in (1, 3, 0):
        v = counter_history("fenced-counter", iters).check(final=final)
        assert_invalid(v, "final-mismatch")
        v = counter_history("control", iters).check(final=final)
        assert v["anomalies"] == 1, v
    assert_valid(counter_history("fenced-counter", iters).check(final=2))


@test
def test_counter_info_writes_accounted():
    # an info write that applied (the next read saw it)
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "info", None), (3, 16, 2, 3, "ok", 17)]
    v = counter_history("fenced-counter", iters).check(final=3)
    assert_valid(v)
    assert v["stats"]["info_writes_applied_min"] == 1
    # an info write that did not apply
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "info", None), (3, 16, 1, 2, "ok", 17)]
    assert_valid(counter_history("fenced-counter", iters).check(final=2))
    # the last write was info: final may or may not include it
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "info", None)]
    assert_valid(counter_history("fenced-counter", iters).check(final=1))
    assert_valid(counter_history("fenced-counter", iters).check(final=2))
    v = counter_history("fenced-counter", iters).check(final=3)
    assert_invalid(v, "final-count")
    # a jump that no info write explains
    iters = [(1, 10, None, 1, "ok", 11), (3, 16, 2, 3, "ok", 17)]
    v = counter_history("fenced-counter", iters).check(final=3)
    assert_invalid(v, "phantom-increment")
    assert "unwritten-value" in kinds(v)


@test
def test_counter_regrant_to_same_session_valid():
    # release info (not applied); the same session, as a new proc, acquires again and gets
    # its token back, then writes again under it
    h = H("fenced-counter", key=None)
    h.op(1, "acquire", 0, 1, inv={"session": 7}, ret={"token": 10, "session": 7})
    h.op(1, "read", 2, 3, ret={"value": 0})
    h.op(1, "write", 4, 5, inv={"value": 1, "token": 10}, ret={"rev": 11})
    h.op(1, "release", 6, 7, "info", inv={"session": 7})
    h.op(1001, "acquire", 8, 9, inv={"session": 7}, ret={"token": 10, "session": 7})
    h.op(1001, "read", 10, 11, ret={"value": 1})
    h.op(1001, "write", 12, 13, inv={"value": 2, "token": 10}, ret={"rev": 12})
    h.op(1001, "release", 14, 15, inv={"session": 7})
    h.op(2, "acquire", 16, 17, inv={"session": 8}, ret={"token": 14, "session": 8})
    h.op(2, "read", 18, 19, ret={"value": 2})
    h.op(2, "write", 20, 21, inv={"value": 3, "token": 14}, ret={"rev": 15})
    assert_valid(h.check(final=3))
    # a write under an older token after a newer one is still caught
    h.op(3, "write", 22, 23, inv={"value": 4, "token": 10}, ret={"rev": 16})
    assert_invalid(h.check(final=4), "fence-order")


@test
def test_counter_revision_and_read_checks():
    # duplicate revision
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, 1, 2, "ok", 11)]
    assert_invalid(counter_history("fenced-counter", iters).check(final=2), "duplicate-rev")
    # a revision smaller than one acknowledged before the write was sent
    iters = [(1, 10, None, 1, "ok", 15), (2, 13, 1, 2, "ok", 14)]
    v = counter_history("control", iters).check(final=2)
    assert_invalid(v, "revision-order")
    # a stale read in the fenced counter (0 after 1 was acknowledged)
    iters = [(1, 10, None, 1, "ok", 11), (2, 13, None, 1, "fail", None)]
    v = counter_history("fenced-counter", iters).check(final=1)
    assert_invalid(v, "stale-read")
    # a write applied at a revision before its own grant
    iters = [(1, 10, None, 1, "ok", 9)]
    assert_invalid(counter_history("fenced-counter", iters).check(final=1),
                   "write-before-grant")


def gen_counter(seed, workload, n_iters=400, procs=5, p_pause=0.1, p_info=0.05):
    """A correct lock service and KV store under pauses.  A holder that pauses between its
    read and its write loses its lock (expiry); later it wakes and writes: the fenced write
    is rejected (fail), the control write applies (a lost update)."""
    rng = random.Random(seed)
    fenced = workload == "fenced-counter"
    h = H(workload, key=None)
    t = 0
    rev = 100
    counter = 0
    cur_tok = None
    pending_paused = []       # (wake_time, proc, token, value)
    next_proc = procs + 1
    for i in range(n_iters):
        p = next_proc
        next_proc += 1
        t += rng.randrange(1, 20)
        # paused writers that wake now
        for item in [x for x in pending_paused if x[0] <= t]:
            pending_paused.remove(item)
            _, pp, ptok, pval, pinv = item
            inv = {"value": pval}
            if fenced:
                inv["token"] = ptok
                h.op(pp, "write", pinv, t, "fail", inv=inv, key="ctr")
            else:
                rev += 1
                counter = pval
                h.op(pp, "write", pinv, t, "ok", inv=inv, ret={"rev": rev}, key="ctr")
            t += 1
        rev += 1
        tok = cur_tok = rev
        h.op(p, "acquire", t, t + 3, ret={"token": tok}, key="lock")
        h.op(p, "read", t + 4, t + 6, ret={"value": counter or None}, key="ctr")
        val = counter + 1
        inv = {"value": val}
        if fenced:
            inv["token"] = tok
        x = rng.random()
        if x < p_pause:
            pending_paused.append((t + rng.randrange(50, 300), p, tok, val, t + 7))
            h.op(p, "expire", t + 3, t + 60, key="lock")
            t += 60
            continue
        if x < p_pause + p_info:
            if rng.random() < 0.5:
                rev += 1
                counter = val
            h.op(p, "write", t + 7, t + 20, "info", inv=inv, key="ctr")
            t += 20
            continue
        rev += 1
        counter = val
        h.op(p, "write", t + 7, t + 9, "ok", inv=inv, ret={"rev": rev}, key="ctr")
        h.op(p, "release", t + 10, t + 12, key="lock")
        t += 12
    for _, pp, ptok, pval, pinv in pending_paused:
        h.op(pp, "write", pinv, t + 1000, "fail" if fenced else "info",
             inv=dict({"value": pval}, **({"token": ptok} if fenced else {})), key="ctr")
    h.events.append({"type": "final", "f": "final", "value": counter, "time": t + 2000,
                     "workload": workload})
    return h


@test
def test_counter_generated_fenced_valid_control_anomalous():
    total, dt = 0, 0.0
    anomalies = 0
    for seed in range(30):
        h = gen_counter(seed, "fenced-counter")
        t = time.monotonic()
        v = checkers.check("fenced-counter", h.events)
        dt += time.monotonic() - t
        total += v["ops"]
        assert_valid(v)
        h = gen_counter(seed, "control")
        v = checkers.check("control", h.events)
        assert v["valid"] is True, v
        assert v["anomalies"] > 0, v["stats"]
        anomalies += v["anomalies"]
    log(f"counter: 30 fenced histories valid ({total / dt:.0f} ops/s); control anomalies "
        f"{anomalies} in 30 runs")
    # without pauses, control shows none
    h = gen_counter(1, "control", p_pause=0.0)
    v = checkers.check("control", h.events)
    assert v["anomalies"] == 0, v


@test
def test_counter_generated_fenced_mutations_invalid():
    # designed mutation: one ok write's value repeated (applied twice / lost update)
    for seed in range(20):
        h = gen_counter(seed + 300, "fenced-counter", p_info=0.0, p_pause=0.0)
        ops = _ok_ops(h.events)
        ws = sorted((o for o in ops if o.f == "write" and o.type == "ok"),
                    key=lambda o: o.ret["rev"])
        i = random.Random(seed).randrange(1, len(ws))
        ws[i].inv["value"] = ws[i - 1].inv["value"]
        v = checkers.check("fenced-counter", h.events)
        assert_invalid(v, "lost-update")


# ============================================================================================
# files, splitting, CLI

def _write(events, path):
    with open(path, "w") as fh:
        for e in events:
            fh.write(json.dumps(e) + "\n")


@test
def test_check_file_splits_workloads_and_keys():
    events = []
    events += gen_register(3, procs=3, n_ops=100, key="a")[0]
    events += gen_register(4, procs=3, n_ops=100, key="b")[0]
    events += gen_mutex(5, n_epochs=50, key="L1").events
    events += gen_mutex(6, n_epochs=50, key="L2").events
    events += gen_counter(7, "fenced-counter").events
    events += gen_counter(7, "control").events
    random.Random(1).shuffle(events)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.jsonl")
        _write(events, path)
        vs = checkers.check_file(path)
        got = sorted((v["workload"], v.get("key")) for v in vs)
        assert got == [("control", None), ("fenced-counter", None), ("mutex", "L1"),
                       ("mutex", "L2"), ("register", "a"), ("register", "b")], got
        for v in vs:
            assert v["valid"] is True, v
        assert [v for v in vs if v["workload"] == "control"][0]["anomalies"] > 0
        assert [v["stats"]["final"] for v in vs if v["workload"] == "fenced-counter"][0] \
            is not None
        # CLI: exit 0, one JSON line per verdict
        r = subprocess.run([sys.executable, os.path.join(HERE, "checkers.py"), path],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        assert len(lines) == 6, r.stdout[:500]
        # --workload filters
        r = subprocess.run([sys.executable, os.path.join(HERE, "checkers.py"), path,
                            "--workload", "mutex"], capture_output=True, text=True)
        assert r.returncode == 0 and len(r.stdout.splitlines()) == 2, r.stdout[:300]
        # a violation makes the CLI exit 1
        bad = H("register", "a")
        bad.w(900, 10**9, 10**9 + 10, "zz").r(901, 10**9 + 20, 10**9 + 30, "nope")
        _write(events + bad.events, path)
        r = subprocess.run([sys.executable, os.path.join(HERE, "checkers.py"), path],
                           capture_output=True, text=True)
        assert r.returncode == 1, r.stdout[:500]
        # --final overrides for counters
        c = counter_history("fenced-counter", [(1, 10, None, 1, "ok", 11)])
        _write(c.events, path)
        r = subprocess.run([sys.executable, os.path.join(HERE, "checkers.py"), path,
                            "--final", "5"], capture_output=True, text=True)
        assert r.returncode == 1 and "final-mismatch" in r.stdout, r.stdout
        r = subprocess.run([sys.executable, os.path.join(HERE, "checkers.py"), path,
                            "--final", "1"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout


@test
def test_load_history_sorts_and_rejects_garbage():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.jsonl")
        with open(path, "w") as fh:
            fh.write('{"proc":1,"type":"ok","f":"read","time":20,"value":null}\n\n')
            fh.write('{"proc":1,"type":"invoke","f":"read","time":10}\n')
        evs = checkers.load_history(path)
        assert [e["time"] for e in evs] == [10, 20]
        assert checkers.check("register", evs)["valid"] is True
        with open(path, "a") as fh:
            fh.write("not json\n")
        try:
            checkers.load_history(path)
        except checkers.HistoryError as exc:
            assert ":4:" in str(exc), exc
        else:
            raise AssertionError("garbage accepted")


# the rw and watch checkers' tests live in their own file; they run from here too
import test_checkers_rw_watch as _rw_watch  # noqa: E402

TESTS += [getattr(_rw_watch, n) for n in dir(_rw_watch) if n.startswith("test_")]
import test_checkers_prims as _prims  # noqa: E402

TESTS += [getattr(_prims, n) for n in dir(_prims) if n.startswith("test_")]
import test_checkers_deadlock as _deadlock  # noqa: E402

TESTS += [getattr(_deadlock, n) for n in dir(_deadlock) if n.startswith("test_")]
import test_checkers_multi as _multi  # noqa: E402

TESTS += [getattr(_multi, n) for n in dir(_multi) if n.startswith("test_")]
import test_checkers_latch as _latch  # noqa: E402

TESTS += [getattr(_latch, n) for n in dir(_latch) if n.startswith("test_")]


# ============================================================================================

def main():
    global VERBOSE
    args = sys.argv[1:]
    if "-v" in args:
        VERBOSE = True
        args.remove("-v")
    passed = failed = 0
    for fn in TESTS:
        if args and not any(a in fn.__name__ for a in args):
            continue
        t = time.monotonic()
        try:
            fn()
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            tb = traceback.format_exc()
            print(tb if len(tb) < 6000 else tb[:3000] + "\n...\n" + tb[-2500:])
        else:
            passed += 1
            print(f"ok   {fn.__name__} ({time.monotonic() - t:.2f}s)", flush=True)
    print(f"tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
