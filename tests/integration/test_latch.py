# SPDX-License-Identifier: Apache-2.0
"""Countdown latches and double barriers bound to sessions (docs/protocol.md "Latches and
barriers"): a parked LATCH.WAIT is released at zero and never before (only by the commit of the
last count-down); a joined session that ends before counting down (close, expiry) breaks the
latch for every parked and every later waiter with -BROKEN, never a wait forever; a barrier
fills and empties; across a kill -9 of a 3-node leader the latch and the barrier are intact on
the new leader, a parked waiter there is released at zero, and a LEAVE after the leader change
completes."""

import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_nil, expect_ok, no_reply, ok,
                     open_session, revision, wait_until)
from resp import Conn, RespError, as_map, text


def info(c, name):
    r = c.call("LATCH.INFO", name)
    if r is None:
        return None
    m = as_map(r)
    return {k: (text(v) if isinstance(v, bytes) else v) for k, v in m.items()}


def test_a_waiter_is_released_exactly_at_zero(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    ok(c.call("LATCH.CREATE", "L", 2))
    ok(c.call("LATCH.CREATE", "L", 2), "the same count again")
    expect_err(c.call("LATCH.CREATE", "L", 3), "ERR", "another count")
    ok(c.call("LATCH.JOIN", "L", a))
    ok(c.call("LATCH.JOIN", "L", b))
    expect_nil(c.call("LATCH.WAIT", "L"), "not at zero, no WAIT: nil at once")
    w = ctx.conn()
    w.send("LATCH.WAIT", "L", "WAIT", 30000)
    assert no_reply(w), "a waiter answered before any count-down"
    eq(expect_int(c.call("LATCH.COUNTDOWN", "L", a)), 1)
    eq(expect_int(c.call("LATCH.COUNTDOWN", "L", a)), 1, "a joined session counts down once")
    assert no_reply(w, 0.5), "a waiter was released before the last count-down"
    eq(info(c, "L")["remaining"], 1)
    eq(expect_int(c.call("LATCH.COUNTDOWN", "L", b)), 0)
    expect_ok(w.read_reply(timeout=10), "released at zero")
    m = info(c, "L")
    eq((m["state"], m["remaining"], m["joiners"], m["counted"]), ("zero", 0, [a, b], [1, 1]))
    ok(c.call("LATCH.WAIT", "L"), "a late waiter sees zero at once")
    ok(c.call("SESSION.CLOSE", a), "a session that counted down ends freely")
    ok(c.call("LATCH.WAIT", "L", "WAIT", 1000))
    eq(expect_int(c.call("LATCH.DELETE", "L")), 1)
    eq(c.call("LATCH.INFO", "L"), None)
    expect_err(c.call("LATCH.WAIT", "L"), "ERR", "no such latch")


def test_anonymous_countdowns_take_only_unpromised_counts(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    ok(c.call("LATCH.CREATE", "A", 2))
    ok(c.call("LATCH.JOIN", "A", a))
    eq(expect_int(c.call("LATCH.COUNTDOWN", "A", b)), 1, "b did not join: the unpromised count")
    rev = revision(c)
    expect_err(c.call("LATCH.COUNTDOWN", "A", b), "ERR", "the last count is a's promise")
    expect_err(c.call("LATCH.JOIN", "A", b), "ERR", "nothing left to promise")
    eq(revision(c), rev, "refused: nothing changed")
    eq(expect_int(c.call("LATCH.COUNTDOWN", "A", a)), 0)


def test_a_participant_closing_before_counting_down_breaks_the_latch_for_every_waiter(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    ok(c.call("LATCH.CREATE", "B", 2))
    ok(c.call("LATCH.JOIN", "B", a))
    ok(c.call("LATCH.JOIN", "B", b))
    eq(expect_int(c.call("LATCH.COUNTDOWN", "B", a)), 1)
    ws = [ctx.conn() for _ in range(3)]
    for w in ws:
        w.send("LATCH.WAIT", "B", "WAIT", 60000)
    assert all(no_reply(w) for w in ws)
    ok(c.call("SESSION.CLOSE", b))
    want = "BROKEN latch B: session %d ended before counting down" % b
    for w in ws:
        r = w.read_reply(timeout=10)
        assert isinstance(r, RespError) and str(r) == want, r
    r = c.call("LATCH.WAIT", "B", "WAIT", 60000)
    assert isinstance(r, RespError) and str(r) == want, "a later WAIT: at once, %r" % (r,)
    expect_err(c.call("LATCH.COUNTDOWN", "B", a), "BROKEN")
    eq(info(c, "B")["state"], "broken")
    eq(info(c, "B")["broken_sid"], b)
    eq(expect_int(c.call("LATCH.DELETE", "B")), 1, "a broken latch can be deleted")
    ok(c.call("LATCH.CREATE", "B", 1), "and created afresh")
    eq(expect_int(c.call("LATCH.COUNTDOWN", "B", a)), 0)


def test_a_participant_whose_session_expires_breaks_the_latch(ctx):
    c = ctx.conn()
    keep = open_session(c)
    short = expect_int(c.call("SESSION.OPEN", 1500))
    ok(c.call("LATCH.CREATE", "E", 2))
    ok(c.call("LATCH.JOIN", "E", keep))
    ok(c.call("LATCH.JOIN", "E", short))
    w = ctx.conn(timeout=60)
    w.send("LATCH.WAIT", "E", keep, "WAIT", 60000)
    c.call("SESSION.KEEPALIVE", keep)
    # the short session is never kept alive: it expires, and the waiter must not wait forever
    r = w.read_reply(timeout=45)
    assert isinstance(r, RespError) and str(r).startswith(
        "BROKEN latch E: session %d ended" % short), r
    eq(info(c, "E")["state"], "broken")
    xs = c.call("XREAD", "STREAMS", "fencelock:events:E", "0")
    kinds = [text(as_map(f)["type"]) for _id, f in
             (xs[0][1] if isinstance(xs, list) else list(xs.values())[0])]
    assert "latch-broken" in kinds, kinds


test_a_participant_whose_session_expires_breaks_the_latch.timeout = 60


def test_barrier_fills_then_empties(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    expect_nil(c.call("BARRIER.ENTER", "D", a, 2), "alone, no WAIT: nil (a stays inside)")
    wa = ctx.conn()
    wa.send("BARRIER.ENTER", "D", a, 2, "WAIT", 30000)
    assert no_reply(wa), "entered before the barrier was full"
    ok(c.call("BARRIER.ENTER", "D", b, 2, "WAIT", 30000), "the last to enter: at once")
    expect_ok(wa.read_reply(timeout=10), "released when full")
    eq(info(c, "D")["state"], "full")
    c2 = ctx.conn()
    expect_err(c2.call("BARRIER.ENTER", "D", open_session(c), 2), "ERR", "full: no newcomer")
    wa.send("BARRIER.LEAVE", "D", a, "WAIT", 30000)
    assert no_reply(wa), "left before everybody left"
    ok(c.call("BARRIER.LEAVE", "D", b, "WAIT", 30000))
    expect_ok(wa.read_reply(timeout=10), "released when everybody left")
    eq(c.call("LATCH.INFO", "D"), None, "the barrier is gone")


def test_a_session_ending_inside_a_barrier_breaks_it(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    w = ctx.conn()
    w.send("BARRIER.ENTER", "F", a, 3, "WAIT", 30000)
    assert no_reply(w)
    expect_nil(c.call("BARRIER.ENTER", "F", b, 3))
    ok(c.call("SESSION.CLOSE", b))
    r = w.read_reply(timeout=10)
    assert isinstance(r, RespError) and str(r).startswith("BROKEN barrier F: session %d" % b), r
    expect_err(c.call("BARRIER.LEAVE", "F", a), "BROKEN")


def test_latch_and_barrier_survive_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    lead = ready_leader(servers)
    with Conn(lead.port) as c:
        a, b, x, y = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(4))
        ok(c.call("LATCH.CREATE", "K", 2))
        ok(c.call("LATCH.JOIN", "K", a))
        ok(c.call("LATCH.JOIN", "K", b))
        eq(expect_int(c.call("LATCH.COUNTDOWN", "K", a)), 1)
        expect_nil(c.call("BARRIER.ENTER", "Q", x, 2))
        ok(c.call("BARRIER.ENTER", "Q", y, 2))
        expect_nil(c.call("BARRIER.LEAVE", "Q", x), "left; y is still inside: no WAIT, nil")
        eq(info(c, "Q")["joiners"], [y])
    parked = Conn(lead.port)
    parked.send("LATCH.WAIT", "K", "WAIT", 30000)
    assert no_reply(parked)
    lead.kill9()
    parked.close()
    rest = [s for s in servers if s is not lead]
    new = ready_leader(rest, timeout=20)
    with Conn(new.port) as c, Conn(new.port, timeout=30) as w, Conn(new.port, timeout=30) as wl:
        m = info(c, "K")
        eq((m["state"], m["remaining"], m["counted"]), ("counting", 1, [1, 0]),
           "the latch as it was")
        w.send("LATCH.WAIT", "K", "WAIT", 20000)
        assert no_reply(w, 0.5), "released early on the new leader"
        # x's leave applied before the kill; retried on the new leader, it waits for y
        wl.send("BARRIER.LEAVE", "Q", x, "WAIT", 20000)
        assert no_reply(wl, 0.5), "a retried leave answered before everybody left"
        expect_err(c.call("BARRIER.ENTER", "Q", x, 2), "ERR", "full: the barrier kept its phase")
        ok(c.call("BARRIER.LEAVE", "Q", y, "WAIT", 20000), "the last to leave, on the new leader")
        expect_ok(wl.read_reply(timeout=10), "the retried leave ends with everybody gone")
        eq(c.call("LATCH.INFO", "Q"), None)
        eq(expect_int(c.call("LATCH.COUNTDOWN", "K", b)), 0)
        expect_ok(w.read_reply(timeout=10), "released at zero on the new leader")
        for s in rest:  # every replica has applied the same state
            with Conn(s.port) as cs:
                cs.call("READONLY")
                wait_until(lambda: info(cs, "K") and info(cs, "K")["state"] == "zero", 10,
                           what="replica at zero")


test_latch_and_barrier_survive_a_leader_kill.timeout = 60


def test_barrier_leave_parked_across_a_leader_change(ctx):
    servers = start_cluster(ctx)
    lead = ready_leader(servers)
    with Conn(lead.port) as c:
        x, y = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(2))
        expect_nil(c.call("BARRIER.ENTER", "R", x, 2))
        ok(c.call("BARRIER.ENTER", "R", y, 2))
    wl = Conn(lead.port, timeout=30)
    wl.send("BARRIER.LEAVE", "R", x, "WAIT", 30000)
    with Conn(lead.port) as c:
        wait_until(lambda: info(c, "R")["remaining"] == 1, 10, what="x's leave applied")
    assert no_reply(wl), "x left alone: it waits for y"
    lead.kill9()
    wl.close()
    rest = [s for s in servers if s is not lead]
    new = ready_leader(rest, timeout=20)
    with Conn(new.port, timeout=30) as c, Conn(new.port, timeout=30) as w:
        eq(info(c, "R")["remaining"], 1, "x's leave was applied before the kill")
        eq(info(c, "R")["joiners"], [y])
        w.send("BARRIER.LEAVE", "R", x, "WAIT", 20000)  # the client's retry on the new leader
        assert no_reply(w, 0.5), "the retry answered before y left"
        ok(c.call("BARRIER.LEAVE", "R", y, "WAIT", 20000), "y, the last, on the new leader")
        expect_ok(w.read_reply(timeout=10), "x's retried leave: everybody has left")
        ok(c.call("BARRIER.LEAVE", "R", x, "WAIT", 20000), "after everybody left: OK")


test_barrier_leave_parked_across_a_leader_change.timeout = 60


def test_cli_latch_create_countdown_wait_info_delete(ctx):
    import os
    import subprocess
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    srv = ctx.server()
    ep = ["--endpoints", "127.0.0.1:%d" % srv.port]

    def run(*args):
        return subprocess.run([cli] + ep + list(args), capture_output=True, text=True,
                              timeout=60)

    eq(run("latch", "create", "cl", "2").returncode, 0)
    eq(run("latch", "wait", "cl").returncode, 3, "not at zero: the wait ran out")
    p = run("latch", "countdown", "cl")
    eq((p.returncode, p.stdout.strip()), (0, "1"))
    eq(run("latch", "info", "cl").stdout.split()[:4], ["latch", "counting", "2", "1"])
    eq(run("latch", "countdown", "cl").stdout.strip(), "0")
    eq(run("latch", "wait", "cl", "--wait", "5s").returncode, 0, "at zero")
    with Conn(srv.port) as c:
        s = open_session(c)
        ok(c.call("LATCH.CREATE", "cb", 1))
        ok(c.call("LATCH.JOIN", "cb", s))
        ok(c.call("SESSION.CLOSE", s))
    p = run("latch", "wait", "cb", "--wait", "5s")
    eq(p.returncode, 4, "broken")
    assert "BROKEN latch cb: session %d" % s in p.stderr, p.stderr
    eq(run("latch", "delete", "cb").stdout.strip(), "1")
    eq(run("latch", "info", "cb").returncode, 1, "gone")
    eq(run("latch", "bogus", "x").returncode, 2)
