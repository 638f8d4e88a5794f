# SPDX-License-Identifier: Apache-2.0
"""Tests of the rw and watch checkers (checkers_holds.py, checkers_watch.py): each passes a
good history and fails the broken ones.  Run through test_checkers.py (which collects every
test_* function here) or alone: python3 tests/torture/test_checkers_rw_watch.py."""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402
import checkers_holds  # noqa: E402
import checkers_watch  # noqa: E402


def kinds(v):
    return sorted({x["kind"] for x in v["violations"]})


class RW:
    """rw history builder: times in ms (converted to ns), one proc per session."""

    def __init__(self):
        self.events = []

    def op(self, proc, f, t0, t1, typ="ok", inv=None, ret=None):
        base = {"proc": proc, "f": f, "workload": "rw"}
        self.events.append(dict(base, type="invoke", time=int(t0 * 1e6), **(inv or {})))
        if typ is not None:
            self.events.append(dict(base, type=typ, time=int(t1 * 1e6), **(ret or {})))
        return self

    def acq(self, sid, t0, t1, mode, tok, typ="ok"):
        inv = {"session": sid, "mode": mode, "key": "rw"}
        return self.op(sid, "acquire", t0, t1, typ, inv, dict(inv, token=tok) if typ == "ok"
                       else inv)

    def rel(self, sid, t0, t1, typ="ok"):
        return self.op(sid, "release", t0, t1, typ, {"session": sid}, {"session": sid})

    def exp(self, sid, t0, t1):
        return self.op(sid, "expire", t0, t1, "ok", {"session": sid}, {"session": sid})

    def write(self, sid, t0, t1, tok, mode="exclusive", rev=None, typ="ok"):
        inv = {"session": sid, "mode": mode, "token": tok, "key": "rw-reg",
               "value": f"x:{tok}:{t0}"}
        ret = dict(inv, rev=rev) if typ == "ok" else dict(inv, error="stale fencing token")
        return self.op(sid, "write", t0, t1, typ, inv, ret)

    def check(self):
        return checkers.check("rw", self.events)


def good_rw():
    """Two readers overlap, a writer follows, a paused reader's session expires (dated back),
    a writer's token is refused after its session expired."""
    h = RW()
    h.acq(1, 0, 10, "shared", 5).acq(2, 5, 12, "shared", 6)
    h.rel(1, 30, 35).rel(2, 32, 36)
    h.acq(3, 20, 40, "exclusive", 8).write(3, 41, 45, 8, rev=9).rel(3, 50, 55)
    h.acq(4, 56, 60, "shared", 10).write(4, 61, 62, 10, mode="shared", typ="fail")
    h.exp(4, 70, 90)                       # paused holder: servers may expire it from 70 on
    h.acq(5, 65, 95, "exclusive", 12)      # granted once 4 expired: not certainly before 70
    h.write(5, 96, 97, 12, rev=13).rel(5, 98, 99)
    h.write(3, 100, 101, 8, typ="fail")    # a deposed writer wakes up: refused
    return h


def test_rw_good_history_valid():
    v = good_rw().check()
    assert v["valid"] is True, v["violations"]
    st = v["stats"]
    assert st["shared_overlaps"] == 1 and st["max_shared_live"] == 2, st
    assert st["ok_writes"] == 2 and st["stale_writes_refused"] == 2, st


def test_rw_overlapping_exclusive_grants_invalid():
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).acq(2, 5, 12, "exclusive", 6).rel(1, 30, 35).rel(2, 31, 36)
    assert kinds(h.check()) == ["exclusive-overlap"], h.check()["violations"]


def test_rw_shared_and_exclusive_overlap_invalid():
    h = RW()
    h.acq(1, 0, 10, "shared", 5).acq(2, 5, 12, "exclusive", 6).rel(2, 20, 21).rel(1, 30, 35)
    assert kinds(h.check()) == ["shared-exclusive-overlap"], h.check()["violations"]
    h = RW()  # the exclusive first, a reader granted inside it
    h.acq(1, 0, 10, "exclusive", 5).acq(2, 5, 12, "shared", 6).rel(2, 20, 21).rel(1, 30, 35)
    assert kinds(h.check()) == ["shared-exclusive-overlap"], h.check()["violations"]


