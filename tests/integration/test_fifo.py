# SPDX-License-Identifier: Apache-2.0
"""Waiters are granted in FIFO order, one at a time (no herd), with rising tokens."""

from helpers import (eq, expect_int, expect_ok, lock_info, open_session, wait_queued, waiters)


def test_waiters_granted_in_queue_order_one_at_a_time(ctx):
    c = ctx.conn()
    holder = open_session(c)
    last = expect_int(c.call("LOCK", "q", holder), "LOCK q holder")
    sids, conns = [], []
    for i in range(5):
        s = open_session(c)
        w = ctx.conn()
        w.send("LOCK", "q", s, "WAIT", 20000)
        wait_queued(c, "q", s)
        sids.append(s)
        conns.append(w)
    eq(waiters(c, "q"), sids, "LOCK.INFO waiters (queue order)")

    current = holder
    for i in range(5):
        expect_ok(c.call("UNLOCK", "q", current), "UNLOCK q by %d" % current)
        tok = expect_int(conns[i].read_reply(timeout=3.0), "grant to waiter #%d" % i)
        assert tok > last, "token %d of waiter #%d not above previous %d" % (tok, i, last)
        for j in range(i + 1, 5):
            assert not conns[j].has_data(0.1 if j == i + 1 else 0.02), \
                "waiter #%d got a reply after only waiter #%d was due" % (j, i)
        info = lock_info(c, "q")
        eq(info["holder"], sids[i], "holder after unlock #%d" % i)
        eq(info["token"], tok, "LOCK.INFO token after unlock #%d" % i)
        eq(list(info["waiters"] or []), sids[i + 1:], "waiters after unlock #%d" % i)
        last, current = tok, sids[i]
    expect_ok(c.call("UNLOCK", "q", current))
    eq(lock_info(c, "q"), None, "LOCK.INFO of a free lock nobody waits for")
