# SPDX-License-Identifier: Apache-2.0
"""Tests of the multilock checker (checkers_holds.check_multilock): it passes a good history and
fails the broken ones: two holds of one name at once, a stale fenced write of one name, a
grant whose tokens are not one entry's.  Run through test_checkers.py (which collects every
test_* function here) or alone: python3 tests/torture/test_checkers_multi.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402


def kinds(v):
    return sorted({x["kind"] for x in v["violations"]})


class ML:
    """multilock history builder: times in ms (converted to ns), one proc per session."""

    def __init__(self):
        self.events = []

    def op(self, proc, f, t0, t1, typ="ok", inv=None, ret=None):
        base = {"proc": proc, "f": f, "workload": "multilock"}
        self.events.append(dict(base, type="invoke", time=int(t0 * 1e6), **(inv or {})))
        if typ is not None:
            self.events.append(dict(base, type=typ, time=int(t1 * 1e6), **(ret or {})))
        return self

    def acq(self, sid, t0, t1, names, modes, toks, typ="ok"):
        inv = {"session": sid, "names": names, "modes": modes}
        return self.op(sid, "acquire", t0, t1, typ, inv,
                       dict(inv, tokens=toks) if typ == "ok" else inv)

    def rel(self, sid, t0, t1):
        return self.op(sid, "release", t0, t1, "ok", {"session": sid}, {"session": sid})

    def write(self, sid, t0, t1, name, tok, rev, mode="exclusive", typ="ok"):
        inv = {"session": sid, "mode": mode, "token": tok, "key": "ml-reg/" + name, "name": name,
               "value": f"m:{tok}:{t0}"}
        ret = dict(inv, rev=rev) if typ == "ok" else dict(inv, error="stale fencing token")
        return self.op(sid, "write", t0, t1, typ, inv, ret)

    def check(self):
        return checkers.check("multilock", self.events)


def good():
    """Sessions 1 and 2 ask for overlapping sets in opposite orders: one after the other; a
    disjoint set (session 3) runs beside session 1; readers of ml/c overlap."""
    h = ML()
    h.acq(1, 0, 10, ["ml/b", "ml/a"], ["exclusive", "exclusive"], [11, 10])
    h.acq(3, 2, 12, ["ml/c", "ml/d"], ["shared", "exclusive"], [12, 13])
    h.write(1, 15, 20, "ml/a", 10, 20).write(1, 16, 21, "ml/b", 11, 21)
    h.write(3, 17, 22, "ml/d", 13, 22)
    h.rel(1, 30, 32).rel(3, 31, 33)
    h.acq(2, 5, 40, ["ml/a", "ml/b", "ml/c"], ["exclusive", "exclusive", "shared"],
          [30, 31, 32])
    h.write(2, 45, 50, "ml/b", 31, 40)
    h.rel(2, 60, 62)
    return h


def test_multilock_good_history_passes():
    v = good().check()
    assert v["valid"] is True, v["violations"]
    assert v["stats"]["multi_grants"] == 3 and v["stats"]["ok_writes"] == 4, v["stats"]


def test_multilock_two_holds_of_one_name_at_once_are_a_violation():
    h = good()
    h.acq(4, 33, 35, ["ml/d", "ml/b"], ["exclusive", "exclusive"], [25, 26])  # b: session 2's
    h.rel(4, 70, 71)
    v = h.check()
    assert v["valid"] is False and "exclusive-overlap" in kinds(v), kinds(v)


def test_multilock_a_stale_fenced_write_is_a_violation():
    h = good()
    h.write(1, 50, 55, "ml/a", 10, 45)  # a's grant 30 was acknowledged before it was sent
    v = h.check()
    assert v["valid"] is False and "stale-write" in kinds(v), kinds(v)


def test_multilock_tokens_of_one_grant_not_consecutive_are_a_violation():
    h = ML()
    h.acq(1, 0, 10, ["ml/a", "ml/b"], ["exclusive", "exclusive"], [10, 12]).rel(1, 20, 21)
    v = h.check()
    assert v["valid"] is False and "not-one-entry" in kinds(v), kinds(v)


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok  ", name)
