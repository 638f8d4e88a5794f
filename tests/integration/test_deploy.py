# SPDX-License-Identifier: Apache-2.0
"""deploy/: the Prometheus alert rules and the Grafana dashboard (docs/monitoring.md).

`promtool check rules` and `promtool test rules` (Debian's prometheus package, installed by
scripts/deps.sh test): every alert fires on a troubled cluster's series and stays quiet on a
healthy one. The dashboard loads as Grafana's JSON model, and every metric its queries and the
alert rules name is one a live fencelockd exports (histograms by their _bucket series)."""

import json
import os
import re
import shutil
import subprocess

from helpers import eq, expect_int, open_session
from test_http import http_get, parse_metrics

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
    assert "SUCCESS: 13 rules found" in out, out


def test_every_alert_fires_when_it_should_and_only_then(ctx):
    rc, out = promtool("test", "rules", RULE_TESTS)
    eq(rc, 0, "promtool test rules: " + out)
    rules = open(RULES).read()
    tests = json.loads(open(RULE_TESTS).read().split("\n", 2)[2])
    names = re.findall(r"- alert: (\w+)", rules)
    for group in tests["tests"]:
        tested = {t["alertname"] for t in group["alert_rule_test"]}
        eq(sorted(tested), sorted(names), "every alert tested in %r" % group["name"])


def dashboard_queries():
    d = json.load(open(DASHBOARD))
    for key in ("title", "uid", "panels", "schemaVersion"):
        assert key in d, "dashboard lacks %s" % key
    exprs = []
    for p in d["panels"]:
        assert p.get("type") and p.get("title") and p.get("gridPos"), p
        assert p["targets"], "panel %r has no query" % p["title"]
        exprs += [t["expr"] for t in p["targets"]]
    return exprs


def exported(srv):
    names = set()
    for name in parse_metrics(http_get(srv, "/metrics")[2]):
        names.add(name)
    return names


def test_dashboard_and_rules_name_only_exported_metrics(ctx):
    c = ctx.conn()
    s = open_session(c)
    expect_int(c.call("LOCK", "l", s))  # histograms and counters with samples
    have = exported(ctx.srv)
    used = set()
    for e in dashboard_queries() + [open(RULES).read()]:
        used |= set(METRIC.findall(e))
    missing = sorted(m for m in used if m not in have)
    eq(missing, [], "metrics the dashboard or the rules use but /metrics lacks")
    assert "fencelock_grants_total" in used and "fencelock_lock_hold_seconds_bucket" in used, used
