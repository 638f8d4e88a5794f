# SPDX-License-Identifier: Apache-2.0
"""deploy/: the Prometheus alert rules and the Grafana dashboard (docs/monitoring.md).

`promtool check rules` and `promtool test rules` (Debian's prometheus package, installed by
scripts/deps.sh test): every alert fires on a troubled cluster's series and stays quiet on a
healthy one; each has an absolute runbook_url and a templated description. The dashboard loads
as Grafana's JSON model with its variables, and every metric its queries and the alert rules
name is one a live fencelockd exports (histograms by their _bucket series). Every panel query
is evaluated by Prometheus on samples scraped from a real 3-node cluster (promeval.py) and
must equal the figure computed from the nodes' own counters: a panel that sums a counter every
node counts as it applies the log shows 3x and fails."""

import json
import os
import re
import shutil
import subprocess

import promeval
from promeval import agg, quantile, ratio, same, scale
from cluster import ready_leader
from helpers import eq, expect_err, expect_int, ok, open_session, wait_queued, wait_until
from resp import RespError
from test_http import http_get, parse_metrics
from test_peer_tls import make_pki, start_tls_cluster
from test_tls import tls_server

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RULES = os.path.join(ROOT, "deploy", "prometheus", "fencelock-rules.yml")
RULE_TESTS = os.path.join(ROOT, "deploy", "prometheus", "fencelock-rules.test.yml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "fencelock.json")
METRIC = re.compile(r"\b((?:fencelock|process)_[a-z_]+)")


def promtool(*args):
    if not shutil.which("promtool"):
        raise AssertionError("promtool missing: scripts/deps.sh test installs prometheus")
    p = subprocess.run(["promtool"] + list(args), capture_output=True, timeout=120,
                       cwd=os.path.dirname(RULES))
    return p.returncode, p.stdout.decode() + p.stderr.decode()


def test_alert_rules_are_valid(ctx):
    rc, out = promtool("check", "rules", RULES)
    eq(rc, 0, "promtool check rules: " + out)
    assert "SUCCESS: 21 rules found" in out, out


def rule_blocks():
    """{alert name: its text} from the rules file (one `- alert:` block each)."""
    text = open(RULES).read()
    parts = re.split(r"\n      - alert: ", text)[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


def test_alerts_have_an_absolute_runbook_url_and_a_templated_description(ctx):
    text = open(RULES).read()
    assert "runbook:" not in text, "the repository-path runbook annotation is gone"
    for word in ("critical", "warning", "fencelock_runbook_base"):
        assert word in text, "the rules file says how %s is set" % word
    anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>',
                             open(os.path.join(ROOT, "docs", "monitoring.md")).read()))
    blocks = rule_blocks()
    assert len(blocks) == 21, sorted(blocks)
    for name, b in blocks.items():
        m = re.search(r"runbook_url: '\{\{ or \$externalLabels.fencelock_runbook_base "
                      r'"file:///usr/share/doc/fencelock" \}\}/monitoring.md#([a-z0-9-]+)\'', b)
        assert m, "%s: runbook_url with the configurable absolute base" % name
        assert m.group(1) in anchors, "%s: docs/monitoring.md has no anchor %s" % (name, m.group(1))
        d = re.search(r"description: (.*)", b).group(1)
        assert "$value" in d, "%s: the description shows the value" % name
        # an aggregation without instance is about the cluster, unless the node is matched
        # back in (group_right)
        per_node = "without (instance)" not in b or "group_right" in b
        assert ("$labels.instance" if per_node else "$labels.job") in d, \
            "%s: the description names the %s" % (name, "node" if per_node else "cluster")
        assert re.search(r"severity: (page|ticket)\n", b), name


def test_every_alert_fires_when_it_should_and_only_then(ctx):
    rc, out = promtool("test", "rules", RULE_TESTS)
    eq(rc, 0, "promtool test rules: " + out)
    rules = open(RULES).read()
    tests = json.loads(open(RULE_TESTS).read().split("\n", 2)[2])
    names = re.findall(r"- alert: (\w+)", rules)
    for group in tests["tests"]:
        if "external_labels" in group:
            continue  # the group about the runbook base, not about the alerts
        tested = {t["alertname"] for t in group["alert_rule_test"]}
        eq(sorted(tested), sorted(names), "every alert tested in %r" % group["name"])


