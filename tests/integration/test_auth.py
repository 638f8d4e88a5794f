"""Security of the client port (docs/security.md): the cross-protocol guard (an HTTP request
sent to the client port closes the connection before anything in it runs), users and
permissions from --acl-file (AUTH, HELLO AUTH, NOAUTH / WRONGPASS / NOPERM with their exact
texts, KEYS/LOCKS filtered, SIGHUP reload), REQ naming the session it acts on, the refusal to
listen on a public address without an ACL file, and authentication through redis-cli, redis-py
and the C client / CLI."""

import os
import shutil
import socket
import subprocess
import time

from helpers import eq, expect_err, expect_int, expect_ok, revision, wait_until
from resp import Conn, RespError, as_map, text
from test_http import metric


def _raw_exchange(port, data, timeout=3.0):
    """Send bytes, read until the server closes; return what it sent (the close is awaited)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                return got
            got += chunk
        raise AssertionError("connection still open after %r (got %r)" % (data[:40], got))
    finally:
        s.close()


def _nothing_ran(ctx, rev):
    c = ctx.conn()
    eq(c.call("GET", "pwned"), None, "key written by the HTTP request")
    eq(revision(c), rev, "revision after the HTTP request (no command may have run)")


def test_cross_protocol_post_closes_before_anything_runs(ctx):
    rev = revision(ctx.conn())
    body = b"\r\nPUT pwned x\r\nSESSION.OPEN 60000\r\n"
    req = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: text/plain\r\n"
           b"Content-Length: %d\r\n\r\n" % (ctx.srv.port, len(body))) + body
    eq(_raw_exchange(ctx.srv.port, req), b"", "reply to a POST")
    _nothing_ran(ctx, rev)


def test_cross_protocol_host_line_and_request_lines_close(ctx):
    rev = revision(ctx.conn())
    # A Host: line anywhere closes at once (replies not yet sent are dropped, as Redis does);
    # nothing after it runs.
    eq(_raw_exchange(ctx.srv.port, b"PING\r\nHost: evil.example\r\nPUT pwned x\r\n"),
       b"", "PING before Host:")
    # "METHOD target HTTP/x" inline is a request line, even for fencelock's own PUT and GET.
    for line in (b"PUT pwned HTTP/1.1", b"GET / HTTP/1.1", b"DELETE /x HTTP/1.0",
                 b"post /", b"HOST: x"):
        eq(_raw_exchange(ctx.srv.port, line + b"\r\nPUT pwned x\r\n"), b"", line.decode())
    _nothing_ran(ctx, rev)
    # The same words as RESP arrays with other shapes stay ordinary commands.
    c = ctx.conn()
    expect_int(c.call("PUT", "page", "HTTP/1.1"))
    eq(c.call("GET", "page"), b"HTTP/1.1")
    eq(metric(ctx.srv, "fencelock_cross_protocol_closes_total"), 6, "closes counted")


def test_cross_protocol_curl_runs_nothing(ctx):
    curl = shutil.which("curl")
    assert curl, "curl is not installed (apt-get install curl)"
    rev = revision(ctx.conn())
    p = subprocess.run([curl, "-sS", "-m", "5", "-X", "POST", "--data-binary",
                        "\r\nPUT pwned x\r\nSESSION.OPEN 60000\r\n",
                        "http://127.0.0.1:%d/" % ctx.srv.port], capture_output=True, timeout=20)
    assert p.returncode != 0, "curl got an answer: %r" % (p.stdout,)
    eq(p.stdout, b"", "curl's output")
    _nothing_ran(ctx, rev)
