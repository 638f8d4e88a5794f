# SPDX-License-Identifier: Apache-2.0
"""TXN (docs/protocol.md "TXN"): compares over keys and locks, then every op of one branch in
one log entry or none. The reply ([THEN|ELSE, revision, results]); all-or-nothing when an op
late in the list fails, when a quota would be exceeded and when a name or the size is over a
limit (nothing applied: revision and values compared); IF HOLDS refusing a write once the
holder's session expired; a stale FENCE; exactly-once under REQ; ACL refusing the whole TXN
for one key or lock outside the user's globs; the event stream showing every change; and on 3
nodes a kill -9 of the leader between transfers that move value between two keys (every
replica: the sum unchanged, each transfer applied once, never half); `fencelock txn` from its
arguments and, in etcdctl's layout, from stdin."""

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, kv_get, ok, open_session, revision, wait_until
from resp import Conn, RespError


def get(c, key):
    v = c.call("GET", key)
    return v.decode() if isinstance(v, bytes) else v


def txn(c, *args):
    """The TXN's reply [branch, revision, results], checked for its shape."""
    r = ok(c.call("TXN", *args))
    assert isinstance(r, list) and len(r) == 3 and r[0] in ("THEN", "ELSE"), r
    return r


def test_then_applies_every_op_and_answers_each_result(ctx):
    c = ctx.conn()
    ok(c.call("PUT", "gone", "x"))
    ok(c.call("PUT", "n", "41"))
    r = txn(c, "IF", "EXISTS", "n", "IF", "VALUE", "n", "=", "41",
            "THEN", "PUT", "a", "va", "DEL", "gone", "DEL", "never", "INCR", "n", "-43",
            "ELSE", "PUT", "else", "no")
    rev = revision(c)
    eq(r[0], "THEN")
    eq(r[1], rev, "the store's revision after the TXN")
    eq(r[2], [rev - 2, 1, 0, -2], "PUT: its revision; DEL: the count; INCR: the new value")
    eq(get(c, "a"), "va")
    eq(get(c, "gone"), None)
    eq(get(c, "n"), "-2")
    eq(get(c, "else"), None, "ELSE did not run")
    eq(kv_get(c, "a")["mod_rev"], rev - 2, "one revision per change, in op order")
    eq(kv_get(c, "n")["mod_rev"], rev)


def test_a_false_compare_runs_else_and_compares_see_the_state_before(ctx):
    c = ctx.conn()
    ok(c.call("PUT", "k", "v"))
    mod = kv_get(c, "k")["mod_rev"]
    r = txn(c, "IF", "REV", "k", "=", mod + 1, "THEN", "PUT", "t", "1", "ELSE", "INCR", "e", 5)
    eq((r[0], r[2]), ("ELSE", [5]))
    eq(get(c, "t"), None)
    for cmp, want in ((("REV", "k", "=", mod), "THEN"), (("REV", "k", "<", mod), "ELSE"),
                      (("REV", "k", ">", mod - 1), "THEN"), (("REV", "k", "!=", mod), "ELSE"),
                      (("REV", "absent", "=", 0), "THEN"), (("VALUE", "k", "=", "v"), "THEN"),
                      (("VALUE", "k", "!=", "v"), "ELSE"), (("VALUE", "absent", "=", ""), "ELSE"),
                      (("EXISTS", "absent"), "ELSE"), (("MISSING", "absent"), "THEN")):
        eq(txn(c, "IF", *cmp, "THEN")[0], want, repr(cmp))


