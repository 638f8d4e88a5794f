# SPDX-License-Identifier: Apache-2.0
"""Tests of the latch checker (checkers_latch.py: check_latch, negative_controls): a good
history passes, each broken one fails with its kind.  Run through test_checkers.py (which
collects every test_* function here) or alone: python3 tests/torture/test_checkers_latch.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402
import checkers_latch  # noqa: E402

S = 1000  # ms


def kinds(v):
    return sorted(v["stats"]["violation_kinds"])


class H:
    """History builder: times in ms; each op on a proc of its own unless given."""

    def __init__(self):
        self.events, self.procs = [], 0

    def op(self, f, name, t0, t1, typ="ok", session=0, count=2, kind="latch", inv=None,
           ret=None, proc=None):
        if proc is None:
            self.procs += 1
            proc = self.procs
        base = {"proc": proc, "f": f, "workload": "latch", "key": name, "kind": kind,
                "count": count, "session": session}
        self.events.append(dict(base, type="invoke", time=int(t0 * 1e6), **(inv or {})))
        if t1 is None:
            t1 = t0 + 1  # an unknown outcome: recorded a moment later
        if typ is not None:
            self.events.append(dict(base, type=typ, time=int(t1 * 1e6), **(ret or {})))
        return self

    def join(self, name, sid, t0, t1, result="ok", count=2):
        typ = "ok" if result == "ok" else "fail" if result else "info"
        return self.op("join", name, t0, t1, typ, sid, count,
                       ret={"result": result} if result else None)

    def cd(self, name, sid, t0, t1, left=None, count=2, typ="ok", result=None):
        ret = {"result": "int", "value": left} if typ == "ok" else (
            {"result": result} if result else None)
        return self.op("countdown", name, t0, t1, typ, sid, count, ret=ret)

    def wait(self, name, t0, t1, result, wait_ms=3000, count=2, broken_sid=None):
        ret = {"result": result}
        if broken_sid:
            ret["broken_sid"] = broken_sid
        typ = "ok" if result == "ok" else "fail" if result else "info"
        return self.op("wait", name, t0, t1, typ, 0, count,
                       inv={"wait_ms": wait_ms, "wait_end": int((t0 + wait_ms) * 1e6)},
                       ret=ret if result else None)

    def info(self, name, t0, t1, state, remaining=0, broken_sid=0, count=2):
        return self.op("info", name, t0, t1, "ok", 0, count,
                       ret={"state": state, "remaining": remaining, "broken_sid": broken_sid})

    def close(self, name, sid, t0, t1, count=2):
        return self.op("close", name, t0, t1, "ok", sid, count)

    def abandon(self, name, sid, t, count=2):
        return self.op("abandon", name, t, t, "ok", sid, count)

    def enter(self, name, sid, t0, t1, result, count=2):
        typ = "ok" if result == "ok" else "fail" if result else "info"
        return self.op("enter", name, t0, t1, typ, sid, count, kind="barrier",
                       inv={"wait_ms": 2000}, ret={"result": result} if result else None)

    def leave(self, name, sid, t0, t1, result, count=2):
        typ = "ok" if result == "ok" else "fail" if result else "info"
        return self.op("leave", name, t0, t1, typ, sid, count, kind="barrier",
                       ret={"result": result} if result else None)

    def check(self):
        return checkers.check("latch", self.events)


def good():
    """Latch lt/1 (count 2): two participants count down, a waiter parked before is released
    after the last count-down was sent.  Latch lt/2: a doomed participant closes before it
    counts down, waiters (one long, parked before the break) get -BROKEN.  Barrier bt/1 of 2:
    both enter, both leave."""
    h = H()
    h.join("lt/1", 11, 0, 10).join("lt/1", 12, 5, 15)
    h.wait("lt/1", 20, 130, "ok")
    h.info("lt/1", 30, 40, "counting", remaining=2)
    h.cd("lt/1", 11, 50, 60, left=1).cd("lt/1", 12, 100, 120, left=0)
    h.info("lt/1", 140, 150, "zero")
    h.wait("lt/1", 160, 170, "ok")
    h.join("lt/2", 21, 0, 10).join("lt/2", 22, 5, 15)
    h.wait("lt/2", 20, 300, "broken", wait_ms=14 * S, broken_sid=22)
    h.cd("lt/2", 21, 50, 60, left=1)
    h.close("lt/2", 22, 200, 250)
    h.wait("lt/2", 400, 410, "broken", broken_sid=22)
    h.info("lt/2", 420, 430, "broken", remaining=1, broken_sid=22)
    h.enter("bt/1", 11, 0, 100, "ok").enter("bt/1", 12, 90, 110, "ok")
    h.leave("bt/1", 11, 200, 400, "ok").leave("bt/1", 12, 390, 410, "ok")
    return h


def test_latch_good_history_passes():
    v = good().check()
    assert v["valid"] is True, v["violations"]
    st = v["stats"]
    assert st["releases"] == 2 and st["breaks"] == 1 and st["zeros"] == 1, st
    assert st["barrier_full"] == 1 and st["barrier_done"] == 2, st
    assert st["waits_judged_after_break"] == 2, st


def test_latch_unknown_countdown_may_have_applied():
    """A count-down with an unknown outcome may apply at any time after its invoke: a release
    after it is fine; an info wait is no evidence."""
    h = H()
    h.join("lt/1", 11, 0, 10).join("lt/1", 12, 0, 10)
    h.cd("lt/1", 11, 20, 30, left=1).cd("lt/1", 12, 40, None, typ="info")
    h.wait("lt/1", 45, 60, "ok").wait("lt/1", 0, None, None)
    v = h.check()
    assert v["valid"] is True, v["violations"]


def test_latch_early_release_fails():
    """+OK to a wait before the second count-down was even sent."""
    h = H()
    h.join("lt/1", 11, 0, 10).join("lt/1", 12, 5, 15)
    h.cd("lt/1", 11, 20, 30, left=1)
    h.wait("lt/1", 35, 40, "ok")
    h.cd("lt/1", 12, 50, 60, left=0)
    assert "early-release" in kinds(h.check())


def test_latch_info_zero_early_fails():
    h = H()
    h.cd("lt/1", 11, 20, 30, left=1, count=2)
    h.info("lt/1", 35, 40, "zero")
    assert "early-release" in kinds(h.check())


def test_latch_zero_despite_unkept_promise_fails():
    """Session 13 joined (acknowledged) and never counted down, yet the latch showed zero."""
    h = H()
    h.join("lt/1", 11, 0, 10, count=1).join("lt/1", 13, 0, 10, count=1)
    h.cd("lt/1", 11, 20, 30, left=0, count=1)
    h.wait("lt/1", 35, 40, "ok", count=1)
    assert "zero-despite-promise" in kinds(h.check())


def test_latch_count_mismatch_fails():
    """Two counts left although a count-down was acknowledged before the read."""
    h = H()
    h.cd("lt/1", 11, 20, 30, left=1)
    h.info("lt/1", 40, 50, "counting", remaining=2)
    assert "count-mismatch" in kinds(h.check())


def test_latch_zero_and_broken_fails():
    h = H()
    h.cd("lt/1", 11, 20, 30, left=1).cd("lt/1", 12, 20, 30, left=0)
    h.wait("lt/1", 40, 50, "ok")
    h.wait("lt/1", 60, 70, "broken", broken_sid=12)
    v = h.check()
    assert "zero-and-broken" in kinds(v) and "false-break" in kinds(v), kinds(v)


def test_latch_false_break_fails():
    """-BROKEN naming a session that never joined."""
    h = H()
    h.join("lt/1", 11, 0, 10)
    h.wait("lt/1", 40, 50, "broken", broken_sid=99)
    assert kinds(h.check()) == ["false-break"]


def test_latch_stuck_waiter_fails():
    """A waiter parked before the break (the close of a participant that joined), its WAIT
    running 12 s past it, answered nil: it slept through the break."""
    h = H()
    h.join("lt/2", 21, 0, 10).join("lt/2", 22, 5, 15)
    h.wait("lt/2", 20, 14020, "nil", wait_ms=14 * S)
    h.close("lt/2", 22, 1000, 2000)
    assert kinds(h.check()) == ["stuck-waiter"]


def test_latch_nil_within_the_bound_passes():
    """A waiter whose WAIT ended within the bound after the break may be answered nil (by a
    deposed leader that did not see the break yet)."""
    h = H()
    h.join("lt/2", 21, 0, 10).join("lt/2", 22, 5, 15)
    h.wait("lt/2", 20, 6000, "nil", wait_ms=5900)
    h.close("lt/2", 22, 1000, 2000)
    v = h.check()
    assert v["valid"] is True, v["violations"]


def test_latch_stale_nil_after_break_fails():
    h = H()
    h.join("lt/2", 22, 5, 15)
    h.info("lt/2", 100, 110, "broken", remaining=2, broken_sid=22)
    h.wait("lt/2", 200, 500, "nil", wait_ms=300)
    assert kinds(h.check()) == ["stale-nil"]


def test_latch_state_regress_fails():
    h = H()
    h.join("lt/2", 22, 5, 15)
    h.info("lt/2", 100, 110, "broken", remaining=2, broken_sid=22)
    h.info("lt/2", 200, 210, "counting", remaining=2)
    assert kinds(h.check()) == ["state-regress"]


def test_latch_never_broken_fails():
    """A participant that joined was abandoned; 31 s later the latch still counts."""
    h = H()
    h.join("lt/3", 31, 0, 10)
    h.abandon("lt/3", 31, 20)
    h.info("lt/3", 31 * S + 100, 31 * S + 110, "counting", remaining=2)
    assert kinds(h.check()) == ["never-broken"]


def test_barrier_early_enter_fails():
    """+OK to an enter while only one of two sessions had sent its enter."""
    h = H()
    h.enter("bt/1", 11, 0, 50, "ok").enter("bt/1", 12, 90, 110, "ok")
    h.leave("bt/1", 11, 200, 400, "ok").leave("bt/1", 12, 390, 410, "ok")
    assert kinds(h.check()) == ["early-enter"]


def test_barrier_refused_enter_does_not_count():
    h = H()
    h.enter("bt/1", 13, 0, 5, "err")
    h.enter("bt/1", 11, 0, 50, "ok")
    assert kinds(h.check()) == ["early-enter"]


def test_barrier_early_leave_fails():
    """Session 11's leave answered +OK before session 12 sent its leave."""
    h = H()
    h.enter("bt/1", 11, 0, 100, "ok").enter("bt/1", 12, 90, 110, "ok")
    h.leave("bt/1", 11, 200, 300, "ok").leave("bt/1", 12, 390, 410, "ok")
    assert kinds(h.check()) == ["early-leave"]


