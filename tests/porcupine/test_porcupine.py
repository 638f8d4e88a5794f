#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the second judge (tests/porcupine, porcupine-check) against the first
(tests/torture/checkers.py), and of the first against a referee.

Run:  python3 tests/porcupine/test_porcupine.py [--bin build/porcupine/porcupine-check] [-v]
      [name-substring ...]
Last line: "tests: N passed, N failed"; exit status 1 if any failed. Without --bin the checker
is built by scripts/porcupine.sh into build/porcupine.

- The judge bites: the negative controls of the torture suite are flagged by Porcupine as by
  the own checkers: the unfenced control counter, whose paused holders lose updates (judged by
  the mutex-with-fencing model it must fail), and a stale read (a register read that returns
  a value overwritten before it began). Their clean twins pass both judges.
- A check of the checker against a referee: Porcupine ships 102 labelled Jepsen etcd
  histories (test_data/jepsen/etcd_NNN.log in its module; etcd_095 is empty: that cluster
  never started). Translated by porcupine-check -from-jepsen-etcd, each is judged by both,
  and both verdicts must equal the label. All 101 are used: each checks in under a second
  with either judge (about 150 ops, 5 procs), about 3 s in all.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "torture"))
import checkers  # noqa: E402
import test_checkers as tc  # noqa: E402 - its history generators (correct services)

TESTS = []
BIN = None
TMP = None
VERBOSE = False

# The labels of Porcupine's own tests (porcupine_test.go, TestEtcdJepsenNNN): these are the
# linearizable histories; every other one of 000..102 but 095 is not.
JEPSEN_LINEARIZABLE = {2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87,
                       92, 98, 100, 101, 102}
JEPSEN_EMPTY = {95}


def test(fn):
    TESTS.append(fn)
    return fn


def log(*a):
    if VERBOSE:
        print("   ", *a, flush=True)


def write(events, name):
    path = os.path.join(TMP, name + ".jsonl")
    with open(path, "w") as f:
        for e in events:
            f.write(json.dumps({k: v for k, v in e.items() if k != "_line"}) + "\n")
    return path


def porcupine(path, expect_illegal=""):
    """Porcupine's verdicts of a history file: {workload: result}."""
    out = os.path.join(TMP, os.path.basename(path) + ".d")
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([BIN, "-out", out, "-timeout", "60s", "-expect-illegal", expect_illegal,
                        path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=600)
    assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)
    with open(os.path.join(out, "porcupine.json")) as f:
        vs = json.load(f)["verdicts"]
    res = {v["workload"]: v["result"] for v in vs}
    if any(x == "illegal" for x in res.values()):
        assert r.returncode == 1 or expect_illegal, r.stdout
        assert all(v.get("html") for v in vs if v["result"] == "illegal"), vs
    return res


def own(events, workload):
    """The own checkers' verdict: (valid, anomalies)."""
    v = checkers.check(workload, [dict(e) for e in events])
    return v["valid"], v.get("anomalies", 0)


def control_history(seed, p_pause=0.1):
    """The torture worker's control workload as test_checkers simulates it (a correct lock
    service, unfenced writes by paused holders apply), with the token of its grant on every
    write as the worker records it."""
    h = tc.gen_counter(seed, "control", p_pause=p_pause)
    tok = {}
    for e in h.events:
        if e.get("f") == "acquire" and e["type"] == "ok":
            tok[e["proc"]] = e["token"]
    for e in h.events:
        if e.get("f") == "write":
            e["token"] = tok[e["proc"]]
    return h.events


# ---- the negative controls ----

@test
def test_control_lost_updates_flagged_by_both():
    n = 0
    for seed in range(20):
        evs = control_history(seed)
        valid, lost = own(evs, "control")
        assert valid is True and lost > 0, (seed, valid, lost)
        assert porcupine(write(evs, "control-%d" % seed)) == {"control": "illegal"}, seed
        n += 1
    log("%d control histories with lost updates: illegal" % n)


@test
def test_control_without_pauses_passes_both():
    # the same workload with no paused holder loses nothing: Porcupine does not flag the
    # control for what it is, only for what happened
    for seed in range(5):
        evs = control_history(seed, p_pause=0.0)
        assert own(evs, "control") == (True, 0), seed
        assert porcupine(write(evs, "control-calm-%d" % seed)) == {"control": "ok"}, seed


@test
def test_fenced_counter_passes_both_and_a_lost_update_fails_both():
    for seed in range(20):
        h = tc.gen_counter(seed, "fenced-counter")
        assert own(h.events, "fenced-counter")[0] is True, seed
        assert porcupine(write(h.events, "fenced-%d" % seed)) == {"fenced-counter": "ok"}, seed
    for seed in range(10):
        # test_checkers' designed mutation: one ok write repeats the value of the one before
        h = tc.gen_counter(seed + 300, "fenced-counter", p_info=0.0, p_pause=0.0)
        ws = sorted((e for e in h.events if e.get("f") == "write" and e["type"] == "ok"),
                    key=lambda e: e["rev"])
        invs = {(e["proc"]): e for e in h.events if e.get("f") == "write" and
                e["type"] == "invoke"}
        i = random.Random(seed).randrange(1, len(ws))
        invs[ws[i]["proc"]]["value"] = invs[ws[i - 1]["proc"]]["value"]
        assert own(h.events, "fenced-counter")[0] is False, seed
        assert porcupine(write(h.events, "fenced-lost-%d" % seed)) == \
            {"fenced-counter": "illegal"}, seed


