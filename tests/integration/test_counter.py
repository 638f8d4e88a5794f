# SPDX-License-Identifier: Apache-2.0
"""INCR (docs/protocol.md "INCR"): a key as a signed 64-bit counter stored as decimal text (GET
reads it), BY n (negative too), a value that is not such an integer or a sum that overflows
refused with nothing changed, fenced like PUT, counted by the key quotas, exactly once under
REQ, and the same count on every replica after a kill -9 of the leader with increments in
flight (the counter equals the acknowledged increments). `fencelock incr` too."""

import json
import os
import subprocess

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, kv_get, ok, open_session, revision, wait_until
from resp import Conn

I64_MAX = 2**63 - 1
I64_MIN = -2**63


def get(c, key):
    v = c.call("GET", key)
    return v.decode() if isinstance(v, bytes) else v


def test_counts_up_and_down_as_decimal_text(ctx):
    c = ctx.conn()
    eq(expect_int(c.call("INCR", "n")), 1, "an absent key counts as 0")
    eq(expect_int(c.call("INCR", "n", "BY", 41)), 42)
    eq(expect_int(c.call("INCR", "n", "BY", -50)), -8)
    eq(get(c, "n"), "-8", "GET reads the decimal text")
    kv = kv_get(c, "n")
    eq(kv["version"], 3, "each INCR is a write")
    eq(kv["mod_rev"], revision(c))
    eq(expect_int(c.call("INCR", "n", "by", 0)), -8, "BY 0 writes the same value")
    ok(c.call("PUT", "m", "17"))
    eq(expect_int(c.call("INCR", "m")), 18, "a value PUT as decimal text counts on")


def test_a_value_that_is_not_an_integer_is_refused_and_nothing_changes(ctx):
    c = ctx.conn()
    for bad in ("abc", "", "007", " 7", "+7", "-0", "1.5", "99999999999999999999"):
        ok(c.call("PUT", "k", bad))
        rev = revision(c)
        r = expect_err(c.call("INCR", "k"), "ERR", repr(bad))
        assert "k" in r.text and "integer" in r.text, r.text
        eq(revision(c), rev, "refused: nothing changed")
        eq(get(c, "k"), bad)
    for bad in ("x", "1.0", "", "9223372036854775808"):
        expect_err(c.call("INCR", "k", "BY", bad), "ERR", "BY %r" % bad)
    expect_err(c.call("INCR", "k", "BY"), "ERR", "BY without a number")


def test_overflow_is_refused_and_nothing_changes(ctx):
    c = ctx.conn()
    eq(expect_int(c.call("INCR", "big", "BY", I64_MAX)), I64_MAX)
    rev = revision(c)
    r = expect_err(c.call("INCR", "big"), "ERR")
    assert "overflow" in r.text, r.text
    eq(revision(c), rev)
    eq(get(c, "big"), str(I64_MAX))
    eq(expect_int(c.call("INCR", "small", "BY", I64_MIN)), I64_MIN)
    eq(get(c, "small"), str(I64_MIN))
    expect_err(c.call("INCR", "small", "BY", -1), "ERR")
    eq(expect_int(c.call("INCR", "small", "BY", I64_MAX)), -1)


def test_fenced_like_put(ctx):
    c = ctx.conn()
    s, o = open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "L", s))
    eq(expect_int(c.call("INCR", "f", "BY", 5, "FENCE", "L", t1)), 5)
    ok(c.call("UNLOCK", "L", s))
    t2 = expect_int(c.call("LOCK", "L", o))
    rev = revision(c)
    expect_err(c.call("INCR", "f", "FENCE", "L", t1), "STALE", "an old holder's token")
    eq(revision(c), rev)
    eq(get(c, "f"), "5")
    eq(expect_int(c.call("INCR", "f", "FENCE", "L", t2)), 6)
    kv = kv_get(c, "f")
    expect_err(c.call("INCR", "f", "IFREV", kv["mod_rev"] - 1), "IFREV")
    eq(expect_int(c.call("INCR", "f", "IFREV", kv["mod_rev"])), 7)


def test_an_increment_keeps_the_keys_lease(ctx):
    c = ctx.conn()
    s = open_session(c)
    ok(c.call("PUT", "lk", "1", "LEASE", s))
    eq(expect_int(c.call("INCR", "lk")), 2)
    eq(kv_get(c, "lk")["lease"], s)
    ok(c.call("SESSION.CLOSE", s))
    eq(c.call("GET", "lk"), None, "deleted with its session")


def test_the_key_quota_counts_a_new_counter(ctx):
    srv = ctx.server("--max-keys", 2)
    c = ctx.conn(srv)
    expect_int(c.call("INCR", "a"))
    expect_int(c.call("INCR", "b"))
    rev = revision(c)
    r = expect_err(c.call("INCR", "c"), "NOSPACE")
    assert "--max-keys" in r.text, r.text
    eq(revision(c), rev)
    eq(expect_int(c.call("INCR", "a")), 2, "an existing counter is no new key")


