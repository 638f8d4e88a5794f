# SPDX-License-Identifier: Apache-2.0
"""Leader election (ELECT.CAMPAIGN / PROCLAIM / RESIGN / LEADER / OBSERVE): FIFO hand-over
with values, PROCLAIM and -STALE, the leader's token fencing writes, a leader whose session
ends handing over in the same entry, ELECT.OBSERVE answering changes after a revision (parked
until one happens; the first change after it, one by one from the event history, or the current
state flagged `compacted` once that history is gone), the leader/proclaim events in the stream,
and leadership and observers across a 3-node leader kill."""

import threading
import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_nil, no_reply, ok, open_session, revision,
                     wait_until)
from resp import Conn, RespError, as_map, text
from test_http import metric


def leader(c, name):
    r = c.call("ELECT.LEADER", name)
    assert not isinstance(r, RespError), r
    return None if r is None else as_map(r)


def observe(c, name, *opts):
    r = c.call("ELECT.OBSERVE", name, *opts)
    assert not isinstance(r, RespError), r
    return None if r is None else as_map(r)


def candidates(c, name):
    rows = ok(c.call("LOCKS", name))
    for row in rows:
        m = as_map(row)
        if text(m["name"]) == name:
            return m["waiters"]
    return 0


def test_campaign_fifo_proclaim_resign(ctx):
    c = ctx.conn()
    a, b, d = (open_session(c) for _ in range(3))
    ta = expect_int(c.call("ELECT.CAMPAIGN", "e", a, "host-a"))
    m = leader(c, "e")
    eq((m["sid"], m["token"], m["value"], m["since_rev"], m["rev"]), (a, ta, b"host-a", ta, ta))
    expect_nil(c.call("ELECT.CAMPAIGN", "e", b, "host-b"), "a try while a leads")
    eq(c.call("ELECT.CAMPAIGN", "e", a, "other"), ta, "the leader campaigning again: its token")
    cb, cd = ctx.conn(), ctx.conn()
    cb.send("ELECT.CAMPAIGN", "e", b, "host-b", "WAIT", 10000)
    wait_until(lambda: candidates(c, "e") == 1, 3, what="b campaigns")
    cd.send("ELECT.CAMPAIGN", "e", d, "host-d", "WAIT", 10000)
    wait_until(lambda: candidates(c, "e") == 2, 3, what="d campaigns")
    rev = expect_int(c.call("ELECT.PROCLAIM", "e", a, ta, "host-a2"))
    assert rev > ta
    m = leader(c, "e")
    eq((m["value"], m["rev"], m["since_rev"]), (b"host-a2", rev, ta))
    expect_err(c.call("ELECT.PROCLAIM", "e", a, ta + 1000, "x"), "STALE", "a wrong token")
    expect_err(c.call("ELECT.PROCLAIM", "e", b, ta, "x"), "STALE", "not the leader")
    expect_int(c.call("PUT", "cfg", "1", "FENCE", "e", ta), "the leader's fenced write")
    ok(c.call("ELECT.RESIGN", "e", a))
    tb = expect_int(cb.read_reply(timeout=5), "the first candidate leads")
    assert no_reply(cd)
    assert tb > rev
    eq(leader(c, "e")["value"], b"host-b")
    expect_err(c.call("PUT", "cfg", "2", "FENCE", "e", ta), "STALE", "the old leader's token")
    expect_err(c.call("FENCE.CHECK", "e", ta), "STALE")
    ok(c.call("FENCE.CHECK", "e", tb))
    ok(c.call("SESSION.CLOSE", b))
    td = expect_int(cd.read_reply(timeout=5), "the next candidate leads when b's session closes")
    assert td > tb
    expect_err(c.call("ELECT.RESIGN", "e", a), "NOTHOLDER")
    ok(c.call("ELECT.RESIGN", "e", d))
    eq(leader(c, "e"), None, "nobody leads")


