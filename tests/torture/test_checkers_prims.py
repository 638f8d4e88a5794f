# SPDX-License-Identifier: Apache-2.0
"""Tests of the sem and elect checkers (checkers_holds.py: check_sem, check_elect): each
passes a good history and fails the broken ones.  Run through test_checkers.py (which collects
every test_* function here) or alone: python3 tests/torture/test_checkers_prims.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402


def kinds(v):
    return sorted({x["kind"] for x in v["violations"]})


class H:
    """History builder for sem/elect: times in ms, one proc per session (observers: 900+)."""

    def __init__(self, wl):
        self.wl, self.events = wl, []

    def op(self, proc, f, t0, t1, typ="ok", inv=None, ret=None):
        base = {"proc": proc, "f": f, "workload": self.wl}
        self.events.append(dict(base, type="invoke", time=int(t0 * 1e6), **(inv or {})))
        self.events.append(dict(base, type=typ, time=int(t1 * 1e6), **(ret or {})))
        return self

    def acq(self, sid, t0, t1, tok, permits=None):
        inv = {"session": sid, "key": self.wl}
        if permits is not None:
            inv["permits"] = permits
        return self.op(sid, "acquire", t0, t1, "ok", inv, dict(inv, token=tok))

    def rel(self, sid, t0, t1):
        return self.op(sid, "release", t0, t1, "ok", {"session": sid}, {"session": sid})

    def exp(self, sid, t0, t1):
        return self.op(sid, "expire", t0, t1, "ok", {"session": sid}, {"session": sid})

    def write(self, sid, t0, t1, tok, rev=None, probe=False):
        inv = {"session": sid, "token": tok, "probe": probe, "value": f"s:{tok}:{t0}"}
        typ = "ok" if rev is not None else "fail"
        ret = dict(inv, rev=rev) if rev is not None else dict(inv, error="stale")
        return self.op(sid, "write", t0, t1, typ, inv, ret)

    def obs(self, obs, t0, t1, after, sid, tok, rev, since=None, compacted=0):
        inv = {"observer": obs, "after": after}
        ret = dict(inv, sid=sid, token=tok, rev=rev, since_rev=tok if since is None else since,
                   compacted=compacted)
        return self.op(obs, "observe", t0, t1, "ok", inv, ret)

    def check(self):
        return checkers.check(self.wl, self.events)


def good_sem():
    """Three permits overlap, a fourth comes after one released, a frozen holder's probe
    write is refused and its session expires."""
    h = H("sem")
    h.acq(1, 0, 10, 5).acq(2, 1, 11, 6).acq(3, 2, 12, 7)
    h.write(1, 13, 14, 5, rev=8).rel(1, 20, 21)
    h.acq(4, 15, 25, 9).rel(4, 40, 41)
    h.write(2, 30, 31, 6, probe=True).exp(2, 18, 35)
    h.rel(3, 40, 42)
    return h


def test_sem_good_history_passes():
    v = good_sem().check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["max_live"] == 3 and v["stats"]["probes_refused"] == 1, v["stats"]


def test_sem_over_limit_fails():
    h = good_sem()
    h.acq(5, 3, 13, 8).rel(5, 16, 17)        # a fourth permit live at 13..16
    assert "over-limit" in kinds(h.check()), h.check()["violations"]


def weighted_sem():
    """Weighted: 2 + 1 permits overlap (3 of 3), then a 2-permit grant after the 1 released
    and... the 2 released: never more than 3 permits live."""
    h = H("sem")
    h.acq(1, 0, 10, 5, permits=2).acq(2, 1, 11, 6, permits=1)
    h.rel(2, 20, 21).rel(1, 22, 23)
    h.acq(3, 24, 30, 7, permits=2).acq(4, 25, 31, 8, permits=1).rel(3, 40, 41).rel(4, 40, 42)
    return h


def test_sem_weighted_good_history_passes():
    v = weighted_sem().check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["max_permits_live"] == 3 and v["stats"]["weighted_grants"] == 2, v["stats"]


def test_sem_weighted_over_limit_fails_though_only_two_holders_are_live():
    h = weighted_sem()
    h.acq(5, 32, 33, 9, permits=2).rel(5, 35, 36)  # 2 + 1 + 2 = 5 permits live at 33
    v = h.check()
    assert "over-limit" in kinds(v), v["violations"]
    h = H("sem")  # two acquisitions of 2: 4 permits, though a holder count would pass
    h.acq(1, 0, 10, 5, permits=2).acq(2, 1, 11, 6, permits=2).rel(1, 20, 21).rel(2, 20, 22)
    assert "over-limit" in kinds(h.check()), h.check()["violations"]


def test_sem_over_limit_by_revision_fails_though_the_clock_sees_no_overlap():
    """Grants 10 and 12 of 2 permits each: by the clock the second came after the first
    was released, but the fenced writes say grant 10 was still live at revision 15, after
    grant 12 (revision 12) took its permits: 4 permits live at revision 12."""
    h = H("sem")
    h.acq(1, 0, 10, 10, permits=2).write(1, 11, 12, 10, rev=15).rel(1, 13, 14)
    h.acq(2, 20, 30, 12, permits=2).write(2, 31, 32, 12, rev=13).rel(2, 33, 34)
    v = h.check()
    assert kinds(v) == ["over-limit-rev"], v["violations"]
    assert v["stats"]["rev_max_permits"] == 4 and v["stats"]["rev_judged_grants"] == 2
    h = H("sem")  # the same with grant 10's last write before grant 12: 2 permits at most
    h.acq(1, 0, 10, 10, permits=2).write(1, 11, 12, 10, rev=11).rel(1, 13, 14)
    h.acq(2, 20, 30, 12, permits=2).write(2, 31, 32, 12, rev=13).rel(2, 33, 34)
    v = h.check()
    assert v["valid"] is True and v["stats"]["rev_max_permits"] == 2, v


def queued(h, t0, t1, waiters, wanted):
    return h.op(900, "queue", t0, t1, "ok", {"key": "sem"},
                {"key": "sem", "waiters": waiters, "wanted": wanted})


def test_sem_fifo_head_not_overtaken_passes():
    """Session 2 asks for 3 permits while 1 holds one: a read shows it queued; session 3's
    request for 1, sent after the read, is granted after it."""
    h = H("sem")
    h.acq(1, 0, 10, 5).acq(2, 20, 60, 8, permits=3)
    queued(h, 30, 31, [2], [3])
    h.rel(1, 50, 51)
    h.acq(3, 40, 80, 9).rel(2, 70, 71).rel(3, 90, 91)
    v = h.check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["fifo_checked"] == 1 and v["stats"]["fifo_large"] == 1, v["stats"]


def test_sem_fifo_overtaken_fails():
    """The same, but session 3 (1 permit, sent after the read showed session 2 queued for 3)
    is granted first (token 7 < 8)."""
    h = H("sem")
    h.acq(1, 0, 10, 5).acq(2, 20, 60, 8, permits=3)
    queued(h, 30, 31, [2], [3])
    h.acq(3, 40, 45, 7).rel(3, 46, 47).rel(1, 50, 51).rel(2, 70, 71)
    assert kinds(h.check()) == ["overtaken"], h.check()["violations"]


def test_sem_expired_write_fails():
    h = H("sem")
    h.acq(1, 0, 10, 5).write(1, 30, 31, 5, rev=12, probe=True).exp(1, 15, 40)
    assert kinds(h.check()) == ["expired-write"], h.check()["violations"]


def test_sem_duplicate_token_fails():
    h = H("sem")
    h.acq(1, 0, 10, 5).acq(2, 1, 11, 5).rel(1, 20, 21).rel(2, 20, 22)
    assert "duplicate-token" in kinds(h.check())


def good_elect():
    """Leader 1 (token 5), resigns; leader 2 (token 8) proclaims and writes, is frozen, its
    probe write is refused, session expires; leader 3 (token 12).  An observer sees all three
    and a proclaim in between."""
    h = H("elect")
    h.acq(1, 0, 10, 5).write(1, 11, 12, 5, rev=6).rel(1, 20, 21)
    h.acq(2, 15, 22, 8).op(2, "proclaim", 23, 24, "ok", {"session": 2, "token": 8},
                          {"session": 2, "token": 8, "rev": 9})
    h.write(2, 25, 26, 8, rev=10).write(2, 40, 41, 8, probe=True).exp(2, 30, 45)
    h.acq(3, 31, 35, 12).write(3, 36, 37, 12, rev=13).rel(3, 50, 51)
    o = 900
    h.obs(o, 0, 11, 0, 1, 5, 5).obs(o, 11, 23, 5, 2, 8, 8).obs(o, 23, 25, 8, 2, 8, 9, since=8)
    h.obs(o, 25, 34, 9, 0, 0, 11, since=0).obs(o, 34, 36, 11, 3, 12, 12)
    return h


def test_elect_good_history_passes():
    v = good_elect().check()
    assert v["valid"] is True, v["violations"]
    st = v["stats"]
    assert st["observed_leaders"] == 3 and st["probes_refused"] == 1, st


def test_elect_two_leaders_fail():
    h = good_elect()
    h.acq(4, 16, 23, 9).rel(4, 28, 29)       # a second leader beside token 8
    assert "two-leaders" in kinds(h.check()), h.check()["violations"]
    h = H("elect")
    h.acq(1, 0, 10, 5).acq(2, 1, 11, 6).rel(1, 20, 21).rel(2, 20, 22)
    assert kinds(h.check()) == ["two-leaders"], h.check()["violations"]


def test_elect_expired_leader_write_fails():
    h = H("elect")
    h.acq(1, 0, 10, 5).write(1, 30, 31, 5, rev=20, probe=True).exp(1, 15, 40)
    assert "expired-write" in kinds(h.check()), h.check()["violations"]


def test_elect_deposed_leader_write_fails():
    h = H("elect")
    h.acq(1, 0, 10, 5).acq(2, 11, 20, 8).write(1, 21, 22, 5, rev=9)
    assert "stale-write" in kinds(h.check()), h.check()["violations"]


def test_elect_token_order_fails():
    h = H("elect")
    h.acq(1, 0, 10, 8).rel(1, 11, 12).acq(2, 13, 20, 5).rel(2, 21, 22)
    assert "token-order" in kinds(h.check()), h.check()["violations"]


def test_elect_observer_going_back_fails():
    # after the observer saw token 12 at revision 12: an older leader (token 8, a newer rev),
    # the same leader at an older revision, an answer not after its AFTER, a wrong since_rev
    # (an answer AFTER 0 may also skip or contradict others: observe-gap, observe-disagree)
    for after, sid, tok, rev, since in ((0, 2, 8, 14, None), (0, 3, 12, 11, None),
                                        (15, 3, 12, 14, None), (0, 3, 12, 14, 7)):
        h = good_elect()
        h.obs(900, 37, 38, after, sid, tok, rev, since=since)
        k = kinds(h.check())
        assert "observe-order" in k and set(k) <= OBSERVE_KINDS, (after, h.check()["violations"])
    h = good_elect()
    h.obs(901, 37, 38, 11, 7, 12, 12)          # token 12 was granted to session 3
    assert "observe-order" in kinds(h.check()), h.check()["violations"]


OBSERVE_KINDS = {"observe-order", "observe-gap", "observe-disagree"}
# good_elect's changes, as (rev, sid, token, since_rev): leader 1, leader 2, its proclaim,
# nobody, leader 3
CHANGES = [(5, 1, 5, 5), (8, 2, 8, 8), (9, 2, 8, 8), (11, 0, 0, 0), (12, 3, 12, 12)]


def walk(h, obs, t, after, changes):
    """Observer `obs` answered each of `changes` in turn, starting AFTER `after` at time t."""
    for rev, sid, tok, since in changes:
        h.obs(obs, t, t + 1, after, sid, tok, rev, since=since)
        after, t = rev, t + 1
    return h


def test_elect_observers_agree_passes():
    """Three observers: one walks every change, one starts in the middle, one's first answer
    is compacted (the current state, skipping changes): no violation, the changes they share
    are counted."""
    h = good_elect()                                   # observer 900 walks them all
    walk(h, 901, 12, 5, CHANGES[1:])
    h.obs(902, 20, 21, 0, 2, 8, 9, compacted=1)      # compacted: skipped 5 and 8
    walk(h, 902, 22, 9, CHANGES[3:])
    v = h.check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["observers"] == 3 and v["stats"]["observe_cross"] == 4, v["stats"]
    assert v["stats"]["observe_compacted"] == 1, v["stats"]


def test_elect_observer_skipping_a_leader_fails():
    """Observer 901 goes from leader 1 (rev 5) straight to leader 2's proclaim (rev 9), not
    compacted: it skipped leader 2's takeover at revision 8 that observer 900 saw."""
    h = good_elect()
    walk(h, 901, 12, 0, [CHANGES[0]] + CHANGES[2:])
    v = h.check()
    assert kinds(v) == ["observe-gap"], v["violations"]
    assert "revision 8" in v["violations"][0]["msg"], v["violations"]
    h = good_elect()                                   # skipping the leaderless state
    walk(h, 901, 12, 0, CHANGES[:3] + CHANGES[4:])
    assert kinds(h.check()) == ["observe-gap"], h.check()["violations"]
    h = good_elect()                                   # the same, flagged compacted: fine
    walk(h, 901, 12, 0, CHANGES[:3])
    h.obs(901, 20, 21, 9, 3, 12, 12, compacted=1)
    assert h.check()["valid"] is True, h.check()["violations"]


def test_elect_observers_disagreeing_fail():
    """Two observers with different leaders at one revision."""
    h = good_elect()
    walk(h, 901, 12, 5, [(8, 4, 8, 8)])
    assert "observe-disagree" in kinds(h.check()), h.check()["violations"]


def test_sem_elect_nothing_tested():
    import torture
    h = H("sem")
    h.acq(1, 0, 10, 5).rel(1, 20, 21).acq(2, 22, 30, 7).rel(2, 40, 41)
    assert torture.nothing_tested([h.check()]) == 1
    assert torture.nothing_tested([good_sem().check(), good_elect().check()]) == 0
    assert torture.nothing_tested([H("elect").acq(1, 0, 1, 5).check()]) == 1


if __name__ == "__main__":
    import test_checkers
    sys.exit(test_checkers.main())
