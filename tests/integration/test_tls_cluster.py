# SPDX-License-Identifier: Apache-2.0
"""A cluster with every security layer on (docs/security.md "A TLS cluster, step by step"):
client TLS with client certificates required (the client CA), mutual TLS on the Raft port with
named member certificates of a CA of its own (the peers' CA), and ACLs; the guide's own openssl
commands make a working cluster. The members' calls verify the address dialled and
send the peer password to nobody else. The
members' own calls to each other's client ports (CLUSTER.ANNOUNCE, --join's CLUSTER.ADD) go
over TLS with the node's certificate, authenticated as the peer user: every follower's client
address reaches the leader (redirects point at it), a 4th node joins over TLS and becomes a
voter, and a node whose --tls-ca is another CA is refused with a log line saying what to check,
retried with a growing wait. On SIGHUP the Raft port's certificate, key and CA are reloaded
too. Certificates are made with the openssl command in the test's temp dir."""

import os
import shutil
import signal
import ssl
import time

from cluster import TIMING, new_server
from helpers import eq, expect_err, expect_int, expect_ok, wait_until
from resp import Conn, ConnectionClosed, ReplyTimeout, RespError, as_map, text
from test_acl_cluster import _acl_files
from test_http import metric
from test_tls import _ca, _key_csr, _sign

NODE_EXT = ("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth,clientAuth")


def pki(ctx, name, ca="ca"):
    """A client CA (made once) and a node certificate it signed for the client port: usable
    as server and client (the node's own calls to other members)."""
    d = ctx.tmp("pki")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, ca + ".crt")):
        _ca(d, ca)
    _key_csr(d, name, "127.0.0.1")
    _sign(d, name, ca, NODE_EXT)
    return {k: os.path.join(d, v) for k, v in
            (("cert", name + ".crt"), ("key", name + ".key"), ("ca", ca + ".crt"))}


def flags(ctx, p, acl, pwfile, node_id):
    """The guide's flags: the client port with a certificate of the client CA, the Raft port
    with node_id's named certificate of a CA of its own (the peers' CA)."""
    from test_peer_tls import make_pki, tls_flags
    return ["--tls-cert", p["cert"], "--tls-key", p["key"], "--tls-ca", p["ca"],
            "--tls-client-auth", "require"] + tls_flags(make_pki(ctx, "peers"), node_id) + \
        ["--acl-file", acl, "--peer-user", "peer", "--peer-password-file", pwfile]


def client_context(p):
    c = ssl.create_default_context(cafile=p["ca"])
    c.load_cert_chain(p["cert"], p["key"])
    return c


def conn(s, user="admin", timeout=10.0):
    c = Conn(s.port, timeout=timeout, ssl_context=s.tls)
    expect_ok(c.call("AUTH", user, user + "pw"), "AUTH %s" % user)
    return c


def info(s):
    try:
        with conn(s, timeout=2.0) as c:
            r = c.call("CLUSTER.INFO")
            return None if isinstance(r, RespError) else as_map(r)
    except (OSError, ConnectionClosed, ReplyTimeout, AssertionError):
        return None


def leader_of(servers, timeout=30.0):
    def find():
        ls = [s for s in servers if s.running() and
              (lambda i: i and i.get("ready") == 1 and text(i.get("role")) == "leader")(info(s))]
        return ls[0] if len(ls) == 1 else None
    return wait_until(find, timeout=timeout, interval=0.1, what="a ready leader")


def members(s):
    with conn(s) as c:
        return {m["id"]: (text(m["client_address"]), text(m["role"]))
                for m in (as_map(x) for x in c.call("CLUSTER.MEMBERS"))}


def node(ctx, i, p, acl, pwfile, args):
    s = new_server(ctx, i)
    s.extra_args = list(args) + TIMING + flags(ctx, p, acl, pwfile, i)
    s.tls = client_context(p)
    return s


def secure_cluster(ctx):
    acl, good, _ = _acl_files(ctx)
    p = pki(ctx, "node")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers] + TIMING + flags(ctx, p, acl, good, s.node_id)
        s.tls = client_context(p)
        s.start(wait=False)
    return servers, p, acl, good


