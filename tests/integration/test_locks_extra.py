# SPDX-License-Identifier: Apache-2.0
"""LOCKS prefix [LIMIT n] (the existing locks by name) and UNLOCK by a queued session (it leaves
the queue; its blocked LOCK answers nil; the holder and the rest of the queue are untouched)."""

import random
import time

from cluster import info, ready_leader, start_cluster
from helpers import (RespError, eq, expect_err, expect_int, expect_nil, expect_ok, lock_info,
                     ms, ok, open_session, revision, session_info, wait_queued, wait_until,
                     waiters)
from resp import Conn, _parse, as_map, text

FIELDS = ["name", "holder", "token", "lockdelay", "waiters", "mode", "holders", "value",
          "max_hold_ms", "transitions"]


def locks(c, prefix, *opts):
    """LOCKS as a list of dicts (RESP2 flat arrays or RESP3 maps), names as bytes."""
    r = ok(c.call("LOCKS", prefix, *opts), "LOCKS %r %r" % (prefix, opts))
    assert isinstance(r, list), "LOCKS must answer an array, got %r" % (r,)
    out = []
    for item in r:
        m = as_map(item)
        eq(sorted(m), sorted(FIELDS), "fields of a LOCKS entry")
        out.append(m)
    return out


def names(items):
    return [m["name"] for m in items]


def _raw(c, *args):
    c.send(*args)
    data, _ = c.read_until_eof(timeout=0.3)
    return data


# ---- LOCKS ----

def test_locks_prefix_byte_order_and_fields(ctx):
    c = ctx.conn()
    s = open_session(c)
    # Inserted out of order; byte order puts "Z" (0x5a) before "a" (0x61), a shorter name before
    # its extensions, and "job/" itself is a name with the prefix.
    want = {}
    for n in ["job/b", "other", "job/a2", "jobs", "job/Z", "job/a", "job/", "jo", "job/a/x"]:
        want[n.encode()] = expect_int(c.call("LOCK", n, s), "LOCK %s" % n)
    got = locks(c, "job/")
    eq(names(got), [b"job/", b"job/Z", b"job/a", b"job/a/x", b"job/a2", b"job/b"],
       "LOCKS job/ (prefix filter, byte order)")
    for m in got:
        eq((m["holder"], m["token"], m["lockdelay"], m["waiters"]),
           (s, want[m["name"]], 0, 0), "LOCKS entry of %r" % m["name"])
    eq(names(locks(c, "")), sorted(want), "LOCKS \"\" lists every lock")
    eq(names(locks(c, "job")), [b"job/", b"job/Z", b"job/a", b"job/a/x", b"job/a2", b"job/b",
                                b"jobs"])
    eq(names(locks(c, "job/a")), [b"job/a", b"job/a/x", b"job/a2"])
    eq(names(locks(c, "job/a/x")), [b"job/a/x"], "a whole name as the prefix")
    eq(locks(c, "job/a/x/"), [], "longer than any name")
    eq(locks(c, "nomatch"), [], "no lock with that prefix")
    eq(locks(c, "JOB/"), [], "prefixes are case-sensitive bytes")

    # LIMIT keeps the first n in byte order (not the first n found in the table).
    eq(names(locks(c, "job/", "LIMIT", 2)), [b"job/", b"job/Z"])
    eq(names(locks(c, "job/", "limit", 1)), [b"job/"], "option names are case-insensitive")
    eq(names(locks(c, "", "LIMIT", 3)), [b"jo", b"job/", b"job/Z"])
    eq(len(locks(c, "", "LIMIT", 10000)), len(want), "LIMIT at the maximum")

    # Names are binary: compared as unsigned bytes, NUL included.
    for n in (b"b\xff", b"b\x00z", b"b", b"b\x80", b"b\x7f", b"b\x00"):
        expect_int(c.call("LOCK", n, s))
    eq(names(locks(c, "b")), [b"b", b"b\x00", b"b\x00z", b"b\x7f", b"b\x80", b"b\xff"])
    eq(names(locks(c, b"b\x00")), [b"b\x00", b"b\x00z"], "a prefix ending in NUL")


