# SPDX-License-Identifier: Apache-2.0
"""Pipelined requests are answered in order, also behind a blocked LOCK ... WAIT."""

import time

from helpers import eq, expect_int, ok, open_session, wait_queued, wait_until, RespError


def test_pipelined_commands_answered_in_order(ctx):
    c = ctx.conn()
    cmds, checks = [], []
    for i in range(200):
        k = "key%03d" % i
        cmds += [("PING",), ("PUT", k, "v%d" % i), ("GET", k), ("PING", "m%d" % i),
                 ("KV.GET", k), ("DEL", k), ("GET", k), ("FOO",)]
        checks += [lambda r: r == "PONG",
                   lambda r: isinstance(r, int) and not isinstance(r, bool),
                   (lambda i: lambda r: r == b"v%d" % i)(i),
                   (lambda i: lambda r: r == b"m%d" % i)(i),
                   (lambda i: lambda r: isinstance(r, list) and b"v%d" % i in r)(i),
                   lambda r: r == 1,
                   lambda r: r is None,
                   lambda r: isinstance(r, RespError) and r.code == "ERR"]
    replies = c.pipeline(cmds, timeout=20)
    revs = []
    for n, (cmd, r, chk) in enumerate(zip(cmds, replies, checks)):
        assert chk(r), "reply #%d to %r is %r" % (n, cmd, r)
        if cmd[0] == "PUT":
            revs.append(r)
    assert revs == sorted(revs) and len(set(revs)) == len(revs), "PUT revisions not rising"


def test_pipelined_inline_commands(ctx):
    c = ctx.conn()
    c.send_raw(b"PING\r\nPUT a 1\r\nGET a\r\nping\n")
    eq(c.read_reply(), "PONG")
    expect_int(c.read_reply())
    eq(c.read_reply(), b"1")
    eq(c.read_reply(), "PONG", "inline command ending in a bare LF, lower case")


