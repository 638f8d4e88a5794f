# SPDX-License-Identifier: Apache-2.0
"""HTTP endpoint: /health and Prometheus /metrics."""

import http.client
import json
import os
import re
import shutil
import subprocess
import time

from helpers import eq, expect_err, expect_int, ok, open_session, wait_until, wait_queued

METRICS = ["fencelock_sessions", "fencelock_locks_held", "fencelock_waiters",
           "fencelock_grants_total", "fencelock_expirations_total",
           "fencelock_fence_rejections_total", "fencelock_applied_index",
           "fencelock_raft_state", "fencelock_revision"]
HISTOGRAMS = ["fencelock_lock_wait_seconds", "fencelock_lock_hold_seconds",
              "fencelock_commit_latency_seconds"]


def http_get(srv, path):
    h = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=5)
    try:
        h.request("GET", path)
        r = h.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read().decode("utf-8", "replace")
    finally:
        h.close()


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+\d+)?$")


def parse_metrics(body):
    """{name: [(labels, value)]} for every sample line."""
    out = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, "not a Prometheus sample line: %r" % line
        out.setdefault(m.group(1), []).append((m.group(2) or "", float(m.group(3))))
    return out


def metric(srv, name):
    status, _, body = http_get(srv, "/metrics")
    eq(status, 200, "GET /metrics status")
    samples = parse_metrics(body).get(name)
    assert samples, "metric %s missing" % name
    return sum(v for _, v in samples)


def labeled(srv, name):
    """{labels: value} of one metric."""
    status, _, body = http_get(srv, "/metrics")
    eq(status, 200, "GET /metrics status")
    return dict(parse_metrics(body).get(name, []))


def test_commands_are_counted_by_command_and_result(ctx):
    c = ctx.conn()
    before = labeled(ctx.srv, "fencelock_commands_total")
    s = open_session(c)
    expect_int(c.call("LOCK", "cnt", s))
    expect_err(c.call("LOCK", "cnt", 999999), "NOSESSION")
    expect_err(c.call("NOSUCHCOMMAND"), "ERR")
    # a pipelined reply that waited in a slot is counted too
    c.send("PUT", "k", "v")
    c.send("GET", "k")
    c.read_reply(timeout=5)
    c.read_reply(timeout=5)
    after = labeled(ctx.srv, "fencelock_commands_total")

    def moved(labels):
        return after.get(labels, 0) - before.get(labels, 0)
    eq(moved('{command="LOCK",result="ok"}'), 1, "LOCK ok")
    eq(moved('{command="LOCK",result="NOSESSION"}'), 1, "LOCK NOSESSION")
    eq(moved('{command="unknown",result="ERR"}'), 1, "an unknown command")
    eq(moved('{command="PUT",result="ok"}'), 1, "a pipelined PUT")
    eq(moved('{command="GET",result="ok"}'), 1, "a pipelined GET after a barrier")
    eq(after.get('{command="UNLOCK",result="ok"}'), 0, "a command never sent: present, 0")


def proc_cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_build_and_process_metrics(ctx):
    status, _, body = http_get(ctx.srv, "/metrics")
    m = parse_metrics(body)
    eq([lv for lv, _ in m.get("fencelock_build_info", [])][:1], ['{version="0.1.0"}'],
       "fencelock_build_info{version}")
    for n in ("process_resident_memory_bytes", "process_open_fds", "process_max_fds",
              "process_start_time_seconds"):
        assert n in m and m[n][0][1] > 0, "%s: %r" % (n, m.get(n))
    # CPU time is what the kernel counts for the process: between what /proc said just before
    # and just after the scrape (a fresh process on an idle machine may not have used one clock
    # tick yet, so 0 is a right answer).
    # So that a wrong constant cannot pass, first make the server use some CPU (bounded).
    c = ctx.conn()
    deadline = time.monotonic() + 30
    for _ in range(200):
        if proc_cpu_seconds(ctx.srv.proc.pid) >= 0.05 or time.monotonic() > deadline:
            break
        c.pipeline([("PING",)] * 500)
    before = proc_cpu_seconds(ctx.srv.proc.pid)
    assert before > 0, "the server used no CPU after 100,000 PINGs"
    _, _, body = http_get(ctx.srv, "/metrics")
    after = proc_cpu_seconds(ctx.srv.proc.pid)
    cpu = parse_metrics(body)["process_cpu_seconds_total"][0][1]
    assert before - 1e-9 <= cpu <= after + 1e-9, \
        "process_cpu_seconds_total %r not within /proc's %r..%r" % (cpu, before, after)
    eq(m["process_start_time_seconds"][0][1] < time.time() + 1, True, "start time in the past")