def test_a_bad_op_late_in_the_list_applies_nothing(ctx):
    c = ctx.conn()
    ok(c.call("PUT", "text", "abc"))
    ok(c.call("PUT", "keep", "1"))
    rev = revision(c)
    r = expect_err(c.call("TXN", "THEN", "PUT", "a", "1", "DEL", "keep", "INCR", "c", 1,
                          "INCR", "text", 1), "ERR")
    assert "op 4" in r.text and "integer" in r.text, r.text
    eq(revision(c), rev, "nothing applied")
    eq((get(c, "a"), get(c, "keep"), get(c, "c")), (None, "1", None))
    r = expect_err(c.call("TXN", "THEN", "PUT", "a", "1", "PUT", "a", "2"), "ERR")
    assert "twice" in r.text, r.text
    for bad in (("THEN", "PUT", "a"), ("THEN", "FROB", "a"), ("IF", "REV", "a", "~", 1, "THEN"),
                ("IF", "VALUE", "a", "<", "x", "THEN"), ("PUT", "a", "1"), ("THEN",),
                ("THEN", "INCR", "a", "x"), ("IF", "EXISTS", "a")):
        expect_err(c.call("TXN", *bad), "ERR", repr(bad))
    eq(revision(c), rev, "nothing applied for any refused TXN")


def test_limits_refuse_the_whole_txn(ctx):
    srv = ctx.server("--max-txn-ops", 3, "--max-txn-bytes", 64, "--max-keys", 3)
    c = ctx.conn(srv)
    ok(c.call("PUT", "k1", "1"))
    rev = revision(c)
    r = expect_err(c.call("TXN", "IF", "EXISTS", "k1", "THEN", "PUT", "a", "1", "PUT", "b", "1",
                          "PUT", "x", "1"), "TOOLARGE")
    assert "--max-txn-ops" in r.text, r.text
    r = expect_err(c.call("TXN", "THEN", "PUT", "a", "v" * 70), "TOOLARGE")
    assert "--max-txn-bytes" in r.text, r.text
    # two new keys would make 3 + 1 > --max-keys with k2: refused whole, not the first alone
    ok(c.call("PUT", "k2", "1"))
    rev = revision(c)
    r = expect_err(c.call("TXN", "THEN", "PUT", "n1", "1", "PUT", "n2", "1"), "NOSPACE")
    assert "--max-keys" in r.text, r.text
    eq(revision(c), rev, "a quota hit applies nothing")
    eq((get(c, "n1"), get(c, "n2")), (None, None))
    r = txn(c, "THEN", "PUT", "n1", "1", "PUT", "k1", "2")
    eq(r[0], "THEN", "one new key fits")


def test_holds_refuses_a_write_once_the_holders_session_expired(ctx):
    c = ctx.conn()
    live = open_session(c)  # TTL 60 s: alive for the whole test
    t1 = expect_int(c.call("LOCK", "L1", live))
    r = txn(c, "IF", "HOLDS", "L1", live, "IF", "TOKEN", "L1", "=", t1, "THEN", "PUT", "g", "1")
    eq(r[0], "THEN", "the holder writes")
    s = expect_int(c.call("SESSION.OPEN", 2000))  # left to expire: no keepalive
    tok = expect_int(c.call("LOCK", "L", s))
    wait_until(lambda: isinstance(c.call("SESSION.INFO", s), RespError), timeout=30,
               what="the session expired")
    rev = revision(c)
    r = txn(c, "IF", "HOLDS", "L", s, "THEN", "PUT", "g", "2")
    eq(r[0], "ELSE", "an expired holder holds nothing")
    eq(get(c, "g"), "1")
    eq(r[1], rev, "nothing written")
    r = txn(c, "IF", "TOKEN", "L", "=", tok, "THEN", "PUT", "g", "3")
    eq(r[0], "ELSE", "its token is no longer current")
    eq(get(c, "g"), "1")


def test_a_stale_fence_applies_nothing(ctx):
    c = ctx.conn()
    s, o = open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "L", s))
    eq(txn(c, "THEN", "PUT", "f", "1", "FENCE", "L", t1)[0], "THEN")
    ok(c.call("UNLOCK", "L", s))
    t2 = expect_int(c.call("LOCK", "L", o))
    rev = revision(c)
    expect_err(c.call("TXN", "THEN", "PUT", "f", "2", "INCR", "z", 1, "FENCE", "L", t1), "STALE")
    eq(revision(c), rev)
    eq((get(c, "f"), get(c, "z")), ("1", None))
    eq(txn(c, "THEN", "PUT", "f", "3", "FENCE", "L", t2)[0], "THEN")
    expect_err(c.call("TXN", "THEN", "PUT", "f", "4", "IFREV", 1), "ERR", "no IFREV on a TXN")


