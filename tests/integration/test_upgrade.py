# SPDX-License-Identifier: Apache-2.0
"""Rolling upgrade and the log-format gate (docs/operations.md "Upgrading").

A node started with --max-log-format 1 reads and reports only what the previous release
reads. A cluster whose voters do not all read format 2 stays at format 1: the leader writes
version-1 entries only (sessions get no owner), refuses SEM.*, ELECT.* and SESSION.REVOKE
with -ERR naming the node that holds it back, and nothing it writes stops the old node.
Once every voter reports format 2 the leader commits the raise (CLUSTER.INFO log_format 2)
and the new commands work; after that, a node that reads only format 1 stops at the first
entry it cannot read, with a clear log line and exit status 3, instead of diverging."""

from cluster import info, info_now, ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, expect_ok, open_session, wait_until
from resp import RespError

OLD = ["--max-log-format", "1"]


def _drop_old_flag(s):
    i = s.extra_args.index("--max-log-format")
    del s.extra_args[i:i + 2]


def _restart(s, args_fn, servers):
    """Restart `s` with changed flags and wait until it follows a leader again."""
    s.stop()
    args_fn(s)
    s.restart(wait=False)
    ready_leader(servers, timeout=30)
    wait_until(lambda: (info(s) or {}).get("leader_id"), timeout=30, interval=0.1,
               what="node %d back in the cluster" % s.node_id)


def _sem(servers):
    """SEM.ACQUIRE through the ready leader of the moment, with a fresh session; None if the
    leader changed on the way (-UNKNOWN, -NOTLEADER)."""
    c = ready_leader(servers).conn()
    sid = c.call("SESSION.OPEN", 60000)
    if isinstance(sid, RespError):
        return c, None, None
    return c, sid, c.call("SEM.ACQUIRE", "sem", sid, 5)


def test_old_voter_holds_the_format_back_until_it_is_upgraded(ctx):
    servers = start_cluster(ctx, 3, extra=OLD)  # the previous release, everywhere
    c = ready_leader(servers).conn()
    eq(info(servers[0])["log_format"], 1, "a cluster of old nodes")
    eq(info(servers[0])["max_log_format"], 1)
    sid = open_session(c)
    expect_int(c.call("LOCK", "L", sid))
    # version-1 entries record no request digest: a reused seq replays the cached reply (the
    # previous release's behaviour) instead of being refused as another command
    rev = expect_int(c.call("PUT", "k", "v", "REQ", sid, 1))
    eq(expect_int(c.call("PUT", "other", "v", "REQ", sid, 1)), rev, "replayed at format 1")
    # nodes 1 and 2 are upgraded; node 3 still runs the previous release
    for s in servers[:2]:
        _restart(s, _drop_old_flag, servers)

    def held_back_by_3():
        _, _, r = _sem(servers)
        assert r is None or isinstance(r, RespError), "SEM.ACQUIRE at format 1: %r" % (r,)
        return r is not None and "node 3 reads only 1" in r.text and r

    r = wait_until(held_back_by_3, timeout=15, interval=0.2, what="the gate naming node 3")
    assert r.text.startswith("ERR cluster format 1;") and "finish the upgrade" in r.text, r
    c = ready_leader(servers).conn()
    sid = open_session(c)
    for cmd in (("ELECT.CAMPAIGN", "e", sid, "v"), ("SESSION.REVOKE", sid)):
        r = expect_err(c.call(*cmd), "ERR", repr(cmd))
        assert "cluster format 1" in r.text, r
    expect_int(c.call("LOCK", "L2", sid))  # the old commands go on
    for s in servers:
        eq(info_now(s)["log_format"], 1, "node %d's format" % s.node_id)
    assert servers[2].running(), "the old node must not stop: " + servers[2].log_tail()
    # node 3 is upgraded too: the leader raises the format, the new commands work
    _restart(servers[2], _drop_old_flag, servers)
    wait_until(lambda: all((info(s) or {}).get("log_format") == 2 for s in servers),
               timeout=20, interval=0.2, what="log format 2 on every node")
    c = ready_leader(servers).conn()
    sid = open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "sem", sid, 5))
    expect_int(c.call("ELECT.CAMPAIGN", "e", sid, "v"))
    expect_int(c.call("PUT", "k", "v", "REQ", sid, 1))  # now with a digest
    r = expect_err(c.call("PUT", "other", "v", "REQ", sid, 1), "ERR")
    assert "was used by a different command" in r.text, r
    expect_ok(c.call("SESSION.REVOKE", sid))
    assert any("cluster log format is now 2" in s.log_text() for s in servers)
    # the format never goes back: an old node rejoining stops at the first entry it cannot read
    old = servers[2]
    old.stop()
    old.extra_args += OLD
    c = ready_leader(servers).conn()
    sid = open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "sem2", sid, 1))  # a format-2 entry it has not seen
    old.restart(wait=False)
    wait_until(lambda: not old.running(), timeout=20, interval=0.1, what="the old node to stop")
    old.proc._fl_reaped = True  # the exit is the point of the test
    eq(old.proc.returncode, 3, "exit status of a node that met a newer log format")
    log = old.log_text()
    assert "needs log format 2; this node reads up to 1: stopping" in log, old.log_tail()
    assert "Upgrading" in log
    expect_int(c.call("LOCK", "L3", sid))  # the other two go on


def test_a_new_cluster_starts_at_the_newest_format(ctx):
    servers = start_cluster(ctx, 3)
    c = ready_leader(servers).conn()
    sid = open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "s", sid, 2))  # at once: no announce round needed
    wait_until(lambda: all((info(s) or {}).get("log_format") == 2 for s in servers),
               timeout=10, interval=0.1, what="log format 2 on every node")
