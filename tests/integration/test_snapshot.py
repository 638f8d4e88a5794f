# SPDX-License-Identifier: Apache-2.0
"""Snapshots: with a tiny --snapshot-threshold the log is compacted many times during a mixed
workload; after kill -9 (or SIGTERM) and a restart, the state restored from the newest
snapshot plus the trailing log is exactly the state before (SESSION.INFO remaining_ms aside),
and new grants get tokens above every revision issued before.
"""

import os
import random
import re
import time

from helpers import (RespError, eq, expect_err, expect_int, expect_nil, kv_get,
                     lock_info, ok, open_session, revision, session_info, wait_until)
from resp import Conn

FLAGS = ("--snapshot-threshold", 64, "--snapshot-trailing", 16)
LOCKS = ["lk%d" % i for i in range(6)]
KEYS = ["key%d" % i for i in range(25)]
TARGET_MUTATIONS = 600


class Workload:
    """A seeded mix of mutations; counts the ones that were applied (a reply that is not an
    error, or -STALE/-IFREV, which go through the log too, is not counted)."""

    def __init__(self, ctx, srv, seed):
        self.ctx, self.srv = ctx, srv
        self.rng = random.Random(seed)
        self.c = ctx.conn(srv)
        self.sids = []          # every session ever opened (some closed or expired later)
        self.alive = []
        self.applied = 0
        self.waits = 0
        self.stale = 0
        self.ifrev_fail = 0
        self.protected = set()  # never closed by the workload

    def _count(self, reply, what):
        ok(reply, what)
        self.applied += 1
        return reply

    def open(self):
        r = self.rng.random()
        args = [self.rng.choice([60000, 120000, 300000])]
        if r < 0.4:
            args += ["LOCKDELAY", self.rng.choice([100, 500, 2000])]
        if self.rng.random() < 0.5:
            args += ["NAME", "w%d" % len(self.sids)]
        sid = expect_int(self._count(self.c.call("SESSION.OPEN", *args), "SESSION.OPEN"))
        self.sids.append(sid)
        self.alive.append(sid)
        return sid

    def holder(self, name):
        info = lock_info(self.c, name)
        return (0, 0) if info is None else (info["holder"], info["token"])

    def step(self):
        rng, c = self.rng, self.c
        if len(self.alive) < 4:
            self.open()
            return
        k = rng.random()
        sid = rng.choice(self.alive)
        name = rng.choice(LOCKS)
        key = rng.choice(KEYS)
        if k < 0.06:
            self.open()
        elif k < 0.09 and len(self.alive) > 6 and sid not in self.protected:
            self.alive.remove(sid)
            self._count(c.call("SESSION.CLOSE", sid), "SESSION.CLOSE")
        elif k < 0.25:
            r = c.call("LOCK", name, sid)
            if r is not None:
                expect_int(r, "LOCK %s %d" % (name, sid))
            self.applied += 1
        elif k < 0.31:
            self.wait(name, sid)
        elif k < 0.42:
            h, _ = self.holder(name)
            if h:
                self._count(c.call("UNLOCK", name, h), "UNLOCK %s %d" % (name, h))
        elif k < 0.60:
            self._count(c.call("PUT", key, "v%d" % rng.randrange(10 ** 6)), "PUT")
        elif k < 0.67:
            self._count(c.call("PUT", key, "leased", "LEASE", sid), "PUT LEASE")
        elif k < 0.76:
            h, tok = self.holder(name)
            if h:
                self._count(c.call("PUT", key, "fenced-%d" % tok, "FENCE", name, tok),
                            "PUT FENCE")
                if rng.random() < 0.3 and tok > 1:
                    expect_err(c.call("PUT", key, "stale", "FENCE", name, tok - 1), "STALE",
                               "PUT with an older token")
                    self.stale += 1
        elif k < 0.86:
            kv = kv_get(c, key)
            if kv is None:
                self._count(c.call("PUT", key, "created", "IFREV", 0), "PUT IFREV 0")
            else:
                self._count(c.call("PUT", key, "cas", "IFREV", kv["mod_rev"]), "PUT IFREV")
                expect_err(c.call("PUT", key, "nope", "IFREV", kv["mod_rev"]), "IFREV",
                           "PUT with an outdated IFREV")
                self.ifrev_fail += 1
        elif k < 0.94:
            r = expect_int(c.call("DEL", key), "DEL")
            if r:
                self.applied += 1
        else:
            kv = kv_get(c, key)
            if kv is not None:
                self._count(c.call("DEL", key, "IFREV", kv["mod_rev"]), "DEL IFREV")

    def wait(self, name, sid):
        """LOCK name sid WAIT 60000 on a connection of its own, left queued (the connection
        is closed: the session keeps its place)."""
        w = Conn(self.srv.port, timeout=5)
        try:
            w.send("LOCK", name, sid, "WAIT", 60000)
            def settled():
                if w.has_data(0):
                    return "granted"
                info = lock_info(self.c, name)
                return info is not None and sid in (info.get("waiters") or []) and "queued"
            how = wait_until(settled, 3, what="LOCK %s %d WAIT to be granted or queued"
                             % (name, sid))
            if how == "granted":
                expect_int(w.read_reply(2), "LOCK WAIT on a free lock")
            self.applied += 1
            self.waits += how == "queued"
        finally:
            w.close()

    def expiring_holder(self):
        """A short session with LOCKDELAY that holds a lock with a waiter and a leased key,
        left to expire during the workload."""
        s = expect_int(self.c.call("SESSION.OPEN", 300, "LOCKDELAY", 200, "NAME", "short"))
        self.sids.append(s)
        waiter = self.alive[0]
        self.protected.add(waiter)
        expect_int(self.c.call("LOCK", "exp", s))
        expect_int(self.c.call("PUT", "exp-key", "x", "LEASE", s))
        self.wait("exp", waiter)
        self.applied += 4
        return s, waiter


