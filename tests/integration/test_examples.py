# SPDX-License-Identifier: Apache-2.0
"""The inventory sale (a frozen holder's lease runs out, the next holder sells one item with a
fenced write, the frozen one's late write is refused STALE) in every language: C
(examples/c/inventory_sale.c on libfencelock), Python (on the fencelock package, and with
redis-py alone), Go (examples/go on clients/go), Java (examples/java on clients/java) and Node
(examples/node: on clients/node, and with ioredis alone). Each runs as documented against a real server and leaves the state it promises:
the stock sold by one with a fenced write, the zombie's stale write refused, the lock free, both
sessions gone. Every test runs every language; one points them at a follower of a 3-node
cluster, so the -NOTLEADER redirect is exercised. docs/clients.md shows the programs' cores:
test_comparison_page_quotes_the_examples keeps it true to the files.

Needs python3-redis, nodejs and npm, Go, Java 17 and Maven (scripts/deps.sh test). Built here
when missing or older than their sources: clients/node (npm ci, tsc) and examples/node (npm ci
from its package-lock.json: ioredis, and the client linked), the Go program (go build) and the
Java one (a Maven reactor with clients/java, offline).
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
NODE_EXAMPLE = os.path.join(NODE_DIR, "inventory.js")  # on clients/node
NODE_RAW_EXAMPLE = os.path.join(NODE_DIR, "any_redis_client.js")
NODE_CLIENT_DIR = os.path.join(ROOT, "clients", "node")
GO_DIR = os.path.join(ROOT, "examples", "go")
JAVA_DIR = os.path.join(ROOT, "examples", "java")
JAVA_CLIENT_JAR = os.path.join(ROOT, "clients", "java", "target", "fencelock-client-0.1.0.jar")
JAVA_CLASSES = os.path.join(JAVA_DIR, "target", "classes")


def _c_cmd(ctx):
    # Built with the server by `make` (the client target), beside it in build/<flavour>/examples.
    exe = os.path.join(os.path.dirname(ctx.binary), "examples", "inventory_sale")
    assert os.access(exe, os.X_OK), "%s not built (make client)" % exe
    return [exe]


def _locked(name):
    """Another test run in this checkout may be building too: take turns (flock on a file of
    our own: go build takes a lock on go.mod itself)."""
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    f = open(os.path.join(ROOT, "build", name + ".lock"), "ab")
    fcntl.flock(f, fcntl.LOCK_EX)
    return f


def _go_cmd(ctx):
    go = shutil.which("go") or next((g for g in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
                                     if os.access(g, os.X_OK)), None)
    assert go, "Go not installed (scripts/deps.sh test)"
    exe = os.path.join(os.path.dirname(ctx.binary), "examples", "inventory-go")
    # The module replaces the client with ../../clients/go, which has no dependencies: nothing
    # is downloaded. Incremental (Go's build cache), so always run.
    env = dict(os.environ, GOFLAGS="-mod=readonly", GOTOOLCHAIN="local")
    with _locked("example-go"):
        r = subprocess.run([go, "build", "-o", exe, "."], cwd=GO_DIR, env=env,
                           capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, "go build failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr)
    return [exe]


def _mtimes(paths):
    for top in paths:
        if os.path.isfile(top):
            yield os.path.getmtime(top)
        for d, _, files in os.walk(top):
            for f in files:
                yield os.path.getmtime(os.path.join(d, f))


def _java_cmd():
    java, mvn = shutil.which("java"), shutil.which("mvn")
    assert java and mvn, "Java 17 and Maven not installed (scripts/deps.sh test)"
    marker = os.path.join(JAVA_DIR, "target", "fencelock-example-inventory-0.1.0.jar")
    sources = [os.path.join(ROOT, "clients", "java", "src", "main"),
               os.path.join(ROOT, "clients", "java", "pom.xml"),
               os.path.join(JAVA_DIR, "src"), os.path.join(JAVA_DIR, "pom.xml"),
               os.path.join(JAVA_DIR, "reactor.xml")]

    def stale():  # a Maven run costs seconds even when there is nothing to do
        return not (os.path.exists(marker) and os.path.exists(JAVA_CLIENT_JAR)) or \
            max(_mtimes(sources)) > min(os.path.getmtime(marker),
                                        os.path.getmtime(JAVA_CLIENT_JAR))
    if stale():
        with _locked("example-java"):
            if stale():
                # The example and the client of this tree in one reactor, offline (~/.m2 has
                # what scripts/deps.sh test fetched); the client's tests are its own suite's.
                r = subprocess.run([mvn, "-o", "-q", "-B", "-f", "reactor.xml",
                                    "-Dmaven.test.skip=true", "package"], cwd=JAVA_DIR,
                                   capture_output=True, text=True, timeout=400)
                assert r.returncode == 0, "mvn package failed (%d):\n%s%s" % (
                    r.returncode, r.stdout[-4000:], r.stderr[-4000:])
    return [java, "-cp", JAVA_CLIENT_JAR + os.pathsep + JAVA_CLASSES,
            "io.fencelock.examples.Inventory"]


def _every_language(ctx):
    """(name, argv) of every program that tells the story."""
    return [("c", _c_cmd(ctx)), ("python", _python_cmd()),
            ("python-any-redis-client", _python_cmd(PY_RAW_EXAMPLE)), ("go", _go_cmd(ctx)),
            ("java", _java_cmd()), ("node", _node_cmd()),
            ("node-any-redis-client", _node_cmd(NODE_RAW_EXAMPLE))]


def _python_cmd(script=PY_EXAMPLE):
    # The Debian interpreter: python3-redis is installed for it, not for other pythons on PATH.
    r = subprocess.run(["/usr/bin/python3", "-c", "import redis"], capture_output=True,
                       timeout=20)
    assert r.returncode == 0, "python3-redis not installed (apt-get install python3-redis)"
    return ["/usr/bin/python3", script]


def _npm(args, cwd, timeout):
    npm = shutil.which("npm")
    assert npm, "npm not installed (scripts/deps.sh test)"
    r = subprocess.run([npm] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, "npm %s in %s failed (%d):\n%s%s" % (
        " ".join(args), os.path.relpath(cwd, ROOT), r.returncode, r.stdout[-4000:],
        r.stderr[-4000:])


def _npm_ci_needed(d):
    # npm ci writes node_modules/.package-lock.json: missing or older than the lock file, the
    # installed packages are not the pinned ones (scripts/deps.sh test asks the same).
    done = os.path.join(d, "node_modules", ".package-lock.json")
    return not os.path.exists(done) or \
        os.path.getmtime(os.path.join(d, "package-lock.json")) > os.path.getmtime(done)


def _node_cmd(script=NODE_EXAMPLE):
    """inventory.js needs the client of this tree built (clients/node: npm ci, tsc) and linked
    (examples/node's package.json: "fencelock": "file:../../clients/node", npm ci); the raw
    any_redis_client.js only ioredis, which the same npm ci installs."""
    node = shutil.which("node")
    assert node, "node not installed (scripts/deps.sh test)"
    dist = os.path.join(NODE_CLIENT_DIR, "dist", "index.js")

    def client_stale():
        return not os.path.exists(dist) or max(_mtimes([
            os.path.join(NODE_CLIENT_DIR, "src"), os.path.join(NODE_CLIENT_DIR, "tsconfig.json"),
            os.path.join(NODE_CLIENT_DIR, "package.json")])) > os.path.getmtime(dist)
    if _npm_ci_needed(NODE_CLIENT_DIR) or client_stale() or _npm_ci_needed(NODE_DIR):
        with _locked("example-node"):
            if _npm_ci_needed(NODE_CLIENT_DIR):
                _npm(["ci", "--no-audit", "--no-fund"], NODE_CLIENT_DIR, 300)
            if client_stale():
                _npm(["run", "--silent", "build"], NODE_CLIENT_DIR, 300)
            if _npm_ci_needed(NODE_DIR):
                _npm(["ci", "--no-audit", "--no-fund"], NODE_DIR, 300)
    return [node, script]


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


def test_c_example_single_node(ctx):
    _single_node(ctx, _c_cmd(ctx))


def test_python_example_single_node(ctx):
    _single_node(ctx, _python_cmd())


def test_python_any_redis_client_example_single_node(ctx):
    _single_node(ctx, _python_cmd(PY_RAW_EXAMPLE))


def test_go_example_single_node(ctx):
    _single_node(ctx, _go_cmd(ctx))


test_go_example_single_node.timeout = 300  # the first go build compiles the client


def test_java_example_single_node(ctx):
    _single_node(ctx, _java_cmd())


test_java_example_single_node.timeout = 600  # the first Maven build of the client


def test_node_example_single_node(ctx):
    _single_node(ctx, _node_cmd())


test_node_example_single_node.timeout = 400  # the first npm ci and tsc of the client


def test_node_any_redis_client_example_single_node(ctx):
    _single_node(ctx, _node_cmd(NODE_RAW_EXAMPLE))


test_node_any_redis_client_example_single_node.timeout = 400


def test_examples_fail_when_the_lock_is_taken(ctx):
    """'non-zero if anything unexpected': with the lock held by someone else nothing is sold."""
    c = ctx.conn()
    expect_int(c.call("PUT", "stock", "10"))
    # The other holder must outlive every run below, builds included (a loaded machine took
    # over 30 s): a TTL as long as the test's own bound, and nobody keeps it alive.
    other = expect_int(c.call("SESSION.OPEN", 600000))
    expect_int(c.call("LOCK", "inventory", other))
    for name, cmd in _every_language(ctx):
        p = _run(cmd, "127.0.0.1:%d" % ctx.srv.port)
        assert p.returncode == 1, "%s exited %d although the lock was taken:\n%s%s" % (
            name, p.returncode, p.stdout, p.stderr)
        assert "inventory: unexpected: " in p.stderr and "already taken" in p.stderr, \
            "%s gave no reason: %r" % (name, p.stderr)
    eq(c.call("GET", "stock"), b"10", "nothing sold")
    eq(lock_info(c, "inventory")["holder"], other, "the holder kept the lock")


test_examples_fail_when_the_lock_is_taken.timeout = 600


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

    # The libraries' programs: a follower first in $FENCELOCK_ENDPOINTS (they try the dead
    # second one too); the others (and every other run): a follower on the command line.
    stock, rev = 10, None
    for i, (name, cmd) in enumerate(_every_language(ctx)):
        follower = "127.0.0.1:%d" % followers[i % 2].port
        if name in ("python", "go", "node"):
            p = _run(cmd, env_endpoints=follower + ",127.0.0.1:1")
        else:
            p = _run(cmd, follower)
        try:
            rev = _check_run(p, c, stock, leader_ep)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (name, e)) from None
        stock -= 1

    # Replicated: a follower's own state (READONLY) catches up to the last sale.
    with Conn(followers[0].port) as fc:
        eq(fc.call("READONLY"), "OK")
        wait_until(lambda: fc.call("GET", "stock") == str(stock).encode(), timeout=5,
                   what="follower state")
        eq(kv_get(fc, "stock")["mod_rev"], rev)
        expect_nil(fc.call("LOCK.INFO", "inventory"), "follower: lock free")


test_examples_against_a_follower_follow_notleader.timeout = 600


CLIENTS_MD = os.path.join(ROOT, "docs", "clients.md")
ELISION = re.compile(r"^\s*(#|//|/\*)\s*\.\.\.\s*(\*/)?\s*$")


def _quotes():
    """docs/clients.md "The same program in five languages": [(heading, path, block lines)]."""
    with open(CLIENTS_MD, encoding="utf-8") as f:
        text = f.read()
    start = text.find("\n## The same program in five languages\n")
    assert start >= 0, "docs/clients.md has no section 'The same program in five languages'"
    section = text[start + 1:]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    found = re.findall(r"^### ([^\n]+)\n\n<!-- quoted from (\S+) -->\n```\w+\n(.*?)\n```$",
                       section, re.M | re.S)
    return section, [(h, p, body.split("\n")) for h, p, body in found]


def _find_segment(lines, seg, start):
    """The index in lines, at or after start, where seg's lines follow one another (the file's
    lines may carry one extra indentation prefix, the same for the whole segment); -1 if none."""
    first = next(i for i, s in enumerate(seg) if s.strip())
    for i in range(start, len(lines) - len(seg) + 1):
        cand = lines[i + first]
        if not cand.endswith(seg[first]):
            continue
        prefix = cand[:len(cand) - len(seg[first])]
        if prefix.strip():
            continue
        if all(lines[i + j] == prefix + s or (not s.strip() and not lines[i + j].strip())
               for j, s in enumerate(seg)):
            return i
    return -1


def test_comparison_page_quotes_the_examples(ctx):
    """docs/clients.md shows the sale in the five languages as the programs the tests above run
    have it: every block a quote of its file (in order, '...' lines marking the gaps), 15-25
    lines, and the lost-lease table names every language."""
    section, quotes = _quotes()
    eq([h.split(",")[0] for h, _, _ in quotes], ["C", "Python", "Go", "Java", "Node.js"],
       "the languages quoted, in order")
    for heading, path, block in quotes:
        assert 15 <= len(block) <= 25, "%s: %d lines quoted, not 15-25" % (heading, len(block))
        full = os.path.join(ROOT, path)
        assert os.path.isfile(full), "%s: %s does not exist" % (heading, path)
        with open(full, encoding="utf-8") as f:
            lines = f.read().split("\n")
        segs, cur = [], []
        for line in block:
            if ELISION.match(line):
                segs.append(cur)
                cur = []
            else:
                cur.append(line)
        segs.append(cur)
        at = 0
        for seg in segs:
            assert any(s.strip() for s in seg), "%s: an empty quote between '...' lines" % heading
            i = _find_segment(lines, seg, at)
            assert i >= 0, "%s: these lines are not in %s (in this order, after line %d):\n%s" \
                % (heading, path, at, "\n".join(seg))
            at = i + len(seg)
    for lang in ("C", "Python", "Go", "Java", "Node.js"):
        assert re.search(r"^\| %s \|" % re.escape(lang), section, re.M), \
            "the lost-lease table has no row for %s" % lang
