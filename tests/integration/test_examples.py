# SPDX-License-Identifier: Apache-2.0
"""The examples in other languages (examples/python: on the fencelock package and with redis-py
alone; examples/node) run as documented against a real server and leave the state they promise: the stock sold by one with a fenced write, the
zombie's stale write refused, the lock free, both sessions gone. One run per language points at a
follower of a 3-node cluster, so the -NOTLEADER redirect is exercised.

Needs python3-redis, nodejs and npm (scripts/deps.sh test); ioredis comes from
examples/node/package-lock.json (`npm ci`, run here when node_modules is missing).
"""

import fcntl
import os
import re
import shutil
import subprocess

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, expect_nil, kv_get, lock_info, session_info, \
    wait_until
from resp import Conn, RespError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY_EXAMPLE = os.path.join(ROOT, "examples", "python", "inventory.py")  # on clients/python
PY_RAW_EXAMPLE = os.path.join(ROOT, "examples", "python", "any_redis_client.py")
NODE_DIR = os.path.join(ROOT, "examples", "node")
NODE_EXAMPLE = os.path.join(NODE_DIR, "inventory.js")


def _python_cmd(script=PY_EXAMPLE):
    # The Debian interpreter: python3-redis is installed for it, not for other pythons on PATH.
    r = subprocess.run(["/usr/bin/python3", "-c", "import redis"], capture_output=True,
                       timeout=20)
    assert r.returncode == 0, "python3-redis not installed (apt-get install python3-redis)"
    return ["/usr/bin/python3", script]


def _node_cmd():
    node = shutil.which("node")
    assert node, "node not installed (apt-get install nodejs npm)"
    marker = os.path.join(NODE_DIR, "node_modules", "ioredis", "package.json")
    if not os.path.exists(marker):
        npm = shutil.which("npm")
        assert npm, "npm not installed (apt-get install npm)"
        # Another test run in this checkout may be installing too: take turns (flock on the lock
        # file, which npm ci only reads), then look again.
        with open(os.path.join(NODE_DIR, "package-lock.json"), "rb") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            if not os.path.exists(marker):
                r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR,
                                   capture_output=True, text=True, timeout=40)
                assert r.returncode == 0, "npm ci failed (%d):\n%s%s" % (r.returncode, r.stdout,
                                                                          r.stderr)
    assert os.path.exists(marker), "ioredis missing after npm ci"
    return [node, NODE_EXAMPLE]


def _run(cmd, endpoint=None, env_endpoints=None, timeout=30):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("FENCELOCK_ENDPOINTS", None)
    if env_endpoints is not None:
        env["FENCELOCK_ENDPOINTS"] = env_endpoints
    argv = cmd + ([endpoint] if endpoint else [])
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def _field(out, pattern, what):
    m = re.search(pattern, out, re.M)
    assert m, "transcript has no %s (/%s/):\n%s" % (what, pattern, out)
    return m.groups()


def _check_run(p, c, stock_before, leader_endpoint):
    """Assert the example succeeded and the server state is what its transcript claims."""
    out = p.stdout
    assert p.returncode == 0, "example exited %d\nstdout:\n%s\nstderr:\n%s" % (
        p.returncode, out, p.stderr)
    zsid, ztoken = map(int, _field(out, r"^zombie: session (\d+) holds inventory with token "
                                        r"(\d+)", "zombie grant"))
    wsid, where = _field(out, r"^worker: session (\d+) \(ttl \d+ ms\) on (\S+)$", "worker session")
    wsid = int(wsid)
    token, = map(int, _field(out, r"fencing token (\d+)$", "worker token"))
    written, rev = map(int, _field(out, r"stock (\d+) written at revision (\d+)$", "fenced write"))
    stale, = _field(out, r"^zombie: write with token (\d+) refused: -(STALE) ", "stale refusal")[:1]
    eq(int(stale), ztoken, "the refused write carried the zombie's token")
    closed, = map(int, _field(out, r"^worker: unlocked and closed session (\d+)", "close"))
    eq(closed, wsid, "the session closed is the worker's")
    eq(where, leader_endpoint, "the worker ended up talking to the leader")

    assert token > ztoken, "worker token %d must exceed the zombie's %d" % (token, ztoken)
    eq(written, stock_before - 1, "one item sold")
    kv = kv_get(c, "stock")
    eq(kv["value"], str(stock_before - 1).encode(), "stock after the run (the zombie's 0 refused)")
    eq(kv["mod_rev"], rev, "the stock's mod_rev is the fenced write's revision")
    assert kv["mod_rev"] > token, "mod_rev %d must exceed the token %d" % (kv["mod_rev"], token)
    expect_nil(lock_info(c, "inventory"), "LOCK.INFO inventory after the run (free, no waiters)")
    expect_err(session_info(c, wsid), "NOSESSION", "the worker's session was closed")
    expect_err(session_info(c, zsid), "NOSESSION", "the zombie's session expired")
    return rev


