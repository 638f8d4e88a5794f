# SPDX-License-Identifier: Apache-2.0
"""Multi-node helpers shared by the cluster tests: start N real fencelockd processes with one
--initial-cluster, ask a node for CLUSTER.INFO, wait for the single ready leader."""

import os
import select
import socket
import threading
import time

from helpers import ok, wait_until
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout
from server import Server

TIMING = ["--election-ms", "400", "--heartbeat-ms", "40"]


def new_server(ctx, node_id, args=()):
    s = Server(ctx.binary, os.path.join(ctx.workdir, "node%d" % node_id), node_id=node_id)
    s.extra_args = list(args)
    ctx.servers.append(s)
    return s


def start_cluster(ctx, n=3, extra=()):
    servers = [new_server(ctx, i) for i in range(1, n + 1)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING + list(extra)
        s.start(wait=False)
    return servers


def info(s):
    """CLUSTER.INFO of one node as a dict, or None if it does not answer."""
    try:
        with Conn(s.port, timeout=1.0) as c:
            r = c.call("CLUSTER.INFO")
            return None if isinstance(r, RespError) else as_map(r)
    except (OSError, ConnectionClosed, ReplyTimeout):
        return None


def info_now(s, timeout=10.0):
    """CLUSTER.INFO of one node that must answer now (an assertion's operand, not a poll): a
    generous bound, and a clear failure instead of None when it does not answer."""
    with Conn(s.port, timeout=timeout) as c:
        return as_map(ok(c.call("CLUSTER.INFO"), "CLUSTER.INFO of node %d" % s.node_id))


def wait_announced(c, n, timeout=20.0, http=True):
    """Wait until the member table read over connection `c` holds n members with a client
    address (and, with `http`, an HTTP URL: announced once the cluster's log format is 2). A
    member's first announce takes a revision; a test that checks the revision does not move
    must wait for the announces first (they arrive a second or two after a leader)."""
    def done():
        ms = [as_map(x) for x in c.call("CLUSTER.MEMBERS")]
        return len([m for m in ms if text(m.get("client_address")) and
                    (not http or text(m.get("http_url") or b""))]) == n
    return wait_until(done, timeout=timeout, interval=0.1, what="%d members announced" % n)


def ready_leader(servers, timeout=15.0):
    """The one running server that is a ready leader (role leader, ready 1), waited for."""
    def find():
        up = [(s, info(s) or {}) for s in servers if s.running()]
        ls = [s for s, i in up if i.get("ready") == 1 and text(i.get("role")) == "leader"]
        return ls[0] if len(ls) == 1 else None
    return wait_until(find, timeout=timeout, interval=0.05, what="a ready leader")


def make_leader(servers, target, timeout=45.0):
    """Make `target` the ready leader of `servers` with CLUSTER.TRANSFER and return it. A
    transfer can lose (another node's election timer fires during the target's campaign, or
    libraft gives up waiting for the target to catch up): then whoever leads is asked again,
    until `target` leads (bounded)."""
    servers = list({id(s): s for s in servers}.values())
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        cur = ready_leader(servers, timeout=max(1.0, deadline - time.monotonic()))
        if cur is target:
            return target
        try:
            with Conn(cur.port, timeout=20) as c:
                last = c.call("CLUSTER.TRANSFER", target.node_id, timeout=20)
        except (OSError, ConnectionClosed, ReplyTimeout) as e:
            last = e
        if last == "OK":
            try:
                return ready_leader([target], timeout=5)
            except AssertionError:
                pass  # lost its campaign: ask again
        time.sleep(0.2)
    raise AssertionError("node %d does not lead after %.0f s of transfers (last answer %r)"
                         % (target.node_id, timeout, last))


class RaftSink:
    """Stands in for a killed node on its Raft port: accepts every connection and reads and
    keeps what arrives, answering nothing. A leader's messages to that node then leave its
    queue at once (libraft keeps the last few messages for a peer it cannot reach and sends
    them when the peer is back); close() frees the port for the node's restart, which then
    receives only what the cluster sends after that. Tests use it to decide what a restarted
    node has seen instead of waiting for queues to turn over. Each connection opens with
    libraft's handshake (three little-endian u64: protocol, sender id, address length), so
    received_from(id) counts the bytes one sender sent."""

    def __init__(self, port):
        self.port = port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", port))
        self.lsock.listen(16)
        self.data = bytearray()
        self.by_conn = {}  # socket -> bytearray of what it sent
        self.conns = []
        self.closed = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.closed:
            try:
                ready, _, _ = select.select([self.lsock] + self.conns, [], [], 0.1)
            except (OSError, ValueError):
                break
            for c in ready:
                if c is self.lsock:
                    try:
                        self.conns.append(self.lsock.accept()[0])
                    except OSError:
                        pass
                    continue
                try:
                    chunk = c.recv(1 << 16)
                except OSError:
                    chunk = b""
                if chunk:
                    with self.lock:
                        self.data += chunk
                        self.by_conn.setdefault(c, bytearray()).extend(chunk)
                else:
                    self.conns.remove(c)
                    c.close()

    def received(self):
        with self.lock:
            return bytes(self.data)

    def received_from(self, sender_id):
        """How many bytes arrived on connections whose handshake names `sender_id`."""
        with self.lock:
            return sum(len(d) for d in self.by_conn.values()
                       if len(d) >= 16 and int.from_bytes(d[8:16], "little") == sender_id)

    def close(self):
        self.closed = True
        self.thread.join(5)
        self.lsock.close()
        for c in self.conns:
            c.close()
        self.conns = []
