# SPDX-License-Identifier: Apache-2.0
"""`fencelock latch join NAME -- CMD` and `fencelock barrier NAME COUNT -- CMD` (docs/fencelock.1):
a joined CMD that exits 0 counts down; one that fails, is killed, or whose CLI is killed leaves
the latch BROKEN for its waiters (never a wait for ever); several CLI processes meet at a
barrier: no CMD runs before COUNT entered, a CLI whose CMD is done waits until every member
left, and each exits with its CMD's status."""

import os
import signal

from helpers import eq, expect_int, expect_ok, ok, wait_until
from test_cli import run, spawn
from test_latch import info


def read(path):
    with open(path) as f:
        return f.read()


def test_cli_latch_join_counts_down_only_when_cmd_succeeds(ctx):
    srv = ctx.srv
    c = ctx.conn()
    ok(c.call("LATCH.CREATE", "J", 3))
    r = run(ctx, [srv], "latch", "join", "J", "--", "sh", "-c", "test \"$FENCELOCK_MODE\" = latch")
    eq(r.rc, 0, r.err)
    eq(info(c, "J")["remaining"], 2, "CMD exited 0: counted down")
    r = run(ctx, [srv], "latch", "join", "J", "--", "sh", "-c", "exit 7")
    eq(r.rc, 7, "CMD's status")
    assert "latch is broken" in r.err, r.err
    m = info(c, "J")
    eq((m["state"], m["remaining"]), ("broken", 2), "failed CMD: no count-down, broken")
    r = run(ctx, [srv], "latch", "wait", "J", "--wait", "1s")
    eq(r.rc, 4, "a waiter sees BROKEN at once")
    assert "BROKEN" in r.err, r.err
    r = run(ctx, [srv], "latch", "join", "J", "--", "true")
    eq(r.rc, 4, "joining a broken latch")
    r = run(ctx, [srv], "latch", "join", "nosuch", "--", "true")
    eq(r.rc, 4, "joining a latch that does not exist")
    r = run(ctx, [srv], "latch", "join", "J")
    eq(r.rc, 2, "no command")


def test_cli_latch_join_killed_cmd_or_cli_breaks_the_latch_for_a_waiting_waiter(ctx):
    srv = ctx.srv
    c = ctx.conn()
    d = ctx.tmp("lj")
    os.makedirs(d, exist_ok=True)
    for name, victim in (("K1", "cmd"), ("K2", "cli")):
        ok(c.call("LATCH.CREATE", name, 2))
        waiter = spawn(ctx, [srv], "latch", "wait", name, "--wait", "120s")
        pidfile = os.path.join(d, name + ".pid")
        # "cmd": a long TTL, so only the CLI's own close (not an expiry) can break the latch in
        # time; "cli": the killed CLI's session must expire, so a short one
        ttl = "120s" if victim == "cmd" else "2s"
        joined = spawn(ctx, [srv], "latch", "join", name, "--ttl", ttl, "--", "sh", "-c",
                       "echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 600"
                       % (pidfile, pidfile, pidfile))
        wait_until(lambda: os.path.exists(pidfile), timeout=30, what="the joined CMD runs")
        eq(len(info(c, name)["joiners"]), 1, "the CLI's session joined")
        assert waiter.poll() is None, "the waiter ended before anything happened"
        if victim == "cmd":
            os.kill(int(read(pidfile)), signal.SIGKILL)
            eq(joined.wait(30), 128 + signal.SIGKILL, "the CLI exits with CMD's status")
        else:
            joined.send_signal(signal.SIGKILL)  # the CLI dies: its session expires (TTL 2s)
            joined.wait(30)
        eq(waiter.wait(60), 4, "the waiter sees BROKEN, not a wait for ever")
        assert "BROKEN" in read(waiter.err_path), read(waiter.err_path)
        eq(info(c, name)["state"], "broken")


def test_cli_barrier_members_meet_run_and_leave_together(ctx):
    srv = ctx.srv
    c = ctx.conn()
    d = ctx.tmp("bar")
    os.makedirs(d, exist_ok=True)
    go = os.path.join(d, "go")

    def member(i, status, block=False):
        script = "touch %s/ran%d; " % (d, i)
        if block:
            script += "while [ ! -e %s ]; do sleep 0.05; done; " % go
        script += "exit %d" % status
        return spawn(ctx, [srv], "barrier", "B", 3, "--", "sh", "-c", script)

    first = [member(0, 0), member(1, 5)]
    wait_until(lambda: len((info(c, "B") or {}).get("joiners") or []) == 2, timeout=30,
               what="two members inside")
    eq(info(c, "B")["state"], "filling")
    assert not any(os.path.exists(os.path.join(d, "ran%d" % i)) for i in range(2)), \
        "a CMD ran before COUNT members entered"
    last = member(2, 0, block=True)
    wait_until(lambda: all(os.path.exists(os.path.join(d, "ran%d" % i)) for i in range(3)),
               timeout=30, what="every CMD runs once the barrier is full")
    # the first two are done and have left; the third's CMD still runs, so they wait
    wait_until(lambda: len((info(c, "B") or {}).get("joiners") or []) == 1, timeout=30,
               what="two members left")
    assert all(p.poll() is None for p in first), "a member exited before every member left"
    open(go, "w").close()
    eq([p.wait(60) for p in first + [last]], [0, 5, 0], "each CLI exits with its CMD's status")
    eq(info(c, "B"), None, "everybody left: the barrier is gone")


def test_cli_barrier_not_full_in_time_withdraws_and_a_killed_member_breaks_it(ctx):
    srv = ctx.srv
    c = ctx.conn()
    r = run(ctx, [srv], "barrier", "W", 2, "--wait", "300ms", "--", "true")
    eq(r.rc, 3, "not full within --wait")
    eq(info(c, "W"), None, "it withdrew: nothing left behind, nothing broken")
    d = ctx.tmp("barb")
    os.makedirs(d, exist_ok=True)
    a = spawn(ctx, [srv], "barrier", "X", 3, "--ttl", "2s", "--", "true")
    b = spawn(ctx, [srv], "barrier", "X", 3, "--", "true")
    wait_until(lambda: len((info(c, "X") or {}).get("joiners") or []) == 2, timeout=30,
               what="two members inside")
    a.send_signal(signal.SIGKILL)  # dies inside: its session expires, the barrier breaks
    eq(b.wait(60), 4, "the other member sees BROKEN")
    assert "BROKEN" in read(b.err_path), read(b.err_path)
    eq(info(c, "X")["state"], "broken")
    r = run(ctx, [srv], "barrier", "X", 3, "--", "true")
    eq(r.rc, 4, "entering a broken barrier")
    expect_int(c.call("LATCH.DELETE", "X"))
    expect_ok(c.call("LATCH.CREATE", "after", 1))