def _single_node(ctx, cmd):
    c = ctx.conn()
    expect_int(c.call("PUT", "stock", "10"))
    p = _run(cmd, "127.0.0.1:%d" % ctx.srv.port)
    _check_run(p, c, 10, "127.0.0.1:%d" % ctx.srv.port)
    eq(kv_get(c, "stock")["version"], 2, "exactly one write to the stock (seed + the sale)")


def test_python_example_single_node(ctx):
    _single_node(ctx, _python_cmd())


def test_python_any_redis_client_example_single_node(ctx):
    _single_node(ctx, _python_cmd(PY_RAW_EXAMPLE))


def test_node_example_single_node(ctx):
    _single_node(ctx, _node_cmd())


def test_examples_fail_when_the_lock_is_taken(ctx):
    """'non-zero if anything unexpected': with the lock held by someone else nothing is sold."""
    c = ctx.conn()
    expect_int(c.call("PUT", "stock", "10"))
    other = expect_int(c.call("SESSION.OPEN", 30000))
    expect_int(c.call("LOCK", "inventory", other))
    for cmd in (_python_cmd(), _python_cmd(PY_RAW_EXAMPLE), _node_cmd()):
        p = _run(cmd, "127.0.0.1:%d" % ctx.srv.port)
        assert p.returncode != 0, "%s exited 0 although the lock was taken:\n%s" % (
            os.path.basename(cmd[-1]), p.stdout)
        assert "already taken" in p.stderr, "no reason given: %r" % p.stderr
    eq(c.call("GET", "stock"), b"10", "nothing sold")
    eq(lock_info(c, "inventory")["holder"], other, "the holder kept the lock")


def test_examples_against_a_follower_follow_notleader(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    followers = [s for s in servers if s is not leader]
    leader_ep = "127.0.0.1:%d" % leader.port
    want = "NOTLEADER " + leader_ep

    def redirects(f):
        with Conn(f.port, timeout=2.0) as fc:
            r = fc.call("SESSION.OPEN", 1000)
            return isinstance(r, RespError) and r.text == want
    for f in followers:  # the member table must hold the leader's client address first
        wait_until(lambda: redirects(f), timeout=10, interval=0.1,
                   what="follower %d redirecting to %s" % (f.node_id, leader_ep))
    c = ctx.conn(leader)
    expect_int(c.call("PUT", "stock", "10"))

    # Python: the follower named in $FENCELOCK_ENDPOINTS (first entry; the package tries the
    # dead second one too); redis-py alone and node: on the command line.
    p = _run(_python_cmd(), env_endpoints="127.0.0.1:%d,127.0.0.1:1" % followers[0].port)
    _check_run(p, c, 10, leader_ep)
    p = _run(_python_cmd(PY_RAW_EXAMPLE), "127.0.0.1:%d" % followers[1].port)
    _check_run(p, c, 9, leader_ep)
    p = _run(_node_cmd(), "127.0.0.1:%d" % followers[1].port)
    rev = _check_run(p, c, 8, leader_ep)

    # Replicated: a follower's own state (READONLY) catches up to the last sale.
    with Conn(followers[0].port) as fc:
        eq(fc.call("READONLY"), "OK")
        wait_until(lambda: fc.call("GET", "stock") == b"7", timeout=5, what="follower state")
        eq(kv_get(fc, "stock")["mod_rev"], rev)
        expect_nil(fc.call("LOCK.INFO", "inventory"), "follower: lock free")
