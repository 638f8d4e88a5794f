# SPDX-License-Identifier: Apache-2.0
"""The open-file limit against --max-clients: at start-up fencelockd raises its soft
RLIMIT_NOFILE if it can, else lowers the effective --max-clients to what fits, logs one warning
with the numbers and reports the effective value; the client past it gets the -ERR reply (not a
silent drop or a hang) and the server keeps serving. A limit lowered on the running server
(below what the start-up fit allowed for) still gives every client past it the -ERR reply. The
limit is set with prlimit(1)."""

import os
import re
import shutil
import subprocess
import time

from helpers import eq, wait_until
from resp import Conn, ConnectionClosed, RespError
from test_http import metric

# With --http-max-conns 8 the reserve is 32 + 2 * 16 raft connections + 8 = 72 fds
# (src/server/net/fdlimit.h), so a limit of 100 leaves 28 clients.
NOFILE = 100
HTTP_CONNS = 8
FITS = NOFILE - (32 + 2 * 16 + HTTP_CONNS)


def limited_server(ctx, nofile, *args):
    """A server started under `prlimit --nofile=N:N` (soft = hard: it cannot raise it)."""
    assert shutil.which("prlimit"), "prlimit (util-linux) is needed"
    srv = ctx.server(*args, start=False)
    plain = srv.argv
    srv.argv = lambda: ["prlimit", "--nofile=%d:%d" % (nofile, nofile), "--"] + plain()
    return srv


def info_field(c, section, field):
    text = c.call("INFO", section)
    text = text.decode() if isinstance(text, bytes) else str(text)
    m = re.search(r"^%s:(\S+)" % field, text, re.M)
    assert m, "INFO %s has no %s: %r" % (section, field, text)
    return m.group(1)


def refused(port):
    """What one more connection gets: (bytes until EOF, closed?)."""
    extra = Conn(port, timeout=5)
    try:
        extra.send("PING")
        return extra.read_until_eof(timeout=5)
    except OSError:
        return b"", True
    finally:
        extra.close()


def test_max_clients_lowered_to_the_fd_limit_with_a_warning(ctx):
    srv = limited_server(ctx, NOFILE, "--max-clients", 1000, "--http-max-conns", HTTP_CONNS)
    srv.start()
    log = srv.log_text()
    m = re.search(r"--max-clients 1000 lowered to (\d+): the open-file limit is (\d+) "
                  r"\(hard (\d+)\).*ulimit -n (\d+)", log)
    assert m, "no fd-limit warning in the log:\n" + srv.log_tail()
    eq(int(m.group(1)), FITS, "effective max-clients in the warning")
    eq(int(m.group(2)), NOFILE, "soft limit in the warning")
    eq(int(m.group(4)), 1000 + NOFILE - FITS, "the ulimit -n the warning asks for")
    with srv.conn() as c:
        eq(info_field(c, "clients", "maxclients"), str(FITS), "INFO maxclients")
    eq(metric(srv, "fencelock_max_clients"), FITS, "fencelock_max_clients")

    conns = []

    def fill():
        for c in conns:
            c.close()
        conns.clear()
        for _ in range(FITS):
            c = Conn(srv.port, timeout=5)
            conns.append(c)
            if c.call("PING") != "PONG":
                return False
        return True

    # The readiness probe's and the INFO connection may take a moment to be reaped.
    wait_until(fill, 5, interval=0.1, what="%d connections under the fd limit" % FITS)
    for attempt in range(3):  # each one past the limit is refused, not dropped or hung
        data, closed = refused(srv.port)
        assert data.startswith(b"-ERR max number of clients reached"), \
            "connection past the limit (#%d) got %r" % (attempt + 1, data[:100])
        assert closed, "connection past the limit was not closed"
    for i, c in enumerate(conns):
        eq(c.call("PING"), "PONG", "connection #%d after the refusals" % (i + 1))
    conns.pop().close()
    wait_until(lambda: _serves(srv.port), 5, interval=0.1, what="a new client after one left")
    assert metric(srv, "fencelock_connections_rejected_total") >= 3
    eq(metric(srv, "fencelock_accept_errors_total"), 0, "accept errors within the limit")
    for c in conns:
        c.close()