def test_rw_overlap_only_after_the_safe_deadline_is_valid():
    # holder 1 is paused: its expire is dated back to 50 (its last safe deadline); 2 is
    # acknowledged at 60, after that: the servers may have expired 1 in between
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).exp(1, 50, 200).acq(2, 20, 60, "exclusive", 7)
    h.rel(2, 70, 71)
    assert h.check()["valid"] is True, h.check()["violations"]
    # ... but acknowledged at 40, before 1's safe deadline: two holders at 40..50
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).exp(1, 50, 200).acq(2, 20, 40, "exclusive", 7)
    h.rel(2, 70, 71)
    assert kinds(h.check()) == ["exclusive-overlap"], h.check()["violations"]


def test_rw_unknown_grant_and_late_answer_are_not_blamed():
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).rel(1, 30, 35)
    h.acq(2, 5, 12, "exclusive", None, typ="info")          # may or may not have applied
    # the answer came after the session's safe deadline (15): nothing certain about it
    h.acq(3, 11, 40, "exclusive", 9).exp(3, 15, 90)
    h.acq(4, 20, 45, "exclusive", 11).rel(4, 50, 51)
    v = h.check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["holds_dropped"] == 1, v["stats"]


def test_rw_duplicate_or_falling_tokens_invalid():
    h = RW()
    h.acq(1, 0, 10, "shared", 5).acq(2, 5, 12, "shared", 5).rel(1, 30, 35).rel(2, 31, 36)
    assert "duplicate-token" in kinds(h.check()), h.check()["violations"]
    h = RW()
    h.acq(1, 0, 10, "exclusive", 9).rel(1, 20, 21).acq(2, 30, 40, "exclusive", 7)
    h.rel(2, 50, 51)
    assert kinds(h.check()) == ["token-order"], h.check()["violations"]


def test_rw_shared_token_accepted_by_put_invalid():
    h = RW()
    h.acq(1, 0, 10, "shared", 5).write(1, 11, 12, 5, mode="shared", rev=6).rel(1, 20, 21)
    assert kinds(h.check()) == ["shared-token-write"], h.check()["violations"]


def test_rw_stale_token_write_accepted_invalid():
    # 1's session expired (dated 15), 2 was granted (acknowledged 30), then 1's fenced write
    # with the old token succeeded
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).exp(1, 15, 100).acq(2, 12, 30, "exclusive", 8)
    h.write(1, 40, 41, 5, rev=12).rel(2, 50, 51)
    assert kinds(h.check()) == ["stale-write"], h.check()["violations"]


def test_rw_write_order_and_revision_checks():
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).write(1, 11, 12, 5, rev=5).rel(1, 20, 21)
    assert kinds(h.check()) == ["write-before-grant"], h.check()["violations"]
    h = RW()
    h.acq(1, 0, 10, "exclusive", 5).write(1, 11, 12, 5, rev=20).rel(1, 13, 14)
    h.acq(2, 15, 16, "exclusive", 8).write(2, 17, 18, 8, rev=9).rel(2, 19, 20)
    assert kinds(h.check()) == ["fence-order"], h.check()["violations"]


def test_rw_readers_that_never_overlap_show_nothing_tested():
    import torture
    h = RW()
    h.acq(1, 0, 10, "shared", 5).rel(1, 20, 21).acq(2, 22, 30, "shared", 7).rel(2, 40, 41)
    v = h.check()
    assert v["valid"] is True and v["stats"]["shared_overlaps"] == 0, v
    assert torture.nothing_tested([v]) == 1
    assert torture.nothing_tested([good_rw().check()]) == 0


def test_semaphore_limit_reuses_the_sweep():
    # three certain permits at 12..20: fine for limit 3, a violation for limit 2
    h = RW()
    for sid, tok in ((1, 5), (2, 6), (3, 7)):
        h.acq(sid, sid, 10 + sid, "permit", tok).rel(sid, 20 + sid, 30)
    ops, _, _ = checkers.pair_ops(h.events)
    holds, _ = checkers_holds.certain_holds(ops, [])
    assert checkers_holds.sweep(holds, checkers_holds.limit_conflict(3)) == ([], 3)
    bad, _ = checkers_holds.sweep(holds, checkers_holds.limit_conflict(2))
    assert [x["kind"] for x in bad] == ["over-limit"], bad


