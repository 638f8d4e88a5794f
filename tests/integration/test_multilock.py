# SPDX-License-Identifier: Apache-2.0
"""LOCK.MULTI (docs/protocol.md "LOCK.MULTI"): several locks in one log entry or none, a token
per name in the order given, FIFO on every name (a later request never overtakes it, two
multi-requests over overlapping names never hold at once), leaving every queue at once, the
--max-multi-lock-names limit (refused, nothing changes), the quotas counting each name, a
waiting multi-request across a kill -9 of the leader (granted once, with tokens above any
before), and `fencelock lock A --also B -- CMD`."""

import threading

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_nil, kv_get, lock_info, no_reply, ok,
                     open_session, revision, wait_queued, wait_until)
from resp import Conn, RespError, text


def holder(c, name):
    info = lock_info(c, name)
    return info["holder"] if info else 0


def test_all_names_in_one_entry_each_with_its_own_token(ctx):
    c = ctx.conn()
    s, o = open_session(c), open_session(c)
    rev = revision(c)
    toks = ok(c.call("LOCK.MULTI", s, 3, "c", "a", "b", "SHARED", "a"))
    eq(len(toks), 3)
    # one entry: three grants take the next three revisions, in name order (a, b, c)
    eq(sorted(toks), [rev + 1, rev + 2, rev + 3])
    eq(toks, [rev + 3, rev + 1, rev + 2], "tokens in the order the names were given")
    eq(revision(c), rev + 3)
    eq(holder(c, "c"), s)
    eq(text(lock_info(c, "a")["mode"]), "shared")
    for name, tok in zip(("c", "a", "b"), toks):
        ok(c.call("FENCE.CHECK", name, tok), "each name fences with its own token")
    expect_int(c.call("PUT", "kc", "1", "FENCE", "c", toks[0]))
    expect_err(c.call("PUT", "kc", "2", "FENCE", "c", toks[2]), "STALE", "another name's token")
    # a busy name: the try answers nil and changes nothing
    rev = revision(c)
    expect_nil(c.call("LOCK.MULTI", o, 2, "b", "x"))
    eq(revision(c), rev, "a refused try changes nothing")
    eq(lock_info(c, "x"), None, "no lock was taken or created")
    # a name twice, a name it holds: refused, nothing changes
    expect_err(c.call("LOCK.MULTI", o, 2, "x", "x"), "ERR")
    expect_err(c.call("LOCK.MULTI", s, 2, "x", "b"), "ERR")
    expect_err(c.call("LOCK.MULTI", o, 2, "x", "y", "SHARED", "z"), "ERR")
    eq(revision(c), rev)
    ok(c.call("UNLOCK", "b", s))  # plain UNLOCK releases that name only
    eq(holder(c, "c"), s)
    eq(ok(c.call("LOCK.MULTI", o, 2, "b", "x")), [revision(c) - 1, revision(c)])


def test_a_waiting_request_blocks_its_free_names_and_is_granted_whole(ctx):
    c = ctx.conn()
    h, m, late = open_session(c), open_session(c), open_session(c)
    th = expect_int(c.call("LOCK", "b", h))
    cm = ctx.conn()
    cm.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 30000)
    wait_queued(c, "b", m)
    wait_queued(c, "a", m)
    eq(holder(c, "a"), 0, "a is free, but nobody may overtake the queued request")
    cl = ctx.conn()
    cl.send("LOCK", "a", late, "WAIT", 30000)
    wait_queued(c, "a", late)
    assert no_reply(cm) and no_reply(cl)
    ok(c.call("UNLOCK", "b", h))
    toks = ok(cm.read_reply(timeout=10))
    assert isinstance(toks, list) and len(toks) == 2 and min(toks) > th, toks
    eq((holder(c, "a"), holder(c, "b")), (m, m))
    assert no_reply(cl), "the later single request waits behind the multi-request"
    ok(c.call("UNLOCK", "a", m))
    assert expect_int(cl.read_reply(timeout=10)) > max(toks)


