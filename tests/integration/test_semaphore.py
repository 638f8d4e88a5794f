# SPDX-License-Identifier: Apache-2.0
"""Counting semaphores (SEM.ACQUIRE name sid limit [WAIT ms], SEM.RELEASE, SEM.INFO): at most
`limit` permits, the limit set by the first acquirer, FIFO waiters, a token per permit that
fences writes, permits ending with their session (lock-delay on expiry), WRONGTYPE across the
one namespace of locks, semaphores and elections, and permits across a restart and a leader
kill."""

import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_nil, no_reply, ok, open_session,
                     revision, wait_until)
from resp import Conn, RespError, as_map, text


def sem_info(c, name):
    r = c.call("SEM.INFO", name)
    assert not isinstance(r, RespError), "SEM.INFO %s: %r" % (name, r)
    return None if r is None else as_map(r)


def permits(info):
    """SEM.INFO's holders as [(sid, token)]."""
    out = []
    for h in info["holders"] or []:
        m = h if isinstance(h, dict) else dict(zip(h[::2], h[1::2]))
        m = {text(k): v for k, v in m.items()}
        out.append((m["sid"], m["token"]))
    return out


def wait_sem_queued(c, name, sid, timeout=3.0):
    wait_until(lambda: sid in list((sem_info(c, name) or {}).get("waiters") or []), timeout,
               what="session %d queued on semaphore %r" % (sid, name))


def test_limit_fifo_release_and_fencing(ctx):
    c = ctx.conn()
    a, b, d, e = (open_session(c) for _ in range(4))
    ta = expect_int(c.call("SEM.ACQUIRE", "s", a, 2))
    tb = expect_int(c.call("SEM.ACQUIRE", "s", b, 2, "WAIT", 1000))
    assert tb > ta, "each permit has its own, rising token"
    eq(c.call("SEM.ACQUIRE", "s", a, 2), ta, "SEM.ACQUIRE by a holder is idempotent")
    expect_nil(c.call("SEM.ACQUIRE", "s", d, 2), "a try with no permit free")
    expect_err(c.call("SEM.ACQUIRE", "s", d, 3), "ERR", "a different limit")
    info = sem_info(c, "s")
    eq(info["limit"], 2)
    eq(permits(info), [(a, ta), (b, tb)])
    for t in (ta, tb):
        ok(c.call("FENCE.CHECK", "s", t), "FENCE.CHECK accepts a permit's token")
        expect_int(c.call("PUT", "k", "v", "FENCE", "s", t), "a fenced write by a permit")
    cd, ce = ctx.conn(), ctx.conn()
    cd.send("SEM.ACQUIRE", "s", d, 2, "WAIT", 10000)
    wait_sem_queued(c, "s", d)
    ce.send("SEM.ACQUIRE", "s", e, 2, "WAIT", 10000)
    wait_sem_queued(c, "s", e)
    eq(list(sem_info(c, "s")["waiters"]), [d, e], "FIFO waiters")
    ok(c.call("SEM.RELEASE", "s", b))
    td = expect_int(cd.read_reply(timeout=5), "the first waiter's permit")
    assert no_reply(ce), "the second waiter got a permit while two were held"
    assert td > tb
    expect_err(c.call("PUT", "k", "v", "FENCE", "s", tb), "STALE", "a released permit's token")
    ok(c.call("SEM.RELEASE", "s", a))
    expect_int(ce.read_reply(timeout=5), "the second waiter's permit")
    expect_err(c.call("SEM.RELEASE", "s", a), "NOTHOLDER")


def test_wait_timeout_and_session_end(ctx):
    c = ctx.conn()
    a = open_session(c)
    b = open_session(c, 60000, "LOCKDELAY", 0)
    ta = expect_int(c.call("SEM.ACQUIRE", "t", a, 1))
    t0 = time.monotonic()
    expect_nil(c.call("SEM.ACQUIRE", "t", b, 1, "WAIT", 300), "a wait that times out")
    assert time.monotonic() - t0 >= 0.25
    eq(list(sem_info(c, "t")["waiters"] or []), [], "the timed-out waiter left the queue")
    cb = ctx.conn()
    cb.send("SEM.ACQUIRE", "t", b, 1, "WAIT", 10000)
    wait_sem_queued(c, "t", b)
    ok(c.call("SESSION.CLOSE", a))
    tb = expect_int(cb.read_reply(timeout=5), "a permit once the holder's session closed")
    assert tb > ta
    expect_err(c.call("FENCE.CHECK", "t", ta), "STALE")


