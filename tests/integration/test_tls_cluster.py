# SPDX-License-Identifier: Apache-2.0
"""A cluster with every security layer on (docs/security.md "A TLS cluster, step by step"):
client TLS with client certificates required, mutual TLS on the Raft port and ACLs. The
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
    """A CA (made once) and a node certificate it signed: usable as server and client."""
    d = ctx.tmp("pki")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, ca + ".crt")):
        _ca(d, ca)
    _key_csr(d, name, "127.0.0.1")
    _sign(d, name, ca, NODE_EXT)
    return {k: os.path.join(d, v) for k, v in
            (("cert", name + ".crt"), ("key", name + ".key"), ("ca", ca + ".crt"))}


def flags(p, acl, pwfile):
    return ["--tls-cert", p["cert"], "--tls-key", p["key"], "--tls-ca", p["ca"],
            "--tls-client-auth", "require",
            "--peer-tls-cert", p["cert"], "--peer-tls-key", p["key"], "--peer-tls-ca", p["ca"],
            "--acl-file", acl, "--peer-user", "peer", "--peer-password-file", pwfile]


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
    s.extra_args = list(args) + TIMING + flags(p, acl, pwfile)
    s.tls = client_context(p)
    return s


def secure_cluster(ctx):
    acl, good, _ = _acl_files(ctx)
    p = pki(ctx, "node")
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers] + TIMING + flags(p, acl, good)
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
    from cluster import ready_leader, start_cluster
    from test_peer_tls import make_pki, tls_flags
    old, new = make_pki(ctx, "old"), make_pki(ctx, "new")
    live = {k: ctx.tmp("live-" + k) for k in ("cert", "key", "ca")}
    for k in live:
        shutil.copyfile(old[k], live[k])
    os.chmod(live["key"], 0o600)  # a secret: fencelockd refuses group/world-readable keys
    servers = start_cluster(ctx, 3, extra=tls_flags(live))
    leader = ready_leader(servers, timeout=30)
    for k in live:
        shutil.copyfile(new[k], live[k])
    for s in servers:
        os.kill(s.proc.pid, signal.SIGHUP)
    for s in servers:
        wait_until(lambda s=s: "SIGHUP: peer TLS certificate, key and CA reloaded"
                   in s.log_text(), timeout=10, what="node %d reloaded" % s.node_id)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + TIMING + tls_flags(new))
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