def test_wait_timeout_leaves_every_queue_at_once(ctx):
    c = ctx.conn()
    h, m = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "b", h))
    expect_nil(c.call("LOCK.MULTI", m, 3, "a", "b", "c", "WAIT", 300))
    eq(list(lock_info(c, "b")["waiters"]), [], "left b's queue")
    eq((lock_info(c, "a"), lock_info(c, "c")), (None, None), "left the free names' queues")


def test_two_multi_requests_over_overlapping_names_never_hold_at_once(ctx):
    """Two workers, names in opposite orders, each incrementing a counter per name under the
    name's fence: a lost update means two holders overlapped; a deadlock would hang (bounded)."""
    srv = ctx.server()
    rounds = 15
    errors = []

    def worker(names):
        try:
            with Conn(srv.port, timeout=30) as c:
                sid = expect_int(c.call("SESSION.OPEN", 60000))
                for _ in range(rounds):
                    toks = ok(c.call("LOCK.MULTI", sid, len(names), *names, "WAIT", 20000))
                    for name, tok in zip(names, toks):
                        k = "count/" + name
                        v = c.call("GET", k)
                        n = int(v) if v is not None else 0
                        expect_int(c.call("PUT", k, str(n + 1), "FENCE", name, tok))
                    for name in names:
                        ok(c.call("UNLOCK", name, sid))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(n,))
          for n in (["a", "b", "c"], ["c", "b", "a"], ["b", "d"])]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    assert not any(t.is_alive() for t in ts), "a worker hung (a deadlock?)"
    assert not errors, errors
    c = ctx.conn(srv)
    eq([int(c.call("GET", "count/" + n)) for n in "abcd"],
       [2 * rounds, 3 * rounds, 2 * rounds, rounds], "no lost update: no overlap")


test_two_multi_requests_over_overlapping_names_never_hold_at_once.timeout = 120


def test_the_limit_is_refused_and_nothing_changes(ctx):
    srv = ctx.server("--max-multi-lock-names", 3)
    c = ctx.conn(srv)
    s = open_session(c)
    rev = revision(c)
    r = expect_err(c.call("LOCK.MULTI", s, 4, "a", "b", "c", "d"), "TOOLARGE")
    assert "--max-multi-lock-names" in r.text, r.text
    eq(revision(c), rev)
    eq(ok(c.call("LOCKS", "")), [], "nothing taken")
    eq(len(ok(c.call("LOCK.MULTI", s, 3, "a", "b", "c"))), 3)


def test_the_quotas_count_every_name(ctx):
    srv = ctx.server("--max-waiters", 2, "--max-locks", 4)
    c = ctx.conn(srv)
    h, m = open_session(c), open_session(c)
    ok(c.call("LOCK.MULTI", h, 3, "a", "b", "c"))
    rev = revision(c)
    # three waiters are one more than --max-waiters allows
    r = expect_err(c.call("LOCK.MULTI", m, 3, "a", "b", "c", "WAIT", 30000), "NOSPACE")
    assert "--max-waiters" in r.text, r.text
    # two new locks on top of three are one more than --max-locks allows
    r = expect_err(c.call("LOCK.MULTI", m, 2, "x", "y"), "NOSPACE")
    assert "--max-locks" in r.text, r.text
    eq(revision(c), rev, "refused by a quota: nothing changed")
    cm = ctx.conn(srv)
    cm.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 30000)
    wait_queued(c, "b", m)
    ok(c.call("SESSION.CLOSE", h))
    eq(len(ok(cm.read_reply(timeout=10))), 2)


