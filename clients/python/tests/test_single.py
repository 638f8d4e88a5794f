# SPDX-License-Identifier: Apache-2.0
"""The package against one real fencelockd: sessions, locks, fencing, keys, semaphores,
elections, watch, loss of a session and the honest -UNKNOWN."""

import os
import socket
import threading
import time

import pytest

from conftest import endpoint

import fencelock
from fencelock import (Client, DeadlockError, IfRevFailed, LockTimeout, NotHolder,
                       OutcomeUnknown, SessionLost, Stale, WrongType)


def test_lock_fenced_put_unlock(client):
    with client.session(10.0, name="t") as s:
        with s.lock("inventory", wait=5.0) as token:
            assert token > s.sid
            info = client.lock_info("inventory")
            assert info["holder"] == s.sid and info["token"] == token
            assert time.monotonic() < s.safe_until()
            rev = s.put("stock", "9", fence=("inventory", token))
            assert rev > token
            assert client.fence_check("inventory", token)
        assert client.lock_info("inventory") is None, "unlocked on leaving the with block"
        assert not client.fence_check("inventory", token)
        assert client.get("stock") == b"9"
        kv = client.kv_get("stock")
        assert kv["mod_rev"] == rev and kv["version"] == 1
    with pytest.raises(SessionLost):
        s.acquire("inventory", wait=1.0)  # closed: lost locally
    with pytest.raises(SessionLost):
        client.session_info(s.sid)


def test_reentrant_session_counts_nested_locks(client):
    with client.session(10.0, reentrant=True, max_count=3) as s, client.session(10.0) as w:
        with s.lock("nest", wait=5.0) as t1:
            with s.lock("nest", wait=5.0) as t2:
                assert t1 == t2 and client.lock_info("nest")["count"] == 2
                assert s.acquire("nest") == t1
                with pytest.raises(fencelock.ServerError, match="MAXCOUNT"):
                    s.acquire("nest")
                s.unlock("nest")
            info = client.lock_info("nest")
            assert info["holder"] == s.sid and info["count"] == 1, "the outer hold remains"
            assert w.try_lock("nest") is None
        assert client.lock_info("nest") is None, "released by the last unlock"
        assert "count" not in (client.lock_info("nest") or {})
        with w.lock("plain", wait=5.0) as t:
            assert w.acquire("plain") == t and "count" not in client.lock_info("plain")
    with pytest.raises(ValueError):
        client.session(10.0, max_count=3)


def test_txn_builder_commits_one_branch_whole_and_fenced(client):
    client.put("tk", "v")
    rev = client.kv_get("tk")["mod_rev"]
    with client.session(10.0) as s:
        with s.lock("tl", wait=5.0) as token:
            r = s.txn().if_holds("tl", s.sid).if_rev("tk", "=", rev) \
                .then_put("ta", "1").then_incr("tn", 4).then_delete("tk") \
                .else_put("te", "x").fence("tl", token).commit()
            assert r.succeeded and r.results == [r.revision - 2, 4, 1]
            r = s.txn().if_exists("tk").then_put("ta", "2").else_incr("tn", -1).commit()
            assert not r.succeeded and r.results == [3]
        with pytest.raises(Stale):
            client.txn().then_put("ta", "3").fence("tl", token).commit()
    client.put("txt2", "abc")
    with pytest.raises(fencelock.ServerError, match="op 2"):
        client.txn().then_put("tb", "1").then_incr("txt2").commit()
    assert client.get("tb") is None and client.get("ta") == b"1" and client.get("tn") == b"3"
    with pytest.raises(ValueError):
        client.txn().if_rev("tk", "~", 1)


def test_incr_counts_exactly_once_fenced_and_refuses_a_non_integer(client):
    assert client.incr("ctr") == 1
    assert client.incr("ctr", by=-11) == -10
    assert client.get("ctr") == b"-10"
    with client.session(10.0) as s:
        assert s.incr("ctr", 5) == -5
        rev = client.kv_get("ctr")["mod_rev"]
        with pytest.raises(IfRevFailed):
            s.incr("ctr", ifrev=rev - 1)
        with s.lock("cl", wait=5.0) as token:
            assert s.incr("ctr", fence=("cl", token)) == -4
        with pytest.raises(Stale):
            s.incr("ctr", fence=("cl", token))
    client.put("txt", "abc")
    with pytest.raises(fencelock.ServerError, match="not a signed 64-bit"):
        client.incr("txt")
    client.put("big", str(2**63 - 1))
    with pytest.raises(fencelock.ServerError, match="overflow"):
        client.incr("big")
    assert client.get("big") == str(2**63 - 1).encode() and client.get("ctr") == b"-4"