def test_a_retried_txn_applies_once_with_the_same_reply(ctx):
    c = ctx.conn()
    s = open_session(c)
    args = ("IF", "MISSING", "once", "THEN", "PUT", "once", "x", "INCR", "ctr", 1,
            "ELSE", "INCR", "ctr", 100)
    first = txn(c, *args, "REQ", s, 1)
    rev = revision(c)
    again = txn(c, *args, "REQ", s, 1)
    eq(again, first, "the resend's answer")
    eq(revision(c), rev, "applied once")
    eq(get(c, "ctr"), "1")
    expect_err(c.call("TXN", "THEN", "DEL", "once", "REQ", s, 1), "ERR", "another command")
    eq(txn(c, *args, "REQ", s, 2)[0], "ELSE")
    eq(get(c, "ctr"), "101")


def test_acl_refuses_the_whole_txn_for_one_name(ctx):
    from test_tenant import _acl_node, _as
    s, _ = _acl_node(ctx, {"w": "perm=read,write,lock keys=t-* locks=l-*",
                           "wo": "perm=write keys=t-*"})
    admin, w, wo = _as(ctx, s, "admin"), _as(ctx, s, "w"), _as(ctx, s, "wo")
    sid = open_session(w)
    tok = expect_int(w.call("LOCK", "l-1", sid))
    eq(txn(w, "IF", "HOLDS", "l-1", sid, "THEN", "PUT", "t-1", "1", "FENCE", "l-1", tok)[0],
       "THEN")
    rev = revision(admin)
    for bad in (("THEN", "PUT", "t-2", "1", "PUT", "other", "1"),
                ("IF", "EXISTS", "other", "THEN", "PUT", "t-2", "1"),
                ("IF", "HOLDS", "other-lock", sid, "THEN", "PUT", "t-2", "1"),
                ("THEN", "PUT", "t-2", "1", "FENCE", "other-lock", tok)):
        expect_err(w.call("TXN", *bad), "NOPERM", repr(bad))
    r = expect_err(wo.call("TXN", "IF", "EXISTS", "t-1", "THEN", "PUT", "t-2", "1"), "NOPERM")
    assert "read" in r.text, r.text
    eq(txn(wo, "THEN", "PUT", "t-3", "1")[0], "THEN", "writes alone need write only")
    eq(revision(admin), rev + 1, "nothing applied for the refused TXNs")
    eq(get(admin, "t-2"), None)


def test_the_event_stream_shows_every_change(ctx):
    from test_watch import read_all
    c = ctx.conn()
    ok(c.call("PUT", "ev-b", "1"))
    start = revision(c)
    r = txn(c, "THEN", "PUT", "ev-a", "1", "DEL", "ev-b", "INCR", "ev-c", 2)
    ev = [(i, f) for i, f in read_all(ctx.conn()) if f.get("name", "").startswith("ev-")]
    got = [(i, f["type"], f["name"]) for i, f in ev[1:]]
    eq(got, [("%d-0" % r[1], "put", "ev-a"), ("%d-1" % r[1], "del", "ev-b"),
             ("%d-2" % r[1], "put", "ev-c")], "every change, in op order, under the entry's id")
    eq([f["mod_rev"] for _, f in ev[1:]], [str(start + 1), str(start + 2), str(start + 3)],
       "each change's own revision, as KV.GET shows it")
    eq(ev[3][1]["value"], "2")
    eq(r[1], start + 3)
    eq(kv_get(c, "ev-a")["mod_rev"], start + 1)


