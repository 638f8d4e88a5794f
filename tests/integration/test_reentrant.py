# SPDX-License-Identifier: Apache-2.0
"""Reentrant sessions: SESSION.OPEN ttl REENTRANT [MAXCOUNT n]. A second LOCK of a lock the
session holds exclusively counts up and answers the same token; UNLOCK counts down and releases
only the last hold; LOCK.INFO / LOCKS / SESSION.INFO / the JSON API show the count; a LOCK at
MAXCOUNT is refused and changes nothing; a retried LOCK (REQ with the same seq) does not count
twice; an admin's UNLOCK ends every hold at once; sessions opened without REENTRANT answer as
they always did. The count survives a kill -9 of a single node (log and snapshot) and of the
leader of 3 nodes, and a waiter is granted only after the last UNLOCK, with a larger token."""

import json
import urllib.request

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, lock_info, no_reply, ok, open_session,
                     session_info, wait_queued)
from resp import Conn, RespError, as_map, text

# LOCK.INFO's fields before reentrancy (with lock metadata's value, max_hold_ms and
# transitions): a non-reentrant holder's reply keeps exactly these.
LOCK_INFO_KEYS = {"holder", "token", "held_since_ms", "lockdelay", "waiters", "mode", "holders",
                  "waits_for", "value", "max_hold_ms", "transitions"}


def keys_of(m):
    return {text(k) for k in m}


def open_reentrant(c, *opts):
    return expect_int(c.call("SESSION.OPEN", 60000, "REENTRANT", *opts), "SESSION.OPEN REENTRANT")


def test_relock_counts_up_with_the_same_token_and_unlock_counts_down(ctx):
    c = ctx.conn()
    s = open_reentrant(c)
    t = expect_int(c.call("LOCK", "r", s))
    eq(expect_int(c.call("LOCK", "r", s)), t, "the second LOCK: the same token")
    eq(expect_int(c.call("LOCK", "r", s)), t, "the third LOCK: the same token")
    info = lock_info(c, "r")
    eq(info["count"], 3, "LOCK.INFO's count")
    eq(keys_of(info), LOCK_INFO_KEYS | {"count"})
    row = [as_map(x) for x in c.call("LOCKS", "r")]
    eq([x["count"] for x in row], [3], "LOCKS's count")
    w = open_session(c)
    cw = ctx.conn()
    cw.send("LOCK", "r", w, "WAIT", 30000)
    wait_queued(c, "r", w)
    ok(c.call("UNLOCK", "r", s))
    ok(c.call("UNLOCK", "r", s))
    eq(lock_info(c, "r")["holder"], s, "two UNLOCKs after three LOCKs: still held")
    eq(lock_info(c, "r")["count"], 1)
    assert no_reply(cw), "the waiter was granted before the last UNLOCK"
    ok(c.call("UNLOCK", "r", s))
    tw = expect_int(cw.read_reply(timeout=10), "the waiter, after the last UNLOCK")
    assert tw > t, (tw, t)
    expect_err(c.call("UNLOCK", "r", s), "NOTHOLDER", "nothing left to count down")
    ok(c.call("FENCE.CHECK", "r", tw))


def test_max_count_refuses_and_changes_nothing(ctx):
    c = ctx.conn()
    s = open_reentrant(c, "MAXCOUNT", 2)
    eq(session_info(c, s)["max_count"], 2)
    t = expect_int(c.call("LOCK", "m", s))
    expect_int(c.call("LOCK", "m", s))
    rev = as_map(c.call("CLUSTER.INFO"))["revision"]
    r = c.call("LOCK", "m", s)
    expect_err(r, "ERR", "a LOCK over MAXCOUNT")
    assert "MAXCOUNT" in r.text, r.text
    eq(as_map(c.call("CLUSTER.INFO"))["revision"], rev, "the refusal changed nothing")
    eq((lock_info(c, "m")["count"], lock_info(c, "m")["token"]), (2, t))
    for bad in (("MAXCOUNT", 3), ("REENTRANT", "MAXCOUNT", 0),
                ("REENTRANT", "MAXCOUNT", 1048577), ("REENTRANT", "MAXCOUNT"),
                ("REENTRANT", "MAXCOUNT", "x"), ("REENTRANT", "NOPE")):
        expect_err(c.call("SESSION.OPEN", 60000, *bad), "ERR", "SESSION.OPEN %r" % (bad,))
    d = open_reentrant(c, "NAME", "job", "LOCKDELAY", 10)
    info = session_info(c, d)
    eq((info["max_count"], text(info["name"]), info["lockdelay_ms"]), (64, "job", 10),
       "--reentrant-max-count's default, and the other options beside REENTRANT")


