# SPDX-License-Identifier: Apache-2.0
"""Every acknowledged change survives kill -9 (and SIGTERM) and a restart with the same flags."""

from helpers import (eq, expect_int, kv_get, lock_info, ok, open_session, revision,
                     session_info, wait_queued, RespError, cluster_info, text)

SESSION_FIELDS = ("sid", "ttl_ms", "lockdelay_ms", "name", "locks", "waits", "keys")
LOCK_FIELDS = ("holder", "token", "held_since_ms", "lockdelay", "waiters")


def _build_state(ctx):
    c = ctx.conn()
    s1 = open_session(c, 120000, "NAME", "alpha")
    s2 = open_session(c, 120000, "LOCKDELAY", 500)
    s3 = open_session(c, 120000)
    tokens = {}
    tokens["l1"] = expect_int(c.call("LOCK", "l1", s1))
    tokens["l2"] = expect_int(c.call("LOCK", "l2", s2))
    w2 = ctx.conn()
    w2.send("LOCK", "l1", s2, "WAIT", 60000)
    wait_queued(c, "l1", s2)
    w3 = ctx.conn()
    w3.send("LOCK", "l1", s3, "WAIT", 60000)
    wait_queued(c, "l1", s3)
    expect_int(c.call("PUT", "k1", "v1"))
    expect_int(c.call("PUT", "k1", "v1b"))
    expect_int(c.call("PUT", "k2", "v2", "LEASE", s3))
    expect_int(c.call("PUT", "k3", "fenced", "FENCE", "l2", tokens["l2"]))
    expect_int(c.call("PUT", "gone", "x"))
    expect_int(c.call("DEL", "gone"))
    snap = _snapshot(c, [s1, s2, s3], ["l1", "l2"], ["k1", "k2", "k3", "gone"])
    eq(snap["lock:l1"]["waiters"], [s2, s3], "waiters before the crash")
    snap["max_rev"] = revision(c)
    return snap, [s1, s2, s3]


def _snapshot(c, sids, locks, keys):
    out = {}
    for sid in sids:
        info = session_info(c, sid)
        assert not isinstance(info, RespError), "SESSION.INFO %d -> %r" % (sid, info)
        out["session:%d" % sid] = {k: info.get(k) for k in SESSION_FIELDS}
    for name in locks:
        info = lock_info(c, name)
        out["lock:" + name] = None if info is None else {
            k: (list(info.get(k) or []) if k == "waiters" else info.get(k)) for k in LOCK_FIELDS}
    for key in keys:
        out["key:" + key] = kv_get(c, key)
    return out


def _check_after_restart(ctx, before, sids):
    c = ctx.conn()
    after = _snapshot(c, sids, ["l1", "l2"], ["k1", "k2", "k3", "gone"])
    for k in sorted(after):
        eq(after[k], before[k], "%s after restart" % k)
    rev = revision(c)
    assert rev >= before["max_rev"], "revision went back from %d to %d" % (before["max_rev"], rev)
    t_new = expect_int(c.call("LOCK", "fresh", sids[0]), "new grant after restart")
    assert t_new > before["max_rev"], "token %d after restart not above revision %d issued " \
        "before" % (t_new, before["max_rev"])
    # The queue still works: the holder of l1 unlocks, the first waiter gets a new token.
    ok(c.call("UNLOCK", "l1", sids[0]))
    info = lock_info(c, "l1")
    eq(info["holder"], sids[1], "l1 holder after unlock (first queued waiter)")
    assert info["token"] > t_new, "grant after restart got token %d <= %d" % (info["token"], t_new)
    eq(list(info["waiters"] or []), [sids[2]], "l1 waiters after the hand-off")


def test_kill9_restart_keeps_every_acknowledged_change(ctx):
    before, sids = _build_state(ctx)
    ctx.srv.kill9()
    ctx.srv.restart()
    _check_after_restart(ctx, before, sids)


def test_sigterm_restart_keeps_every_acknowledged_change(ctx):
    before, sids = _build_state(ctx)
    rc = ctx.srv.stop()
    eq(rc, 0, "exit status after SIGTERM")
    ctx.srv.restart()
    _check_after_restart(ctx, before, sids)


def test_kill9_restart_twice_keeps_tokens_rising(ctx):
    c = ctx.conn()
    s = open_session(c, 120000)
    last = 0
    for i in range(3):
        t = expect_int(c.call("LOCK", "r", s), "LOCK after restart #%d" % i)
        assert t > last, "token %d after restart #%d not above %d" % (t, i, last)
        ok(c.call("UNLOCK", "r", s))
        expect_int(c.call("PUT", "counter", str(i)))
        last = revision(c)
        ctx.srv.kill9()
        ctx.srv.restart()
        c = ctx.conn()
        eq(ok(c.call("GET", "counter")), str(i).encode(), "counter after restart #%d" % i)
        eq(text(cluster_info(c)["role"]), "leader", "role after restart")
