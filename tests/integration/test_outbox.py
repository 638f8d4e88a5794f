# SPDX-License-Identifier: Apache-2.0
"""The outbox recipe (examples/outbox/outbox.py, docs/fencing.md): a holder paused with
SIGSTOP between prepare and commit, past its session's TTL, while another run of the same
operation takes the lock, commits and sends. Resumed, the paused holder's commit is refused
(locally by its safe deadline, or with the local checks skipped by the server's -STALE) and the
action happens exactly once; a later run of the same operation is refused by the committed
record (IFREV 0). Needs python3-redis (the package is clients/python, found from the tree)."""

import json
import os
import signal
import subprocess
import time

from helpers import eq, kv_get

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUTBOX = os.path.join(ROOT, "examples", "outbox", "outbox.py")


def _start(ctx, op, msg, sent, *flags):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    argv = ["/usr/bin/python3", OUTBOX, "--endpoints", "127.0.0.1:%d" % ctx.srv.port] + \
        list(flags) + [op, msg, sent]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=ROOT)
    ctx.defer(lambda: (p.poll() is None) and (os.kill(p.pid, signal.SIGCONT), p.kill(),
                                              p.wait(10)))
    return p


def _run(ctx, op, msg, sent, *flags):
    p = _start(ctx, op, msg, sent, *flags)
    out, err = p.communicate(timeout=30)
    return p.returncode, out, err


def _until_prepared(p):
    """Read the paused-to-be holder's transcript up to 'prepared' (bounded by its hold)."""
    lines = []
    while True:
        line = p.stdout.readline()
        assert line, "outbox exited before preparing: %r %s" % (lines, p.stderr.read())
        lines.append(line)
        if line.rstrip().endswith(": prepared"):
            return lines


def _sent_lines(sent):
    if not os.path.exists(sent):
        return []
    with open(sent) as f:
        return f.read().splitlines()


def _paused_holder(ctx, op, sent, *flags):
    """A with a 1 s TTL frozen after preparing; B sends meanwhile; A resumed: A's result."""
    a = _start(ctx, op, "from-A", sent, "--ttl-ms", "1000", "--hold-ms", "1500", *flags)
    _until_prepared(a)
    os.kill(a.pid, signal.SIGSTOP)
    try:
        time.sleep(1.6)  # past A's TTL: the leader expires A's session and releases the lock
        rc, out, err = _run(ctx, op, "from-B", sent, "--ttl-ms", "5000")
        eq(rc, 0, "B sends (stdout %r, stderr %r)" % (out, err))
        assert "committed at revision" in out and out.rstrip().endswith("sent"), out
    finally:
        os.kill(a.pid, signal.SIGCONT)
    out, err = a.communicate(timeout=30)
    return a.returncode, out, err


def _check_once(ctx, op, sent):
    eq([ln for ln in _sent_lines(sent) if ln.split()[0] == op], [op + " from-B"],
       "the action happened once, by B")
    rec = json.loads(kv_get(ctx.conn(), "outbox/" + op)["value"])
    eq((rec["message"], rec["state"]), ("from-B", "sent"), "the record is B's")


def test_outbox_paused_holder_refused_locally(ctx):
    sent = ctx.tmp("sms.txt")
    rc, out, err = _paused_holder(ctx, "op-1", sent)
    eq(rc, 3, "A refused (stdout %r, stderr %r)" % (out, err))
    assert "refused" in out and "committed" not in out, out
    _check_once(ctx, "op-1", sent)


def test_outbox_paused_holder_refused_by_fencing(ctx):
    """Without the local checks A's commit reaches the server: -STALE, nothing sent."""
    sent = ctx.tmp("sms.txt")
    rc, out, err = _paused_holder(ctx, "op-2", sent, "--unsafe-skip-local-checks")
    eq(rc, 3, "A refused (stdout %r, stderr %r)" % (out, err))
    assert "refused: -STALE" in out, out
    _check_once(ctx, "op-2", sent)


def test_outbox_second_run_not_sent_again(ctx):
    sent = ctx.tmp("sms.txt")
    rc, out, _ = _run(ctx, "op-3", "first", sent)
    eq(rc, 0, out)
    rc, out, _ = _run(ctx, "op-3", "again", sent)
    eq(rc, 2, out)
    assert "already committed by an earlier run" in out, out
    # even a run that skips the prepare read is stopped by the record (IFREV 0)
    rc, out, _ = _run(ctx, "op-3", "again", sent, "--unsafe-skip-local-checks")
    eq(rc, 2, out)
    assert "(IFREV)" in out, out
    eq(_sent_lines(sent), ["op-3 first"], "sent once")
