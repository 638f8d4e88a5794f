# SPDX-License-Identifier: Apache-2.0
"""Deadlock detection (docs/protocol.md "Deadlocks"): a LOCK ... WAIT (SHARED, SEM.ACQUIRE) that
would close a cycle of sessions waiting for each other is refused with -DEADLOCK naming the
cycle, nothing is queued, the other waits are untouched and complete later; the refusal is an
event on the stream ("deadlock") and counts in fencelock_deadlocks_total on every node;
LOCK.INFO's waits_for and LOCK.WAITS show who waits for whom; --deadlock-search-limit bounds
the search (the wait is then queued, fencelock_deadlock_searches_given_up_total) and 0 turns
detection off. On 1 node and on 3 (the refusal decided alike by every replica)."""

import json
import subprocess

from cluster import ready_leader, start_cluster
from helpers import (cluster_info, eq, expect_err, expect_int, expect_nil, ok, open_session,
                     wait_queued, wait_until)
from resp import Conn, RespError, as_map, text
from test_cli import cli_path
from test_http import metric
from test_watch import read_all


def format_2(c):
    """Detection runs from log format 2 on: a fresh cluster raises it by itself."""
    wait_until(lambda: cluster_info(c).get("log_format") == 2, 15, what="log format 2")


def lock_waits(c, prefix=None):
    r = c.call("LOCK.WAITS", *([prefix] if prefix is not None else []))
    assert not isinstance(r, RespError), r
    out = []
    for row in r:
        m = as_map(row)
        out.append((text(m["lock"]), m["sid"], list(m["waits_for"]), m["any"]))
    return out


def two_cycle(c, ctx_conn, x="x", y="y"):
    """a holds x, b holds y, a waits for y: b's wait for x would close the cycle."""
    a, b = open_session(c), open_session(c)
    expect_int(c.call("LOCK", x, a))
    expect_int(c.call("LOCK", y, b))
    ca = ctx_conn()
    ca.send("LOCK", y, a, "WAIT", 30000)
    wait_queued(c, y, a)
    return a, b, ca


def test_a_two_session_cycle_is_refused_and_the_other_wait_completes(ctx):
    c = ctx.conn()
    format_2(c)
    d0 = metric(ctx.srv, "fencelock_deadlocks_total")
    a, b, ca = two_cycle(c, ctx.conn)
    r = c.call("LOCK", "x", b, "WAIT", 30000)
    expect_err(r, "DEADLOCK", "the wait that closes the cycle")
    eq(r.text, "DEADLOCK cycle of 2: %d -x-> %d -y-> %d" % (b, a, b), "the reply names it")
    info = as_map(c.call("LOCK.INFO", "x"))
    eq(list(info["waiters"] or []), [], "the refused wait was not queued")
    info = as_map(c.call("LOCK.INFO", "y"))
    eq(list(info["waiters"]), [a])
    eq([list(w) for w in info["waits_for"]], [[b]], "LOCK.INFO: a waits for b")
    eq(lock_waits(c), [("y", a, [b], 0)], "LOCK.WAITS: the graph")
    eq(lock_waits(c, "x"), [], "LOCK.WAITS with a prefix")
    expect_nil(c.call("LOCK", "x", b), "a try-lock is never a wait: NIL as before")
    wait_until(lambda: metric(ctx.srv, "fencelock_deadlocks_total") == d0 + 1, 5,
               what="fencelock_deadlocks_total counts the refusal")
    ev = [f for _, f in read_all(c) if f["type"] == "deadlock"]
    eq(len(ev), 1, "one deadlock event")
    eq((ev[0]["name"], ev[0]["sid"], ev[0]["value"]),
       ("x", str(b), "%d -x-> %d -y-> %d" % (b, a, b)), "the event names the cycle")
    ep = "127.0.0.1:%d" % ctx.srv.port
    r = subprocess.run([cli_path(ctx), "--endpoints", ep, "--json", "waits"],
                       capture_output=True, text=True, timeout=30)
    eq(r.returncode, 0, "fencelock waits --json: %s" % r.stderr)
    eq(json.loads(r.stdout), [{"lock": "y", "object": "lock", "sid": a, "waits_for": [b],
                               "any": False}], "fencelock waits --json")
    r = subprocess.run([cli_path(ctx), "--endpoints", ep, "waits", "y"], capture_output=True,
                       text=True, timeout=30)
    eq(r.returncode, 0, "fencelock waits y: %s" % r.stderr)
    assert r.stdout.split("\n")[1].split() == ["y", "lock", str(a), str(b)], r.stdout
    ok(c.call("UNLOCK", "y", b))
    expect_int(ca.read_reply(timeout=10), "the other wait completes once b lets go")


def test_cycles_through_shared_locks_and_semaphores_are_refused(ctx):
    c = ctx.conn()
    format_2(c)
    a, b, d = open_session(c), open_session(c), open_session(c)
    expect_int(c.call("LOCK", "r", a, "SHARED"))
    expect_int(c.call("LOCK", "r", b, "SHARED"))
    expect_int(c.call("LOCK", "m", b))
    ca = ctx.conn()
    ca.send("LOCK", "m", a, "WAIT", 30000)
    wait_queued(c, "m", a)
    expect_err(c.call("LOCK", "r", b, "WAIT", 30000), "DEADLOCK", "b's upgrade waits for a")
    # a semaphore whose every permit holder waits for the requester
    expect_int(c.call("SEM.ACQUIRE", "p", a, 1))
    expect_err(c.call("SEM.ACQUIRE", "p", b, 1, "WAIT", 30000), "DEADLOCK", "the permit")
    # one permit holder (d) waits for nobody: no deadlock, b queues
    ok(c.call("UNLOCK", "m", a))  # a leaves m's queue
    expect_nil(ca.read_reply(timeout=10), "a's wait ended")
    expect_int(c.call("SEM.ACQUIRE", "q", a, 2))
    expect_int(c.call("SEM.ACQUIRE", "q", d, 2))
    ca.send("LOCK", "m", a, "WAIT", 30000)
    wait_queued(c, "m", a)
    cb = ctx.conn()
    cb.send("SEM.ACQUIRE", "q", b, 2, "WAIT", 30000)
    wait_until(lambda: ("q", b, [a, d], 1) in lock_waits(c), 5, what="b queued on q (any of a, d)")
    ok(c.call("SEM.RELEASE", "q", d))
    expect_int(cb.read_reply(timeout=10), "b's permit once d released")