def all_known(leader, servers):
    want = {s.node_id: "127.0.0.1:%d" % s.port for s in servers}
    return {i: a for i, (a, _) in members(leader).items()} == want


def test_tls_cluster_announces_redirects_joins_and_refuses_a_wrong_ca(ctx):
    servers, p, acl, good = secure_cluster(ctx)
    leader = leader_of(servers)
    # The followers' CLUSTER.ANNOUNCE went over TLS (a plain one would be a failed handshake).
    wait_until(lambda: all_known(leader, servers), timeout=30, interval=0.2,
               what="the leader knows every member's client address")
    with conn(leader, "app") as c:
        expect_int(c.call("PUT", "k", "v1"))
    for f in (s for s in servers if s is not leader):
        with conn(f, "app") as c:
            eq(expect_err(c.call("PUT", "k", "v2"), "NOTLEADER").text,
               "NOTLEADER 127.0.0.1:%d" % leader.port, "node %d's redirect" % f.node_id)

    # A 4th node joins over TLS (through a follower: the -NOTLEADER answer is followed).
    via = [s for s in servers if s is not leader][0]
    n4 = node(ctx, 4, p, acl, good, ["--join", "127.0.0.1:%d" % via.port])
    n4.start(wait=False)

    def joined():
        m = members(leader)
        return m.get(4) == ("127.0.0.1:%d" % n4.port, "follower")
    wait_until(joined, timeout=45, interval=0.2, what="node 4 a voter with its client address")
    for s in servers:
        eq(metric(s, "fencelock_tls_handshake_failures_total"), 0,
           "node %d: failed handshakes" % s.node_id)

    # A 5th node whose --tls-ca is another CA cannot verify the members: refused, logged with
    # what to check, retried after 2 s, 4 s, ... (not every second), never a member.
    bad = pki(ctx, "foreign", ca="otherca")
    n5 = node(ctx, 5, bad, acl, good, ["--join", "127.0.0.1:%d" % leader.port])
    n5.start(wait=False)
    line = "join to 127.0.0.1:%d: TLS handshake failed: certificate verify failed" % leader.port
    hint = "the server's certificate must chain to --tls-ca"
    wait_until(lambda: line in n5.log_text() and hint in n5.log_text(), timeout=20,
               what="the refused join and the hint logged")
    time.sleep(5.0)
    attempts = n5.log_text().count("TLS handshake failed")
    assert 1 <= attempts <= 3, (attempts, n5.log_tail())
    assert 5 not in members(leader), "node 5 must not have joined"


test_tls_cluster_announces_redirects_joins_and_refuses_a_wrong_ca.timeout = 150


def test_peer_tls_sighup_reloads_certificates_for_new_connections(ctx):
    """The --peer-tls-* files of every member replaced by a new CA's and SIGHUP: new Raft
    connections use them, so a node with the new CA's certificate joins (the members verify it
    against the new CA, it verifies them), and a restarted follower reconnects."""
    from cluster import ready_leader
    from test_peer_tls import make_pki, node_cert, tls_flags
    old, new = make_pki(ctx, "old"), make_pki(ctx, "new")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    live = {}
    for s in servers:
        live[s.node_id] = {k: ctx.tmp("live%d-%s" % (s.node_id, k)) for k in ("cert", "key", "ca")}
        for k, path in live[s.node_id].items():
            shutil.copyfile(node_cert(old, s.node_id)[k], path)
        os.chmod(live[s.node_id]["key"], 0o600)  # a secret: group/world-readable is refused
        s.extra_args = ["--initial-cluster", members] + TIMING + \
            ["--peer-tls-cert", live[s.node_id]["cert"], "--peer-tls-key",
             live[s.node_id]["key"], "--peer-tls-ca", live[s.node_id]["ca"]]
        s.start(wait=False)
    leader = ready_leader(servers, timeout=30)
    for s in servers:
        for k, path in live[s.node_id].items():
            shutil.copyfile(node_cert(new, s.node_id)[k], path)
    for s in servers:
        os.kill(s.proc.pid, signal.SIGHUP)
    for s in servers:
        wait_until(lambda s=s: "SIGHUP: peer TLS certificate, key and CA reloaded"
                   in s.log_text(), timeout=10, what="node %d reloaded" % s.node_id)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + TIMING +
                    tls_flags(new, 4))
    n4.start(wait=False)

    def voter():
        with Conn(leader.port, timeout=5) as c:
            r = c.call("CLUSTER.MEMBERS")
        return any(as_map(m)["id"] == 4 and text(as_map(m)["role"]) == "follower" for m in r)
    wait_until(voter, timeout=45, interval=0.3, what="node 4 (new CA) a voter")
    f = [s for s in servers if s is not leader][0]
    f.kill9()
    f.start(wait=False)
    with Conn(leader.port, timeout=5) as c:
        expect_int(c.call("PUT", "after", "reload"))

    def caught_up():
        try:
            with Conn(f.port, timeout=2) as c:
                expect_ok(c.call("READONLY"))
                return c.call("GET", "after") == b"reload"
        except (OSError, ConnectionClosed, ReplyTimeout):
            return False
    wait_until(caught_up, timeout=30, interval=0.2, what="the restarted follower caught up")


