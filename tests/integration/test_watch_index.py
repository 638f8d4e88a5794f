# SPDX-License-Identifier: Apache-2.0
"""The event stream's cost to one tenant does not depend on other tenants' history:
a reader parked on a prefix is woken only by events under it (fencelock_watch_wakeups_total),
and XLEN / XINFO / XREAD of a prefix stream examine O(log n) history entries, not the whole
history (fencelock_watch_scanned_total). Both counters are properties, not timings."""

from helpers import eq, expect_int, wait_until
from resp import RespError, as_map, text
from test_http import http_get, parse_metrics
from test_watch import entries as stream_entries

ALL = "fencelock:events"
A = ALL + ":a/"


def metric(srv, name):
    status, _, body = http_get(srv, "/metrics")
    eq(status, 200, "GET /metrics")
    return parse_metrics(body)[name][0][1]


def put_many(c, prefix, n, batch=1000):
    """n PUTs on prefix+i, pipelined in bounded batches; the last revision."""
    rev = 0
    for start in range(0, n, batch):
        cmds = [("PUT", "%s%d" % (prefix, i), "v") for i in range(start, min(n, start + batch))]
        for r in c.pipeline(cmds, timeout=60):
            rev = expect_int(r)
    return rev


def test_watch_index_a_prefix_reader_is_not_woken_by_other_prefixes(ctx):
    srv = ctx.server()
    c = ctx.conn()
    readers = [ctx.conn() for _ in range(50)]
    for r in readers:
        r.send("XREAD", "BLOCK", 0, "STREAMS", A, "$")
    wait_until(lambda: metric(srv, "fencelock_xread_blocked") == 50, timeout=30,
               what="50 readers parked on a/")
    before = metric(srv, "fencelock_watch_wakeups_total")
    put_many(c, "b/", 1000, batch=100)
    woken = metric(srv, "fencelock_watch_wakeups_total") - before
    # the whole-history code woke every parked reader on every event: 50 x 1000 = 50,000
    eq(woken, 0, "wake-ups of readers on a/ by 1000 events on b/")
    eq(metric(srv, "fencelock_xread_blocked"), 50, "all 50 still parked")
    rev = expect_int(c.call("PUT", "a/x", "yes"))
    for r in readers:
        eq(stream_entries(r.read_reply(timeout=30), A),
           [("%d-0" % rev, {"type": "put", "name": "a/x", "value": "yes", "mod_rev": str(rev)})])
    eq(metric(srv, "fencelock_watch_wakeups_total") - before, 50, "one wake-up per reader")
    # the whole stream and the empty prefix are woken by every named event
    w_all, w_empty = ctx.conn(), ctx.conn()
    w_all.send("XREAD", "BLOCK", 0, "STREAMS", ALL, "$")
    w_empty.send("XREAD", "BLOCK", 0, "STREAMS", ALL + ":", "$")
    wait_until(lambda: metric(srv, "fencelock_xread_blocked") == 2, timeout=30,
               what="two more readers parked")
    rev = expect_int(c.call("PUT", "b/last", "z"))
    eq([i for i, _ in stream_entries(w_all.read_reply(timeout=30), ALL)], ["%d-0" % rev])
    eq([i for i, _ in stream_entries(w_empty.read_reply(timeout=30), ALL + ":")],
       ["%d-0" % rev])


def test_watch_index_prefix_reads_do_not_scan_the_whole_history(ctx):
    srv = ctx.server()
    c = ctx.conn()
    put_many(c, "b/", 50000)
    revs = [expect_int(c.call("PUT", "a/%d" % i, "v%d" % i)) for i in range(10)]
    put_many(c, "c/", 100)
    eq(expect_int(c.call("XLEN", ALL)), 50110)
    s0 = metric(srv, "fencelock_watch_scanned_total")
    eq(expect_int(c.call("XLEN", A)), 10)
    s1 = metric(srv, "fencelock_watch_scanned_total")
    # the whole-history code examined all 50,110 entries; an index walks O(log n) nodes
    assert s1 - s0 < 200, "XLEN of a/ examined %d history entries" % (s1 - s0)
    info = as_map(c.call("XINFO", "STREAM", A))
    s2 = metric(srv, "fencelock_watch_scanned_total")
    assert s2 - s1 < 200, "XINFO STREAM of a/ examined %d history entries" % (s2 - s1)
    eq(info["length"], 10)
    eq(text(info["recorded-first-entry-id"]), "%d-0" % revs[0])
    eq(text(info["last-entry"][0]), "%d-0" % revs[-1])
    ev = stream_entries(c.call("XREAD", "COUNT", 100, "STREAMS", A, "0"), A)
    s3 = metric(srv, "fencelock_watch_scanned_total")
    # XREAD: O((names + entries returned) log n) nodes, about 50 per entry at n = 50,110
    assert s3 - s2 < 2000, "XREAD of a/ from 0 examined %d history entries" % (s3 - s2)
    eq([i for i, _ in ev], ["%d-0" % r for r in revs])
    ev = stream_entries(c.call("XREAD", "COUNT", 3, "STREAMS", A, "%d-0" % revs[4]), A)
    s4 = metric(srv, "fencelock_watch_scanned_total")
    assert s4 - s3 < 2000, "XREAD of a/ after an id examined %d history entries" % (s4 - s3)
    eq([(i, f["name"]) for i, f in ev], [("%d-0" % revs[k], "a/%d" % k) for k in (5, 6, 7)])


def test_watch_index_one_wake_per_reader_and_compacted_when_its_event_was_dropped(ctx):
    srv = ctx.server("--event-history", "2")
    c = ctx.conn()
    # a reader of two overlapping prefixes is woken once by an event matching both
    both = ctx.conn()
    both.send("XREAD", "BLOCK", 0, "STREAMS", A, A + "x", "$", "$")
    wait_until(lambda: metric(srv, "fencelock_xread_blocked") == 1, timeout=30, what="parked")
    before = metric(srv, "fencelock_watch_wakeups_total")
    rev = expect_int(c.call("PUT", "a/x1", "v"))
    r = both.read_reply(timeout=30)
    eq([i for i, _ in stream_entries(r, A)], ["%d-0" % rev])
    eq([i for i, _ in stream_entries(r, A + "x")], ["%d-0" % rev])
    eq(metric(srv, "fencelock_watch_wakeups_total") - before, 1, "one wake-up")
    # one command with more events than the history holds: a/1's expire-key is dropped before
    # any reader saw it, so readers get -COMPACTED (those of other prefixes too, as before)
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    for k in ("a/1", "b/1", "b/2"):
        expect_int(c.call("PUT", k, "v", "LEASE", sid))
    ra, rz = ctx.conn(), ctx.conn()
    ra.send("XREAD", "BLOCK", 0, "STREAMS", A, "$")
    rz.send("XREAD", "BLOCK", 0, "STREAMS", ALL + ":z/", "$")
    wait_until(lambda: metric(srv, "fencelock_xread_blocked") == 2, timeout=30, what="parked")
    c.call("SESSION.CLOSE", sid)  # expire-key a/1, b/1, b/2, session-end: 4 events, 2 kept
    for r in (ra, rz):
        reply = r.read_reply(timeout=30)
        assert isinstance(reply, RespError) and reply.code == "COMPACTED", reply
