# SPDX-License-Identifier: Apache-2.0
"""Cluster membership on real processes: --join (grow 3 -> 5, catching up by InstallSnapshot),
CLUSTER.REMOVE, CLUSTER.TRANSFER, all while a client keeps locking; bad membership input."""

import os
import socket
import subprocess
import threading
import time

from helpers import eq, expect_err, expect_int, expect_ok, ok, wait_until
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout
from cluster import TIMING, info, info_now, new_server, ready_leader, start_cluster

# Small snapshots so a joining node cannot get the log from index 1: it needs InstallSnapshot.
SNAP = ["--snapshot-threshold", "64", "--snapshot-trailing", "16"]
FAST = TIMING + SNAP


def members(s):
    with Conn(s.port, timeout=2.0) as c:
        return [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]


RETRY = ("NOTLEADER", "UNKNOWN", "NOLEADER")


class Locker(threading.Thread):
    """LOCK / fenced PUT / UNLOCK in a loop against whoever leads, following -NOTLEADER.
    Every command carries REQ sid seq, so a retry after -UNKNOWN is answered exactly once."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.paused = threading.Event()
        self.idle = threading.Event()
        self.tokens, self.errors = [], []
        self.cycles = self.retries = 0
        self.seq = 0
        self.conn = None

    def call(self, *args):
        """One command until it gets a non-retry answer (bounded)."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if self.conn is None:
                    self.conn = Conn(self.port, timeout=5.0)
                r = self.conn.call(*args)
            except (OSError, ConnectionClosed, ReplyTimeout) as e:
                self.errors.append("%s: connection %s" % (args[0], e))
                self.conn = None
                time.sleep(0.05)
                continue
            if isinstance(r, RespError) and r.text.split(" ")[0] in RETRY:
                self.retries += 1
                parts = r.text.split(" ")
                if parts[0] == "NOTLEADER" and len(parts) > 1 and ":" in parts[1]:
                    self.port = int(parts[1].rsplit(":", 1)[1])
                    self.conn.close()
                    self.conn = None
                time.sleep(0.02)
                continue
            return r
        raise RuntimeError("%s: no answer within 15 s" % (args[0],))

    def req(self):
        self.seq += 1
        return ["REQ", self.sid, self.seq]

    def run(self):
        try:
            self.sid = self.call("SESSION.OPEN", 30000)
            if isinstance(self.sid, RespError):
                raise RuntimeError("SESSION.OPEN -> %r" % self.sid)
            while not self.stop.is_set():
                if self.paused.is_set():
                    self.idle.set()
                    time.sleep(0.01)
                    continue
                self.idle.clear()
                self.cycle()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append("client died: %r" % (e,))

    def cycle(self):
        t = self.call("LOCK", "L", self.sid, *self.req())
        if not isinstance(t, int):
            self.errors.append("LOCK -> %r" % (t,))
            return
        if self.tokens and t <= self.tokens[-1]:
            self.errors.append("token %d after %d" % (t, self.tokens[-1]))
        self.tokens.append(t)
        r = self.call("PUT", "res", str(t), "FENCE", "L", t, *self.req())
        if not isinstance(r, int):
            self.errors.append("PUT -> %r" % (r,))
        r = self.call("UNLOCK", "L", self.sid, *self.req())
        if r != "OK":
            self.errors.append("UNLOCK -> %r" % (r,))
        if self.cycles % 20 == 0:
            self.call("SESSION.KEEPALIVE", self.sid)
        self.cycles += 1

    def wait_cycles(self, n, what):
        want = self.cycles + n
        wait_until(lambda: self.cycles >= want or self.errors, timeout=15, interval=0.02,
                   what=what)
        assert not self.errors, self.errors[:5]


def stable_revision(servers):
    revs = [(info(s) or {}).get("revision") for s in servers]
    return revs[0] if revs[0] is not None and len(set(revs)) == 1 else None


