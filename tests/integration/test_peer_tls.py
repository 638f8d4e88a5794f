# SPDX-License-Identifier: Apache-2.0
"""Mutual TLS on the Raft port: --peer-tls-cert/-key/-ca. A cluster with peer TLS
elects, replicates and survives losing its leader; a process whose certificate comes from
another CA, a plain-text libraft peer, a TLS client without a certificate and random bytes
are dropped (fencelock_raft_rejected_total{reason="tls"}) without moving a term or stopping a
write; a node started without the flags cannot talk to nodes that have them. Every
member has its own certificate naming it (fencelock-node-N, --peer-cert-name) with serverAuth
and clientAuth; a certificate that names another id, or an application's clientAuth-only one,
is dropped as identity in and out; the peer CA may not be the client CA; TLS handshakes on the
port are capped. Certificates are made with the openssl command in the test's temp dir."""

import os
import random
import socket
import ssl
import subprocess
import time

from cluster import TIMING, info, info_now, new_server, ready_leader, start_cluster
from helpers import eq, expect_int, expect_ok, ok, wait_until
from resp import Conn, as_map, text
from test_raft_port import frame, handshake, locks_still_granted, rejected, \
    send_and_wait_closed, u64


def _openssl(*args, cwd=None):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60,
                   cwd=cwd)


EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
PEER_EXT = "extendedKeyUsage=serverAuth,clientAuth"


def make_pki(ctx, name):
    """A peer CA; node certificates are made on demand by node_cert (named fencelock-node-N,
    both EKUs, as docs/security.md's guide makes them)."""
    d = ctx.tmp("pki-" + name)
    os.makedirs(d, exist_ok=True)
    ca, ca_key = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    if not os.path.exists(ca):
        _openssl("req", "-x509", *EC, "-keyout", ca_key, "-out", ca, "-days", "2",
                 "-subj", "/CN=%s CA" % name)
    return {"dir": d, "ca": ca, "ca_key": ca_key, "name": name}


def issue(pki, label, cn, ext):
    """A key and a certificate signed by pki's CA, with the extension lines `ext` ("" none):
    {"cert", "key", "ca"}. Made once per label."""
    d = pki["dir"]
    cert, key, csr, extf = (os.path.join(d, label + x) for x in (".pem", ".key", ".csr", ".ext"))
    if not os.path.exists(cert):
        _openssl("req", *EC, "-keyout", key, "-out", csr, "-subj", "/CN=" + cn)
        args = ["x509", "-req", "-in", csr, "-CA", pki["ca"], "-CAkey", pki["ca_key"],
                "-CAcreateserial", "-out", cert, "-days", "2"]
        if ext:
            with open(extf, "w") as f:
                f.write(ext + "\n")
            args += ["-extfile", extf]
        _openssl(*args)
    return {"cert": cert, "key": key, "ca": pki["ca"]}


def node_cert(pki, node_id):
    """Member node_id's peer certificate: SAN DNS:fencelock-node-N, serverAuth+clientAuth."""
    n = "fencelock-node-%d" % node_id
    return issue(pki, "node%d" % node_id, n,
                 "subjectAltName=DNS:%s,IP:127.0.0.1\n%s" % (n, PEER_EXT))


def tls_flags(pki, node_id):
    c = node_cert(pki, node_id)
    return ["--peer-tls-cert", c["cert"], "--peer-tls-key", c["key"], "--peer-tls-ca", c["ca"]]


def start_tls_cluster(ctx, pki, n=3, extra=(), ids=None):
    """As cluster.start_cluster, each node with its own named peer certificate."""
    servers = [new_server(ctx, i) for i in (ids or range(1, n + 1))]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING + tls_flags(pki, s.node_id) + \
            list(extra)
        s.start(wait=False)
    return servers


def tls_cluster(ctx, n=3, extra=()):
    pki = make_pki(ctx, "good")
    return start_tls_cluster(ctx, pki, n, extra), pki


def tls_count(srv):
    return rejected(srv).get("tls", 0)


def put_ok(servers, key, value):
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        expect_int(c.call("PUT", key, value), "PUT %s" % key)
    return leader