def test_try_lock_and_timeout(client):
    with client.session(10.0) as a, client.session(10.0) as b:
        t = a.try_lock("l")
        assert t is not None
        assert b.try_lock("l") is None
        t0 = time.monotonic()
        with pytest.raises(LockTimeout):
            b.acquire("l", wait=0.3)
        assert time.monotonic() - t0 >= 0.25
        assert client.lock_info("l")["waiters"] == [], "the timed-out waiter left the queue"
        with pytest.raises(NotHolder):
            b.unlock("l")
        a.unlock("l")
        t2 = b.acquire("l", wait=1.0)
        assert t2 > t


def test_queued_waiter_granted_on_unlock(client):
    with client.session(10.0) as a, client.session(10.0) as b:
        t1 = a.acquire("q")
        got = []
        th = threading.Thread(target=lambda: got.append(b.acquire("q", wait=10.0)))
        th.start()
        end = time.monotonic() + 5
        while time.monotonic() < end and client.lock_info("q")["waiters"] != [b.sid]:
            time.sleep(0.02)
        assert client.lock_info("q")["waiters"] == [b.sid]
        a.unlock("q")
        th.join(10)
        assert got and got[0] > t1


def test_stale_token_refused_after_expiry(client):
    zombie = client.session(0.5)
    ztoken = zombie.acquire("inv")
    zombie.abandon()  # frozen: no more keepalives; its lease runs out
    with client.session(10.0) as s:
        token = s.acquire("inv", wait=5.0)
        assert token > ztoken
        s.put("stock", "1", fence=("inv", token))
        with pytest.raises(Stale):
            client.put("stock", "0", fence=("inv", ztoken))
        assert not client.fence_check("inv", ztoken)
        assert client.get("stock") == b"1"


def test_ifrev_and_delete(client):
    with client.session(10.0) as s:
        rev = s.put("k", "a", ifrev=0)
        with pytest.raises(IfRevFailed):
            s.put("k", "b", ifrev=0)
        rev2 = s.put("k", "b", ifrev=rev)
        assert rev2 > rev
        assert s.delete("k", ifrev=rev2)
        assert not client.delete("k")  # without a session: sent once
        assert client.get("k") is None
        s.put("leased", "x", lease=True)
    assert client.get("leased") is None, "a LEASE key goes with its session"


def test_shared_locks(client):
    with client.session(10.0) as r1, client.session(10.0) as r2, \
            client.session(10.0) as w:
        with r1.lock("cat", shared=True) as t1, r2.lock("cat", shared=True) as t2:
            assert t1 != t2
            assert client.lock_info("cat")["mode"] == b"shared"
            assert w.try_lock("cat") is None
            assert client.fence_check("cat", t1) and client.fence_check("cat", t2)
            with pytest.raises(Stale):  # readers must not write
                r1.put("c", "x", fence=("cat", t1))
        assert w.try_lock("cat") is not None


def test_multi_lock_all_or_nothing_with_a_token_per_name(client):
    with client.session(10.0) as a, client.session(10.0) as b:
        with a.lock_multi(["m/y", "m/x"], shared=["m/x"]) as (ty, tx):
            assert tx + 1 == ty, "one grant: consecutive tokens, in name order"
            assert client.lock_info("m/x")["mode"] == b"shared"
            a.put("m/ky", "1", fence=("m/y", ty))
            with pytest.raises(Stale):  # the other name's token does not fence m/y
                a.put("m/ky", "2", fence=("m/y", tx))
            assert b.try_lock_multi(["m/z", "m/y"]) is None
            assert client.lock_info("m/z") is None, "a refused try takes nothing"
            with pytest.raises(LockTimeout):
                b.acquire_multi(["m/z", "m/y"], wait=0.2)
            with pytest.raises(ValueError):
                b.acquire_multi(["m/z", "m/z"])
        tz, ty2 = b.acquire_multi(["m/z", "m/y"], wait=2.0)
        assert ty2 > ty and tz == ty2 + 1
        b.unlock_multi(["m/z", "m/y"])
        assert client.lock_info("m/y") is None


