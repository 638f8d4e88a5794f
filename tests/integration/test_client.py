# SPDX-License-Identifier: Apache-2.0
"""libfencelock against real servers, through tests/client/fl_probe.c: the API on one node and
through a follower, fl_lock across a kill -9 of the leader (granted exactly once), and a
session whose servers are all SIGSTOPped (lost callback; the safe deadline never later than
the servers' own expiry)."""

import os
import queue
import subprocess
import threading
import time

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, ok, wait_until
from resp import Conn, as_map, text


def probe_path(ctx):
    return os.path.join(os.path.dirname(ctx.binary), "tests", "client", "fl_probe")


class Probe:
    """fl_probe in the background; its stdout lines are read by a thread."""

    def __init__(self, ctx, *args, env=None):
        self.proc = subprocess.Popen([probe_path(ctx)] + [str(a) for a in args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, **env) if env else None)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()
        ctx.defer(self.kill)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix, timeout=10.0):
        """The next line starting with prefix (skipping others), its remainder."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise AssertionError("probe: no %r line in %.1f s; saw %r" %
                                     (prefix, timeout, self.seen[-10:]))
            if line is None:
                raise AssertionError("probe exited before %r; saw %r" % (prefix, self.seen))
            self.seen.append(line)
            assert not line.startswith("FAIL"), line
            if line.startswith(prefix):
                return line[len(prefix):].strip()

    def say(self, line=""):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait(self, timeout=15.0):
        rc = self.proc.wait(timeout=timeout)
        for line in iter(lambda: self.lines.get(timeout=5), None):
            self.seen.append(line)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def endpoints(servers):
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


def grants(s):
    with Conn(s.port, timeout=5.0) as c:
        for line in text(ok(c.call("INFO", "stats"))).splitlines():
            if line.startswith("grants:"):
                return int(line.split(":")[1])
    raise AssertionError("INFO stats has no grants line")


def run_api(ctx, ep):
    p = Probe(ctx, "api", ep)
    summary = p.expect("tests:", timeout=50)
    eq(p.wait(), 0, "fl_probe api exit status (%s)" % summary)
    assert summary.endswith(" 0 failed") and not summary.startswith("0 passed"), summary


def test_client_api_on_one_node(ctx):
    run_api(ctx, "127.0.0.1:%d" % ctx.srv.port)


def test_client_api_given_only_a_follower_follows_the_leader(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    follower = next(s for s in servers if s is not leader)
    run_api(ctx, "127.0.0.1:%d" % follower.port)


def lock_through_a_leader_fault(ctx, fault):
    """A waits in fl_lock on the leader; `fault(leader)` strikes; the holder releases during
    the election; the waiter is granted exactly once, on the new leader."""
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    ep = endpoints(servers)
    holder = Probe(ctx, "lock", ep, "job", 10000, 5000)
    holder.expect("session")
    t1 = int(holder.expect("granted"))
    waiter = Probe(ctx, "lock", ep, "job", 30000, 5000)
    sid_w = int(waiter.expect("session"))
    with Conn(leader.port) as c:
        wait_until(lambda: as_map(ok(c.call("LOCK.INFO", "job")))["waiters"] == [sid_w],
                   timeout=10, what="the waiter queued")
    survivors = [s for s in servers if s is not leader]
    # A follower applies the grant once it learns the commit index, a heartbeat or an entry
    # after the leader acknowledged it: wait for both to have applied it, then check that no
    # follower counts more than the one grant.
    wait_until(lambda: [grants(s) for s in survivors] == [1, 1], timeout=10,
               what="both followers applied the first grant")
    eq([grants(s) for s in survivors], [1, 1], "one grant so far")

    fault(leader)
    holder.say()  # release while the cluster elects: the unlock itself must fail over
    eq(holder.expect("unlock"), "ok", "the holder's unlock after the fail-over")
    t2 = int(waiter.expect("granted", timeout=30))
    assert t2 > t1, (t1, t2)
    new = ready_leader(survivors)
    with Conn(new.port) as c:
        li = as_map(ok(c.call("LOCK.INFO", "job")))
        eq((li["holder"], li["token"], li["waiters"]), (sid_w, t2, []),
           "the waiter holds the lock with the token it was told")
    waiter.say()
    eq(waiter.expect("unlock"), "ok")
    eq(waiter.expect("closed"), "ok")
    eq(holder.expect("closed"), "ok")
    for p in (holder, waiter):
        eq(p.wait(), 0)
    with Conn(new.port) as c:
        eq(c.call("LOCK.INFO", "job"), None, "released, nobody queued")
    wait_until(lambda: [grants(s) for s in survivors] == [2, 2], timeout=10,
               what="both survivors applied the second grant")
    eq([grants(s) for s in survivors], [2, 2], "exactly two grants: none repeated")
    return leader, survivors


def test_fl_lock_waiting_through_a_leader_kill9_is_granted_exactly_once(ctx):
    lock_through_a_leader_fault(ctx, lambda leader: leader.kill9())


def test_fl_lock_waiting_on_a_frozen_leader_moves_to_the_new_one_and_is_granted_once(ctx):
    """The waiter's connection stays open to a SIGSTOPped leader that never answers: the
    library must give it up once it learns of the new leader, not wait out the whole wait."""
    def freeze(leader):
        leader.sigstop()
        ctx.defer(lambda: leader.sigstopped and leader.sigcont())
    old, survivors = lock_through_a_leader_fault(ctx, freeze)
    old.sigcont()
    wait_until(lambda: grants(old) == 2, timeout=15, what="the thawed old leader catches up")


def test_session_lost_when_every_server_stops_and_safe_until_is_never_late(ctx):
    ttl = 3000
    servers = start_cluster(ctx)
    ready_leader(servers)
    p = Probe(ctx, "safe", endpoints(servers), ttl, *[s.port for s in servers])
    sid = int(p.expect("session"))
    p.expect("checks 40", timeout=20)  # 40 comparisons with the leader's own deadline
    for s in servers:
        s.sigstop()
    ctx.defer(lambda: [s.sigcont() for s in servers if s.sigstopped])
    stopped = time.monotonic() * 1000.0  # every keepalive acknowledged was sent before this
    fields = p.expect("lost at", timeout=ttl / 1000.0 + 10).split()
    lost_at, last_safe = int(fields[0]), int(fields[2])
    checks, bad, callbacks = int(fields[4]), int(fields[6]), int(fields[8])
    eq((bad, callbacks), (0, 1), "no late safe deadline; the lost callback ran once")
    assert checks >= 40, checks
    assert last_safe <= stopped + ttl, ("safe deadline beyond the last send + TTL",
                                        last_safe, stopped)
    assert lost_at >= last_safe, ("lost before its safe deadline", lost_at, last_safe)
    for s in servers:
        s.sigcont()
    leader = ready_leader(servers, timeout=20)
    with Conn(leader.port) as c:
        wait_until(lambda: getattr(c.call("SESSION.INFO", sid), "code", "") == "NOSESSION",
                   timeout=ttl / 1000.0 + 10, what="the servers expire the session")
        expect_err(c.call("SESSION.INFO", sid), "NOSESSION")
    eq(p.wait(), 0)


def test_c_inventory_example_sells_exactly_what_it_acknowledged(ctx):
    """examples/c/inventory.c (docs/client.md): 4 workers, fenced decrements, 3 nodes."""
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    exe = os.path.join(os.path.dirname(ctx.binary), "examples", "inventory")
    out = subprocess.run([exe, endpoints(servers), "4", "10"], capture_output=True, text=True,
                         timeout=50)
    eq(out.returncode, 0, "inventory exit status; stdout %r stderr %r" % (out.stdout, out.stderr))
    eq(out.stdout.strip(), "sold 40, fenced out 0, stock 1000 -> 960")
    with Conn(leader.port) as c:
        eq(ok(c.call("GET", "stock")), b"960")
        eq(c.call("LOCK.INFO", "inventory"), None, "every worker released and closed")
