# SPDX-License-Identifier: Apache-2.0
"""A cluster under --acl-file (docs/security.md "Peer credentials" and "Audit log"): members
authenticate their CLUSTER.ANNOUNCE and --join's CLUSTER.ADD with --peer-user, so a 3-node
cluster elects, replicates and redirects to the right leader address; a 4th node joins; an
ordinary user's CLUSTER.ANNOUNCE is refused and changes nothing; a wrong peer password is logged
and retried with a growing wait, not in a hot loop; a node given other members without peer
credentials refuses to start. The audit log gets a JSON line for every listed event and is
reopened on SIGHUP after a rename."""

import json
import os
import signal
import subprocess
import time

from cluster import TIMING, new_server
from helpers import eq, expect_err, expect_int, expect_ok, wait_until
from resp import Conn, ConnectionClosed, ReplyTimeout, RespError, as_map, text
from test_http import metric

USERS = ("admin", "peer", "app")


def _hash(ctx, pw):
    p = subprocess.run([ctx.binary, "--hash-password"], input=pw.encode() + b"\n",
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().strip()


def _acl_files(ctx):
    """An ACL file with admin (all), peer (peer only), app (read,lock,write) and kv (read on
    app/*), each user's
    password being its name + "pw"; and the right and a wrong peer password file."""
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
        f.write("user peer %s perm=peer\n" % _hash(ctx, "peerpw"))
        f.write("user app %s perm=read,lock,write\n" % _hash(ctx, "apppw"))
        f.write("user kv %s perm=read keys=app/*\n" % _hash(ctx, "kvpw"))
    good, bad = ctx.tmp("peerpw"), ctx.tmp("badpw")
    with open(good, "w") as f:
        f.write("peerpw\n")
    with open(bad, "w") as f:
        f.write("not-the-password\n")
    for p in (path, good, bad):  # secrets: fencelockd refuses group/world-readable ones
        os.chmod(p, 0o600)
    return path, good, bad


def _flags(s, acl, pwfile):
    return ["--acl-file", acl, "--peer-user", "peer", "--peer-password-file", pwfile,
            "--audit-log", os.path.join(s.workdir, "audit.log")]


def _conn(s, user="admin", timeout=10.0):
    c = Conn(s.port, timeout=timeout)
    expect_ok(c.call("AUTH", user, user + "pw"), "AUTH %s" % user)
    return c


def _info(s):
    try:
        with _conn(s, timeout=2.0) as c:
            r = c.call("CLUSTER.INFO")
            return None if isinstance(r, RespError) else as_map(r)
    except (OSError, ConnectionClosed, ReplyTimeout, AssertionError):
        return None


def _leader(servers, timeout=20.0):
    def find():
        ls = [s for s in servers if s.running() and
              (lambda i: i and i.get("ready") == 1 and text(i.get("role")) == "leader")(_info(s))]
        return ls[0] if len(ls) == 1 else None
    return wait_until(find, timeout=timeout, interval=0.1, what="a ready leader")


def _members(s):
    with _conn(s) as c:
        return {m["id"]: (text(m["client_address"]), text(m["role"]))
                for m in (as_map(x) for x in c.call("CLUSTER.MEMBERS"))}


def _audit(s):
    """Every line of the node's audit log, each parsed as JSON (a bad line fails the test)."""
    path = os.path.join(s.workdir, "audit.log")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        return [json.loads(line.decode("utf-8")) for line in f.read().splitlines()]


def _start_cluster(ctx, acl, pwfile):
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers] + TIMING + _flags(s, acl, pwfile)
        s.start(wait=False)
    return servers


def _all_addresses_known(leader, servers):
    want = {s.node_id: "127.0.0.1:%d" % s.port for s in servers}
    return {i: a for i, (a, _) in _members(leader).items()} == want