def test_reentrant_max_count_setting_is_the_default(ctx):
    srv = ctx.server("--reentrant-max-count", 3)
    c = ctx.conn(srv)
    s = open_reentrant(c)
    eq(session_info(c, s)["max_count"], 3)
    for _ in range(3):
        expect_int(c.call("LOCK", "d", s))
    expect_err(c.call("LOCK", "d", s), "ERR", "the fourth of 3")
    s2 = open_reentrant(c, "MAXCOUNT", 5)  # a session may ask for more than the default
    eq(session_info(c, s2)["max_count"], 5)


def test_a_session_without_reentrant_answers_as_before(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "n", s))
    rev = as_map(c.call("CLUSTER.INFO"))["revision"]
    eq(expect_int(c.call("LOCK", "n", s)), t, "a re-LOCK: the same token")
    eq(as_map(c.call("CLUSTER.INFO"))["revision"], rev, "and no count, no revision")
    eq(keys_of(lock_info(c, "n")), LOCK_INFO_KEYS, "LOCK.INFO's fields as before")
    assert "count" not in keys_of(as_map(c.call("LOCKS", "n")[0]))
    assert "max_count" not in keys_of(session_info(c, s))
    ok(c.call("UNLOCK", "n", s))
    eq(lock_info(c, "n"), None, "one UNLOCK releases")


def test_a_retried_lock_with_the_same_seq_does_not_count_twice(ctx):
    c = ctx.conn()
    s = open_reentrant(c)
    t = expect_int(c.call("LOCK", "q", s, "REQ", s, 1))
    eq(expect_int(c.call("LOCK", "q", s, "REQ", s, 2)), t)
    eq(expect_int(c.call("LOCK", "q", s, "REQ", s, 2)), t, "the retry of seq 2")
    eq(lock_info(c, "q")["count"], 2, "the retry was answered from the request table")
    ok(c.call("UNLOCK", "q", s, "REQ", s, 3))
    ok(c.call("UNLOCK", "q", s, "REQ", s, 3))
    eq(lock_info(c, "q")["count"], 1, "a retried UNLOCK counts down once")


def test_shared_holds_are_not_counted(ctx):
    c = ctx.conn()
    s = open_reentrant(c)
    t = expect_int(c.call("LOCK", "sh", s, "SHARED"))
    eq(expect_int(c.call("LOCK", "sh", s, "SHARED")), t)
    assert "count" not in keys_of(lock_info(c, "sh")), "no exclusive holder: no count"
    ok(c.call("UNLOCK", "sh", s))
    eq(lock_info(c, "sh"), None, "one UNLOCK ends the shared hold")


def test_json_api_shows_the_count(ctx):
    c = ctx.conn()
    s = open_reentrant(c, "MAXCOUNT", 4)
    expect_int(c.call("LOCK", "j", s))
    expect_int(c.call("LOCK", "j", s))
    base = "http://127.0.0.1:%d" % ctx.srv.http_port
    with urllib.request.urlopen(base + "/v1/locks?prefix=j", timeout=10) as r:
        body = json.loads(r.read())
    eq([x.get("count") for x in body["locks"]], [2])
    with urllib.request.urlopen(base + "/v1/sessions", timeout=10) as r:
        body = json.loads(r.read())
    eq([x.get("max_count") for x in body["sessions"] if x["sid"] == s], [4])