def gen_rw(seed, n=300):
    """A correct read-write lock service, simulated: grants applied at random points inside
    the acquire's interval, releases after their invoke, some holders paused past their
    session's end (dated-back expire).  Returns the RW builder."""
    rng = random.Random(seed)
    h = RW()
    t, tok = 0.0, 1
    sid = 1
    for _ in range(n):
        shared = rng.random() < 0.6
        k = rng.randint(2, 4) if shared else 1
        start = t
        end = start
        for apply in sorted(start + rng.uniform(0, 1) for _j in range(k)):
            tok += rng.randint(1, 3)           # tokens in the order the grants applied
            t0, t1 = apply - rng.uniform(0, 2), apply + rng.uniform(0, 2)
            mode = "shared" if shared else "exclusive"
            h.acq(sid, t0, t1, mode, tok)
            if not shared and rng.random() < 0.5:
                h.write(sid, t1 + 0.1, t1 + 0.5, tok, rev=tok + 1)
            stop = apply + 2 + rng.uniform(0, 5)   # the hold ends here on the servers
            if rng.random() < 0.15:
                h.exp(sid, stop - rng.uniform(0, 1), stop + 3)   # dated back: before stop
            else:
                h.rel(sid, stop - rng.uniform(0, 1), stop + rng.uniform(0, 1))
            end = max(end, stop)
            sid += 1
        tok += 1
        t = end + rng.uniform(0.01, 1)
    return h


def test_rw_generated_histories_valid_and_mutations_invalid():
    for seed in range(30):
        h = gen_rw(seed)
        v = h.check()
        assert v["valid"] is True, (seed, v["violations"][:3])
        assert v["stats"]["shared_overlaps"] > 0, v["stats"]
        # mutation: one exclusive grant acknowledged much earlier (inside the previous hold)
        rng = random.Random(seed)
        evs = [dict(e) for e in h.events]
        acks = [i for i, e in enumerate(evs) if e["f"] == "acquire" and e["type"] == "ok" and
                e["mode"] == "exclusive" and e["time"] > 50e6]
        i = rng.choice(acks)
        evs[i]["time"] -= int(6e6)
        evs[i - 1]["time"] = min(evs[i - 1]["time"], evs[i]["time"])
        bad = checkers.check("rw", evs)
        assert bad["valid"] is False, seed
        assert set(kinds(bad)) & {"exclusive-overlap", "shared-exclusive-overlap",
                                  "token-order"}, kinds(bad)


# --------------------------------------------------------------------------------------------
# watch

class WH:
    """watch history builder; ids are 'rev-n' strings, events (id, fields)."""

    def __init__(self):
        self.events = []
        self.t = 0

    def tick(self):
        self.t += 1000
        return self.t

    def read(self, proc, frm, evs, stream="fencelock:events", resume=False, typ="ok",
             ret=None):
        base = {"proc": proc, "f": "xread", "workload": "watch", "stream": stream, "from": frm}
        inv = dict(base, type="invoke", time=self.tick())
        if resume:
            inv["resume"] = True
        self.events.append(inv)
        r = dict(base, type=typ, time=self.tick(), **(ret or {}))
        if typ == "ok":
            r["events"] = [[i, f] for i, f in evs]
        self.events.append(r)
        return evs[-1][0] if evs else frm

    def put_ack(self, key, val, rev):
        self.events.append({"proc": 50, "f": "write", "workload": "register", "type": "invoke",
                            "time": self.tick(), "key": key, "value": val})
        self.events.append({"proc": 50, "f": "write", "workload": "register", "type": "ok",
                            "time": self.tick(), "key": key, "value": val, "rev": rev})

    def check(self):
        watch = [e for e in self.events if e["workload"] == "watch"]
        return checkers.check("watch", watch, all_history=self.events)