@test
def test_stale_read_flagged_by_both():
    done = 0
    for seed in range(30):
        events, _ = tc.gen_register(seed, procs=4, n_ops=200, p_info=0.03)
        assert own(events, "register")[0] is True, seed
        assert porcupine(write(events, "reg-%d" % seed)) == {"register": "ok"}, seed
        ops = tc._ok_ops(events)
        writes = [o for o in ops if o.f in ("write", "cas") and o.type == "ok"]
        reads = [o for o in ops if o.f == "read" and o.type == "ok"]
        random.Random(seed).shuffle(reads)
        target = None
        for r in reads:
            for w2 in (w for w in writes if w.t1 < r.t0):
                w1s = [w for w in writes if w.t1 < w2.t0 and w.inv["value"] != r.ret["value"]]
                if w1s:
                    target = (r, w1s[0])
                    break
            if target:
                break
        if not target:
            continue
        r, w1 = target
        r.ret["value"] = w1.inv["value"]
        assert own(events, "register")[0] is False, seed
        assert porcupine(write(events, "reg-stale-%d" % seed)) == {"register": "illegal"}, seed
        done += 1
    assert done >= 25, done


@test
def test_mutex_overlapping_holds_flagged_by_both():
    n = 0
    for seed in range(15):
        h = tc.gen_mutex(seed + 500, n_epochs=100)
        assert own(h.events, "mutex")[0] is True, seed
        assert porcupine(write(h.events, "mutex-%d" % seed)) == {"mutex": "ok"}, seed
        ops = tc._ok_ops(h.events)
        expired = {o.proc for o in ops if o.f == "expire"}
        acqs = [o for o in ops if o.f == "acquire" and o.type == "ok"]
        # drop a release whose holder's session never expires, with a grant after it
        cand = [o for o in ops if o.f == "release" and o.type == "ok" and
                o.proc not in expired and any(a.t0 > o.t1 for a in acqs)]
        if not cand:
            continue
        r = random.Random(seed).choice(cand)
        mutated = [e for e in h.events if e is not r.inv and e is not r.ret]
        assert own(mutated, "mutex")[0] is False, seed
        assert porcupine(write(mutated, "mutex-overlap-%d" % seed)) == {"mutex": "illegal"}, \
            seed
        n += 1
    assert n >= 10, n


@test
def test_rw_shared_write_and_overlap_flagged():
    # a write accepted with a shared token, and an exclusive grant beside a shared hold
    base = [
        {"proc": 1, "type": "invoke", "f": "acquire", "session": 11, "mode": "shared", "time": 10},
        {"proc": 1, "type": "ok", "f": "acquire", "session": 11, "mode": "shared", "token": 5,
         "time": 20},
        {"proc": 2, "type": "invoke", "f": "acquire", "session": 12, "mode": "shared", "time": 15},
        {"proc": 2, "type": "ok", "f": "acquire", "session": 12, "mode": "shared", "token": 6,
         "time": 25},
        {"proc": 1, "type": "invoke", "f": "check", "session": 11, "token": 5, "time": 30},
        {"proc": 1, "type": "ok", "f": "check", "session": 11, "token": 5, "time": 40},
        {"proc": 1, "type": "invoke", "f": "release", "session": 11, "time": 50},
        {"proc": 1, "type": "ok", "f": "release", "session": 11, "time": 60},
        {"proc": 2, "type": "invoke", "f": "release", "session": 12, "time": 50},
        {"proc": 2, "type": "ok", "f": "release", "session": 12, "time": 60},
        {"proc": 3, "type": "invoke", "f": "acquire", "session": 13, "mode": "exclusive",
         "time": 70},
        {"proc": 3, "type": "ok", "f": "acquire", "session": 13, "mode": "exclusive",
         "token": 9, "time": 80},
        {"proc": 3, "type": "invoke", "f": "write", "session": 13, "token": 9, "time": 90},
        {"proc": 3, "type": "ok", "f": "write", "session": 13, "token": 9, "time": 95},
    ]
    for e in base:
        e.update(workload="rw", key="rw")
    assert porcupine(write(base, "rw-ok")) == {"rw": "ok"}
    shared_write = base + [
        {"proc": 2, "type": "invoke", "f": "write", "session": 12, "token": 6, "time": 26,
         "workload": "rw", "key": "rw-reg"},
        {"proc": 2, "type": "ok", "f": "write", "session": 12, "token": 6, "time": 27,
         "workload": "rw", "key": "rw-reg"}]
    assert porcupine(write(shared_write, "rw-shared-write")) == {"rw": "illegal"}
    overlap = [dict(e) for e in base]
    for e in overlap:
        if e["proc"] == 3 and e["f"] == "acquire":
            e["time"] -= 50     # granted while both readers held it
    assert porcupine(write(overlap, "rw-overlap")) == {"rw": "illegal"}