def test_hold_buckets_reach_hours(ctx):
    bounds = [lv for lv, _ in labeled(ctx.srv, "fencelock_lock_hold_seconds_bucket").items()]
    for le in ("3600", "14400", "86400", "+Inf"):
        assert '{le="%s"}' % le in bounds, "hold bucket le=%s missing: %r" % (le, bounds)


def test_promtool_check_metrics_finds_nothing(ctx):
    if not shutil.which("promtool"):
        raise AssertionError("promtool missing: scripts/deps.sh test installs prometheus")
    c = ctx.conn()
    expect_int(c.call("PUT", "k", "v"))
    status, _, body = http_get(ctx.srv, "/metrics")
    p = subprocess.run(["promtool", "check", "metrics"], input=body.encode(),
                       capture_output=True, timeout=30)
    eq((p.returncode, p.stdout.decode() + p.stderr.decode()), (0, ""), "promtool check metrics")


def test_health_is_ok_on_leader(ctx):
    status, ctype, body = http_get(ctx.srv, "/health")
    eq(status, 200, "GET /health status")
    doc = json.loads(body)
    eq(doc.get("status"), "ok", "/health status field")
    eq(doc.get("role"), "leader", "/health role field")
    assert "json" in ctype, "/health Content-Type %r" % ctype


def test_metrics_exposes_documented_names(ctx):
    status, ctype, body = http_get(ctx.srv, "/metrics")
    eq(status, 200, "GET /metrics status")
    assert ctype.startswith("text/plain"), "/metrics Content-Type %r" % ctype
    m = parse_metrics(body)
    missing = [n for n in METRICS if n not in m]
    for h in HISTOGRAMS:
        for suffix in ("_bucket", "_sum", "_count"):
            if h + suffix not in m:
                missing.append(h + suffix)
        if h + "_bucket" in m:
            assert any('le="+Inf"' in labels for labels, _ in m[h + "_bucket"]), \
                "%s_bucket lacks le=\"+Inf\"" % h
    assert not missing, "metrics missing: %s" % ", ".join(missing)
    for n in METRICS + HISTOGRAMS:
        assert re.search(r"^# TYPE %s " % re.escape(n), body, re.M), "no # TYPE line for %s" % n


