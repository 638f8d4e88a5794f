# SPDX-License-Identifier: Apache-2.0
"""scripts/cluster.sh (what `make cluster` runs) on other ports than 7480: --base-port and
BASE_PORT move every port of every node, DATA_ROOT moves the data, and status/stop find the
nodes again."""

import os
import random
import socket
import subprocess

from helpers import eq, ok, wait_until
from server import port_range
from resp import Conn, as_map, text

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "cluster.sh")


def _bindable(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _free_base(n):
    """A base port below the ephemeral range whose n nodes' ports (base+10i+0..2) all bind."""
    lo, hi = port_range()
    for _ in range(500):
        base = random.randrange(lo, hi - 10 * n, 10)
        if all(_bindable(base + 10 * i + k) for i in range(n) for k in range(3)):
            return base
    raise RuntimeError("no free base port")


def _script(ctx, *args, env=None):
    e = dict(os.environ, BIN=ctx.binary, DATA_ROOT=ctx.tmp("cluster"))
    e.pop("BASE_PORT", None)
    e.update(env or {})
    return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, env=e,
                          timeout=60)


def test_cluster_script_base_port(ctx):
    base = _free_base(3)
    r = _script(ctx, "--base-port", str(base), "start", "3")
    ctx.defer(lambda: _script(ctx, "stop", "3", env={"BASE_PORT": str(base)}))
    eq(r.returncode, 0, "start: %s%s" % (r.stdout, r.stderr))
    assert "clients 127.0.0.1:%d" % (base + 20) in r.stdout, r.stdout

    def leader_known():
        try:
            with Conn(base + 10) as c:
                info = as_map(ok(c.call("CLUSTER.INFO")))
            return text(info["leader"]) or None
        except OSError:
            return None
    leader = wait_until(leader_known, timeout=20, interval=0.1, what="a leader")
    assert leader in ["127.0.0.1:%d" % (base + 10 * i) for i in range(3)], leader
    with Conn(base + 20) as c:
        members = sorted(text(as_map(m)["raft_address"]) for m in ok(c.call("CLUSTER.MEMBERS")))
    eq(members, ["127.0.0.1:%d" % (base + 10 * i + 1) for i in range(3)], "Raft on base+10i+1")
    st = _script(ctx, "status", "3", env={"BASE_PORT": str(base)})
    eq(st.stdout.count('"role":"leader"'), 1, "status through BASE_PORT: %s" % st.stdout)
    assert os.path.isdir(os.path.join(ctx.tmp("cluster"), "node3")), "data under DATA_ROOT"
    r = _script(ctx, "--base-port=%d" % base, "stop", "3")
    eq(r.stdout.count("stopped"), 3, r.stdout)
    wait_until(lambda: _bindable(base), timeout=15, what="node 1 gone")
    eq(_script(ctx, "--base-port", "80", "status").returncode, 2, "a base port below 1024")
