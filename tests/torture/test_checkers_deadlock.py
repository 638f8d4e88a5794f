# SPDX-License-Identifier: Apache-2.0
"""Tests of the deadlock checker (checkers_deadlock.py): a good history passes; a cycle left
queued, a refusal naming no real cycle, a refusal without its event and an unreadable stream
are each found.  Run through test_checkers.py (which collects every test_* function here) or
alone: python3 tests/torture/test_checkers_deadlock.py."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import checkers  # noqa: E402


def kinds(v):
    return sorted({x["kind"] for x in v["violations"]})


def ev(t, name, sid, **kw):
    return dict({"type": t, "name": name, "sid": str(sid)}, **kw)


# sessions 1 and 2: 1 holds a, 2 holds b, 1 waits for b; 2's wait for a is refused (rev 5)
GOOD = [["1-0", ev("grant", "a", 1, token="1")], ["2-0", ev("grant", "b", 2, token="2")],
        ["3-0", ev("wait", "b", 1, wait_ms="2000")],
        ["5-0", ev("deadlock", "a", 2, value="2 -a-> 1 -b-> 2")],
        ["6-0", ev("release", "b", 2, token="2")], ["6-1", ev("grant", "b", 1, token="6")]]


def history(entries, refused=1):
    out = []
    for k in range(refused):
        base = {"proc": 2, "f": "lock", "workload": "deadlock", "key": "a", "session": 2}
        out.append(dict(base, type="invoke", time=100 + k))
        out.append(dict(base, type="fail", time=200 + k, error="deadlock",
                        msg="DEADLOCK cycle of 2: 2 -a-> 1 -b-> 2"))
    out.append({"type": "final", "workload": "deadlock", "value": len(entries),
                "entries": entries, "time": 1000})
    return out


def check(h):
    return checkers.check("deadlock", h)


def test_deadlock_good_history_passes():
    v = check(history(GOOD))
    assert v["valid"] is True, v
    assert v["stats"]["deadlocks"] == 1 and v["stats"]["refused"] == 1, v


def test_deadlock_a_cycle_left_queued_is_found():
    bad = GOOD[:3] + [["4-0", ev("wait", "a", 2, wait_ms="2000")]]
    assert "cycle-left" in kinds(check(history(bad, refused=0))), kinds(check(history(bad, 0)))


def test_deadlock_a_refusal_naming_no_real_cycle_is_found():
    bad = [GOOD[0], GOOD[1], ["5-0", ev("deadlock", "a", 2, value="2 -a-> 1 -b-> 2")]]
    assert "false-deadlock" in kinds(check(history(bad)))  # 1 never waited for b


def test_deadlock_a_refusal_without_its_event_is_found():
    assert "deadlock-count" in kinds(check(history(GOOD, refused=2)))


def test_deadlock_an_unread_stream_is_unknown():
    h = [e for e in history(GOOD) if e["type"] != "final"]
    h.append({"type": "final", "workload": "deadlock", "value": -1, "stream": "/nonexistent",
              "time": 1000})
    v = check(h)
    assert v["valid"] == "unknown" and "stream-unknown" in kinds(v), v


if __name__ == "__main__":
    fails = 0
    for name in sorted(n for n in dir() if n.startswith("test_")):
        try:
            globals()[name]()
            print("ok", name)
        except AssertionError as e:
            fails += 1
            print("not ok", name, e)
    print("tests: %d passed, %d failed" % (len([n for n in dir() if n.startswith("test_")])
                                              - fails, fails))
    sys.exit(1 if fails else 0)