def _snapshot_files(data_dir):
    return sorted(f for f in os.listdir(data_dir)
                  if f.startswith("snapshot-") and not f.endswith(".meta"))


def _state(c, sids):
    keys = ok(c.call("KEYS", ""), "KEYS")
    st = {"keys": list(keys), "revision": revision(c)}
    for k in keys:
        st["kv:%s" % k.decode()] = kv_get(c, k)
    for name in LOCKS + ["exp", "fresh"] + ["tail-lock-%d" % i for i in range(3)]:
        info = lock_info(c, name)
        if info is not None:
            info = dict(info)
            info["waiters"] = list(info.get("waiters") or [])
        st["lock:" + name] = info
    for sid in sids:
        info = session_info(c, sid)
        if isinstance(info, RespError):
            st["session:%d" % sid] = "-" + info.code
        else:
            info = dict(info)
            info.pop("remaining_ms", None)
            st["session:%d" % sid] = info
    return st


def _snapshots_logged(srv):
    return len(re.findall(r"raft: snapshot of", srv.log_text()))


def _tail(c, srv, sid, before):
    """A few mutations after the state was recorded (its ~75 reads are barrier entries, so a
    snapshot was most likely just taken): they must come back by replaying the log after the
    snapshot. Their effect is added to `before`; rounds repeat while a snapshot interfered.
    Returns the names of the locks granted here (their held_since_ms is not known)."""
    granted = []
    for rnd in range(3):
        n0 = _snapshots_logged(srv)
        for i in range(5):
            key = "tail-%d-%d" % (rnd, i)
            val = b"t%d" % i
            rev = expect_int(c.call("PUT", key, val), "PUT %s" % key)
            before["keys"].append(key.encode())
            before["kv:" + key] = {"value": val, "create_rev": rev, "mod_rev": rev,
                                   "version": 1, "lease": 0}
            before["revision"] = rev
        name = "tail-lock-%d" % rnd
        tok = expect_int(c.call("LOCK", name, sid), "LOCK %s" % name)
        before["lock:" + name] = {"holder": sid, "token": tok, "lockdelay": 0, "waiters": [],
                                  "mode": b"exclusive",
                                  "holders": [[b"sid", sid, b"token", tok]], "waits_for": [],
                                  "value": b"", "max_hold_ms": 0, "transitions": 0}
        before["session:%d" % sid]["locks"] += 1
        before["revision"] = tok
        granted.append(name)
        time.sleep(0.05)
        if _snapshots_logged(srv) == n0:
            break
    before["keys"].sort()
    return granted