def test_latch_history_errors():
    h = H()
    h.op("delete", "lt/1", 0, 10)
    h.cd("lt/1", 11, 20, 30, left=1, count=2).cd("lt/1", 12, 20, 30, left=0, count=3)
    assert kinds(h.check()) == ["history-error"]


def test_latch_nothing_tested():
    """torture.py fails a run whose latch history released nobody, broke no latch or filled
    no barrier: it could not have caught what the workload is for."""
    import torture
    assert torture.nothing_tested([good().check()]) == 0
    h = H()
    h.join("lt/1", 11, 0, 10, count=1).cd("lt/1", 11, 20, 30, left=0, count=1)
    h.wait("lt/1", 40, 50, "ok", count=1)
    h.enter("bt/1", 11, 0, 100, "ok").enter("bt/1", 12, 90, 110, "ok")
    assert torture.nothing_tested([h.check()]) == 1  # no latch broken


def test_latch_negative_controls_flagged():
    """The torture controls built from a good history: each flagged with its kind, and the
    good history itself clean."""
    ctl = checkers_latch.negative_controls(good().events)
    assert [k for _, k, _ in ctl] == ["early-release", "stuck-waiter", "early-enter"], ctl
    for what, kind, evs in ctl:
        assert evs is not None, what
        v = checkers_latch.check_latch(evs)
        assert kind in kinds(v), (what, kinds(v))


def test_latch_negative_controls_with_enters_sent_together():
    """Both enters sent within a microsecond (as at an epoch's start): the fabricated early
    enter still lies between them and is flagged, not a history error."""
    h = H()
    h.op("enter", "bt/1", 0, 0.1, "ok", 11, kind="barrier", ret={"result": "ok"})
    h.op("enter", "bt/1", 0.0005, 0.1, "ok", 12, kind="barrier", ret={"result": "ok"})
    ctl = [c for c in checkers_latch.negative_controls(h.events) if c[1] == "early-enter"]
    assert ctl and ctl[0][2] is not None, ctl
    assert kinds(checkers_latch.check_latch(ctl[0][2])) == ["early-enter"]


def test_latch_negative_controls_need_material():
    h = H()
    h.join("lt/1", 11, 0, 10)
    assert all(evs is None for _, _, evs in checkers_latch.negative_controls(h.events))


if __name__ == "__main__":
    import test_checkers
    sys.exit(test_checkers.main())
