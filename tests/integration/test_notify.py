# SPDX-License-Identifier: Apache-2.0
"""systemd's readiness protocol (src/server/obs/notify.c, status.c): with $NOTIFY_SOCKET set,
fencelockd sends one datagram READY=1 once it serves (a ready leader, or a follower that knows
the leader) and STOPPING=1 when SIGTERM begins its shutdown; before READY, STATUS= lines say
what it waits for ("waiting for a quorum: 2 of 3 voters unreachable (2 needed)"); with
$WATCHDOG_USEC (for this pid), WATCHDOG=1 from the event loop at half the interval. The test
binds the socket itself, as systemd would for a Type=notify unit."""

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

    def recv_until(self, timeout, pred):
        """Datagrams until one satisfies pred (returned) or `timeout` seconds passed (None);
        every datagram seen goes to self.seen."""
        deadline = time.monotonic() + timeout
        self.seen = getattr(self, "seen", [])
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            msg = self.recv(left)
            if msg is None:
                return None
            self.seen.append(msg)
            if pred(msg):
                return msg

    def ready(self, timeout):
        """The READY=1 datagram (STATUS-only ones before it skipped), or None."""
        return self.recv_until(timeout, lambda m: m.get("READY") == "1")

    def drain(self):
        while self.recv(0.05) is not None:
            pass

    def close(self):
        self.sock.close()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def _serves_now(port):
    """One PING and one linearizable GET answered without an error: the node serves."""
    with Conn(port, timeout=30.0) as c:
        eq(c.call("PING"), "PONG", "PING right after READY=1")
        g = c.call("GET", "p")
        assert not isinstance(g, RespError), "GET right after READY=1 -> %r" % (g,)


def _ready_then_stopping(ctx, abstract):
    ns = NotifySocket(abstract)
    ctx.defer(ns.close)
    srv = ctx.server(env={"NOTIFY_SOCKET": ns.env}, start=False)
    srv.start(wait=False)
    msg = ns.ready(30)
    assert msg is not None, "no READY=1 within 30 s; log:\n" + srv.log_tail()
    assert all(set(m) == {"STATUS"} for m in ns.seen[:-1]), "before READY: %r" % (ns.seen,)
    eq(msg.get("STATUS"), "ready, leader in term %d (this node)" % int(text(info(srv)["term"])),
       "READY's status")
    _serves_now(srv.port)
    eq(srv.stop(), 0, "exit status after SIGTERM")
    # The process has exited: everything it sent is already queued on the socket.
    ns.recv_until(1.0, lambda m: False)  # read them all into ns.seen
    after = ns.seen[ns.seen.index(msg) + 1:]
    eq([m for m in after if "READY" in m], [], "READY=1 is sent once")
    stops = [m for m in after if m.get("STOPPING") == "1"]
    eq(len(stops), 1, "STOPPING=1 once after SIGTERM: %r" % (after,))


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
        msg = ns.ready(30)
        assert msg is not None, "node %d: %r" % (s.node_id, ns.seen)
        status = msg.get("STATUS", "")
        if s is leader:
            assert status.startswith("ready, leader in term"), status
        else:
            eq(status, "ready, leader is node %d" % leader.node_id, "node %d" % s.node_id)
            i = info(s) or {}
            eq(text(i.get("role")), "follower", "node %d role" % s.node_id)


def test_notify_unset_is_silent(ctx):
    """Without NOTIFY_SOCKET nothing is sent and the node starts as usual; a bad value (not
    absolute, not abstract) is logged and ignored."""
    srv = ctx.server(env={"NOTIFY_SOCKET": "relative/path"})
    with Conn(srv.port, timeout=30.0) as c:
        eq(c.call("PING"), "PONG")
    assert "NOTIFY_SOCKET relative/path unusable" in srv.log_text(), srv.log_tail()


def test_notify_status_while_waiting_for_quorum(ctx):
    """Node 1 of 3 started alone says, before any READY, that it waits for a quorum and how
    many voters it cannot reach; once a second node runs it becomes READY (as leader or as the
    follower of node 2) and its status says so."""
    ns = NotifySocket()
    ctx.defer(ns.close)
    servers = [new_server(ctx, i) for i in range(1, 4)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING
    servers[0].extra_env["NOTIFY_SOCKET"] = ns.env
    servers[0].start(wait=False)
    want = "waiting for a quorum: 2 of 3 voters unreachable (2 needed)"
    msg = ns.recv_until(30, lambda m: "READY" in m or m.get("STATUS") == want)
    assert msg is not None and "READY" not in msg, "status while alone: %r" % (ns.seen,)
    servers[1].start(wait=False)
    msg = ns.ready(60)
    assert msg is not None, "no READY once two of three run: %r" % (ns.seen,)
    status = msg.get("STATUS", "")
    assert status.startswith("ready, leader in term") or status == "ready, leader is node 2", \
        status


def test_notify_watchdog_pings_from_the_loop(ctx):
    """WATCHDOG_USEC=300000: WATCHDOG=1 keeps coming; none while the process is frozen
    (SIGSTOP: a stuck loop), again after SIGCONT."""
    ns = NotifySocket()
    ctx.defer(ns.close)
    srv = ctx.server(env={"NOTIFY_SOCKET": ns.env, "WATCHDOG_USEC": "300000"}, start=False)
    srv.start(wait=False)
    assert ns.ready(30) is not None, ns.seen
    for _ in range(3):
        m = ns.recv_until(30, lambda m: m.get("WATCHDOG") == "1")
        assert m is not None, "WATCHDOG=1 stopped; log:\n" + srv.log_tail()
    srv.sigstop()
    time.sleep(0.3)
    ns.drain()  # what was sent before the stop
    eq(ns.recv(1.5), None, "a datagram from a frozen process")
    srv.sigcont()
    assert ns.recv_until(30, lambda m: m.get("WATCHDOG") == "1") is not None, "after SIGCONT"
    assert "systemd watchdog: WatchdogSec is 300 ms" in srv.log_text(), srv.log_tail()


def test_notify_watchdog_for_another_pid_is_off(ctx):
    """WATCHDOG_PID naming another process (the variable was inherited): no WATCHDOG=1."""
    ns = NotifySocket()
    ctx.defer(ns.close)
    srv = ctx.server(env={"NOTIFY_SOCKET": ns.env, "WATCHDOG_USEC": "100000",
                          "WATCHDOG_PID": "1"}, start=False)
    srv.start(wait=False)
    assert ns.ready(30) is not None, ns.seen
    ns.recv_until(1.5, lambda m: False)  # 15 intervals of 100 ms
    assert not [m for m in ns.seen if "WATCHDOG" in m], ns.seen
    assert "systemd watchdog" not in srv.log_text()