def test_the_search_limit_lets_the_wait_queue_and_0_turns_detection_off(ctx):
    s = ctx.server("--deadlock-search-limit", "2")
    c = ctx.conn(s)
    format_2(c)
    # a chain of 3: s1 waits for s2, s2 for s3; s3's wait for l1 closes a cycle of 3
    s1, s2, s3 = open_session(c), open_session(c), open_session(c)
    for sid, name in ((s1, "l1"), (s2, "l2"), (s3, "l3")):
        expect_int(c.call("LOCK", name, sid))
    w1, w2, w3 = ctx.conn(s), ctx.conn(s), ctx.conn(s)
    w1.send("LOCK", "l2", s1, "WAIT", 30000)
    wait_queued(c, "l2", s1)
    w2.send("LOCK", "l3", s2, "WAIT", 30000)
    wait_queued(c, "l3", s2)
    w3.send("LOCK", "l1", s3, "WAIT", 30000)
    wait_queued(c, "l1", s3)  # over the limit: queued
    wait_until(lambda: metric(s, "fencelock_deadlock_searches_given_up_total") >= 1, 5,
               what="the search that gave up is counted")
    eq(metric(s, "fencelock_deadlocks_total"), 0)
    off = ctx.server("--deadlock-search-limit", "0")
    c0 = ctx.conn(off)
    format_2(c0)
    a, b, ca = two_cycle(c0, lambda: ctx.conn(off))
    cb = ctx.conn(off)
    cb.send("LOCK", "x", b, "WAIT", 30000)
    wait_queued(c0, "x", b)  # detection off: queued as before


def test_on_3_nodes_every_replica_refuses_alike_and_counts_it(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        format_2(c)
        conns = []

        def conn():
            k = Conn(leader.port, timeout=10.0)
            conns.append(k)
            return k
        try:
            a, b, ca = two_cycle(c, conn)
            expect_err(c.call("LOCK", "x", b, "WAIT", 30000, "REQ", b, 1), "DEADLOCK")
            r = c.call("LOCK", "x", b, "WAIT", 30000, "REQ", b, 1)
            expect_err(r, "DEADLOCK", "a retry with the same REQ answers the same")
            for s in servers:
                wait_until(lambda: metric(s, "fencelock_deadlocks_total") == 1, 10,
                           what="node %d counts the refusal once" % s.node_id)
            ok(c.call("UNLOCK", "y", b))
            expect_int(ca.read_reply(timeout=10), "a's wait completes")
        finally:
            for k in conns:
                k.close()


def test_a_multi_lock_closing_a_cycle_on_3_nodes_is_refused_and_counted_by_every_node(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        format_2(c)
        d0 = {s.node_id: metric(s, "fencelock_deadlocks_total") for s in servers}
        a, b = open_session(c), open_session(c)
        expect_int(c.call("LOCK", "x", a))
        expect_int(c.call("LOCK", "y", b))
        ca = Conn(leader.port, timeout=10.0)
        try:
            # a waits for y (held by b) and reads z (free: a heads its queue)
            ca.send("LOCK.MULTI", a, 2, "y", "z", "SHARED", "z", "WAIT", 30000)
            wait_queued(c, "y", a)
            wait_queued(c, "z", a)
            eq(lock_waits(c), [("y", a, [b], 0), ("z", a, [], 0)],
               "LOCK.WAITS: the multi-request's blockers per name")
            info = as_map(c.call("LOCK.INFO", "y"))
            eq([list(w) for w in info["waits_for"]], [[b]], "LOCK.INFO y: a waits for b")
            # b's multi-request for w and x: x (held by a) closes b -> a -> b
            r = c.call("LOCK.MULTI", b, 2, "w", "x", "WAIT", 30000)
            expect_err(r, "DEADLOCK", "the multi-request that closes the cycle")
            eq(r.text, "DEADLOCK cycle of 2: %d -x-> %d -y-> %d" % (b, a, b), "it names it")
            eq(lock_waits(c), [("y", a, [b], 0), ("z", a, [], 0)], "queued on no name")
            expect_nil(c.call("LOCK.INFO", "w"), "w was not even created")
            # a reader of z queues behind a's multi-request: b's would close the same cycle
            r = c.call("LOCK", "z", b, "SHARED", "WAIT", 30000)
            expect_err(r, "DEADLOCK", "a single LOCK through the queued multi-request")
            eq(r.text, "DEADLOCK cycle of 2: %d -z-> %d -y-> %d" % (b, a, b), "it names it")
            for s in servers:
                wait_until(lambda: metric(s, "fencelock_deadlocks_total") == d0[s.node_id] + 2,
                           10, what="node %d counts both refusals" % s.node_id)
            ok(c.call("UNLOCK", "y", b))
            toks = ca.read_reply(timeout=10)
            assert isinstance(toks, list) and len(toks) == 2 and all(
                isinstance(t, int) and t > 0 for t in toks), toks
        finally:
            ca.close()
