# SPDX-License-Identifier: Apache-2.0
"""docs/design.md "What it is for": a paused holder's lock expires; the fencing token keeps its late write out."""

import time

from helpers import (Keepalive, expect_err, expect_int, eq, kv_get, ok, open_session,
                     wait_queued, session_info, ms)


def test_expired_holder_is_fenced_out_by_next_holder(ctx):
    c = ctx.conn()
    sa = open_session(c, 1000)
    ta = expect_int(c.call("LOCK", "inventory", sa), "LOCK inventory A")
    expect_int(c.call("PUT", "stock", "10", "FENCE", "inventory", ta), "A's fenced PUT")

    sb = open_session(c, 10000)
    keeper = Keepalive(ctx.srv.port, [sb], interval=0.5)
    ctx.defer(keeper.stop)
    cb = ctx.conn()
    cb.send("LOCK", "inventory", sb, "WAIT", 5000)
    wait_queued(c, "inventory", sb)
    assert not cb.has_data(0.05), "LOCK WAIT answered while A still holds the lock"

    # A's last keepalive; from now on A is "paused".
    t_send = time.monotonic()
    remaining = expect_int(c.call("SESSION.KEEPALIVE", sa), "KEEPALIVE A")
    t_reply = time.monotonic()
    assert 900 <= remaining <= 1000, "KEEPALIVE should answer the full ttl, got %d" % remaining

    tb = cb.read_reply(timeout=4.0)
    t_grant = time.monotonic()
    expect_int(tb, "B's LOCK WAIT")
    assert tb > ta, "B's token %d not greater than A's %d" % (tb, ta)
    assert t_grant - t_send >= 1.0, \
        "B granted %s after A's last keepalive: before A's ttl of 1000 ms" % ms(t_grant - t_send)
    assert t_grant - t_reply <= 1.25, \
        "B granted %s after A's keepalive reply: expiry late" % ms(t_grant - t_reply)

    rev_b = expect_int(c.call("PUT", "stock", "9", "FENCE", "inventory", tb), "B's fenced PUT")
    expect_err(c.call("PUT", "stock", "9", "FENCE", "inventory", ta), "STALE",
               "A's late fenced PUT")
    eq(ok(c.call("GET", "stock")), b"9", "GET stock")
    kv = kv_get(c, "stock")
    eq(kv["mod_rev"], rev_b, "stock mod_rev (must be B's write)")
    eq(kv["version"], 2, "stock version (A's stale PUT must not count)")
    expect_err(session_info(c, sa), "NOSESSION", "SESSION.INFO of expired A")
