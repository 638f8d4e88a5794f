# SPDX-License-Identifier: Apache-2.0
"""Lock metadata (docs/protocol.md "Lock values, transitions and max hold"): `LOCK ... VALUE v`
puts a value on the grant, shown by LOCK.INFO, LOCKS, /v1/locks and the `grant` event; a
waiting request keeps its value until granted; the transitions count the ended grants of a
lock record; `LOCK ... MAXHOLD ms` ends the grant as an expiry does (lock-delay, then a larger
token for the next waiter, the old token STALE, the `expire` event saying `max-hold`) while the
session lives on, never before the max hold has passed since the LOCK was sent; all of it
survives a kill -9 of the leader on 3 nodes, whose successor still ends the grant."""

import os
import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, lock_info, open_session, session_info,
                     wait_queued, wait_until)
from resp import Conn, RespError, as_map
from test_http_api import get_json
from test_watch import read_all

STREAM = "fencelock:events:m/"


def _locks_row(c, name):
    rows = [as_map(r) for r in c.call("LOCKS", name)]
    rows = [r for r in rows if r["name"] == name.encode()]
    eq(len(rows), 1, rows)
    return rows[0]


def test_value_is_shown_by_info_locks_json_and_the_grant_event(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "m/L", a, "VALUE", "host=h1 pid=42", "MAXHOLD", 60000))
    info = lock_info(c, "m/L")
    eq((info["holder"], info["token"], info["value"], info["max_hold_ms"], info["transitions"]),
       (a, t, b"host=h1 pid=42", 60000, 0))
    row = _locks_row(c, "m/L")
    eq((row["value"], row["max_hold_ms"], row["transitions"]), (b"host=h1 pid=42", 60000, 0))
    j = get_json(ctx.srv, "/v1/locks/m%2FL")
    eq((j["value"], j["max_hold_ms"], j["transitions"]), ("host=h1 pid=42", 60000, 0))
    lst = get_json(ctx.srv, "/v1/locks?prefix=m/")["locks"]
    eq([(x["name"], x["value"]) for x in lst], [("m/L", "host=h1 pid=42")])
    grants = [f for _, f in read_all(c, stream=STREAM) if f["type"] == "grant"]
    eq(grants, [{"type": "grant", "name": "m/L", "value": "host=h1 pid=42", "token": str(t),
                 "sid": str(a)}])
    # a plain lock's grant event and LOCK.INFO look as before, with empty metadata
    expect_int(c.call("LOCK", "m/P", a))
    info = lock_info(c, "m/P")
    eq((info["value"], info["max_hold_ms"], info["transitions"]), (b"", 0, 0))
    last = [f for _, f in read_all(c, stream="fencelock:events:m/P")]
    assert "value" not in last[-1], last


def test_a_waiter_keeps_its_value_and_the_holders_retry_changes_nothing(ctx):
    c = ctx.conn()
    a = open_session(c, 60000)
    b = open_session(c, 60000)
    t = expect_int(c.call("LOCK", "m/L", a, "VALUE", "first"))
    eq(expect_int(c.call("LOCK", "m/L", a, "VALUE", "second", "MAXHOLD", 5000)), t)
    info = lock_info(c, "m/L")
    eq((info["value"], info["max_hold_ms"]), (b"first", 0), "a retry changes nothing")
    w = ctx.conn()
    w.send("LOCK", "m/L", b, "WAIT", 60000, "VALUE", "job=b", "NOTIFY")
    wait_queued(c, "m/L", b)
    c.call("UNLOCK", "m/L", a)
    t2 = expect_int(w.read_reply(timeout=30), "b's grant")
    assert t2 > t, (t2, t)
    info = lock_info(c, "m/L")
    eq((info["holder"], info["value"], info["transitions"]), (b, b"job=b", 1))


def test_bad_value_max_hold_and_shared_are_refused_and_change_nothing(ctx):
    srv = ctx.server("--max-lock-value", 16, "--min-max-hold", 500, "--max-max-hold", 60000)
    c = ctx.conn(srv)
    a = open_session(c, 60000)
    for bad, code in ((("VALUE", "x" * 17), "TOOLARGE"), (("MAXHOLD", 499), "ERR"),
                      (("MAXHOLD", 60001), "ERR"), (("MAXHOLD", "soon"), "ERR"),
                      (("VALUE", "v", "SHARED"), "ERR"), (("SHARED", "MAXHOLD", 1000), "ERR"),
                      (("VALUE", "a", "VALUE", "b"), "ERR"), (("VALUE",), "ERR")):
        expect_err(c.call("LOCK", "m/L", a, *bad), code, repr(bad))
    eq(lock_info(c, "m/L"), None, "nothing was locked")
    expect_int(c.call("LOCK", "m/L", a, "VALUE", "x" * 16, "MAXHOLD", 500))
    expect_int(c.call("SEM.ACQUIRE", "m/S", a, 2))
    expect_err(c.call("LOCK", "m/S", a, "VALUE", "v"), "WRONGTYPE")


