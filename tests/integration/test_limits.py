# SPDX-License-Identifier: Apache-2.0
"""Resource limits (docs/server.md "Limits"): every buffer is bounded, a client past a limit is closed or
refused with a clear error and counted, and the server stays up with its memory bounded.

Memory figures are upper bounds far above what the server needs (ASan build) and far below
what the unbounded server used; nothing here measures time."""

import os
import socket
import time

from helpers import eq, expect_err, expect_int, ok, open_session, revision, wait_until
from resp import Conn, RespError, encode_command
from test_http import http_get, metric, parse_metrics

MiB = 1 << 20
# ASan keeps freed memory in a 256 MiB quarantine by default; RSS figures need a small one.
SMALL_QUARANTINE = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:quarantine_size_mb=4"}


def rss_mib(srv):
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS for pid %d" % srv.proc.pid)


def load_keys(c, n, size, prefix="k"):
    """n keys with `size`-byte names (KEYS replies carry the names), pipelined in chunks."""
    pad = prefix + "k" * (size - len(prefix) - 6)
    for base in range(0, n, 200):
        cmds = [("PUT", "%s%06d" % (pad, i), "v") for i in range(base, min(n, base + 200))]
        for r in c.pipeline(cmds):
            expect_int(r, "PUT while loading")


def closed_with(c, timeout=10.0):
    """Everything the server sent until it closed the connection; fails if it stays open."""
    data, closed = c.read_until_eof(timeout=timeout)
    assert closed, "connection still open (%d bytes received)" % len(data)
    return data


def alive(srv):
    with Conn(srv.port) as c:
        eq(c.call("PING"), "PONG", "PING on a fresh connection")


# ---- output ----

def test_output_limit_closes_on_an_immediate_reply(ctx):
    """READONLY KEYS is answered at once; a reply past --max-output closes the connection."""
    srv = ctx.server("--max-output", 1 * MiB, "--max-output-soft", 256 * 1024)
    load_keys(ctx.conn(), 1500, 1000)
    c = ctx.conn()
    ok(c.call("READONLY"))
    c.send_raw(b"".join(encode_command("KEYS", "") for _ in range(20)))
    closed_with(c)
    eq(metric(srv, "fencelock_output_limit_closes_total"), 1, "output limit closes")
    alive(srv)
    assert "over --max-output" in srv.log_text(), "no log line for the closed client"


def test_output_limit_closes_on_a_deferred_reply(ctx):
    """A linearizable KEYS is answered after its barrier: it counts against the limit too."""
    srv = ctx.server("--max-output", 1 * MiB, "--max-output-soft", 256 * 1024)
    load_keys(ctx.conn(), 1500, 1000)
    c = ctx.conn()
    c.send_raw(b"".join(encode_command("KEYS", "") for _ in range(20)))
    closed_with(c)
    eq(metric(srv, "fencelock_output_limit_closes_total"), 1, "output limit closes")
    alive(srv)


def test_output_soft_limit_pauses_reading_until_the_client_reads(ctx):
    """200 pipelined 1.5 MB replies the client does not read: the server stops parsing at the
    soft limit (memory stays bounded), then answers all of them once the client reads."""
    srv = ctx.server("--max-output-soft", 2 * MiB, env=SMALL_QUARANTINE)
    load_keys(ctx.conn(), 1500, 1000)
    before = rss_mib(srv)
    c = ctx.conn(timeout=30.0)
    ok(c.call("READONLY"))
    n = 200
    c.sock.setblocking(False)
    payload = b"".join(encode_command("KEYS", "") for _ in range(n))
    try:
        c.sock.send(payload)  # small enough for the socket buffers: all of it goes
    finally:
        c.sock.setblocking(True)
    wait_until(lambda: metric(srv, "fencelock_output_pauses_total") >= 1, timeout=20,
               what="the connection is paused at the soft limit")
    time.sleep(0.5)  # anything the server would still buffer, it buffers now
    grown = rss_mib(srv) - before
    assert grown < 150, "RSS grew %.0f MiB for %d unread 1.5 MB replies" % (grown, n)
    for i in range(n):
        r = c.read_reply()
        assert isinstance(r, list) and len(r) == 1500, "reply %d: %r" % (i, type(r))
    eq(c.call("PING"), "PONG", "the connection works after draining")
    eq(metric(srv, "fencelock_output_limit_closes_total"), 0, "nobody closed")


# ---- input ----

def partial_frame(nargs, full_args, size):
    """A command of nargs arguments of which only full_args bulks of `size` bytes are sent."""
    return (b"*%d\r\n" % nargs) + (b"$%d\r\n" % size + b"x" * size + b"\r\n") * full_args


def test_query_buffer_limit_closes_an_unfinished_command(ctx):
    srv = ctx.server("--max-query-buffer", 2 * MiB)
    c = ctx.conn()
    try:
        c.send_raw(partial_frame(64, 3, MiB))
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = closed_with(c)
    assert b"-ERR Protocol error: unfinished command" in data, data[:200]
    eq(metric(srv, "fencelock_query_limit_closes_total"), 1, "query buffer closes")
    eq(metric(srv, "fencelock_protocol_errors_total"), 1, "protocol errors")
    alive(srv)