def test_grow_remove_transfer_while_locking(ctx):
    servers = start_cluster(ctx, 3, extra=SNAP)
    leader = ready_leader(servers)
    client = Locker(leader.port)
    client.start()
    ctx.defer(lambda: client.stop.set())
    # Enough entries that the leader has snapshotted and trimmed its log past index 1.
    client.wait_cycles(150, "150 lock cycles before growing")
    wait_until(lambda: "raft: snapshot of" in leader.log_text(), timeout=10,
               what="a snapshot on the leader")

    # (a) grow to 5: node 4 joins through a follower (redirected), node 5 through the leader.
    follower = [s for s in servers if s is not leader][0]
    with Conn(follower.port) as c:
        expect_err(c.call("CLUSTER.ADD", 9, "127.0.0.1:1"), "NOTLEADER", "follower redirects")
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % follower.port] + FAST)
    n5 = new_server(ctx, 5, ["--join", "127.0.0.1:%d" % leader.port] + FAST)
    n4.start(wait=False)
    n5.start(wait=False)
    all5 = servers + [n4, n5]

    def grown():
        ms = members(leader)
        ids = sorted(m["id"] for m in ms)
        voters = all(text(m["role"]) in ("leader", "follower") for m in ms)
        addrs = {m["id"]: text(m["client_address"]) for m in ms}
        want = {s.node_id: "127.0.0.1:%d" % s.port for s in all5}
        return ids == [1, 2, 3, 4, 5] and voters and addrs == want
    wait_until(grown, timeout=20, interval=0.1, what="5 voters with client addresses")
    client.wait_cycles(20, "locking after the grow")
    for s in (n4, n5):
        assert "restored snapshot" in s.log_text(), "node %d caught up by InstallSnapshot" \
            % s.node_id
        eq(text((info(s) or {}).get("role")), "follower")
    client.paused.set()
    wait_until(lambda: client.idle.is_set(), timeout=15, what="client paused")
    wait_until(lambda: stable_revision(all5), timeout=10, interval=0.05,
               what="all 5 nodes at the same revision")
    for s in (n4, n5):
        with Conn(s.port) as c:
            assert "keys:1" in text(c.call("INFO", "fsm")), "node %d has the data" % s.node_id
    client.paused.clear()

    # (b) remove a follower of the original three while the client keeps locking.
    gone = [s for s in servers if s is not leader][-1]
    with Conn(leader.port) as c:
        expect_ok(c.call("CLUSTER.REMOVE", gone.node_id, timeout=15), "remove a follower")
        ids = sorted(m["id"] for m in members(leader))
        assert gone.node_id not in ids, ids
        eq(len(ids), 4)
    gone.stop()
    rest = [s for s in all5 if s is not gone]
    client.wait_cycles(20, "locking after the remove")

    # (c) hand leadership to the node that joined first. libraft gives a transfer one election
    # timeout (400 ms here) for the target to catch up and win; with five ASan servers on two
    # cores that can run out ("did not complete (leader now <old>)", the old leader still
    # leading), and the operator's answer is to ask again: so may the test, a few times.
    for attempt in range(3):
        with Conn(leader.port) as c:
            r = c.call("CLUSTER.TRANSFER", n4.node_id, timeout=15)
        if not (isinstance(r, RespError) and "did not complete" in r.text and attempt < 2):
            break
    expect_ok(r, "transfer to node 4")
    eq(ready_leader(rest), n4, "node 4 is the ready leader")
    eq(text(info_now(leader)["role"]), "follower", "the old leader follows")
    want = "NOTLEADER 127.0.0.1:%d" % n4.port

    def redirected():
        with Conn(leader.port, timeout=2.0) as c:
            r = c.call("SESSION.OPEN", 5000)
            return isinstance(r, RespError) and r.text == want
    wait_until(redirected, timeout=10, interval=0.1, what="old leader redirecting to node 4")
    client.wait_cycles(30, "locking after the transfer")
    eq(client.port, n4.port, "the client followed the redirect to node 4")
    client.stop.set()
    client.join(10)
    assert not client.errors, client.errors[:5]
    assert all(a < b for a, b in zip(client.tokens, client.tokens[1:])), "tokens increase"
    assert len(client.tokens) > 200, len(client.tokens)


test_grow_remove_transfer_while_locking.timeout = 50


def test_membership_bad_input_changes_nothing(ctx):
    s = ctx.server()
    c = ctx.conn()
    before = [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]
    mine = "127.0.0.1:%d" % s.raft_port
    for args, code in [
        (("CLUSTER.ADD", 0, "127.0.0.1:9"), "ERR"),
        (("CLUSTER.ADD", -1, "127.0.0.1:9"), "ERR"),
        (("CLUSTER.ADD", "x", "127.0.0.1:9"), "ERR"),
        (("CLUSTER.ADD", 2, "nohost"), "ERR"),
        (("CLUSTER.ADD", 2, ":99"), "ERR"),
        (("CLUSTER.ADD", 2, "127.0.0.1:0"), "ERR"),
        (("CLUSTER.ADD", 2, "127.0.0.1:65536"), "ERR"),
        (("CLUSTER.ADD", 2, "127.0.0.1:x"), "ERR"),
        (("CLUSTER.ADD", 2, "bad host:1"), "ERR"),
        (("CLUSTER.ADD", 2, "h" * 200 + ":1"), "ERR"),
        (("CLUSTER.ADD", 1, mine), "ERR"),            # existing id
        (("CLUSTER.ADD", 1, "127.0.0.1:9"), "ERR"),   # existing id, other address
        (("CLUSTER.ADD", 2), "ERR"),
        (("CLUSTER.REMOVE", 7), "ERR"),               # unknown id
        (("CLUSTER.REMOVE", 0), "ERR"),
        (("CLUSTER.REMOVE",), "ERR"),
        (("CLUSTER.TRANSFER", 1), "ERR"),             # itself
        (("CLUSTER.TRANSFER", 7), "ERR"),             # not a member
        (("CLUSTER.TRANSFER", 0), "ERR"),
        (("CLUSTER.TRANSFER",), "ERR"),               # no other voter
        (("CLUSTER.TRANSFER", 2, 3), "ERR"),
    ]:
        expect_err(c.call(*args), code, "%r" % (args,))
    eq([as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))], before, "nothing changed")
    eq(text(as_map(ok(c.call("CLUSTER.INFO")))["role"]), "leader")
    expect_int(c.call("SESSION.OPEN", 1000), "still serving")
    for bad in (["--join", "nohost"], ["--join", "127.0.0.1:1", "--initial-cluster",
                                        "1=127.0.0.1:9"]):
        p = subprocess.run([s.binary, "--data-dir", ctx.tmp("never")] + bad,
                           capture_output=True, timeout=20)
        eq(p.returncode, 2, "fencelockd %s refused" % " ".join(bad))