def _run(ctx, stop):
    srv = ctx.server(*FLAGS)
    wl = Workload(ctx, srv, seed=4242)
    for _ in range(6):
        wl.open()
    short, waiter = wl.expiring_holder()
    t0 = time.monotonic()
    while wl.applied < TARGET_MUTATIONS:
        wl.step()
        assert time.monotonic() - t0 < 30, "workload too slow: %d mutations in 30 s" % wl.applied
    assert wl.waits >= 5 and wl.stale >= 3 and wl.ifrev_fail >= 3, \
        "workload too narrow: %d queued waits, %d stale, %d IFREV failures" \
        % (wl.waits, wl.stale, wl.ifrev_fail)
    c = wl.c
    # The short session must have expired and its lock-delay ended (waiter granted) before
    # the state is recorded, so that no countdown is running that could change it.
    wait_until(lambda: isinstance(session_info(c, short), RespError), 3,
               what="the 300 ms session to expire")
    wait_until(lambda: (lock_info(c, "exp") or {}).get("holder") == waiter, 3,
               what="the waiter of 'exp' to be granted after the lock-delay")
    expect_nil(c.call("GET", "exp-key"), "leased key of the expired session")

    log = srv.log_text()
    nsnap = len(re.findall(r"raft: snapshot of", log))
    assert nsnap >= 3, "expected several snapshots after %d mutations with threshold 64, the " \
        "log shows %d" % (wl.applied, nsnap)
    snaps = _snapshot_files(srv.data_dir)
    assert snaps, "no snapshot-* file in %s: %s" % (srv.data_dir, os.listdir(srv.data_dir))
    segs = [f for f in os.listdir(srv.data_dir) if re.match(r"^\d{16}-\d{16}$", f)]
    assert not any(int(f.split("-")[0]) == 1 for f in segs), \
        "log never compacted: segment starting at index 1 still present (%s)" % sorted(segs)

    before = _state(c, wl.sids)
    live = [s for s in wl.sids if isinstance(before["session:%d" % s], dict)]
    assert len(live) >= 4 and len(before["keys"]) >= 5, "state too small: %r" % (before,)
    assert any(v and v["waiters"] for k, v in before.items() if k.startswith("lock:")), \
        "no lock has waiters when the server is stopped"

    tail_locks = _tail(c, srv, live[0], before)
    wall = time.time() * 1000

    stop(srv)
    srv.restart()
    c2 = ctx.conn(srv)
    after = _state(c2, wl.sids)
    for name in tail_locks:
        held = after["lock:" + name].pop("held_since_ms", None) if after["lock:" + name] \
            else None
        assert held is not None and abs(held - wall) < 10000, \
            "held_since_ms of %s after the restart: %r (wall clock %.0f)" % (name, held, wall)
    diffs = ["%s: before %r, after %r" % (k, before.get(k), after.get(k))
             for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    assert not diffs, "state differs after the restart:\n  " + "\n  ".join(diffs)
    m = re.findall(r"restored snapshot .*revision (\d+)", srv.log_text())
    assert m and int(m[-1]) < before["revision"], "the restart did not replay log entries " \
        "after the snapshot (restored revision %s, final revision %d): the test is void" \
        % (m[-1] if m else None, before["revision"])
    tok = expect_int(c2.call("LOCK", "fresh", live[0]), "LOCK after the restart")
    assert tok > before["revision"], "token %d after the restart is not above the revision " \
        "%d reached before" % (tok, before["revision"])
    # The restored queues still hand over: release a lock with waiters, its first waiter
    # is granted with a new, higher token.
    name, info = next((k[5:], v) for k, v in sorted(before.items())
                      if k.startswith("lock:") and v and v["waiters"] and v["holder"])
    ok(c2.call("UNLOCK", name, info["holder"]), "UNLOCK %s after the restart" % name)
    info2 = lock_info(c2, name)
    eq(info2["holder"], info["waiters"][0], "holder of %s after the hand-off" % name)
    assert info2["token"] > tok, "grant after the restart: token %d <= %d" % (info2["token"], tok)
    eq(list(info2["waiters"] or []), info["waiters"][1:], "waiters of %s after the hand-off"
       % name)


def test_snapshot_kill9_restart_restores_state(ctx):
    _run(ctx, lambda srv: srv.kill9())


def test_snapshot_sigterm_restart_restores_state(ctx):
    def stop(srv):
        eq(srv.stop(), 0, "exit status after SIGTERM")
    _run(ctx, stop)


def test_snapshot_interval_grows_with_the_state(ctx):
    """A state much larger than the configured threshold's worth of log: the interval grows
    until the log between snapshots holds about as many bytes as a snapshot, so a large state
    is not rewritten every --snapshot-threshold entries (each rewrite stalls the loop)."""
    srv = ctx.server(*FLAGS)
    c = ctx.conn(srv)
    big = "v" * 200
    for i in range(1500):  # ~330 KB of state, in ~250-byte entries
        expect_int(c.call("PUT", "big%04d" % i, big))
    lines = re.findall(r"raft: next snapshot after (\d+) entries", srv.log_text())
    assert lines, "the threshold never moved above 64"
    grown = int(lines[-1])
    # state ~ 1500 x (200 + key + record) bytes, entries ~ 250 bytes: about 1500 entries.
    assert 600 <= grown <= 4000, grown
    before = srv.log_text().count("raft: snapshot of")
    for i in range(300):  # small updates: 300 entries, far fewer than the grown interval
        expect_int(c.call("PUT", "small", str(i)))
    taken = srv.log_text().count("raft: snapshot of") - before
    assert taken <= 1, "%d snapshots within 300 entries (64 entries apart would give 4)" % taken


def _only_entries_behind_the_snapshot(data_dir):
    """Rearrange a stopped node's log as kill -9 right after a snapshot can leave it: every
    entry on disk is older than the newest snapshot, the last ones in an open segment (a copy
    of the newest kept closed segment: segments do not record their first index, so it stands
    for the entries after that one). Returns (snapshot index, last entry index on disk)."""
    snap = max(int(f.split("-")[2]) for f in _snapshot_files(data_dir))
    names = os.listdir(data_dir)
    for f in names:
        if f.startswith("open-"):
            os.remove(os.path.join(data_dir, f))
    closed = sorted((int(a), int(b)) for a, b in
                    (f.split("-") for f in names if re.match(r"^\d{16}-\d{16}$", f)))
    keep = [s for s in closed if s[1] + (s[1] - s[0] + 1) < snap]
    assert len(keep) >= 2, "not enough closed segments behind snapshot %d: %s" % (snap, closed)
    for first, last in closed:
        if (first, last) not in keep:
            os.remove(os.path.join(data_dir, "%016d-%016d" % (first, last)))
    first, last = keep[-1]
    with open(os.path.join(data_dir, "%016d-%016d" % (first, last)), "rb") as f:
        body = f.read()
    with open(os.path.join(data_dir, "open-1"), "wb") as f:
        f.write(body)
    return snap, last + (last - first + 1)


def test_restart_when_every_entry_on_disk_is_behind_the_snapshot(ctx):
    """The snapshot-heavy torture found a node that could not restart after kill -9:
    libraft 0.22.1 finalizes the open segments, then refuses ("last entry on disk has index L,
    which is behind last snapshot's index S"); only a second load succeeds. fencelockd loads
    a second time instead of exiting (rn.c load_needs_second_pass), from the snapshot."""
    srv = ctx.server("--snapshot-threshold", 64, "--snapshot-trailing", 1000)
    c = ctx.conn(srv)
    for i in range(700):
        expect_int(c.call("PUT", "k%d" % (i % 50), str(i)), "PUT")
    eq(srv.stop(), 0, "exit status after SIGTERM")
    snap, last = _only_entries_behind_the_snapshot(srv.data_dir)
    srv.restart()
    log = srv.log_text()
    assert "which is behind last snapshot's index %d" % snap in log, \
        "the crafted data dir did not trigger the loader's refusal (entries to %d, snapshot " \
        "%d): the test is void" % (last, snap)
    assert "loading %s again" % srv.data_dir in log, log[-2000:]
    m = re.findall(r"restored snapshot .*revision (\d+)", log)
    assert m, "the restart did not restore the snapshot"
    c2 = ctx.conn(srv)
    eq(revision(c2), int(m[-1]), "revision after the restart: the snapshot's")
    expect_int(c2.call("PUT", "after", "1"), "PUT after the restart")
