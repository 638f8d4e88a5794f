# SPDX-License-Identifier: Apache-2.0
"""The leader's read lease (src/raft/rn_lease.c, docs/design.md "The read lease"): for --read-lease-ms
after an entry of its own term committed, the leader answers reads and keepalives without a
barrier; a leader that another may have replaced answers none from it.

The lease's rules on the virtual clock (its end, transfers, the follower rules) are
tests/unit/test_rn_fixture.c's; here, real processes."""

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int
from resp import RespError
from test_faults import Partition, iptables_usable
from test_http import metric


def _reads_after_writes(c, sid, rounds):
    for i in range(rounds):
        expect_int(c.call("PUT", "k", str(i)))
        eq(c.call("GET", "k"), str(i).encode(), "GET right after its PUT")
        eq(c.call("SESSION.KEEPALIVE", sid), 60000, "KEEPALIVE")
        eq(c.call("FENCE.CHECK", "nolock", 0).code, "STALE", "FENCE.CHECK")


def test_reads_right_after_a_commit_take_the_lease_not_a_barrier(ctx):
    """A read right after a write is answered under the lease (one node: the write committed
    a moment ago). With --read-lease-ms 0 every read takes a barrier and none the lease."""
    s = ctx.server()
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    lease0 = metric(s, "fencelock_lease_reads_total")
    _reads_after_writes(c, sid, 50)
    assert metric(s, "fencelock_lease_reads_total") - lease0 >= 1, \
        "no read of 150 was answered under the lease"

    off = ctx.server("--read-lease-ms", "0")
    c = ctx.conn(off)
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    barriers0 = metric(off, "fencelock_read_barriers_total")
    _reads_after_writes(c, sid, 20)
    eq(metric(off, "fencelock_lease_reads_total"), 0, "lease reads with the lease off")
    assert metric(off, "fencelock_read_barriers_total") - barriers0 >= 60, \
        "each of 60 reads waited for a barrier"


def test_deposed_leader_answers_no_read_or_keepalive(ctx):
    """The old leader is frozen right after a commit (its lease live) and cut from its peers,
    which elect a new leader that overwrites the key. Resumed, the old leader still believes it
    leads (it heard nothing of the new term, and it reads its client socket before its next
    tick could step it down): a GET and a KEEPALIVE queued meanwhile must not be answered from
    its state. Its lease ended long ago."""
    why = iptables_usable()
    if why:
        print("# SKIP test_deposed_leader_answers_no_read_or_keepalive: %s" % why)
        return
    servers = start_cluster(ctx)
    old = ready_leader(servers)
    others = [s for s in servers if s is not old]
    c = ctx.conn(old)
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    expect_int(c.call("PUT", "k", "old"))
    old.sigstop()
    ctx.defer(old.sigcont)
    part = Partition(old, others)
    ctx.defer(part.heal)
    part.start()
    new = ready_leader(others, timeout=15)
    expect_int(ctx.conn(new).call("PUT", "k", "new"), "the new leader overwrites k")
    c.send("GET", "k")
    c.send("SESSION.KEEPALIVE", sid)
    old.sigcont()
    got = c.read_reply(30), c.read_reply(30)
    for r, what in zip(got, ("GET", "KEEPALIVE")):
        assert isinstance(r, RespError), "the deposed leader answered %s: %r" % (what, r)
    part.heal()
    eq(ctx.conn(ready_leader(servers)).call("GET", "k"), b"new", "k after the heal")


test_deposed_leader_answers_no_read_or_keepalive.timeout = 90