def test_locks_limit_selects_the_smallest_names_among_many(ctx):
    c = ctx.conn()
    s = open_session(c)
    rng = random.Random(7)
    all_names = set()
    while len(all_names) < 120:
        n = "k" + "".join(rng.choice("abcXYZ019/") for _ in range(rng.randint(0, 6)))
        all_names.add(n.encode())
    for n in all_names:
        expect_int(c.call("LOCK", n, s))
    # Some that share the prefix only in part, or not at all.
    for n in (b"j", b"l", b"K"):
        expect_int(c.call("LOCK", n, s))
    ordered = sorted(all_names)
    for limit in (1, 2, 7, 64, 119, 120, 500):
        eq(names(locks(c, "k", "LIMIT", limit)), ordered[:limit], "LOCKS k LIMIT %d" % limit)
    sub = sorted(n for n in all_names if n.startswith(b"ka"))
    eq(names(locks(c, "ka", "LIMIT", 5)), sub[:5], "prefix and limit together")
    eq(names(locks(c, "k")), ordered, "default limit: all of them")


def test_locks_bad_arguments(ctx):
    c = ctx.conn()
    s = open_session(c)
    expect_int(c.call("LOCK", "a", s))
    for args, what in [((), "no prefix"),
                       (("a", "LIMIT"), "LIMIT without a number"),
                       (("a", "LIMIT", 0), "LIMIT 0"),
                       (("a", "LIMIT", 10001), "LIMIT above --max-keys-reply"),
                       (("a", "LIMIT", "x"), "LIMIT not a number"),
                       (("a", "LIMIT", -1), "LIMIT negative"),
                       (("a", "LIMIT", "+3"), "LIMIT with a sign"),
                       (("a", "LIMIT", "99999999999999999999999"), "LIMIT overflowing"),
                       (("a", "TOP", 3), "unknown option"),
                       (("a", "LIMIT", 3, "LIMIT"), "trailing argument"),
                       (("a", "b"), "two prefixes")]:
        expect_err(c.call("LOCKS", *args), "ERR", "LOCKS %s" % what)
    eq(c.call("PING"), "PONG", "the connection stays usable")
    eq(names(locks(c, "a")), [b"a"])


def test_locks_default_limit_is_max_keys_reply(ctx):
    srv = ctx.server("--max-keys-reply", "3")
    c = ctx.conn(srv)
    s = open_session(c)
    for n in ("e", "d", "c", "b", "a"):
        expect_int(c.call("LOCK", n, s))
    eq(names(locks(c, "")), [b"a", b"b", b"c"], "no LIMIT: at most --max-keys-reply")
    eq(names(locks(c, "", "LIMIT", 3)), [b"a", b"b", b"c"])
    expect_err(c.call("LOCKS", "", "LIMIT", 4), "ERR", "LIMIT above --max-keys-reply 3")


def test_locks_waiters_count_release_and_free_locks_vanish(ctx):
    c = ctx.conn()
    h, s2, s3 = open_session(c), open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "w", h))
    w2, w3 = ctx.conn(), ctx.conn()
    w2.send("LOCK", "w", s2, "WAIT", 20000)
    wait_queued(c, "w", s2)
    w3.send("LOCK", "w", s3, "WAIT", 20000)
    wait_queued(c, "w", s3)
    expect_nil(c.call("LOCK", "w", open_session(c)), "a try-lock does not queue")
    eq([(m["holder"], m["token"], m["waiters"]) for m in locks(c, "w")], [(h, t1, 2)])

    expect_ok(c.call("UNLOCK", "w", h))
    t2 = expect_int(w2.read_reply(timeout=3), "s2 granted")
    eq([(m["holder"], m["token"], m["waiters"]) for m in locks(c, "w")], [(s2, t2, 1)])
    expect_ok(c.call("UNLOCK", "w", s2))
    t3 = expect_int(w3.read_reply(timeout=3), "s3 granted")
    eq([(m["holder"], m["token"], m["waiters"]) for m in locks(c, "w")], [(s3, t3, 0)])
    expect_ok(c.call("UNLOCK", "w", s3))
    eq(locks(c, "w"), [], "a released lock nobody waits for is gone")

    # Released by SESSION.CLOSE too; a lock never taken (failed try-lock) never appears.
    expect_int(c.call("LOCK", "x", s2))
    expect_int(c.call("LOCK", "y", s2))
    eq(names(locks(c, "")), [b"x", b"y"])
    expect_ok(c.call("SESSION.CLOSE", s2))
    eq(locks(c, ""), [], "SESSION.CLOSE released them")