def dashboard_targets():
    """[(panel title, refId, expr)]."""
    d = json.load(open(DASHBOARD))
    for key in ("title", "uid", "panels", "schemaVersion", "templating"):
        assert key in d, "dashboard lacks %s" % key
    out = []
    for p in d["panels"]:
        assert p.get("type") and p.get("title") and p.get("gridPos"), p
        assert p["targets"], "panel %r has no query" % p["title"]
        out += [(p["title"], t["refId"], t["expr"]) for t in p["targets"]]
    return out


def dashboard_queries():
    return [e for _, _, e in dashboard_targets()]


# Counted by every node as it applies the log: a panel takes max over the nodes, never a sum.
APPLIED = ("fencelock_grants_total", "fencelock_releases_total", "fencelock_expirations_total",
           "fencelock_fence_rejections_total", "fencelock_elections_total",
           "fencelock_leader_changes_total")


def test_dashboard_has_variables_datasources_and_rate_intervals(ctx):
    d = json.load(open(DASHBOARD))
    names = {v["name"]: v for v in d["templating"]["list"]}
    for v in ("datasource", "job", "cluster", "instance"):
        assert v in names, "dashboard variable $%s missing" % v
    eq(names["datasource"]["type"], "datasource")
    for p in d["panels"]:
        eq(p["datasource"]["uid"], "${datasource}", "panel %r data source" % p["title"])
        for t in p["targets"]:
            eq(t["datasource"]["uid"], "${datasource}", "%r %s" % (p["title"], t["refId"]))
            e = t["expr"]
            for sel in re.findall(r"\b((?:fencelock|process)_[a-z_]+)(\{[^}]*\})?", e):
                for var in ("$job", "$cluster", "$instance"):
                    assert var in sel[1], "%r: %s{...} filters by %s" % (p["title"], sel[0], var)
            for window in re.findall(r"\[([^\]]+)\]", e):
                eq(window, "$__rate_interval", "%r: range of %s" % (p["title"], e))
            for c in APPLIED:
                if c in e:
                    assert "max without (instance)" in e, "%r sums %s" % (p["title"], c)
    titles = " ".join(p["title"] for p in d["panels"]).lower()
    for want in ("connections", "quotas", "file descriptors", "tls and auth failures",
                 "dropped events"):
        assert want in titles, "no panel for %s" % want


def exported(srv):
    """Names with samples, and families declared by a # TYPE line (a leader's peer lag has
    none without peers)."""
    body = http_get(srv, "/metrics")[2]
    return set(parse_metrics(body)) | set(re.findall(r"^# TYPE (\S+) ", body, re.M))


def test_dashboard_and_rules_name_only_exported_metrics(ctx):
    srv, _ = tls_server(ctx)  # TLS metrics and the certificate expiry exist only with TLS
    c = ctx.conn(srv)
    s = open_session(c)
    expect_int(c.call("LOCK", "l", s))  # histograms and counters with samples
    have = exported(srv)
    used = set()
    rule_exprs = [re.search(r"expr: (.*?)\n        (?:for|labels):", b, re.S).group(1)
                  for b in rule_blocks().values()]
    for e in dashboard_queries() + rule_exprs:
        used |= set(METRIC.findall(e))
    missing = sorted(m for m in used if m not in have)
    eq(missing, [], "metrics the dashboard or the rules use but /metrics lacks")
    assert "fencelock_grants_total" in used and "fencelock_lock_hold_seconds_bucket" in used, used


# ---- every panel evaluated on a real cluster's samples ----

