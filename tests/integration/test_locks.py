# SPDX-License-Identifier: Apache-2.0
"""LOCK / UNLOCK / LOCK.INFO / FENCE.CHECK semantics on one node."""

import time

from helpers import (eq, expect_err, expect_int, expect_nil, expect_ok, lock_info, ms, ok, open_session,
                     revision, session_info, wait_queued, waiters)


def test_lock_wait_times_out_with_nil_and_leaves_queue(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    t1 = expect_int(c.call("LOCK", "l", holder))
    w = ctx.conn()
    t0 = time.monotonic()
    r = w.call("LOCK", "l", s2, "WAIT", 700, timeout=5)
    elapsed = time.monotonic() - t0
    expect_nil(r, "LOCK WAIT 700 on a held lock")
    assert elapsed >= 0.7, "LOCK WAIT 700 gave up after only %s" % ms(elapsed)
    assert elapsed <= 1.2, "LOCK WAIT 700 answered after %s" % ms(elapsed)
    info = lock_info(c, "l")
    eq(info["holder"], holder)
    eq(info["token"], t1)
    eq(list(info["waiters"] or []), [], "waiters after the wait elapsed")
    eq(session_info(c, s2)["waits"], 0, "SESSION.INFO waits of the timed-out session")
    # The timed-out waiter must not be granted later.
    ok(c.call("UNLOCK", "l", holder))
    eq(c.call("LOCK.INFO", "l"), None, "lock after the holder left (nobody waits)")


def test_try_lock_on_busy_lock_is_nil_at_once(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    expect_int(c.call("LOCK", "l", holder))
    rev = revision(c)
    for args in (("LOCK", "l", s2), ("LOCK", "l", s2, "WAIT", 0)):
        t0 = time.monotonic()
        r = c.call(*args, timeout=3)
        elapsed = time.monotonic() - t0
        expect_nil(r, " ".join(map(str, args)))
        assert elapsed < 0.2, "%r took %s" % (args, ms(elapsed))
    eq(revision(c), rev, "a failed try-lock changes nothing")
    eq(waiters(c, "l"), [], "a try-lock never enqueues")


def test_lock_by_holder_returns_existing_token(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "l", s))
    rev = revision(c)
    eq(c.call("LOCK", "l", s), t, "second LOCK by the holder")
    eq(c.call("LOCK", "l", s, "WAIT", 1000, timeout=3), t, "LOCK WAIT by the holder")
    eq(revision(c), rev, "re-locking changes nothing")


def test_tokens_are_unique_and_rising_across_locks(ctx):
    c = ctx.conn()
    s = open_session(c)
    seen = []
    for i in range(20):
        seen.append(expect_int(c.call("LOCK", "lock%d" % (i % 3), s)))
        ok(c.call("UNLOCK", "lock%d" % (i % 3), s))
        expect_int(c.call("PUT", "k", str(i)))
    eq(seen, sorted(set(seen)), "tokens across locks")


def test_unlock_by_non_holder_is_notholder(ctx):
    c = ctx.conn()
    holder = open_session(c)
    other = open_session(c)
    t = expect_int(c.call("LOCK", "l", holder))
    rev = revision(c)
    expect_err(c.call("UNLOCK", "l", other), "NOTHOLDER", "UNLOCK by another session")
    expect_err(c.call("UNLOCK", "free", other), "NOTHOLDER", "UNLOCK of a free lock")
    eq(revision(c), rev)
    eq(lock_info(c, "l")["token"], t, "lock untouched")


def test_unlock_by_queued_waiter_leaves_the_queue_and_its_wait_answers_nil(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2, s3 = open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "l", holder))
    w2, w3 = ctx.conn(), ctx.conn()
    w2.send("LOCK", "l", s2, "WAIT", 10000)
    wait_queued(c, "l", s2)
    w3.send("LOCK", "l", s3, "WAIT", 10000)
    wait_queued(c, "l", s3)
    expect_ok(c.call("UNLOCK", "l", s2), "UNLOCK by a waiter leaves the queue")
    eq(w2.read_reply(timeout=3), None, "the waiter's blocked LOCK answers nil")
    eq(waiters(c, "l"), [s3])
    eq((lock_info(c, "l")["holder"], lock_info(c, "l")["token"]), (holder, t1),
       "the holder keeps its lock")
    expect_err(c.call("UNLOCK", "l", s2), "NOTHOLDER", "only once")
    ok(c.call("UNLOCK", "l", holder))
    expect_int(w3.read_reply(timeout=3), "the next waiter is granted, not the one that left")
    eq(lock_info(c, "l")["holder"], s3)


