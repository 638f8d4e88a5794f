# SPDX-License-Identifier: Apache-2.0
"""The dashboard's queries evaluated by Prometheus itself on samples scraped from real nodes,
and the same figures computed here from those samples (test_deploy.py uses both).

Scrapes: each node's /metrics text, taken `len(scrapes)` times, is given timestamps
STEP seconds apart (the last one T_END) and the labels job, cluster and instance, written as
one OpenMetrics file, turned into TSDB blocks by `promtool tsdb create-blocks-from
openmetrics`, and served by a `prometheus` started on those blocks (no scrape jobs, loopback
port of FL_TEST_PORTS). Queries go to its HTTP API at T_END, `$__rate_interval` replaced by
what Grafana makes of a STEP scrape interval (4 x STEP: the window holds every scrape).

The figures expected: rate() over a window whose first and last samples sit on its edges is
(last - first) / window exactly (Prometheus extrapolates nothing then), so every expectation
is plain arithmetic on the scraped numbers: Data.rate, Data.last, agg, ratio, quantile (the
interpolation of Prometheus's histogram_quantile)."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

from helpers import wait_until
from server import free_port
from test_http import parse_metrics

STEP = 15  # seconds between two scrapes, as Prometheus would take them
JOB, CLUSTER = "fencelock", "c1"
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def labels_of(text):
    return dict(_LABEL.findall(text or ""))


def key(labels):
    return frozenset((k, v) for k, v in labels.items() if k != "__name__")


class Data:
    """scrapes[k][instance] = a node's /metrics text of scrape k."""

    def __init__(self, scrapes, t_end):
        self.k = len(scrapes)
        self.t_end = t_end
        self.window = STEP * (self.k - 1)
        self.samples = []  # per scrape: {name: {key: value}}
        for per_node in scrapes:
            snap = {}
            for inst, text in sorted(per_node.items()):
                for name, rows in parse_metrics(text).items():
                    for lab, v in rows:
                        lb = dict(labels_of(lab), job=JOB, cluster=CLUSTER, instance=inst)
                        snap.setdefault(name, {})[key(lb)] = v
            self.samples.append(snap)

    def openmetrics(self):
        """The scrapes as one OpenMetrics text: every sample with its timestamp, scrape by
        scrape (so each series' samples come in time order)."""
        out = []
        for i, snap in enumerate(self.samples):
            ts = self.t_end - STEP * (self.k - 1 - i)
            for name in sorted(snap):
                for k, v in snap[name].items():
                    lab = ",".join('%s="%s"' % kv for kv in sorted(k))
                    out.append("%s{%s} %s %d" % (name, lab, om_value(v), ts))
        return "\n".join(out) + "\n# EOF\n"

    def last(self, name, **match):
        return {k: v for k, v in self.samples[-1].get(name, {}).items()
                if all((m, mv) in k for m, mv in match.items())}

    def rate(self, name):
        first, last = self.samples[0].get(name, {}), self.samples[-1].get(name, {})
        for k in last:
            assert k in first, "series %s %r appeared after the first scrape: its rate " \
                "would be extrapolated (make it exist before scrape 0)" % (name, sorted(k))
        return {k: (last[k] - first[k]) / self.window for k in last}


def om_value(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def agg(d, op, without=(), by=None):
    groups = {}
    for k, v in d.items():
        g = frozenset((a, b) for a, b in k if (a in by if by is not None else a not in without))
        groups.setdefault(g, []).append(v)
    return {g: op(vs) for g, vs in groups.items()}


def scale(d, f):
    return {k: v * f for k, v in d.items()}


def ratio(a, b):
    out = {}
    for k, v in a.items():
        if k in b:
            w = b[k]
            out[k] = v / w if w else (math.nan if v == 0 else math.copysign(math.inf, v))
    return out


def minus_time(d, t):
    return {k: v - t for k, v in d.items()}


def bucket_quantile(q, buckets):
    """Prometheus's histogram_quantile on [(le, cumulative count)]."""
    buckets = sorted(buckets)
    if len(buckets) < 2 or buckets[-1][0] != math.inf:
        return math.nan
    mono, top = [], 0.0
    for le, c in buckets:
        top = max(top, c)
        mono.append((le, top))
    buckets = mono
    total = buckets[-1][1]
    if total == 0:
        return math.nan
    rank = q * total
    b = next((i for i in range(len(buckets) - 1) if buckets[i][1] >= rank), len(buckets) - 1)
    if b == len(buckets) - 1:
        return buckets[-2][0]
    if b == 0 and buckets[0][0] <= 0:
        return buckets[0][0]
    start, end, count = 0.0, buckets[b][0], buckets[b][1]
    if b > 0:
        start = buckets[b - 1][0]
        count -= buckets[b - 1][1]
        rank -= buckets[b - 1][1]
    return start + (end - start) * (rank / count)


def quantile(q, d):
    groups = {}
    for k, v in d.items():
        le = float(dict(k)["le"].replace("+Inf", "inf"))
        groups.setdefault(frozenset(kv for kv in k if kv[0] != "le"), []).append((le, v))
    return {g: bucket_quantile(q, bs) for g, bs in groups.items()}


def same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


class Prometheus:
    """A prometheus serving the TSDB blocks made from `data`, for queries at data.t_end."""

    def __init__(self, ctx, data):
        for tool in ("promtool", "prometheus"):
            if not shutil.which(tool):
                raise AssertionError("%s missing: scripts/deps.sh test installs prometheus" % tool)
        self.dir = ctx.tmp("prom")
        os.makedirs(self.dir, exist_ok=True)
        om = os.path.join(self.dir, "scrapes.om")
        with open(om, "w") as f:
            f.write(data.openmetrics())
        tsdb = os.path.join(self.dir, "tsdb")
        p = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, "promtool tsdb create-blocks-from: " + p.stdout + p.stderr
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {}\n")
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file", cfg, "--storage.tsdb.path", tsdb,
             "--storage.tsdb.retention.time", "3650d",
             "--web.listen-address", "127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        ctx.defer(self.stop)
        self.t = data.t_end
        wait_until(self._ready, timeout=60, interval=0.2, what="prometheus ready on the blocks")

    def _ready(self):
        assert self.proc.poll() is None, "prometheus exited: " + self.log_text()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port,
                                        timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def log_text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.log.close()

    def query(self, expr):
        """{labels (without __name__): value} of an instant query at t_end."""
        q = urllib.parse.urlencode({"query": expr, "time": "%d" % self.t})
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, q)
        with urllib.request.urlopen(url, timeout=60) as r:
            doc = json.load(r)
        assert doc.get("status") == "success", "%s: %r" % (expr, doc)
        res = doc["data"]
        assert res["resultType"] == "vector", "%s: %r" % (expr, res)
        return {key(s["metric"]): float(s["value"][1]) for s in res["result"]}


def now_aligned():
    """An end time an hour ago, on a whole second: the blocks are in the past and within
    retention, and no head block overlaps them."""
    return int(time.time()) - 3600