test_peer_tls_sighup_reloads_certificates_for_new_connections.timeout = 120


class FakeMember:
    """A TLS listener posing as a member's client port with the certificate `p`: it records
    the plaintext of every connection whose handshake completed (so whether the peer password
    reached it) and the number of connections it saw."""

    def __init__(self, p):
        import socket
        import threading
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(p["cert"], p["key"])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received, self.connections, self.stop = b"", 0, False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        deadline = time.monotonic() + 120  # bounded even if the test forgets to close
        while not self.stop and time.monotonic() < deadline:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            raw.settimeout(3)
            try:
                with self.ctx.wrap_socket(raw, server_side=True) as s:
                    while True:
                        b = s.recv(4096)
                        if not b:
                            break
                        self.received += b
            except (OSError, ssl.SSLError):
                pass
            finally:
                raw.close()

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.sock.close()


def test_member_calls_verify_the_address_before_sending_the_peer_password(ctx):
    """Before the fix, this node's --join / CLUSTER.ANNOUNCE checked only the server certificate's
    chain (and fell back to the system CAs without --tls-ca), then sent `AUTH peer PASSWORD`.
    A fake member at 127.0.0.1 with a certificate of another CA, or of the right CA but naming
    another address (10.1.2.3, elsewhere.example), never receives it; one whose certificate
    names 127.0.0.1 does (the control). A node of several members with --tls-cert and no
    --tls-ca refuses to start."""
    acl, good, _ = _acl_files(ctx)
    p = pki(ctx, "node")
    cases = [("foreign CA", pki(ctx, "fake-foreign", ca="otherca"), False)]
    d = ctx.tmp("pki")
    _key_csr(d, "fake-name", "127.0.0.1")
    _sign(d, "fake-name", "ca", "subjectAltName=IP:10.1.2.3,DNS:elsewhere.example\n"
          "extendedKeyUsage=serverAuth,clientAuth")
    cases.append(("another address", {k: os.path.join(d, v) for k, v in
                                      (("cert", "fake-name.crt"), ("key", "fake-name.key"))},
                  False))
    cases.append(("the right address", p, True))
    for i, (what, cert, gets) in enumerate(cases):
        fake = FakeMember(cert)
        try:
            n = new_server(ctx, 10 + i, ["--join", "127.0.0.1:%d" % fake.port] + TIMING + [
                "--tls-cert", p["cert"], "--tls-key", p["key"], "--tls-ca", p["ca"],
                "--acl-file", acl, "--peer-user", "peer", "--peer-password-file", good])
            n.start(wait=False)
            if gets:
                wait_until(lambda: b"AUTH" in fake.received, timeout=30, interval=0.1,
                           what="the control member got the AUTH")
                assert b"peerpw" in fake.received
            else:
                line = "join to 127.0.0.1:%d: TLS handshake failed" % fake.port
                wait_until(lambda: line in n.log_text(), timeout=30, interval=0.1,
                           what="the join to a member with %s refused" % what)
                assert fake.connections >= 1
                eq(fake.received, b"", "what a member with %s received" % what)
            n.stop()
        finally:
            fake.close()
    import subprocess
    r = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d"), "--join", "127.0.0.1:1",
                        "--tls-cert", p["cert"], "--tls-key", p["key"]],
                       capture_output=True, timeout=30)
    eq(r.returncode, 2, "exit status; stderr %r" % r.stderr)
    assert b"needs --tls-ca" in r.stderr, r.stderr


