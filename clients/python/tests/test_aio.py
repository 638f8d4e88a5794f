# SPDX-License-Identifier: Apache-2.0
"""fencelock.aio against real fencelockd processes: the blocking client's contract, through
asyncio. One node: locks, fencing and watch; a cancelled wait that leaves the queue; the safe
deadline never after the leader's and `lost` / on_lost / guard() when the server freezes; a
write without a session whose answer is lost reported as OutcomeUnknown (sent once); the
deprecated millisecond keywords. TLS and ACL users. Three nodes: -NOTLEADER followed from a
follower, a lock waiting across a kill -9 of the leader granted once, and a watch through it
with no gap and no duplicate. Each test drives its own event loop (asyncio.run)."""

import asyncio
import datetime
import os
import time
import warnings

import pytest

from conftest import endpoint, info, leader_of
from test_single import _Swallower
from test_tls_acl import _Ctx

from fencelock import (AuthError, DeadlockError, LockTimeout, NotHolder, OutcomeUnknown,
                       PermissionDenied, SessionLost, Stale, TLSError)
from fencelock.aio import AsyncClient


def run(coro, limit=120.0):
    """Run one test's coroutine, bounded (a hang fails the test instead of the run)."""
    async def bounded():
        return await asyncio.wait_for(coro, limit)
    return asyncio.run(bounded())