@test
def test_unknown_outcomes_may_apply_late_or_never():
    # a write whose answer was lost is seen after a later write (it applied late); another
    # is never seen; an acquire whose answer was lost holds the lock until its session ends
    reg = [
        {"proc": 1, "type": "invoke", "f": "write", "value": "a", "time": 10},
        {"proc": 1, "type": "info", "f": "write", "time": 20},
        {"proc": 2, "type": "invoke", "f": "write", "value": "b", "time": 30},
        {"proc": 2, "type": "ok", "f": "write", "time": 40},
        {"proc": 3, "type": "invoke", "f": "read", "time": 50},
        {"proc": 3, "type": "ok", "f": "read", "value": "a", "time": 60},
        {"proc": 4, "type": "invoke", "f": "write", "value": "c", "time": 70},
        {"proc": 5, "type": "invoke", "f": "read", "time": 80},
        {"proc": 5, "type": "ok", "f": "read", "value": "a", "time": 90},
    ]
    for e in reg:
        e.update(workload="register", key="k")
    assert own(reg, "register")[0] is True
    assert porcupine(write(reg, "late")) == {"register": "ok"}
    mtx = [
        {"proc": 1, "type": "invoke", "f": "acquire", "session": 7, "time": 10},
        {"proc": 1, "type": "info", "f": "acquire", "session": 7, "time": 20},
        {"proc": 1, "type": "invoke", "f": "expire", "session": 7, "time": 30},
        {"proc": 1, "type": "ok", "f": "expire", "session": 7, "time": 60},
        {"proc": 2, "type": "invoke", "f": "acquire", "session": 8, "time": 25},
        {"proc": 2, "type": "ok", "f": "acquire", "session": 8, "token": 40, "time": 50},
    ]
    for e in mtx:
        e["workload"] = "mutex"
    assert own(mtx, "mutex")[0] is True
    assert porcupine(write(mtx, "info-acquire")) == {"mutex": "ok"}
    # with the first grant acknowledged, a second one before its expiry can have begun is
    # two holds at once
    early = [dict(e) for e in mtx]
    early[1].update(type="ok", token=30)
    early[-2]["time"], early[-1]["time"] = 21, 22
    early[2]["time"] = 40
    assert own(early, "mutex")[0] is False
    assert porcupine(write(early, "info-acquire-overlap")) == {"mutex": "illegal"}


# ---- the referee: Porcupine's labelled Jepsen etcd histories ----

@test
def test_jepsen_etcd_histories_same_verdicts():
    r = subprocess.run([os.path.join(ROOT, "scripts", "porcupine.sh"), "--module-dir"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    jdir = os.path.join(r.stdout.strip().splitlines()[-1], "test_data", "jepsen")
    n = t_own = 0
    for i in range(103):
        if i in JEPSEN_EMPTY:
            continue
        src = os.path.join(jdir, "etcd_%03d.log" % i)
        dst = os.path.join(TMP, "etcd_%03d.jsonl" % i)
        subprocess.run([BIN, "-from-jepsen-etcd", src, "-to", dst], check=True)
        label = "ok" if i in JEPSEN_LINEARIZABLE else "illegal"
        assert porcupine(dst) == {"register": label}, (i, label)
        t = time.monotonic()
        vs = checkers.check_file(dst, budget_s=60)
        t_own += time.monotonic() - t
        assert len(vs) == 1 and vs[0]["valid"] is (label == "ok"), (i, label, vs)
        n += 1
    assert n == 102, n
    log("%d Jepsen etcd histories: both judges agree with the labels (own checker %.2f s)"
        % (n, t_own))


def main():
    global BIN, TMP, VERBOSE
    args = sys.argv[1:]
    if "-v" in args:
        VERBOSE = True
        args.remove("-v")
    if "--bin" in args:
        i = args.index("--bin")
        BIN = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if BIN is None:
        out = os.path.join(ROOT, "build", "porcupine")
        subprocess.run([os.path.join(ROOT, "scripts", "porcupine.sh"), out], check=True,
                       stdout=subprocess.DEVNULL)
        BIN = os.path.join(out, "porcupine-check")
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="porcupine-test-") as tmp:
        TMP = tmp
        for fn in TESTS:
            if args and not any(a in fn.__name__ for a in args):
                continue
            t = time.monotonic()
            try:
                fn()
                passed += 1
                print("ok %s (%.1f s)" % (fn.__name__, time.monotonic() - t), flush=True)
            except Exception:  # noqa: BLE001 - report and go on
                failed += 1
                print("not ok %s" % fn.__name__, flush=True)
                traceback.print_exc()
    print("tests: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
