# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python client's tests: real fencelockd processes on loopback, started by
tests/integration/server.py's Server (free ports, a data directory per node, sanitizer reports
and unexpected exits collected as problems that fail the test).

The binary: pytest --fencelockd PATH, else $FENCELOCK_BIN, else build/asan/fencelockd of this
source tree. The package under test is the source tree's (clients/python), unless
$FENCELOCK_PY_INSTALLED=1 asks for the installed one.
"""

import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
if os.environ.get("FENCELOCK_PY_INSTALLED") != "1":
    sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..")))

from resp import Conn, RespError, as_map, text  # noqa: E402
from server import Server  # noqa: E402

TIMING = ["--election-ms", "400", "--heartbeat-ms", "40"]


def pytest_addoption(parser):
    parser.addoption("--fencelockd", default=None, help="path of the fencelockd binary")


@pytest.fixture(scope="session")
def binary(request):
    b = (request.config.getoption("--fencelockd") or os.environ.get("FENCELOCK_BIN")
         or os.path.join(ROOT, "build", "asan", "fencelockd"))
    if not os.access(b, os.X_OK):
        pytest.fail("no fencelockd at %s (make, or --fencelockd / $FENCELOCK_BIN)" % b)
    return os.path.abspath(b)


class Nodes:
    """The servers a test started; stopped and checked for problems at its end."""

    def __init__(self, binary, workdir):
        self.binary, self.workdir, self.servers = binary, workdir, []

    def start(self, args=(), node_id=1, wait=True):
        s = Server(self.binary, os.path.join(self.workdir, "node%d" % node_id), args=args,
                   node_id=node_id)
        self.servers.append(s)
        return s.start(wait=wait)

    def cluster(self, n=3, args=()):
        servers = [Server(self.binary, os.path.join(self.workdir, "node%d" % i), node_id=i)
                   for i in range(1, n + 1)]
        members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
        for s in servers:
            s.extra_args = ["--initial-cluster", members] + TIMING + list(args)
            self.servers.append(s)
            s.start(wait=False)
        leader_of(servers)
        return servers

    def finish(self):
        problems = []
        for s in self.servers:
            s.sigcont()
            s.stop()
            rep = s.sanitizer_report()
            if rep:
                problems.append("node %d: sanitizer report:\n%s" % (s.node_id, rep))
            problems += ["node %d: %s" % (s.node_id, p) for p in s.problems]
        for s in self.servers:
            s.force_cleanup()
        return problems


def info(s):
    try:
        with Conn(s.port, timeout=1.0) as c:
            r = c.call("CLUSTER.INFO")
            return None if isinstance(r, RespError) else as_map(r)
    except Exception:  # noqa: BLE001 - a dead or frozen node
        return None


def leader_of(servers, timeout=20.0):
    """The one running server that is a ready leader, waited for (bounded)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        up = [(s, info(s) or {}) for s in servers if s.running() and not s.sigstopped]
        ls = [s for s, i in up if i.get("ready") == 1 and text(i.get("role")) == "leader"]
        if len(ls) == 1:
            return ls[0]
        time.sleep(0.05)
    raise AssertionError("no ready leader within %.0f s" % timeout)


def endpoint(s):
    return "127.0.0.1:%d" % s.port


@pytest.fixture
def nodes(binary, tmp_path):
    n = Nodes(binary, str(tmp_path))
    yield n
    problems = n.finish()
    assert not problems, "\n".join(problems)


@pytest.fixture
def node(nodes):
    return nodes.start()


@pytest.fixture
def client(node):
    from fencelock import Client
    c = Client(endpoint(node), timeout=5.0)
    yield c
    c.close()