def test_lock_info_fields(ctx):
    c = ctx.conn()
    s = open_session(c)
    eq(c.call("LOCK.INFO", "nothing"), None, "LOCK.INFO of an unknown lock")
    now = time.time() * 1000
    t = expect_int(c.call("LOCK", "l", s))
    info = lock_info(c, "l")
    eq(info["holder"], s)
    eq(info["token"], t)
    eq(info["lockdelay"], 0)
    eq(list(info["waiters"] or []), [])
    assert abs(info["held_since_ms"] - now) < 5000, \
        "held_since_ms %r far from the wall clock %.0f" % (info["held_since_ms"], now)
    si = session_info(c, s)
    eq(si["locks"], 1, "SESSION.INFO locks")


def test_parked_client_disconnect_keeps_queue_place(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    t1 = expect_int(c.call("LOCK", "l", holder))
    w = ctx.conn()
    w.send("LOCK", "l", s2, "WAIT", 10000)
    wait_queued(c, "l", s2)
    w.close()
    time.sleep(0.2)  # let the server notice the dropped connection
    eq(waiters(c, "l"), [s2], "waiters after the parked client disconnected")
    ok(c.call("UNLOCK", "l", holder))
    info = lock_info(c, "l")
    eq(info["holder"], s2, "holder after the unlock")
    assert info["token"] > t1
    eq(c.call("LOCK", "l", s2), info["token"], "re-issued LOCK gets the same token")


def test_closed_session_loses_queue_place(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    s3 = open_session(c)
    expect_int(c.call("LOCK", "l", holder))
    w2, w3 = ctx.conn(), ctx.conn()
    w2.send("LOCK", "l", s2, "WAIT", 3000)
    wait_queued(c, "l", s2)
    w3.send("LOCK", "l", s3, "WAIT", 10000)
    wait_queued(c, "l", s3)
    eq(c.call("SESSION.CLOSE", s2), "OK")
    eq(waiters(c, "l"), [s3], "waiters after the first waiter's session closed")
    r = w2.read_reply(timeout=4)
    assert r is None or getattr(r, "code", "") == "NOSESSION", \
        "blocked LOCK of a closed session answered %r (expected nil or -NOSESSION)" % (r,)
    ok(c.call("UNLOCK", "l", holder))
    t3 = expect_int(w3.read_reply(timeout=3), "grant to the next live waiter")
    eq(lock_info(c, "l")["holder"], s3)
    eq(lock_info(c, "l")["token"], t3)


def test_session_close_releases_locks_and_grants_next(ctx):
    c = ctx.conn()
    holder = open_session(c)
    s2 = open_session(c)
    t1 = expect_int(c.call("LOCK", "l", holder))
    w = ctx.conn()
    w.send("LOCK", "l", s2, "WAIT", 10000)
    wait_queued(c, "l", s2)
    eq(c.call("SESSION.CLOSE", holder), "OK")
    t2 = expect_int(w.read_reply(timeout=2), "grant after the holder's session closed")
    assert t2 > t1
    expect_err(c.call("FENCE.CHECK", "l", t1), "STALE")


def test_fence_check_current_ok_old_stale(ctx):
    c = ctx.conn()
    s1 = open_session(c)
    s2 = open_session(c)
    t1 = expect_int(c.call("LOCK", "f", s1))
    eq(c.call("FENCE.CHECK", "f", t1), "OK", "current token")
    ok(c.call("UNLOCK", "f", s1))
    expect_err(c.call("FENCE.CHECK", "f", t1), "STALE", "token of a released lock")
    t2 = expect_int(c.call("LOCK", "f", s2))
    expect_err(c.call("FENCE.CHECK", "f", t1), "STALE", "old token")
    eq(c.call("FENCE.CHECK", "f", t2), "OK", "new holder's token")
    expect_err(c.call("FENCE.CHECK", "f", t2 + 100), "STALE", "a token newer than the holder's")
    expect_err(c.call("FENCE.CHECK", "never", t2), "STALE", "a lock that never existed")


def test_fenced_del_and_put_with_wrong_lock_name(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "a", s))
    expect_int(c.call("PUT", "k", "v", "FENCE", "a", t))
    rev = revision(c)
    expect_err(c.call("PUT", "k", "w", "FENCE", "b", t), "STALE", "token of another lock")
    expect_err(c.call("DEL", "k", "FENCE", "a", t - 1), "STALE", "DEL with an old token")
    eq(revision(c), rev, "stale writes change nothing")
    eq(ok(c.call("GET", "k")), b"v")
    eq(c.call("DEL", "k", "FENCE", "a", t), 1, "fenced DEL with the current token")
    eq(c.call("GET", "k"), None)
