# SPDX-License-Identifier: Apache-2.0
"""LOCKDELAY: after a holder's session expires its locks stay unavailable for the delay;
a clean UNLOCK or SESSION.CLOSE hands over at once."""

import time

from helpers import (RespError, eq, expect_int, expect_nil, lock_info, ms, ok, open_session,
                     session_info, wait_queued)


def test_lockdelay_after_expiry_delays_next_grant(ctx):
    c = ctx.conn()
    s1 = open_session(c, 500, "LOCKDELAY", 1000)
    s2 = open_session(c, 20000)
    s3 = open_session(c, 20000)
    expect_int(c.call("LOCK", "d", s1))
    w = ctx.conn()
    w.send("LOCK", "d", s2, "WAIT", 10000)
    wait_queued(c, "d", s2)
    t_ka = time.monotonic()
    expect_int(c.call("SESSION.KEEPALIVE", s1))

    # Find the expiry: last poll that saw s1 alive (sent) .. first that did not (answered).
    last_alive = t_ka
    deadline = t_ka + 3
    while True:
        t0 = time.monotonic()
        r = session_info(c, s1)
        t1 = time.monotonic()
        if isinstance(r, RespError):
            eq(r.code, "NOSESSION")
            dead = t1
            break
        last_alive = t0
        assert t1 < deadline, "session with ttl 500 still alive after 3 s"
        time.sleep(0.01)

    info = lock_info(c, "d")
    assert info is not None, "lock vanished during lock-delay"
    eq(info["holder"], 0, "holder during lock-delay")
    eq(info["lockdelay"], 1, "lockdelay flag after the holder's session expired")
    eq(list(info["waiters"] or []), [s2], "waiters during lock-delay")
    expect_nil(c.call("LOCK", "d", s3), "try-lock during lock-delay")
    assert not w.has_data(0.0), "waiter granted right at the expiry (lock-delay ignored)"

    tok = expect_int(w.read_reply(timeout=4), "grant after the lock-delay")
    t_grant = time.monotonic()
    assert t_grant - last_alive >= 1.0, \
        "granted %s after the holder's expiry: lock-delay is 1000 ms" % ms(t_grant - last_alive)
    assert t_grant - dead <= 1.3, \
        "granted %s after the expiry was seen: lock-delay 1000 ms" % ms(t_grant - dead)
    info = lock_info(c, "d")
    eq(info["holder"], s2)
    eq(info["token"], tok)
    eq(info["lockdelay"], 0)


def _handover_is_immediate(ctx, release):
    c = ctx.conn()
    s1 = open_session(c, 20000, "LOCKDELAY", 2000)
    s2 = open_session(c, 20000)
    expect_int(c.call("LOCK", "d", s1))
    w = ctx.conn()
    w.send("LOCK", "d", s2, "WAIT", 10000)
    wait_queued(c, "d", s2)
    t0 = time.monotonic()
    eq(c.call(*release(s1)), "OK", " ".join(map(str, release(s1))))
    tok = expect_int(w.read_reply(timeout=3), "grant after a clean release")
    elapsed = time.monotonic() - t0
    assert elapsed < 0.3, "clean release of a LOCKDELAY session granted after %s" % ms(elapsed)
    info = lock_info(c, "d")
    eq(info["holder"], s2)
    eq(info["token"], tok)
    eq(info["lockdelay"], 0)


def test_lockdelay_not_applied_on_clean_unlock(ctx):
    _handover_is_immediate(ctx, lambda s: ("UNLOCK", "d", s))


def test_lockdelay_not_applied_on_session_close(ctx):
    _handover_is_immediate(ctx, lambda s: ("SESSION.CLOSE", s))


def test_lockdelay_on_free_lock_without_waiters_then_lock_again(ctx):
    c = ctx.conn()
    s1 = open_session(c, 300, "LOCKDELAY", 800)
    s2 = open_session(c, 20000)
    expect_int(c.call("LOCK", "d", s1))
    t_ka = time.monotonic()
    expect_int(c.call("SESSION.KEEPALIVE", s1))
    # Until the expiry plus the delay, a try-lock fails; then it succeeds.
    while True:
        r = c.call("LOCK", "d", s2)
        now = time.monotonic()
        if r is not None:
            expect_int(r, "try-lock after the delay")
            break
        assert now - t_ka < 3, "lock still unavailable 3 s after the holder's keepalive"
        time.sleep(0.02)
    assert now - t_ka >= 1.1, "lock available %s after the keepalive: ttl 300 + delay 800" \
        % ms(now - t_ka)
    ok(c.call("PING"))