def test_an_admin_unlock_ends_every_hold(ctx):
    from test_auth import _acl_server, _authed
    srv, _, _ = _acl_server(ctx)
    app = _authed(ctx, srv, "app", "apppw")
    s = expect_int(app.call("SESSION.OPEN", 60000, "REENTRANT"))
    for _ in range(3):
        expect_int(app.call("LOCK", "job-a", s))
    ok(app.call("UNLOCK", "job-a", s))
    eq(lock_info(app, "job-a")["count"], 2, "the owner's UNLOCK counts down")
    admin = _authed(ctx, srv, "admin", "adminpw")
    ok(admin.call("UNLOCK", "job-a", s))
    eq(lock_info(admin, "job-a"), None, "an admin's forced release takes every hold")


def test_the_count_survives_a_kill_of_a_single_node(ctx):
    srv = ctx.server("--snapshot-threshold", 16, "--snapshot-trailing", 4)
    c = ctx.conn(srv)
    s = open_reentrant(c)
    t = expect_int(c.call("LOCK", "k", s))
    for _ in range(2):
        expect_int(c.call("LOCK", "k", s))
    for i in range(40):  # past the threshold: a snapshot holds the count (section 2)
        expect_int(c.call("PUT", "pad", str(i)))
    expect_int(c.call("LOCK", "k", s))  # and one more in the log after it
    srv.kill9()
    srv.restart()
    c = ctx.conn(srv)
    expect_int(c.call("SESSION.KEEPALIVE", s))
    eq((lock_info(c, "k")["count"], lock_info(c, "k")["token"]), (4, t), "count after restart")
    for _ in range(3):
        ok(c.call("UNLOCK", "k", s))
    eq(lock_info(c, "k")["holder"], s, "three UNLOCKs after four LOCKs: still held")
    ok(c.call("UNLOCK", "k", s))
    eq(lock_info(c, "k"), None)


test_the_count_survives_a_kill_of_a_single_node.timeout = 60


def test_the_count_survives_a_leader_kill_of_3_nodes(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        s = expect_int(c.call("SESSION.OPEN", 60000, "REENTRANT"))
        w = expect_int(c.call("SESSION.OPEN", 60000))
        t = expect_int(c.call("LOCK", "x", s))
        for _ in range(2):
            eq(expect_int(c.call("LOCK", "x", s)), t)
        with Conn(leader.port) as cw:
            cw.send("LOCK", "x", w, "WAIT", 60000)
            wait_queued(c, "x", w)
    leader.kill9()
    new = ready_leader([x for x in servers if x is not leader], timeout=15)
    with Conn(new.port) as c:
        info = lock_info(c, "x")
        eq((info["holder"], info["token"], info["count"]), (s, t, 3), "on the new leader")
        eq(list(info["waiters"]), [w])
        ok(c.call("UNLOCK", "x", s))
        ok(c.call("UNLOCK", "x", s))
        info = lock_info(c, "x")
        eq((info["holder"], info["count"]), (s, 1), "two UNLOCKs after three LOCKs: held")
        ok(c.call("UNLOCK", "x", s))
        info = lock_info(c, "x")
        eq(info["holder"], w, "the waiter, only after the last UNLOCK")
        assert info["token"] > t, (info["token"], t)
        assert "count" not in keys_of(info), "the waiter's session is not reentrant"


test_the_count_survives_a_leader_kill_of_3_nodes.timeout = 60


def test_cli_lock_info_shows_the_count(ctx):
    import subprocess
    from test_cli import cli_path
    c = ctx.conn()
    s = open_reentrant(c)
    for _ in range(3):
        expect_int(c.call("LOCK", "cli-r", s))
    p = open_session(c)
    expect_int(c.call("LOCK", "cli-p", p))
    ep = "127.0.0.1:%d" % ctx.srv.port

    def cli(*args):
        r = subprocess.run([cli_path(ctx), "--endpoints", ep] + list(args), capture_output=True,
                           text=True, timeout=30)
        eq(r.returncode, 0, r.stderr)
        return r.stdout

    assert "count:      3\n" in cli("lock-info", "cli-r"), "the text form's count line"
    eq(json.loads(cli("--json", "lock-info", "cli-r"))["count"], 3)
    assert "count:" not in cli("lock-info", "cli-p"), "one hold: no count line"
    assert "count" not in json.loads(cli("--json", "lock-info", "cli-p"))
