# SPDX-License-Identifier: Apache-2.0
"""RESP3 pushes of revoke-requested and wait-notify on the holder's parked connection
(docs/protocol.md "Revocation"): a holder busy in a blocking command (LOCK ... WAIT on another
lock, SEM.ACQUIRE WAIT, XREAD BLOCK or ELECT.OBSERVE WAIT on the connection that opened its
session) and speaking RESP3 gets the request as a `>` push at once, exactly once; a RESP2
connection parked for the same session gets nothing (it reads the event stream), and so does a
RESP3 connection parked for another session."""

from helpers import eq, expect_int, expect_ok, open_session, wait_queued, wait_until
from resp import Push, as_map
from test_watch_index import metric


def _resp3(ctx):
    c = ctx.conn()
    c.call("HELLO", 3)
    return c


def _pushes(c):
    """The pushes already queued on c, read up to a PING's PONG (which follows them)."""
    c.send("PING")
    out = []
    while True:
        r = c.read_reply(timeout=20)
        if not isinstance(r, Push):
            eq(str(r), "PONG")
            return out
        out.append([x.decode() if isinstance(x, bytes) else x for x in r])


def _next_reply(c):
    """The next reply on c, which must not be a push."""
    r = c.read_reply(timeout=20)
    assert not isinstance(r, Push), "a push on this connection: %r" % (r,)
    return r


def test_revoke_pushes_to_the_holders_parked_resp3_connection_once(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    other = open_session(c, 60000)
    third = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "p/L", a))
    expect_int(c.call("LOCK", "p/M", other))
    expect_int(c.call("SEM.ACQUIRE", "p/S", other, 1))
    h3 = _resp3(ctx)  # a's RESP3 connection, parked on another lock
    h3.send("LOCK", "p/M", a, "WAIT", 60000)
    s3 = _resp3(ctx)  # a's RESP3 connection, parked on a semaphore
    s3.send("SEM.ACQUIRE", "p/S", a, 1, "WAIT", 60000)
    h2 = ctx.conn()  # a's RESP2 connection, parked too
    h2.send("LOCK", "p/M", a, "WAIT", 60000)
    o3 = _resp3(ctx)  # another session's RESP3 connection, parked
    o3.send("LOCK", "p/L", third, "WAIT", 60000)
    wait_queued(c, "p/M", a)
    wait_queued(c, "p/L", third)
    wait_until(lambda: a in (as_map(c.call("SEM.INFO", "p/S"))["waiters"] or []), timeout=20,
               what="a queued on the semaphore")
    eq(expect_int(c.call("LOCK.REVOKE", "p/L", "DEADLINE", 60000, "REASON", "deploy")), t)
    for conn in (h3, s3):
        r = conn.read_reply(timeout=20)
        assert isinstance(r, Push), r
        got = [x.decode() if isinstance(x, bytes) else x for x in r]
        eq(got[:5], ["revoke-requested", "p/L", t, 60000, "deploy"])
        assert got[5].startswith("127.0.0.1:"), got  # who asked (no --acl-file: the address)
        eq(len(got), 6, got)
    # the wait still ends with its own reply, and no second push came before it
    expect_ok(c.call("UNLOCK", "p/M", other))
    expect_int(_next_reply(h3), "h3's grant")
    eq(_pushes(h3), [], "one push only")
    expect_ok(c.call("UNLOCK", "p/M", a))
    expect_int(_next_reply(h2), "the RESP2 wait's grant, no push before it")
    expect_ok(c.call("UNLOCK", "p/L", a))
    expect_int(_next_reply(o3), "another session's connection: its grant, no push")


def test_revoke_pushes_to_the_sessions_connection_parked_in_xread_or_observe(ctx):
    srv = ctx.server()
    c = ctx.conn()
    x = _resp3(ctx)
    a = open_session(x, 60000)  # x opened a: it is a's connection
    t = expect_int(x.call("LOCK", "p/X", a))
    ob = _resp3(ctx)
    b = open_session(ob, 60000)
    tb = expect_int(ob.call("LOCK", "p/Y", b))
    lead = expect_int(c.call("ELECT.CAMPAIGN", "p/E", open_session(c, 60000), "v"))
    x.send("XREAD", "BLOCK", 0, "STREAMS", "fencelock:events:elsewhere/", "$")
    ob.send("ELECT.OBSERVE", "p/E", "AFTER", lead, "WAIT", 60000)
    wait_until(lambda: metric(srv, "fencelock_xread_blocked") == 1, timeout=30,
               what="the XREAD parked")
    wait_until(lambda: metric(srv, "fencelock_elect_observers") == 1, timeout=30,
               what="the ELECT.OBSERVE parked")
    eq(expect_int(c.call("LOCK.REVOKE", "p/X")), t)
    got = x.read_reply(timeout=20)
    assert isinstance(got, Push), got
    eq([v.decode() if isinstance(v, bytes) else v for v in got][:4],
       ["revoke-requested", "p/X", t, 0])
    eq(expect_int(c.call("LOCK.REVOKE", "p/Y", "REASON", "r")), tb)
    got = ob.read_reply(timeout=20)
    assert isinstance(got, Push), got
    eq([v.decode() if isinstance(v, bytes) else v for v in got][:5],
       ["revoke-requested", "p/Y", tb, 0, "r"])


def test_wait_notify_pushes_to_the_holders_parked_resp3_connection(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    b = open_session(c, 60000)
    other = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "p/N", a))
    expect_int(c.call("LOCK", "p/M", other))
    h3 = _resp3(ctx)
    h3.send("LOCK", "p/M", a, "WAIT", 60000)
    wait_queued(c, "p/M", a)
    w = ctx.conn()
    w.send("LOCK", "p/N", b, "WAIT", 30000, "NOTIFY")
    r = h3.read_reply(timeout=20)
    assert isinstance(r, Push), r
    eq([v.decode() if isinstance(v, bytes) else v for v in r], ["wait-notify", "p/N", t, b, 30000])
    wait_queued(c, "p/N", b)
    expect_ok(c.call("UNLOCK", "p/M", other))
    expect_int(_next_reply(h3), "h3's grant")
    eq(_pushes(h3), [])


def test_no_push_after_the_connection_authenticated_as_another_user(ctx):
    from test_auth import _acl_server, _authed
    s, _, _ = _acl_server(ctx)
    adm = _authed(ctx, s, "admin", "adminpw")
    x = ctx.conn(s)
    eq(str(as_map(x.call("HELLO", 3, "AUTH", "app", "apppw"))["proto"]), "3")
    a = open_session(x, 60000)  # x opened a as app
    t = expect_int(x.call("LOCK", "job-1", a))
    expect_ok(x.call("AUTH", "ro", "ropw"))  # x is ro's now: a's requests are not for it
    x.send("XREAD", "BLOCK", 0, "STREAMS", "fencelock:events:app/", "$")
    wait_until(lambda: metric(s, "fencelock_xread_blocked") == 1, timeout=30,
               what="the XREAD parked")
    eq(expect_int(adm.call("LOCK.REVOKE", "job-1", "REASON", "secret")), t)
    expect_int(adm.call("PUT", "app/k", "v"))  # wakes the XREAD: its reply comes next
    r = _next_reply(x)
    assert "fencelock:events:app/" in (r if isinstance(r, dict) else as_map(r)), r