def test_rolled_back_remove_after_snapshot_keeps_every_node_up(ctx):
    """Regression (found by `make torture`): a leader appends CLUSTER.REMOVE, loses leadership
    before it commits, and a new leader overwrites the entry. Rolling back needs the last
    committed configuration; a snapshot had compacted that entry and libraft 0.15 read a NULL
    entry (SEGV). fencelock requires libraft >= 0.22, which keeps a copy."""
    servers = start_cluster(ctx, 3, extra=SNAP)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        for i in range(300):  # > 4 snapshots of 64 entries: the bootstrap config is compacted
            expect_int(c.call("PUT", "k%d" % (i % 7), "v%d" % i), "put %d" % i)
    wait_until(lambda: all("raft: snapshot of" in s.log_text() for s in servers), timeout=10,
               what="a snapshot on every node")
    f1, f2 = [s for s in servers if s is not leader]
    # kill -9, not SIGSTOP: a frozen follower's socket would still buffer the REMOVE entry and
    # take it in on SIGCONT (then the two of them disagree on the configuration and neither
    # can win an election while the old leader is frozen -- Raft as specified).
    for s in (f1, f2):
        s.kill9()
    answers = []

    def remove():  # cannot commit: no follower is alive
        try:
            with Conn(leader.port, timeout=20.0) as c:
                answers.append(c.call("CLUSTER.REMOVE", f2.node_id, "FORCE", timeout=20))
        except Exception as e:  # the reply may never come; the test does not depend on it
            answers.append(e)
    t = threading.Thread(target=remove, daemon=True)
    t.start()
    wait_until(lambda: "removing member %d" % f2.node_id in leader.log_text(), timeout=10,
               what="the REMOVE appended on the leader")
    leader.sigstop()
    ctx.defer(lambda: leader.sigstopped and leader.sigcont())
    for s in (f1, f2):
        s.start(wait=False)
    new = ready_leader([f1, f2])
    with Conn(new.port) as c:  # the new term's entries overwrite the uncommitted REMOVE
        for i in range(5):
            expect_int(c.call("PUT", "after", str(i)), "put after the fail-over")
    leader.sigcont()
    rev = wait_until(lambda: stable_revision(servers), timeout=15, interval=0.05,
                     what="the old leader rolled back and caught up")
    t.join(25)
    assert leader.running(), "the old leader survived the rollback"
    for s in servers:
        ids = sorted(m["id"] for m in members(s))
        eq(ids, [1, 2, 3], "node %d: the rolled-back REMOVE left every member" % s.node_id)
    with Conn(leader.port) as c:
        assert "keys:8" in text(c.call("INFO", "fsm")), "the old leader has the new term's key"
    assert rev > 300, rev


test_rolled_back_remove_after_snapshot_keeps_every_node_up.timeout = 60


def test_join_with_a_list_skips_a_member_that_is_down(ctx):
    """--join takes several addresses and tries them in turn: with the first one down for good
    (nothing listens there), the node still joins through the second."""
    servers = start_cluster(ctx, 3, extra=SNAP)
    leader = ready_leader(servers)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # a port nobody listens on: connections are refused
    dead_port = dead.getsockname()[1]
    ctx.defer(dead.close)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d,127.0.0.1:%d" % (dead_port, leader.port)]
                    + FAST)
    n4.start(wait=False)

    def joined():
        return sorted(m["id"] for m in members(leader)) == [1, 2, 3, 4] and \
            all(text(m["role"]) in ("leader", "follower") for m in members(leader))
    wait_until(joined, timeout=20, interval=0.1, what="node 4 a voter through the 2nd address")
    # The joiner logs this when CLUSTER.ADD's answer reaches it, which can be after the
    # leader already lists it as a voter.
    wait_until(lambda: "join: added to the cluster by 127.0.0.1:%d" % leader.port
               in n4.log_text(), timeout=20, what="the joiner heard CLUSTER.ADD's answer")
    for bad in ("127.0.0.1:1,", ",127.0.0.1:1", "127.0.0.1:1,,127.0.0.1:2", "127.0.0.1:1,x"):
        p = subprocess.run([n4.binary, "--data-dir", ctx.tmp("never"), "--join", bad],
                           capture_output=True, timeout=20)
        eq(p.returncode, 2, "--join %r refused" % bad)
