# SPDX-License-Identifier: Apache-2.0
"""A bounded mini-soak: 8 clients (own connection, own session) hammer 3 locks for at most
SECONDS or OPS operations with a random mix of try-LOCK, LOCK WAIT (<= 200 ms), UNLOCK,
fenced PUT with the token held, PUT with a token released before, GET and KEEPALIVE.

Checked on the fly: a fenced PUT with the token a client holds succeeds; a PUT with a token
of its own after its UNLOCK gets -STALE; UNLOCK answers +OK exactly when the client holds the
lock (-NOTHOLDER otherwise); a LOCK by the holder returns its token; a grant never returns a
token seen before; a LOCK WAIT refused -DEADLOCK comes from a client that holds another lock, and
the cycle it names starts at its session and that lock.

Checked afterwards, per lock:
- belief intervals do not overlap: a client "holds" from the arrival of the grant reply to
  the sending of its UNLOCK, a sub-interval of the server's hold, so two clients' intervals
  can never overlap in (system-wide monotonic) time;
- sorted by that time, the tokens strictly increase;
- in the server's order (revisions): every fenced write of a grant has a revision above the
  grant's token and below the next grant's token.
Finally the server is healthy (PING, /health, every lock free) and printed no sanitizer report.
"""

import json
import random
import threading
import time

from helpers import RespError, eq, expect_int, lock_info, ok
from resp import Conn
from test_http import http_get

CLIENTS = 8
LOCKS = ["soak0", "soak1", "soak2"]
SECONDS = 8.0
OPS = 2000


class Grant:
    __slots__ = ("lock", "client", "token", "t_start", "t_end", "writes")

    def __init__(self, lock, client, token, t_start):
        self.lock, self.client, self.token, self.t_start = lock, client, token, t_start
        self.t_end = None
        self.writes = []  # revisions of the fenced PUTs made with this grant


class Client(threading.Thread):
    def __init__(self, idx, port, budget, stop_at, seed):
        super().__init__(daemon=True)
        self.idx, self.port, self.budget, self.stop_at = idx, port, budget, stop_at
        self.rng = random.Random(seed)
        self.held = {}        # lock -> Grant
        self.released = []    # (lock, token) released by this client
        self.grants = []
        self.errors = []
        self.ops = 0
        self.stale_checked = 0
        self.deadlocks = 0    # waits refused -DEADLOCK (each closed a cycle)

    def fail(self, msg):
        self.errors.append("client %d: %s" % (self.idx, msg))

    def run(self):
        try:
            with Conn(self.port, timeout=5) as c:
                self.c = c
                self.sid = expect_int(c.call("SESSION.OPEN", 10000, "NAME", "soak%d" % self.idx))
                while not self.errors and time.monotonic() < self.stop_at and \
                        self.budget.take():
                    self.step()
                    self.ops += 1
                for name in list(self.held):
                    self.unlock(name)
        except Exception as e:  # noqa: BLE001
            self.fail("%s: %s" % (type(e).__name__, e))

    def lock(self, name, wait):
        args = ["LOCK", name, self.sid] + (["WAIT", wait] if wait else [])
        r = self.c.call(*args)
        t = time.monotonic()
        if r is None:
            return
        if isinstance(r, RespError) and r.code == "DEADLOCK" and wait:
            # Clients hold one lock while they wait for another, so their waits can close
            # cycles, refused at once (docs/protocol.md "Deadlocks"). Only a session that holds
            # something can be waited for, and the cycle starts at the refused session.
            if not self.held or not r.text.split(": ", 1)[-1].startswith("%d -%s->" % (
                    self.sid, name)):
                self.fail("%s -> %r while holding %s" % (" ".join(map(str, args)), r,
                                                          sorted(self.held)))
            self.deadlocks += 1
            return
        if isinstance(r, RespError) or not isinstance(r, int):
            self.fail("%s -> %r" % (" ".join(map(str, args)), r))
            return
        g = Grant(name, self.idx, r, t)
        self.held[name] = g
        self.grants.append(g)

    def unlock(self, name):
        g = self.held.pop(name)
        g.t_end = time.monotonic()
        r = self.c.call("UNLOCK", name, self.sid)
        if r != "OK":
            self.fail("UNLOCK %s while holding token %d -> %r" % (name, g.token, r))
        self.released.append((name, g.token))

    def step(self):
        rng, c = self.rng, self.c
        name = rng.choice(LOCKS)
        k = rng.random()
        if name in self.held:
            g = self.held[name]
            if k < 0.30:
                self.unlock(name)
            elif k < 0.75:
                r = c.call("PUT", "res-" + name, "c%d:t%d" % (self.idx, g.token),
                           "FENCE", name, g.token)
                if isinstance(r, RespError) or not isinstance(r, int):
                    self.fail("fenced PUT with the held token %d of %s -> %r"
                              % (g.token, name, r))
                else:
                    g.writes.append(r)
            elif k < 0.85:
                r = c.call("LOCK", name, self.sid)
                if r != g.token:
                    self.fail("LOCK %s by its holder -> %r, expected its token %d"
                              % (name, r, g.token))
            elif k < 0.92:
                ok(c.call("GET", "res-" + name))
            else:
                self.keepalive()
        else:
            if k < 0.30:
                self.lock(name, 0)
            elif k < 0.60:
                self.lock(name, rng.randrange(1, 201))
            elif k < 0.72 and self.released:
                lname, tok = rng.choice(self.released)
                r = c.call("PUT", "res-" + lname, "stale", "FENCE", lname, tok)
                if not (isinstance(r, RespError) and r.code == "STALE"):
                    self.fail("PUT with token %d of %s after its UNLOCK -> %r, expected -STALE"
                              % (tok, lname, r))
                self.stale_checked += 1
            elif k < 0.80:
                r = c.call("UNLOCK", name, self.sid)
                if not (isinstance(r, RespError) and r.code == "NOTHOLDER"):
                    self.fail("UNLOCK %s while not holding it -> %r, expected -NOTHOLDER"
                              % (name, r))
            elif k < 0.90:
                ok(c.call("GET", "res-" + name))
            else:
                self.keepalive()

    def keepalive(self):
        r = self.c.call("SESSION.KEEPALIVE", self.sid)
        if isinstance(r, RespError) or not isinstance(r, int):
            self.fail("SESSION.KEEPALIVE -> %r" % (r,))


