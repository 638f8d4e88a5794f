# SPDX-License-Identifier: Apache-2.0
"""The lock value in the lock history (docs/protocol.md "Lock history"): each grant of a lock
taken with `LOCK ... VALUE v` keeps v in its history entry (a waiter's own value when it is
granted later; empty for a plain LOCK), shown by LOCK.HISTORY, GET /v1/locks/{name}/history and
`fencelock history` (libfencelock's fl_lock_history), and kept through a snapshot and a
restart (snapshot section 4's value flag)."""

import json

from helpers import eq, expect_int, expect_ok, open_session, wait_queued, wait_until
from test_history import SNAP, history
from test_http_api import get


def grants_with_values(ctx, c, name):
    """a (VALUE job=1), b queued behind it (VALUE job=2) and granted, then a plain LOCK."""
    a = open_session(c, 60000, "NAME", "va")
    b = open_session(c, 60000, "NAME", "vb")
    t1 = expect_int(c.call("LOCK", name, a, "VALUE", "job=1"))
    w = ctx.conn()
    w.send("LOCK", name, b, "WAIT", 60000, "VALUE", "job=2 \u00e9")
    wait_queued(c, name, b)
    expect_ok(c.call("UNLOCK", name, a))
    t2 = expect_int(w.read_reply(timeout=20))
    expect_ok(c.call("UNLOCK", name, b))
    t3 = expect_int(c.call("LOCK", name, a))
    return t1, t2, t3


def test_history_value_in_lock_history_http_and_cli_and_after_a_restart(ctx):
    from test_cli import run, run_json
    srv = ctx.server(*SNAP)
    c = ctx.conn(srv)
    t1, t2, t3 = grants_with_values(ctx, c, "hv/L")
    want = [(t3, ""), (t2, "job=2 \u00e9"), (t1, "job=1")]
    eq([(e["token"], e["value"]) for e in history(c, "hv/L")], want, "LOCK.HISTORY")
    st, _, body = get(srv, "/v1/locks/hv%2FL/history")
    eq(st, 200, body)
    eq([(e["token"], e["value"]) for e in json.loads(body)["history"]], want, "/v1 history")
    eq([(e["token"], e["value"]) for e in run_json(ctx, [srv], "history", "hv/L")], want,
       "fencelock history --json")
    out = run(ctx, [srv], "history", "hv/L").out
    assert "VALUE" in out.splitlines()[0] and "job=1" in out and "job=2" in out, out
    # through a snapshot and a restart: the values come back from section 4
    for i in range(40):
        expect_int(c.call("PUT", "hv/k%d" % i, "v"))
    wait_until(lambda: "raft: snapshot of" in srv.log_text(), timeout=20, what="a snapshot")
    before = history(c, "hv/L")
    srv.stop()
    srv.start()
    c = ctx.conn(srv)
    wait_until(lambda: history(c, "hv/L") == before, timeout=20, what="the history after restart")
    eq([(e["token"], e["value"]) for e in history(c, "hv/L")], want)
