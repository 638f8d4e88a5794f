# SPDX-License-Identifier: Apache-2.0
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
    """A read's barrier completes inside libraft's completion handle, and the read was
    answered from a check handle started there, which libuv runs only after its next poll: the
    reply waited for the next timer (the 5 ms tick), so every read and keepalive cost ~5 ms.
    Here every timer of the node is far away (tick 60 s, raft heartbeat 20 s): a read that
    waits for a timer is not answered for 20 s; one answered in its loop turn is."""
    ctx.server("--tick-ms", "60000", "--heartbeat-ms", "20000", "--election-ms", "60000",
               "--read-lease-ms", "0")  # the barrier's path: test_read_lease has the lease's
    c = ctx.conn()
    expect_int(c.call("PUT", "k", "v"))
    sid = expect_int(c.call("SESSION.OPEN", 100000))
    for _ in range(3):
        eq(c.call("GET", "k", timeout=5.0), b"v", "GET answered with no timer due")
        eq(c.call("SESSION.KEEPALIVE", sid, timeout=5.0), 100000, "KEEPALIVE answered")
        eq(c.call("FENCE.CHECK", "nolock", 0, timeout=5.0).code, "STALE", "FENCE.CHECK answered")


def test_pipelined_reads_on_one_connection_share_a_barrier(ctx):
    """50 reads pipelined on one connection with no write between them arrive in one or two
    reads of the socket: they take one or two barriers (log entries), not one each. A write
    behind them still waits for them (test_pipelining checks the order). Without the read
    lease, which would answer reads right after the PUT with no entry at all."""
    ctx.server("--read-lease-ms", "0")
    info_c, c = ctx.conn(), ctx.conn()
    expect_int(c.call("PUT", "k", "v"))
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    for cmds, what in (([("GET", "k")] * 50, "GETs"),
                       ([("SESSION.KEEPALIVE", sid)] * 50, "KEEPALIVEs"),
                       ([("GET", "k"), ("KV.GET", "k"), ("LOCK.INFO", "l"),
                         ("FENCE.CHECK", "l", 1), ("SESSION.KEEPALIVE", sid)] * 10, "mixed reads")):
        before = _applied(info_c)
        replies = c.pipeline(cmds, timeout=20)
        assert not any(isinstance(r, RespError) and r.code != "STALE" for r in replies), replies
        entries = _applied(info_c) - before
        assert 1 <= entries <= 2, "50 pipelined %s took %d log entries" % (what, entries)
    before = _applied(info_c)
    r = c.pipeline([("GET", "k")] * 20 + [("PUT", "k", "w")] + [("GET", "k")] * 20, timeout=20)
    eq(r[:20], [b"v"] * 20, "reads before the write")
    eq(r[21:], [b"w"] * 20, "reads after the write")
    entries = _applied(info_c) - before
    assert 3 <= entries <= 4, "reads, write, reads took %d log entries" % entries


def test_reads_from_many_connections_in_one_turn_share_a_barrier(ctx):
    """Reads read in one loop turn from different connections share one barrier: 20 GETs and
    20 KEEPALIVEs from 40 connections queued while the server is frozen take one or two
    entries, and each is answered (without the read lease, which answers them with none)."""
    s = ctx.server("--read-lease-ms", "0")
    info_c = ctx.conn()
    conns = [ctx.conn() for _ in range(40)]
    expect_int(conns[0].call("PUT", "k", "v"))
    sid = expect_int(conns[0].call("SESSION.OPEN", 60000))
    before = _applied(info_c)
    s.sigstop()
    for i, c in enumerate(conns):
        if i % 2:
            c.send_raw(b"*2\r\n$17\r\nSESSION.KEEPALIVE\r\n$%d\r\n%d\r\n" % (len(str(sid)), sid))
        else:
            c.send_raw(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    time.sleep(0.2)
    s.sigcont()
    eq([c.read_reply() for c in conns], [b"v", 60000] * 20, "every read answered")
    entries = _applied(info_c) - before
    assert 1 <= entries <= 2, "40 reads from 40 connections took %d log entries" % entries
