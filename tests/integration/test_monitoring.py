# SPDX-License-Identifier: Apache-2.0
"""What /metrics tells an operator beyond the counters (docs/monitoring.md): metric families
an OpenMetrics reader can tell apart (no gauge named as a counter's family, counts and bytes
in families of their own), the expiry of every certificate file a node loaded (after start and
after each SIGHUP reload that took effect), the leader's view of each member's replication
lag, and the proposals waiting for a quorum."""

import calendar
import os
import re
import shutil
import signal
import subprocess
import time

from cluster import new_server, ready_leader, start_cluster
from helpers import eq, expect_int, ok, wait_until
from resp import Conn
from test_http import http_get, labeled, metric, parse_metrics
from test_peer_tls import make_pki, node_cert, start_tls_cluster
from test_tls import SERVER_EXT, _key_csr, _sign, certs, client_ctx

# Renamed in this release (docs/monitoring.md "Upgrading: renamed metrics"): the old names must
# be gone, the new ones there.
RENAMED = {
    "fencelock_connections": "fencelock_connections_open",
    "fencelock_input_total_closes_total": "fencelock_input_memory_closes_total",
    "fencelock_output_total_closes_total": "fencelock_output_memory_closes_total",
}


def om_family(name, kind):
    """The OpenMetrics family a Prometheus-text metric belongs to."""
    if kind == "counter" and name.endswith("_total"):
        return name[:-len("_total")]
    return name


def test_metric_families_do_not_collide_and_bytes_are_apart(ctx):
    c = ctx.conn()
    expect_int(c.call("PUT", "k", "v"))
    body = http_get(ctx.srv, "/metrics")[2]
    families = {}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M):
        fam = om_family(name, kind)
        assert fam not in families, "%s (%s) and %s (%s) are one OpenMetrics family %s" % (
            name, kind, families[fam][0], families[fam][1], fam)
        families[fam] = (name, kind)
    m = parse_metrics(body)
    for old, new in RENAMED.items():
        assert old not in m, "%s is renamed %s" % (old, new)
        assert new in m, "%s missing" % new
    used = labeled(ctx.srv, "fencelock_quota_used")
    eq(sorted(used), sorted('{quota="%s"}' % q for q in ("sessions", "locks", "keys", "waiters")),
       "counted quotas only")
    assert "data_bytes" not in str(labeled(ctx.srv, "fencelock_quota_limit")), body
    assert metric(ctx.srv, "fencelock_quota_used_bytes") > 0
    eq(metric(ctx.srv, "fencelock_quota_limit_bytes"), 2147483648, "--max-data-bytes default")


def not_after(path):
    """The notAfter of the first certificate in path, as openssl prints it (Unix seconds)."""
    out = subprocess.run(["openssl", "x509", "-noout", "-enddate", "-in", path],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    when = out.strip().split("=", 1)[1]
    return calendar.timegm(time.strptime(when, "%b %d %H:%M:%S %Y %Z"))


def expiry(srv):
    return labeled(srv, "fencelock_cert_expiry_timestamp_seconds")


def test_cert_expiry_follows_the_client_tls_files_loaded(ctx):
    """The certificate and CA in use at start; a SIGHUP with a new pair moves the gauge, a
    refused reload (a key that does not match) leaves it on the pair still in use."""
    d = certs(ctx)
    _key_csr(d, "short", "127.0.0.1")
    _sign(d, "short", "ca", SERVER_EXT, days=3)
    live = ctx.tmp("live")
    os.makedirs(live, exist_ok=True)
    for ext in ("crt", "key"):
        shutil.copy(os.path.join(d, "server." + ext), os.path.join(live, "s." + ext))
    s = ctx.server("--tls-cert", os.path.join(live, "s.crt"), "--tls-key",
                   os.path.join(live, "s.key"), "--tls-ca", os.path.join(d, "ca.crt"),
                   start=False)
    s.tls = client_ctx(d)
    s.start()
    first = not_after(os.path.join(d, "server.crt"))
    eq(expiry(s), {'{cert="tls"}': first, '{cert="tls_ca"}': not_after(os.path.join(d, "ca.crt"))},
       "expiry of the files loaded at start")
    shutil.copy(os.path.join(d, "short.crt"), os.path.join(live, "s.crt"))  # key of another
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: metric(s, "fencelock_tls_reload_failures_total") >= 1, what="refused")
    eq(expiry(s)['{cert="tls"}'], first, "a refused reload keeps the expiry of the pair in use")
    shutil.copy(os.path.join(d, "short.key"), os.path.join(live, "s.key"))
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: metric(s, "fencelock_tls_reloads_total") >= 1, what="reloaded")
    short = not_after(os.path.join(d, "short.crt"))
    assert short < first, (short, first)
    eq(expiry(s)['{cert="tls"}'], short, "the new certificate's expiry after the reload")