def test_acl_cluster_elects_replicates_and_redirects_to_the_leader(ctx):
    acl, good, _ = _acl_files(ctx)
    servers = _start_cluster(ctx, acl, good)
    leader = _leader(servers)
    followers = [s for s in servers if s is not leader]
    # Every follower's address reached the leader through an authenticated CLUSTER.ANNOUNCE.
    wait_until(lambda: _all_addresses_known(leader, servers), timeout=20, interval=0.2,
               what="the leader knows every member's client address")
    with _conn(leader, "app") as c:
        rev = expect_int(c.call("PUT", "k", "v1"))
    want = "NOTLEADER 127.0.0.1:%d" % leader.port
    for f in followers:
        def caught_up(f=f):
            with _conn(f, "app") as c:
                expect_ok(c.call("READONLY"))
                return c.call("GET", "k") == b"v1"
        wait_until(caught_up, timeout=10, interval=0.1, what="node %d replicated" % f.node_id)
        with _conn(f, "app") as c:
            r = expect_err(c.call("PUT", "k", "v2"), "NOTLEADER")
            eq(r.text, want, "node %d's redirect" % f.node_id)
    assert rev > 0
    # The announces are audited (by whichever node led then) as the peer user.
    ann = [e for s in servers for e in _audit(s) if e["event"] == "cluster.announce"]
    assert ann and all(e["user"] == "peer" and e["addr"].startswith("127.0.0.1:") and
                       e["detail"].startswith("id=") for e in ann), ann

    # An ordinary user's CLUSTER.ANNOUNCE (and a peer's anything else) is refused and changes
    # nothing: the member table and every redirect stay as they were.
    before = _members(leader)
    f = followers[0]
    forged = ("CLUSTER.ANNOUNCE", f.node_id, "6.6.6.6:6379", "127.0.0.1:%d" % f.raft_port)
    with _conn(leader, "app") as c:
        r = expect_err(c.call(*forged), "NOPERM")
        eq(r.text, "NOPERM user app has no permission to run 'CLUSTER.ANNOUNCE' "
           "(needs peer or admin)")
    with _conn(leader, "peer") as c:
        expect_err(c.call("PUT", "k", "x"), "NOPERM", "peer grants no writes")
        expect_err(c.call("CLUSTER.REMOVE", f.node_id), "NOPERM", "nor removing members")
        expect_err(c.call("CLUSTER.TRANSFER"), "NOPERM", "nor transfers")
    time.sleep(0.5)
    eq(_members(leader), before, "member table after the refused ANNOUNCE")
    for s in followers:
        with _conn(s, "app") as c:
            eq(expect_err(c.call("PUT", "k", "v3"), "NOTLEADER").text, want, "redirect unchanged")
    denied = [e for e in _audit(leader) if e["event"] == "permission.denied"]
    assert any(e["user"] == "app" and e["detail"].startswith("CLUSTER.ANNOUNCE: NOPERM")
               for e in denied), denied

    # A transfer by admin: audited, and the followers then point at the new leader.
    with _conn(leader) as c:
        expect_ok(c.call("CLUSTER.TRANSFER", f.node_id, timeout=15), "transfer")
    tr = [e for e in _audit(leader) if e["event"] == "cluster.transfer"]
    eq([(e["user"], e["detail"]) for e in tr], [("admin", "id=%d" % f.node_id)])
    new = _leader(servers)
    eq(new.node_id, f.node_id, "the new leader")
    for s in servers:
        if s is new:
            continue
        def redirected(s=s):
            with _conn(s, "app") as c:
                r = c.call("PUT", "k", "v4")
                return isinstance(r, RespError) and r.text == "NOTLEADER 127.0.0.1:%d" % new.port
        wait_until(redirected, timeout=10, interval=0.1, what="redirect to the new leader")


def test_acl_cluster_join_and_a_wrong_peer_password_does_not_loop_until_fixed(ctx):
    acl, good, bad = _acl_files(ctx)
    servers = _start_cluster(ctx, acl, good)
    leader = _leader(servers)
    join = ["--join", "127.0.0.1:%d" % leader.port] + TIMING
    n4 = new_server(ctx, 4)
    n4.extra_args = join + _flags(n4, acl, good)
    n4.start(wait=False)

    def joined():
        m = _members(leader)
        return 4 in m and m[4] == ("127.0.0.1:%d" % n4.port, "follower")
    wait_until(joined, timeout=30, interval=0.2, what="node 4 a voter with its client address")
    adds = [e for s in servers for e in _audit(s) if e["event"] == "cluster.add"]
    eq([(e["user"], e["detail"]) for e in adds],
       [("peer", "id=4 raft=127.0.0.1:%d" % n4.raft_port)], "the join's CLUSTER.ADD audited")

    # A 5th node with a wrong peer password: refused, logged with what to fix, and retried
    # after a growing wait (2 s, 4 s, ...), not every second.
    n5 = new_server(ctx, 5)
    n5.extra_args = join + _flags(n5, acl, bad)
    fails0 = metric(leader, "fencelock_auth_failures_total")
    n5.start(wait=False)
    wait_until(lambda: "peer AUTH as 'peer' refused by 127.0.0.1:%d: -WRONGPASS" % leader.port
               in n5.log_text(), timeout=15, what="the refused peer AUTH logged")
    wait_until(lambda: "check --peer-user and its password" in n5.log_text(), timeout=15,
               what="the hint logged")
    t0 = time.monotonic()
    time.sleep(9.0)
    attempts = n5.log_text().count("peer AUTH as 'peer' refused")
    fails = metric(leader, "fencelock_auth_failures_total") - fails0
    # Waits of 2 s, 4 s, 8 s after each refusal put a 4th attempt 14 s after the first: at most
    # 3 by now. One a second (no backoff) makes 6 or more, slowed only by the leader's growing
    # -WRONGPASS delay.
    assert 1 <= attempts <= 3, (attempts, time.monotonic() - t0)
    assert 1 <= fails <= 3, fails
    assert 5 not in _members(leader), "node 5 must not have joined"
    failures = [e for e in _audit(leader) if e["event"] == "auth.failure"]
    assert failures and all(e["user"] == "peer" for e in failures), failures

    # The password file corrected and re-read on SIGHUP: node 5 tries again at once and joins.
    with open(bad, "w") as f:
        f.write("peerpw\n")
    os.kill(n5.proc.pid, signal.SIGHUP)
    wait_until(lambda: "SIGHUP: peer password re-read from" in n5.log_text(), timeout=10,
               what="node 5 re-read its password file")

    def joined5():
        m = _members(leader)
        return 5 in m and m[5] == ("127.0.0.1:%d" % n5.port, "follower")
    wait_until(joined5, timeout=30, interval=0.2, what="node 5 a voter after the fix")

    # The admin removes node 4 again: audited.
    with _conn(leader) as c:
        expect_ok(c.call("CLUSTER.REMOVE", 4, timeout=15), "remove node 4")
    rm = [e for e in _audit(leader) if e["event"] == "cluster.remove"]
    eq([(e["user"], e["detail"]) for e in rm], [("admin", "id=4")])


