"""Resource limits (issue #14): every buffer is bounded, a client past a limit is closed or
refused with a clear error and counted, and the server stays up with its memory bounded.

Memory figures are upper bounds far above what the server needs (ASan build) and far below
what the unbounded server used; nothing here measures time."""

import os
import socket
import time

from helpers import eq, expect_err, expect_int, ok, open_session, wait_until
from resp import Conn, ConnectionClosed, RespError, encode_command
from test_http import metric

MiB = 1 << 20


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
    srv = ctx.server("--max-output-soft", 2 * MiB)
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
    wait_until(lambda: metric(srv, "fencelock_input_total_closes_total") >= 1, timeout=20,
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
    srv = ctx.server()
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