test_member_calls_verify_the_address_before_sending_the_peer_password.timeout = 150


def _guide_commands():
    """The shell commands of docs/security.md "A TLS cluster, step by step" that make the
    certificates (openssl and printf lines, continuations joined): (once, per node) lists."""
    import re
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "docs", "security.md")) as f:
        doc = f.read()
    start = doc.index("## A TLS cluster, step by step")
    section = doc[start:doc.index("\n## ", start + 1)]
    cmds, cur = [], ""
    for line in section.splitlines():
        if not line.startswith("       ") or not line.strip():
            continue
        cur += line.strip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        if cur.startswith(("openssl ", "printf ")):
            cmds.append(cur)
        cur = ""
    per_node = re.compile(r"node-?N|10\.0\.0\.N")
    return [c for c in cmds if not per_node.search(c)], [c for c in cmds if per_node.search(c)]


def test_security_guide_commands_make_a_working_two_ca_cluster(ctx):
    """The guide's openssl commands, run as written (10.0.0.N -> 127.0.0.1, N -> the node id),
    make the files a 3-node cluster with every layer on starts with: it elects, every member's
    client address is announced, writes commit, and no Raft connection is dropped."""
    import re
    import subprocess
    once, per_node = _guide_commands()
    assert len(once) == 2 and len(per_node) == 6, (once, per_node)
    d = ctx.tmp("guide")
    os.makedirs(d, exist_ok=True)
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    cmds = once + [re.sub(r"(node-?)N", r"\g<1>%d" % s.node_id,
                          c.replace("10.0.0.N", "127.0.0.1")) for s in servers for c in per_node]
    for c in cmds:
        r = subprocess.run(["bash", "-ec", c], cwd=d, capture_output=True, timeout=60)
        assert r.returncode == 0, (c, r.stderr)
    acl, good, _ = _acl_files(ctx)
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    f = {k: os.path.join(d, k) for k in ("client-ca.pem", "peer-ca.pem")}
    for s in servers:
        n = "node%d" % s.node_id
        s.extra_args = ["--initial-cluster", peers] + TIMING + [
            "--tls-cert", os.path.join(d, n + ".pem"), "--tls-key", os.path.join(d, n + ".key"),
            "--tls-ca", f["client-ca.pem"], "--tls-client-auth", "require",
            "--peer-tls-cert", os.path.join(d, n + "-peer.pem"),
            "--peer-tls-key", os.path.join(d, n + "-peer.key"),
            "--peer-tls-ca", f["peer-ca.pem"],
            "--acl-file", acl, "--peer-user", "peer", "--peer-password-file", good]
        s.tls = client_context({"cert": os.path.join(d, "node1.pem"),
                                "key": os.path.join(d, "node1.key"), "ca": f["client-ca.pem"]})
        s.start(wait=False)
    leader = leader_of(servers)
    wait_until(lambda: all_known(leader, servers), timeout=30, interval=0.2,
               what="the leader knows every member's client address")
    with conn(leader, "app") as c:
        expect_int(c.call("PUT", "k", "v"))
    for s in servers:
        eq(metric(s, "fencelock_tls_handshake_failures_total"), 0,
           "node %d: failed handshakes" % s.node_id)
        from test_raft_port import rejected
        got = rejected(s)
        for reason in ("tls", "identity"):
            eq(got.get(reason, 0), 0,
               "node %d: Raft connections dropped as %s" % (s.node_id, reason))


test_security_guide_commands_make_a_working_two_ca_cluster.timeout = 120
