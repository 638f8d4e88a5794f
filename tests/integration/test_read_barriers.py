"""Linearizable reads: batching and timing of their barriers.

Reads arriving while a barrier is in flight are answered by the next one, which the server
issues from inside libraft's barrier callback (libraft 0.22 fires it from its own loop handle,
never from inside raft_step). libraft 0.15 crashed (SEGV in raft_barrier) when a barrier was
issued there; the concurrent load below guards the read path under that pattern."""

import threading
import time

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int, ok
from resp import Conn, RespError, as_map


def test_concurrent_reads_and_keepalives_keep_the_leader_up(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        sids = [expect_int(c.call("SESSION.OPEN", 10000)) for _ in range(4)]
        expect_int(c.call("PUT", "k", "v"))
    errors, answered = [], [0]
    lock = threading.Lock()

    def reader(i):
        end = time.monotonic() + 3.0
        with Conn(leader.port) as rc:
            for n in range(5000):
                if time.monotonic() > end:
                    break
                if n % 2:
                    r = rc.call("SESSION.KEEPALIVE", sids[i % len(sids)])
                else:
                    r = rc.call("GET", "k")
                if isinstance(r, RespError) or r not in (10000, b"v"):
                    errors.append(r)
                    return
                with lock:
                    answered[0] += 1

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    eq(errors, [], "every read answered correctly")
    assert answered[0] >= 100, answered[0]
    assert leader.running(), "the leader survived"
    with Conn(leader.port) as c:
        eq(as_map(ok(c.call("CLUSTER.INFO")))["role"], b"leader")


def _applied(c):
    info = c.call("INFO", "raft").decode()
    return int(dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)["applied_index"])


def test_read_is_answered_without_waiting_for_a_timer(ctx):
    """Issue 16: a read's barrier completes inside libraft's completion handle, and the read was
    answered from a check handle started there, which libuv runs only after its next poll: the
    reply waited for the next timer (the 5 ms tick), so every read and keepalive cost ~5 ms.
    Here every timer of the node is far away (tick 60 s, raft heartbeat 20 s): a read that
    waits for a timer is not answered for 20 s; one answered in its loop turn is."""
    ctx.server("--tick-ms", "60000", "--heartbeat-ms", "20000", "--election-ms", "60000")
    c = ctx.conn()
    expect_int(c.call("PUT", "k", "v"))
    sid = expect_int(c.call("SESSION.OPEN", 100000))
    for _ in range(3):
        eq(c.call("GET", "k", timeout=5.0), b"v", "GET answered with no timer due")
        eq(c.call("SESSION.KEEPALIVE", sid, timeout=5.0), 100000, "KEEPALIVE answered")
        eq(c.call("FENCE.CHECK", "nolock", 0, timeout=5.0).code, "STALE", "FENCE.CHECK answered")