def test_input_total_limit_closes_the_largest_buffer(ctx):
    """Three clients each hold 1.5 MiB of an unfinished command; the total limit is 4 MiB:
    a connection with the largest buffer is closed with a protocol error, the others stay."""
    srv = ctx.server("--max-input-total", 4 * MiB)
    conns = [ctx.conn() for _ in range(3)]
    for c in conns:
        try:
            c.send_raw(partial_frame(8, 2, 3 * MiB // 4))
        except (BrokenPipeError, ConnectionResetError):
            pass
    wait_until(lambda: metric(srv, "fencelock_input_memory_closes_total") >= 1, timeout=20,
               what="a connection closed by --max-input-total")
    closed = []
    for c in conns:
        data, eof = c.read_until_eof(timeout=0.5)
        if eof:
            assert b"-ERR Protocol error: input buffers of all clients" in data, data[:200]
            closed.append(c)
    assert 1 <= len(closed) < 3, "%d of 3 connections closed" % len(closed)
    assert metric(srv, "fencelock_input_buffer_bytes") <= 4 * MiB, "input bytes over the total"
    alive(srv)


def test_partial_frames_on_many_connections_stay_bounded(ctx):
    """The probe of the issue: 8 connections each sending 64 x 1 MiB partial frames held
    758 MiB. Now each is closed at --max-query-buffer (default 8 MiB)."""
    srv = ctx.server(env=SMALL_QUARANTINE)
    before = rss_mib(srv)
    conns = [ctx.conn() for _ in range(8)]
    chunk = b"$%d\r\n" % MiB + b"x" * MiB + b"\r\n"
    for c in conns:
        c.sock.settimeout(10)
        try:
            c.send_raw(b"*64\r\n")
            for _ in range(20):
                c.send_raw(chunk)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
    for c in conns:
        closed_with(c)
    eq(metric(srv, "fencelock_query_limit_closes_total"), 8, "query buffer closes")
    grown = rss_mib(srv) - before
    assert grown < 200, "RSS grew %.0f MiB" % grown
    alive(srv)


# ---- quotas ----

def rejections(srv, quota):
    status, _, body = http_get(srv, "/metrics")
    eq(status, 200, "GET /metrics")
    for labels, v in parse_metrics(body).get("fencelock_quota_rejections_total", []):
        if labels == '{quota="%s"}' % quota:
            return v
    raise AssertionError("no fencelock_quota_rejections_total{quota=%r}" % quota)


def nospace(c, *args):
    rev = revision(c)
    r = c.call(*args)
    expect_err(r, "NOSPACE", " ".join(map(str, args)))
    eq(revision(c), rev, "revision after NOSPACE")
    return r


def test_quota_sessions_nospace_and_close_frees(ctx):
    srv = ctx.server("--max-sessions", 3)
    c = ctx.conn()
    sids = [open_session(c) for _ in range(3)]
    r = nospace(c, "SESSION.OPEN", 60000)
    assert "--max-sessions" in r.text, r.text
    eq(rejections(srv, "sessions"), 1, "session rejections")
    ok(c.call("SESSION.CLOSE", sids[0]))
    expect_int(c.call("SESSION.OPEN", 60000), "after a close there is room")


def test_quota_sessions_counts_a_pipelined_batch(ctx):
    """Ten opens in one write share group-commit batches: exactly three fit."""
    srv = ctx.server("--max-sessions", 3)
    c = ctx.conn()
    replies = c.pipeline([("SESSION.OPEN", 60000)] * 10)
    ints = [r for r in replies if isinstance(r, int)]
    errs = [r for r in replies if isinstance(r, RespError) and r.code == "NOSPACE"]
    eq((len(ints), len(errs)), (3, 7), "opens accepted / refused: %r" % (replies,))
    eq(rejections(srv, "sessions"), 7, "session rejections")


def test_quota_locks_nospace_and_unlock_frees(ctx):
    srv = ctx.server("--max-locks", 2)
    c = ctx.conn()
    sid = open_session(c)
    expect_int(c.call("LOCK", "a", sid))
    expect_int(c.call("LOCK", "b", sid))
    expect_int(c.call("LOCK", "a", sid), "re-LOCK by the holder needs no room")
    nospace(c, "LOCK", "c", sid)
    eq(rejections(srv, "locks"), 1, "lock rejections")
    ok(c.call("UNLOCK", "a", sid))
    expect_int(c.call("LOCK", "c", sid), "after an unlock there is room")


def test_quota_keys_nospace_overwrite_and_del(ctx):
    srv = ctx.server("--max-keys", 2)
    c = ctx.conn()
    expect_int(c.call("PUT", "k1", "v"))
    expect_int(c.call("PUT", "k2", "v"))
    nospace(c, "PUT", "k3", "v")
    expect_int(c.call("PUT", "k1", "v2"), "overwriting an existing key needs no new key")
    eq(rejections(srv, "keys"), 1, "key rejections")
    eq(c.call("DEL", "k1"), 1, "DEL works at the quota")
    expect_int(c.call("PUT", "k3", "v"), "after a DEL there is room")


def test_quota_waiters_nospace(ctx):
    srv = ctx.server("--max-waiters", 1)
    c = ctx.conn()
    a, b, d = open_session(c), open_session(c), open_session(c)
    expect_int(c.call("LOCK", "l", a))
    w = ctx.conn()
    w.send("LOCK", "l", b, "WAIT", 30000)
    wait_until(lambda: metric(srv, "fencelock_waiters") == 1, what="b queued")
    nospace(c, "LOCK", "l", d, "WAIT", 30000)
    eq(c.call("LOCK", "l", d), None, "a try-lock queues nothing and is not refused")
    eq(rejections(srv, "waiters"), 1, "waiter rejections")
    ok(c.call("UNLOCK", "l", a))
    expect_int(w.read_reply(), "b granted")


def test_quota_data_bytes_nospace_and_del_frees(ctx):
    srv = ctx.server("--max-data-bytes", 64 * 1024)
    c = ctx.conn()
    value = "x" * 10000
    n = 0
    while True:
        r = c.call("PUT", "k%d" % n, value)
        if isinstance(r, RespError):
            expect_err(r, "NOSPACE")
            assert "--max-data-bytes" in r.text, r.text
            break
        n += 1
        assert n < 100, "no NOSPACE after %d x 10 kB" % n
    eq(n, 6, "10 kB values that fit in 64 KiB")
    used = metric(srv, "fencelock_quota_used_bytes")
    assert used <= 64 * 1024, "data bytes %d over the quota" % used
    nospace(c, "PUT", "k0", value + "y" * 10000)  # growing a value needs room too
    eq(rejections(srv, "data_bytes"), 2, "data byte rejections")
    eq(c.call("DEL", "k0"), 1)
    expect_int(c.call("PUT", "k%d" % n, value), "after a DEL there is room")


# ---- log size ----

def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def test_overwrites_snapshot_by_logged_bytes(ctx):
    """400 overwrites of one key with 256 KiB values log 100 MiB for a 256 KiB state: with a
    4 MiB log budget snapshots follow the bytes (not the 16,384-entry threshold), so memory and
    disk stay near the budget; after a restart the newest value is there."""
    srv = ctx.server("--snapshot-log-bytes", 4 * MiB, env=SMALL_QUARANTINE)
    c = ctx.conn()
    before = rss_mib(srv)
    size = 256 * 1024
    last = None
    for base in range(0, 400, 20):
        cmds = [("PUT", "k", b"%06d" % i + b"x" * (size - 6)) for i in range(base, base + 20)]
        for r in c.pipeline(cmds):
            last = expect_int(r, "PUT")
    snaps = srv.log_text().count("raft: snapshot of")
    assert snaps >= 5, "%d snapshots for 100 MiB of log" % snaps
    disk = dir_bytes(srv.data_dir) / MiB
    assert disk < 60, "data dir holds %.0f MiB for a 256 KiB state" % disk
    grown = rss_mib(srv) - before
    assert grown < 100, "RSS grew %.0f MiB" % grown
    srv.stop()
    srv.restart()
    c = ctx.conn()
    v = c.call("GET", "k")
    eq(v[:6], b"000399", "the newest value after a restart")
    eq(len(v), size, "value length")
    assert last > 0


# ---- idle connections ----

def test_idle_timeout_closes_idle_clients_but_not_a_parked_wait(ctx):
    srv = ctx.server("--idle-timeout", 300)
    c = ctx.conn()
    holder, waiter = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "l", holder))
    w = ctx.conn()
    w.send("LOCK", "l", waiter, "WAIT", 30000)
    idle = ctx.conn()
    eq(idle.call("PING"), "PONG")
    closed_with(idle, timeout=20)
    assert metric(srv, "fencelock_idle_closes_total") >= 1, "idle close not counted"
    time.sleep(1.0)  # several sweeps pass while the LOCK stays parked
    with Conn(srv.port) as u:
        ok(u.call("UNLOCK", "l", holder))
    expect_int(w.read_reply(), "the parked LOCK is granted on its still open connection")


def test_health_answers_while_idle_connections_fill_the_http_cap(ctx):
    """The probe of the issue: idle connections filling the HTTP cap, refilled between probes,
    starved /health. Now the oldest idle one makes room for the probe."""
    srv = ctx.server()
    held = []
    try:
        for round_ in range(5):
            for _ in range(64):
                held.append(socket.create_connection(("127.0.0.1", srv.http_port), timeout=5))
            time.sleep(0.1)  # the server has accepted them
            status, _, body = http_get(srv, "/health")
            eq(status, 200, "GET /health with 64 idle connections open (round %d)" % round_)
    finally:
        for s in held:
            s.close()
    assert metric(srv, "fencelock_http_evictions_total") >= 64, "evictions not counted"
