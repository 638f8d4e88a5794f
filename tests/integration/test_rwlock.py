# SPDX-License-Identifier: Apache-2.0
"""Read-write locks (LOCK name sid SHARED [WAIT ms]): shared holders together, FIFO across
modes (a queued writer keeps later readers out), a token per grant, fencing with shared holders,
upgrades, expiry of a shared holder, and shared grants across a restart and a leader kill."""

import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_nil, lock_info, no_reply, ok,
                     open_session, revision, wait_queued)
from resp import Conn, text


def holders(info):
    """LOCK.INFO's holders as [(sid, token)]."""
    out = []
    for h in info["holders"] or []:
        m = h if isinstance(h, dict) else dict(zip(h[::2], h[1::2]))
        m = {text(k): v for k, v in m.items()}
        out.append((m["sid"], m["token"]))
    return out


def test_shared_holders_together_and_a_queued_writer_keeps_later_readers_out(ctx):
    c = ctx.conn()
    r1, r2, r3, w = (open_session(c) for _ in range(4))
    t1 = expect_int(c.call("LOCK", "rw", r1, "SHARED"))
    t2 = expect_int(c.call("LOCK", "rw", r2, "SHARED", "WAIT", 1000))
    assert t2 > t1, "each shared grant has its own, rising token"
    eq(c.call("LOCK", "rw", r1, "SHARED"), t1, "LOCK SHARED by a shared holder is idempotent")
    info = lock_info(c, "rw")
    eq(text(info["mode"]), "shared")
    eq(holders(info), [(r1, t1), (r2, t2)])
    eq(info["holder"], 0, "no exclusive holder")
    expect_nil(c.call("LOCK", "rw", w), "an exclusive try behind shared holders")
    cw = ctx.conn()
    cw.send("LOCK", "rw", w, "WAIT", 10000)
    wait_queued(c, "rw", w)
    rev = revision(c)
    expect_nil(c.call("LOCK", "rw", r3, "SHARED"), "a shared try behind a queued writer")
    eq(revision(c), rev, "a refused try changes nothing")
    cr = ctx.conn()
    cr.send("LOCK", "rw", r3, "SHARED", "WAIT", 10000)
    wait_queued(c, "rw", r3)
    ok(c.call("UNLOCK", "rw", r1))
    assert no_reply(cw), "the writer was granted while a reader still held the lock"
    ok(c.call("UNLOCK", "rw", r2))
    tw = expect_int(cw.read_reply(timeout=5), "the writer's grant")
    assert tw > t2
    info = lock_info(c, "rw")
    eq(text(info["mode"]), "exclusive")
    eq(holders(info), [(w, tw)])
    assert no_reply(cr), "the reader overtook nobody but was granted during the write"
    ok(c.call("UNLOCK", "rw", w))
    t3 = expect_int(cr.read_reply(timeout=5), "the reader's grant after the writer")
    assert t3 > tw
    rows = ok(c.call("LOCKS", "rw"))
    eq(len(rows), 1)


def test_fencing_with_shared_holders(ctx):
    c = ctx.conn()
    r1, r2, w = (open_session(c) for _ in range(3))
    t1 = expect_int(c.call("LOCK", "f", r1, "SHARED"))
    t2 = expect_int(c.call("LOCK", "f", r2, "SHARED"))
    for t in (t1, t2):
        ok(c.call("FENCE.CHECK", "f", t), "FENCE.CHECK accepts a shared holder's token")
    expect_err(c.call("PUT", "k", "v", "FENCE", "f", t1), "STALE",
               "a fenced write with a shared token")
    ok(c.call("UNLOCK", "f", r1))
    expect_err(c.call("FENCE.CHECK", "f", t1), "STALE", "a released shared token")
    ok(c.call("UNLOCK", "f", r2))
    tw = expect_int(c.call("LOCK", "f", w))
    expect_int(c.call("PUT", "k", "v", "FENCE", "f", tw), "a fenced write by the writer")
    expect_err(c.call("FENCE.CHECK", "f", t2), "STALE")


