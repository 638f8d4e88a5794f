# SPDX-License-Identifier: Apache-2.0
"""The deadlock search limit is replicated (docs/protocol.md "Deadlocks"): every replica searches
with the cluster's value, which a leader sets from its --deadlock-search-limit through the log.
Nodes started with different flags therefore refuse (or queue) a wait alike, and after a leader
change the cluster's value follows the new leader's flag."""

from cluster import TIMING, info_now, make_leader, new_server, ready_leader
from helpers import eq, expect_err, expect_int, open_session, wait_queued, wait_until
from resp import Conn
from test_http import metric

FLAGS = (4, 10000, 0)  # node 1: stops after 4 steps; node 2: the default; node 3: off


def start_with_flags(ctx):
    servers = [new_server(ctx, i) for i in range(1, len(FLAGS) + 1)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s, flag in zip(servers, FLAGS):
        s.extra_args = (["--initial-cluster", members] + TIMING +
                        ["--deadlock-search-limit", str(flag)])
        s.start(wait=False)
    return servers


def cluster_limit_is(servers, want):
    """Every node reports `want` as the limit in force (CLUSTER.INFO and the gauge)."""
    for s in servers:
        wait_until(lambda: info_now(s).get("deadlock_search_limit") == want, 20,
                   what="node %d's deadlock search limit is %d" % (s.node_id, want))
        eq(metric(s, "fencelock_deadlock_search_limit"), want,
           "node %d's fencelock_deadlock_search_limit" % s.node_id)


def counted_alike(servers, name, want):
    for s in servers:
        wait_until(lambda: metric(s, name) == want, 10,
                   what="node %d's %s is %d" % (s.node_id, name, want))


def test_nodes_with_different_flags_decide_alike_and_follow_the_leader(ctx):
    servers = start_with_flags(ctx)
    conns = []

    def conn(port):
        k = Conn(port, timeout=10.0)
        conns.append(k)
        return k
    try:
        # node 1 leads: its 4 is the cluster's, on every node
        leader = make_leader(servers, servers[0])
        cluster_limit_is(servers, 4)
        c = conn(leader.port)
        wait_until(lambda: info_now(leader).get("log_format") == 2, 15, what="log format 2")
        # a chain of 3: s1 waits for s2, s2 for s3 (each search: 2 sessions + 1 edge = 3 steps);
        # s3's wait for l1 would close a cycle of 3 (6 steps), but a search of 4 stops inside
        # s1's expansion, before the cycle is read: queued on every replica, counted by each
        s1, s2, s3 = open_session(c), open_session(c), open_session(c)
        for sid, name in ((s1, "l1"), (s2, "l2"), (s3, "l3")):
            expect_int(c.call("LOCK", name, sid))
        conn(leader.port).send("LOCK", "l2", s1, "WAIT", 60000)
        wait_queued(c, "l2", s1)
        conn(leader.port).send("LOCK", "l3", s2, "WAIT", 60000)
        wait_queued(c, "l3", s2)
        conn(leader.port).send("LOCK", "l1", s3, "WAIT", 60000)
        wait_queued(c, "l1", s3)
        counted_alike(servers, "fencelock_deadlock_searches_given_up_total", 1)
        counted_alike(servers, "fencelock_deadlocks_total", 0)
        # node 2 leads: the default is the cluster's, and a two-session cycle is refused
        leader = make_leader(servers, servers[1])
        cluster_limit_is(servers, 10000)
        c = conn(leader.port)
        a, b = open_session(c), open_session(c)
        expect_int(c.call("LOCK", "x", a))
        expect_int(c.call("LOCK", "y", b))
        conn(leader.port).send("LOCK", "y", a, "WAIT", 60000)
        wait_queued(c, "y", a)
        expect_err(c.call("LOCK", "x", b, "WAIT", 60000), "DEADLOCK")
        counted_alike(servers, "fencelock_deadlocks_total", 1)
        # node 3 leads: detection is off everywhere, the same cycle is queued
        leader = make_leader(servers, servers[2])
        cluster_limit_is(servers, 0)
        c = conn(leader.port)
        conn(leader.port).send("LOCK", "x", b, "WAIT", 60000)
        wait_queued(c, "x", b)
        counted_alike(servers, "fencelock_deadlocks_total", 1)
        counted_alike(servers, "fencelock_deadlock_searches_given_up_total", 1)
    finally:
        for k in conns:
            k.close()