def test_aio_lock_fenced_put_watch(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c:
            w = c.watch("inv/", block=0.05)
            assert await w.read() == []  # "$" resolved before the writes
            lost_calls = []
            async with c.session(ttl=10.0, name="aio", on_lost=lost_calls.append) as s:
                async with s.lock("inventory", wait=5.0) as token:
                    assert token > s.sid
                    assert time.monotonic() < s.safe_until()
                    info_ = await c.lock_info("inventory")
                    assert info_["holder"] == s.sid and info_["token"] == token
                    rev = await s.put("inv/stock", "9", fence=("inventory", token))
                    assert rev > token and await c.fence_check("inventory", token)
                assert await c.lock_info("inventory") is None, "unlocked on leaving the block"
                with pytest.raises(Stale):
                    await s.put("inv/stock", "8", fence=("inventory", token))
                assert await s.delete("inv/stock")
                with pytest.raises(NotHolder):
                    await s.unlock("inventory")
            assert s.lost.is_set() and s.safe_until() == 0.0, "closed: nothing more"
            await asyncio.sleep(0)
            assert lost_calls == [], "a close is not a loss: on_lost does not run"
            with pytest.raises(SessionLost):
                await s.acquire("inventory", wait=1.0)
            got = []
            async for ev in w:
                got.append((ev.type, ev.name, ev.rev))
                if len(got) == 2:
                    w.stop()
            assert got == [("put", "inv/stock", rev), ("del", "inv/stock", got[1][2])]
            assert got[1][2] > rev
            again = await c.watch("inv/", from_id="0").read(block=0.05)
            assert [e.rev for e in again] == [rev, got[1][2]], "resumable from an id"
            kv = await c.kv_get("missing")
            assert kv is None
    run(main())


def test_aio_try_lock_timeout_and_waiter_granted_on_unlock(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b:
            t = await a.try_lock("l")
            assert t is not None and await b.try_lock("l") is None
            with pytest.raises(LockTimeout):
                await b.acquire("l", wait=0.3)
            assert (await c.lock_info("l"))["waiters"] == [], "a timed-out wait left the queue"
            waiter = asyncio.ensure_future(b.acquire("l", wait=30.0))
            for _ in range(200):  # until the waiter is queued on the server
                if (await c.lock_info("l"))["waiters"] == [b.sid]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("l"))["waiters"] == [b.sid]
            await a.unlock("l")
            tb = await waiter
            assert tb > t and (await c.lock_info("l"))["holder"] == b.sid
    run(main())


def test_aio_weighted_semaphore_waits_in_fifo_order(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b, c.session(ttl=10.0) as d:
            ta = await a.sem_acquire("w", 4, permits=3)
            big = asyncio.ensure_future(b.sem_acquire("w", 4, wait=30.0, permits=2))
            for _ in range(200):  # until the request for 2 is queued on the server
                if ((await c.sem_info("w")) or {}).get("waiters") == [b.sid]:
                    break
                await asyncio.sleep(0.02)
            with pytest.raises(LockTimeout):  # 1 is free, but the head wants 2
                await d.sem_acquire("w", 4, wait=0.2, permits=1)
            assert await c.sem_setlimit("w", 5)
            tb = await big
            assert tb > ta and (await c.sem_info("w"))["permits"] == 5
            await b.sem_release("w")
            async with d.semaphore("w", 5, permits=2) as td:
                assert td > tb
    run(main())


def test_aio_reentrant_session_counts_nested_locks(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, \
                c.session(ttl=10.0, reentrant=True) as s:
            async with s.lock("anest", wait=5.0) as t1:
                assert await s.acquire("anest") == t1
                assert (await c.lock_info("anest"))["count"] == 2
                await s.unlock("anest")
                assert (await c.lock_info("anest"))["count"] == 1
            assert await c.lock_info("anest") is None
            info = await c.session_info(s.sid)
            assert info["max_count"] == 64
    run(main())


def test_aio_a_wait_that_closes_a_cycle_raises_deadlock_error(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b:
            await a.acquire("dl.x")
            await b.acquire("dl.y")
            waiter = asyncio.ensure_future(a.acquire("dl.y", wait=30.0))
            for _ in range(500):  # until the waiter is queued on the server
                if (await c.lock_info("dl.y"))["waiters"] == [a.sid]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("dl.y"))["waiters"] == [a.sid]
            with pytest.raises(DeadlockError) as e:
                await b.acquire("dl.x", wait=30.0)
            assert "cycle of 2" in str(e.value)
            await b.unlock("dl.y")
            assert await waiter > 0, "the other wait completes"
    run(main())


def test_aio_multi_lock_waits_on_every_name_and_cancel_leaves_them(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b:
            ta = await a.acquire("m2")
            assert await b.try_lock_multi(["m1", "m2"]) is None
            waiter = asyncio.ensure_future(b.acquire_multi(["m2", "m1"], wait=30.0))
            for _ in range(200):  # until the request is queued on both names
                if (await c.lock_info("m1") or {}).get("waiters") == [b.sid]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("m2"))["waiters"] == [b.sid]
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            for _ in range(200):  # the release goes out from a task of its own
                if await c.lock_info("m1") is None:
                    break
                await asyncio.sleep(0.02)
            assert await c.lock_info("m1") is None and \
                (await c.lock_info("m2"))["waiters"] == []
            async with b.lock_multi(["m1", "m3"], shared=["m3"]) as (t1, t3):
                assert t3 == t1 + 1 and t1 > ta
    run(main())


def test_aio_incr(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as s:
            assert await c.incr("actr", by=2) == 2
            assert await s.incr("actr", -3) == -1
            token = await s.acquire("acl")
            assert await s.incr("actr", fence=("acl", token)) == 0
            await s.unlock("acl")
            with pytest.raises(Stale):
                await s.incr("actr", fence=("acl", token))
            assert await c.get("actr") == b"0"
    run(main())


def test_aio_txn(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as s:
            r = await s.txn().if_missing("atx").then_put("atx", "1").then_incr("atn", 2) \
                .commit()
            assert r.succeeded and r.results == [r.revision - 1, 2]
            r = await c.txn().if_value("atx", "!=", "1").then_delete("atx") \
                .else_incr("atn", 1).commit()
            assert not r.succeeded and r.results == [3]
            assert await c.get("atx") == b"1"
    run(main())


def test_aio_cancelled_wait_leaves_the_queue(node):
    """Cancelling a task that waits for a lock takes its session out of the queue: when the
    holder unlocks, the lock is free, not granted to a waiter nobody listens to."""
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b:
            await a.acquire("q")
            waiter = asyncio.ensure_future(b.acquire("q", wait=60.0))
            for _ in range(200):
                if (await c.lock_info("q"))["waiters"] == [b.sid]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("q"))["waiters"] == [b.sid]
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            for _ in range(200):  # the release runs as a task of its own
                if (await c.lock_info("q"))["waiters"] == []:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("q"))["waiters"] == []
            await a.unlock("q")
            assert await c.lock_info("q") is None, "granted to a cancelled waiter"
    run(main())


def test_aio_wait_cancelled_before_it_was_sent_releases_nothing(node):
    """A wait cancelled while it queued for the session's op lock (behind another wait of the
    same session) sent nothing, so it releases nothing: a lock of that name the session holds
    stays held."""
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a, \
                c.session(ttl=10.0) as b:
            th = await a.acquire("held")
            await b.acquire("other")
            first = asyncio.ensure_future(a.acquire("other", wait=60.0))  # holds a's op lock
            for _ in range(200):
                if ((await c.lock_info("other")) or {}).get("waiters") == [a.sid]:
                    break
                await asyncio.sleep(0.02)
            second = asyncio.ensure_future(a.acquire("held", wait=5.0))  # queued behind it
            await asyncio.sleep(0.1)
            second.cancel()
            first.cancel()
            await asyncio.gather(first, second, return_exceptions=True)
            for _ in range(200):  # the first wait's release leaves the queue of "other"
                if (await c.lock_info("other"))["waiters"] == []:
                    break
                await asyncio.sleep(0.02)
            # the op lock is FIFO: a mutation of a's now runs after any release spawned before
            await a.put("barrier", "x")
            li = await c.lock_info("held")
            assert li is not None and li["holder"] == a.sid and li["token"] == th, li
    run(main())


def test_aio_safe_until_before_server_deadline_and_lost_when_frozen(node):
    """safe_until() is never later than the leader's own deadline (SESSION.INFO
    remaining_ms); with the server frozen the session is lost once, not before its safe
    deadline: the event is set, on_lost (plain and coroutine) runs once, and the work inside
    guard() is cancelled and raises SessionLost."""
    async def main():
        calls, acalls = [], []

        async def alost(sess):
            acalls.append(sess.sid)
        async with AsyncClient(endpoint(node)) as c:
            s = await c.session(ttl=1.5, on_lost=lambda sess: calls.append(time.monotonic()))
            s.on_lost(alost)
            for _ in range(8):
                remaining = (await c.session_info(s.sid))["remaining_ms"] / 1000.0
                t_recv = time.monotonic()
                assert 0 < s.safe_until() <= t_recv + remaining + 0.002
                await asyncio.sleep(0.2)

            async def work():
                async with s.guard():
                    await asyncio.sleep(60)
            worker = asyncio.ensure_future(work())
            await asyncio.sleep(0.05)
            last_safe = s.safe_until()
            node.sigstop()
            try:
                await asyncio.wait_for(s.lost.wait(), 10)
                done, _ = await asyncio.wait({worker}, timeout=10)
                assert done, "the work inside guard() went on after the loss"
                assert isinstance(worker.exception(), SessionLost), worker.exception()
                assert len(calls) == 1 and calls[0] >= last_safe, (calls, last_safe)
                await asyncio.sleep(0.05)
                assert acalls == [s.sid]
                assert s.safe_until() == 0.0 and s.is_lost()
                with pytest.raises(SessionLost):
                    await s.acquire("x", wait=0.1)
            finally:
                node.sigcont()
            await asyncio.sleep(0.3)
            assert len(calls) == 1
            await s.abandon()
    run(main())


def test_aio_lost_answer_without_session_is_outcome_unknown():
    srv = _Swallower()

    async def main():
        c = AsyncClient("127.0.0.1:%d" % srv.port, timeout=2.0)
        with pytest.raises(OutcomeUnknown):
            await c.put("k", "v")
        assert len(srv.seen) == 1, "a write without a session is sent once"
        await c.close()
    try:
        run(main())
    finally:
        srv.close()


def test_aio_seconds_and_deprecated_ms_keywords(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c:
            with pytest.warns(DeprecationWarning, match="ttl="):
                opener = c.session(ttl_ms=4000)
            async with opener as s:
                assert s.ttl == 4.0 and s.ttl_ms == 4000
                remaining = (await c.session_info(s.sid))["remaining_ms"]
                assert 3000 < remaining <= 4000, "milliseconds on the wire"
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                async with c.session(ttl=2.5, lock_delay=0.25) as s2:
                    assert (await c.session_info(s2.sid))["remaining_ms"] <= 2500
            with pytest.raises(TypeError):
                c.session(ttl=1.0, ttl_ms=1000)
    run(main())


def test_aio_tls_and_wrong_ca(nodes):
    from test_tls import tls_server
    s, d = tls_server(_Ctx(nodes), "--tls-client-auth", "optional")
    ep = endpoint(s)

    async def main():
        async with AsyncClient(ep, ssl={"ca": os.path.join(d, "ca.crt")}) as c, \
                c.session(ttl=1.5) as sess:
            async with sess.lock("tls-lock") as token:
                await sess.put("k", "v", fence=("tls-lock", token))
            su = sess.safe_until()
            await asyncio.sleep(1.0)  # keepalives every 0.5 s, over TLS
            assert sess.safe_until() > su and not sess.is_lost()
        async with AsyncClient(ep, ssl={"ca": os.path.join(d, "otherca.crt")},
                               timeout=1.0) as c:
            with pytest.raises(TLSError) as ei:
                await c.get("k")
            assert "certificate verify failed" in str(ei.value), str(ei.value)
    run(main())


def test_aio_acl_users(nodes):
    from test_auth import _acl_server
    s, _, _ = _acl_server(_Ctx(nodes))
    ep = endpoint(s)

    async def main():
        async with AsyncClient(ep, username="app", password="apppw") as c, \
                c.session(ttl=10.0) as sess:
            async with sess.lock("job-1") as token:
                await sess.put("app/x", "1", fence=("job-1", token))
            with pytest.raises(PermissionDenied):
                await sess.put("other", "1")
        async with AsyncClient(ep, username="app", password="wrong", timeout=10.0) as c:
            t0 = time.monotonic()
            with pytest.raises(AuthError):
                await c.get("app/x")
            assert time.monotonic() - t0 < 9, "a wrong password is not retried"
        async with AsyncClient(ep) as c:
            with pytest.raises(AuthError):
                await c.get("app/x")
    run(main())


def test_aio_cluster_redirect_kill9_lock_granted_once_and_watch(nodes):
    """A client given only a follower follows -NOTLEADER; a lock wait queued behind a holder
    crosses a kill -9 of the leader and is granted once (tokens rising); a watch read through
    the kill delivers each acknowledged write once, in order."""
    servers = nodes.cluster(3)
    leader = leader_of(servers)
    f = [s for s in servers if s is not leader][0]
    end = time.monotonic() + 10
    while time.monotonic() < end and not (info(f) or {}).get("leader"):
        time.sleep(0.05)
    eps = ",".join([endpoint(f)] + [endpoint(s) for s in servers if s is not f])

    async def main():
        async with AsyncClient(endpoint(f), timeout=8.0) as c, \
                AsyncClient(eps, timeout=8.0) as c2, c.session(ttl=6.0) as a, \
                c2.session(ttl=6.0) as b:
            ta = await a.acquire("w")
            assert c.leader_address == endpoint(leader), "followed -NOTLEADER"
            w = c2.watch("burst/", block=0.2)
            await w.read(block=0.01)
            waiter = asyncio.ensure_future(b.acquire("w", wait=60.0))
            for _ in range(250):
                if ((await c.lock_info("w")) or {}).get("waiters") == [b.sid]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.lock_info("w"))["waiters"] == [b.sid]
            revs = []
            for i in range(5):
                revs.append(await a.put("burst/%d" % i, str(i)))
            leader_of(servers).kill9()
            for i in range(5, 10):
                revs.append(await a.put("burst/%d" % i, str(i)))
            await a.unlock("w")
            tb = await waiter
            assert tb > ta
            li = await c.lock_info("w")
            assert li["holder"] == b.sid and li["token"] == tb, "granted once"
            got = []
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                try:
                    got += await w.read()
                except Exception:  # noqa: BLE001 - Unavailable in the election: read on
                    await asyncio.sleep(0.1)
            assert [e.rev for e in got] == revs, "each acknowledged write once, in order"
            assert not a.is_lost() and not b.is_lost()
            await b.unlock("w")
    run(main(), limit=150)


class _DropOneReply:
    """A proxy in front of a real server that forwards everything, except that the first reply
    to a command naming `word` is swallowed and the connection closed: the command applied, its
    answer lost."""

    def __init__(self, port, word):
        self.port, self.word, self.dropped = port, word, 0

    async def start(self):
        self.srv = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return "127.0.0.1:%d" % self.srv.sockets[0].getsockname()[1]

    async def serve(self, cr, cw):
        sr, sw = await asyncio.open_connection("127.0.0.1", self.port)
        armed = asyncio.Event()

        async def up():
            while data := await cr.read(65536):
                if self.dropped == 0 and ("\r\n%s\r\n" % self.word).encode() in data:
                    armed.set()
                sw.write(data)
                await sw.drain()

        async def down():
            while data := await sr.read(65536):
                if armed.is_set() and self.dropped == 0:
                    self.dropped += 1
                    break  # the answer is lost
                cw.write(data)
                await cw.drain()
        try:
            await asyncio.wait([asyncio.ensure_future(up()), asyncio.ensure_future(down())],
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            cw.close()
            sw.close()

    async def close(self):
        self.srv.close()


def test_aio_lost_answer_session_write_applies_once_and_plain_write_is_unknown(node):
    """A session's PUT whose answer is lost is resent with the same REQ sid seq and applied
    once (version 1, the first revision); the same loss without a session is OutcomeUnknown,
    though it applied."""
    async def main():
        proxy = _DropOneReply(node.port, "PUT")
        ep = await proxy.start()
        async with AsyncClient(ep, timeout=5.0) as c, c.session(ttl=10.0) as s:
            rev = await s.put("once", "v")
            assert proxy.dropped == 1, "the first answer was lost"
            kv = await c.kv_get("once")
            assert kv["version"] == 1 and kv["mod_rev"] == rev, kv
        proxy.dropped = 0
        async with AsyncClient(ep, timeout=5.0) as c:
            with pytest.raises(OutcomeUnknown):
                await c.put("plain", "v")
            assert proxy.dropped == 1
            assert (await c.kv_get("plain"))["version"] == 1, "it applied, once"
        await proxy.close()
    run(main())


def test_aio_renewals_failing_oddly_still_end_in_lost(node):
    """Keepalives that fail with something other than the client's own errors (here a
    RuntimeError of a wrapped call) still end in LOST by the safe deadline: the lost event and
    on_lost, without anyone asking is_lost()."""
    async def main():
        calls = []
        async with AsyncClient(endpoint(node)) as c:
            real = c.call

            async def odd(cmd, *args, **kw):
                if cmd.argv[0] == "SESSION.KEEPALIVE":
                    raise RuntimeError("an unexpected failure")
                return await real(cmd, *args, **kw)
            c.call = odd
            s = await c.session(ttl=1.0, on_lost=calls.append)
            await asyncio.wait_for(s.lost.wait(), 20)
            assert calls == [s], calls
            await s.abandon()
    run(main())


class _Freezable:
    """A proxy in front of a real server that stops forwarding anything, both ways, once
    `frozen` is set: the server runs on and the client's keepalives never reach it. It answers
    CLUSTER.MEMBERS itself with no member, so the client knows no way around it (the client
    sends one command at a time and waits for its answer: one read is one command)."""

    def __init__(self, port):
        self.port, self.frozen = port, asyncio.Event()

    async def start(self):
        self.srv = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return "127.0.0.1:%d" % self.srv.sockets[0].getsockname()[1]

    async def pump(self, r, w, back=None):
        while data := await r.read(65536):
            if self.frozen.is_set():
                await asyncio.Event().wait()  # held for good
            if back is not None and b"CLUSTER.MEMBERS" in data:
                back.write(b"*0\r\n")
                continue
            w.write(data)
            await w.drain()

    async def serve(self, cr, cw):
        sr, sw = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            await asyncio.wait([asyncio.ensure_future(self.pump(cr, sw, cw)),
                                asyncio.ensure_future(self.pump(sr, cw))],
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            cw.close()
            sw.close()


def test_aio_lost_before_the_running_server_expires_the_session(node):
    """The client cut off from a server that keeps running: on_lost runs (wall clock) before
    the server's log says the session expired under its lock, so the holder stopped before
    the lock could pass to another."""
    async def main():
        proxy = _Freezable(node.port)
        ep = await proxy.start()
        lost_at = []
        # margin 0.25 s: what the client keeps back, here also room for a loaded machine to
        # run the keepalive task late (the deadline's arithmetic is what is checked)
        async with AsyncClient(ep, timeout=2.0, margin=0.25) as c:
            s = await c.session(ttl=6.0, on_lost=lambda _: lost_at.append(time.time() * 1000))
            token = await s.acquire("x")
            proxy.frozen.set()
            await asyncio.wait_for(s.lost.wait(), 30)
            await s.abandon()
        line = "session %d expired while holding 'x' (token %d)" % (s.sid, token)
        for _ in range(600):
            if line in node.log_text():
                break
            await asyncio.sleep(0.05)
        logged = [ln for ln in node.log_text().splitlines() if line in ln]
        assert logged, "the server never expired the session"
        stamp = datetime.datetime.strptime(logged[0].split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
        expired_ms = stamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
        assert lost_at and lost_at[0] < expired_ms, (lost_at, expired_ms)
    run(main())


def test_aio_on_revoke_coroutine_callback_unlocks_and_the_waiter_is_granted(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c:
            async with c.session(ttl=30.0) as holder, c.session(ttl=30.0) as waiter:
                token = await holder.acquire("arv", wait=5.0)
                heard = asyncio.Event()
                got = []

                async def cb(rv):
                    got.append(rv)
                    await holder.unlock("arv")  # let go at once
                    heard.set()

                task = holder.on_revoke("arv", token, cb)
                try:
                    assert await c.revoke_lock("arv", reason="rotate") == token
                    await asyncio.wait_for(heard.wait(), 30.0)
                finally:
                    task.cancel()
                assert (got[0].token, got[0].sid, got[0].deadline, got[0].reason) == \
                    (token, holder.sid, None, "rotate")
                assert await waiter.acquire("arv", wait=10.0) > token
    run(main())


def test_aio_lock_value_and_max_hold_deadline(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c:
            async with c.session(ttl=30.0, name="amh") as s:
                sent = time.monotonic()
                token = await s.acquire("amh/L", wait=5.0, value=b"job=9", max_hold=15.0)
                info_ = await c.lock_info("amh/L")
                assert info_["value"] == b"job=9" and info_["max_hold_ms"] == 15000
                deadline = s.max_hold_deadline("amh/L")
                assert deadline is not None and sent < deadline <= sent + 15.0
                assert token > s.sid
    run(main())


def test_aio_latch_waits_until_zero(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as a:
            await c.latch_create("aio-latch", 1)
            await a.latch_join("aio-latch")
            waiter = asyncio.ensure_future(c.latch_wait("aio-latch", wait=30.0))
            await asyncio.sleep(0.1)
            assert not waiter.done()
            assert await a.latch_countdown("aio-latch") == 0
            assert await waiter is True
            assert await c.latch_delete("aio-latch")
    asyncio.run(main())


def test_aio_lock_history(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0, name="h") as a:
            t = await a.try_lock("aio/hist")
            h = await c.lock_history("aio/hist")
            assert [(e["token"], e["session_name"], e["ended_by"]) for e in h] == [(t, "h", "")]
            await a.unlock("aio/hist")
            t2 = await a.acquire("aio/hist", wait=1.0, value=b"job=8")
            h = await c.lock_history("aio/hist")
            assert [(e["token"], e["value"]) for e in h] == [(t2, "job=8"), (t, "")]
            tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            await a.unlock("aio/hist", traceparent=tp)
            h = await c.lock_history("aio/hist")
            assert (h[0]["token"], h[0]["end_traceparent"]) == (t2, tp)
    run(main())
