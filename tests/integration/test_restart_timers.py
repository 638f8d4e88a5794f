# SPDX-License-Identifier: Apache-2.0
"""Countdowns after a restart: a restarted node that becomes leader restarts every session
deadline, every WAIT bound and every lock-delay at its full length (docs/server.md, "Fresh TTL
on leadership"). Nothing ends early because time passed while the node was down, and nothing
is forgotten: each countdown still ends, one full length after the node became ready.

The moment the restarted node became ready is bracketed by our own readiness probes: `lo` is
the send time of the last probe it refused (it was not ready yet when it handled it), `hi` the
arrival of the first probe reply that succeeded. Lower bounds are measured from `lo` to a reply
that shows the countdown over; upper bounds from `hi` to the sending of a poll that still saw
it running. SLACK is generous: ASan build, apply of the expiry or cancel through the log.
"""

import time

from helpers import (RespError, eq, expect_int, expect_nil, lock_info, ms, ok, open_session,
                     session_info, wait_queued, wait_until)
from resp import Conn, ConnectionClosed, ReplyTimeout

SLACK = 0.700


def _restart_bracketed(srv, timeout=20.0):
    """kill -9 is done by the caller; restart and return (lo, hi) around the ready moment."""
    lo = time.monotonic()
    srv.restart(wait=False)
    c = None
    deadline = lo + timeout
    try:
        while time.monotonic() < deadline:
            t_send = time.monotonic()
            try:
                if c is None:
                    c = Conn(srv.port, timeout=1.0)
                r = c.call("GET", "p", timeout=1.0)
                if not isinstance(r, RespError):
                    return lo, time.monotonic()
            except (OSError, ConnectionClosed, ReplyTimeout):
                if c is not None:
                    c.close()
                    c = None
            assert srv.running(), "fencelockd exited during the restart"
            lo = t_send
            time.sleep(0.005)
    finally:
        if c is not None:
            c.close()
    raise AssertionError("fencelockd not ready %.0f s after the restart" % timeout)


def test_session_and_wait_bound_restart_at_full_length_after_kill9(ctx):
    # Sessions below --checkpoint-min-ttl are not checkpointed: a full TTL after the restart.
    # (test_checkpoint.py covers the checkpointed ones.)
    srv = ctx.server("--checkpoint-min-ttl", 60000)
    c = ctx.conn()
    holder = open_session(c, 60000)
    waiter = open_session(c, 60000)
    short = open_session(c, 1500)
    expect_int(c.call("LOCK", "q", holder))
    w = ctx.conn()
    w.send("LOCK", "q", waiter, "WAIT", 2000)
    wait_queued(c, "q", waiter)
    expect_int(c.call("SESSION.KEEPALIVE", short))
    # Spend most of both countdowns before the crash: if the restarted node resumed them
    # (instead of restarting them), the session would end ~0.6 s and the wait ~1.1 s after
    # the restart.
    time.sleep(0.9)
    srv.kill9()
    lo, hi = _restart_bracketed(srv)
    c = ctx.conn()

    s_alive = w_alive = None     # send time of the last poll that still saw it running
    s_dead = w_dead = None       # reply time of the first poll that saw it over
    first_remaining = None
    while (s_dead is None or w_dead is None) and time.monotonic() < hi + 2.0 + SLACK + 1.5:
        if s_dead is None:
            t0 = time.monotonic()
            r = session_info(c, short)
            t1 = time.monotonic()
            if isinstance(r, RespError):
                eq(r.code, "NOSESSION", "SESSION.INFO of the 1500 ms session")
                s_dead = t1
            else:
                s_alive = t0
                if first_remaining is None:
                    first_remaining = r.get("remaining_ms")
        if w_dead is None:
            t0 = time.monotonic()
            info = lock_info(c, "q")
            t1 = time.monotonic()
            assert info is not None and info["holder"] == holder, \
                "lock q after the restart: %r (holder %d has a 60 s session)" % (info, holder)
            if waiter in (info.get("waiters") or []):
                w_alive = t0
            else:
                w_dead = t1
        time.sleep(0.01)

    assert s_dead is not None, "session with ttl 1500 still alive %s after the restarted " \
        "node was ready" % ms(time.monotonic() - hi)
    assert w_dead is not None, "WAIT 2000 still queued %s after the restarted node was ready" \
        % ms(time.monotonic() - hi)
    assert first_remaining is None or first_remaining >= 1000, \
        "remaining_ms %r right after the restart: the deadline was not restarted at the full " \
        "ttl of 1500" % first_remaining
    assert s_dead - lo >= 1.5, "session with ttl 1500 gone %s after the restarted node " \
        "became ready: earlier than a full ttl" % ms(s_dead - lo)
    assert s_alive is None or s_alive - hi <= 1.5 + SLACK, "session with ttl 1500 still " \
        "alive %s after the restarted node became ready" % ms(s_alive - hi)
    assert w_dead - lo >= 2.0, "WAIT 2000 removed from the queue %s after the restarted node " \
        "became ready: earlier than its full bound" % ms(w_dead - lo)
    assert w_alive is None or w_alive - hi <= 2.0 + SLACK, "WAIT 2000 still queued %s after " \
        "the restarted node became ready" % ms(w_alive - hi)

    # The waiter's session itself lives on, without its wait; the holder still holds.
    info = session_info(c, waiter)
    assert not isinstance(info, RespError), "waiter session after its wait ended: %r" % (info,)
    eq(info["waits"], 0, "waits of the waiter session after the bound elapsed")
    eq(info["locks"], 0, "locks of the waiter session")
    ok(c.call("UNLOCK", "q", holder), "UNLOCK by the holder")
    expect_nil(c.call("LOCK.INFO", "q"), "lock q after the unlock: nobody waits any more")