def test_a_request_waiting_through_a_leader_kill_is_granted_once_with_larger_tokens(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        h = expect_int(c.call("SESSION.OPEN", 60000))
        m = expect_int(c.call("SESSION.OPEN", 60000))
        th = expect_int(c.call("LOCK", "b", h))
        cm = Conn(leader.port, timeout=10)
        cm.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 60000, "REQ", m, 1)
        wait_queued(c, "b", m)
        wait_queued(c, "a", m)
        before = revision(c)
    leader.kill9()
    cm.close()
    new = ready_leader([s for s in servers if s is not leader], timeout=15)
    with Conn(new.port) as c:
        eq(list(lock_info(c, "a")["waiters"]), [m], "still queued on a after the fail-over")
        eq(list(lock_info(c, "b")["waiters"]), [m])
        with Conn(new.port, timeout=15) as cm2:
            # the client's resend: the same REQ seq asks for the truth, and waits again
            cm2.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 60000, "REQ", m, 1)
            assert no_reply(cm2, 0.5), "granted while b is still held"
            ok(c.call("UNLOCK", "b", h))
            toks = ok(cm2.read_reply(timeout=15))
        assert isinstance(toks, list) and len(toks) == 2, toks
        assert min(toks) > max(th, before), (toks, th, before)
        eq((holder(c, "a"), holder(c, "b")), (m, m))
        # granted once: a further resend answers the same tokens, nothing new applies
        rev = revision(c)
        eq(c.call("LOCK.MULTI", m, 2, "a", "b", "WAIT", 60000, "REQ", m, 1), toks)
        eq(revision(c), rev)


test_a_request_waiting_through_a_leader_kill_is_granted_once_with_larger_tokens.timeout = 60


def test_three_nodes_grant_on_every_replica_alike(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        s = expect_int(c.call("SESSION.OPEN", 60000))
        toks = ok(c.call("LOCK.MULTI", s, 2, "p", "q", "SHARED", "q"))
        rev = revision(c)
    for srv in servers:
        with Conn(srv.port) as c:
            ok(c.call("READONLY"))
            wait_until(lambda: revision(c) >= rev, timeout=10, what="replica caught up")
            eq(lock_info(c, "p")["holder"], s)
            ok(c.call("FENCE.CHECK", "q", toks[1]))


test_three_nodes_grant_on_every_replica_alike.timeout = 40


def test_cli_lock_of_several_names_runs_the_command_with_every_token(ctx):
    import os
    import subprocess
    srv = ctx.server()
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    env = dict(os.environ)
    env.pop("FENCELOCK_ENDPOINTS", None)
    p = subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % srv.port, "lock", "n1",
                        "--also-shared", "n2", "--",
                        "sh", "-c", 'echo "$FENCELOCK_TOKENS|$FENCELOCK_MODES|$FENCELOCK_MODE"'],
                       capture_output=True, timeout=30, env=env, cwd=ctx.workdir)
    assert p.returncode == 0, p
    toks, modes, mode = p.stdout.decode().strip().split("|")
    t1, t2 = (int(t) for t in toks.split())
    eq(t2, t1 + 1, "one grant: consecutive tokens in name order")
    eq(modes, "exclusive shared")
    eq(mode, "multi")
    c = ctx.conn(srv)
    eq(lock_info(c, "n1"), None, "released when the command ended")
    bad = subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % srv.port, "lock", "n1", "--also",
                          "n1"],
                         capture_output=True, timeout=30, env=env, cwd=ctx.workdir)
    eq(bad.returncode, 2, "a name twice is a usage error")


def test_acl_needs_every_name_and_the_user_quota_counts_each_name(ctx):
    from test_tenant import _acl_node, _as, _nospace_of
    s, _ = _acl_node(ctx, {"m": "perm=read,lock locks=m-* max_waiters=2"})
    admin, m = _as(ctx, s, "admin"), _as(ctx, s, "m")
    sid = expect_int(m.call("SESSION.OPEN", 60000))
    rev = revision(admin)
    r = expect_err(m.call("LOCK.MULTI", sid, 2, "m-a", "other"), "NOPERM")
    assert "other" in r.text, r.text
    eq(revision(admin), rev, "refused before anything ran")
    eq(len(ok(m.call("LOCK.MULTI", sid, 2, "m-a", "m-b"))), 2)
    h = expect_int(admin.call("SESSION.OPEN", 60000))
    ok(admin.call("LOCK.MULTI", h, 3, "m-x", "m-y", "m-z"))
    sid2 = expect_int(m.call("SESSION.OPEN", 60000))
    # three queued names are three waiters: one more than the user's max_waiters=2
    _nospace_of(m.call("LOCK.MULTI", sid2, 3, "m-x", "m-y", "m-z", "WAIT", 30000), "m",
                "max_waiters")
    eq(revision(admin), rev + 2 + 1 + 3 + 1, "nothing applied for the refused request")
