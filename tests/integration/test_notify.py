# SPDX-License-Identifier: Apache-2.0
"""systemd's readiness protocol (src/server/obs/notify.c): with $NOTIFY_SOCKET set,
fencelockd sends one datagram READY=1 once it serves (a ready leader, or a follower that knows
the leader) and STOPPING=1 when SIGTERM begins its shutdown. The test binds the socket itself,
as systemd would for a Type=notify unit."""

import os
import shutil
import socket
import tempfile
import time

from cluster import TIMING, info, new_server, ready_leader
from helpers import eq
from resp import Conn, RespError, text


class NotifySocket:
    """A bound unix datagram socket: a path under a short temp dir (sun_path holds 107 bytes,
    the test's work dir may be longer), or an abstract name."""

    def __init__(self, abstract=False):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dir = None
        if abstract:
            name = "fencelock-test-%d-%d" % (os.getpid(), time.monotonic_ns())
            self.sock.bind("\0" + name)
            self.env = "@" + name
        else:
            self.dir = tempfile.mkdtemp(prefix="flnotify")
            self.env = os.path.join(self.dir, "notify")
            self.sock.bind(self.env)

    def recv(self, timeout):
        """The next datagram as {KEY: VALUE}, or None after `timeout` seconds."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            return None
        return dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)

    def close(self):
        self.sock.close()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def _serves_now(port):
    """One PING and one linearizable GET answered without an error: the node serves."""
    with Conn(port, timeout=2.0) as c:
        eq(c.call("PING"), "PONG", "PING right after READY=1")
        g = c.call("GET", "p")
        assert not isinstance(g, RespError), "GET right after READY=1 -> %r" % (g,)


def _ready_then_stopping(ctx, abstract):
    ns = NotifySocket(abstract)
    ctx.defer(ns.close)
    srv = ctx.server(env={"NOTIFY_SOCKET": ns.env}, start=False)
    srv.start(wait=False)
    msg = ns.recv(30)
    assert msg is not None, "no READY=1 within 30 s; log:\n" + srv.log_tail()
    eq(msg.get("READY"), "1", "first datagram %r" % (msg,))
    assert msg.get("STATUS", "").startswith("leader in term"), msg
    _serves_now(srv.port)
    eq(ns.recv(0.3), None, "nothing more while serving (READY=1 is sent once)")
    eq(srv.stop(), 0, "exit status after SIGTERM")
    msg = ns.recv(5)
    assert msg is not None and msg.get("STOPPING") == "1", "after SIGTERM: %r" % (msg,)
    eq(ns.recv(0.2), None, "STOPPING=1 is sent once")


def test_notify_ready_then_stopping_path(ctx):
    _ready_then_stopping(ctx, abstract=False)


def test_notify_ready_then_stopping_abstract(ctx):
    _ready_then_stopping(ctx, abstract=True)


def test_notify_follower_ready_knows_leader(ctx):
    """Each node of a 3-node cluster is READY once: the leader as leader, the followers naming
    the node that their CLUSTER.INFO reports as leader."""
    socks = [NotifySocket() for _ in range(3)]
    for ns in socks:
        ctx.defer(ns.close)
    servers = [new_server(ctx, i) for i in range(1, 4)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s, ns in zip(servers, socks):
        s.extra_args = ["--initial-cluster", members] + TIMING
        s.extra_env["NOTIFY_SOCKET"] = ns.env
        s.start(wait=False)
    leader = ready_leader(servers, timeout=30)
    for s, ns in zip(servers, socks):
        msg = ns.recv(30)
        assert msg is not None and msg.get("READY") == "1", "node %d: %r" % (s.node_id, msg)
        status = msg.get("STATUS", "")
        if s is leader:
            assert status.startswith("leader in term"), status
        else:
            eq(status, "follower of node %d" % leader.node_id, "node %d" % s.node_id)
            i = info(s) or {}
            eq(text(i.get("role")), "follower", "node %d role" % s.node_id)


def test_notify_unset_is_silent(ctx):
    """Without NOTIFY_SOCKET nothing is sent and the node starts as usual; a bad value (not
    absolute, not abstract) is logged and ignored."""
    srv = ctx.server(env={"NOTIFY_SOCKET": "relative/path"})
    with Conn(srv.port, timeout=2.0) as c:
        eq(c.call("PING"), "PONG")
    assert "NOTIFY_SOCKET relative/path unusable" in srv.log_text(), srv.log_tail()