def expected_panels(d):
    """(panel title, refId) -> what the query must return, from the scraped numbers."""
    R, L = d.rate, d.last
    mx = lambda v: agg(v, max, without=("instance",))  # noqa: E731
    sm = lambda v: agg(v, sum, without=("instance",))  # noqa: E731
    q = lambda x, name: quantile(x, sm(R(name)))  # noqa: E731
    per = lambda x, name: quantile(x, agg(R(name), sum, by=("instance", "le")))  # noqa: E731
    return {
        ("Grants and hand-offs per second", "A"): mx(R("fencelock_grants_total")),
        ("Releases per second", "A"): mx(R("fencelock_releases_total")),
        ("Lock wait p50 / p99", "A"): q(0.99, "fencelock_lock_wait_seconds_bucket"),
        ("Lock wait p50 / p99", "B"): q(0.5, "fencelock_lock_wait_seconds_bucket"),
        ("Lock hold p50 / p99", "A"): q(0.99, "fencelock_lock_hold_seconds_bucket"),
        ("Lock hold p50 / p99", "B"): q(0.5, "fencelock_lock_hold_seconds_bucket"),
        ("Sessions", "A"): sm(L("fencelock_sessions")),
        ("Locks held, waiters, in lock-delay", "A"): sm(L("fencelock_locks_held")),
        ("Locks held, waiters, in lock-delay", "B"): sm(L("fencelock_waiters")),
        ("Locks held, waiters, in lock-delay", "C"): sm(L("fencelock_locks_in_delay")),
        ("Session expirations per minute", "A"): scale(mx(R("fencelock_expirations_total")), 60),
        ("Fence rejections per minute (stale holders that tried to write)", "A"):
            scale(mx(R("fencelock_fence_rejections_total")), 60),
        ("Commit latency p50 / p99 (leader)", "A"): q(0.99, "fencelock_commit_latency_seconds_bucket"),
        ("Commit latency p50 / p99 (leader)", "B"): q(0.5, "fencelock_commit_latency_seconds_bucket"),
        ("Leader", "A"): {k: v for k, v in L("fencelock_raft_state", state="leader").items()
                          if v == 1},
        ("Applied index per node", "A"): L("fencelock_applied_index"),
        ("Commands by result", "A"): agg(R("fencelock_commands_total"), sum, by=("result",)),
        ("Elections and leader changes per minute", "A"):
            scale(mx(R("fencelock_leader_changes_total")), 60),
        ("Elections and leader changes per minute", "B"):
            scale(mx(R("fencelock_elections_total")), 60),
        ("Unknown outcomes per minute", "A"): scale(sm(R("fencelock_proposals_unknown_total")), 60),
        ("Disk: log append (write + sync) p99 per node", "A"):
            per(0.99, "fencelock_disk_append_seconds_bucket"),
        ("Disk: log append (write + sync) p99 per node", "B"):
            per(0.99, "fencelock_snapshot_write_seconds_bucket"),
        ("Client connections per node", "A"): L("fencelock_connections_open"),
        ("Client connections per node", "B"): L("fencelock_max_clients"),
        ("Quotas used", "A"): mx(ratio(L("fencelock_quota_used"), L("fencelock_quota_limit"))),
        ("Quotas used", "B"): mx(ratio(L("fencelock_quota_used_bytes"),
                                      L("fencelock_quota_limit_bytes"))),
        ("File descriptors per node", "A"): L("process_open_fds"),
        ("File descriptors per node", "B"): L("process_max_fds"),
        ("TLS and auth failures per second", "A"): sm(R("fencelock_tls_handshake_failures_total")),
        ("TLS and auth failures per second", "B"): sm(R("fencelock_auth_failures_total")),
        ("TLS and auth failures per second", "C"): sm(R("fencelock_permission_denials_total")),
        ("TLS and auth failures per second", "D"):
            agg(R("fencelock_raft_rejected_total"), sum, without=("instance", "reason")),
        ("Event stream: dropped events and slow readers per node", "A"):
            R("fencelock_events_dropped_total"),
        ("Event stream: dropped events and slow readers per node", "B"):
            R("fencelock_slow_reader_closes_total"),
        ("Replication: proposals pending, lag per peer", "A"): L("fencelock_proposals_pending"),
        ("Replication: proposals pending, lag per peer", "B"): L("fencelock_peer_lag_entries"),
        ("Certificates: time to expiry", "A"):
            promeval.minus_time(L("fencelock_cert_expiry_timestamp_seconds"), d.t_end),
    }


def _synced(servers):
    """Every node applied the same index (the counters of applied events then agree)."""
    idx = set()
    for s in servers:
        idx.add(parse_metrics(http_get(s, "/metrics")[2])["fencelock_applied_index"][0][1])
    return len(idx) == 1