def test_acl_cluster_without_peer_credentials_refuses_to_start(ctx):
    acl, good, _ = _acl_files(ctx)
    base = [ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--http-listen", "off", "--acl-file", acl]
    for extra in (["--id", "1", "--initial-cluster", "1=127.0.0.1:2,2=127.0.0.1:3"],
                  ["--id", "4", "--raft-listen", "127.0.0.1:2", "--join", "127.0.0.1:3"]):
        p = subprocess.run(base + extra, capture_output=True, timeout=30)
        eq(p.returncode, 2, "exit status of %s" % extra)
        assert b"needs peer credentials: --peer-user NAME" in p.stderr, p.stderr
    p = subprocess.run(base + ["--peer-password-file", good], capture_output=True, timeout=30)
    assert p.returncode == 2 and b"--peer-password-file needs --peer-user" in p.stderr, p
    env = dict(os.environ)
    env.pop("FENCELOCK_PEER_PASSWORD", None)
    p = subprocess.run(base + ["--id", "1", "--initial-cluster", "1=127.0.0.1:2,2=127.0.0.1:3",
                               "--peer-user", "peer"], capture_output=True, timeout=30, env=env)
    assert p.returncode != 0 and b"--peer-user peer needs a password" in p.stdout + p.stderr, p


def test_audit_log_lines_for_auth_denials_reloads_and_rotation(ctx):
    acl, _, _ = _acl_files(ctx)
    s = ctx.server("--acl-file", acl, "--audit-log", "audit.log", start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    path = os.path.join(s.workdir, "audit.log")  # relative to the server's cwd
    app = _conn(s, "app")
    with Conn(s.port) as c:
        expect_err(c.call("AUTH", "app", "wrong"), "WRONGPASS")
        expect_err(c.call("HELLO", 3, "AUTH", "no\"body", "x"), "WRONGPASS")
    # a key with a quote, a control byte and a non-UTF-8 byte, refused: escaped in the line
    with _conn(s, "kv") as c:
        expect_err(c.call("GET", b"o\"\xff\x01x"), "NOPERM")
    with _conn(s, "peer") as c:
        expect_err(c.call("GET", "app/x"), "NOPERM")
    expect_int(app.call("PUT", "k", "v"))
    # ACL reloads: one refused (with its line number), one that takes effect
    with open(acl) as f:
        rules = f.read()
    with open(acl, "a") as f:
        f.write("user broken nohash perm=read\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: any(e["event"] == "acl.reload_refused" for e in _audit(s)),
               what="the refused reload audited")
    with open(acl, "w") as f:
        f.write(rules)
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: any(e["event"] == "acl.reload" for e in _audit(s)),
               what="the reload audited")
    lines = _audit(s)
    for e in lines:
        eq(sorted(e), ["addr", "detail", "event", "node", "time", "user"], "fields of %r" % e)
        eq(e["node"], 1)
        assert len(e["time"]) == 24 and e["time"].endswith("Z") and e["time"][10] == "T", e
        time.strptime(e["time"][:19], "%Y-%m-%dT%H:%M:%S")
    by = {}
    for e in lines:
        by.setdefault(e["event"], []).append(e)
    ok = by["auth.success"]
    assert {"admin", "app", "peer"} <= {e["user"] for e in ok}, ok
    assert all(e["addr"].startswith("127.0.0.1") for e in ok), ok
    eq(sorted((e["user"], e["detail"].split(";")[0]) for e in by["auth.failure"]),
       [("app", "AUTH"), ("no\"body", "HELLO AUTH")], "failures")
    eq([(e["user"], e["detail"]) for e in by["permission.denied"]],
       [("kv", "GET: NOPERM user kv has no permission to access key 'o\"\u00ff'"),
        ("peer", "GET: NOPERM user peer has no permission to run 'GET' (needs read)")])
    assert "line 5" in by["acl.reload_refused"][0]["detail"], by["acl.reload_refused"]
    eq((by["acl.reload"][0]["user"], by["acl.reload"][0]["addr"]), ("", ""))
    eq(metric(s, "fencelock_audit_lines_total"), len(lines))
    eq(metric(s, "fencelock_audit_write_errors_total"), 0)
    # The raw line escapes what a client sent: nothing but printable ASCII and valid UTF-8.
    with open(path, "rb") as f:
        raw = f.read()
    raw.decode("utf-8")
    assert b'no\\"body' in raw and b"'o\\\"\\u00ff'" in raw, raw

    # Rotation: rename, SIGHUP, and the next events go to a new file at the same path.
    os.rename(path, path + ".1")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: os.path.exists(path), what="a new audit log after SIGHUP")
    _conn(s, "app").close()
    wait_until(lambda: any(e["event"] == "auth.success" for e in _audit(s)),
               what="an event in the new file")
    with open(path + ".1", "rb") as f:
        eq(len(f.read().splitlines()), len(lines) + 0, "the old file keeps its lines")