def test_wrongtype_and_bad_arguments(ctx):
    c = ctx.conn()
    a = open_session(c)
    expect_int(c.call("ELECT.CAMPAIGN", "el", a, ""))
    expect_int(c.call("LOCK", "lk", a))
    r = c.call("LOCK", "el", a)
    assert isinstance(r, RespError) and r.text == "WRONGTYPE el is an election", r
    expect_err(c.call("LOCK.INFO", "el"), "WRONGTYPE")
    expect_err(c.call("SEM.INFO", "el"), "WRONGTYPE")
    expect_err(c.call("ELECT.LEADER", "lk"), "WRONGTYPE")
    expect_err(c.call("ELECT.OBSERVE", "lk"), "WRONGTYPE")
    expect_err(c.call("ELECT.CAMPAIGN", "lk", a, "v"), "WRONGTYPE")
    expect_err(c.call("ELECT.CAMPAIGN", "x", a), "ERR", "missing value")
    expect_err(c.call("ELECT.OBSERVE", "el", "AFTER"), "ERR", "AFTER without a value")
    expect_err(c.call("ELECT.OBSERVE", "el", "SOON", 1), "ERR", "unknown option")
    expect_err(c.call("ELECT.PROCLAIM", "el", a, "nan", "v"), "ERR")
    expect_err(c.call("ELECT.CAMPAIGN", "x", 999999, "v"), "NOSESSION")


def test_observe_after_rev_parks_until_a_change_and_reports_leaderless(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    m = observe(c, "o")
    eq(m["sid"], 0, "no leader: the leaderless state at once")
    seen = m["rev"]
    eq(observe(c, "o", "AFTER", seen), None, "nothing changed, no WAIT: nil at once")
    eq(observe(c, "o", "AFTER", seen, "WAIT", 0), None, "WAIT 0: nil at once")
    t0 = time.monotonic()
    eq(observe(c, "o", "AFTER", seen, "WAIT", 300), None, "nothing changed: nil after WAIT")
    assert time.monotonic() - t0 >= 0.25
    co = ctx.conn()
    co.send("ELECT.OBSERVE", "o", "AFTER", seen, "WAIT", 10000)
    assert no_reply(co), "an observer answered before any change"
    eq(metric(ctx.srv, "fencelock_elect_observers"), 1.0, "the parked observer is counted")
    ta = expect_int(c.call("ELECT.CAMPAIGN", "o", a, "A"))
    m = as_map(co.read_reply(timeout=5))
    eq((m["sid"], m["token"], m["value"], m["rev"]), (a, ta, b"A", ta))
    co.send("ELECT.OBSERVE", "o", "AFTER", m["rev"], "WAIT", 10000)
    assert no_reply(co)
    rev = expect_int(c.call("ELECT.PROCLAIM", "o", a, ta, "A2"))
    m = as_map(co.read_reply(timeout=5))
    eq((m["sid"], m["value"], m["rev"]), (a, b"A2", rev), "a PROCLAIM is a change")
    eq(observe(c, "o", "AFTER", ta), m, "AFTER the grant: the first change after it at once")
    co.send("ELECT.OBSERVE", "o", "AFTER", rev, "WAIT", 10000)
    assert no_reply(co)
    ok(c.call("ELECT.RESIGN", "o", a))
    m = as_map(co.read_reply(timeout=5))
    eq(m["sid"], 0, "a resign with no candidate: leaderless")
    assert m["rev"] > rev
    eq(observe(c, "o", "AFTER", m["rev"]), None, "the leaderless state is not repeated")
    co.send("ELECT.OBSERVE", "o", "AFTER", m["rev"], "WAIT", 10000)
    tb = expect_int(c.call("ELECT.CAMPAIGN", "o", b, "B"))
    m = as_map(co.read_reply(timeout=5))
    eq((m["sid"], m["token"]), (b, tb))


def test_leader_and_proclaim_events_in_the_stream(ctx):
    c = ctx.conn()
    a = open_session(c)
    start = "0"
    ta = expect_int(c.call("ELECT.CAMPAIGN", "ev", a, "A"))
    expect_int(c.call("ELECT.PROCLAIM", "ev", a, ta, "B"))
    ok(c.call("ELECT.RESIGN", "ev", a))
    expect_int(c.call("SEM.ACQUIRE", "evs", a, 3))
    r = ok(c.call("XREAD", "STREAMS", "fencelock:events:ev", start))
    entries = r[0][1] if isinstance(r, list) else list(r.values())[0]
    evs = []
    for _id, fields in entries:
        m = as_map(fields)
        evs.append({k: (text(v) if isinstance(v, bytes) else v) for k, v in m.items()})
    kinds = [(e["type"], e.get("object"), e.get("value")) for e in evs]
    eq(kinds, [("grant", "election", None), ("leader", None, "A"), ("proclaim", None, "B"),
               ("release", "election", None), ("leader", None, ""), ("grant", "semaphore", None)])
    eq(evs[1]["sid"], str(a))
    eq(evs[4]["sid"], "0", "leaderless: sid 0")


def test_leadership_and_observers_survive_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    lead = ready_leader(servers)
    with Conn(lead.port) as c:
        a, b = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(2))
        ta = expect_int(c.call("ELECT.CAMPAIGN", "fo", a, "A"))
        seen = as_map(c.call("ELECT.OBSERVE", "fo"))
        eq((seen["sid"], seen["token"]), (a, ta))
    parked = Conn(lead.port)
    parked.send("ELECT.OBSERVE", "fo", "AFTER", seen["rev"], "WAIT", 30000)
    assert no_reply(parked)
    lead.kill9()
    parked.close()
    new = ready_leader([s for s in servers if s is not lead], timeout=10)
    with Conn(new.port) as c:
        m = leader(c, "fo")
        eq((m["sid"], m["token"], m["value"]), (a, ta, b"A"), "leadership on the new leader")
        eq(observe(c, "fo", "AFTER", seen["rev"]), None, "resuming AFTER rev: no older leader")
        eq(c.call("ELECT.CAMPAIGN", "fo", a, "A"), ta, "the retried campaign: the same token")
        expect_nil(c.call("ELECT.CAMPAIGN", "fo", b, "B"))
        with Conn(new.port) as co, Conn(new.port) as cb:
            co.send("ELECT.OBSERVE", "fo", "AFTER", seen["rev"], "WAIT", 10000)
            assert no_reply(co)
            cb.send("ELECT.CAMPAIGN", "fo", b, "B", "WAIT", 10000)
            wait_until(lambda: candidates(c, "fo") == 1, 5, what="b campaigns")
            ok(c.call("SESSION.CLOSE", a))
            tb = expect_int(cb.read_reply(timeout=5), "b leads once a's session closed")
            m = as_map(co.read_reply(timeout=5))
            eq((m["sid"], m["token"]), (b, tb), "the observer sees the new leader")
            assert tb > ta
            expect_err(c.call("PUT", "k", "v", "FENCE", "fo", ta), "STALE")


