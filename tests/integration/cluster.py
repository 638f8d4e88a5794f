"""Multi-node helpers shared by the cluster tests: start N real fencelockd processes with one
--initial-cluster, ask a node for CLUSTER.INFO, wait for the single ready leader."""

import os

from helpers import wait_until
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


def wait_announced(c, n, timeout=20.0):
    """Wait until the member table read over connection `c` holds n members with a client
    address. A member's first announce takes a revision; a test that checks the revision does
    not move must wait for the announces first (they arrive about a second after a leader)."""
    def done():
        ms = [as_map(x) for x in c.call("CLUSTER.MEMBERS")]
        return len([m for m in ms if text(m.get("client_address"))]) == n
    return wait_until(done, timeout=timeout, interval=0.1, what="%d members announced" % n)


def ready_leader(servers, timeout=15.0):
    """The one running server that is a ready leader (role leader, ready 1), waited for."""
    def find():
        up = [(s, info(s) or {}) for s in servers if s.running()]
        ls = [s for s, i in up if i.get("ready") == 1 and text(i.get("role")) == "leader"]
        return ls[0] if len(ls) == 1 else None
    return wait_until(find, timeout=timeout, interval=0.05, what="a ready leader")