def test_semaphore(client):
    with client.session(10.0) as a, client.session(10.0) as b, \
            client.session(10.0) as c:
        ta = a.sem_acquire("workers", 2)
        with b.semaphore("workers", 2) as tb:
            assert tb > ta
            with pytest.raises(LockTimeout):
                c.sem_acquire("workers", 2, wait=0.2)
            info = client.sem_info("workers")
            assert info["limit"] == 2 and info["permits"] == 2
        assert c.sem_acquire("workers", 2, wait=2.0) > tb
        with pytest.raises(WrongType):
            a.acquire("workers", wait=0.1)
        a.sem_release("workers")


def test_weighted_semaphore_permits_fifo_and_setlimit(client):
    with client.session(10.0) as a, client.session(10.0) as b, \
            client.session(10.0) as c:
        ta = a.sem_acquire("w", 3, permits=2)
        with pytest.raises(LockTimeout):
            b.sem_acquire("w", 3, wait=0.2, permits=2)
        with pytest.raises(ValueError):
            b.sem_acquire("w", 3, permits=4)
        info = client.sem_info("w")
        assert info["permits"] == 2 and [h["permits"] for h in info["holders"]] == [2]
        with c.semaphore("w", 3, permits=1) as tc:
            assert tc > ta
            assert client.sem_info("w")["permits"] == 3
        assert client.sem_setlimit("w", 1) and client.sem_info("w")["limit"] == 1
        assert client.sem_info("w")["permits"] == 2, "a holder above a lower limit keeps them"
        assert client.sem_info("w")["limit_set_by_operator"] == 1
        assert client.sem_setlimit("nosuch", 2), "an operator's limit before the semaphore"
        assert client.sem_info("nosuch")["limit"] == 2
        assert client.sem_limit_reset("nosuch") and not client.sem_limit_reset("nosuch")
        a.sem_release("w")
        info = client.sem_info("w")  # dropped, but the operator's limit stays
        assert info["limit"] == 1 and info["limit_set_by_operator"] == 1
        assert client.sem_limit_reset("w")
        assert client.sem_info("w") is None


def test_election(client):
    with client.session(10.0) as a, client.session(10.0) as b:
        assert client.leader("sched") is None
        ta = a.campaign("sched", "host-a", wait=1.0)
        ld = client.leader("sched")
        assert (ld.sid, ld.token, ld.value) == (a.sid, ta, b"host-a")
        first = client.observe("sched", 0, wait=1.0)
        assert first.sid == a.sid
        rev = a.proclaim("sched", ta, "host-a2")
        seen = client.observe("sched", first.rev, wait=2.0)
        assert seen.value == b"host-a2" and seen.rev == rev
        assert client.observe("sched", seen.rev, wait=0.2) is None, "no change: None"
        with pytest.raises(Stale):
            b.proclaim("sched", ta, "usurper")
        got = []
        th = threading.Thread(target=lambda: got.append(b.campaign("sched", "host-b", 10.0)))
        th.start()
        time.sleep(0.2)
        a.resign("sched")
        th.join(10)
        assert got and got[0] > ta
        nxt = client.observe("sched", seen.rev, wait=2.0)
        assert nxt.sid == b.sid and nxt.value == b"host-b"


def test_watch_in_order_and_resumable(client):
    w = client.watch("inv/")  # "$": events after now
    assert w.read(block=0.05) == []
    with client.session(10.0) as s:
        revs = [s.put("inv/%d" % i, str(i)) for i in range(5)]
        s.put("other", "x")  # not under the prefix
    evs = []
    end = time.monotonic() + 5
    while len(evs) < 5 and time.monotonic() < end:
        evs += w.read(block=0.2)
    assert [(e.type, e.name) for e in evs] == [("put", "inv/%d" % i) for i in range(5)]
    assert [e.rev for e in evs] == revs
    assert evs[2].fields["value"] == b"2"
    # resumable by id: a new watch from the third event's id gets the last two
    w2 = client.watch("inv/", from_id=evs[2].id)
    assert [e.name for e in w2.read(block=0.1)] == ["inv/3", "inv/4"]
    # the whole stream has session events too
    allw = client.watch("", from_id="0")
    types = [e.type for e in allw.read(block=0.1)]
    assert "session-open" in types and "session-end" in types


