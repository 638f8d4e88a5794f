# SPDX-License-Identifier: Apache-2.0
"""A second LOCK.REVOKE of a grant (docs/protocol.md "Revocation"): the holder is told, on the
event stream and in its RESP3 push alike, the deadline that stands counted from that event (what
is left of the running one when that ends first; "ask only" included), never merely the one
the request asked; the grant is released at that deadline, not at the longer one asked; after a
leader kill -9 the new leader enforces the deadline told. A forced release is logged with its
cause as the event has it. Pushes reach every parked connection of the holder's session (one
closed midway drops out) and none of another session's."""

import time

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int, expect_ok, lock_info, open_session, wait_queued, wait_until
from resp import Conn, Push
from test_watch import read_all

STREAM = "fencelock:events:d/"
LONG = 600000  # a deadline far beyond any bound in these tests


def revoke_events(c):
    return [f for _, f in read_all(c, stream=STREAM) if f["type"] == "revoke-requested"]


def resp3(port):
    c = Conn(port, timeout=20)
    c.call("HELLO", 3)
    return c


def push_of(c):
    r = c.read_reply(timeout=20)
    assert isinstance(r, Push), "a push expected, got %r" % (r,)
    return [x.decode() if isinstance(x, bytes) else x for x in r]


def clients(c):
    info = c.call("INFO", "clients")
    text = info.decode() if isinstance(info, bytes) else str(info)
    return int(text.split("connected_clients:")[1].split()[0])


def park_holder(c, port, holder, other, name="d/M"):
    """A RESP3 connection of `holder`, parked on a lock `other` holds: it takes pushes."""
    expect_int(c.call("LOCK", name, other))
    h = resp3(port)
    h.send("LOCK", name, holder, "WAIT", LONG)
    wait_queued(c, name, holder)
    return h


def two_revokes_tell_what_stands(c, h, t, first_ms, pause_s):
    """Revoke `first_ms`, wait `pause_s`, revoke LONG, then ask only: each push and event
    carries the deadline that stands, at most what was left of the first."""
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "DEADLINE", first_ms, "REASON", "one")), t)
    told_at = time.monotonic()  # the first revoke applied before its reply came
    eq(push_of(h)[:5], ["revoke-requested", "d/L", t, first_ms, "one"])
    time.sleep(pause_s)  # time passes on the leader's clock too
    asked_at = time.monotonic()
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "DEADLINE", LONG, "REASON", "two")), t)
    p2 = push_of(h)
    eq(p2[:3] + p2[4:5], ["revoke-requested", "d/L", t, "two"])
    # the leader measured at least the pause the test saw between the two revokes
    assert 1 <= p2[3] <= first_ms - int((asked_at - told_at) * 1000), (p2, first_ms)
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "REASON", "three")), t)  # ask only
    p3 = push_of(h)
    assert 1 <= p3[3] <= p2[3], (p3, p2)
    ev = revoke_events(c)
    eq([(e["reason"], int(e["deadline_ms"])) for e in ev],
       [("one", first_ms), ("two", p2[3]), ("three", p3[3])], "the stream tells the same")
    return p3[3]


def test_a_second_revoke_tells_the_deadline_left_and_the_first_deadline_releases(ctx):
    c = ctx.conn()
    a = open_session(c, LONG)
    b = open_session(c, LONG)
    other = open_session(c, LONG)
    t = expect_int(c.call("LOCK", "d/L", a))
    w = ctx.conn()
    w.send("LOCK", "d/L", b, "WAIT", LONG)
    wait_queued(c, "d/L", b)
    h = park_holder(c, ctx.srv.port, a, other)
    two_revokes_tell_what_stands(c, h, t, 6000, 1.5)
    # released at the first deadline: long before the LONG one asked
    t2 = expect_int(w.read_reply(timeout=120), "b's grant at the first deadline")
    assert t2 > t, (t2, t)
    types = [f["type"] for _, f in read_all(c, stream="fencelock:events:d/L")]
    eq(types[-2:], ["expire", "grant"], "released as an expiry, then granted")
    wait_until(lambda: "session %d passed a revoke's deadline while holding 'd/L' (token %d)"
               % (a, t) in ctx.srv.log_text(), 10, what="the forced release's cause in the log")
    h.close()


test_a_second_revoke_tells_the_deadline_left_and_the_first_deadline_releases.timeout = 180


