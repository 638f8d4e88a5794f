# SPDX-License-Identifier: Apache-2.0
"""Three real fencelockd processes on loopback: election, redirects, a leader killed with -9."""

from helpers import eq, expect_err, expect_int, expect_ok, ok, wait_until
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout
from cluster import info, info_now, ready_leader, start_cluster  # noqa: F401 (shared helpers)


def test_three_nodes_elect_one_leader_and_followers_redirect(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    followers = [s for s in servers if s is not leader]
    want = "NOTLEADER 127.0.0.1:%d" % leader.port

    def redirected(s):
        with Conn(s.port, timeout=2.0) as c:
            r = c.call("SESSION.OPEN", 5000)
            return r if isinstance(r, RespError) and r.text == want else None
    for f in followers:
        wait_until(lambda: redirected(f), timeout=10, interval=0.1,
                   what="follower %d redirecting to the leader" % f.node_id)
        with Conn(f.port) as c:
            eq(c.call("PING"), "PONG", "followers answer PING")
            expect_err(c.call("GET", "k"), "NOTLEADER", "a follower serves no read")
    with Conn(leader.port) as c:
        members = [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]
        eq(sorted(m["id"] for m in members), [1, 2, 3])
        eq(sum(m["leader"] for m in members), 1)
        for m in members:
            srv = servers[m["id"] - 1]
            eq(text(m["raft_address"]), "127.0.0.1:%d" % srv.raft_port)
            wait_until(lambda: text(as_map(ok(c.call("CLUSTER.MEMBERS"))[m["id"] - 1])
                                    ["client_address"]) == "127.0.0.1:%d" % srv.port,
                       timeout=10, interval=0.1, what="member %d's client address" % m["id"])


def test_kill9_leader_keeps_holder_queue_and_tokens(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = Conn(leader.port)
    a = expect_int(c.call("SESSION.OPEN", 10000))
    b = expect_int(c.call("SESSION.OPEN", 10000))
    ta = expect_int(c.call("LOCK", "inv", a))
    expect_int(c.call("PUT", "stock", "10", "FENCE", "inv", ta))
    cb = Conn(leader.port)
    cb.send("LOCK", "inv", b, "WAIT", 20000)
    wait_until(lambda: as_map(ok(c.call("LOCK.INFO", "inv")))["waiters"] == [b], timeout=5,
               what="b queued")
    rev_before = as_map(ok(c.call("CLUSTER.INFO")))["revision"]
    c.close()
    cb.close()

    leader.kill9()
    rest = [s for s in servers if s is not leader]
    new = ready_leader(rest, timeout=15)
    c = Conn(new.port)
    for sid in (a, b):
        expect_int(c.call("SESSION.KEEPALIVE", sid), "session %d survives the fail-over" % sid)
    li = as_map(ok(c.call("LOCK.INFO", "inv")))
    eq((li["holder"], li["token"], li["waiters"]), (a, ta, [b]), "holder and queue survive")
    assert as_map(ok(c.call("CLUSTER.INFO")))["revision"] >= rev_before
    eq(c.call("GET", "stock"), b"10")
    expect_ok(c.call("UNLOCK", "inv", a))
    tb = expect_int(c.call("LOCK", "inv", b), "b was granted by the unlock on the new leader")
    assert tb > ta, "token after fail-over %d must exceed %d" % (tb, ta)
    expect_err(c.call("PUT", "stock", "9", "FENCE", "inv", ta), "STALE")
    expect_int(c.call("PUT", "stock", "9", "FENCE", "inv", tb))
    rev = as_map(ok(c.call("CLUSTER.INFO")))["revision"]

    leader.start(wait=False)  # the old leader comes back as a follower and catches up
    wait_until(lambda: (info(leader) or {}).get("revision", 0) >= rev, timeout=15, interval=0.1,
               what="the restarted node catching up")
    eq(text(info_now(leader)["role"]), "follower")


def test_stale_reads_only_when_asked_with_readonly(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        expect_int(c.call("PUT", "k", "v1"))
        rev = as_map(ok(c.call("CLUSTER.INFO")))["revision"]
    f = [s for s in servers if s is not leader][0]
    wait_until(lambda: (info(f) or {}).get("revision", 0) >= rev, timeout=10, interval=0.05,
               what="the follower applying the PUT")
    with Conn(f.port) as c:
        expect_err(c.call("GET", "k"), "NOTLEADER", "linearizable by default")
        expect_ok(c.call("READONLY"))
        eq(c.call("GET", "k"), b"v1", "a stale read from the follower's own state")
        expect_err(c.call("PUT", "k", "v2"), "NOTLEADER", "READONLY does not allow writes")
        expect_ok(c.call("READWRITE"))
        expect_err(c.call("GET", "k"), "NOTLEADER", "back to linearizable reads")