def test_metrics_grants_and_gauges_move(ctx):
    c = ctx.conn()
    g0 = metric(ctx.srv, "fencelock_grants_total")
    sess0 = metric(ctx.srv, "fencelock_sessions")
    s = open_session(c)
    expect_int(c.call("LOCK", "l", s))
    wait_until(lambda: metric(ctx.srv, "fencelock_grants_total") >= g0 + 1, 2,
               what="grants_total to increase after a LOCK")
    eq(metric(ctx.srv, "fencelock_sessions"), sess0 + 1, "fencelock_sessions")
    eq(metric(ctx.srv, "fencelock_locks_held"), 1, "fencelock_locks_held")
    s2 = open_session(c)
    w = ctx.conn()
    w.send("LOCK", "l", s2, "WAIT", 5000)
    wait_queued(c, "l", s2)
    eq(metric(ctx.srv, "fencelock_waiters"), 1, "fencelock_waiters")
    wait_count = metric(ctx.srv, "fencelock_lock_wait_seconds_count")
    hold_count = metric(ctx.srv, "fencelock_lock_hold_seconds_count")
    ok(c.call("UNLOCK", "l", s))
    expect_int(w.read_reply(timeout=3))
    wait_until(lambda: metric(ctx.srv, "fencelock_lock_hold_seconds_count") > hold_count, 2,
               what="lock_hold_seconds_count to increase after an UNLOCK")
    wait_until(lambda: metric(ctx.srv, "fencelock_lock_wait_seconds_count") > wait_count, 2,
               what="lock_wait_seconds_count to increase after a waited grant")
    eq(metric(ctx.srv, "fencelock_waiters"), 0, "fencelock_waiters after the grant")
    rev = expect_int(c.call("PUT", "k", "v"))
    wait_until(lambda: metric(ctx.srv, "fencelock_revision") >= rev, 2,
               what="fencelock_revision to reach %d" % rev)
    eq(labeled(ctx.srv, "fencelock_raft_state"), {'{state="unavailable"}': 0,
       '{state="follower"}': 0, '{state="candidate"}': 0, '{state="leader"}': 1},
       "raft_state of a leader: one sample per state")


def test_metrics_fence_rejections_counter_moves(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "l", s))
    ok(c.call("UNLOCK", "l", s))
    r0 = metric(ctx.srv, "fencelock_fence_rejections_total")
    expect_err(c.call("PUT", "k", "v", "FENCE", "l", t), "STALE")
    wait_until(lambda: metric(ctx.srv, "fencelock_fence_rejections_total") >= r0 + 1, 2,
               what="fence_rejections_total to increase after a -STALE")


def test_metrics_expirations_counter_moves(ctx):
    c = ctx.conn()
    e0 = metric(ctx.srv, "fencelock_expirations_total")
    open_session(c, 200)
    wait_until(lambda: metric(ctx.srv, "fencelock_expirations_total") >= e0 + 1, 3,
               interval=0.05, what="expirations_total to increase after a session expired")


def test_empty_lines_before_the_request_line_are_skipped(ctx):
    """RFC 9112: a server ignores empty lines before the request line (it used to answer 400)."""
    import socket
    s = socket.create_connection(("127.0.0.1", ctx.srv.http_port), timeout=5)
    try:
        s.sendall(b"\r\n\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    assert data.startswith(b"HTTP/1.1 200 "), data[:80]


def test_cluster_state_gauges_come_from_the_leader_only_and_elections_are_counted(ctx):
    from cluster import ready_leader, start_cluster
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    with ctx.conn(leader) as c:
        open_session(c)
    followers = [s for s in servers if s is not leader]
    for f in followers:
        wait_until(lambda: labeled(f, "fencelock_raft_state").get('{state="follower"}') == 1, 5,
                   what="node %d a follower" % f.node_id)
        m = parse_metrics(http_get(f, "/metrics")[2])
        for n in ("fencelock_sessions", "fencelock_locks_held", "fencelock_keys"):
            assert n not in m, "follower %d exports %s: sum() would over-count" % (f.node_id, n)
        eq(sum(v for _, v in m["fencelock_raft_state"]), 1, "one state set on a follower")
    eq(metric(leader, "fencelock_sessions"), 1, "the leader exports the session gauge")
    before = {f.node_id: metric(f, "fencelock_leader_changes_total") for f in followers}
    terms0 = {f.node_id: metric(f, "fencelock_elections_total") for f in followers}
    leader.kill9()
    new = ready_leader(followers)
    for f in followers:
        wait_until(lambda: metric(f, "fencelock_leader_changes_total") > before[f.node_id], 10, what="node %d to count the leader change" % f.node_id)
        wait_until(lambda: metric(f, "fencelock_elections_total") > terms0[f.node_id], 10,
                   what="node %d to count the election" % f.node_id)
    wait_until(lambda: "fencelock_sessions" in parse_metrics(http_get(new, "/metrics")[2]), 5,
               what="the new leader to export fencelock_sessions")
