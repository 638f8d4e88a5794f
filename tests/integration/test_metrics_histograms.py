# SPDX-License-Identifier: Apache-2.0
"""/metrics histograms and counters move as documented: waited grants feed
fencelock_lock_wait_seconds, releases feed fencelock_lock_hold_seconds, every acknowledged write
feeds fencelock_commit_latency_seconds; buckets are cumulative with +Inf == _count; an expiry
counts in fencelock_expirations_total; /health is 200 JSON with status ok."""

import json
import time

from helpers import (RespError, eq, expect_int, ok, open_session, session_info, wait_queued,
                     wait_until)
from test_http import http_get, parse_metrics

HISTS = ("fencelock_lock_wait_seconds", "fencelock_lock_hold_seconds",
         "fencelock_commit_latency_seconds")
ROUNDS = 3
HOLD = 0.12    # each holder keeps the lock at least this long; each waiter waits that long


def _scrape(srv):
    status, _, body = http_get(srv, "/metrics")
    eq(status, 200, "GET /metrics status")
    return parse_metrics(body)


def _hist(m, name):
    """(buckets [(le, cumulative count)] in page order, sum, count) of one histogram."""
    buckets = []
    for labels, v in m.get(name + "_bucket", []):
        le = labels.split('le="', 1)[1].split('"', 1)[0]
        buckets.append((float("inf") if le == "+Inf" else float(le), v))
    assert buckets, "%s_bucket missing" % name
    s = m.get(name + "_sum")
    n = m.get(name + "_count")
    assert s and n, "%s_sum or _count missing" % name
    return buckets, s[0][1], n[0][1]


def _check_cumulative(m, name):
    buckets, _, count = _hist(m, name)
    les = [le for le, _ in buckets]
    eq(les, sorted(les), "%s bucket bounds in increasing order" % name)
    eq(les[-1], float("inf"), "%s last bucket" % name)
    vals = [v for _, v in buckets]
    for (le1, v1), (le2, v2) in zip(buckets, buckets[1:]):
        assert v2 >= v1, "%s buckets not cumulative: le=%g has %d, le=%g has %d" \
            % (name, le1, v1, le2, v2)
    eq(vals[-1], count, "%s_bucket{le=\"+Inf\"} vs %s_count" % (name, name))


def _bucket(m, name, le):
    for b, v in _hist(m, name)[0]:
        if b == le:
            return v
    raise AssertionError("%s has no bucket le=%g" % (name, le))


def test_histograms_count_waited_grants_holds_and_commits(ctx):
    srv = ctx.srv
    c = ctx.conn()
    a = open_session(c)
    b = open_session(c)
    m0 = _scrape(srv)
    for h in HISTS:
        _check_cumulative(m0, h)
    writes = 0
    for i in range(ROUNDS):
        name = "h%d" % i
        expect_int(c.call("LOCK", name, a), "LOCK %s (free: not a waited grant)" % name)
        w = ctx.conn()
        w.send("LOCK", name, b, "WAIT", 10000)
        wait_queued(c, name, b)
        time.sleep(HOLD)
        ok(c.call("UNLOCK", name, a))
        expect_int(w.read_reply(timeout=3), "waited grant of %s" % name)
        time.sleep(HOLD)
        ok(c.call("UNLOCK", name, b))
        writes += 4
    m1 = None

    def settled():
        nonlocal m1
        m1 = _scrape(srv)
        return _hist(m1, HISTS[2])[2] - _hist(m0, HISTS[2])[2] >= writes
    wait_until(settled, 2, what="commit_latency_seconds_count to count %d writes" % writes)

    for h in HISTS:
        _check_cumulative(m1, h)
    (_, ws0, wc0), (_, ws1, wc1) = _hist(m0, HISTS[0]), _hist(m1, HISTS[0])
    (_, hs0, hc0), (_, hs1, hc1) = _hist(m0, HISTS[1]), _hist(m1, HISTS[1])
    (_, cs0, cc0), (_, cs1, cc1) = _hist(m0, HISTS[2]), _hist(m1, HISTS[2])
    eq(wc1 - wc0, ROUNDS, "lock_wait_seconds_count increase (one waited grant per round; "
       "grants of a free lock do not count)")
    eq(hc1 - hc0, 2 * ROUNDS, "lock_hold_seconds_count increase (two releases per round)")
    assert cc1 - cc0 >= writes, "commit_latency_seconds_count rose by %d for %d writes" \
        % (cc1 - cc0, writes)
    assert ws1 - ws0 >= ROUNDS * HOLD * 0.95, "lock_wait_seconds_sum rose by %.3f s for %d " \
        "waits of at least %.2f s" % (ws1 - ws0, ROUNDS, HOLD)
    assert hs1 - hs0 >= 2 * ROUNDS * HOLD * 0.95, "lock_hold_seconds_sum rose by %.3f s for " \
        "%d holds of at least %.2f s" % (hs1 - hs0, 2 * ROUNDS, HOLD)
    assert cs1 >= cs0, "commit_latency_seconds_sum went down"
    # Every wait and hold took >= HOLD (0.12 s): none lands in a bucket at or below 0.1 s,
    # all of them in the bucket le=60.
    for h, n in ((HISTS[0], ROUNDS), (HISTS[1], 2 * ROUNDS)):
        eq(_bucket(m1, h, 0.1) - _bucket(m0, h, 0.1), 0,
           "%s_bucket{le=\"0.1\"} increase for observations >= %.2f s" % (h, HOLD))
        eq(_bucket(m1, h, 60) - _bucket(m0, h, 60), n,
           "%s_bucket{le=\"60\"} increase" % h)


