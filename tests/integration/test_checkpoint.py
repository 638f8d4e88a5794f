# SPDX-License-Identifier: Apache-2.0
"""Lease checkpoints: an abandoned long session still ends across a leader change, and a live
one is never cut short by a checkpoint taken before its keepalive."""

import time

from helpers import eq, expect_int, wait_until
from test_http import metric
from resp import Conn, RespError


def alive(port, sid):
    with Conn(port, timeout=2.0) as c:
        r = c.call("SESSION.INFO", sid)
        return not isinstance(r, RespError)


def test_checkpoint_ends_abandoned_session_after_restart_and_spares_kept_alive_one(ctx):
    srv = ctx.server("--checkpoint-min-ttl", 5000)
    c = ctx.conn()
    t0 = time.monotonic()
    a = expect_int(c.call("SESSION.OPEN", 6000))  # abandoned: never kept alive
    b = expect_int(c.call("SESSION.OPEN", 6000))
    time.sleep(3.6)  # the leader checkpoints both half-way (about 3 s left each)
    t_keep = time.monotonic()
    expect_int(c.call("SESSION.KEEPALIVE", b), "keepalive after a checkpoint")
    time.sleep(0.4)
    c.close()
    srv.kill9()
    srv.restart()
    t_ready = time.monotonic()
    # Without the checkpoint a would get a full 6 s from the restart (t_ready + 6).
    wait_until(lambda: not alive(srv.port, a), timeout=8, interval=0.05,
               what="the abandoned session to expire")
    t_a = time.monotonic()
    assert t_a - t0 >= 6.0, "a expired %.2f s after open, before its ttl" % (t_a - t0)
    assert t_a < t_ready + 5.0, \
        "a expired %.2f s after the restart: the checkpoint was not used" % (t_a - t_ready)
    # b's keepalive was acknowledged only after clearing its checkpoint: a full ttl from then.
    while time.monotonic() < t_keep + 5.7:
        assert alive(srv.port, b), "b expired %.2f s after its acknowledged keepalive" % (
            time.monotonic() - t_keep)
        time.sleep(0.1)


def test_keepalives_after_the_clearing_checkpoint_propose_nothing(ctx):
    """A keepalive after a checkpoint proposes one clearing checkpoint; once that committed, the
    session's later keepalives are answered after their read barrier alone. (The in-flight mark
    of the clearing checkpoint was never taken back: every later keepalive proposed another
    checkpoint, one log entry each.)"""
    srv = ctx.server("--checkpoint-min-ttl", 1000)
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 4000))
    opened = metric(srv, "fencelock_proposals_total")
    # The half-way checkpoint (about 2 s left) is the one proposal of an idle session.
    wait_until(lambda: metric(srv, "fencelock_proposals_total") > opened, timeout=6,
               interval=0.05, what="the half-way checkpoint")
    before = metric(srv, "fencelock_proposals_total")
    eq(before, opened + 1, "one checkpoint proposed for the idle session")
    expect_int(c.call("SESSION.KEEPALIVE", sid), "keepalive after the checkpoint")
    cleared = metric(srv, "fencelock_proposals_total")
    eq(cleared, before + 1, "the keepalive proposed one clearing checkpoint")
    for i in range(10):
        expect_int(c.call("SESSION.KEEPALIVE", sid), "keepalive %d" % i)
    eq(metric(srv, "fencelock_proposals_total"), cleared,
       "keepalives after the clearing checkpoint committed proposed nothing")