test_leadership_and_observers_survive_a_leader_kill.timeout = 40


def test_a_leader_lost_while_not_observed_is_reported_after_a_restart(ctx):
    srv = ctx.server()
    c = ctx.conn(srv)
    a = open_session(c, 60000, "LOCKDELAY", 0)
    ta = expect_int(c.call("ELECT.CAMPAIGN", "r", a, "A"))
    ok(c.call("SESSION.CLOSE", a))  # leaderless, while nobody observes
    srv.stop()
    srv.restart()
    c = ctx.conn(srv)
    m = observe(c, "r", "AFTER", ta)
    eq(m["sid"], 0, "the observer that last saw A learns that nobody leads")
    eq(observe(c, "r", "AFTER", m["rev"]), None, "and is not told again")


def walk(c, name, after, limit=20):
    """ELECT.OBSERVE AFTER each answer's rev until nothing more changed: the chain seen."""
    chain = []
    for _ in range(limit):
        m = observe(c, name, "AFTER", after)
        if m is None:
            return chain
        assert m["rev"] > after, (m, after)
        chain.append(m)
        after = m["rev"]
    raise AssertionError("no end after %d answers: %r" % (limit, chain))


def test_observe_after_walks_every_leader_that_came_and_went(ctx):
    c = ctx.conn()
    a, b, d = (open_session(c) for _ in range(3))
    start = observe(c, "w")["rev"]  # leaderless, as of now
    ta = expect_int(c.call("ELECT.CAMPAIGN", "w", a, "A"))
    cb, cd = ctx.conn(), ctx.conn()
    cb.send("ELECT.CAMPAIGN", "w", b, "B", "WAIT", 10000)
    wait_until(lambda: candidates(c, "w") == 1, 3, what="b campaigns")
    cd.send("ELECT.CAMPAIGN", "w", d, "C", "WAIT", 10000)
    wait_until(lambda: candidates(c, "w") == 2, 3, what="d campaigns")
    ok(c.call("ELECT.RESIGN", "w", a))
    tb = expect_int(cb.read_reply(timeout=5))
    pb = expect_int(c.call("ELECT.PROCLAIM", "w", b, tb, "B2"))
    ok(c.call("SESSION.CLOSE", b))  # d leads in the same entry
    td = expect_int(cd.read_reply(timeout=5))
    ok(c.call("ELECT.RESIGN", "w", d))
    gone = observe(c, "w")["rev"]
    chain = [(m["sid"], m["token"], m["value"], m["since_rev"], m["rev"], m["compacted"])
             for m in walk(c, "w", start)]
    eq(chain, [(a, ta, b"A", ta, ta, 0), (b, tb, b"B", tb, tb, 0), (b, tb, b"B2", tb, pb, 0),
               (d, td, b"C", td, td, 0), (0, 0, b"", 0, gone, 0)],
       "A, B, B's new value, C, nobody: one by one, in order")
    eq([m["sid"] for m in walk(c, "w", tb)], [b, d, 0], "from the middle: the rest")
    co = ctx.conn()
    co.send("ELECT.OBSERVE", "w", "AFTER", gone, "WAIT", 10000)
    assert no_reply(co)
    ta2 = expect_int(c.call("ELECT.CAMPAIGN", "w", a, "A3"))
    m = as_map(co.read_reply(timeout=5))
    eq((m["sid"], m["token"], m["compacted"]), (a, ta2, 0), "a parked observer: the change")
    c3 = ctx.conn()
    c3.call("HELLO", 3)
    m3 = c3.call("ELECT.OBSERVE", "w", "AFTER", td)
    assert isinstance(m3, dict), m3
    eq((m3["sid"], m3["rev"], m3["compacted"]), (0, gone, 0), "RESP3: the same map")