def test_upgrade_waits_for_the_other_readers_and_a_second_upgrade_is_refused(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    ta = expect_int(c.call("LOCK", "u", a, "SHARED"))
    expect_int(c.call("LOCK", "u", b, "SHARED"))
    ca = ctx.conn()
    ca.send("LOCK", "u", a, "WAIT", 10000)
    wait_queued(c, "u", a)
    expect_err(c.call("LOCK", "u", b, "WAIT", 5000), "ERR", "the second upgrade (a deadlock)")
    ok(c.call("UNLOCK", "u", b))
    tx = expect_int(ca.read_reply(timeout=5), "the upgrade")
    assert tx > ta, "an upgrade takes a new token"
    info = lock_info(c, "u")
    eq(holders(info), [(a, tx)])
    expect_err(c.call("FENCE.CHECK", "u", ta), "STALE", "the shared token after the upgrade")
    expect_err(c.call("LOCK", "u", a, "SHARED"), "ERR", "SHARED by the exclusive holder")


def test_an_expired_shared_holder_releases_its_hold_for_the_writer(ctx):
    c = ctx.conn()
    short = open_session(c, 600)
    w = open_session(c)
    expect_int(c.call("LOCK", "e", short, "SHARED"))
    cw = ctx.conn()
    t0 = time.monotonic()
    cw.send("LOCK", "e", w, "WAIT", 10000)
    tw = expect_int(cw.read_reply(timeout=8), "the writer after the reader's session expired")
    assert time.monotonic() - t0 >= 0.4, "granted before the reader's lease could end"
    eq(holders(lock_info(c, "e")), [(w, tw)])


def test_shared_state_survives_a_restart(ctx):
    srv = ctx.server("--snapshot-threshold", 64, "--snapshot-trailing", 16)
    c = ctx.conn(srv)
    r1, r2, x, w = (open_session(c) for _ in range(4))
    t1 = expect_int(c.call("LOCK", "p", r1, "SHARED"))
    t2 = expect_int(c.call("LOCK", "p", r2, "SHARED"))
    tx = expect_int(c.call("LOCK", "q", x))
    c.send("LOCK", "q", w, "SHARED", "WAIT", 60000)  # a queued shared request
    c2 = ctx.conn(srv)
    wait_queued(c2, "q", w)
    for i in range(100):  # past the snapshot threshold
        expect_int(c2.call("PUT", "pad", str(i)))
    before = (lock_info(c2, "p"), lock_info(c2, "q"))
    srv.stop()
    srv.restart()
    c3 = ctx.conn(srv)
    eq(holders(lock_info(c3, "p")), [(r1, t1), (r2, t2)], "shared holders after the restart")
    after_q = lock_info(c3, "q")
    eq(holders(after_q), [(x, tx)])
    eq(list(after_q["waiters"]), [w])
    eq(text(before[0]["mode"]), "shared")


def test_shared_grants_are_kept_and_not_duplicated_across_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        r1, r2, w = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(3))
        t1 = expect_int(c.call("LOCK", "rw", r1, "SHARED"))
        t2 = expect_int(c.call("LOCK", "rw", r2, "SHARED"))
        expect_nil(c.call("LOCK", "rw", w))
    leader.kill9()
    new = ready_leader([s for s in servers if s is not leader], timeout=10)
    with Conn(new.port) as c:
        eq(holders(lock_info(c, "rw")), [(r1, t1), (r2, t2)], "holders on the new leader")
        eq(c.call("LOCK", "rw", r1, "SHARED"), t1, "a retried shared LOCK: the same token")
        ok(c.call("FENCE.CHECK", "rw", t2))
        with Conn(new.port) as cw:
            cw.send("LOCK", "rw", w, "WAIT", 10000)
            wait_queued(c, "rw", w)
            ok(c.call("UNLOCK", "rw", r1))
            ok(c.call("UNLOCK", "rw", r2))
            tw = expect_int(cw.read_reply(timeout=5), "the writer on the new leader")
        assert tw > t2
        eq(holders(lock_info(c, "rw")), [(w, tw)])


test_shared_grants_are_kept_and_not_duplicated_across_a_leader_kill.timeout = 40