def _round(c, w, sids, n):
    """Some of everything the panels show: n grants and releases, a hand-off after a wait
    (the waiter on connection w), a key, an answered error and an unknown command."""
    for i in range(n):
        expect_int(c.call("LOCK", "l%d" % i, sids[0]))
        ok(c.call("UNLOCK", "l%d" % i, sids[0]))
    expect_int(c.call("LOCK", "q", sids[0]))
    w.send("LOCK", "q", sids[1], "WAIT", 60000)
    wait_queued(c, "q", sids[1], timeout=30)
    ok(c.call("UNLOCK", "q", sids[0]))
    expect_int(w.read_reply(timeout=30), "the waiter got q")
    ok(c.call("UNLOCK", "q", sids[1]))
    expect_int(c.call("PUT", "k%d" % n, "v"))
    expect_err(c.call("UNLOCK", "free", sids[0]), "NOTHOLDER")
    assert isinstance(c.call("NOSUCHCOMMAND"), RespError)


def test_every_dashboard_panel_evaluates_to_the_nodes_own_counts(ctx):
    """Five scrapes of a 3-node cluster (peer TLS, so the certificate panel has data) with
    load between them, evaluated by Prometheus: every panel query returns exactly the series
    and values computed from the nodes' own samples; the grants panel is one node's rate."""
    servers = start_tls_cluster(ctx, make_pki(ctx, "dash"), 3)
    leader = ready_leader(servers, timeout=30)
    c, w = ctx.conn(leader), ctx.conn(leader)
    sids = [open_session(c, 3600000), open_session(c, 3600000)]  # outlive a slow run
    _round(c, w, sids, 1)  # every series (error results too) exists before the first scrape
    t_end = promeval.now_aligned()
    for attempt in range(3):
        scrapes = []
        for k in range(5):
            _round(c, w, sids, 2 + 3 * k)  # a different amount each time: rates vary
            wait_until(lambda: _synced(servers), timeout=30, interval=0.1, what="nodes in step")
            scrapes.append({"n%d" % s.node_id: http_get(s, "/metrics")[2] for s in servers})
        d = promeval.Data(scrapes, t_end)
        # A leader change between the scrapes (a stalled machine) moves the leader-only
        # series from one node to another: scrape again.
        if d.samples[0]["fencelock_raft_term"] == d.samples[-1]["fencelock_raft_term"]:
            break
        leader = ready_leader(servers, timeout=30)
        c, w = ctx.conn(leader), ctx.conn(leader)
    else:
        raise AssertionError("the leader changed during each of 3 scrape rounds")
    exp = expected_panels(d)
    targets = dashboard_targets()
    eq(sorted(exp), sorted((t, r) for t, r, _ in targets),
       "an expectation for every panel query, and a query for every expectation")
    prom = promeval.Prometheus(ctx, d)
    window = "%ds" % d.window
    empty = []
    for title, ref, expr in targets:
        got = prom.query(expr.replace("$__rate_interval", window).replace(
            '=~"$job"', '=~"%s"' % promeval.JOB).replace('=~"$cluster"', '=~".*"').replace(
            '=~"$instance"', '=~".*"'))
        want = exp[(title, ref)]
        eq(sorted(map(sorted, got)), sorted(map(sorted, want)), "%s %s: series" % (title, ref))
        for k, v in want.items():
            assert same(got[k], v), "%s %s %s: Prometheus says %r, the nodes' samples %r" % (
                title, ref, sorted(k), got[k], v)
        if not want:
            empty.append((title, ref))
    # Only what this cluster cannot have is empty: it has no client TLS.
    eq(empty, [("TLS and auth failures per second", "A")], "panel queries with no series")
    grants = exp[("Grants and hand-offs per second", "A")]
    node = d.rate("fencelock_grants_total")
    eq(len(grants), 1, "one cluster, one grants series")
    g = list(grants.values())[0]
    assert g > 0 and all(same(g, v) for v in node.values()), (g, node)
    got = prom.query(targets[0][2].replace("$__rate_interval", window).replace(
        "$job", promeval.JOB).replace("$cluster", ".*").replace("$instance", ".*"))
    assert same(list(got.values())[0], g) and not same(list(got.values())[0], 3 * g), got


test_every_dashboard_panel_evaluates_to_the_nodes_own_counts.timeout = 240
