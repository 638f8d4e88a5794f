# SPDX-License-Identifier: Apache-2.0
"""A follower whose leader's process is gone (kill -9: its Raft links close and its Raft port
refuses connections) starts its election early and says why; a frozen leader (SIGSTOP: its
sockets stay open) keeps the election timeout's path."""

from cluster import ready_leader, start_cluster
from helpers import wait_until

FAST = "its raft port refuses connections"
TIMEOUT = "raft: starting an election: no message from the leader"


def followers_logs(servers, leader):
    return [s.log_text() for s in servers if s is not leader]


def test_kill9_of_the_leader_takes_the_fast_path(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    leader.kill9()
    rest = [s for s in servers if s is not leader]
    ready_leader(rest, timeout=30)
    wait_until(lambda: any(FAST in t for t in followers_logs(servers, leader)), timeout=15,
               interval=0.1, what="a follower logging the fast path's reason")
    # Not asserted: that no follower also waited out its timeout. With both cores busy one
    # follower's probe can come late, and it then refuses the other's early vote until its own
    # timer runs out: slower, still correct. The property is that a gone process is seen as gone.


def test_sigstopped_leader_keeps_the_timeout_path(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    leader.sigstop()
    try:
        rest = [s for s in servers if s is not leader]
        ready_leader(rest, timeout=30)
        wait_until(lambda: any(TIMEOUT in t for t in followers_logs(servers, leader)),
                   timeout=15, interval=0.1, what="a follower's election timeout line")
        assert not any(FAST in t for t in followers_logs(servers, leader)), \
            "a frozen leader's open sockets must not look like a gone process"
    finally:
        leader.sigcont()
