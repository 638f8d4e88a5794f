# SPDX-License-Identifier: Apache-2.0
"""Cooperative revocation (LOCK.REVOKE, docs/protocol.md "Revocation"): the holder's session
gets a revoke-requested event on the event stream; a holder that lets go hands the lock to the
next waiter at once; one that ignores it loses the grant at the deadline as an expiry takes it
(lock-delay, then a larger token for the next waiter, the old token stale for FENCE.CHECK and
fenced PUTs), while its session lives on; a leader killed with -9 between the revoke and the
deadline is replaced by one that still releases the grant; without `revoke` (or admin) on the
lock's glob the command is refused and nothing changes."""

import os

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_ok, lock_info, open_session, session_info,
                     wait_queued, wait_until)
from resp import Conn, RespError
from test_auth import _authed, _hash
from test_watch import read_all

STREAM = "fencelock:events:r/"


def _revoke_events(c, stream=STREAM):
    return [f for _, f in read_all(c, stream=stream) if f["type"] == "revoke-requested"]


def test_revoke_tells_the_holder_who_lets_go_and_the_waiter_is_granted(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    b = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "r/L", a))
    w = ctx.conn()
    w.send("LOCK", "r/L", b, "WAIT", 60000)
    wait_queued(c, "r/L", b)
    eq(expect_int(c.call("LOCK.REVOKE", "r/L", "DEADLINE", 60000, "REASON", "deploy")), t)
    ev = _revoke_events(c)
    eq(len(ev), 1, ev)
    eq({k: v for k, v in ev[0].items() if k != "by"},
       {"type": "revoke-requested", "name": "r/L", "token": str(t), "sid": str(a),
        "deadline_ms": "60000", "reason": "deploy"})
    assert ev[0]["by"].startswith("127.0.0.1:"), ev[0]  # no --acl-file: the address
    eq(lock_info(c, "r/L")["holder"], a, "asking takes nothing")
    expect_ok(c.call("UNLOCK", "r/L", a))  # the holder lets go
    t2 = expect_int(w.read_reply(timeout=20), "the waiter's grant")
    assert t2 > t, (t2, t)
    eq(lock_info(c, "r/L")["holder"], b)
    # the cancelled revoke never takes b's grant: a revoke of b's is a new one
    eq(expect_int(c.call("LOCK.REVOKE", "r/L")), t2)
    eq(lock_info(c, "r/L")["holder"], b)


def test_an_ignored_revoke_releases_at_the_deadline_as_an_expiry(ctx):
    c = ctx.conn()
    a = open_session(c, 60000, "LOCKDELAY", 300)
    b = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "r/L", a))
    expect_int(c.call("PUT", "r/k", "a1", "FENCE", "r/L", t))
    w = ctx.conn()
    w.send("LOCK", "r/L", b, "WAIT", 60000)
    wait_queued(c, "r/L", b)
    eq(expect_int(c.call("LOCK.REVOKE", "r/L", "DEADLINE", 500)), t)
    t2 = expect_int(w.read_reply(timeout=30), "the waiter's grant after the deadline")
    assert t2 > t, (t2, t)
    expect_err(c.call("FENCE.CHECK", "r/L", t), "STALE", "the revoked token")
    expect_err(c.call("PUT", "r/k", "a2", "FENCE", "r/L", t), "STALE", "a fenced PUT")
    expect_int(c.call("PUT", "r/k", "b1", "FENCE", "r/L", t2))
    assert not isinstance(session_info(c, a), RespError), "the holder's session lives on"
    wait_until(lambda: "session %d passed a revoke's deadline while holding 'r/L' (token %d)"
               % (a, t) in ctx.srv.log_text(), 10, what="the forced release in the log")
    types = [(f["type"], f.get("sid"), f.get("token")) for _, f in read_all(c, stream=STREAM)
             if f["type"] in ("revoke-requested", "expire", "lockdelay", "grant")]
    eq(types, [("grant", str(a), str(t)), ("revoke-requested", str(a), str(t)),
               ("expire", str(a), str(t)), ("lockdelay", None, None),
               ("grant", str(b), str(t2))])