def test_locks_shows_lockdelay_after_an_expiry(ctx):
    c = ctx.conn()
    dead = open_session(c, 400, "LOCKDELAY", 1500)
    s2 = open_session(c, 20000)
    t_d1 = expect_int(c.call("LOCK", "d1", dead))
    t_d2 = expect_int(c.call("LOCK", "d2", dead))
    w = ctx.conn()
    w.send("LOCK", "d1", s2, "WAIT", 10000)
    wait_queued(c, "d1", s2)
    wait_until(lambda: isinstance(session_info(c, dead), RespError), timeout=3,
               what="the session with ttl 400 expiring")
    t_seen = time.monotonic()
    got = {m["name"]: m for m in locks(c, "d")}
    eq(sorted(got), [b"d1", b"d2"], "locks in lock-delay exist (d2 has no waiters)")
    for n, tok in ((b"d1", t_d1), (b"d2", t_d2)):
        eq((got[n]["holder"], got[n]["lockdelay"]), (0, 1), "%r during lock-delay" % n)
        li = lock_info(c, n)
        eq(got[n]["token"], li["token"], "LOCKS and LOCK.INFO agree on the token of %r" % n)
    eq((got[b"d1"]["waiters"], got[b"d2"]["waiters"]), (1, 0), "waiters during lock-delay")
    assert time.monotonic() - t_seen < 1.2, "too slow to observe the lock-delay"

    t2 = expect_int(w.read_reply(timeout=4), "s2 granted once the lock-delay ended")
    assert t2 > t_d1
    got = locks(c, "d")
    eq([(m["name"], m["holder"], m["token"], m["lockdelay"], m["waiters"]) for m in got],
       [(b"d1", s2, t2, 0, 0)], "after the lock-delay: d1 held by s2, d2 gone")


def test_locks_resp2_and_resp3_shapes(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "r", s))
    eq(_raw(c, "LOCKS", "none"), b"*0\r\n", "RESP2 empty array")
    raw2 = _raw(c, "LOCKS", "r")
    want2 = (b"*1\r\n*20\r\n$4\r\nname\r\n$1\r\nr\r\n$6\r\nholder\r\n:%d\r\n$5\r\ntoken\r\n"
             b":%d\r\n$9\r\nlockdelay\r\n:0\r\n$7\r\nwaiters\r\n:0\r\n"
             b"$4\r\nmode\r\n$9\r\nexclusive\r\n$7\r\nholders\r\n:1\r\n"
             b"$5\r\nvalue\r\n$0\r\n\r\n$11\r\nmax_hold_ms\r\n:0\r\n$11\r\ntransitions\r\n:0\r\n"
             % (s, t))
    eq(raw2, want2, "RESP2 LOCKS: an array of flat 20-element arrays")

    ok(c.call("HELLO", 3))
    eq(_raw(c, "LOCKS", "none"), b"*0\r\n", "RESP3 empty array")
    raw3 = _raw(c, "LOCKS", "r")
    eq(raw3, b"*1\r\n%10\r\n" + want2[len(b"*1\r\n*20\r\n"):], "RESP3 LOCKS: an array of maps")
    v, end = _parse(raw3, 0)
    eq(end, len(raw3), "one reply")
    eq(v, [{"name": b"r", "holder": s, "token": t, "lockdelay": 0, "waiters": 0,
            "mode": b"exclusive", "holders": 1, "value": b"", "max_hold_ms": 0,
            "transitions": 0}])
    ok(c.call("HELLO", 2))
    eq(_raw(c, "LOCKS", "r"), want2, "back to RESP2")