def test_reply_order_kept_behind_blocked_lock(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    t1 = expect_int(c.call("LOCK", "x", holder))
    w = ctx.conn()
    w.send_raw(b"".join([
        b"*5\r\n$4\r\nLOCK\r\n$1\r\nx\r\n$%d\r\n%d\r\n$4\r\nWAIT\r\n$4\r\n3000\r\n"
        % (len(str(s2)), s2),
        b"*1\r\n$4\r\nPING\r\n",
        b"*2\r\n$4\r\nPING\r\n$5\r\nafter\r\n",
    ]))
    wait_queued(c, "x", s2)
    assert not w.has_data(0.3), "a reply arrived while the LOCK in front was still blocked"
    ok(c.call("UNLOCK", "x", holder))
    t2 = w.read_reply(timeout=3)
    assert isinstance(t2, int) and t2 > t1, "first reply must be the LOCK token, got %r" % (t2,)
    eq(w.read_reply(timeout=3), "PONG", "second reply")
    eq(w.read_reply(timeout=3), b"after", "third reply")


def test_reply_order_kept_behind_lock_wait_timeout(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    expect_int(c.call("LOCK", "x", holder))
    w = ctx.conn()
    t0 = time.monotonic()
    replies = w.pipeline([("LOCK", "x", s2, "WAIT", 500), ("PING",), ("GET", "nothing")],
                         timeout=5)
    elapsed = time.monotonic() - t0
    eq(replies, [None, "PONG", None], "replies behind a timed-out LOCK WAIT")
    assert elapsed >= 0.5, "LOCK WAIT 500 answered after %.0f ms" % (elapsed * 1000)


def test_pipelined_read_sees_state_before_later_write(ctx):
    c = ctx.conn()
    r = c.pipeline([("PUT", "d", "1"), ("GET", "d"), ("GET", "d"), ("KV.GET", "d"),
                    ("PUT", "d", "2"), ("GET", "d")])
    eq(r[1:3], [b"1", b"1"], "GETs pipelined before the second PUT")
    assert isinstance(r[3], list) and b"1" in r[3], \
        "KV.GET pipelined before the second PUT saw %r" % (r[3],)
    eq(r[5], b"2", "GET after the second PUT")
    s = open_session(c)
    r = c.pipeline([("LOCK", "l", s), ("LOCK.INFO", "l"), ("FENCE.CHECK", "l", 0),
                    ("UNLOCK", "l", s), ("LOCK.INFO", "l")])
    assert isinstance(r[1], list) and s in r[1], \
        "LOCK.INFO pipelined between LOCK and UNLOCK saw %r" % (r[1],)
    eq(r[4], None, "LOCK.INFO after the UNLOCK")


def test_writes_arriving_together_share_one_log_entry(ctx):
    """Group commit: commands read in one turn of the event loop are proposed as one batch
    entry. 20 PUTs from 20 connections are queued while the server is frozen, so it reads them
    all in one turn: they must take far fewer than 20 log entries, and each is still answered
    with its own revision, in order of arrival."""
    s = ctx.server()
    info_c = ctx.conn()

    def applied():
        return int(dict(l.split(":", 1) for l in info_c.call("INFO", "raft").decode().split("\r\n")
                        if ":" in l)["applied_index"])
    conns = [ctx.conn() for _ in range(20)]
    expect_int(conns[0].call("PUT", "warm", "up"))
    before = applied()
    s.sigstop()
    for i, c in enumerate(conns):
        c.send_raw(b"*3\r\n$3\r\nPUT\r\n$2\r\nk%d\r\n$1\r\nv\r\n" % (i % 10))
    time.sleep(0.2)
    s.sigcont()
    revs = [expect_int(c.read_reply()) for c in conns]
    eq(len(set(revs)), 20, "every PUT applied, each with its own revision")
    entries = applied() - before
    assert 1 <= entries <= 3, "20 PUTs took %d log entries" % entries


def test_a_lock_that_will_queue_waits_for_company_then_for_its_timer(ctx):
    """A LOCK that will queue behind another holder is proposed lazily: its entry waits (up to
    --lazy-ms) for an eager command to share it. Here the window is 400 ms. The queueing LOCK is
    not in the log 100 ms later; the holder's UNLOCK, sent then, carries it in the same entry
    (and grants it). A second queueing LOCK with no company is in the log once the window
    ends, never later than a few windows."""
    ctx.server("--lazy-ms", "400")
    info_c, ca, cb = ctx.conn(), ctx.conn(), ctx.conn()

    def applied():
        return int(dict(l.split(":", 1) for l in info_c.call("INFO", "raft").decode().split("\r\n")
                        if ":" in l)["applied_index"])
    a, b = open_session(ca), open_session(cb)
    t1 = expect_int(ca.call("LOCK", "x", a), "a takes x")
    before = applied()
    cb.send_raw(b"*5\r\n$4\r\nLOCK\r\n$1\r\nx\r\n$%d\r\n%d\r\n$4\r\nWAIT\r\n$5\r\n10000\r\n"
                % (len(str(b)), b))
    time.sleep(0.1)
    eq(applied(), before, "the queueing LOCK waits for company")
    ok(ca.call("UNLOCK", "x", a), "a releases x")
    t2 = expect_int(cb.read_reply(), "b is granted x")
    assert t2 > t1, (t1, t2)
    eq(applied() - before, 1, "LOCK and UNLOCK share one entry")

    before = applied()
    ca.send_raw(b"*5\r\n$4\r\nLOCK\r\n$1\r\nx\r\n$%d\r\n%d\r\n$4\r\nWAIT\r\n$5\r\n10000\r\n"
                % (len(str(a)), a))
    time.sleep(0.1)
    eq(applied(), before, "alone, it still waits inside the window")
    t0 = time.monotonic()
    wait_until(lambda: applied() == before + 1, timeout=3.0, what="the lazy LOCK's timer")
    assert time.monotonic() - t0 < 2.0, "entry came %.2f s late" % (time.monotonic() - t0)
    wait_queued(cb, "x", a)
