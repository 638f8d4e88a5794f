# SPDX-License-Identifier: Apache-2.0
"""Start-up with the raft port still taken: a node restarted a moment after the
previous process on its ports died waits for the port for a few seconds, and one whose port
stays taken exits with a message naming the address and the reason."""

import signal
import socket
import subprocess
import time

from helpers import eq, ok, wait_until
from resp import Conn


def _hold_port(ctx, port):
    """A listener on the port, as a process that has not let go of it yet."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    ctx.defer(holder.close)
    return holder


def test_restart_waits_for_a_raft_port_in_use(ctx):
    """A node whose raft port is still taken when it starts (the previous process on it had
    just been killed) waits for it and then starts; a port taken for good makes it exit with a
    message naming the address and the reason. (It used to exit at once with 'raft_start: '
    and nothing after it.)"""
    s = ctx.server()
    s.kill9()
    holder = _hold_port(ctx, s.raft_port)
    s.start(wait=False)
    wait_until(lambda: "is in use; waiting" in s.log_text(), timeout=20, what="the wait logged")
    holder.close()
    s.wait_ready()
    with Conn(s.port) as c:
        ok(c.call("PUT", "k", "v"), "serving after the wait")
    s.stop()
    holder = _hold_port(ctx, s.raft_port)
    p = subprocess.run(s.argv(), capture_output=True, timeout=60, env=s.environ())
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    eq(p.returncode, 1, "exit status with the port taken for good")
    want = "raft address 127.0.0.1:%d: cannot listen: Address already in use" % s.raft_port
    assert want in out, out


def test_sigterm_during_start_up_shuts_down_cleanly(ctx):
    """A SIGTERM while the node is still starting (here: waiting for its raft port) is held
    until the loop runs and then shuts the node down cleanly with status 0. (The handlers were
    installed after rn_start, so the default action killed the process mid-start.)"""
    s = ctx.server()
    s.kill9()
    holder = _hold_port(ctx, s.raft_port)
    s.start(wait=False)
    wait_until(lambda: "is in use; waiting" in s.log_text(), timeout=20, what="the wait logged")
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert s.running(), "SIGTERM during start-up killed the node (status %r)" % s.proc.poll()
    holder.close()
    rc = s.proc.wait(20)
    s.proc._fl_reaped = True
    eq(rc, 0, "exit status of a node told to stop while starting")
    assert "shutting down" in s.log_text(), s.log_text()[-2000:]