def test_locks_readonly_on_a_follower(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    h, s2 = open_session(c), open_session(c)
    for n in ("inv/b", "inv/a", "other"):
        expect_int(c.call("LOCK", n, h))
    w = ctx.conn(leader)
    w.send("LOCK", "inv/b", s2, "WAIT", 20000)
    wait_queued(c, "inv/b", s2)
    want = locks(c, "inv/")
    eq([(m["name"], m["waiters"]) for m in want], [(b"inv/a", 0), (b"inv/b", 1)])
    rev = revision(c)

    f = [s for s in servers if s is not leader][0]
    wait_until(lambda: (info(f) or {}).get("revision", 0) >= rev, timeout=10, interval=0.05,
               what="the follower applying the locks")
    with Conn(f.port) as fc:
        expect_err(fc.call("LOCKS", "inv/"), "NOTLEADER", "linearizable by default")
        expect_ok(fc.call("READONLY"))
        eq(locks(fc, "inv/"), want, "READONLY: the follower's own state")
        eq(names(locks(fc, "", "LIMIT", 1)), [b"inv/a"])
        expect_err(fc.call("LOCKS", "", "LIMIT", 0), "ERR", "arguments checked on followers too")
        ok(fc.call("HELLO", 3))
        eq(fc.call("LOCKS", "inv/a"), [want[0]], "RESP3 on the follower")
        expect_ok(fc.call("READWRITE"))
        expect_err(fc.call("LOCKS", "inv/"), "NOTLEADER", "READWRITE again")


# ---- UNLOCK by a queued session ----

def test_unlock_by_queued_session_leaves_queue_at_once(ctx):
    c = ctx.conn()
    h, s2, s3 = open_session(c), open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "q", h))
    w2, w3 = ctx.conn(), ctx.conn()
    w2.send("LOCK", "q", s2, "WAIT", 20000)
    wait_queued(c, "q", s2)
    w3.send("LOCK", "q", s3, "WAIT", 20000)
    wait_queued(c, "q", s3)
    eq(session_info(c, s2)["waits"], 1)

    t0 = time.monotonic()
    expect_ok(c.call("UNLOCK", "q", s2, "REQ", s2, 1), "UNLOCK by a queued session")
    expect_nil(w2.read_reply(timeout=3), "its blocked LOCK answers nil")
    took = time.monotonic() - t0
    assert took < 1.0, "the blocked LOCK answered %s after the UNLOCK" % ms(took)
    li = lock_info(c, "q")
    eq((li["holder"], li["token"], list(li["waiters"])), (h, t1, [s3]),
       "the holder keeps the lock; s3 keeps its place")
    expect_ok(c.call("FENCE.CHECK", "q", t1), "the holder's token is still current")
    eq(session_info(c, s2)["waits"], 0, "SESSION.INFO waits of the session that left")
    eq([m["waiters"] for m in locks(c, "q")], [1])

    rev = revision(c)
    expect_ok(c.call("UNLOCK", "q", s2, "REQ", s2, 1), "a retry of the same REQ: cached +OK")
    eq(revision(c), rev, "the retry applied nothing")
    expect_err(c.call("UNLOCK", "q", s2), "NOTHOLDER", "a second UNLOCK by the session that left")
    expect_err(c.call("UNLOCK", "q", s2, "REQ", s2, 2), "NOTHOLDER", "also with a new REQ")
    eq(revision(c), rev, "NOTHOLDER changed nothing")

    expect_ok(c.call("UNLOCK", "q", h))
    t3 = expect_int(w3.read_reply(timeout=3), "the next waiter is granted")
    assert t3 > t1
    li = lock_info(c, "q")
    eq((li["holder"], li["token"], list(li["waiters"] or [])), (s3, t3, []),
       "s3 holds; the session that left is not queued again")
    assert not w2.has_data(0.2), "the session that left got a second reply"
    expect_err(c.call("UNLOCK", "q", s2), "NOTHOLDER", "after the hand-over too")
    expect_ok(c.call("UNLOCK", "q", s3))
    expect_nil(lock_info(c, "q"), "free at the end")


