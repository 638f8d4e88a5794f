# SPDX-License-Identifier: Apache-2.0
"""Log lines for the systemd journal (src/common/log.c): when $JOURNAL_STREAM names the file
fencelockd's stderr is ("DEVICE:INODE", as systemd sets it for a unit logging to the journal),
every line starts with sd-daemon(3)'s priority prefix (<3> error, <4> warn, <6> info, <7>
debug, which journald turns into PRIORITY= so `journalctl -p warning` selects by level) and a
text line carries no timestamp (journald stamps each entry). Otherwise, and when the variable
names another file (inherited, stderr redirected), the lines are as before.

The tests point $JOURNAL_STREAM at the server's own log file (its stderr), as journald's
stream socket would be."""

import os
import re
import subprocess
import time

from helpers import eq, open_session
from server import free_port

PREFIX = {"3": "E", "4": "W", "6": "I", "7": "D"}
TEXT_LINE = re.compile(r"^<([0-9])>([DIWE]) \[1\] ")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z [DIWE] \[\d+\] ")


def stream_of(path):
    st = os.stat(path)
    return "%d:%d" % (st.st_dev, st.st_ino)


def server_lines(srv):
    """This incarnation's lines, without the test harness's own `===` lines."""
    return [l for l in srv.log_text().splitlines() if l and not l.startswith("===")]


def journal_server(ctx, *args, stream=None):
    """A server whose stderr (its log file) is named by $JOURNAL_STREAM (or by `stream`), with
    NOTIFY_SOCKET set to an unusable value so that it logs a warning at start."""
    srv = ctx.server(*args, start=False)
    open(srv.log_path, "ab").close()
    srv.extra_env.update({"JOURNAL_STREAM": stream or stream_of(srv.log_path),
                          "NOTIFY_SOCKET": "relative/path"})
    srv.start()
    with srv.conn() as c:
        eq(c.call("PING"), "PONG")
    return srv


def test_journal_stream_prefixes_priority_and_drops_time(ctx):
    srv = journal_server(ctx, "--log-level", "debug")
    # A debug line: a session left to expire ("session N: deadline passed, proposing expiry").
    with srv.conn() as c:
        sid = open_session(c, 1000)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and \
            not any(l.startswith("<7>D [1] session %d:" % sid) for l in server_lines(srv)):
        time.sleep(0.1)
    lines = server_lines(srv)
    assert lines, srv.log_tail()
    for l in lines:
        m = TEXT_LINE.match(l)
        assert m, "not a journal line: %r" % l
        eq(PREFIX[m.group(1)], m.group(2), "priority of %r" % l)
    levels = {TEXT_LINE.match(l).group(1) for l in lines}
    assert {"4", "6", "7"} <= levels, "levels seen: %s" % sorted(levels)
    assert any(l.startswith("<4>W [1] NOTIFY_SOCKET relative/path unusable") for l in lines), \
        srv.log_tail()


def test_journal_stream_json_lines_keep_their_time(ctx):
    srv = journal_server(ctx, "--log-format", "json")
    lines = server_lines(srv)
    assert lines, srv.log_tail()
    for l in lines:
        m = re.match(r'^<([0-9])>\{"time":"[0-9T:.Z-]+","level":"([a-z]+)",', l)
        assert m, "not a journal JSON line: %r" % l
        eq({"3": "error", "4": "warn", "6": "info", "7": "debug"}[m.group(1)], m.group(2), l)
    assert any(l.startswith('<4>{') and "NOTIFY_SOCKET relative/path" in l for l in lines)


def test_journal_stream_error_line(ctx):
    """A start that fails logs its error as <3> (journalctl -p err shows it)."""
    log = os.path.join(ctx.workdir, "stderr.log")
    open(log, "ab").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    env["JOURNAL_STREAM"] = stream_of(log)
    with open(log, "ab") as f:
        r = subprocess.run([ctx.binary, "--data-dir", os.path.join(ctx.workdir, "d"),
                            "--listen", "127.0.0.1:%d" % free_port(),
                            "--raft-listen", "127.0.0.1:%d" % free_port(),
                            "--http-listen", "off",
                            "--audit-log", os.path.join(ctx.workdir, "no", "such", "audit.log")],
                           stdin=subprocess.DEVNULL, stdout=f, stderr=f, env=env, timeout=60)
    with open(log) as f:
        lines = f.read().splitlines()
    eq(r.returncode, 1, "exit status; log: %s" % lines)
    assert any(l.startswith("<3>E [1] --audit-log ") for l in lines), lines
    assert not [l for l in lines if RFC3339.match(l)], lines


def test_without_journal_stream_lines_unchanged(ctx):
    """No $JOURNAL_STREAM, or one that names another file than stderr: timestamps, no prefix."""
    for stream in (None, "1:2"):
        srv = ctx.server(start=False)
        if stream:
            srv.extra_env["JOURNAL_STREAM"] = stream
        srv.start()
        lines = server_lines(srv)
        assert lines and all(RFC3339.match(l) for l in lines), lines[:5]
        eq(srv.stop(), 0, "exit status")
