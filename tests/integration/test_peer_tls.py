# SPDX-License-Identifier: Apache-2.0
"""Mutual TLS on the Raft port (issue 18): --peer-tls-cert/-key/-ca. A cluster with peer TLS
elects, replicates and survives losing its leader; a process whose certificate comes from
another CA, a plain-text libraft peer, a TLS client without a certificate and random bytes
are dropped (fencelock_raft_rejected_total{reason="tls"}) without moving a term or stopping a
write; a node started without the flags cannot talk to nodes that have them. Certificates
are made with the openssl command in the test's temp dir."""

import os
import random
import socket
import ssl
import subprocess
import time

from cluster import TIMING, info, new_server, ready_leader, start_cluster
from helpers import eq, expect_int, expect_ok, ok, wait_until
from resp import Conn, as_map, text
from test_raft_port import frame, handshake, locks_still_granted, rejected, \
    send_and_wait_closed, u64


def _openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)


def make_pki(ctx, name):
    """A CA and one node certificate it signed (EC P-256, no names checked): the flags."""
    d = ctx.tmp("pki-" + name)
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    cert, key, csr = (os.path.join(d, f) for f in ("node.pem", "node.key", "node.csr"))
    _openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
             "-subj", "/CN=%s CA" % name)
    _openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=%s node" % name)
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "2")
    return {"cert": cert, "key": key, "ca": ca}


def tls_flags(pki):
    return ["--peer-tls-cert", pki["cert"], "--peer-tls-key", pki["key"],
            "--peer-tls-ca", pki["ca"]]


def tls_cluster(ctx, n=3, extra=()):
    pki = make_pki(ctx, "good")
    return start_cluster(ctx, n, extra=tls_flags(pki) + list(extra)), pki


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


def test_peer_tls_foreign_ca_impostor_cannot_join_or_disturb(ctx):
    """Node 3 is replaced by an impostor with node 3's id, address and configuration but a
    certificate from another CA. Without the CA check it would be node 3 (the leader sends it
    the log); with it, it never hears of a leader, the cluster's terms stay put and writes
    keep succeeding on the two real nodes."""
    servers, _ = tls_cluster(ctx)
    ready_leader(servers)
    put_ok(servers, "before", b"1")
    victim = servers[2]
    if text(info(victim).get("role")) == "leader":
        victim = servers[1]
    victim.kill9()
    rest = [s for s in servers if s is not victim]
    leader = put_ok(rest, "after-kill", b"1")
    terms = {s.node_id: info(s)["term"] for s in rest}
    before = {s.node_id: tls_count(s) for s in rest}
    foreign = make_pki(ctx, "foreign")
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    imp = new_server(ctx, victim.node_id)
    imp.raft_port = victim.raft_port
    imp.extra_args = ["--initial-cluster", members] + TIMING + tls_flags(foreign)
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
        eq(info(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
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
    terms = {s.node_id: info(s)["term"] for s in servers}
    rnd = random.Random(18)
    for s in servers:
        before = rejected(s)
        peer = 1 + s.node_id % 3
        vote = handshake(peer, b"127.0.0.1:1") + frame(3, u64(10**6, peer, 10**6, 10**6, 0),
                                                       version=2)
        send_and_wait_closed(s.raft_port, vote)
        send_and_wait_closed(s.raft_port, bytes(rnd.randrange(256) for _ in range(4096)))
        send_tls_and_wait_closed(s.raft_port, _tls_client(ca=pki["ca"]), vote)
        send_tls_and_wait_closed(s.raft_port, _tls_client(foreign, pki["ca"]), vote)
        send_tls_and_wait_closed(s.raft_port, _tls_client(pki, pki["ca"]),
                                 handshake(peer, b"x:1") + frame(0, u64(0)))
        after = rejected(s)
        eq(after.get("tls", 0) - before.get("tls", 0), 4, "node %d: tls drops" % s.node_id)
        eq(after.get("type", 0) - before.get("type", 0), 1,
           "node %d: the frame behind good TLS judged by the validator" % s.node_id)
        assert s.running(), "node %d died" % s.node_id
    for s in servers:
        eq(info(s)["term"], terms[s.node_id], "node %d's term" % s.node_id)
    locks_still_granted(servers)


def test_peer_tls_node_without_flags_cannot_talk_to_tls_nodes(ctx):
    """Two TLS nodes and a plain one share a configuration: the TLS pair elects and commits,
    the plain node never hears of them, and each side counts the other's attempts."""
    pki = make_pki(ctx, "good")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING + \
            (tls_flags(pki) if s.node_id != 3 else [])
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
    pki = make_pki(ctx, "good")
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
        s.extra_args = ["--initial-cluster", members] + snap + tls_flags(pki)
        s.start(wait=False)
    leader = ready_leader(servers)
    values = {}
    with Conn(leader.port, timeout=30) as c:
        for i in range(48):
            values["big%d" % i] = (b"%d:" % i) + bytes([65 + i % 26]) * (64 << 10)
            expect_int(c.call("PUT", "big%d" % i, values["big%d" % i]), "PUT big%d" % i)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + snap + tls_flags(pki))
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