def test_safe_until_never_after_server_deadline_and_on_lost(node, client):
    """The local safe deadline is never later than the leader's own deadline for the
    session; a frozen server makes the session lost once, after the safe deadline."""
    calls = []
    s = client.session(1.5, on_lost=lambda sess: calls.append(time.monotonic()))
    from resp import Conn, as_map
    with Conn(node.port) as c:
        for _ in range(10):
            t_sent = time.monotonic()
            remaining = as_map(c.call("SESSION.INFO", s.sid))["remaining_ms"] / 1000.0
            t_recv = time.monotonic()
            su = s.safe_until()
            # the server's deadline is (when it answered, <= t_recv) + remaining
            assert 0 < su <= t_recv + remaining + 0.002, (su, t_sent, t_recv, remaining)
            time.sleep(0.2)
    last_safe = s.safe_until()
    node.sigstop()
    try:
        end = time.monotonic() + 5
        while not calls and time.monotonic() < end:
            time.sleep(0.02)
        assert len(calls) == 1, "on_lost ran %d times" % len(calls)
        assert calls[0] >= last_safe, "lost before the safe deadline"
        assert s.safe_until() == 0.0 and s.is_lost()
        with pytest.raises(SessionLost):
            s.acquire("x", wait=0.1)
    finally:
        node.sigcont()
    time.sleep(0.3)
    assert len(calls) == 1
    s.abandon()


class _Swallower:
    """A fake server that answers CLUSTER.MEMBERS, then closes the connection on any other
    command without answering: the answer to a write is lost."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                conn.settimeout(2)
                try:
                    while True:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                        if b"CLUSTER.MEMBERS" in data:
                            conn.sendall(b"*0\r\n")
                            data = b""
                        elif data.count(b"\r\n") >= 3 and data.endswith(b"\r\n"):
                            self.seen.append(data)
                            break  # close without an answer
                except OSError:
                    pass

    def close(self):
        self.sock.close()


def test_lost_answer_without_session_is_outcome_unknown():
    srv = _Swallower()
    try:
        c = Client("127.0.0.1:%d" % srv.port, timeout=2.0)
        with pytest.raises(OutcomeUnknown):
            c.put("k", "v")
        assert len(srv.seen) == 1, "a write without a session is sent once"
        with pytest.raises(fencelock.Unavailable):
            c.get("k")  # reads are resent until the deadline
        assert len(srv.seen) > 2
    finally:
        srv.close()


def test_bad_endpoint_refused():
    with pytest.raises(ValueError):
        Client("no-port")


def test_sign_returns_the_servers_hmac_and_stale_after_unlock(nodes, tmp_path):
    """FENCE.SIGN through Client.sign: the signature is HMAC-SHA256 of the fixed encoding
    (docs/fencing.md "Signed tokens") under the server's --token-key; an old token is Stale."""
    import hashlib
    import hmac
    key = b"k" * 32
    path = tmp_path / "token.key"
    path.write_bytes(key + b"\n")
    path.chmod(0o600)  # a secret file others may read refuses to start (docs/security.md)
    node = nodes.start(args=["--token-key", str(path)])
    client = Client(endpoint(node), timeout=5.0)
    try:
        with client.session(10.0) as s, s.lock("signed") as token:
            sig = client.sign("signed", token)
            msg = b"fencelock-token-v1:6:signed:%d" % token
            assert sig == hmac.new(key, msg, hashlib.sha256).hexdigest(), sig
        with pytest.raises(Stale):
            client.sign("signed", token)
    finally:
        client.close()


