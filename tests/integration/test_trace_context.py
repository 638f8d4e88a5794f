# SPDX-License-Identifier: Apache-2.0
"""W3C trace context (docs/protocol.md "Trace context"): LOCK, UNLOCK and fenced writes take
`TRACEPARENT tp`; it is recorded in the lock history (a grant's: its own request's, also when
it waited; the end's: the ending command's), in the events (XREAD, /v1/events) and in the
audit log, on a 3-node cluster and after a leader change. A malformed one, or one on an
unfenced write, is refused and changes nothing. The CLI passes --traceparent (or
$TRACEPARENT)."""

import json
import os

from cluster import TIMING, new_server, ready_leader, wait_announced
from helpers import (eq, expect_err, expect_int, expect_ok, open_session, revision, wait_queued,
                     wait_until)
from resp import Conn
from test_history import history
from test_http_api import Sse
from test_watch import read_all

TP_A = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP_B = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
TP_C = "00-11111111111111111111111111111111-2222222222222222-01"
TP_D = "00-33333333333333333333333333333333-4444444444444444-01"


def cluster_with_audit(ctx):
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers, "--audit-log",
                        os.path.join(s.workdir, "audit.log")] + TIMING
        s.start(wait=False)
    return servers


def audit_lines(s):
    try:
        with open(os.path.join(s.workdir, "audit.log")) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def test_trace_context_in_history_events_and_audit_three_nodes(ctx):
    servers = cluster_with_audit(ctx)
    leader = ready_leader(servers, timeout=30)
    c = ctx.conn(leader)
    wait_announced(c, 3, http=False)
    # the cluster's log format is 2: a header can carry a traceparent
    wait_until(lambda: text_info(c)["log_format"] == 2, timeout=20, what="log format 2")
    a = open_session(c, 60000, "NAME", "traced-a")
    b = open_session(c, 60000, "NAME", "traced-b")
    after = read_all(c)[-1][0]
    t1 = expect_int(c.call("LOCK", "tc/L", a, "TRACEPARENT", TP_A))
    w = ctx.conn(leader)
    w.send("LOCK", "tc/L", b, "WAIT", 60000, "TRACEPARENT", TP_B)
    wait_queued(c, "tc/L", b)
    expect_ok(c.call("UNLOCK", "tc/L", a, "TRACEPARENT", TP_C))
    t2 = expect_int(w.read_reply(timeout=20))
    # the history: b's grant carries b's own LOCK's, a's end the UNLOCK's
    h = history(c, "tc/L")
    eq([(e["token"], e["traceparent"], e["end_traceparent"]) for e in h],
       [(t2, TP_B, ""), (t1, TP_A, TP_C)])
    # the events: each with the traceparent that goes with it
    ev = [(f["type"], f.get("sid"), f.get("traceparent")) for i, f in read_all(c, after)
          if f.get("name") == "tc/L"]
    assert ("grant", str(a), TP_A) in ev and ("wait", str(b), TP_B) in ev, ev
    assert ("release", str(a), TP_C) in ev and ("grant", str(b), TP_B) in ev, ev
    # /v1/events (SSE) carries it too
    s = Sse(leader, "/v1/events?prefix=tc/&after=%s" % after)
    eq(s.status, 200, s.head)
    _, kind, data = s.next()
    eq((kind, data["sid"], data["traceparent"]), ("grant", a, TP_A))
    s.close()
    # the audit log: one `traced` line per traced request, naming its traceparent
    lines = [x for x in audit_lines(leader) if x["event"] == "traced"]
    for tp in (TP_A, TP_B, TP_C):
        assert any(tp in x["detail"] and "name=tc/L" in x["detail"] for x in lines), lines
    # a fenced write carries one; an unfenced one may not
    expect_int(c.call("PUT", "tc/k", "v", "FENCE", "tc/L", t2, "TRACEPARENT", TP_D))
    put = [f for i, f in read_all(c, after) if f["type"] == "put" and f["name"] == "tc/k"]
    eq(put[-1].get("traceparent"), TP_D)
    # every node keeps the same history; after the leader's kill -9 the new one answers it
    for f in servers:
        if f is not leader:
            with Conn(f.port, timeout=10) as fc:
                expect_ok(fc.call("READONLY"))
                wait_until(lambda: history(fc, "tc/L") == h, timeout=20, what="a follower's")
    leader.kill9()
    new = ready_leader([x for x in servers if x.running()], timeout=30)
    with Conn(new.port, timeout=10) as nc:
        eq(history(nc, "tc/L"), h)


test_trace_context_in_history_events_and_audit_three_nodes.timeout = 240


def test_trace_context_malformed_or_unfenced_is_refused_and_changes_nothing(ctx):
    c = ctx.conn()
    a = open_session(c)
    wait_until(lambda: text_info(c)["log_format"] == 2, timeout=20, what="log format 2")
    rev = revision(c)
    for bad in ("", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                TP_A + "-00", TP_A[:-1], "x" * 55):
        r = expect_err(c.call("LOCK", "tc/M", a, "TRACEPARENT", bad), "ERR")
        assert "TRACEPARENT" in r.text, r.text
        expect_err(c.call("UNLOCK", "tc/M", a, "TRACEPARENT", bad), "ERR")
    expect_err(c.call("LOCK", "tc/M", a, "TRACEPARENT"), "ERR")  # no value
    r = expect_err(c.call("PUT", "tc/k", "v", "TRACEPARENT", TP_A), "ERR")
    assert "FENCE" in r.text, r.text
    expect_err(c.call("DEL", "tc/k", "TRACEPARENT", TP_A), "ERR")
    expect_err(c.call("INCR", "tc/n", "TRACEPARENT", TP_A), "ERR")
    eq(revision(c), rev, "nothing changed")
    eq(c.call("LOCK.INFO", "tc/M"), None)


def text_info(c):
    from resp import as_map, text
    return {text(k): v for k, v in as_map(c.call("CLUSTER.INFO")).items()}


def test_trace_context_cli_flag_and_environment(ctx):
    from test_cli import run, run_ok
    srv = ctx.server()
    c = ctx.conn(srv)
    wait_until(lambda: text_info(c)["log_format"] == 2, timeout=20, what="log format 2")
    run_ok(ctx, [srv], "--traceparent", TP_A, "lock", "tc/cli", "--", "true")
    run_ok(ctx, [srv], "lock", "tc/cli", "--", "true", env={"TRACEPARENT": TP_B})
    h = history(c, "tc/cli")
    eq([(e["traceparent"], e["end_traceparent"]) for e in h], [(TP_B, TP_B), (TP_A, TP_A)])
    r = run(ctx, [srv], "--traceparent", "nope", "lock", "tc/cli", "--", "true")
    eq(r.rc, 2, r.err)
    assert "traceparent" in r.err, r.err
    r = run(ctx, [srv], "lock", "tc/cli", "--", "true", env={"TRACEPARENT": "nope"})
    eq(r.rc, 2, r.err)
    eq(len(history(c, "tc/cli")), 2, "refused before any LOCK")