def test_a_leader_kill_between_transfers_leaves_no_half_applied_txn(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    seq = 0
    with Conn(leader.port) as c:
        s = expect_int(c.call("SESSION.OPEN", 60000))
        ok(c.call("PUT", "acct-a", "100"))
        ok(c.call("PUT", "acct-b", "0"))
        for _ in range(10):
            seq += 1
            r = txn(c, "IF", "EXISTS", "acct-a", "THEN", "INCR", "acct-a", -1, "INCR",
                    "acct-b", 1, "INCR", "moves", 1, "REQ", s, seq)
            eq(r[0], "THEN")
        seq += 1  # one more in flight when the leader dies
        c.send("TXN", "IF", "EXISTS", "acct-a", "THEN", "INCR", "acct-a", -1, "INCR", "acct-b",
               1, "INCR", "moves", 1, "REQ", s, seq)
    leader.kill9()
    rest = [x for x in servers if x is not leader]
    new = ready_leader(rest, timeout=15)
    with Conn(new.port, timeout=15) as c:
        r = txn(c, "IF", "EXISTS", "acct-a", "THEN", "INCR", "acct-a", -1, "INCR", "acct-b", 1,
                "INCR", "moves", 1, "REQ", s, seq)
        eq(r[0], "THEN", "the resend's answer")
        again = txn(c, "IF", "EXISTS", "acct-a", "THEN", "INCR", "acct-a", -1, "INCR", "acct-b",
                    1, "INCR", "moves", 1, "REQ", s, seq)
        eq(again[:2], r[:2], "a second resend: the same branch and revision")
        for _ in range(5):
            seq += 1
            txn(c, "THEN", "INCR", "acct-a", -1, "INCR", "acct-b", 1, "INCR", "moves", 1,
                "REQ", s, seq)
        rev = revision(c)
    for srv in rest:
        with Conn(srv.port) as c:
            ok(c.call("READONLY"))
            wait_until(lambda: revision(c) >= rev, timeout=10, what="replica caught up")
            a, b, moves = int(get(c, "acct-a")), int(get(c, "acct-b")), int(get(c, "moves"))
            eq(a + b, 100, "no half-applied transfer")
            eq((b, moves), (seq, seq), "each transfer applied exactly once")


test_a_leader_kill_between_transfers_leaves_no_half_applied_txn.timeout = 60


def test_cli_txn_from_args_and_from_stdin(ctx):
    import json
    import os
    import subprocess
    srv = ctx.server()
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    env = dict(os.environ)
    env.pop("FENCELOCK_ENDPOINTS", None)
    base = [cli, "--endpoints", "127.0.0.1:%d" % srv.port]

    def run(*args, stdin=None):
        return subprocess.run(base + [str(a) for a in args], input=stdin, capture_output=True,
                              timeout=30, env=env, cwd=ctx.workdir)

    c = ctx.conn(srv)
    p = run("txn", "IF", "MISSING", "ck", "THEN", "PUT", "ck", "1", "INCR", "cn", 2,
            "ELSE", "DEL", "ck")
    eq(p.returncode, 0, repr(p))
    rev = revision(c)
    eq(p.stdout.decode().split("\n"), ["THEN %d" % rev, str(rev - 1), "2", ""])
    # etcdctl's layout on stdin: compares, blank line, THEN's ops, blank line, ELSE's ops
    p = run("--json", "txn", stdin=b"MISSING ck\n\nPUT ck 2\n\nDEL ck\nINCR cn -5\n")
    eq(p.returncode, 0, repr(p))
    eq(json.loads(p.stdout), {"succeeded": False, "revision": revision(c), "results": [1, -3]})
    eq((get(c, "ck"), get(c, "cn")), (None, "-3"))
    s = open_session(c)
    tok = expect_int(c.call("LOCK", "L", s))
    p = run("txn", "--fence", "L", tok + 1, "THEN", "PUT", "ck", "x")
    eq(p.returncode, 1, "a stale fence: exit 1, %r" % (p,))
    eq(get(c, "ck"), None)
    eq(run("txn", "THEN", "FROB", "k").returncode, 2, "a word it does not know: usage")
    eq(run("txn", "IF", "REV", "k", "~", 1, "THEN").returncode, 2)
    eq(run("txn", "--fence", "L", tok, "THEN", "PUT", "ck", "y").returncode, 0)
    eq(get(c, "ck"), "y")