def test_a_retried_request_applies_once(ctx):
    c = ctx.conn()
    s = open_session(c)
    eq(expect_int(c.call("INCR", "r", "BY", 3, "REQ", s, 1)), 3)
    rev = revision(c)
    eq(expect_int(c.call("INCR", "r", "BY", 3, "REQ", s, 1)), 3, "the resend's answer")
    eq(revision(c), rev, "applied once")
    eq(expect_int(c.call("INCR", "r", "BY", 3, "REQ", s, 2)), 6)


def test_acknowledged_increments_count_once_through_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    acked = 0
    seq = 0
    with Conn(leader.port) as c:
        s = expect_int(c.call("SESSION.OPEN", 60000))
        for _ in range(20):
            seq += 1
            eq(expect_int(c.call("INCR", "ctr", "REQ", s, seq)), seq)
            acked += 1
        # one more in flight, its outcome unknown to the client when the leader dies
        seq += 1
        c.send("INCR", "ctr", "REQ", s, seq)
    leader.kill9()
    rest = [x for x in servers if x is not leader]
    new = ready_leader(rest, timeout=15)
    with Conn(new.port, timeout=15) as c:
        # the client's resend of the unacknowledged request: applied at most once in all
        eq(expect_int(c.call("INCR", "ctr", "REQ", s, seq)), seq)
        acked += 1
        eq(expect_int(c.call("INCR", "ctr", "REQ", s, seq)), seq, "a second resend")
        for _ in range(10):
            seq += 1
            eq(expect_int(c.call("INCR", "ctr", "REQ", s, seq)), seq)
            acked += 1
        rev = revision(c)
    eq(acked, seq)
    for srv in rest:
        with Conn(srv.port) as c:
            ok(c.call("READONLY"))
            wait_until(lambda: revision(c) >= rev, timeout=10, what="replica caught up")
            eq(get(c, "ctr"), str(acked), "the counter equals the acknowledged increments")


test_acknowledged_increments_count_once_through_a_leader_kill.timeout = 60


def test_cli_incr(ctx):
    srv = ctx.server()
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    env = dict(os.environ)
    env.pop("FENCELOCK_ENDPOINTS", None)
    base = [cli, "--endpoints", "127.0.0.1:%d" % srv.port]

    def run(*args):
        return subprocess.run(base + list(args), capture_output=True, timeout=30, env=env,
                              cwd=ctx.workdir)

    p = run("incr", "cli")
    eq((p.returncode, p.stdout), (0, b"1\n"))
    p = run("incr", "cli", "--by", "-5")
    eq((p.returncode, p.stdout), (0, b"-4\n"))
    p = run("--json", "incr", "cli", "--by", "2")
    eq(p.returncode, 0, repr(p))
    eq(json.loads(p.stdout), {"key": "cli", "value": -2})
    c = ctx.conn(srv)
    s = open_session(c)
    tok = expect_int(c.call("LOCK", "L", s))
    eq(run("incr", "cli", "--fence", "L", str(tok)).stdout, b"-1\n")
    p = run("incr", "cli", "--fence", "L", str(tok + 1))
    eq(p.returncode, 1, "a stale token: exit 1")
    ok(c.call("PUT", "txt", "hello"))
    p = run("incr", "txt")
    eq(p.returncode, 4, repr(p))
    assert b"integer" in p.stderr, p.stderr
    eq(run("incr", "cli", "--by", "x").returncode, 2, "a bad step is a usage error")
    eq(get(c, "cli"), "-1")


def test_acl_needs_write_on_the_key_and_the_fence_lock_and_the_user_quota_counts_it(ctx):
    from test_tenant import _acl_node, _as, _nospace_of
    s, _ = _acl_node(ctx, {"w": "perm=read,write,lock keys=c-* locks=l-* max_keys=1",
                           "r": "perm=read"})
    admin, w, r = _as(ctx, s, "admin"), _as(ctx, s, "w"), _as(ctx, s, "r")
    eq(expect_int(w.call("INCR", "c-1", "BY", 2)), 2)
    rev = revision(admin)
    expect_err(w.call("INCR", "other"), "NOPERM", "a key outside keys=")
    expect_err(w.call("INCR", "c-1", "BY", 1, "FENCE", "other", 1), "NOPERM", "the FENCE lock")
    expect_err(r.call("INCR", "c-1"), "NOPERM", "read only")
    _nospace_of(w.call("INCR", "c-2"), "w", "max_keys")
    eq(revision(admin), rev, "nothing applied for the refused requests")
    eq(get(admin, "c-1"), "2")