def stream_events():
    """The global sequence: puts of r0/q0, a lock grant, session events."""
    evs = [("3-0", {"type": "session-open", "sid": "3", "ttl_ms": "1500"})]
    for rev in range(4, 20):
        if rev % 4 == 0:
            evs.append((f"{rev}-0", {"type": "grant", "name": "rw", "token": str(rev),
                                     "sid": "3"}))
        else:
            key = "r0" if rev % 2 else "q0"
            evs.append((f"{rev}-0", {"type": "put", "name": key, "value": f"v{rev}",
                                     "mod_rev": str(rev)}))
    evs.append(("20-0", {"type": "session-end", "sid": "3", "reason": "close"}))
    evs.append(("20-1", {"type": "release", "name": "rw", "token": "16", "sid": "3"}))
    return evs


def good_watch(drop=None, change=None):
    """Watchers 1 and 2 read everything in chunks with resumes; watcher 3 reads prefix r.
    drop: (proc, id) left out of that watcher's delivery; change: (proc, id, fields)."""
    h = WH()
    evs = stream_events()
    for rev in range(5, 20, 2):
        h.put_ack("r0", f"v{rev}", rev)
    for proc, step in ((1, 3), (2, 5)):
        frm = "0"
        for k in range(0, len(evs), step):
            chunk = [(i, f) for i, f in evs[k:k + step] if drop != (proc, i)]
            if change and change[0] == proc:
                chunk = [(i, change[2] if i == change[1] else f) for i, f in chunk]
            frm = h.read(proc, frm, chunk, resume=k > 0 and k % 2 == 0)
        h.read(proc, frm, [])                                     # nil: BLOCK ran out
    sub = [(i, f) for i, f in evs if f.get("name", "").startswith("r")]
    frm = "0"
    for k in range(0, len(sub), 4):
        chunk = [(i, f) for i, f in sub[k:k + 4] if drop != (3, i)]
        frm = h.read(3, frm, chunk, stream="fencelock:events:r", resume=True)
    return h


def test_watch_good_history_valid():
    v = good_watch().check()
    assert v["valid"] is True, v["violations"][:3]
    st = v["stats"]
    assert st["watchers"] == 3 and st["events"] == len(stream_events()), st
    assert st["puts_checked"] == 8 * 3 and st["resumes"] > 0 and st["compacted"] == 0, st


def test_watch_gap_invalid():
    v = good_watch(drop=(1, "9-0")).check()
    assert kinds(v) == ["gap", "lost-put"], v["violations"]
    v = good_watch(drop=(3, "13-0")).check()             # the prefix watcher's gap
    assert kinds(v) == ["gap", "lost-put"], v["violations"]
    v = good_watch(drop=(2, "8-0")).check()              # no PUT there: only the gap shows
    assert kinds(v) == ["gap"], v["violations"]


def test_watch_duplicate_and_order_invalid():
    h = WH()
    evs = stream_events()
    frm = h.read(1, "0", evs[:4])
    h.read(1, frm, [evs[3]] + evs[4:6])                  # the last delivered one again
    assert kinds(h.check()) == ["duplicate"], h.check()["violations"]
    h = WH()
    h.read(1, "0", [evs[0], evs[2], evs[1]])
    assert kinds(h.check()) == ["order"], h.check()["violations"]


def test_watch_disagreeing_watchers_invalid():
    other = {"type": "put", "name": "r0", "value": "forged", "mod_rev": "9"}
    v = good_watch(change=(2, "9-0", other)).check()
    assert kinds(v) == ["disagreement", "lost-put"], v["violations"]


def test_watch_compacted_is_a_reported_gap_not_a_violation():
    h = WH()
    evs = stream_events()
    frm = h.read(1, "0", evs[:3])
    h.read(1, frm, [], typ="fail", ret={"error": "COMPACTED", "oldest": evs[8][0]})
    h.read(1, after_gap(evs[8][0]), evs[8:12])         # on just before the oldest retained
    h.read(2, "0", evs[:12])
    v = h.check()
    assert v["valid"] is True and v["stats"]["compacted"] == 1, v
    # ... while the same hole without the -COMPACTED reply is a silent gap
    h = WH()
    frm = h.read(1, "0", evs[:3])
    h.read(1, frm, evs[8:12])
    h.read(2, "0", evs[:12])
    assert kinds(h.check()) == ["gap"], h.check()["violations"]


def after_gap(oldest):
    rev, n = (int(x) for x in oldest.split("-"))
    return "%d-%d" % ((rev, n - 1) if n else (rev - 1, 2 ** 64 - 1))