def test_revoke_of_a_free_lock_or_with_bad_options_is_refused_and_changes_nothing(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    expect_err(c.call("LOCK.REVOKE", "r/free"), "NOTHOLDER")
    eq(lock_info(c, "r/free"), None)
    t = expect_int(c.call("LOCK", "r/L", a))
    for bad in (("DEADLINE", 0), ("DEADLINE", "x"), ("DEADLINE",), ("SOON", 1),
                ("DEADLINE", 5, "DEADLINE", 6), ("REASON", "x" * 5000)):
        expect_err(c.call("LOCK.REVOKE", "r/L", *bad), ("ERR", "TOOLARGE"), repr(bad))
    expect_int(c.call("SEM.ACQUIRE", "r/S", a, 2))
    expect_err(c.call("LOCK.REVOKE", "r/S"), "WRONGTYPE")
    eq(_revoke_events(c), [], "no revoke was recorded")
    info = lock_info(c, "r/L")
    eq((info["holder"], info["token"]), (a, t))


def test_revoke_needs_the_revoke_permission_on_the_lock_or_admin(ctx):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        for u, perm in (("alice", "read,lock"), ("bob", "read,lock"),
                        ("carol", "revoke locks=r/*"), ("root", "all")):
            f.write("user %s %s perm=%s\n" % (u, _hash(ctx, u + "pw"), perm))
    os.chmod(path, 0o600)
    s = ctx.server("--acl-file", path, start=False)
    s.auth = ("root", "rootpw")
    s.start()
    alice, bob, carol, root = (_authed(ctx, s, u, u + "pw")
                               for u in ("alice", "bob", "carol", "root"))
    a = expect_int(alice.call("SESSION.OPEN", 60000))
    t = expect_int(alice.call("LOCK", "r/L", a))
    expect_int(alice.call("LOCK", "x/L", a))
    expect_err(bob.call("LOCK.REVOKE", "r/L"), "NOPERM", "bob has no revoke")
    expect_err(alice.call("LOCK.REVOKE", "r/L"), "NOPERM", "the holder itself has no revoke")
    expect_err(carol.call("LOCK.REVOKE", "x/L"), "NOPERM", "outside carol's locks= glob")
    eq(_revoke_events(root, "fencelock:events"), [], "refused revokes change nothing")
    eq(expect_int(carol.call("LOCK.REVOKE", "r/L", "REASON", "rotate")), t)
    eq(expect_int(root.call("LOCK.REVOKE", "x/L")), lock_info(root, "x/L")["token"])
    ev = _revoke_events(root, "fencelock:events")
    eq([(f["name"], f["by"].split("@")[0]) for f in ev], [("r/L", "carol"), ("x/L", "root")])


def test_revoke_deadline_survives_a_leader_kill9_three_nodes(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port, timeout=10) as c:
        a = open_session(c, 60000)
        b = open_session(c, 60000)
        t = expect_int(c.call("LOCK", "r/L", a))
    # b waits in the log (its WAIT far beyond the test), from a connection we may lose
    w = Conn(leader.port, timeout=10)
    w.send("LOCK", "r/L", b, "WAIT", 600000)
    with Conn(leader.port, timeout=10) as c:
        wait_queued(c, "r/L", b)
        # long enough that the kill and the election come first (checked below)
        eq(expect_int(c.call("LOCK.REVOKE", "r/L", "DEADLINE", 8000)), t)
    leader.kill9()
    w.close()
    leader = ready_leader([s for s in servers if s.running()], timeout=30)
    with Conn(leader.port, timeout=10) as c:
        info = lock_info(c, "r/L")
        eq((info["holder"], info["token"]), (a, t), "still a's grant when the new leader is up")
        # the new leader restarts the deadline at its full length and releases the grant
        wait_until(lambda: lock_info(c, "r/L")["holder"] == b, timeout=60, interval=0.2,
                   what="the revoked grant handed to the waiter by the new leader")
        t2 = lock_info(c, "r/L")["token"]
        assert t2 > t, (t2, t)
        expect_err(c.call("FENCE.CHECK", "r/L", t), "STALE")
        assert not isinstance(session_info(c, a), RespError), "a's session lives on"


def test_cli_lock_forwards_a_revoke_to_the_command_and_revoke_prints_the_token(ctx):
    """`fencelock lock NAME --revoke-signal USR1 -- sh -c ...`: the command gets USR1 when
    `fencelock revoke NAME` asks; it exits, the lock is released and the waiter gets it."""
    from test_cli import run, run_ok, spawn
    srv = ctx.server()
    c = ctx.conn()
    mark, started = ctx.tmp("got-usr1"), ctx.tmp("started")
    script = ("trap 'echo usr1 > %s; exit 7' USR1; echo up > %s; "
              "while :; do sleep 0.05; done" % (mark, started))
    p = spawn(ctx, [srv], "lock", "r/C", "--ttl", "30s", "--revoke-signal", "USR1", "--",
              "sh", "-c", script)
    wait_until(lambda: os.path.exists(started), timeout=30, what="the command under the lock")
    t = lock_info(c, "r/C")["token"]
    r = run_ok(ctx, [srv], "revoke", "r/C", "--deadline", "60s", "--reason", "deploy")
    eq(int(r.out.strip()), t)
    eq(p.wait(60), 7, "fencelock exits with the command's status")
    with open(mark) as f:
        eq(f.read().strip(), "usr1")
    with open(p.err_path) as f:
        err = f.read()
    assert "revoke requested by 127.0.0.1:" in err and "deploy" in err, err
    eq(lock_info(c, "r/C"), None, "released when the command exited")
    r = run(ctx, [srv], "revoke", "r/C")
    eq(r.rc, 1, "nobody holds it: exit 1")


def test_cli_lock_kills_a_command_that_ignores_the_revoke_before_its_deadline(ctx):
    from test_cli import spawn
    srv = ctx.server()
    c = ctx.conn()
    started = ctx.tmp("started")
    script = "trap '' TERM; echo up > %s; while :; do sleep 0.05; done" % started
    p = spawn(ctx, [srv], "lock", "r/K", "--ttl", "30s", "--kill-grace", "1s", "--",
              "sh", "-c", script)
    wait_until(lambda: os.path.exists(started), timeout=30, what="the command under the lock")
    t = lock_info(c, "r/K")["token"]
    eq(expect_int(c.call("LOCK.REVOKE", "r/K", "DEADLINE", 3000)), t)
    eq(p.wait(60), 5, "killed for the revoke: exit 5")
    with open(p.err_path) as f:
        err = f.read()
    assert "killed before the revoke's deadline" in err, err
    info = lock_info(c, "r/K")
    assert info is None or info["token"] != t, info


def test_lock_notify_tells_the_holder_once_per_waiter(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    b = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "r/N", a, "NOTIFY"))
    expect_err(c.call("LOCK", "r/N", b, "SHARED", "NOTIFY"), "ERR")
    w = ctx.conn()
    w.send("LOCK", "r/N", b, "WAIT", 60000, "NOTIFY")
    wait_queued(c, "r/N", b)
    w2 = ctx.conn()
    w2.send("LOCK", "r/N", b, "WAIT", 60000, "NOTIFY")  # a retry of the queued session
    ev = [f for _, f in read_all(c, stream=STREAM) if f["type"] == "wait-notify"]
    eq(ev, [{"type": "wait-notify", "name": "r/N", "token": str(t), "sid": str(b),
             "wait_ms": "60000"}])
    expect_ok(c.call("UNLOCK", "r/N", a))
    t2 = expect_int(w.read_reply(timeout=20))
    eq(expect_int(w2.read_reply(timeout=20)), t2)
    ev = [f for _, f in read_all(c, stream=STREAM) if f["type"] == "wait-notify"]
    eq(len(ev), 1, "told once: %r" % ev)