def test_cert_expiry_covers_the_peer_tls_files(ctx):
    pki = make_pki(ctx, "exp")
    servers = start_tls_cluster(ctx, pki, 1)
    leader = ready_leader(servers, timeout=30)
    eq(expiry(leader), {'{cert="peer_tls"}': not_after(node_cert(pki, 1)["cert"]),
                        '{cert="peer_tls_ca"}': not_after(pki["ca"])}, "peer TLS expiry")
    eq(expiry(ctx.server()), {}, "a node without TLS files has no expiry samples")


def lag(srv):
    return labeled(srv, "fencelock_peer_lag_entries")


def test_leader_reports_each_members_replication_lag(ctx):
    """On the leader one sample per other member; a stopped follower falls behind by at least
    the writes made meanwhile, the running one keeps up, and the stopped one catches up once
    resumed. Followers export no lag."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers, timeout=30)
    others = [s for s in servers if s is not leader]
    want = {'{peer="%d"}' % s.node_id for s in others}
    wait_until(lambda: set(lag(leader)) == want and not any(lag(leader).values()), timeout=30,
               interval=0.1, what="both members caught up: %r" % (lag(leader),))
    for s in others:
        eq(lag(s), {}, "node %d (a follower) exports no lag" % s.node_id)
    stopped, running = others
    stopped.sigstop()
    try:
        c = ctx.conn(leader)
        for i in range(20):
            expect_int(c.call("PUT", "k%d" % i, "v"))
        behind = lag(leader)['{peer="%d"}' % stopped.node_id]
        assert behind >= 20, "the stopped member is %r entries behind after 20 writes" % behind
        wait_until(lambda: lag(leader)['{peer="%d"}' % running.node_id] == 0, timeout=30,
                   interval=0.1, what="the running member caught up")
    finally:
        stopped.sigcont()
    wait_until(lambda: lag(leader)['{peer="%d"}' % stopped.node_id] == 0, timeout=60,
               interval=0.1, what="the resumed member caught up")


def state_of(srv):
    """(is the leader, proposals pending) from one scrape."""
    m = parse_metrics(http_get(srv, "/metrics")[2])
    leader = dict(m["fencelock_raft_state"]).get('{state="leader"}') == 1
    return leader, m["fencelock_proposals_pending"][0][1]


def test_proposals_pending_counts_a_write_waiting_for_its_quorum(ctx):
    """Both followers frozen: a write on the leader cannot commit, so while the node is still
    leader (a long election timeout keeps it so) the write is pending; resumed, it is answered
    and nothing is pending. Should the leader step down first (a stalled machine), the round is
    repeated (at most 3)."""
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members, "--election-ms", "10000",
                        "--heartbeat-ms", "100"]
        s.start(wait=False)

    def pending_or_deposed(leader):
        st = state_of(leader)
        return st if st[1] >= 1 or not st[0] else None

    for attempt in range(3):
        leader = ready_leader(servers, timeout=90)
        wait_until(lambda: state_of(leader) == (True, 0), timeout=30, interval=0.05,
                   what="nothing pending at rest")
        followers = [s for s in servers if s is not leader]
        c = Conn(leader.port, timeout=120)
        for f in followers:
            f.sigstop()
        try:
            c.send("PUT", "k%d" % attempt, "v")
            seen = wait_until(lambda: pending_or_deposed(leader), timeout=30, interval=0.05,
                              what="the write pending, or the leader gone")
        finally:
            for f in followers:
                f.sigcont()
        if seen[0]:
            assert seen[1] >= 1, seen
            break
        c.close()
    else:
        raise AssertionError("the leader stepped down before each scrape (machine stalled?)")
    ok(c.read_reply(timeout=60), "the write is answered once the followers run")
    wait_until(lambda: state_of(leader)[1] == 0, timeout=30, what="nothing pending after")
    c.close()


test_proposals_pending_counts_a_write_waiting_for_its_quorum.timeout = 300
test_leader_reports_each_members_replication_lag.timeout = 120
