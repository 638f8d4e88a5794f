# SPDX-License-Identifier: Apache-2.0
"""The package against 3 real fencelockd nodes: -NOTLEADER redirects from a follower, and a
lock loop of two workers across a kill -9 of the leader (no double grant, tokens rising, each
acknowledged fenced write applied exactly once)."""

import threading
import time

from conftest import endpoint, info, leader_of

from fencelock import Client, FencelockError


def test_follower_endpoint_redirects_to_leader(nodes):
    servers = nodes.cluster(3)
    leader = leader_of(servers)
    f = [s for s in servers if s is not leader][0]
    # the follower must know the leader's client address before it can redirect
    end = time.monotonic() + 10
    while time.monotonic() < end and not (info(f) or {}).get("leader"):
        time.sleep(0.05)
    with Client(endpoint(f)) as c, c.session(10.0) as s:
        token = s.acquire("r")
        assert c.leader_address == endpoint(leader)
        s.put("k", "v", fence=("r", token))
        assert c.get("k") == b"v"
        members = {m["client_address"] for m in c.members()}
        assert endpoint(leader) in {m.decode() for m in members if m}


class Loop:
    """Workers taking one lock in turn; what each grant looked like, in grant order."""

    def __init__(self, eps, deadline):
        self.eps, self.deadline = eps, deadline
        self.mu = threading.Lock()
        self.inside = None
        self.grants = []  # (token, sid)
        self.overlaps = []
        self.acked = 0  # fenced increments whose answer came back
        self.errors = []
        self.lost = []

    def worker(self, n_iter):
        c = Client(self.eps, timeout=8.0)
        s = c.session(6.0, on_lost=lambda sess: self.lost.append(sess.sid))
        try:
            for _ in range(n_iter):
                if time.monotonic() > self.deadline:
                    break
                try:
                    with s.lock("loop", wait=15.0) as token:
                        with self.mu:
                            if self.inside is not None:
                                self.overlaps.append((self.inside, (s.sid, token)))
                            self.inside = (s.sid, token)
                            self.grants.append((token, s.sid))
                        raw = c.get("counter")
                        v = int(raw) if raw is not None else 0
                        s.put("counter", str(v + 1), fence=("loop", token))
                        with self.mu:
                            self.acked += 1
                            self.inside = None
                except FencelockError as e:
                    with self.mu:
                        self.inside = None
                        self.errors.append(repr(e))
        finally:
            s.close()
            c.close()


def test_lock_loop_across_leader_kill9(nodes):
    servers = nodes.cluster(3)
    leader_of(servers)
    eps = ",".join(endpoint(s) for s in servers)
    loop = Loop(eps, time.monotonic() + 60)
    threads = [threading.Thread(target=loop.worker, args=(40,)) for _ in range(2)]
    for t in threads:
        t.start()
    end = time.monotonic() + 20
    while len(loop.grants) < 15 and time.monotonic() < end:
        time.sleep(0.02)
    assert len(loop.grants) >= 15, "no progress before the kill: %r" % loop.errors
    old = leader_of(servers)
    old.kill9()
    killed_at = len(loop.grants)
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads), "workers did not finish"
    print("grants %d (kill after %d), acked %d, errors %r" % (len(loop.grants), killed_at,
                                                              loop.acked, loop.errors))
    assert not loop.overlaps, "double grant: %r" % loop.overlaps
    tokens = [t for t, _ in loop.grants]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), \
        "tokens not rising: %r" % tokens
    assert len(loop.grants) > killed_at + 5, "no progress after the kill: %r" % loop.errors
    assert not loop.lost, "sessions lost across the fail-over: %r" % loop.lost
    survivors = [s for s in servers if s is not old]
    with Client(",".join(endpoint(s) for s in survivors)) as c:
        # every acknowledged increment applied once; one whose answer never came may have
        assert loop.acked <= int(c.get("counter")) <= loop.acked + len(loop.errors)
        assert c.lock_info("loop") is None


def test_blocked_lock_moves_to_the_new_leader_when_the_old_one_freezes(nodes):
    """A LOCK ... WAIT blocked on a leader that is SIGSTOPped (it never answers, nor closes)
    is abandoned once the client learns of the new leader and resent there with the same
    REQ: granted once, when the holder unlocks."""
    servers = nodes.cluster(3)
    old = leader_of(servers)
    eps = ",".join(endpoint(s) for s in servers)
    with Client(eps) as ca, Client(eps, timeout=8.0) as cb, ca.session(6.0) as a, \
            cb.session(6.0) as b:
        ta = a.acquire("w")
        got, errs = [], []

        def wait():
            try:
                got.append(b.acquire("w", wait=60.0))
            except FencelockError as e:
                errs.append(e)
        th = threading.Thread(target=wait)
        th.start()
        end = time.monotonic() + 5
        while time.monotonic() < end and not (ca.lock_info("w") or {}).get("waiters"):
            time.sleep(0.02)
        assert ca.lock_info("w")["waiters"] == [b.sid]
        old.sigstop()
        new = leader_of(servers)
        end = time.monotonic() + 10  # the holder's client finds the new leader by itself
        while time.monotonic() < end and ca.leader_address != endpoint(new):
            time.sleep(0.05)
        a.unlock("w")
        # Not a speed check: without the move the reply would come only when the 60 s wait
        # on the frozen leader ran out; 25 s leaves any slow machine its margin.
        th.join(25)
        assert not th.is_alive(), "the wait stayed on the frozen leader"
        assert not errs, errs
        assert got and got[0] > ta
        info = ca.lock_info("w")
        assert info["holder"] == b.sid and info["token"] == got[0], info
        assert not a.is_lost() and not b.is_lost()
        b.unlock("w")


def test_watch_across_leader_kill9_no_gap_no_duplicate(nodes):
    servers = nodes.cluster(3)
    leader_of(servers)
    eps = ",".join(endpoint(s) for s in servers)
    with Client(eps, timeout=8.0) as c, c.session(6.0) as s:
        w = c.watch("burst/")
        w.read(block=0.01)  # resolves "$" before the burst
        got, stop = [], threading.Event()

        def reader():
            while not stop.is_set() and len(got) < 30:
                try:
                    got.extend(w.read(block=0.2))
                except FencelockError:  # Unavailable during the election: read on by id
                    pass
        th = threading.Thread(target=reader)
        th.start()
        revs = []
        for i in range(30):
            if i == 10:
                leader_of(servers).kill9()
            revs.append(s.put("burst/%02d" % i, str(i)))
        end = time.monotonic() + 20
        while len(got) < 30 and time.monotonic() < end:
            time.sleep(0.05)
        stop.set()
        th.join(10)
    assert [e.name for e in got] == ["burst/%02d" % i for i in range(30)], \
        [e.id for e in got]
    assert [e.rev for e in got] == revs, "each acknowledged write once, in order"