class Budget:
    def __init__(self, n):
        self.n, self.mu = n, threading.Lock()

    def take(self):
        with self.mu:
            if self.n <= 0:
                return False
            self.n -= 1
            return True


def test_soak_eight_clients_three_locks(ctx):
    srv = ctx.srv
    budget = Budget(OPS)
    stop_at = time.monotonic() + SECONDS
    clients = [Client(i, srv.port, budget, stop_at, 1000 + i) for i in range(CLIENTS)]
    for cl in clients:
        cl.start()
    for cl in clients:
        cl.join(SECONDS + 20)
        assert not cl.is_alive(), "client %d did not finish" % cl.idx
    errors = [e for cl in clients for e in cl.errors]
    assert not errors, "client errors:\n  " + "\n  ".join(errors[:20])
    assert srv.running(), "fencelockd died during the soak"

    grants = [g for cl in clients for g in cl.grants]
    total_ops = sum(cl.ops for cl in clients)
    writes = sum(len(g.writes) for g in grants)
    stale = sum(cl.stale_checked for cl in clients)
    print("# %d ops, %d grants, %d fenced writes, %d stale checks, %d waits refused DEADLOCK"
          % (total_ops, len(grants), writes, stale, sum(cl.deadlocks for cl in clients)))
    assert len(grants) >= 30 and writes >= 30 and stale >= 10, \
        "soak too thin to mean anything: %d ops, %d grants, %d fenced writes, %d stale checks" \
        % (total_ops, len(grants), writes, stale)
    for g in grants:
        assert g.t_end is not None, "grant %d of %s never released" % (g.token, g.lock)

    tokens = [g.token for g in grants]
    eq(len(set(tokens)), len(tokens), "tokens unique across all grants")
    problems = []
    for name in LOCKS:
        gl = sorted((g for g in grants if g.lock == name), key=lambda g: g.t_start)
        for a, b in zip(gl, gl[1:]):
            if b.t_start < a.t_end:
                problems.append("%s: client %d believed it held it (token %d) from %.4f to "
                                "%.4f, client %d from %.4f (token %d)" % (
                                    name, a.client, a.token, a.t_start, a.t_end, b.client,
                                    b.t_start, b.token))
            if b.token <= a.token:
                problems.append("%s: grant to client %d (token %d) came after the hold of "
                                "client %d (token %d) but has a lower token"
                                % (name, b.client, b.token, a.client, a.token))
        by_token = sorted(gl, key=lambda g: g.token)
        for i, g in enumerate(by_token):
            nxt = by_token[i + 1].token if i + 1 < len(by_token) else float("inf")
            for rev in g.writes:
                if not g.token < rev < nxt:
                    problems.append("%s: fenced write at revision %d with token %d outside "
                                    "its hold (next grant's token %s)" % (name, rev, g.token,
                                                                          nxt))
    assert not problems, "mutual exclusion violated:\n  " + "\n  ".join(problems[:20])

    with Conn(srv.port) as c:
        eq(c.call("PING"), "PONG", "PING after the soak")
        for name in LOCKS:
            eq(lock_info(c, name), None, "LOCK.INFO %s after every client unlocked" % name)
        for name in LOCKS:
            last = max((g for g in grants if g.lock == name and g.writes),
                       key=lambda g: g.token, default=None)
            if last is not None:
                eq(ok(c.call("GET", "res-" + name)), ("c%d:t%d" % (last.client, last.token))
                   .encode(), "value of res-%s: the last fenced write" % name)
    status, _, body = http_get(srv, "/health")
    eq((status, json.loads(body).get("status")), (200, "ok"), "/health after the soak")
    rep = srv.sanitizer_report()
    assert rep is None, "sanitizer report during the soak:\n" + rep