def replicated(srv, key, value, timeout=15.0):
    """The follower `srv` serves `value` for `key` (READONLY reads its own state)."""
    with Conn(srv.port, timeout=5) as c:
        expect_ok(c.call("READONLY"))
        wait_until(lambda: c.call("GET", key) == value, timeout=timeout, interval=0.05,
                   what="node %d has %s" % (srv.node_id, key))


def test_peer_tls_cluster_elects_replicates_and_reelects_after_kill9(ctx):
    servers, _ = tls_cluster(ctx)
    leader = put_ok(servers, "k1", b"v1")
    for s in servers:
        replicated(s, "k1", b"v1")
    leader.kill9()
    rest = [s for s in servers if s is not leader]
    new = put_ok(rest, "k2", b"v2")
    assert new is not leader
    for s in rest:
        replicated(s, "k2", b"v2")
        eq(tls_count(s), 0, "node %d dropped no TLS connection" % s.node_id)
    locks_still_granted(rest)


def kill_a_follower(servers):
    """kill -9 a follower once a write committed; returns (victim, the others, their leader
    after a second write)."""
    ready_leader(servers)
    put_ok(servers, "before", b"1")
    victim = servers[2]
    if text(info(victim).get("role")) == "leader":
        victim = servers[1]
    victim.kill9()
    rest = [s for s in servers if s is not victim]
    return victim, rest, put_ok(rest, "after-kill", b"1")