def test_watch_compacted_is_reported_with_the_oldest_id(nodes):
    s = nodes.start(["--event-history", "5"])
    with Client(endpoint(s)) as c:
        c.put("first", "x")  # "$" of an empty stream is 0-0, which means "from the oldest"
        w = c.watch("", from_id="$")
        assert w.read(block=0.01) == []  # "$" resolved to the current last id
        with c.session(10.0) as sess:
            for i in range(10):
                sess.put("k%d" % i, "v")
        with pytest.raises(fencelock.Compacted) as ei:
            w.read(block=0.01)
        assert ei.value.oldest and "-" in ei.value.oldest, str(ei.value)
        again = c.watch("", from_id="0").read(block=0.01)  # from the oldest retained
        assert again and again[0].id == ei.value.oldest
        # past the gap: after the id just before the oldest, so the next read starts at it
        rev, n = (int(x) for x in ei.value.oldest.split("-"))
        assert ei.value.after == ("%d-%d" % (rev, n - 1) if n else "%d-%d" % (rev - 1, 2 ** 64 - 1))
        on = c.watch("", from_id=ei.value.after).read(block=0.01)
        assert [e.id for e in on] == [e.id for e in again]


def test_seconds_at_the_api_and_deprecated_ms_keywords(client):
    """ttl and lock_delay are seconds; ttl_ms= and lock_delay_ms= still work for one release,
    with a DeprecationWarning; the wire gets milliseconds either way."""
    import warnings
    with pytest.warns(DeprecationWarning, match="ttl="):
        old = client.session(ttl_ms=4000)
    with old:
        assert old.ttl == 4.0 and old.ttl_ms == 4000
        assert 3000 < client.session_info(old.sid)["remaining_ms"] <= 4000
    with pytest.warns(DeprecationWarning, match="lock_delay="):
        client.session(2.0, lock_delay_ms=100).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with client.session(ttl=2.5, lock_delay=0.25) as s:
            assert client.session_info(s.sid)["remaining_ms"] <= 2500
        w = client.watch("x/")
        assert w.read(block=0.01) == []
    with pytest.warns(DeprecationWarning, match="block="):
        w.read(block_ms=10)
    with pytest.warns(UserWarning, match="seconds"):
        client.session(10000).close()  # an int that looks like milliseconds
    with pytest.raises(TypeError):
        client.session(ttl=1.0, ttl_ms=1000)
    with pytest.raises(ValueError):
        client.session(ttl=0.0001)


def test_a_wait_that_closes_a_cycle_raises_deadlock_error(node, client):
    """a holds x and waits for y; b holds y: b's wait for x would close the cycle. b gets
    DeadlockError naming it, keeps y, and a's wait completes once b lets go."""
    with Client(endpoint(node)) as other, client.session(10.0) as b, \
            other.session(10.0) as a:
        a.acquire("dl.x")
        b.acquire("dl.y")
        got = []
        t = threading.Thread(target=lambda: got.append(a.acquire("dl.y", wait=30.0)))
        t.start()
        try:
            for _ in range(500):  # until a is queued on the server
                if (client.lock_info("dl.y") or {}).get("waiters") == [a.sid]:
                    break
                time.sleep(0.02)
            assert client.lock_info("dl.y")["waiters"] == [a.sid]
            with pytest.raises(DeadlockError) as e:
                b.acquire("dl.x", wait=30.0)
            assert "cycle of 2: %d -dl.x-> %d -dl.y-> %d" % (b.sid, a.sid, b.sid) in str(e.value)
            assert client.lock_info("dl.x")["waiters"] == [], "the refused wait was not queued"
            b.unlock("dl.y")
        finally:
            t.join(30.0)
        assert got and got[0] > 0, "a's wait completed"


def test_on_revoke_callback_hears_the_request_and_the_holder_lets_go(client):
    """Session.on_revoke: the holder's callback gets the request (lock, token, deadline,
    reason, who asked); it unlocks, so the waiter gets the lock at once."""
    got = []
    heard = threading.Event()
    with client.session(30.0) as holder, client.session(30.0) as waiter:
        token = holder.acquire("rv", wait=5.0)
        w = holder.on_revoke("rv", token, lambda rv: (got.append(rv), heard.set()))
        try:
            assert client.revoke_lock("rv", deadline=60.0, reason="deploy") == token
            assert heard.wait(30.0), "the revoke request never reached the callback"
        finally:
            w.stop(10.0)
        rv = got[0]
        assert (rv.name, rv.token, rv.sid, rv.deadline, rv.reason) == \
            ("rv", token, holder.sid, 60.0, "deploy")
        assert rv.by.startswith("127.0.0.1:"), rv.by
        assert w.error is None
        holder.unlock("rv")
        assert waiter.acquire("rv", wait=10.0) > token
    with pytest.raises(NotHolder):
        client.revoke_lock("rv")


