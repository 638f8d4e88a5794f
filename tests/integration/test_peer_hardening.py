# SPDX-License-Identifier: Apache-2.0
"""The Raft port is for members only (docs/security.md "Peer TLS: the Raft port"): a routable Raft port without peer TLS refuses
to start unless --insecure-raft says so (127.0.0.0/8 and ::1 are loopback), a non-loopback
HTTP port is warned about; inbound Raft connections are capped in total and per address, and
so are those still in their handshake (TLS included); a silent connection is closed at the
configured handshake deadline. Each cap closes only the excess: the cluster keeps
committing."""

import socket
import subprocess

from cluster import info_now, new_server, ready_leader, start_cluster
from helpers import eq, expect_int
from resp import Conn
from server import free_port
from test_raft_port import closed_by, handshake, peer_closed_within, rejected


def test_raft_listen_on_a_routable_address_without_peer_tls_is_refused(ctx):
    """0.0.0.0 is only used to see the refusal: nothing binds it."""
    argv = [ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:%d" % free_port(),
            "--raft-listen", "0.0.0.0:%d" % free_port(), "--http-listen", "off"]
    p = subprocess.run(argv, capture_output=True, timeout=10)
    eq(p.returncode, 2, "exit status; stderr %r" % p.stderr)
    assert b"refusing --raft-listen 0.0.0.0:" in p.stderr and b"without peer TLS" in p.stderr \
        and b"--insecure-raft" in p.stderr, p.stderr


def test_raft_listen_on_loopback_needs_no_flag_and_insecure_raft_overrides(ctx):
    """127.0.0.2 is loopback (127/8): it starts without peer TLS. --insecure-raft starts on
    0.0.0.0 (stopped at once), and a non-loopback --http-listen is warned about in the log."""
    s = new_server(ctx, 1)
    s.raft_port = free_port()
    s.extra_args = ["--raft-listen", "127.0.0.2:%d" % s.raft_port]
    s.start()
    assert s.running()
    s.stop()
    t = new_server(ctx, 2, ["--raft-listen", "0.0.0.0:%d" % free_port(), "--insecure-raft",
                            "--http-listen", "0.0.0.0:%d" % free_port()])
    t.start()
    t.stop()
    log = t.log_text()
    assert "http: /metrics and /health on the non-loopback address 0.0.0.0:" in log, log
    assert "non-loopback" not in s.log_text(), s.log_text()


def _hold(port, n, data=b""):
    """n connections to port, each sent `data`: the open sockets."""
    socks = []
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        if data:
            c.sendall(data)
        socks.append(c)
    return socks


def _closed_count(socks, seconds):
    return sum(1 for c in socks if peer_closed_within(c, seconds))


def test_raft_link_caps_close_the_excess_and_the_cluster_commits(ctx):
    """With --raft-max-links-per-address 8 and --raft-max-handshakes-per-address 4: 12 silent
    connections from 127.0.0.1 to a follower's Raft port (its 2 peers' links are already up):
    the 4 that fit the handshake cap stay until the deadline (30 s here), the other 8 are
    closed at once and counted (handshake_cap); a PUT commits meanwhile. With the handshake
    cap out of the way, links pass the link cap (link_cap)."""
    servers = start_cluster(ctx, extra=["--raft-max-links-per-address", "8",
                                        "--raft-max-handshakes-per-address", "4",
                                        "--raft-handshake-timeout", "30000"])
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        expect_int(c.call("PUT", "k0", "v"))
    target = [s for s in servers if s is not leader][0]
    socks = _hold(target.raft_port, 12, handshake(2, b"x:1")[:12])
    try:
        closed = closed_by(socks, target, "handshake_cap", 8)
        eq(len(closed), 8, "connections closed at once (4 fit the handshake cap)")
        eq(rejected(target).get("handshake_cap", 0), 8, "handshake_cap count")
        with Conn(leader.port) as c:
            expect_int(c.call("PUT", "k1", "v"), "PUT while the Raft port is flooded")
        for s in servers:
            assert s.running()
    finally:
        for c in socks:
            c.close()
    eq(rejected(target).get("link_cap", 0), 0, "link_cap count")


def test_raft_link_cap_in_total_closes_the_excess(ctx):
    """--raft-max-links 6: 10 more connections that complete nothing; the handshake caps are
    high, so the link cap closes those past 6 links (link_cap); writes go on."""
    servers = start_cluster(ctx, extra=["--raft-max-links", "6",
                                        "--raft-max-handshakes", "100",
                                        "--raft-max-handshakes-per-address", "100",
                                        "--raft-handshake-timeout", "30000"])
    leader = ready_leader(servers)
    target = [s for s in servers if s is not leader][0]
    with Conn(leader.port) as c:
        expect_int(c.call("PUT", "k0", "v"))  # every peer link is up
    socks = _hold(target.raft_port, 10)
    try:
        closed = closed_by(socks, target, "link_cap", 5)
        # The follower holds 1 or 2 peer links (the other follower's appears once it sent
        # anything, e.g. a pre-vote): 4 or 5 of ours fit.
        assert len(closed) in (5, 6), "%d closed over --raft-max-links" % len(closed)
        eq(rejected(target).get("link_cap", 0), len(closed), "link_cap count")
        with Conn(leader.port) as c:
            expect_int(c.call("PUT", "k1", "v"), "PUT at the link cap")
    finally:
        for c in socks:
            c.close()


def test_raft_silent_connection_is_closed_at_the_configured_deadline(ctx):
    """--raft-handshake-timeout 300: a connection that sends nothing is closed (counted as
    handshake_timeout), well within a generous bound; terms stay."""
    servers = start_cluster(ctx, extra=["--raft-handshake-timeout", "300"])
    ready_leader(servers)
    target = servers[0]
    terms = {s.node_id: info_now(s)["term"] for s in servers}
    s = socket.create_connection(("127.0.0.1", target.raft_port), timeout=10)
    try:
        assert peer_closed_within(s, 20.0), "the silent connection was not closed"
    finally:
        s.close()
    eq(rejected(target).get("handshake_timeout", 0), 1, "handshake_timeout count")
    for srv in servers:
        eq(info_now(srv)["term"], terms[srv.node_id], "node %d's term" % srv.node_id)


def test_raft_handshake_rate_closes_a_burst_past_it(ctx):
    """--raft-handshake-rate 5 (burst 5), caps out of the way: 30 connections opened back to
    back; those past the bucket are closed as they are accepted, each counted as
    handshake_rate; writes go on."""
    servers = start_cluster(ctx, extra=["--raft-handshake-rate", "5",
                                        "--raft-max-handshakes", "100",
                                        "--raft-max-handshakes-per-address", "100",
                                        "--raft-max-links-per-address", "100",
                                        "--raft-max-links", "100",
                                        "--raft-handshake-timeout", "30000"])
    leader = ready_leader(servers)
    target = [s for s in servers if s is not leader][0]
    with Conn(leader.port) as c:
        expect_int(c.call("PUT", "k0", "v"))
    socks = _hold(target.raft_port, 30)
    try:
        closed = closed_by(socks, target, "handshake_rate", 1)
        assert closed, "no connection closed past the rate"
        eq(rejected(target).get("handshake_rate", 0), len(closed), "handshake_rate count")
        with Conn(leader.port) as c:
            expect_int(c.call("PUT", "k1", "v"), "PUT past the handshake rate")
    finally:
        for c in socks:
            c.close()