def test_peer_tls_foreign_ca_impostor_cannot_join_or_disturb(ctx):
    """Node 3 is replaced by an impostor with node 3's id, address and configuration but a
    certificate from another CA. Without the CA check it would be node 3 (the leader sends it
    the log); with it, it never hears of a leader, the cluster's terms stay put and writes
    keep succeeding on the two real nodes."""
    servers, _ = tls_cluster(ctx)
    victim, rest, leader = kill_a_follower(servers)
    terms = {s.node_id: info_now(s)["term"] for s in rest}
    before = {s.node_id: tls_count(s) for s in rest}
    foreign = make_pki(ctx, "foreign")
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    imp = new_server(ctx, victim.node_id)
    imp.raft_port = victim.raft_port
    imp.extra_args = ["--initial-cluster", members] + TIMING + \
        tls_flags(foreign, victim.node_id)
    imp.start(wait=False)
    deadline = time.monotonic() + 4.0
    i = 0
    while time.monotonic() < deadline and i < 400:  # writes keep succeeding meanwhile
        with Conn(leader.port) as c:
            expect_int(c.call("PUT", "during", str(i)), "PUT during the impostor's tries")
        i += 1
        time.sleep(0.02)
    assert imp.running(), "the impostor runs (it is refused, not crashed)"
    ii = info(imp) or {}
    assert ii.get("leader_id", 0) in (0, None, victim.node_id) and ii.get("ready") != 1, \
        "the impostor never learned of the cluster's leader: %r" % (ii,)
    for s in rest:
        eq(info_now(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
        assert tls_count(s) > before[s.node_id], \
            "node %d refused the impostor's TLS (count %d)" % (s.node_id, tls_count(s))
    with Conn(imp.port, timeout=5) as c:
        expect_ok(c.call("READONLY"))
        eq(c.call("GET", "before"), None, "the impostor got none of the log")
    log = leader.log_text()
    assert "dropped connection from 127.0.0.1:" in log and ": tls (" in log, \
        "a refused TLS connection is logged with the OpenSSL reason"
    locks_still_granted(rest)


def _tls_client(pki=None, ca=None):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False
    c.verify_mode = ssl.CERT_REQUIRED
    c.load_verify_locations(ca)
    if pki:
        c.load_cert_chain(pki["cert"], pki["key"])
    return c


def send_tls_and_wait_closed(port, tctx, data):
    """TLS, then `data`, then read until the node closes. True if the handshake and the
    write went through on our side (TLS 1.3 clients finish before the server checked them)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    try:
        s = tctx.wrap_socket(raw, do_handshake_on_connect=False)
        try:
            s.do_handshake()
            s.sendall(data)
            while s.recv(4096):
                pass
        except (ssl.SSLError, OSError):
            pass
    finally:
        raw.close()


def test_peer_tls_plain_peer_garbage_and_bad_tls_change_nothing(ctx):
    """Sent to every node: a plain-text libraft peer forging a RequestVote with a huge term
    (the issue's attack), random bytes, a TLS client with no certificate, one with a foreign
    CA's certificate. Each is dropped as tls; terms stay, locks work. A TLS peer with a good
    certificate that sends a malformed frame is judged by the frame validator behind TLS."""
    servers, pki = tls_cluster(ctx)
    ready_leader(servers)
    foreign = make_pki(ctx, "foreign")
    terms = {s.node_id: info_now(s)["term"] for s in servers}
    rnd = random.Random(18)
    for s in servers:
        before = rejected(s)
        peer = 1 + s.node_id % 3
        vote = handshake(peer, b"127.0.0.1:1") + frame(3, u64(10**6, peer, 10**6, 10**6, 0),
                                                       version=2)
        send_and_wait_closed(s.raft_port, vote)
        send_and_wait_closed(s.raft_port, bytes(rnd.randrange(256) for _ in range(4096)))
        send_tls_and_wait_closed(s.raft_port, _tls_client(ca=pki["ca"]), vote)
        send_tls_and_wait_closed(s.raft_port, _tls_client(node_cert(foreign, peer), pki["ca"]),
                                 vote)
        send_tls_and_wait_closed(s.raft_port, _tls_client(node_cert(pki, peer), pki["ca"]),
                                 handshake(peer, b"x:1") + frame(0, u64(0)))
        after = rejected(s)
        eq(after.get("tls", 0) - before.get("tls", 0), 4, "node %d: tls drops" % s.node_id)
        eq(after.get("type", 0) - before.get("type", 0), 1,
           "node %d: the frame behind good TLS judged by the validator" % s.node_id)
        assert s.running(), "node %d died" % s.node_id
    for s in servers:
        eq(info_now(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
    locks_still_granted(servers)


def test_peer_tls_node_without_flags_cannot_talk_to_tls_nodes(ctx):
    """Two TLS nodes and a plain one share a configuration: the TLS pair elects and commits,
    the plain node never hears of them, and each side counts the other's attempts."""
    pki = make_pki(ctx, "good")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING + \
            (tls_flags(pki, s.node_id) if s.node_id != 3 else [])
        s.start(wait=False)
    put_ok(servers[:2], "k", b"v")
    plain = servers[2]
    wait_until(lambda: tls_count(servers[0]) + tls_count(servers[1]) > 0 and
               rejected(plain).get("protocol", 0) > 0, timeout=15, interval=0.1,
               what="both sides refused the other")
    ii = info(plain) or {}
    assert ii.get("ready") != 1 and ii.get("leader_id", 0) in (0, None, 3), ii
    with Conn(plain.port, timeout=5) as c:
        expect_ok(c.call("READONLY"))
        eq(c.call("GET", "k"), None, "the plain node got none of the log")


def test_peer_tls_flags_all_three_or_none_and_bad_files_refuse_to_start(ctx):
    pki = node_cert(make_pki(ctx, "good"), 1)
    base = [ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--http-listen", "off"]
    p = subprocess.run(base + ["--peer-tls-cert", pki["cert"], "--peer-tls-ca", pki["ca"]],
                       capture_output=True, timeout=30)
    assert p.returncode != 0 and b"go together" in p.stderr, p
    os.chmod(pki["ca"], 0o600)  # passes the secret file check, to reach the key's parsing
    p = subprocess.run(base + ["--peer-tls-cert", pki["cert"], "--peer-tls-key", pki["ca"],
                               "--peer-tls-ca", pki["ca"], "--raft-listen", "127.0.0.1:1"],
                       capture_output=True, timeout=30)
    assert p.returncode != 0 and b"peer TLS: private key" in p.stdout + p.stderr, p


def test_peer_tls_relays_a_large_snapshot_to_a_joining_node(ctx):
    """A ~3 MiB InstallSnapshot crosses the TLS relay (libraft's writes outrun TCP: the relay
    stops reading libraft's socketpair end while its queue is full) and the receiving link's
    decryption into the validator's buffer: the joining node becomes a voter and serves every
    value byte for byte, and no connection is dropped. Sizes as in test_raft_port's
    snapshot test (libraft 0.22.1 leaks a snapshot that arrives during another's install)."""
    snap = ["--snapshot-threshold", "16", "--snapshot-trailing", "4", "--election-ms", "3000",
            "--heartbeat-ms", "100"]
    pki = make_pki(ctx, "good")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + snap + tls_flags(pki, s.node_id)
        s.start(wait=False)
    leader = ready_leader(servers)
    values = {}
    with Conn(leader.port, timeout=30) as c:
        for i in range(48):
            values["big%d" % i] = (b"%d:" % i) + bytes([65 + i % 26]) * (64 << 10)
            expect_int(c.call("PUT", "big%d" % i, values["big%d" % i]), "PUT big%d" % i)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + snap +
                    tls_flags(pki, 4))
    n4.start(wait=False)

    def voter():
        with Conn(leader.port, timeout=5) as c:
            ms = [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]
        return any(m["id"] == 4 and text(m["role"]) in ("leader", "follower") for m in ms)
    wait_until(voter, timeout=40, interval=0.2, what="node 4 a voter")
    with Conn(n4.port, timeout=10) as c:
        expect_ok(c.call("READONLY"))
        wait_until(lambda: c.call("GET", "big47") == values["big47"], timeout=20,
                   interval=0.1, what="node 4 caught up")
        for k, v in values.items():
            eq(c.call("GET", k), v, "node 4's %s" % k)
    assert "restored snapshot" in n4.log_text(), "node 4 got the state by InstallSnapshot"
    for s in servers + [n4]:
        eq(sum(rejected(s).values()), 0, "node %d dropped no connection" % s.node_id)


def test_peer_tls_stalled_tls_handshake_is_closed_at_the_deadline(ctx):
    """A connection that starts a TLS handshake and stalls is closed by the handshake deadline
    (5 s, the same as for libraft's handshake) and counted as handshake_timeout."""
    servers, _ = tls_cluster(ctx)
    ready_leader(servers)
    target = servers[0]
    before = rejected(target)
    s = socket.create_connection(("127.0.0.1", target.raft_port), timeout=20)
    try:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01")  # a ClientHello's first bytes
        t0 = time.monotonic()
        closed = False
        while time.monotonic() - t0 < 15 and not closed:
            try:
                closed = s.recv(4096) == b""
            except (ConnectionResetError, socket.timeout):
                closed = True
    finally:
        s.close()
    assert closed, "the node closed the stalled handshake"
    after = rejected(target)
    eq(after.get("handshake_timeout", 0) - before.get("handshake_timeout", 0), 1,
       "handshake_timeout count")
    eq(after.get("tls", 0) - before.get("tls", 0), 0, "not counted as tls")
    locks_still_granted(servers)


def _claim(port, tctx, peer_id, term):
    """The impersonation attack over TLS with `tctx`'s certificate: claim `peer_id` in libraft's
    handshake and send a RequestVote with a huge term, then read until the node closes."""
    vote = handshake(peer_id, b"127.0.0.1:1") + frame(3, u64(term, peer_id, term, term, 0),
                                                      version=2)
    send_tls_and_wait_closed(port, tctx, vote)


def test_peer_tls_client_certificate_cannot_speak_as_a_member(ctx):
    """Seen before the fix: an application certificate (clientAuth only) from the peer CA
    completed TLS on the Raft port, claimed an id and deposed the leader with one RequestVote.
    Now a certificate without serverAuth+clientAuth, or one that names another member's id,
    is dropped (reason identity) before its handshake reaches libraft: every node's term and
    leader stay, writes keep working. A member's own named certificate still gets through to
    the validator (its malformed frame is judged there: reason type)."""
    servers, pki = tls_cluster(ctx)
    leader = put_ok(servers, "before", b"1")
    terms = {s.node_id: info_now(s)["term"] for s in servers}
    app = issue(pki, "app", "app", "extendedKeyUsage=clientAuth")
    bare = issue(pki, "bare", "fencelock-node-2", "")  # names node 2, no EKU at all
    other = node_cert(pki, 2)  # a real member's certificate: both EKUs, names node 2
    for s in servers:
        before = rejected(s)
        for peer in (9, 1 + s.node_id % 3):  # a made-up id, then a real member's
            _claim(s.raft_port, _tls_client(app, pki["ca"]), peer, 10**6)
        mine = 1 + s.node_id % 3  # another member's id
        _claim(s.raft_port, _tls_client(bare, pki["ca"]), 2 if s.node_id != 2 else mine, 10**6)
        for peer in (i for i in (1, 3) if i != s.node_id):  # node 2's certificate as 1 or 3
            _claim(s.raft_port, _tls_client(other, pki["ca"]), peer, 10**6)
        send_tls_and_wait_closed(s.raft_port, _tls_client(node_cert(pki, mine), pki["ca"]),
                                 handshake(mine, b"x:1") + frame(0, u64(0)))
        after = rejected(s)
        claims = 3 + (2 if s.node_id == 2 else 1)
        eq(after.get("identity", 0) - before.get("identity", 0), claims,
           "node %d: identity drops" % s.node_id)
        eq(after.get("type", 0) - before.get("type", 0), 1,
           "node %d: the member's own certificate reached the validator" % s.node_id)
        assert s.running(), "node %d died" % s.node_id
    for s in servers:
        eq(info_now(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
    eq(put_ok(servers, "after", b"2"), leader, "the leader was not deposed")
    assert "identity (certificate does not name Raft id" in leader.log_text() or \
        "identity (certificate lacks extendedKeyUsage" in leader.log_text(), leader.log_tail()
    locks_still_granted(servers)


def test_peer_tls_own_certificate_must_name_this_node_and_have_both_ekus(ctx):
    """A node refuses to start with a certificate its peers would refuse: another member's, or
    a client certificate."""
    pki = make_pki(ctx, "good")
    base = [ctx.binary, "--id", "1", "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--raft-listen", "127.0.0.1:1", "--http-listen", "off"]
    two = node_cert(pki, 2)
    p = subprocess.run(base + ["--peer-tls-cert", two["cert"], "--peer-tls-key", two["key"],
                               "--peer-tls-ca", pki["ca"]], capture_output=True, timeout=30)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and b"does not name Raft id 1 (fencelock-node-1)" in out, p
    app = issue(pki, "app1", "fencelock-node-1", "extendedKeyUsage=clientAuth")
    p = subprocess.run(base + ["--peer-tls-cert", app["cert"], "--peer-tls-key", app["key"],
                               "--peer-tls-ca", pki["ca"]], capture_output=True, timeout=30)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and b"lacks extendedKeyUsage serverAuth and clientAuth" in out, p


def test_peer_cert_name_pattern_binds_other_names(ctx):
    """--peer-cert-name: a cluster whose certificates name raft-N.example elects and commits;
    a bad pattern is refused at start."""
    pki = make_pki(ctx, "pattern")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        n = "raft-%d.example" % s.node_id
        c = issue(pki, "r%d" % s.node_id, n, "subjectAltName=DNS:%s\n%s" % (n, PEER_EXT))
        s.extra_args = ["--initial-cluster", members] + TIMING + [
            "--peer-tls-cert", c["cert"], "--peer-tls-key", c["key"], "--peer-tls-ca", c["ca"],
            "--peer-cert-name", "raft-%d.example"]
        s.start(wait=False)
    put_ok(servers, "k", b"v")
    for s in servers:
        replicated(s, "k", b"v")
        eq(rejected(s).get("identity", 0), 0, "node %d: identity drops" % s.node_id)
    for bad in ("fencelock-node", "node-%d-%d", "a%sb%d", "x y%d"):
        p = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d"), "--peer-cert-name", bad],
                           capture_output=True, timeout=30)
        eq(p.returncode, 2, "--peer-cert-name %r" % bad)
        assert b"bad value for --peer-cert-name" in p.stderr, p.stderr


def _two_ca_flags(ctx, shared):
    """Client TLS with --tls-ca and peer TLS for node 1: the same CA file, a copy of it, or
    a second CA."""
    pki = make_pki(ctx, "peers")
    c = node_cert(pki, 1)
    if shared == "same":
        client_ca = pki["ca"]
    elif shared == "copy":
        client_ca = ctx.tmp("client-ca-copy.pem")
        with open(pki["ca"], "rb") as f, open(client_ca, "wb") as g:
            g.write(f.read())
    else:
        client_ca = make_pki(ctx, "clients")["ca"]
    return ["--tls-cert", c["cert"], "--tls-key", c["key"], "--tls-ca", client_ca,
            "--peer-tls-cert", c["cert"], "--peer-tls-key", c["key"], "--peer-tls-ca", pki["ca"]]


def test_peer_ca_shared_with_the_client_ca_refuses_to_start_unless_said(ctx):
    base = [ctx.binary, "--id", "1", "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--raft-listen", "127.0.0.1:1", "--http-listen", "off"]
    for shared in ("same", "copy"):
        p = subprocess.run(base + _two_ca_flags(ctx, shared), capture_output=True, timeout=30)
        eq(p.returncode, 2, "exit status with a %s CA file: %r" % (shared, p.stderr))
        assert b"trust the same certificate" in p.stderr and \
            b"--peer-ca-shared-with-clients" in p.stderr, p.stderr
    for flags in (_two_ca_flags(ctx, "copy") + ["--peer-ca-shared-with-clients"],
                  _two_ca_flags(ctx, "two")):
        s = new_server(ctx, 1, flags)
        s.tls = _tls_client(ca=make_pki(ctx, "peers")["ca"])  # the port's certificate's CA
        s.start()  # waits until it answers over TLS
        assert s.running()
        s.stop()


def test_peer_tls_handshake_flood_is_capped_and_the_cluster_commits(ctx):
    """TLS handshakes on the Raft port were unbounded before the caps. With
    --raft-max-handshakes-per-address 4 (and --raft-max-handshakes 6): 12 connections that
    start a TLS handshake and stall; the 4 that fit stay until the deadline (30 s here), the
    other 8 are closed as they are accepted, before any TLS work (handshake_cap). The members'
    own links are through their handshakes and not counted: a PUT commits meanwhile, no term
    moves and no member's connection is dropped as tls or identity."""
    from test_raft_port import closed_by
    servers, _ = tls_cluster(ctx, extra=["--raft-max-handshakes-per-address", "4",
                                         "--raft-max-handshakes", "6",
                                         "--raft-handshake-timeout", "30000"])
    leader = put_ok(servers, "k0", b"v")
    target = [s for s in servers if s is not leader][0]
    terms = {s.node_id: info_now(s)["term"] for s in servers}
    socks = []
    try:
        # From 127.0.0.2: the members dial from 127.0.0.1, so a member link that reconnects
        # during the flood (a loaded machine) is not caught by the per-address cap meant for
        # the flood (4 + its reconnect would fill it and count a 9th handshake_cap).
        for _ in range(12):
            c = socket.create_connection(("127.0.0.1", target.raft_port), timeout=10,
                                         source_address=("127.0.0.2", 0))
            c.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01")  # a ClientHello's first bytes
            socks.append(c)
        closed = closed_by(socks, target, "handshake_cap", 8)
        eq(len(closed), 8, "stalled TLS handshakes closed at once (4 fit the cap)")
        eq(rejected(target).get("handshake_cap", 0), 8, "handshake_cap count")
        eq(put_ok(servers, "k1", b"v"), leader, "a PUT during the flood, same leader")
    finally:
        for c in socks:
            c.close()
    wait_until(lambda: tls_count(target) == 4, timeout=10, interval=0.1,
               what="our 4 half-done handshakes counted as tls once we closed them")
    for s in servers:
        eq(info_now(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
        eq(tls_count(s) - (4 if s is target else 0) + rejected(s).get("identity", 0), 0,
           "node %d: no member connection dropped" % s.node_id)


def test_peer_tls_outbound_link_to_a_member_with_another_ids_certificate_is_dropped(ctx):
    """Node 3's Raft address is taken over by a node whose certificate (peer CA, both EKUs)
    names node 4: the members dialling id 3 there drop the connection as identity before
    libraft's handshake is sent, so the impostor gets none of the log; writes go on."""
    servers, pki = tls_cluster(ctx)
    victim, rest, leader = kill_a_follower(servers)
    imp = new_server(ctx, 4)
    imp.raft_port = victim.raft_port
    imp.extra_args = TIMING + tls_flags(pki, 4)  # a one-node cluster of its own, id 4
    imp.start()
    wait_until(lambda: rejected(leader).get("identity", 0) > 0, timeout=20, interval=0.1,
               what="the leader refused the certificate of id 4 at id 3's address")
    assert "certificate does not name Raft id %d" % victim.node_id in leader.log_text()
    with Conn(imp.port, timeout=5) as c:
        expect_ok(c.call("READONLY"))
        eq(c.call("GET", "before"), None, "the impostor got none of the log")
    put_ok(rest, "during", b"1")
    locks_still_granted(rest)