def _serves(port):
    c = Conn(port, timeout=5)
    try:
        return c.call("PING") == "PONG"
    except OSError:
        return False
    finally:
        c.close()


def test_soft_limit_is_raised_up_to_the_hard_limit(ctx):
    # soft 100, hard 2000: 1000 clients + 72 fit once the soft limit is raised; no warning.
    srv = ctx.server("--max-clients", 1000, "--http-max-conns", HTTP_CONNS, start=False)
    plain = srv.argv
    srv.argv = lambda: ["prlimit", "--nofile=100:2000", "--"] + plain()
    srv.start()
    log = srv.log_text()
    assert re.search(r"open-file limit raised from 100 to %d \(hard limit 2000\)"
                     % (1000 + NOFILE - FITS), log), "no raise line:\n" + srv.log_tail()
    assert "lowered to" not in log, "warned although the limit could be raised"
    with srv.conn() as c:
        eq(info_field(c, "clients", "maxclients"), "1000", "INFO maxclients")


def test_no_room_for_any_client_refuses_to_start(ctx):
    # Default --http-max-conns 64: the reserve alone (128) is over a limit of 64.
    srv = limited_server(ctx, 64, "--max-clients", 1000)
    srv.start(wait=False)
    deadline = time.monotonic() + 20
    while srv.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    rc = srv.proc.poll()
    srv.proc._fl_reaped = True  # the exit is what this test asks for
    eq(rc, 1, "exit status with no fd left for clients")
    assert re.search(r"open-file limit 64 \(hard 64\) leaves no fd for clients.*ulimit -n 1128",
                     srv.log_text()), "no clear error:\n" + srv.log_tail()


def test_limit_lowered_at_run_time_refuses_with_the_error(ctx):
    # Below the start-up fit: the limit is lowered on the running server (prlimit --pid), so
    # --max-clients no longer protects it. Every client past what fits must get the -ERR reply
    # (fewer than 8 fds left: refused and closed at once), none a bare close or a reset, which
    # is what libuv does when accept() itself fails with EMFILE.
    srv = ctx.server()
    limit = len(os.listdir("/proc/%d/fd" % srv.proc.pid)) + 20
    subprocess.run(["prlimit", "--pid", str(srv.proc.pid), "--nofile=%d:%d" % (limit, limit)],
                   check=True, timeout=10)
    conns, served, refusals = [], 0, 0
    try:
        for i in range(40):
            c = Conn(srv.port, timeout=5)
            try:
                r = c.call("PING")
            except (OSError, ConnectionClosed) as e:
                raise AssertionError("client #%d: %r, not a reply (after %d served, %d refused)"
                                     % (i + 1, e, served, refusals))
            if r == "PONG":
                assert not refusals, "client #%d served after a refusal" % (i + 1)
                served += 1
                conns.append(c)
                continue
            assert isinstance(r, RespError) and r.text == "ERR max number of clients reached", \
                "client #%d got %r after %d served" % (i + 1, r, served)
            _, closed = c.read_until_eof(timeout=5)
            c.close()
            assert closed, "refused client #%d was not closed" % (i + 1)
            refusals += 1
        assert served >= 5 and refusals >= 10, (served, refusals)
        eq(metric(srv, "fencelock_fd_limit_refusals_total"), refusals, "refusals counted")
        assert "open-file limit nearly reached" in srv.log_text(), srv.log_tail()
        for i, c in enumerate(conns):
            eq(c.call("PING"), "PONG", "served client #%d after the refusals" % (i + 1))
    finally:
        for c in conns:
            c.close()
    wait_until(lambda: _serves(srv.port), 5, interval=0.1, what="a new client once others left")