def test_lock_value_max_hold_and_its_deadline(client):
    with client.session(30.0, name="mh") as s:
        sent = time.monotonic()
        token = s.acquire("mh/L", wait=5.0, value="host=h1 job=7", max_hold=20.0)
        got = time.monotonic()
        info = client.lock_info("mh/L")
        assert info["value"] == b"host=h1 job=7" and info["max_hold_ms"] == 20000
        assert info["transitions"] == 0
        deadline = s.max_hold_deadline("mh/L")
        assert deadline is not None
        # measured from before the LOCK was sent, less the margins: never after the servers'
        assert sent < deadline <= sent + 20.0 and deadline > got
        # the holder's retry answers the same grant and keeps the first deadline
        assert s.acquire("mh/L", wait=1.0, max_hold=60.0) == token
        assert s.max_hold_deadline("mh/L") == deadline
        assert client.lock_info("mh/L")["max_hold_ms"] == 20000
        with pytest.raises(ValueError):
            s.acquire("mh/R", shared=True, value="v")
        s.unlock("mh/L")
        with s.lock("mh/L", wait=5.0) as t2:
            assert t2 > token and s.max_hold_deadline("mh/L") is None


def test_latch_and_barrier_bound_to_sessions(client):
    client.latch_create("py-latch", 2)
    with client.session(10.0) as a, client.session(10.0) as b:
        a.latch_join("py-latch")
        b.latch_join("py-latch")
        assert a.latch_countdown("py-latch") == 1
        assert client.latch_wait("py-latch", wait=0.2) is False
        assert b.latch_countdown("py-latch") == 0
        assert client.latch_wait("py-latch", wait=5.0) is True
        assert client.latch_info("py-latch")["state"] == b"zero"
        assert client.latch_delete("py-latch")
        client.latch_create("py-broken", 1)
        b.latch_join("py-broken")
    with pytest.raises(fencelock.Broken, match="ended before counting down"):
        client.latch_wait("py-broken", wait=5.0)
    assert client.latch_delete("py-broken")
    with client.session(10.0) as a:
        assert a.barrier_enter("py-bar", 1, wait=5.0) is True
        assert a.barrier_leave("py-bar", wait=5.0) is True
    assert client.latch_info("py-bar") is None


def test_lock_history_newest_first_paged_and_compacted(client):
    with client.session(10.0, name="hist-a") as s:
        t1 = s.acquire("hist/L", wait=1.0)
        s.unlock("hist/L")
        t2 = s.acquire("hist/L", wait=1.0)
        h = client.lock_history("hist/L")
        assert [e["token"] for e in h] == [t2, t1]
        assert h[0]["session"] == s.sid and h[0]["session_name"] == "hist-a"
        assert h[0]["ended_by"] == "" and h[1]["ended_by"] == "unlock"
        assert h[1]["waiters"] == [] and h[1]["kind"] == "lock"
        assert [e["token"] for e in client.lock_history("hist/L", count=1)] == [t2]
        assert [e["token"] for e in client.lock_history("hist/L", before=t2)] == [t1]


def test_lock_history_shows_the_lock_value_of_each_grant(client):
    with client.session(10.0, name="hist-v") as s:
        t1 = s.acquire("hist/V", wait=1.0, value="job=7")
        s.unlock("hist/V")
        t2 = s.acquire("hist/V", wait=1.0)
        h = client.lock_history("hist/V")
        assert [(e["token"], e["value"]) for e in h] == [(t2, ""), (t1, "job=7")]


TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


def test_traceparent_goes_with_lock_unlock_and_fenced_writes(client):
    with client.session(10.0) as s:
        t = s.acquire("trace/L", wait=1.0, traceparent=TP)
        s.put("trace/k", "v", fence=("trace/L", t), traceparent=TP2)
        s.unlock("trace/L", traceparent=TP2)
        h = client.lock_history("trace/L")
        assert [(e["traceparent"], e["end_traceparent"]) for e in h] == [(TP, TP2)]
        with pytest.raises(ValueError, match="traceparent"):
            s.acquire("trace/L", wait=1.0, traceparent=TP.upper())
        with pytest.raises(ValueError, match="fence"):
            s.put("trace/k", "v", traceparent=TP)
        assert len(client.lock_history("trace/L")) == 1, "refused before sending"