def test_unlock_pipelined_behind_its_own_blocked_lock(ctx):
    """A client with one connection: the UNLOCK sent behind its blocked LOCK ... WAIT."""
    c = ctx.conn()
    h, s2 = open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "p", h))
    w = ctx.conn()
    w.send("LOCK", "p", s2, "WAIT", 20000)
    wait_queued(c, "p", s2)
    t0 = time.monotonic()
    w.send("UNLOCK", "p", s2)
    expect_nil(w.read_reply(timeout=3), "the blocked LOCK answers nil first")
    expect_ok(w.read_reply(timeout=3), "then the UNLOCK")
    took = time.monotonic() - t0
    assert took < 1.0, "answered after %s, not at once" % ms(took)
    li = lock_info(c, "p")
    eq((li["holder"], li["token"], list(li["waiters"] or [])), (h, t1, []))


def test_unlock_by_queued_session_whose_connection_dropped(ctx):
    """The case the change is for: the client gave up its wait and never saw the answer."""
    c = ctx.conn()
    h, s2, s3 = open_session(c), open_session(c), open_session(c)
    expect_int(c.call("LOCK", "o", h))
    w = Conn(ctx.srv.port)
    w.send("LOCK", "o", s2, "WAIT", 20000)
    wait_queued(c, "o", s2)
    w.close()
    time.sleep(0.1)
    eq(waiters(c, "o"), [s2], "the dropped connection left its session queued")
    w3 = ctx.conn()
    w3.send("LOCK", "o", s3, "WAIT", 20000)
    wait_queued(c, "o", s3)
    expect_ok(c.call("UNLOCK", "o", s2), "UNLOCK of the orphaned wait")
    eq(waiters(c, "o"), [s3])
    expect_ok(c.call("UNLOCK", "o", h))
    expect_int(w3.read_reply(timeout=3), "s3 granted, not the orphan")
    eq(lock_info(c, "o")["holder"], s3)
    eq(session_info(c, s2)["locks"], 0, "the session that left holds nothing")


def test_unlock_by_queued_session_then_queue_again_keeps_the_new_wait(ctx):
    """The first wait's timer (WAIT 1500) must not cancel a later wait of the same session."""
    c = ctx.conn()
    h, s2 = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "t", h))
    w = ctx.conn()
    w.send("LOCK", "t", s2, "WAIT", 1500)
    wait_queued(c, "t", s2)
    t_first = time.monotonic()
    expect_ok(c.call("UNLOCK", "t", s2))
    expect_nil(w.read_reply(timeout=3))
    w.send("LOCK", "t", s2, "WAIT", 20000)
    wait_queued(c, "t", s2)
    time.sleep(max(0.0, t_first + 1.8 - time.monotonic()))  # past the first wait's deadline
    assert not w.has_data(0.0), "the new wait answered early: %r" % (w.read_reply(1),)
    eq(waiters(c, "t"), [s2], "still queued after the first wait's deadline")
    expect_ok(c.call("UNLOCK", "t", h))
    tok = expect_int(w.read_reply(timeout=3), "the new wait is granted")
    eq(lock_info(c, "t")["token"], tok)


def test_unlock_by_waiter_during_lockdelay(ctx):
    c = ctx.conn()
    dead = open_session(c, 400, "LOCKDELAY", 1500)
    s2, s3 = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "ld", dead))
    w2, w3 = ctx.conn(), ctx.conn()
    w2.send("LOCK", "ld", s2, "WAIT", 10000)
    wait_queued(c, "ld", s2)
    w3.send("LOCK", "ld", s3, "WAIT", 10000)
    wait_queued(c, "ld", s3)
    wait_until(lambda: isinstance(session_info(c, dead), RespError), timeout=3,
               what="the holder's session expiring")
    eq(lock_info(c, "ld")["lockdelay"], 1)
    expect_ok(c.call("UNLOCK", "ld", s2), "a waiter leaves during lock-delay")
    expect_nil(w2.read_reply(timeout=3))
    eq([(m["holder"], m["lockdelay"], m["waiters"]) for m in locks(c, "ld")], [(0, 1, 1)])
    tok = expect_int(w3.read_reply(timeout=4), "s3 granted when the lock-delay ends")
    eq((lock_info(c, "ld")["holder"], lock_info(c, "ld")["token"]), (s3, tok))
    assert not w2.has_data(0.1)
    eq(text(c.call("PING")), "PONG")