def test_expirations_total_counts_one_expiry(ctx):
    srv = ctx.srv
    c = ctx.conn()
    open_session(c, 60000)
    e0 = _scrape(srv)["fencelock_expirations_total"][0][1]
    sid = open_session(c, 200)
    closed = open_session(c, 200)
    ok(c.call("SESSION.CLOSE", closed), "SESSION.CLOSE (a close is not an expiry)")
    wait_until(lambda: isinstance(session_info(c, sid), RespError), 3, interval=0.02,
               what="the 200 ms session to expire")
    wait_until(lambda: _scrape(srv)["fencelock_expirations_total"][0][1] >= e0 + 1, 2,
               interval=0.02, what="expirations_total to count the expiry")
    time.sleep(0.3)
    eq(_scrape(srv)["fencelock_expirations_total"][0][1], e0 + 1,
       "expirations_total after one expiry and one close")


def test_health_is_200_json_ok(ctx):
    status, ctype, body = http_get(ctx.srv, "/health")
    eq(status, 200, "GET /health status")
    assert "json" in ctype, "/health Content-Type %r" % ctype
    doc = json.loads(body)
    eq(doc.get("status"), "ok", "/health status")


DISK_HISTS = ("fencelock_disk_append_seconds", "fencelock_snapshot_write_seconds",
              "fencelock_snapshot_serialize_seconds", "fencelock_snapshot_restore_seconds")


def test_disk_and_snapshot_histograms_count_appends_snapshots_and_restores(ctx):
    """Every acknowledged write waited for a log append (write + sync): the append histogram
    counts at least one per batch; with a tiny snapshot threshold, snapshots are serialised and
    written; a restart loads the last snapshot (restore). Each histogram is cumulative."""
    srv = ctx.server("--snapshot-threshold", 64, "--snapshot-trailing", 16)
    c = ctx.conn()
    before = _scrape(srv)
    for name in DISK_HISTS:
        _check_cumulative(before, name)
    appends0 = _hist(before, "fencelock_disk_append_seconds")[2]
    for i in range(300):
        expect_int(c.call("PUT", "d/%d" % (i % 10), "v"))
    wait_until(lambda: _hist(_scrape(srv), "fencelock_snapshot_write_seconds")[2] >= 1,
               timeout=20, what="a snapshot written")
    m = _scrape(srv)
    appended = _hist(m, "fencelock_disk_append_seconds")[2] - appends0
    assert 1 <= appended <= 300 + 10, appended  # batches: one per write at most, here sequential
    assert _hist(m, "fencelock_disk_append_seconds")[1] > 0, "append time summed"
    assert _hist(m, "fencelock_snapshot_serialize_seconds")[2] >= 1
    for name in DISK_HISTS:
        _check_cumulative(m, name)
    eq(_hist(m, "fencelock_snapshot_restore_seconds")[2], 0, "no restore before a restart")
    srv.stop()
    srv.restart()
    eq(_hist(_scrape(srv), "fencelock_snapshot_restore_seconds")[2], 1, "one restore at start")


def test_every_shared_hold_is_one_hold_time(ctx):
    """Two sessions hold one lock shared, then release it one after the other: two holds, each
    observed with its own length (a table of grant times by lock name saw only one)."""
    srv = ctx.srv
    c = ctx.conn()
    a = open_session(c)
    b = open_session(c)
    m0 = _scrape(srv)
    expect_int(c.call("LOCK", "shared-h", a, "SHARED"), "LOCK shared-h SHARED (a)")
    expect_int(c.call("LOCK", "shared-h", b, "SHARED"), "LOCK shared-h SHARED (b)")
    time.sleep(HOLD)
    ok(c.call("UNLOCK", "shared-h", a))
    time.sleep(HOLD)
    ok(c.call("UNLOCK", "shared-h", b))
    m1 = None

    def settled():
        nonlocal m1
        m1 = _scrape(srv)
        return _hist(m1, HISTS[1])[2] - _hist(m0, HISTS[1])[2] >= 2
    wait_until(settled, 5, what="lock_hold_seconds_count to count both shared holds")
    (_, hs0, hc0), (_, hs1, hc1) = _hist(m0, HISTS[1]), _hist(m1, HISTS[1])
    eq(hc1 - hc0, 2, "lock_hold_seconds_count increase (two shared holds released)")
    # a held HOLD, b 2 x HOLD: at least 3 x HOLD in all
    assert hs1 - hs0 >= 3 * HOLD * 0.95, "lock_hold_seconds_sum rose by %.3f s for shared " \
        "holds of at least %.2f and %.2f s" % (hs1 - hs0, HOLD, 2 * HOLD)