def test_peer_cannot_announce_the_leaders_id_or_a_foreign_host(ctx):
    """Before the fix, a `peer` user announced the leader's own id with any client address, and every
    follower's -NOTLEADER (and the clients' passwords behind it) went there. Now, on a 3-node
    cluster: an announce of the leader's id is refused, so is a follower's client address on
    another host than its Raft address; the member table and every redirect stay right. An
    announce on the member's own host still works (a changed client port)."""
    acl, good, _ = _acl_files(ctx)
    servers = _start_cluster(ctx, acl, good)
    leader = _leader(servers)
    wait_until(lambda: _all_addresses_known(leader, servers), timeout=20, interval=0.2,
               what="the leader knows every member's client address")
    f = [s for s in servers if s is not leader][0]
    before = _members(leader)
    with _conn(leader, "peer") as c:
        r = expect_err(c.call("CLUSTER.ANNOUNCE", leader.node_id, "6.6.6.6:6379",
                              "127.0.0.1:%d" % leader.raft_port), "ERR")
        assert "is the leader" in r.text, r.text
        r = expect_err(c.call("CLUSTER.ANNOUNCE", f.node_id, "6.6.6.6:6379",
                              "127.0.0.1:%d" % f.raft_port), "ERR")
        assert "must be on the host of its raft address" in r.text, r.text
    eq(_members(leader), before, "the member table after the refused announces")
    for s in servers:
        if s is leader:
            continue
        with _conn(s, "app") as c:
            eq(expect_err(c.call("PUT", "k", "v"), "NOTLEADER").text,
               "NOTLEADER 127.0.0.1:%d" % leader.port, "node %d's redirect" % s.node_id)
    # The member's own host with another port is accepted (then the member corrects it).
    with _conn(leader, "peer") as c:
        expect_ok(c.call("CLUSTER.ANNOUNCE", f.node_id, "127.0.0.1:1",
                          "127.0.0.1:%d" % f.raft_port))
    wait_until(lambda: _all_addresses_known(leader, servers), timeout=20, interval=0.2,
               what="node %d announced its own address again" % f.node_id)


def test_announce_any_host_allows_a_client_address_on_another_host(ctx):
    """--announce-any-host: a follower's client address may be on another host (members whose
    client and Raft networks differ); the leader's own id stays refused."""
    acl, good, _ = _acl_files(ctx)
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers] + TIMING + _flags(s, acl, good) + \
            ["--announce-any-host"]
        s.start(wait=False)
    leader = _leader(servers)
    f = [s for s in servers if s is not leader][0]
    with _conn(leader, "peer") as c:
        expect_ok(c.call("CLUSTER.ANNOUNCE", f.node_id, "10.9.9.9:6379",
                          "127.0.0.1:%d" % f.raft_port))
        expect_err(c.call("CLUSTER.ANNOUNCE", leader.node_id, "10.9.9.9:6379",
                          "127.0.0.1:%d" % leader.raft_port), "ERR")
    eq(_members(leader)[leader.node_id][0], "127.0.0.1:%d" % leader.port, "the leader's entry")
