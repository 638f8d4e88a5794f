# SPDX-License-Identifier: Apache-2.0
"""Lock history (LOCK.HISTORY, docs/protocol.md "Lock history"): each grant of a lock with its
session, session name, token, times, how it ended and the waiters at the grant, newest first;
paged by BEFORE, -COMPACTED past what was dropped; replicated state, so it is the same after a
snapshot and a restart, after a kill -9 of the leader, and on a follower."""

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, expect_ok, open_session, wait_queued, wait_until
from resp import Conn, as_map, text

SNAP = ["--snapshot-threshold", "16", "--snapshot-trailing", "4"]


def history(c, name, *opts):
    r = c.call("LOCK.HISTORY", name, *opts)
    assert isinstance(r, list), r
    out = []
    for e in r:
        m = as_map(e)
        m["waiters"] = [as_map(w) for w in m["waiters"]]
        for k in ("session_name", "user", "value", "kind", "ended_by", "traceparent",
                  "end_traceparent"):
            if k in m:
                m[k] = text(m[k])
        out.append(m)
    return out


def three_grants(ctx, c, name="h/L"):
    """a, then b (queued behind a), then c (queued behind b): three grants, two with a wait."""
    a = open_session(c, 60000, "NAME", "worker-a")
    b = open_session(c, 60000, "NAME", "worker-b")
    s3 = open_session(c, 60000, "NAME", "worker-c")
    t1 = expect_int(c.call("LOCK", name, a))
    wb, wc = ctx.conn(), ctx.conn()
    wb.send("LOCK", name, b, "WAIT", 60000)
    wait_queued(c, name, b)
    wc.send("LOCK", name, s3, "WAIT", 60000)
    wait_queued(c, name, s3)
    expect_ok(c.call("UNLOCK", name, a))
    t2 = expect_int(wb.read_reply(timeout=20))
    expect_ok(c.call("UNLOCK", name, b))
    t3 = expect_int(wc.read_reply(timeout=20))
    return (a, b, s3), (t1, t2, t3)


def test_history_lists_each_grant_newest_first_with_waiters_and_ends(ctx):
    c = ctx.conn()
    (a, b, s3), (t1, t2, t3) = three_grants(ctx, c)
    h = history(c, "h/L")
    eq([e["token"] for e in h], [t3, t2, t1])
    eq([e["session"] for e in h], [s3, b, a])
    eq([e["session_name"] for e in h], ["worker-c", "worker-b", "worker-a"])
    eq([e["ended_by"] for e in h], ["", "unlock", "unlock"])
    eq(h[0]["ended_rev"], 0, "still held")
    assert h[1]["ended_rev"] >= t3 and h[2]["ended_rev"] >= t2, h
    eq(h[2]["waiters_total"], 0, "a was granted at once")
    eq([w["session"] for w in h[1]["waiters"]], [s3], "c waited behind b's grant")
    eq(h[1]["waiters_total"], 1)
    for e in h:
        assert e["granted_ms"] > 1_600_000_000_000, e  # a wall clock, from the entry
        eq(e["kind"], "lock")
    assert h[1]["held_ms"] == h[1]["ended_ms"] - h[1]["granted_ms"], h[1]
    # paging
    eq([e["token"] for e in history(c, "h/L", "COUNT", 1)], [t3])
    eq([e["token"] for e in history(c, "h/L", "BEFORE", t3)], [t2, t1])
    eq(history(c, "h/L", "BEFORE", t1), [])  # nothing older and nothing dropped
    expect_err(c.call("LOCK.HISTORY", "h/L", "COUNT", 0), "ERR")
    expect_err(c.call("LOCK.HISTORY", "h/L", "BOGUS", 1), "ERR")


def test_history_is_bounded_per_lock_and_compacted_past_it(ctx):
    srv = ctx.server("--history-per-lock", 2)
    c = ctx.conn(srv)
    a = open_session(c, 60000)
    toks = []
    for _ in range(4):
        toks.append(expect_int(c.call("LOCK", "h/B", a)))
        expect_ok(c.call("UNLOCK", "h/B", a))
    eq([e["token"] for e in history(c, "h/B")], [toks[3], toks[2]])
    expect_err(c.call("LOCK.HISTORY", "h/B", "BEFORE", toks[2]), "COMPACTED")


def test_history_survives_a_snapshot_and_a_restart(ctx):
    srv = ctx.server(*SNAP)
    c = ctx.conn(srv)
    three_grants(ctx, c)
    a = open_session(c, 60000)
    for i in range(40):  # past --snapshot-threshold: the history is in a snapshot
        expect_int(c.call("PUT", "h/k%d" % i, "v"))
    wait_until(lambda: "raft: snapshot of" in srv.log_text(), timeout=20, what="a snapshot")
    before = history(c, "h/L")
    expect_int(c.call("LOCK", "h/L2", a))
    before2 = history(c, "h/L2")
    srv.stop()
    srv.start()
    c = ctx.conn(srv)
    wait_until(lambda: history(c, "h/L") == before, timeout=20, what="the history after restart")
    eq(history(c, "h/L2"), before2)


def test_history_after_a_leader_kill9_and_on_a_follower_three_nodes(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port, timeout=10) as c:
        a = open_session(c, 60000, "NAME", "held")
        b = open_session(c, 60000, "NAME", "waiting")
        t1 = expect_int(c.call("LOCK", "h/K", a))
        w = Conn(leader.port, timeout=10)
        w.send("LOCK", "h/K", b, "WAIT", 60000)
        wait_queued(c, "h/K", b)
        expect_ok(c.call("UNLOCK", "h/K", a))
        t2 = expect_int(w.read_reply(timeout=20))
        w.close()
        before = history(c, "h/K")
    eq([e["token"] for e in before], [t2, t1])
    for s in servers:  # a follower's local state answers the same (READONLY)
        if s is leader:
            continue
        with Conn(s.port, timeout=10) as f:
            expect_ok(f.call("READONLY"))
            wait_until(lambda: history(f, "h/K") == before, timeout=20,
                       what="the follower's history")
    leader.kill9()
    leader = ready_leader([s for s in servers if s.running()], timeout=30)
    with Conn(leader.port, timeout=10) as c:
        eq(history(c, "h/K"), before, "the new leader's history")


def test_cli_history_prints_the_grants_and_compacted(ctx):
    from test_cli import run, run_json
    srv = ctx.server("--history-per-lock", 2)
    c = ctx.conn(srv)
    (a, b, s3), (t1, t2, t3) = three_grants(ctx, c, "h/cli")
    want = history(c, "h/cli")
    got = run_json(ctx, [srv], "history", "h/cli")
    eq([(e["token"], e["session"], e["session_name"], e["ended_by"], e["waiters_total"])
        for e in got],
       [(e["token"], e["session"], e["session_name"], e["ended_by"], e["waiters_total"])
        for e in want])
    eq([e["token"] for e in got], [t3, t2], "--history-per-lock 2 kept the newest two")
    eq(got[1]["waiters"], [{"session": s3, "waited_ms": want[1]["waiters"][0]["waited_ms"]}])
    eq([e["token"] for e in run_json(ctx, [srv], "history", "h/cli", "--count", 1)], [t3])
    r = run(ctx, [srv], "history", "h/cli", "--before", t2)
    assert r.rc != 0 and "COMPACTED" in r.err, r
    text_out = run(ctx, [srv], "history", "h/cli").out
    assert "worker-c" in text_out and "(held)" in text_out, text_out