def test_observe_after_compacted_history_answers_the_current_state_flagged(ctx):
    ctx.server("--event-history", "5", "--event-value-max", "4")
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    start = revision(c)
    ta = expect_int(c.call("ELECT.CAMPAIGN", "h", a, "A"))
    expect_int(c.call("ELECT.PROCLAIM", "h", a, ta, "A2"))
    pa = expect_int(c.call("ELECT.PROCLAIM", "h", a, ta, "A3-long"))
    m = observe(c, "h", "AFTER", ta)
    eq((m["value"], m["compacted"]), (b"A2", 0), "still in the history")
    m = observe(c, "h", "AFTER", m["rev"])
    eq((m["value"], m["rev"], m["compacted"]), (b"A3-long", pa, 0),
       "a value the history did not keep, still current: from the state")
    for i in range(8):
        expect_int(c.call("PUT", "filler", str(i)))
    m = observe(c, "h", "AFTER", start)
    eq((m["sid"], m["token"], m["value"], m["rev"], m["compacted"]), (a, ta, b"A3-long", pa, 1),
       "the history after AFTER is gone: the current state, flagged")
    eq(observe(c, "h", "AFTER", m["rev"]), None, "and not answered again")
    ok(c.call("ELECT.RESIGN", "h", a))
    expect_int(c.call("ELECT.CAMPAIGN", "h", b, "B"))
    ok(c.call("ELECT.RESIGN", "h", b))  # nobody, b, nobody: all while a's rev is compacted
    m = walk(c, "h", pa)
    eq([(x["sid"], x["token"], x["compacted"]) for x in m], [(0, 0, 1)],
       "AFTER a rev below the floor: the current state (b skipped), flagged, then nothing")
