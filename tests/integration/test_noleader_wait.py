# SPDX-License-Identifier: Apache-2.0
"""A write or read that reaches a node while it knows no ready leader (an election under way)
waits there for one (--noleader-wait-ms) and is answered with a redirect to the ready leader,
not the immediate -NOLEADER a client would then retry on its own backoff; a wait that runs out
still gets -NOLEADER, and one over --max-noleader-waits gets it at once."""

from cluster import info, ready_leader, start_cluster, wait_announced
from helpers import eq, expect_err, expect_int, wait_until
from resp import Conn, RespError
from test_http import metric


def lone_node(ctx, extra):
    """A 3-node cluster whose two other members are killed: the one left (a follower before)
    has no quorum and, once its election timer ran out, knows no leader. Returns (servers,
    the lone node, the killed ones)."""
    servers = start_cluster(ctx, extra=extra)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        wait_announced(c, 3)
    lone = [s for s in servers if s is not leader][0]
    dead = [s for s in servers if s is not lone]
    for s in dead:
        s.kill9()
    wait_until(lambda: (info(lone) or {}).get("leader_id", 1) == 0, timeout=20, interval=0.05,
               what="node %d knowing no leader" % lone.node_id)
    return servers, lone, dead


def test_request_during_election_is_redirected_once_a_leader_is_ready(ctx):
    # a generous wait: the killed nodes restart and elect under ASan within it
    servers, lone, dead = lone_node(ctx, ["--noleader-wait-ms", "60000"])
    put, get = Conn(lone.port, timeout=90), Conn(lone.port, timeout=90)
    put.send("PUT", "k", "v")  # a write ...
    get.send("GET", "k")       # ... and a linearizable read, both while no leader is known
    for s in dead:
        s.restart(wait=False)
    r = put.read_reply(timeout=90)
    new = ready_leader(servers, timeout=30)
    want = "NOTLEADER 127.0.0.1:%d" % new.port
    assert isinstance(r, RespError), "a redirect, not %r" % (r,)
    eq(r.text, want, "the parked write is redirected to the ready leader")
    r = get.read_reply(timeout=90)
    assert isinstance(r, RespError), "a redirect, not %r" % (r,)
    eq(r.text, want, "the parked read is redirected to the ready leader")
    with Conn(new.port) as c:
        expect_int(c.call("PUT", "k", "v"), "the write where the redirect pointed")
    put.close()
    get.close()


def test_wait_runs_out_with_noleader(ctx):
    servers, lone, dead = lone_node(ctx, ["--noleader-wait-ms", "200"])
    with Conn(lone.port, timeout=30) as c:
        # no leader comes: the wait runs out, the answer is the -NOLEADER of before (bounded)
        expect_err(c.call("PUT", "k", "v"), "NOLEADER", "a write whose wait ran out")
        expect_err(c.call("GET", "k"), "NOLEADER", "a read whose wait ran out")
        eq(c.call("PING"), "PONG", "the connection still serves")
    eq(metric(lone, "fencelock_noleader_waiting"), 0, "nothing left waiting")


def test_waits_over_the_limit_get_noleader_at_once(ctx):
    servers, lone, dead = lone_node(ctx, ["--noleader-wait-ms", "60000",
                                          "--max-noleader-waits", "1"])
    a, b = Conn(lone.port, timeout=30), Conn(lone.port, timeout=30)
    a.send("PUT", "k", "v")
    wait_until(lambda: metric(lone, "fencelock_noleader_waiting") == 1, timeout=15,
               what="the first write waiting for a leader")
    # the second is over --max-noleader-waits: answered now (the first waits 60 s)
    expect_err(b.call("PUT", "k", "w"), "NOLEADER", "a write over the limit")
    eq(metric(lone, "fencelock_noleader_waiting"), 1, "the first still waits")
    a.close()  # its connection gone: the parked request frees itself once answered
    b.close()