def test_watch_read_from_0_after_compacted_goes_back_invalid():
    """Seed 484069675: -COMPACTED oldest=5002-0 from one leader, then "0" on the next leader,
    which retained more history, answered 4244-0: the stream went back."""
    h = WH()
    evs = stream_events()
    frm = h.read(1, "0", evs[4:8])
    h.read(1, frm, [], typ="fail", ret={"error": "COMPACTED", "oldest": evs[10][0]})
    h.read(1, "0", evs[2:4])                             # another node's oldest: older
    h.read(2, "0", evs[:12])
    assert kinds(h.check()) == ["order", "resume"], h.check()["violations"]
    # asking after the last delivered id instead of just before `oldest` is a resume error too
    h = WH()
    frm = h.read(1, "0", evs[:3])
    h.read(1, frm, [], typ="fail", ret={"error": "COMPACTED", "oldest": evs[8][0]})
    h.read(1, frm, evs[8:12])
    assert "resume" in kinds(h.check()), h.check()["violations"]


def test_watch_lost_put_seen_by_nobody_invalid():
    h = WH()
    evs = [e for e in stream_events() if e[0] != "7-0"]
    h.put_ack("r0", "v7", 7)
    h.read(1, "0", evs)
    h.read(2, "0", evs)
    assert kinds(h.check()) == ["lost-put"], h.check()["violations"]


def ml_write(h, key, name, val, rev):
    """A multilock fenced write (worker_multi.c): "key" the key written, "name" the lock."""
    for typ in ("invoke", "ok"):
        e = {"proc": 60, "f": "write", "workload": "multilock", "type": typ, "time": h.tick(),
             "key": key, "name": name, "session": 9, "mode": "exclusive", "token": 17,
             "value": val}
        if typ == "ok":
            e["rev"] = rev
        h.events.append(e)


def test_watch_checks_multilock_puts_by_the_key_written():
    """A multilock write names the lock ("name") and the key it wrote ("key", ml-reg/<name>):
    the watchers' put of ml-reg/ml/c at its revision is that write; one missing is lost.
    (Its writes once carried the lock as "key", and every one of them was a lost-put.)"""
    put = ("21-0", {"type": "put", "name": "ml-reg/ml/c", "value": "m:17:1", "mod_rev": "21"})
    for missing in (False, True):
        h = WH()
        ml_write(h, "ml-reg/ml/c", "ml/c", "m:17:1", 21)
        evs = stream_events() + [put]
        h.read(1, "0", evs)
        h.read(2, "0", [e for e in evs if not (missing and e is put)] + [("22-0", put[1])])
        h.read(3, "0", [e for e in evs if e[1].get("name", "").startswith("r")],
               stream="fencelock:events:r")             # not its stream: not checked there
        v = h.check()
        if missing:
            assert kinds(v) == ["gap", "lost-put"], v["violations"]
        else:
            assert v["valid"] is True and v["stats"]["puts_checked"] == 2, v


def test_watch_wrong_resume_and_wrong_stream_invalid():
    h = WH()
    evs = stream_events()
    h.read(1, "0", evs[:3])
    h.read(1, "1-0", evs[3:5])                           # not the last delivered id
    assert "resume" in kinds(h.check()), h.check()["violations"]
    h = WH()
    h.read(3, "0", evs[:3], stream="fencelock:events:r")  # session events have no name
    assert kinds(h.check()) == ["wrong-stream"], h.check()["violations"]


def test_check_file_runs_rw_and_watch():
    import tempfile
    import json
    rw = [dict(e, rev=e["rev"] + 1000) if "rev" in e else e for e in good_rw().events]
    evs = rw + good_watch().events          # rw's PUTs beyond the watchers' segments
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for e in sorted(evs, key=lambda e: e["time"]):
            fh.write(json.dumps(e) + "\n")
    try:
        out = {v["workload"]: v for v in checkers.check_file(fh.name)}
    finally:
        os.unlink(fh.name)
    assert out["rw"]["valid"] is True and out["watch"]["valid"] is True, out
    assert out["watch"]["stats"]["puts_checked"] > 0


if __name__ == "__main__":
    import test_checkers
    sys.exit(test_checkers.main())