def test_a_shorter_second_revoke_brings_it_forward_and_an_expiry_logs_as_one(ctx):
    c = ctx.conn()
    a = open_session(c, LONG)
    b = open_session(c, LONG)
    e = open_session(c, 2000)
    t = expect_int(c.call("LOCK", "d/L", a))
    w = ctx.conn()
    w.send("LOCK", "d/L", b, "WAIT", LONG)
    wait_queued(c, "d/L", b)
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "DEADLINE", LONG)), t)
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "DEADLINE", 1500)), t)
    eq([int(x["deadline_ms"]) for x in revoke_events(c)], [LONG, 1500])
    assert expect_int(w.read_reply(timeout=120), "b's grant at the shorter deadline") > t
    # an expiry of a holder's session is logged as an expiry, never as a revoke's deadline
    te = expect_int(c.call("LOCK", "d/E", e))
    wait_until(lambda: "session %d expired while holding 'd/E' (token %d)" % (e, te)
               in ctx.srv.log_text(), 60, interval=0.2, what="the expiry in the log")
    assert "session %d passed a revoke's deadline" % e not in ctx.srv.log_text()


test_a_shorter_second_revoke_brings_it_forward_and_an_expiry_logs_as_one.timeout = 180


def test_two_revokes_on_3_nodes_the_new_leader_enforces_the_deadline_told(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = Conn(leader.port, timeout=10)
    a = open_session(c, LONG)
    b = open_session(c, LONG)
    other = open_session(c, LONG)
    t = expect_int(c.call("LOCK", "d/L", a))
    w = Conn(leader.port, timeout=10)
    w.send("LOCK", "d/L", b, "WAIT", LONG)
    wait_queued(c, "d/L", b)
    h = park_holder(c, leader.port, a, other)
    # long enough that the kill and the election come first (checked below)
    told = two_revokes_tell_what_stands(c, h, t, 12000, 1.0)
    h.close()
    c.close()
    leader.kill9()
    w.close()
    leader = ready_leader([s for s in servers if s.running()], timeout=60)
    with Conn(leader.port, timeout=10) as c:
        info = lock_info(c, "d/L")
        eq((info["holder"], info["token"]), (a, t), "still a's grant when the new leader is up")
        eq([int(x["deadline_ms"]) for x in revoke_events(c)][-1], told,
           "the new leader's stream tells the same deadline")
        # it restarts the told deadline in full: long before the LONG one asked
        wait_until(lambda: lock_info(c, "d/L")["holder"] == b, timeout=120, interval=0.2,
                   what="the grant released by the new leader at the deadline told")
        assert lock_info(c, "d/L")["token"] > t


test_two_revokes_on_3_nodes_the_new_leader_enforces_the_deadline_told.timeout = 240


def test_pushes_reach_every_parked_connection_of_the_session_and_no_other(ctx):
    c = ctx.conn()
    a = open_session(c, LONG)
    other = open_session(c, LONG)
    third = open_session(c, LONG)
    t = expect_int(c.call("LOCK", "d/L", a))
    hs = [park_holder(c, ctx.srv.port, a, other, "d/M%d" % i) for i in range(3)]
    o3 = resp3(ctx.srv.port)  # another session's RESP3 connection, parked on the revoked lock
    o3.send("LOCK", "d/L", third, "WAIT", LONG)
    wait_queued(c, "d/L", third)
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "REASON", "one")), t)
    for h in hs:
        eq(push_of(h)[:5], ["revoke-requested", "d/L", t, 0, "one"])
    n = clients(c)
    hs[1].close()  # one of the session's connections goes midway
    wait_until(lambda: clients(c) == n - 1, 20, what="the server saw the close")
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "REASON", "two")), t)
    for h in (hs[0], hs[2]):
        eq(push_of(h)[:5], ["revoke-requested", "d/L", t, 0, "two"])
    # a connection of the session that parks after the close still gets them
    h4 = park_holder(c, ctx.srv.port, a, other, "d/M1")
    eq(expect_int(c.call("LOCK.REVOKE", "d/L", "REASON", "three")), t)
    for h in (hs[0], hs[2], h4):
        eq(push_of(h)[:5], ["revoke-requested", "d/L", t, 0, "three"])
    expect_ok(c.call("UNLOCK", "d/L", a))
    r = o3.read_reply(timeout=20)
    assert not isinstance(r, Push), "another session's connection got a push: %r" % (r,)
    assert expect_int(r, "its grant") > t
    for h in (hs[0], hs[2], h4):
        h.close()
    o3.close()