def test_lockdelay_restarts_at_full_length_after_kill9(ctx):
    srv = ctx.srv
    c = ctx.conn()
    dying = open_session(c, 300, "LOCKDELAY", 2000)
    waiter = open_session(c, 60000)
    other = open_session(c, 60000)
    expect_int(c.call("LOCK", "d", dying))
    w = ctx.conn()
    w.send("LOCK", "d", waiter, "WAIT", 30000)
    wait_queued(c, "d", waiter)
    expect_int(c.call("SESSION.KEEPALIVE", dying))
    # The holder expires (the expiry is applied: LOCK.INFO shows the lock-delay) ...
    wait_until(lambda: (lock_info(c, "d") or {}).get("lockdelay") == 1, 3, interval=0.005,
               what="the holder's expiry to start the lock-delay")
    # ... and the node dies right after, with almost all of the 2000 ms delay to go.
    srv.kill9()
    lo, hi = _restart_bracketed(srv)
    c = ctx.conn()

    expect_nil(c.call("LOCK", "d", other), "try-lock right after the restart (lock-delay)")
    delayed = None   # send time of the last poll that saw the delay running
    granted = None   # reply time of the first poll that saw the waiter holding
    while granted is None and time.monotonic() < hi + 2.0 + SLACK + 1.5:
        t0 = time.monotonic()
        info = lock_info(c, "d")
        t1 = time.monotonic()
        assert info is not None, "lock d vanished after the restart (waiter %d queued)" % waiter
        if info["holder"] == 0:
            eq((info["lockdelay"], list(info["waiters"] or [])), (1, [waiter]),
               "lock d without a holder after the restart: (lockdelay, waiters)")
            delayed = t0
        else:
            eq(info["holder"], waiter, "holder of d after the lock-delay")
            eq(info["lockdelay"], 0, "lockdelay flag after the grant")
            granted = t1
        time.sleep(0.01)

    assert granted is not None, "waiter not granted %s after the restarted node was ready " \
        "(lock-delay 2000 ms)" % ms(time.monotonic() - hi)
    assert granted - lo >= 2.0, "waiter granted %s after the restarted node became ready: " \
        "the lock-delay of 2000 ms was not restarted in full" % ms(granted - lo)
    assert delayed is not None, "no poll saw the lock-delay after the restart"
    assert delayed - hi <= 2.0 + SLACK, "lock-delay still running %s after the restarted " \
        "node became ready (2000 ms)" % ms(delayed - hi)
    tok = lock_info(c, "d")["token"]
    eq(c.call("FENCE.CHECK", "d", tok), "OK", "FENCE.CHECK of the waiter's new token")
