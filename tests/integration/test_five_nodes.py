# SPDX-License-Identifier: Apache-2.0
"""Multi-lock, deadlock detection and revocation on a 5-node cluster, each across a kill -9 of
the leader (docs/protocol.md "LOCK.MULTI", "Deadlocks", "Revocation"): a waiting multi-request
is granted once, with tokens larger than any before; a wait that closes a cycle is refused with
the same cycle before and after the fail-over, by every node alike; a revoke's deadline told to
the holder is enforced by the new leader."""

from cluster import ready_leader, start_cluster
from helpers import (cluster_info, eq, expect_err, expect_int, lock_info, no_reply, ok,
                     open_session, revision, wait_queued, wait_until)
from resp import Conn, as_map, text
from test_http import metric
from test_watch import read_all

LONG = 600000  # a deadline or wait far beyond any bound in these tests


def holder(c, name):
    info = lock_info(c, name)
    return info["holder"] if info else 0


def five(ctx):
    servers = start_cluster(ctx, n=5)
    return servers, ready_leader(servers, timeout=60)


def new_leader(servers, old):
    return ready_leader([s for s in servers if s is not old and s.running()], timeout=60)


def test_5_nodes_a_multi_request_waiting_through_a_leader_kill_is_granted_once(ctx):
    servers, leader = five(ctx)
    with Conn(leader.port, timeout=10) as c:
        h = open_session(c, LONG)
        m = open_session(c, LONG)
        th = expect_int(c.call("LOCK", "b", h))
        cm = Conn(leader.port, timeout=10)
        cm.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", LONG, "REQ", m, 1)
        wait_queued(c, "b", m)
        wait_queued(c, "a", m)
        before = revision(c)
    leader.kill9()
    cm.close()
    leader = new_leader(servers, leader)
    with Conn(leader.port, timeout=10) as c:
        eq(list(lock_info(c, "a")["waiters"]), [m], "still queued on a after the fail-over")
        eq(list(lock_info(c, "b")["waiters"]), [m])
        with Conn(leader.port, timeout=30) as cm2:
            cm2.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", LONG, "REQ", m, 1)
            assert no_reply(cm2, 0.5), "granted while b is still held"
            ok(c.call("UNLOCK", "b", h))
            toks = ok(cm2.read_reply(timeout=30))
        assert isinstance(toks, list) and len(toks) == 2, toks
        assert min(toks) > max(th, before), (toks, th, before)
        eq((holder(c, "a"), holder(c, "b")), (m, m))
        # the live members' first announces each take a revision (cluster.wait_announced)
        live = {s.node_id for s in servers if s.running()}
        wait_until(lambda: live <= {int(as_map(x)["id"]) for x in c.call("CLUSTER.MEMBERS")
                                    if text(as_map(x).get("client_address") or b"") and
                                    text(as_map(x).get("http_url") or b"")},
                   timeout=20, interval=0.1, what="the live members announced")
        rev = revision(c)
        eq(c.call("LOCK.MULTI", m, 2, "a", "b", "WAIT", LONG, "REQ", m, 1), toks, "granted once")
        eq(revision(c), rev)
    for s in servers:
        if s.running():
            with Conn(s.port, timeout=10) as c:
                ok(c.call("READONLY"))
                wait_until(lambda: revision(c) >= rev, timeout=30, what="replica caught up")
                eq((holder(c, "a"), holder(c, "b")), (m, m), "node %d" % s.node_id)


test_5_nodes_a_multi_request_waiting_through_a_leader_kill_is_granted_once.timeout = 180


def test_5_nodes_a_deadlock_is_refused_alike_before_and_after_a_leader_kill(ctx):
    servers, leader = five(ctx)
    with Conn(leader.port, timeout=10) as c:
        wait_until(lambda: cluster_info(c).get("log_format") == 2, 30, what="log format 2")
        a, b = open_session(c, LONG), open_session(c, LONG)
        expect_int(c.call("LOCK", "x", a))
        expect_int(c.call("LOCK", "y", b))
        ca = Conn(leader.port, timeout=10)
        ca.send("LOCK", "y", a, "WAIT", LONG)
        wait_queued(c, "y", a)
        r1 = c.call("LOCK", "x", b, "WAIT", LONG)
        expect_err(r1, "DEADLOCK", "b's wait closes b -> a -> b")
        for s in servers:
            wait_until(lambda: metric(s, "fencelock_deadlocks_total") == 1, 30,
                       what="node %d counts the refusal" % s.node_id)
    leader.kill9()
    ca.close()
    leader = new_leader(servers, leader)
    with Conn(leader.port, timeout=10) as c:
        eq(list(lock_info(c, "y")["waiters"]), [a], "a still waits for y")
        eq(list(lock_info(c, "x")["waiters"] or []), [], "b queued nowhere")
        r2 = c.call("LOCK", "x", b, "WAIT", LONG)
        expect_err(r2, "DEADLOCK", "the new leader refuses it too")
        eq(r2.text, r1.text, "the same cycle named")
        ev = [f for _, f in read_all(c) if f["type"] == "deadlock"]
        eq(len(ev), 2, ev)
        for s in servers:
            if s.running():
                wait_until(lambda: metric(s, "fencelock_deadlocks_total") == 2, 30,
                           what="node %d counts both refusals" % s.node_id)
        ok(c.call("UNLOCK", "y", b))
        eq(holder(c, "y"), a, "a's wait completes")


test_5_nodes_a_deadlock_is_refused_alike_before_and_after_a_leader_kill.timeout = 180


def test_5_nodes_a_revoke_deadline_is_enforced_by_the_new_leader(ctx):
    servers, leader = five(ctx)
    with Conn(leader.port, timeout=10) as c:
        a = open_session(c, LONG)
        b = open_session(c, LONG)
        t = expect_int(c.call("LOCK", "r/L", a))
        w = Conn(leader.port, timeout=10)
        w.send("LOCK", "r/L", b, "WAIT", LONG)
        wait_queued(c, "r/L", b)
        # long enough that the kill and the election come first (checked below)
        eq(expect_int(c.call("LOCK.REVOKE", "r/L", "DEADLINE", 15000)), t)
        eq(expect_int(c.call("LOCK.REVOKE", "r/L", "DEADLINE", LONG)), t)
        told = [int(f["deadline_ms"]) for _, f in read_all(c, stream="fencelock:events:r/L")
                if f["type"] == "revoke-requested"]
        eq(told[0], 15000)
        assert 1 <= told[1] <= 15000, told
    leader.kill9()
    w.close()
    leader = new_leader(servers, leader)
    with Conn(leader.port, timeout=10) as c:
        info = lock_info(c, "r/L")
        eq((info["holder"], info["token"]), (a, t), "still a's grant when the new leader is up")
        wait_until(lambda: holder(c, "r/L") == b, timeout=120, interval=0.2,
                   what="the grant released by the new leader at the deadline told")
        assert lock_info(c, "r/L")["token"] > t
        expect_err(c.call("FENCE.CHECK", "r/L", t), "STALE")


test_5_nodes_a_revoke_deadline_is_enforced_by_the_new_leader.timeout = 240