def test_max_hold_ends_the_grant_as_an_expiry_and_the_session_lives_on(ctx):
    c = ctx.conn()
    a = open_session(c, 60000, "LOCKDELAY", 300)
    b = open_session(c, 60000)
    sent = time.monotonic()
    t = expect_int(c.call("LOCK", "m/L", a, "MAXHOLD", 1500, "VALUE", "a"))
    expect_int(c.call("PUT", "m/k", "a1", "FENCE", "m/L", t))
    w = ctx.conn()
    w.send("LOCK", "m/L", b, "WAIT", 60000)
    wait_queued(c, "m/L", b)
    t2 = expect_int(w.read_reply(timeout=60), "the waiter's grant after the max hold")
    assert time.monotonic() - sent >= 1.5, "the grant ended before its max hold"
    assert t2 > t, (t2, t)
    expect_err(c.call("FENCE.CHECK", "m/L", t), "STALE", "the old token")
    expect_err(c.call("PUT", "m/k", "a2", "FENCE", "m/L", t), "STALE", "a fenced PUT")
    expect_int(c.call("PUT", "m/k", "b1", "FENCE", "m/L", t2))
    assert not isinstance(session_info(c, a), RespError), "the holder's session lives on"
    info = lock_info(c, "m/L")
    eq((info["holder"], info["value"], info["max_hold_ms"], info["transitions"]),
       (b, b"", 0, 1))
    ev = [f for _, f in read_all(c, stream=STREAM) if f["type"] in ("expire", "lockdelay")]
    eq(ev, [{"type": "expire", "name": "m/L", "token": str(t), "sid": str(a),
             "reason": "max-hold", "max_hold_ms": "1500"},
            {"type": "lockdelay", "name": "m/L", "delay_ms": "300"}])
    wait_until(lambda: "session %d reached its max hold while holding 'm/L' (token %d)"
               % (a, t) in ctx.srv.log_text(), 10, what="the forced release in the log")


def test_value_transitions_and_max_hold_survive_a_leader_kill9_three_nodes(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port, timeout=10) as c:
        a = open_session(c, 600000)
        b = open_session(c, 600000)
        d = open_session(c, 600000)
        t0 = expect_int(c.call("LOCK", "m/L", d))
        w = Conn(leader.port, timeout=10)
        w.send("LOCK", "m/L", a, "WAIT", 600000, "VALUE", "holder-a", "MAXHOLD", 8000)
        wait_queued(c, "m/L", a)
        sent = time.monotonic()  # a's max hold starts with its grant, after this
        c.call("UNLOCK", "m/L", d)
        t = expect_int(w.read_reply(timeout=30), "a's grant")
        w.close()
        assert t > t0
        w = Conn(leader.port, timeout=10)
        w.send("LOCK", "m/L", b, "WAIT", 600000, "VALUE", "holder-b")
        wait_queued(c, "m/L", b)
    leader.kill9()
    w.close()
    leader = ready_leader([s for s in servers if s.running()], timeout=30)
    with Conn(leader.port, timeout=10) as c:
        info = lock_info(c, "m/L")
        eq((info["holder"], info["token"], info["value"], info["max_hold_ms"],
            info["transitions"]), (a, t, b"holder-a", 8000, 1), "the new leader's view")
        # the new leader ends a's grant at its max hold and b gets a larger token
        wait_until(lambda: lock_info(c, "m/L")["holder"] == b, timeout=90, interval=0.2,
                   what="the max hold ended by the new leader")
        assert time.monotonic() - sent >= 8.0, "the grant ended before its max hold"
        info = lock_info(c, "m/L")
        assert info["token"] > t, (info, t)
        eq((info["value"], info["transitions"]), (b"holder-b", 2))
        expect_err(c.call("FENCE.CHECK", "m/L", t), "STALE")
        expect_err(c.call("PUT", "m/k", "late", "FENCE", "m/L", t), "STALE")
        assert not isinstance(session_info(c, a), RespError), "a's session lives on"


def test_cli_lock_kills_the_command_before_its_max_hold(ctx):
    from test_cli import spawn
    srv = ctx.server()
    c = ctx.conn()
    started = ctx.tmp("started")
    script = "trap '' TERM; echo up > %s; while :; do sleep 0.05; done" % started
    p = spawn(ctx, [srv], "lock", "m/K", "--ttl", "30s", "--kill-grace", "1s", "--max-hold",
              "4s", "--value", "cli-job", "--", "sh", "-c", script)
    wait_until(lambda: os.path.exists(started), timeout=30, what="the command under the lock")
    info = lock_info(c, "m/K")
    eq((info["value"], info["max_hold_ms"]), (b"cli-job", 4000))
    t = info["token"]
    eq(p.wait(60), 5, "killed for the max hold: exit 5")
    with open(p.err_path) as f:
        err = f.read()
    assert "reached its max hold" in err, err
    info = lock_info(c, "m/K")
    assert info is None or info["token"] != t, info