def test_expiry_starts_lockdelay_and_the_limit_is_set_again_after_the_drop(ctx):
    c = ctx.conn()
    a = open_session(c, 500, "LOCKDELAY", 800)
    b = open_session(c)
    ta = expect_int(c.call("SEM.ACQUIRE", "x", a, 1))
    cb = ctx.conn()
    cb.send("SEM.ACQUIRE", "x", b, 1, "WAIT", 20000)
    wait_sem_queued(c, "x", b)
    wait_until(lambda: sem_info(c, "x")["lockdelay"] == 1, 5, what="lock-delay after expiry")
    expect_err(c.call("PUT", "k", "v", "FENCE", "x", ta), "STALE", "an expired permit")
    tb = expect_int(cb.read_reply(timeout=10), "a permit after the lock-delay")
    assert tb > ta
    ok(c.call("SEM.RELEASE", "x", b))
    eq(sem_info(c, "x"), None, "an unused semaphore is dropped")
    expect_int(c.call("SEM.ACQUIRE", "x", b, 5), "a new first acquirer sets a new limit")
    eq(sem_info(c, "x")["limit"], 5)


def test_one_namespace_wrongtype(ctx):
    c = ctx.conn()
    a = open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "n1", a, 2))
    expect_int(c.call("LOCK", "n2", a))
    rev = revision(c)
    expect_err(c.call("LOCK", "n1", a), "WRONGTYPE", "LOCK on a semaphore")
    expect_err(c.call("LOCK.INFO", "n1"), "WRONGTYPE", "LOCK.INFO on a semaphore")
    expect_err(c.call("SEM.ACQUIRE", "n2", a, 1), "WRONGTYPE", "SEM.ACQUIRE on a lock")
    expect_err(c.call("SEM.INFO", "n2"), "WRONGTYPE", "SEM.INFO on a lock")
    expect_err(c.call("ELECT.CAMPAIGN", "n1", a, "v"), "WRONGTYPE")
    r = c.call("UNLOCK", "n1", a)
    assert isinstance(r, RespError) and r.text.startswith("WRONGTYPE n1 is a semaphore"), r
    eq(revision(c), rev, "a WRONGTYPE changes nothing")
    expect_err(c.call("SEM.ACQUIRE", "n3", a, 0), "ERR", "limit 0")
    expect_err(c.call("SEM.ACQUIRE", "n3", a, "x"), "ERR", "limit not a number")
    expect_err(c.call("SEM.ACQUIRE", "n3", a), "ERR", "missing limit")
    expect_err(c.call("SEM.ACQUIRE", "n3", 999999, 1), "NOSESSION")


def test_exactly_once_retry_of_a_queued_acquire(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "r", a, 1))
    cb = ctx.conn()
    cb.send("SEM.ACQUIRE", "r", b, 1, "WAIT", 10000, "REQ", b, 1)
    wait_sem_queued(c, "r", b)
    ok(c.call("SEM.RELEASE", "r", a))
    tb = expect_int(cb.read_reply(timeout=5))
    eq(c.call("SEM.ACQUIRE", "r", b, 1, "WAIT", 10000, "REQ", b, 1), tb,
       "the retried request answers the permit it got")
    expect_err(c.call("SEM.ACQUIRE", "r", b, 1, "REQ", a, 5), "ERR", "REQ of another session")


def test_permits_survive_a_restart(ctx):
    srv = ctx.server("--snapshot-threshold", 64, "--snapshot-trailing", 16)
    c = ctx.conn(srv)
    a, b, w = (open_session(c) for _ in range(3))
    ta = expect_int(c.call("SEM.ACQUIRE", "p", a, 2))
    tb = expect_int(c.call("SEM.ACQUIRE", "p", b, 2))
    c.send("SEM.ACQUIRE", "p", w, 2, "WAIT", 60000)
    c2 = ctx.conn(srv)
    wait_sem_queued(c2, "p", w)
    for i in range(100):  # past the snapshot threshold: a version 4 snapshot
        expect_int(c2.call("PUT", "pad", str(i)))
    srv.stop()
    srv.restart()
    c3 = ctx.conn(srv)
    info = sem_info(c3, "p")
    eq(permits(info), [(a, ta), (b, tb)], "permits after the restart")
    eq(list(info["waiters"]), [w])
    eq(info["limit"], 2)


def test_permits_are_kept_and_not_duplicated_across_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        a, b, w = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(3))
        ta = expect_int(c.call("SEM.ACQUIRE", "s", a, 2))
        tb = expect_int(c.call("SEM.ACQUIRE", "s", b, 2))
        expect_nil(c.call("SEM.ACQUIRE", "s", w, 2))
    leader.kill9()
    new = ready_leader([s for s in servers if s is not leader], timeout=10)
    with Conn(new.port) as c:
        eq(permits(sem_info(c, "s")), [(a, ta), (b, tb)], "permits on the new leader")
        eq(c.call("SEM.ACQUIRE", "s", a, 2), ta, "a retried acquire: the same token")
        expect_nil(c.call("SEM.ACQUIRE", "s", w, 2), "still no third permit")
        ok(c.call("FENCE.CHECK", "s", tb))
        with Conn(new.port) as cw:
            cw.send("SEM.ACQUIRE", "s", w, 2, "WAIT", 10000)
            wait_sem_queued(c, "s", w)
            ok(c.call("SEM.RELEASE", "s", a))
            tw = expect_int(cw.read_reply(timeout=5), "the waiter's permit on the new leader")
        assert tw > tb


test_permits_are_kept_and_not_duplicated_across_a_leader_kill.timeout = 40
